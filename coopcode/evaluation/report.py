"""Bench summaries on disk: summary.json, and report.md with the seed paper's table, the
uncertainty of every number, the cooperation patterns and figures (PNG beside the report)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from coopcode.code_analysis.patterns import PATTERNS
from coopcode.evaluation import stats
from coopcode.rewards import REWARDS

PASS_FIGURE = "pass_at_k.png"
PATTERN_FIGURE = "patterns.png"


def markdown_table(rows: list[dict[str, Any]], ks: list[int] | tuple[int, ...]) -> str:
    """Method rows, Pass@k columns then Acc@k columns, percentages as in the paper."""
    head = ["Method", *[f"Pass@{k}" for k in ks], *[f"Acc@{k}" for k in ks], "Problems"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["method"], *[f"{100 * r[f'pass@{k}']:.2f}%" for k in ks],
                 *[f"{100 * r[f'acc@{k}']:.2f}%" for k in ks], str(r["problems"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def pct(x: float | None, signed: bool = False, *, digits: int = 2) -> str:
    """A rate in percent, `digits` decimals ("—" for none; `signed`: with its sign, as a
    difference)."""
    if x is None:
        return "—"
    return f"{100 * x:+.{digits}f}" if signed else f"{100 * x:.{digits}f}"


def format_se(row: Mapping[str, Any], metric: str, digits: int = 2) -> str:
    """`±3.42` (percentage points), or `—` when the row has no standard error."""
    se = row.get(f"{metric}_se")
    return f"±{100 * se:.{digits}f}" if isinstance(se, int | float) else "—"


def format_ci(row: Mapping[str, Any], metric: str, digits: int = 2, compact: bool = False) -> str:
    """`[17.70, 31.30]` (percent; `compact`: `17.7–31.3`), or `—` (fewer than two problems,
    or a summary without intervals)."""
    ci = row.get(f"{metric}_ci")
    if not isinstance(ci, list | tuple) or len(ci) != 2:
        return "—"
    low, high = f"{100 * ci[0]:.{digits}f}", f"{100 * ci[1]:.{digits}f}"
    return f"{low}–{high}" if compact else f"[{low}, {high}]"


def interval_table(rows: list[dict[str, Any]], ks: Sequence[int]) -> str:
    """One line per method and k: each estimate with its standard error and 95% interval."""
    head = ["Method", "k", "Pass@k", "SE", "95% CI", "Acc@k", "SE", "95% CI"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        for k in ks:
            p, a = f"pass@{k}", f"acc@{k}"
            lines.append("| " + " | ".join([
                r["method"], str(k), f"{100 * r[p]:.2f}%", format_se(r, p), format_ci(r, p),
                f"{100 * r[a]:.2f}%", format_se(r, a), format_ci(r, a)]) + " |")
    return "\n".join(lines)


def cooperation_rate_table(rows: list[dict[str, Any]]) -> str:
    """Method rows with the pair's cooperation rates summary.json holds, so the report shows
    what the run measured beside pass@k; '' when no row is a pair."""
    keys = ("main_calls_helper_rate", "uses_helper_rate", "own_work_rate", "shell_rate",
            "helper_solves_rate", "both_needed_rate")
    rows = [r for r in rows if r.get("own_work_rate") is not None]
    if not rows:
        return ""
    lines = ["| Method | main calls helper | uses its answer | own work | only wraps it | "
             "helper alone solves | both needed (of passing) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = [f"{100 * r[k]:.1f}%" if isinstance(r.get(k), int | float) else "—" for k in keys]
        lines.append(f"| {r['method']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def pattern_table(rows: list[dict[str, Any]]) -> str:
    """Method rows, one column per cooperation pattern (share of samples)."""
    rows = [r for r in rows if r.get("cooperation")]
    if not rows:
        return ""
    lines = ["| Method | " + " | ".join(PATTERNS) + " | Samples |",
             "|" + "---|" * (len(PATTERNS) + 2)]
    for r in rows:
        cells = [f"{100 * float(r['cooperation'].get(p, 0.0)):.1f}%" for p in PATTERNS]
        lines.append(f"| {r['method']} | " + " | ".join(cells) + f" | {r.get('samples', '?')} |")
    return "\n".join(lines)


def write_figures(out: Path, data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The report's PNGs: (alt text, file name) of each written."""
    from coopcode.evaluation import plots

    rows, ks, meta = data["rows"], data["ks"], data.get("meta", {})
    figures = []
    if rows:
        plots.plot_pass_at_k(rows, ks, meta, out / PASS_FIGURE)
        figures.append(("pass@k against k per method, with 95% intervals", PASS_FIGURE))
    if any(r.get("cooperation") for r in rows):
        plots.plot_patterns(rows, meta, out / PATTERN_FIGURE)
        figures.append(("cooperation pattern rates per method", PATTERN_FIGURE))
    return figures


def write_report(out: Path, summary: Any, meta: dict[str, Any]) -> None:
    data = summary.to_dict()
    (out / "summary.json").write_text(json.dumps(data, indent=2, default=str))
    m = summary.meta
    wall = m.get("wall_seconds", 0.0)
    rows, ks = data["rows"], data["ks"]
    lines = [
        f"# coopcode bench: {m.get('problems')}",
        "",
        f"Model `{m.get('model')}`, n={m.get('n')} samples per problem, temperature "
        f"{m.get('temperature')}, sandbox `{m.get('sandbox')}`; wall time {wall / 60:.1f} min"
        + ("" if m.get("complete") else " (incomplete: rerun with the same --out to finish)"),
        "",
        markdown_table(rows, ks) if rows else "(no complete problems yet)",
        "",
    ]
    if m.get("infra_retries"):
        lines += [f"Infrastructure: {m['infra_retries']} sandbox jobs were run again after their "
                  "worker was lost (a killed container, a restarted Docker daemon); none was "
                  "scored as a failure.", ""]
    if rows:
        lines += [
            "## How sure",
            "",
            f"Standard errors (percentage points) and {100 * stats.LEVEL:.0f}% intervals: "
            f"{stats.METHOD}. summary.json keeps "
            "each problem's estimates (`per_problem`) to recompute them.",
            "",
            interval_table(rows, ks),
            "",
        ]
    lines += [
        "| Method | mean reward (reward) | syntax ok | runs | main calls helper | mean tokens |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        name = f" ({r['reward']})" if r.get("reward") else ""
        lines.append(
            f"| {r['method']} | {r['mean_reward']:.3f}{name} | {100 * r['syntax_rate']:.1f}% | "
            f"{100 * r['runnable_rate']:.1f}% | {100 * r['main_calls_helper_rate']:.1f}% | "
            f"{r['mean_tokens']:.0f} |"
        )
    named = dict.fromkeys(r["reward"] for r in rows if r.get("reward") in REWARDS)
    if named:
        lines += ["", *(f"- `{name}`: {REWARDS[name].summary}." for name in named)]
    rates = cooperation_rate_table(rows)
    if rates:
        lines += ["", "## Who did the work", "",
                  "Shares of samples (`coopcode.code_analysis.cooperation`): main calls the helper; uses "
                  "its answer; does work of its own with it (from the syntax tree); only wraps "
                  "it (uses it, no own work); the helper's code alone passes the tests (over "
                  "the samples whose helper was run alone).", "", rates]
    patterns = pattern_table(rows)
    if patterns:
        lines += ["", "## Cooperation patterns", "",
                  "Share of samples whose (helper, main) pair carries each pattern "
                  "(`coopcode.code_analysis.patterns` documents the rules; a program may carry several).",
                  "", patterns]
    try:
        figures = write_figures(out, data)
    except Exception as e:  # a figure is a view: never lose an hour of results to it
        lines += ["", f"(figures not drawn: {type(e).__name__}: {e})"]
    else:
        if figures:
            lines += ["", "## Figures", ""]
            lines += [f"![{alt}]({name})" for alt, name in figures]
    lines += [
        "",
        f"Versions: {json.dumps(meta.get('versions', {}))}",
        f"Settings: {json.dumps(meta.get('identity', {}))}",
        f"Written {time.strftime('%Y-%m-%d %H:%M:%S')}.",
        "",
    ]
    (out / "report.md").write_text("\n".join(lines))
