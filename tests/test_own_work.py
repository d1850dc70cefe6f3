"""Own work and the helper alone: the honest measures of cooperation, on hand-written pairs.

Every shell a `coop`-trained pair learned (read from the committed runs' samples) must come
out as no own work; loops, branches, `key=`, per-item comprehensions and statement-level
combinations as own work; discarded calls, trivial helpers and redefined helpers as none.
`helper_solves` runs the helper's code alone in a real sandbox (the process backend here;
Docker is the default elsewhere) with a helper function standing in for the entry point.
"""

from __future__ import annotations

import textwrap

import pytest

from coopcode import analyse_cooperation
from coopcode.code_analysis.cooperation import cooperation_of, cooperation_rates
from coopcode.code_analysis.own_work import own_work
from coopcode.collaboration.helper_alone import candidates
from coopcode.collaboration.judging import Written, judge_all
from coopcode.problems import load_humaneval

COUNT = "def aux(s):\n    return sum(1 for c in s if c in 'aeiou')\n"  # a part of a task
PRED = "def aux(x):\n    return x % 2 == 0\n"


def main(body: str, params: str = "s") -> str:
    return f"def f({params}):\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + "\n"


SHELLS = {  # one expression (or its spread over statements) around the helper's answer
    "compare with a constant": "return aux(s) >= 3",
    "inverting a bracket check": "return aux(s) == 0",
    "guard in a conditional expression": "return aux(s, 0)[:] if s else []",
    "copy": "return aux(s).copy()",
    "not": "return not aux(s)",
    "== True": "return aux(s) == True",
    "list()": "return list(aux(s))",
    "index": "return aux(s)[0]",
    "power": "return aux(s) ** 3",
    "reversed": "return aux(s)[::-1]",
    "plain wrapper": "return aux(s)",
    "prepared argument": "return aux(s.lower())",
    "spread over statements": "r = aux(s)\nout = r >= 3\nreturn out",
    "if returning constants": "if aux(s) >= 3:\n    return True\nreturn False",
    "edge case then the helper": "if not s:\n    return []\nreturn aux(s)",
    "iterating the answer in one expression": "return any(b < 0 for b in aux(s))",
    "for over the answer returning constants": "for b in aux(s):\n    if b < 0:\n        return True\nreturn False",
    "called per item but never on the item": "return [str(aux(s)) for c in s]",
    "per item of a literal": "return [aux(c) for c in 'abc']",
}

SPLITS = {  # main does work of its own with the helper's answer
    "key=": "return sorted(s, key=aux)",
    "map": "return list(map(aux, s))",
    "filter by the helper per item": "return sum(1 for n in s if aux(n) > 0)",
    "comprehension on each item": "return [aux(x) for x in s]",
    "lambda on each item": "return sorted(s, key=lambda x: -aux(x))",
    "loop": "out = []\nfor x in s:\n    out.append(aux(x))\nreturn out",
    "while over indexes": "i, t = 0, 0\nwhile i < len(s):\n    t += aux(s[i])\n    i += 1\nreturn t",
    "branch with a fallback of its own": "r = aux(s)\nif r is None:\n    return sorted(s)[0]\nreturn r",
    "filter main's items by the answer": "r = aux(s)\nreturn [x for x in s if x in r]",
    "combine with main's own statement": "evens = aux(s)\nodds = [x for x in s if x % 2]\nreturn sorted(evens + odds)",
    "loop over the answer using main's input": "out = []\nfor b in aux(s):\n    out.append(b + len(s))\nreturn out",
}


@pytest.mark.parametrize("body", list(SHELLS.values()), ids=list(SHELLS))
def test_a_shell_is_not_own_work(body: str) -> None:
    assert own_work(COUNT, main(body), "f") is False


@pytest.mark.parametrize("body", list(SPLITS.values()), ids=list(SPLITS))
def test_a_split_of_the_work_is_own_work(body: str) -> None:
    assert own_work(COUNT, main(body), "f") is True


def test_no_live_use_is_no_own_work() -> None:
    loop = main("return [aux(x) for x in s]")
    assert own_work("def aux(x):\n    return x\n", loop, "f") is False  # a trivial helper
    assert own_work(PRED, "def aux(x):\n    return True\n\n" + loop, "f") is False  # redefined
    assert own_work(PRED, main("aux(s)\nreturn sum(s)"), "f") is False  # value thrown away
    assert own_work(PRED, main("return sum(s)"), "f") is False  # ignored
    assert own_work("", loop, "f") is False and own_work(PRED, "def f(s:\n", "f") is False


def test_mains_own_function_stands_for_the_helper_it_calls() -> None:
    code = "def g(x):\n    return aux(x) + 1\n\ndef f(s):\n    return [g(x) for x in s]\n"
    assert own_work(PRED, code, "f") is True
    assert own_work(PRED, "def g(x):\n    return aux(x) + 1\n\ndef f(s):\n    return g(s)\n", "f") is False


def test_shells_a_coop_run_learned_are_no_own_work() -> None:
    """Mains copied from the committed `magrpo-coop-0.5b` samples (steps 31-60)."""
    learned = [
        ("def make_palindrome(string: str) -> str:\n    s = aux(string)\n    return s + aux(s[::-1])\n",
         "make_palindrome"),
        ("def largest_divisor(n: int) -> int:\n    return aux(n) if n > 1 else 1\n", "largest_divisor"),
        ("def common(l1: list, l2: list):\n    return aux(l1, l2) if l1 and l2 else []\n", "common"),
        ("def has_close_elements(numbers, threshold):\n"
         "    return aux(numbers, threshold) or aux(numbers, threshold / 2)\n", "has_close_elements"),
    ]
    helper = "def aux(*a):\n    return a[0]\n\n\ndef aux2(x):\n    return [x]\n"
    for code, entry in learned:
        assert own_work(helper.replace("return a[0]", "return len(a) + 1"), code, entry) is False


def test_the_analysis_carries_both_measures_and_the_tui_line() -> None:
    found = analyse_cooperation(PRED, main("return [x for x in s if aux(x)]"), "f", helper_solves=False)
    assert found.own_work and found.helper_solves is False and found.uses_helper
    assert "strategy-filter" in found.patterns
    assert found.summary == ("main calls aux inside a loop (own work); "
                             "the helper alone does not solve it")
    assert found.to_record() == {"patterns": list(found.patterns), "own_work": True,
                                 "helper_solves": False, "both_needed": None}
    shell = analyse_cooperation(COUNT, main("return aux(s) >= 3"), "f", helper_solves=True)
    assert shell.shell and not shell.own_work
    rates = cooperation_rates([found, shell])
    assert rates == {"own_work": 0.5, "helper_solves": 0.5, "uses_helper": 1.0, "shell": 0.5,
                     "both_needed": None}
    # a record from before helper_solves was measured: the rest from its code
    old = cooperation_of({"helper_code": PRED, "main_code": main("return [aux(x) for x in s]"),
                          "entry_point": "f", "cooperation": ["coordinator"]})
    assert old.own_work and old.helper_solves is None
    assert cooperation_rates([old])["helper_solves"] is None


def test_candidates_are_helper_functions_whose_parameters_fit() -> None:
    helper = ("def one(x):\n    return x + 1\n\ndef two(a, b):\n    return a + b\n\n"
              "def many(*xs):\n    return xs[0]\n\ndef idle(x):\n    return x\n")
    assert candidates(helper, "def f(x):\n    pass\n", "f") == ["one", "many"]
    assert candidates(helper, "def f(x, y=0):\n    pass\n", "f") == ["one", "two", "many"]
    assert candidates("def aux(:\n", "def f(x):\n    pass\n", "f") == []


BRACKETS = next(p for p in load_humaneval("all") if p.task_id == "HumanEval/61")
SOLVING_HELPER = ("def aux(brackets):\n    depth = 0\n    for b in brackets:\n"
                  "        depth += 1 if b == '(' else -1\n        if depth < 0:\n"
                  "            return False\n    return depth == 0\n")
STEP_HELPER = "def aux(c):\n    return 1 if c == '(' else -1\n"
SPLIT_MAIN = ("def correct_bracketing(brackets: str):\n    depth = 0\n    for c in brackets:\n"
              "        depth += aux(c)\n        if depth < 0:\n            return False\n"
              "    return depth == 0\n")


def pair(helper: str, main_code: str) -> Written:
    from coopcode.code_analysis.program import combine

    program = combine(BRACKETS.prompt, BRACKETS.entry_point, helper, main_code).text
    return Written(BRACKETS, "sequential", main_code, helper, program)


def test_helper_solves_is_the_helper_run_alone_in_the_sandbox(process_sandbox: object) -> None:
    shell = "def correct_bracketing(brackets: str):\n    return aux(brackets)\n"
    judged = judge_all([pair(SOLVING_HELPER, shell), pair(STEP_HELPER, SPLIT_MAIN),
                        pair("def aux(x, y, z):\n    return x\n", shell)],
                       process_sandbox)  # type: ignore[arg-type]
    assert [j.verdict.passed for j in judged] == [True, True, False]
    assert [j.cooperation.helper_solves for j in judged] == [True, False, False]
    assert [j.cooperation.own_work for j in judged] == [False, True, False]
