"""`coop`: the MAGRPO authors' cooperative coding reward, decided from the syntax tree.

Levels (each gates the next, as in the authors' `execution_reward_aux`; maximum 4.0):
1. structure: +0.4 `helper` if the helper writes a live function that returns a value;
   +0.6 `main` if main defines the entry point and it returns a value. Without the entry
   point, scoring stops here.
2. +0.5 `syntax` if the combined program parses (else scoring stops).
3. +1.0 x (passed / total) `tests`.
4. cooperation, only when at least one test passes and main *uses* the helper
   (`coopcode.code_analysis.usage`: a call whose value main uses, of a helper function that is
   neither trivial nor written again by main):
   +0.5 `uses`; +1.0 `beyond_wrapper` when main does more than return the helper's result
   (its cooperation pattern, `coopcode.code_analysis.patterns`, is other than `wrapper`, judged with
   the discarded calls left out); -0.5 `discarded` when main also calls the helper and
   throws the value away.

Where it differs from the authors' code (their checks are regular expressions on text):
a call in a comment or a string does not count; a call whose value is thrown away is not
use; a main that defines the helper's function again earns no cooperation term (theirs
still pays, since the call is found in the text); a helper whose function does nothing
(`pass`, a constant, its argument unchanged) earns neither its structure points nor any
cooperation term; "a thin wrapper" is the `wrapper` pattern of our classifier (main only
calls the helper with its own arguments and returns the result), which also covers
`r = aux(x)` / `if r: return r` / `return r` shapes their two templates miss.
"""

from __future__ import annotations

from coopcode.rewards.base import RewardBreakdown, RewardInput, register

TERMS = ("helper", "main", "syntax", "tests", "uses", "beyond_wrapper", "discarded")


# The MAGRPO authors' execution_reward_aux (the paper's cooperation quality bonus), decided
# from the syntax tree; at most 4.0.
@register("coop", TERMS,
          "0.4 helper returns + 0.6 main returns (else stop) + 0.5 parses (else stop) + "
          "passed/total + when a test passes and main uses the helper: 0.5 + 1.0 if not a "
          "wrapper - 0.5 if a call's value is thrown away")
def coop_reward(inp: RewardInput) -> RewardBreakdown:
    from coopcode.code_analysis.patterns import COOPERATING, classify_cooperation

    terms = dict.fromkeys(TERMS, 0.0)
    use = inp.use
    v = inp.verdict
    if use.helper_returns:
        terms["helper"] = 0.4
    if not use.entry_returns:
        return RewardBreakdown(terms)
    terms["main"] = 0.6
    if not v.syntax_ok:
        return RewardBreakdown(terms)
    terms["syntax"] = 0.5
    terms["tests"] = v.n_passed / v.n_tests if v.n_tests else 0.0
    if v.n_passed > 0 and use.uses_helper:
        terms["uses"] = 0.5
        main = use.main_without_discarded if use.discarded else inp.main_code
        patterns = set(classify_cooperation(inp.helper_code, main, inp.entry_point))
        if patterns & COOPERATING:
            terms["beyond_wrapper"] = 1.0
        if use.discarded:
            terms["discarded"] = -0.5
    return RewardBreakdown(terms)
