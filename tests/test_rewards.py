"""The rewards: the seed paper's levels, and `coop` on hand-written pairs (use, wrapper, a call
in a comment, a redefined helper, a trivial helper, an ignored result, no passing test)."""

from __future__ import annotations

import pytest

from coopcode.code_analysis.usage import analyse_use
from coopcode.core.errors import UserError
from coopcode.rewards import (
    REWARDS,
    RewardBreakdown,
    RewardInput,
    get_reward,
    grpo_levels,
    magrpo_levels,
    resolve_reward,
)
from sandbox import TestRecord, Verdict


def _verdict(syntax: bool, runs: bool, passed: int, total: int) -> Verdict:
    tests = tuple(TestRecord(i, "assert x", "passed" if i < passed else "failed") for i in range(total))
    return Verdict(status="passed" if passed == total else "failed", tests=tests,
                   syntax_ok=syntax, runnable=runs)


PASS_ALL = _verdict(True, True, 4, 4)
PASS_HALF = _verdict(True, True, 2, 4)
PASS_NONE = _verdict(True, True, 0, 4)

HELPER = '''def aux(xs):
    """The positive numbers of xs."""
    return [x for x in xs if x > 0]
'''


def coop(main: str, helper: str = HELPER, verdict: Verdict = PASS_ALL) -> dict[str, float]:
    inp = RewardInput(verdict=verdict, main_code=main, helper_code=helper,
                      program=helper + "\n" + main, entry_point="f")
    return get_reward("coop")(inp).to_dict()


# -- the seed rewards -----------------------------------------------------------------------

def test_seed_reward_levels() -> None:
    assert magrpo_levels(_verdict(False, False, 0, 5)).total == 0.0
    assert magrpo_levels(_verdict(True, False, 0, 5)).total == pytest.approx(0.2)
    assert magrpo_levels(_verdict(True, True, 0, 5)).total == pytest.approx(0.5)
    r = magrpo_levels(_verdict(True, True, 7, 8))
    assert (r["syntax"], r["runs"], r["tests"]) == (0.2, 0.3, pytest.approx(0.7))
    assert r.total == pytest.approx(1.2)


def test_seed_grpo_reward_caps_tests_at_five() -> None:
    assert grpo_levels(_verdict(True, True, 3, 8)).total == pytest.approx(0.8)
    assert grpo_levels(_verdict(True, True, 8, 8)).total == pytest.approx(1.0)
    assert grpo_levels(_verdict(True, False, 0, 8)).total == 0.0


def test_the_seed_rewards_ignore_what_the_agents_wrote() -> None:
    """The gap `coop` closes: a main that ignores the helper scores as one that uses it."""
    uses = RewardInput(verdict=PASS_ALL, main_code="def f(xs):\n    return sum(aux(xs))\n",
                       helper_code=HELPER, entry_point="f")
    alone = RewardInput(verdict=PASS_ALL, main_code="def f(xs):\n    return sum(x for x in xs if x > 0)\n",
                        helper_code=HELPER, entry_point="f")
    seed = get_reward("seed")
    assert seed(uses) == seed(alone)
    assert get_reward("coop")(uses).total > get_reward("coop")(alone).total


def test_the_default_reward_follows_the_number_of_agents() -> None:
    assert resolve_reward(None, "single").name == "seed-grpo"
    assert resolve_reward(None, "sequential").name == "seed"
    assert resolve_reward("coop", "sequential").name == "coop"
    assert list(REWARDS)[:2] == ["seed", "seed-grpo"]
    with pytest.raises(UserError, match="unknown reward 'nope' for --reward: use one of seed, seed-grpo, coop"):
        get_reward("nope")


def test_a_breakdown_keeps_its_terms_in_order_and_recomputes_its_total() -> None:
    b = RewardBreakdown(helper=0.4, main=0.6, discarded=-0.5)
    assert list(b) == ["helper", "main", "discarded"] and b.total == pytest.approx(0.5)
    assert b.to_dict() == {"helper": 0.4, "main": 0.6, "discarded": -0.5, "total": 0.5}
    assert RewardBreakdown.from_dict({"helper": 0.4, "total": 99.0}).total == 0.4
    with pytest.raises(ValueError):
        RewardBreakdown(total=1.0)


# -- coop -----------------------------------------------------------------------------------

def test_coop_pays_real_use_most() -> None:
    """Use beyond a wrapper: main post-processes the helper's result (a decorator)."""
    r = coop("def f(xs):\n    if not xs:\n        return 0\n    return sum(aux(xs)) * 2\n")
    assert r == {"helper": 0.4, "main": 0.6, "syntax": 0.5, "tests": 1.0, "uses": 0.5,
                 "beyond_wrapper": 1.0, "discarded": 0.0, "total": 4.0}


def test_coop_pays_a_wrapper_the_use_bonus_only() -> None:
    for main in ("def f(xs):\n    return aux(xs)\n",
                 "def f(xs):\n    r = aux(xs)\n    return r\n"):
        r = coop(main)
        assert (r["uses"], r["beyond_wrapper"], r["total"]) == (0.5, 0.0, 3.0), main


def test_coop_pays_a_main_that_works_alone_no_cooperation_term() -> None:
    r = coop("def f(xs):\n    return [x for x in xs if x > 0]\n")
    assert (r["uses"], r["beyond_wrapper"], r["total"]) == (0.0, 0.0, 2.5)


def test_a_call_in_a_comment_or_a_string_is_not_a_call() -> None:
    for main in ('def f(xs):\n    # return aux(xs)\n    return [x for x in xs if x > 0]\n',
                 'def f(xs):\n    """Uses aux(xs)."""\n    s = "aux(xs)"\n    return [x for x in xs if x > 0]\n'):
        r = coop(main)
        assert r["uses"] == 0.0 and r["total"] == 2.5, main


def test_a_main_that_redefines_the_helper_gets_no_cooperation_term() -> None:
    main = ("def aux(xs):\n    return [x for x in xs if x >= 0]\n\n\n"
            "def f(xs):\n    return sorted(aux(xs))\n")
    r = coop(main)
    assert r["uses"] == 0.0 and r["beyond_wrapper"] == 0.0
    assert r["helper"] == 0.4  # the helper did write a working function: main threw it away
    nested = "def f(xs):\n    def aux(ys):\n        return ys\n    return sorted(aux(xs))\n"
    assert coop(nested)["uses"] == 0.0
    assert coop("def f(xs):\n    aux = sorted\n    return aux(xs)\n")["uses"] == 0.0


@pytest.mark.parametrize("body", ["pass", "...", "return None", "return 0", "return xs",
                                  "raise NotImplementedError", '"""Nothing yet."""'])
def test_a_trivial_helper_earns_nothing(body: str) -> None:
    helper = f"def aux(xs):\n    {body}\n"
    r = coop("def f(xs):\n    return sorted(aux(xs))\n", helper=helper)
    assert r["helper"] == 0.0 and r["uses"] == 0.0 and r["beyond_wrapper"] == 0.0


def test_a_thrown_away_result_is_not_use() -> None:
    bare = "def f(xs):\n    aux(xs)\n    return [x for x in xs if x > 0]\n"
    unread = "def f(xs):\n    tmp = aux(xs)\n    return [x for x in xs if x > 0]\n"
    for main in (bare, unread):
        r = coop(main)
        assert r["uses"] == 0.0 and r["discarded"] == 0.0 and r["total"] == 2.5, main


def test_a_discarded_call_beside_a_real_use_costs_half_a_point() -> None:
    # Without the discarded call main is a wrapper: the bare call must not make it a
    # decorator (the classifier would see "more statements than the call").
    r = coop("def f(xs):\n    aux([])\n    return aux(xs)\n")
    assert (r["uses"], r["beyond_wrapper"], r["discarded"]) == (0.5, 0.0, -0.5)
    assert r["total"] == pytest.approx(2.5)


def test_no_passing_test_no_cooperation_term() -> None:
    r = coop("def f(xs):\n    return sum(aux(xs)) * 2\n", verdict=PASS_NONE)
    assert r == {"helper": 0.4, "main": 0.6, "syntax": 0.5, "tests": 0.0, "uses": 0.0,
                 "beyond_wrapper": 0.0, "discarded": 0.0, "total": 1.5}
    half = coop("def f(xs):\n    return sum(aux(xs)) * 2\n", verdict=PASS_HALF)
    assert half["tests"] == 0.5 and half["total"] == pytest.approx(3.5)


def test_the_levels_gate_each_other() -> None:
    # No entry point: only the helper's structure points.
    assert coop("def g(xs):\n    return aux(xs)\n")["total"] == 0.4
    # The entry point returns nothing: the same.
    assert coop("def f(xs):\n    print(aux(xs))\n")["total"] == 0.4
    # The program does not parse: structure only.
    r = coop("def f(xs):\n    return sum(aux(xs)) * 2\n", verdict=_verdict(False, False, 0, 4))
    assert r["total"] == 1.0 and r["syntax"] == 0.0
    # Main's code itself does not parse: nothing can be decided.
    assert coop("def f(xs):\n    return (\n")["total"] == 0.0


def test_handing_the_helper_over_is_use_and_a_coordinator() -> None:
    for main in ("def f(xs):\n    return list(map(aux, [xs, xs]))\n",
                 "def f(xs):\n    return [aux(x) for x in xs]\n",
                 "def f(xs):\n    return sorted(xs, key=aux)\n"):
        r = coop(main)
        assert (r["uses"], r["beyond_wrapper"]) == (0.5, 1.0), main


def test_use_in_mains_own_function_counts_and_unreachable_code_does_not() -> None:
    via = "def _pos(xs):\n    return aux(xs)\n\n\ndef f(xs):\n    return len(_pos(xs)) + 1\n"
    assert analyse_use(HELPER, via, "f").used == 1
    dead = "def _never(xs):\n    return aux(xs)\n\n\ndef f(xs):\n    return len(xs)\n"
    assert analyse_use(HELPER, dead, "f").used == 0


def test_use_is_counted_per_call_site() -> None:
    use = analyse_use(HELPER, "def f(xs):\n    a = aux(xs)\n    aux(xs)\n    return a + aux([1])\n", "f")
    assert (use.used, use.discarded) == (2, 1)
    assert use.live == ("aux",) and use.entry_returns and use.helper_returns


def test_a_reward_returning_a_term_it_did_not_register_is_refused() -> None:
    from coopcode.rewards import REWARDS, RewardBreakdown, register
    from sandbox import Verdict

    @register("stray-term", ("tests",), "Passing tests")
    def stray(inp):  # type: ignore[no-untyped-def]
        return RewardBreakdown(tests=1.0, bonus=0.5)

    try:
        with pytest.raises(ValueError, match="returned term 'bonus'"):
            REWARDS["stray-term"](RewardInput(verdict=Verdict(status="passed"), main_code=""))
    finally:
        del REWARDS["stray-term"]
