"""Cooperation pattern rates of bench runs: how often main ignores, wraps, falls back on,
decorates, coordinates or filters with the helper's code, side by side.

    .venv/bin/python benchmarks/pattern_rates.py RUN [RUN ...] [--n N]

RUN is a `coopcode bench --out` folder (FOLDER:SCHEME picks one scheme of a run holding
several); `--n N` uses samples 0..N-1 of each problem only, so runs of different n compare
on the same seeds. Prints two markdown tables: the share of samples carrying each pattern
(`coopcode.code_analysis.patterns` documents the rules; a program may carry several), and the pass
rate of the samples carrying it. Records written before patterns were recorded are
classified from their code on the fly. Nothing is written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

from coopcode.code_analysis.patterns import PATTERNS, pattern_rates  # noqa: E402
from coopcode.core.errors import UserError  # noqa: E402
from coopcode.evaluation.compare import Run, load_runs  # noqa: E402


def rate_table(runs: list[Run]) -> str:
    head = ["Run", "scheme", "problems", "samples", *PATTERNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for run in runs:
        rates = pattern_rates(run.patterns)
        lines.append("| " + " | ".join([
            run.label, run.scheme, str(len(run.passed)), str(len(run.patterns)),
            *[f"{100 * rates.get(p, 0.0):.1f}%" for p in PATTERNS]]) + " |")
    return "\n".join(lines)


def pass_table(runs: list[Run]) -> str:
    head = ["Run", *PATTERNS, "all"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for run in runs:
        passed = [ok for task in run.passed for ok in run.passed[task]]
        cells = []
        for name in PATTERNS:
            hits = [ok for ok, found in zip(passed, run.patterns) if name in found]
            cells.append(f"{100 * sum(hits) / len(hits):.1f}% of {len(hits)}" if hits else "—")
        cells.append(f"{100 * sum(passed) / len(passed):.1f}% of {len(passed)}")
        lines.append(f"| {run.label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="bench --out folders (FOLDER:SCHEME for one scheme)")
    parser.add_argument("--n", type=int, default=None, help="samples 0..N-1 of each problem only")
    args = parser.parse_args(argv)
    try:
        runs = [run for spec in args.runs for run in load_runs(spec, args.n)]
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    runs = [r for r in runs if r.scheme != "single"]  # one agent: no helper to use
    if not runs:
        print("error: no multi-agent samples in these runs (the single scheme has no helper)",
              file=sys.stderr)
        return 2
    print("Share of samples carrying each pattern:\n")
    print(rate_table(runs))
    print("\nPass rate of the samples carrying each pattern:\n")
    print(pass_table(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
