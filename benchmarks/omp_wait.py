"""How OpenMP's idle workers wait, and what it costs a batch: the greedy work of the issue's
bench command in flight under each waiting policy, idle and beside one busy core.

    .venv/bin/python benchmarks/omp_wait.py [--problems 8] [--policies passive,3000,30000,default]

Each policy in a fresh process (libgomp reads its environment once, when torch loads):
`passive` is coopcode's `OMP_WAIT_POLICY=PASSIVE` (workers sleep at once); a number N is
`GOMP_SPINCOUNT=N` (spin N rounds, then sleep); `default` is libgomp's own (300,000 rounds).
The first `--problems` of humaneval:train, `single`, n=1, temperature 0, all in flight,
generation only (`greedy_bound.run`, after an 8-token warm-up); then the same with a `yes`
process keeping one core busy. Prints the wall seconds of each.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = """
import os, sys
if os.environ.get("COOP_OMP") != "passive":
    import torch  # noqa: F401  (before coopcode: libgomp keeps its own default or GOMP_SPINCOUNT)
sys.path.insert(0, {here!r})
import coopcode  # noqa: F401  (OMP_WAIT_POLICY=PASSIVE unless torch loaded already)
from greedy_bound import product_weights, run
from coopcode.engines import SamplingParams, load_engine
from coopcode.problems import load_humaneval
engine = load_engine(None, "transformers")
problems = load_humaneval("train")[:{problems}]
layers, head = product_weights(engine.base)
run(engine, problems[:2], SamplingParams(max_new_tokens=8), None, layers, head)
r = run(engine, problems, SamplingParams(max_new_tokens=384, temperature=0.0), None, layers, head)
print(round(r["wall"], 2))
engine.close()
"""


def one(policy: str, problems: int) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env["COOP_OMP"] = policy
    if policy.isdigit():
        env["GOMP_SPINCOUNT"] = policy
    out = subprocess.run([sys.executable, "-c", CHILD.format(here=str(HERE), problems=problems)],
                         env=env, capture_output=True, text=True, check=True, timeout=1800)
    return float(out.stdout.split()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", type=int, default=8)
    ap.add_argument("--policies", default="passive,3000,30000,default")
    args = ap.parse_args()
    policies = args.policies.split(",")
    idle = {p: one(p, args.problems) for p in policies}
    hog = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL)
    try:
        busy = {p: one(p, args.problems) for p in policies}
    finally:
        hog.kill()
        hog.wait()
    print(f"{args.problems} problems in flight, {os.cpu_count()} CPUs; wall seconds")
    print(f"{'policy':>10} {'idle':>8} {'one core busy':>14}")
    for p in policies:
        print(f"{p:>10} {idle[p]:8.1f} {busy[p]:14.1f}")


if __name__ == "__main__":
    main()
