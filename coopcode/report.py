"""Bench summaries on disk: summary.json and a markdown report with the seed paper's table."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any


def markdown_table(rows: list[dict[str, Any]], ks: list[int] | tuple[int, ...]) -> str:
    """Method rows, Pass@k columns then Acc@k columns, percentages as in the paper."""
    head = ["Method", *[f"Pass@{k}" for k in ks], *[f"Acc@{k}" for k in ks], "Problems"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["method"], *[f"{100 * r[f'pass@{k}']:.2f}%" for k in ks],
                 *[f"{100 * r[f'acc@{k}']:.2f}%" for k in ks], str(r["problems"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_report(out: Path, summary: Any, meta: dict[str, Any]) -> None:
    data = summary.to_dict()
    (out / "summary.json").write_text(json.dumps(data, indent=2, default=str))
    m = summary.meta
    wall = m.get("wall_seconds", 0.0)
    lines = [
        f"# coopcode bench: {m.get('problems')}",
        "",
        f"Model `{m.get('model')}`, n={m.get('n')} samples per problem, temperature "
        f"{m.get('temperature')}, sandbox `{m.get('sandbox')}`; wall time {wall / 60:.1f} min"
        + ("" if m.get("complete") else " (incomplete: rerun with the same --out to finish)"),
        "",
        markdown_table(data["rows"], data["ks"]) if data["rows"] else "(no complete problems yet)",
        "",
        "| Method | mean reward | syntax ok | runs | main calls helper | mean tokens |",
        "|---|---|---|---|---|---|",
    ]
    for r in data["rows"]:
        lines.append(
            f"| {r['method']} | {r['mean_reward']:.3f} | {100 * r['syntax_rate']:.1f}% | "
            f"{100 * r['runnable_rate']:.1f}% | {100 * r['main_calls_helper_rate']:.1f}% | "
            f"{r['mean_tokens']:.0f} |"
        )
    lines += [
        "",
        f"Versions: {json.dumps(meta.get('versions', {}))}",
        f"Settings: {json.dumps(meta.get('identity', {}))}",
        f"Written {time.strftime('%Y-%m-%d %H:%M:%S')}.",
        "",
    ]
    (out / "report.md").write_text("\n".join(lines))
