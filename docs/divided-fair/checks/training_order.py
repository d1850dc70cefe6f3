"""Does a run's training pass rate rising from its first 15 steps to its last 15 show that it
learned? Every seed-0 run trains on the same problems in the same order (`ProblemOrder`: a
pure function of seed and step), so the problems of steps 31-45 are the same 59-60 problems
in every one of them. This prints, from the committed training samples, each run's pass rate
on the problems of steps 1-15 and of steps 31-45 (each problem's own rate, then the mean over
problems) and the difference with a 95% bootstrap interval over problems; and the same two
sets of problems in runs that met them in another order (the first round's seed-1 MAGRPO run,
and its seed-0 run after its first epoch): there a difference is the problems', not training's.

    .venv/bin/python docs/divided-fair/checks/training_order.py
"""

from __future__ import annotations

import gzip
import json
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from coopcode.problems import load_problems  # noqa: E402
from coopcode.training.data import ProblemOrder  # noqa: E402

STEPS, PER_STEP, WINDOW = 45, 4, 15
SAME_ORDER = {  # seed 0, compose:train, 4 problems a step: the order every fair run trained in
    "anchored (candidate)": "docs/divided-fair/candidates/anchored",
    "no-kl (candidate)": "docs/divided-fair/candidates/no-kl",
    "one-lr (candidate)": "docs/divided-fair/candidates/one-lr",
    "magrpo-seed0 (final)": "docs/divided-fair/runs/magrpo-seed0",
    "grpo-seed0 (final)": "docs/divided-fair/runs/grpo-seed0",
}
OTHER_ORDER = {  # (folder, first step counted): the first round, old text, its own recipe
    "first round, MAGRPO seed 1 (steps 1-135)": ("checkpoints/compose-magrpo-0.5b-seed1", 1),
    "first round, MAGRPO seed 0 (steps 46-135)": ("checkpoints/compose-magrpo-0.5b", 46),
}


def windows() -> dict[str, int]:
    """task_id -> 0 (steps 1-15), 1 (16-30) or 2 (31-45) in seed 0's order; the one problem
    drawn twice (45 steps x 4 is one more than compose:train's 179) is left out."""
    ids = [p.task_id for p in load_problems("compose:train")]
    order = ProblemOrder(len(ids), PER_STEP, seed=0)
    drawn = [(ids[i], step // WINDOW) for step in range(STEPS) for i in order.indices(step)]
    times = Counter(task for task, _ in drawn)
    return {task: w for task, w in drawn if times[task] == 1}


def per_problem(folder: str, first_step: int = 1) -> dict[str, float]:
    """Each problem's pass rate over a run's training samples from `first_step` on."""
    passed: dict[str, list[bool]] = defaultdict(list)
    for line in gzip.open(REPO / folder / "samples.jsonl.gz", "rt"):
        record = json.loads(line)
        if record["step"] >= first_step:
            passed[record["task_id"]] += [bool(a["passed"]) for a in record["actions"]]
    return {task: sum(p) / len(p) for task, p in passed.items()}


def rise(rates: dict[str, float], window: dict[str, int]) -> tuple[float, float, float, float, float]:
    """(first, last, last - first, low, high): mean over problems in %, 95% bootstrap interval."""
    first = [r for t, r in rates.items() if window.get(t) == 0]
    last = [r for t, r in rates.items() if window.get(t) == 2]

    def mean(xs: list[float]) -> float:
        return 100 * sum(xs) / len(xs)

    rng = random.Random(0)
    draws = sorted(mean(rng.choices(last, k=len(last))) - mean(rng.choices(first, k=len(first)))
                   for _ in range(4000))
    return mean(first), mean(last), mean(last) - mean(first), draws[100], draws[3899]


def table() -> str:
    window = windows()
    rows = [(name, per_problem(folder), "the same (seed 0)") for name, folder in SAME_ORDER.items()]
    rows += [(name, per_problem(folder, first), "another")
             for name, (folder, first) in OTHER_ORDER.items()]
    lines = ["| run | order | problems of steps 1-15 | of steps 31-45 | difference [95%] |",
             "|---|---|---|---|---|"]
    for name, rates, order in rows:
        first, last, d, lo, hi = rise(rates, window)
        lines.append(f"| {name} | {order} | {first:.1f}% | {last:.1f}% | "
                     f"{d:+.1f} [{lo:+.1f}, {hi:+.1f}] |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
