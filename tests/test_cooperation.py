"""The cooperation pattern classifier: hand-written (helper, main) pairs, four or more per pattern.

Each case is what a model pair could write for a small problem; the expected list is the
whole answer (no pattern more, none less), so a rule that starts firing too widely fails
here as surely as one that stops firing.
"""

from __future__ import annotations

import textwrap

import pytest

from coopcode import classify_cooperation
from coopcode.code_analysis.cooperation import describe_cooperation
from coopcode.code_analysis.patterns import PATTERNS, pattern_rates


def case(helper: str, main: str, expected: list[str], entry: str = "f") -> tuple[str, str, str, list[str]]:
    return textwrap.dedent(helper), textwrap.dedent(main), entry, expected


AUX_SUM = "def aux(xs):\n    return sum(xs)\n"
AUX_PRED = "def aux(x):\n    return x % 2 == 0\n"

CASES = {
    "ignored": [
        case(AUX_SUM, """
            def f(xs):
                return sum(xs)
            """, ["ignored"]),
        case(AUX_SUM, """
            def f(xs):
                total = 0
                for x in xs:
                    total += x
                return total
            """, ["ignored"]),
        # main writes its own aux: the helper's code is shadowed, never used
        case(AUX_SUM, """
            def aux(xs):
                return 0
            def f(xs):
                return aux(xs)
            """, ["ignored"]),
        # the name appears only in a string and a comment
        case(AUX_SUM, """
            def f(xs):
                # aux would do this too
                return len("aux") + sum(xs)
            """, ["ignored"]),
    ],
    "wrapper": [
        case(AUX_SUM, """
            def f(xs):
                return aux(xs)
            """, ["wrapper"]),
        case(AUX_SUM, '''
            def f(xs):
                """Sum the list."""
                result = aux(xs)
                return result
            ''', ["wrapper"]),
        case("def aux(a, b):\n    return a + b\n", """
            def f(a, b):
                return aux(a, b=b)
            """, ["wrapper"]),
        case("def aux(s, sep):\n    return s.split(sep)\n", """
            def f(s):
                return aux(s, " ")
            """, ["wrapper"]),
        # async entry points await the helper's result and return it
        case("async def aux(x):\n    return x\n", """
            async def f(x):
                return await aux(x)
            """, ["wrapper"]),
    ],
    "fallback": [
        case(AUX_SUM, """
            def f(xs):
                try:
                    return aux(xs)
                except Exception:
                    total = 0
                    for x in xs:
                        total += x
                    return total
            """, ["fallback"]),
        case("def aux(xs):\n    return min(xs) if xs else None\n", """
            def f(xs):
                r = aux(xs)
                if r is None:
                    return sorted(xs)[0] if xs else 0
                return r
            """, ["fallback"]),
        case("def aux(s):\n    return s.strip()\n", """
            def f(s):
                cleaned = aux(s)
                if cleaned:
                    return cleaned
                return s
            """, ["fallback"]),
        case("def aux(n):\n    return [i for i in range(n) if n % i == 0]\n", """
            def f(n):
                return aux(n) or [1, n]
            """, ["fallback"]),
        case(AUX_SUM, """
            def f(xs):
                r = aux(xs)
                return r if isinstance(r, int) else int(sum(xs))
            """, ["fallback"]),
    ],
    "decorator": [
        # pre-processing: main computes the helper's argument
        case("def aux(s):\n    return s == s[::-1]\n", """
            def f(text):
                return aux(text.lower().replace(" ", ""))
            """, ["decorator"]),
        # post-processing: main transforms the result
        case("def aux(xs):\n    return sorted(xs)\n", """
            def f(xs):
                return aux(xs)[::-1]
            """, ["decorator"]),
        # an edge case main handles before calling the helper
        case("def aux(xs):\n    return max(xs)\n", """
            def f(xs):
                if not xs:
                    return None
                return aux(xs)
            """, ["decorator"]),
        # the running balance from the helper, the decision by main (the README's example)
        case("def aux(ops):\n    out, t = [], 0\n    for o in ops:\n        t += o\n        out.append(t)\n    return out\n", """
            def f(operations):
                return any(b < 0 for b in aux(operations))
            """, ["decorator"]),
        case("def aux(xs):\n    return sorted(set(xs))\n", """
            def f(xs):
                unique = aux(xs)
                return len(unique)
            """, ["decorator"]),
    ],
    "coordinator": [
        case("def aux(x):\n    return x * x\n", """
            def f(xs):
                return [aux(x) for x in xs]
            """, ["coordinator"]),
        case("def aux(word):\n    return word[::-1]\n", """
            def f(s):
                out = []
                for word in s.split():
                    out.append(aux(word))
                return " ".join(out)
            """, ["coordinator"]),
        case("def aux(x):\n    return -x\n", """
            def f(xs):
                return sorted(xs, key=aux)
            """, ["coordinator"]),
        case("def aux(xs):\n    return sum(xs)\n", """
            def f(xs):
                half = len(xs) // 2
                left = aux(xs[:half])
                right = aux(xs[half:])
                return left - right
            """, ["coordinator", "decorator"]),
        case("def aux(c):\n    return c.upper()\n", """
            def f(s):
                return "".join(map(aux, s))
            """, ["coordinator"]),
    ],
    "strategy-filter": [
        case(AUX_PRED, """
            def f(xs):
                return [x for x in xs if aux(x)]
            """, ["strategy-filter"]),
        case("def aux(n):\n    return n > 1 and all(n % d for d in range(2, n))\n", """
            def f(n, x, y):
                if aux(n):
                    return x
                else:
                    return y
            """, ["strategy-filter"]),
        case(AUX_PRED, """
            def f(xs):
                return list(filter(aux, xs))
            """, ["strategy-filter"]),
        case("def aux(s):\n    return s.isupper()\n", """
            def f(s):
                return s.lower() if aux(s) else s.upper()
            """, ["strategy-filter"]),
        case(AUX_PRED, """
            def f(xs):
                evens = odds = 0
                for x in xs:
                    if aux(x):
                        evens += 1
                    else:
                        odds += 1
                return (evens, odds)
            """, ["strategy-filter"]),
    ],
}

MIXED = [
    # edge case + transformed result + helper in a loop
    case("def aux(w):\n    return w.capitalize()\n", """
        def f(s):
            if not s:
                return ""
            parts = [aux(w) for w in s.split("_")]
            first = aux(s.split("_")[0]).lower()
            return first + "".join(parts[1:])
        """, ["coordinator", "decorator"]),
    # the helper filters, and main falls back when nothing passes
    case(AUX_PRED, """
        def f(xs):
            try:
                picked = [x for x in xs if aux(x)]
            except TypeError:
                picked = []
            return picked
        """, ["fallback", "strategy-filter"]),
]


@pytest.mark.parametrize(("helper", "main", "entry", "expected"),
                         [c for cases in CASES.values() for c in cases] + MIXED)
def test_pairs_get_exactly_their_patterns(helper: str, main: str, entry: str,
                                           expected: list[str]) -> None:
    assert classify_cooperation(helper, main, entry) == expected


def test_every_pattern_has_at_least_four_examples() -> None:
    assert set(CASES) == set(PATTERNS)
    for name, cases in CASES.items():
        assert len(cases) >= 4, name
        assert all(name in expected for *_, expected in cases), name


def test_no_helper_or_unparsable_code_has_no_pattern() -> None:
    assert classify_cooperation("", "def f(x):\n    return x\n", "f") == []
    assert classify_cooperation("X = 1\n", "def f(x):\n    return x\n", "f") == []
    assert classify_cooperation(AUX_SUM, "def f(xs):\n    return aux(xs\n", "f") == []


def test_the_entry_point_is_guessed_for_old_records() -> None:
    main = "def f(xs):\n    return [aux(x) for x in xs]\n"
    assert classify_cooperation("def aux(x):\n    return x\n", main) == ["coordinator"]
    # main's own function that the entry point calls is part of main's answer
    main = "def g(x):\n    return aux(x) + 1\n\ndef f(xs):\n    return g(xs)\n"
    assert classify_cooperation(AUX_SUM, main, "f") == ["decorator"]


def test_the_tui_line_carries_the_patterns() -> None:
    coop = describe_cooperation("def f(xs):\n    return [aux(x) for x in xs]\n",
                                "def aux(x):\n    return x\n", "f")
    assert coop.summary == "main calls aux inside a loop (no own work)"
    assert coop.patterns == ("coordinator",)


def test_rates_count_each_program_once_per_pattern() -> None:
    rates = pattern_rates([["wrapper"], ["coordinator", "decorator"], ["decorator"], []])
    assert rates["decorator"] == 0.5 and rates["wrapper"] == 0.25 and rates["fallback"] == 0.0
    assert pattern_rates([]) == {}


def test_a_bare_call_beside_mains_own_statements_is_classified() -> None:
    """A call whose value main drops, beside statements of its own (a coop-trained main wrote
    this): classified, not a crash (the statement filter once or-ed a tuple with a type)."""
    main = "def f(xs):\n    aux(xs)\n    total = sum(xs)\n    return total\n"
    assert classify_cooperation(AUX_SUM, main, "f") == ["decorator"]
