"""`own`: each agent paid what it earned itself, so one agent's failure is not the other's.

Why: one joint reward over one file let the helper's syntax errors zero main's reward (about
24% of the credit runs' training rewards), and paid main for a helper that happened to solve
the task. Here each agent's code is judged on its own (`coopcode.records.checks`, run in the
sandbox by `coopcode.collaboration.judging`), and MAGRPO's advantages use each agent's own
reward (`credit="own"`, in aligned and cross modes alike). After role-wise rewards with a
fixed interface between roles (AT-GRPO; planner/coder splits).

Terms (at most 2.2; the total is what tables and curves show):
- `helper_syntax` 0.1 if the helper's part is well formed (`coopcode.code_analysis.parts`): its
  output was not cut at the token budget, and its code defines aux with a body that does
  work (not only imports, `pass`, `...`, a docstring or a literal), returns something and
  calls no name that nobody defines. Parsing alone earns nothing: collapsed runs learned
  bodies that parse and do nothing.
- `helper_tests`: the share of aux's own tests (the contract's) its aux passes, where the
  contract has tests; elsewhere the share of the problem's tests the pair passes. 0 when the
  helper's code does not parse: a broken helper is charged to the helper.
- `main_syntax` 0.1 if main's part is well formed: the same rules for the entry point, whose
  calls may reach the helper's functions and aux besides its own, the problem's and the
  builtins;
- `main_tests`: the share of the problem's tests main passes with the contract's reference
  aux in place of the helper's, where there is one (main is neither punished for a broken
  helper nor paid for a helper's luck); elsewhere the share the pair passes.
The helper's reward is `helper_syntax + helper_tests`, main's `main_syntax + main_tests`.

One agent (GRPO, `single`) earns the same terms where its problem has a contract (the
compose problems): its own aux is the helper's part, judged alone on the contract's tests
(an aux nested in its entry point, as the canonical solutions write it, is lifted out to
the top level; one that needs the names of the function around it fails there), and its
entry point with the reference aux in place of its own is main's part. So a single agent
and a pair can earn 2.2 alike, and the canonical solution earns 2.2 either way. A single
agent that writes no aux gets no helper terms, and `main_tests` is the share of the tests
it passes: with no aux to replace, its function is its whole answer (at most 1.1). On a
problem without a contract a single agent gets `main_syntax` + the share of the tests it
passes (at most 1.1).

Records whose checks hold no `*_well_formed` take the syntax terms from whether the code
parses, so a committed run scored again scores as it did.

Orderings it guarantees (tests/test_divided_work.py and tests/test_reward_own.py check each
on programs run in the sandbox): a correct helper outranks a broken one whatever main does;
main's reward does not move when only the helper changes (where there is a reference aux);
a helper that does not parse gets 0 and main is still paid for its own work; a main that
passes with the reference aux outranks one that does not, whatever the helper wrote; a
part cut at the token budget, or whose function only imports, passes, returns a literal or
calls a name nobody defines, earns no syntax credit; a single agent's correct aux outranks
a wrong one whatever its outer step, and its correct outer step outranks a wrong one
whatever its aux.
"""

from __future__ import annotations

from coopcode.records.vocabulary import Role
from coopcode.rewards.base import RewardBreakdown, RewardInput, register

TERMS = ("helper_syntax", "helper_tests", "main_syntax", "main_tests")
SYNTAX = 0.1


def _share(inp: RewardInput) -> float:
    v = inp.verdict
    return v.n_passed / v.n_tests if v.n_tests else 0.0


def _credit(well_formed: bool | None, parses: bool) -> float:
    """The syntax term: the part well formed; where the checks do not say, the code
    parses."""
    return SYNTAX if (well_formed if well_formed is not None else parses) else 0.0


def own_terms(inp: RewardInput) -> RewardBreakdown:
    checks, joint = inp.checks, _share(inp)
    main_parses = checks.main_parses if checks.main_parses is not None else inp.verdict.syntax_ok
    main_syntax = _credit(checks.main_well_formed, main_parses)
    main_tests = checks.main_with_reference if checks.main_with_reference is not None else joint
    if inp.single:
        if checks.helper_well_formed is None:  # no contract, so no aux to judge
            return RewardBreakdown(helper_syntax=0.0, helper_tests=0.0,
                                   main_syntax=main_syntax, main_tests=joint)
        return RewardBreakdown(
            helper_syntax=SYNTAX if checks.helper_well_formed else 0.0,
            helper_tests=checks.helper_contract or 0.0,  # None: it wrote no aux
            main_syntax=main_syntax, main_tests=main_tests)
    helper_parses = checks.helper_parses is not False
    helper_tests = checks.helper_contract if checks.helper_contract is not None else joint
    return RewardBreakdown(
        helper_syntax=_credit(checks.helper_well_formed, helper_parses),
        helper_tests=helper_tests if helper_parses else 0.0,
        main_syntax=main_syntax,
        main_tests=main_tests)


def own_agents(inp: RewardInput) -> dict[str, float]:
    t = own_terms(inp)
    return {Role.HELPER: t["helper_syntax"] + t["helper_tests"],
            Role.MAIN: t["main_syntax"] + t["main_tests"]}


@register("own", TERMS,
          "each agent its own: the helper 0.1 for a well-formed aux (does work, returns, calls "
          "nothing undefined, not cut at the token budget) + the share of aux's contract tests "
          "it passes (0 if it does not parse); main 0.1 for a well-formed entry point + the "
          "share of the tests it passes with the reference aux (the helper's where there is "
          "none); one agent earns both from its own aux and entry point where there is a "
          "contract; MAGRPO pays each agent its own",
          credit="own", agents=own_agents)
def own_reward(inp: RewardInput) -> RewardBreakdown:
    return own_terms(inp)
