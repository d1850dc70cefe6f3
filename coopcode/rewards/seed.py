"""The seed paper's execution rewards (the defaults: committed runs were trained with them).

`seed` (MAGRPO, joint, shared by helper and main): +0.2 if the program is syntactically
valid, +0.3 if it runs (imports without raising), +0.1 per passed test.
`seed-grpo` (one agent): +0.5 if it runs, +0.1 per passed test, counting at most 5 tests.

Neither looks at the agents' code: a main agent that ignores the helper scores exactly as
one that uses it (see `coop` for a reward that can tell them apart).
"""

from __future__ import annotations

from coopcode.rewards.base import RewardBreakdown, RewardInput, register
from sandbox import Verdict


def magrpo_levels(verdict: Verdict, *, syntax_bonus: float = 0.2, run_bonus: float = 0.3,
                  per_test: float = 0.1) -> RewardBreakdown:
    """0.2 syntax + 0.3 runs + 0.1 per passed test, from a verdict alone."""
    syntax = syntax_bonus if verdict.syntax_ok else 0.0
    runs = run_bonus if verdict.syntax_ok and verdict.runnable else 0.0
    return RewardBreakdown(syntax=syntax, runs=runs, tests=per_test * verdict.n_passed)


def grpo_levels(verdict: Verdict, *, run_bonus: float = 0.5, per_test: float = 0.1,
                max_tests: int = 5) -> RewardBreakdown:
    """0.5 runs + 0.1 per passed test (at most 5), from a verdict alone."""
    runs = run_bonus if verdict.syntax_ok and verdict.runnable else 0.0
    return RewardBreakdown(runs=runs, tests=per_test * min(verdict.n_passed, max_tests))


# The seed (MAGRPO) paper's coding reward; the default for two agents.
@register("seed", ("syntax", "runs", "tests"),
          "0.2 if the program parses + 0.3 if it runs + 0.1 per passed test")
def seed_reward(inp: RewardInput) -> RewardBreakdown:
    return magrpo_levels(inp.verdict)


# The seed paper's single-agent GRPO reward (at most 1.0); the default for one agent.
@register("seed-grpo", ("runs", "tests"),
          "0.5 if the program runs + 0.1 per passed test (at most 5 tests)")
def seed_grpo_reward(inp: RewardInput) -> RewardBreakdown:
    return grpo_levels(inp.verdict)
