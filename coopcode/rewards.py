"""Execution rewards from the seed paper, as plain functions returning a breakdown.

MAGRPO (joint, shared by helper and main): +0.2 if the program is syntactically valid,
+0.3 if it runs (imports without raising), +0.1 per passed test.
GRPO (one agent): +0.5 if it runs, +0.1 per passed test, counting at most 5 tests.

A reward function takes a Verdict and returns a `RewardBreakdown`; the trainer and the bench
record the levels so curves can show which level a run is learning.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from sandbox import Verdict


@dataclass(frozen=True)
class RewardBreakdown:
    syntax: float = 0.0
    runs: float = 0.0
    tests: float = 0.0

    @property
    def total(self) -> float:
        return round(self.syntax + self.runs + self.tests, 6)

    def to_dict(self) -> dict[str, float]:
        return {**asdict(self), "total": self.total}


RewardFn = Callable[[Verdict], RewardBreakdown]


def magrpo_reward(
    verdict: Verdict,
    *,
    syntax_bonus: float = 0.2,
    run_bonus: float = 0.3,
    per_test: float = 0.1,
) -> RewardBreakdown:
    """The MAGRPO coding reward: 0.2 syntax + 0.3 runs + 0.1 per passed test."""
    syntax = syntax_bonus if verdict.syntax_ok else 0.0
    runs = run_bonus if verdict.syntax_ok and verdict.runnable else 0.0
    return RewardBreakdown(syntax=syntax, runs=runs, tests=per_test * verdict.n_passed)


def grpo_reward(
    verdict: Verdict,
    *,
    run_bonus: float = 0.5,
    per_test: float = 0.1,
    max_tests: int = 5,
) -> RewardBreakdown:
    """The single-agent GRPO reward: 0.5 runs + 0.1 per passed test (at most 5)."""
    runs = run_bonus if verdict.syntax_ok and verdict.runnable else 0.0
    return RewardBreakdown(runs=runs, tests=per_test * min(verdict.n_passed, max_tests))


REWARDS: dict[str, RewardFn] = {"magrpo": magrpo_reward, "grpo": grpo_reward}
