"""`own`: each agent paid what it earned itself, so one agent's failure is not the other's.

Why: one joint reward over one file let the helper's syntax errors zero main's reward (about
24% of the credit runs' training rewards), and paid main for a helper that happened to solve
the task. Here each agent's code is judged on its own (`coopcode.written.checks`, run in the
sandbox by `coopcode.collaboration.judging`), and MAGRPO's advantages use each agent's own
reward (`credit="own"`, in aligned and cross modes alike). After role-wise rewards with a
fixed interface between roles (AT-GRPO; planner/coder splits).

Terms (at most 2.2; the total is what tables and curves show for the pair):
- `helper_syntax` 0.1 if the helper's code parses on its own;
- `helper_tests`: the share of aux's own tests (the contract's) its aux passes, where the
  contract has tests; elsewhere the share of the problem's tests the pair passes. 0 when the
  helper's code does not parse: a broken helper is charged to the helper.
- `main_syntax` 0.1 if main's code parses on its own;
- `main_tests`: the share of the problem's tests main passes with the contract's reference
  aux in place of the helper's, where there is one (main is neither punished for a broken
  helper nor paid for a helper's luck); elsewhere the share the pair passes.
The helper's reward is `helper_syntax + helper_tests`, main's `main_syntax + main_tests`.
One agent (GRPO, `single`): `main_syntax` + `main_tests` (the share of the tests it passes),
the same scale as main's, so a single agent and a pair's main are paid alike.

Orderings it guarantees (tests/test_reward_own.py checks each on programs run in the sandbox):
a correct helper outranks a broken one whatever main does; main's reward does not move when
only the helper changes (where there is a reference aux); a helper that does not parse gets
0 and main is still paid for its own work; a main that passes with the reference aux
outranks one that does not, whatever the helper wrote.
"""

from __future__ import annotations

from coopcode.rewards.base import RewardBreakdown, RewardInput, register

TERMS = ("helper_syntax", "helper_tests", "main_syntax", "main_tests")
SYNTAX = 0.1


def _share(inp: RewardInput) -> float:
    v = inp.verdict
    return v.n_passed / v.n_tests if v.n_tests else 0.0


def own_terms(inp: RewardInput) -> RewardBreakdown:
    checks, joint = inp.checks, _share(inp)
    main_parses = checks.main_parses if checks.main_parses is not None else inp.verdict.syntax_ok
    main_tests = checks.main_with_reference if checks.main_with_reference is not None else joint
    if inp.single:
        return RewardBreakdown(helper_syntax=0.0, helper_tests=0.0,
                               main_syntax=SYNTAX if main_parses else 0.0, main_tests=joint)
    helper_parses = checks.helper_parses is not False
    helper_tests = checks.helper_contract if checks.helper_contract is not None else joint
    return RewardBreakdown(
        helper_syntax=SYNTAX if helper_parses else 0.0,
        helper_tests=helper_tests if helper_parses else 0.0,
        main_syntax=SYNTAX if main_parses else 0.0,
        main_tests=main_tests)


def own_agents(inp: RewardInput) -> dict[str, float]:
    t = own_terms(inp)
    return {"helper": t["helper_syntax"] + t["helper_tests"],
            "main": t["main_syntax"] + t["main_tests"]}


@register("own", TERMS,
          "each agent its own: the helper 0.1 if its code parses alone + the share of aux's "
          "contract tests it passes (0 if it does not parse); main 0.1 if its code parses alone "
          "+ the share of the tests it passes with the reference aux (with the helper's where "
          "there is none); MAGRPO pays each agent its own",
          credit="own", agents=own_agents)
def own_reward(inp: RewardInput) -> RewardBreakdown:
    return own_terms(inp)
