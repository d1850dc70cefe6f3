"""`coop-text`: the MAGRPO authors' cooperative reward as their code computes it (their regular
expressions on the text), level by level and regex by regex, on hand-written pairs with
hand-made verdicts; where it and `coop` (the syntax tree) disagree; and through `evaluate`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import coopcode

from coopcode.rewards import REWARDS, RewardInput, get_reward
from coopcode.rewards.coop_text import (
    cleanup_code,
    extract_specific_function,
    ignored_aux_calls,
    imports_from_prompt,
    is_wrapper,
    prompt_context,
    uses_aux,
)
from sandbox import TestRecord, Verdict

REPO = Path(__file__).resolve().parent.parent
BELOW_ZERO = str(REPO / "examples" / "below_zero.py")


def _verdict(syntax: bool, passed: int, total: int) -> Verdict:
    tests = tuple(TestRecord(i, "assert x", "passed" if i < passed else "failed")
                  for i in range(total))
    return Verdict(status="passed" if passed == total else "failed", tests=tests,
                   syntax_ok=syntax, runnable=syntax)


PASS_ALL = _verdict(True, 4, 4)
PASS_HALF = _verdict(True, 2, 4)
PASS_NONE = _verdict(True, 0, 4)
NO_TESTS = _verdict(True, 0, 0)

HELPER = '''def aux(xs):
    """The positive numbers of xs."""
    return [x for x in xs if x > 0]
'''
# Main post-processes the helper's result: full marks under both rewards.
REAL_USE = "def f(xs):\n    if not xs:\n        return 0\n    return sum(aux(xs)) * 2\n"
ALONE = "def f(xs):\n    return sum(x for x in xs if x > 0)\n"
FULL = {"helper": 0.4, "main": 0.6, "syntax": 0.5, "tests": 1.0, "uses": 0.5,
        "beyond_wrapper": 1.0, "discarded": 0.0, "total": 4.0}


def _inp(main: str, helper: str, verdict: Verdict, program: str | None) -> RewardInput:
    if program is None:
        program = "\n\n\n".join(p.strip("\n") for p in (helper, main) if p.strip()) + "\n"
    return RewardInput(verdict=verdict, main_code=main, helper_code=helper, program=program,
                       entry_point="f")


def text(main: str, helper: str = HELPER, verdict: Verdict = PASS_ALL,
         program: str | None = None) -> dict[str, float]:
    return get_reward("coop-text")(_inp(main, helper, verdict, program)).to_dict()


def coop(main: str, helper: str = HELPER, verdict: Verdict = PASS_ALL) -> dict[str, float]:
    return get_reward("coop")(_inp(main, helper, verdict, None)).to_dict()


# -- registration ---------------------------------------------------------------------------

def test_coop_text_is_registered_beside_coop_with_its_terms_and_formula() -> None:
    r = get_reward("coop-text")
    assert list(REWARDS).index("coop-text") == list(REWARDS).index("coop") + 1
    assert r.terms == get_reward("coop").terms  # the two compare term by term
    assert "their text checks" in r.summary and "`aux (x)`" in r.summary


# -- their levels and gates -----------------------------------------------------------------

def test_real_use_earns_the_maximum_under_both() -> None:
    assert text(REAL_USE) == FULL
    assert coop(REAL_USE) == FULL


def test_the_helpers_points_are_not_a_gate() -> None:
    # No `def aux`: no helper points, the rest is scored; no bonus without their aux_func.
    r = text(REAL_USE, helper="def helper(xs):\n    return xs\n")
    assert (r["helper"], r["main"], r["tests"], r["uses"], r["total"]) == (0.0, 0.6, 1.0, 0.0, 2.1)
    # `aux` without a return: no helper points, but the bonus only needs aux to exist.
    r = text(REAL_USE, helper="def aux(xs):\n    print(xs)\n")
    assert (r["helper"], r["uses"], r["beyond_wrapper"]) == (0.0, 0.5, 1.0)
    assert r["total"] == pytest.approx(3.6)


def test_without_the_entry_point_or_its_return_scoring_stops() -> None:
    assert text("def g(xs):\n    return sum(aux(xs)) * 2\n") == {
        **dict.fromkeys(FULL, 0.0), "helper": 0.4, "total": 0.4}
    assert text("def f(xs):\n    print(aux(xs))\n")["total"] == 0.4
    assert text("def f(xs):\n    return\n")["total"] == 0.4  # "return" + whitespace: none left


def test_return_is_found_in_the_text_not_the_tree() -> None:
    """Their `return\\s+`: a comment or a docstring line is enough (coop: no return, stop)."""
    for main in ("def f(xs):\n    print(aux(xs))  # return nothing\n",
                 'def f(xs):\n    """return the sum."""\n    print(aux(xs))\n',
                 "def f(xs):\n    if xs:\n        return\n    print(aux(xs))\n"):
        r = text(main)
        assert (r["main"], r["syntax"], r["uses"]) == (0.6, 0.5, 0.5), main
        assert coop(main)["main"] == 0.0, main
    # A trivial aux still earns its structure points and leaves the bonus open.
    r = text(REAL_USE, helper="def aux(xs):\n    return xs\n")
    assert r == FULL
    assert coop(REAL_USE, helper="def aux(xs):\n    return xs\n")["helper"] == 0.0


def test_the_syntax_level_parses_their_combined_text() -> None:
    # Main's entry point itself does not parse: stop after the structure points.
    r = text("def f(xs):\n    return (sum(aux(xs))\n")
    assert (r["main"], r["syntax"], r["total"]) == (0.6, 0.0, 1.0)
    # A broken function besides the entry point is not in their text: it parses there,
    # though the sandbox's program did not (coop decides nothing from unparsable code).
    broken = REAL_USE + "\n\ndef g(:\n    pass\n"
    no_syntax = _verdict(False, 0, 4)
    assert text(broken, verdict=no_syntax)["total"] == pytest.approx(1.5)
    assert coop(broken, verdict=no_syntax)["total"] == 0.0  # main's code does not parse


def test_the_prompts_import_lines_come_from_the_program() -> None:
    main, helper = REAL_USE, HELPER
    tail = helper.strip("\n") + "\n\n\n" + main.strip("\n") + "\n"
    good = "from typing import List\n\n\n" + tail
    inp = _inp(main, helper, PASS_ALL, good)
    assert prompt_context(inp) == "from typing import List\n\n\n"
    assert imports_from_prompt(prompt_context(inp)) == "from typing import List"
    assert text(main, program=good) == FULL
    # Their import regex keeps `from typing import (` alone: their combined text breaks.
    wrapped = "from typing import (\n    List,\n)\n\n\n" + tail
    assert text(main, program=wrapped)["total"] == pytest.approx(1.0)
    # A program not built as prompt context + helper + main: no prompt imports.
    assert prompt_context(_inp(main, helper, PASS_ALL, "something else\n")) == ""


def test_no_tests_stops_before_the_tests_and_the_bonus() -> None:
    assert text(REAL_USE, verdict=NO_TESTS)["total"] == pytest.approx(1.5)


def test_tests_pay_their_fraction_and_the_bonus_needs_one_passing() -> None:
    half = text(REAL_USE, verdict=PASS_HALF)
    assert (half["tests"], half["uses"], half["total"]) == (0.5, 0.5, 3.5)
    none = text(REAL_USE, verdict=PASS_NONE)
    assert none == {**FULL, "tests": 0.0, "uses": 0.0, "beyond_wrapper": 0.0, "total": 1.5}


# -- their use check: `aux(` anywhere in the entry point's text -----------------------------

@pytest.mark.parametrize("main", [
    "def f(xs):\n    # aux(xs) would do\n    return sum(x for x in xs if x > 0)\n",
    'def f(xs):\n    s = "aux(xs)"\n    return sum(x for x in xs if x > 0)\n',
    'def f(xs):\n    """Not aux(xs)."""\n    return sum(x for x in xs if x > 0)\n',
    "def f(xs):\n    return helper.aux(xs) + 1\n",
])
def test_a_call_in_a_comment_a_string_or_on_an_object_counts_as_use(main: str) -> None:
    r = text(main)
    assert (r["uses"], r["total"]) == (0.5, 3.0 if "helper.aux" in main else 4.0), main
    assert coop(main)["uses"] == 0.0, main


def test_a_main_that_redefines_aux_still_earns_use() -> None:
    top = "def aux(xs):\n    return xs\n\n\ndef f(xs):\n    total = 0\n    return sum(aux(xs)) + total\n"
    nested = "def f(xs):\n    def aux(ys):\n        return ys\n    return sum(aux(xs)) + 1\n"
    for main in (top, nested):
        r = text(main)
        assert (r["uses"], r["beyond_wrapper"], r["total"]) == (0.5, 1.0, 4.0), main
        assert coop(main)["uses"] == 0.0, main
    assert uses_aux("def f(xs):\n    def aux(ys):\n        pass\n    return 1\n")  # the def line


def test_use_through_mains_own_function_is_not_seen() -> None:
    via = "def _pos(xs):\n    return aux(xs)\n\n\ndef f(xs):\n    return len(_pos(xs)) + 1\n"
    assert text(via)["uses"] == 0.0 and text(via)["total"] == 2.5
    assert coop(via)["uses"] == 0.5


# -- their wrapper check ----------------------------------------------------------------------

@pytest.mark.parametrize("main", [
    "def f(xs):\n    return aux(xs)\n",
    "def f(xs):\n    return sorted(aux(xs))\n",
    "def f(xs):\n    return aux(xs)[::-1]\n",
    "def f(xs):\n    return any(b < 0 for b in aux(xs))\n",
])
def test_a_one_line_return_mentioning_aux_is_a_wrapper(main: str) -> None:
    r = text(main)
    assert (r["uses"], r["beyond_wrapper"], r["total"]) == (0.5, 0.0, 3.0), main
    expected = 0.0 if main == "def f(xs):\n    return aux(xs)\n" else 1.0
    assert coop(main)["beyond_wrapper"] == expected, main  # coop: post-processing is not


def test_their_two_line_template_and_the_shapes_it_misses() -> None:
    assert is_wrapper("def f(xs):\n    r = aux(xs)\n    return r")
    assert not is_wrapper("def f(xs):\n    r = aux(xs)\n    return r + 1")
    assert not is_wrapper("def f(xs):\n    r = aux(xs)\n    return  r")  # exact text only
    assert is_wrapper("def f(xs):\n    # comment\n\n    r = aux(xs)\n    return r")
    assert not is_wrapper("def f(xs):\n    print(aux(xs))")  # one line, not `return `
    # Wrappers their templates miss (coop: wrappers): an annotated assignment (their regex
    # takes `list` for the name) and a return split over lines.
    for shape in ("def f(xs):\n    r: list = aux(xs)\n    return r\n",
                  "def f(xs):\n    return (\n        aux(xs)\n    )\n"):
        assert text(shape)["beyond_wrapper"] == 1.0, shape
        assert coop(shape)["beyond_wrapper"] == 0.0, shape


def test_an_empty_body_is_a_wrapper() -> None:
    assert is_wrapper("def f(xs):\n    # only a comment")
    assert is_wrapper("def f(xs):\n    '''Only a docstring.'''")


def test_a_docstring_closed_on_its_own_line_hides_the_body() -> None:
    """Their docstring state stays on after a closing `\"\"\"` line: the rest is dropped, the
    body is empty, main is a wrapper."""
    humaneval = 'def f(xs):\n    """Twice the sum of the positives.\n    """\n' + REAL_USE.split("\n", 1)[1]
    r = text(humaneval)
    assert (r["uses"], r["beyond_wrapper"], r["total"]) == (0.5, 0.0, 3.0)
    assert coop(humaneval)["beyond_wrapper"] == 1.0
    one_line = 'def f(xs):\n    """Twice the sum of the positives."""\n' + REAL_USE.split("\n", 1)[1]
    closed_on_text = 'def f(xs):\n    """Twice the sum\n    of the positives."""\n' \
        + REAL_USE.split("\n", 1)[1]
    assert text(one_line) == FULL and text(closed_on_text) == FULL


# -- their ignored-result check ---------------------------------------------------------------

def test_only_aux_space_one_character_counts_as_an_ignored_result() -> None:
    costly = "def f(xs):\n    x = xs\n    aux (x)\n    return sum(aux(xs)) * 2\n"
    r = text(costly)
    assert (r["uses"], r["beyond_wrapper"], r["discarded"]) == (0.5, 1.0, -0.5)
    assert r["total"] == pytest.approx(3.5)
    assert ignored_aux_calls(extract_specific_function(costly, "f")) == ["Line 3: aux (x)"]
    for free in ("aux(x)", "aux (xs)", "aux  (x)", "aux (x);", "tmp = aux (x)"):
        assert ignored_aux_calls(f"def f(xs):\n    {free}\n    return 1") == [], free


def test_a_bare_call_before_a_wrapper_is_free_and_breaks_their_template() -> None:
    main = "def f(xs):\n    aux([])\n    return aux(xs)\n"
    r = text(main)
    assert (r["uses"], r["beyond_wrapper"], r["discarded"], r["total"]) == (0.5, 1.0, 0.0, 4.0)
    c = coop(main)
    assert (c["uses"], c["beyond_wrapper"], c["discarded"], c["total"]) == (0.5, 0.0, -0.5, 2.5)


def test_a_discarded_call_alone_is_use_in_theirs() -> None:
    main = "def f(xs):\n    aux(xs)\n    return sum(x for x in xs if x > 0)\n"
    assert text(main)["total"] == 4.0
    assert coop(main)["total"] == 2.5


# -- their text extraction ----------------------------------------------------------------------

def test_only_a_function_named_aux_is_the_helpers() -> None:
    helper = "def aux2(xs):\n    return [x for x in xs if x > 0]\n"
    main = "def f(xs):\n    if not xs:\n        return 0\n    return sum(aux2(xs)) * 2\n"
    r = text(main, helper=helper)
    assert (r["helper"], r["uses"], r["total"]) == (0.0, 0.0, 2.1)
    assert coop(main, helper=helper)["total"] == 4.0


def test_fences_and_prose_of_a_raw_output_are_cleaned_as_theirs() -> None:
    raw_main = "Here is the code.\n```python\n" + REAL_USE + "```\nThis solves it.\n"
    raw_helper = "```python\n" + HELPER + "```\n"
    assert text(raw_main, helper=raw_helper) == FULL
    assert cleanup_code(raw_main) == REAL_USE.strip()
    assert cleanup_code("No code here.") == ""


# -- through the CLI ------------------------------------------------------------------------------

HELPER_BZ = ("def aux(ops):\n    out, total = [], 0\n    for o in ops:\n        total += o\n"
             "        out.append(total)\n    return out\n")
USE_BZ = "    balances = aux(operations)\n    return min(balances, default=0) < 0\n"
PAIRS = [
    # real use: full marks
    {"helper": HELPER_BZ, "main": "def below_zero(operations):\n" + USE_BZ},
    # the same under a HumanEval-style docstring: their wrapper check sees an empty body
    {"helper": HELPER_BZ,
     "main": 'def below_zero(operations):\n    """Whether the balance goes below zero.\n    """\n'
             + USE_BZ},
    # a one-line return around the helper's result: a wrapper for them
    {"helper": HELPER_BZ,
     "main": "def below_zero(operations):\n    return any(b < 0 for b in aux(operations))\n"},
    # main works alone, the helper's call only in a comment: use for them
    {"helper": HELPER_BZ,
     "main": "def below_zero(operations):\n    # aux(operations) is not needed\n    total = 0\n"
             "    for o in operations:\n        total += o\n        if total < 0:\n"
             "            return True\n    return False\n"},
]


def test_evaluate_writes_the_coop_text_terms(tmp_path: Path) -> None:
    samples = tmp_path / "pairs.jsonl"
    samples.write_text("".join(json.dumps({"task_id": "below_zero", **p}) + "\n" for p in PAIRS))
    out = tmp_path / "coop-text.jsonl"
    done = coopcode("evaluate", str(samples), "--problems", BELOW_ZERO, "--k", "1",
                    "--reward", "coop-text", "--out", str(out), "--sandbox", "process", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["reward"] == "coop-text" and result["pass@1"] == 1.0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["passed"] for r in rows] == [True] * 4
    assert all(r["reward_name"] == "coop-text" for r in rows)
    base = {"helper": 0.4, "main": 0.6, "syntax": 0.5, "tests": 1.0, "uses": 0.5,
            "discarded": 0.0}
    assert rows[0]["reward"] == {**base, "beyond_wrapper": 1.0, "total": 4.0}
    assert rows[1]["reward"] == {**base, "beyond_wrapper": 0.0, "total": 3.0}
    assert rows[2]["reward"] == {**base, "beyond_wrapper": 0.0, "total": 3.0}
    assert rows[3]["reward"] == {**base, "beyond_wrapper": 1.0, "total": 4.0}
    assert result["mean_reward"] == pytest.approx(3.5)
