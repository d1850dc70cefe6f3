"""`credit`: cooperation paid only where it helps, so a shell around the helper cannot game it.

Terms (maximum 1.45):
- `syntax` 0.1 if the combined program parses; `runs` 0.1 if it runs (imports without
  raising);
- `tests` = passed / total: the tests dominate every other term;
- `cooperation` = 0.25 x passed / total, only when main does work of its own with the
  helper's answer (`own_work`) **and** the helper's code alone does not solve the task
  (`helper_solves` is False; not measured counts as solving: nothing is paid on a guess).
  Both come from `coopcode.code_analysis.cooperation`, through the judging path that runs the
  helper alone in the sandbox.

What that buys (tests/test_reward_credit.py checks each):
- a correct main that ignores the helper scores exactly as a shell around a helper that
  solved the task (1.2 each): a shell earns nothing for being one;
- a shell that breaks the answer (`return aux(brackets) == 0`, inverting it) scores less than
  the plain wrapper (its tests fail);
- a split of the work that passes every test (main loops, branches or combines, the helper
  alone fails) scores 1.45, above any solo or shell answer. Paid in proportion, the bonus
  can outweigh a few failed tests: a split passing a share s of them (0.2 + 1.25 s) outranks
  a correct solo answer (1.2) only when s > 0.8; half the tests (0.825) stays well below.

Per-agent credit (`credit="counterfactual"`, CCPO-style): in MAGRPO the helper is paid its
contribution, the pair's reward minus what main scores when it answers alone (one extra main
sample per joint action, written without the helper's code, scored by this reward as one
agent: syntax + runs + tests); main is paid the joint reward. So a helper earns only what the
pair gains over main alone. Where it comes from: CCPO (the thinker is paid when the pair beats
the solver alone), COMA's counterfactual baselines, and the "lazy agent" credit of Dr. MAMR.
"""

from __future__ import annotations

from coopcode.rewards.base import RewardBreakdown, RewardInput, register

TERMS = ("syntax", "runs", "tests", "cooperation")
COOPERATION_WEIGHT = 0.25  # a quarter of the tests' weight: a split must pass > 80% to beat a solo pass


# coopcode's: own work from the syntax tree, the helper run alone in the sandbox; per-agent
# credit after CCPO and COMA; at most 1.45.
@register("credit", TERMS,
          "0.1 parses + 0.1 runs + passed/total + 0.25 x passed/total when main does own work "
          "with the helper's answer and the helper alone does not solve the task; the helper "
          "is paid its contribution over main alone (counterfactual credit)",
          credit="counterfactual")
def credit_reward(inp: RewardInput) -> RewardBreakdown:
    v = inp.verdict
    share = v.n_passed / v.n_tests if v.n_tests else 0.0
    coop = inp.cooperation
    cooperates = not inp.single and coop.own_work and coop.helper_solves is False
    return RewardBreakdown(
        syntax=0.1 if v.syntax_ok else 0.0,
        runs=0.1 if v.syntax_ok and v.runnable else 0.0,
        tests=share,
        cooperation=COOPERATION_WEIGHT * share if cooperates else 0.0)
