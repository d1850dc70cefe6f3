"""Where a pair's passing answers came from, from the committed samples: the table in
BENCHMARKS.md ("The chosen recipe on the test split").

    .venv/bin/python docs/coop/transcribed.py          # the markdown table

For each pair row of docs/coop/samples/<row>/samples.jsonl.gz (40 test problems x 10):
- "main re-writes the helper": main does not call the helper and one of main's function
  bodies is a near copy of one of the helper's (difflib ratio >= 0.8 between the bodies as
  `ast.unparse` prints them, docstrings dropped: formatting and comments do not count);
- "the helper alone solves": the bench's `helper_solves` (the helper's code run against the
  tests in the sandbox), read from the samples, not run again here;
- the same two among the samples that pass;
- "does not parse for the helper's code": the combined program does not parse, and main's
  code alone does.
Nothing is executed: the code is only parsed.
"""

from __future__ import annotations

import ast
import gzip
import json
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from coopcode.code_analysis.copies import NEAR_COPY, function_bodies, main_copies_helper

HERE = Path(__file__).resolve().parent
ROWS = ("pair", "magrpo", "magrpo-seed1", "magrpo-coop", "magrpo-coop-seed1", "magrpo-credit",
        "magrpo-credit-seed1")
__all__ = ["NEAR_COPY", "bodies", "rewrites_helper"]


bodies = function_bodies  # the measure lives in coopcode.code_analysis.copies
rewrites_helper = main_copies_helper


def parses(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


def broken_by_helper(sample: dict[str, Any]) -> bool:
    return not sample.get("syntax_ok", True) and parses(sample.get("main_code") or "")


def row_figures(row: str) -> dict[str, Any]:
    with gzip.open(HERE / "samples" / row / "samples.jsonl.gz", "rt") as f:
        samples = [json.loads(line) for line in f if line.strip()]
    passed = [s for s in samples if s["passed"]]

    def solves(s: dict[str, Any]) -> bool:
        return bool((s.get("cooperation") or {}).get("helper_solves"))

    return {"row": row, "samples": len(samples), "passed": len(passed),
            "rewrites": sum(map(rewrites_helper, samples)), "solves": sum(map(solves, samples)),
            "passed_rewrites": sum(map(rewrites_helper, passed)),
            "passed_solves": sum(map(solves, passed)),
            "broken_by_helper": sum(map(broken_by_helper, samples))}


def percent(count: int, total: int) -> str:
    """count/total in percent to one decimal, halves rounded up (as the table's rates are)."""
    return f"{(Decimal(100 * count) / Decimal(total)).quantize(Decimal('0.1'), ROUND_HALF_UP)}%"


def markdown(figures: list[dict[str, Any]]) -> str:
    lines = ["| Row | Samples passing | Main re-writes the helper (no call) | The helper alone solves | "
             "Of the passing samples: main re-wrote the helper | Of the passing samples: the "
             "helper alone solves | Does not parse for the helper's code |", "|---|---|---|---|---|---|---|"]
    for f in figures:
        n, p = f["samples"], f["passed"]
        lines.append(f"| `{f['row']}` | {percent(p, n)} | {percent(f['rewrites'], n)} | "
                     f"{percent(f['solves'], n)} | {f['passed_rewrites']} / {p} | "
                     f"{f['passed_solves']} / {p} | {f['broken_by_helper']} / {n} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    figures = [row_figures(row) for row in ROWS]
    print(json.dumps(figures) if "--json" in sys.argv[1:] else markdown(figures), end="")


if __name__ == "__main__":
    main()
