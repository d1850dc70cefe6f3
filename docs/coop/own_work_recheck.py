"""What the syntax rule for own work (`coopcode.code_analysis.own_work`) says of the committed
samples today, against what each sample recorded when it was benched.

    .venv/bin/python docs/coop/own_work_recheck.py               # Table 1 rows (docs/coop)
    .venv/bin/python docs/coop/own_work_recheck.py --candidates  # the candidates' validations

Each pair row's samples (docs/coop/samples/<row>/samples.jsonl.gz) carry the `own_work`
flag the rule gave when they were benched. For the passing samples: how many the rule still
calls own work, how many it now calls own work that it did not, and the reverse. Then the
row's figure as printed in docs/coop/table.md and BENCHMARKS.md ("Main does own work with
the helper's answer", over all its samples): as committed in docs/coop/summaries/<row>.json,
and as the rule gives it now (the summaries are recomputed through the rule, so a changed
rule moves this column). One-agent rows have no helper and are left out.
Nothing is executed: the code is only parsed.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))

from coopcode.code_analysis.own_work import own_work  # noqa: E402


def _records(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f]


def _now(sample: dict[str, Any]) -> bool:
    return own_work(str(sample.get("helper_code") or ""), str(sample.get("main_code") or ""),
                    str(sample.get("entry_point") or ""))


def _recorded(sample: dict[str, Any]) -> bool:
    found = sample.get("cooperation")
    return bool(isinstance(found, dict) and found.get("own_work"))


def figures(name: str, samples: list[dict[str, Any]], committed_rate: float | None
            ) -> dict[str, Any]:
    passing = [s for s in samples if s.get("passed")]
    was = [_recorded(s) for s in passing]
    now = [_now(s) for s in passing]
    rate_now = sum(_now(s) for s in samples) / len(samples)
    return {"row": name, "samples": len(samples), "passed": len(passing),
            "recorded": sum(was), "now": sum(now),
            "to_own_work": sum(n and not w for w, n in zip(was, now, strict=True)),
            "to_no_own_work": sum(w and not n for w, n in zip(was, now, strict=True)),
            "rate_committed": committed_rate, "rate_now": round(rate_now, 4)}


def table_rows() -> list[dict[str, Any]]:
    out = []
    for folder in sorted((HERE / "samples").iterdir()):
        samples = _records(folder / "samples.jsonl.gz")
        if not any(s.get("helper_code") for s in samples) or samples[0].get("scheme") == "single":
            continue
        summary = json.loads((HERE / "summaries" / f"{folder.name}.json").read_text())
        rate = summary["rows"][0].get("own_work_rate")
        out.append(figures(folder.name, samples, rate))
    return out


def candidate_rows() -> list[dict[str, Any]]:
    out = []
    for folder in sorted((REPO / "docs" / "candidates").glob("*/validation/step-*")):
        metrics = {r["step"]: r for r in map(
            json.loads, (folder.parent.parent / "metrics.jsonl").read_text().splitlines())}
        step = int(folder.name.split("-")[1])
        out.append(figures(f"{folder.parent.parent.name} step {step}",
                           _records(folder / "samples.jsonl.gz"),
                           metrics.get(step, {}).get("val/own_work")))
    return out


def _percent(rate: float | None) -> str:
    return "—" if rate is None else f"{100 * rate:.1f}%"


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| Row | passing samples | own work as recorded | own work now | now own work | "
             "now no own work | own work, all samples: committed | now |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['row']} | {r['passed']} | {r['recorded']} | {r['now']} | "
                     f"{r['to_own_work']} | {r['to_no_own_work']} | "
                     f"{_percent(r['rate_committed'])} | {_percent(r['rate_now'])} |")
    return "\n".join(lines)


def main() -> None:
    rows = candidate_rows() if "--candidates" in sys.argv else table_rows()
    print(json.dumps(rows, indent=1) if "--json" in sys.argv else markdown(rows))


if __name__ == "__main__":
    main()
