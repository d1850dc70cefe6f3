"""Verdicts exactly as Python gives them: each program here is run both by the sandbox (every
backend) and by `python3 solution.py` on the harness's single file (program, tests,
`check(entry)`) in a fresh container of the sandbox image, and the two must agree. Each case
also says what python3 answers, so a reference that stopped running would fail too.

The cases are the ways a forked child and a separate test process could differ from one
python3 file: compile flags (`from __future__ import annotations` leaking from our modules),
`__name__`, `__file__`, builtins from `site`, what `import` finds, the recursion limit at
every depth the tests call from, the tests' module-level names, and exceptions by class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from sandbox_helpers import docker_or_skip

from sandbox import Job
from sandbox.reference import python3_file

UNIQUE_TESTS = ("\n\nMETADATA = {}\n\n\ndef check(candidate):\n"
                "    assert candidate([5, 3, 5, 2, 3, 3, 9, 0, 123]) == [0, 2, 3, 5, 9, 123]\n\n")
DEEP = "def deep(n):\n    return 0 if n == 0 else 1 + deep(n - 1)\n"


@dataclass(frozen=True)
class Case:
    id: str
    program: str
    tests: str
    entry: str
    python3_passes: bool


def _check(expr: str) -> str:
    return f"def check(candidate):\n    assert {expr}\n"


CASES = [
    # The issue's five-case check, on HumanEval/34's own tests.
    Case("unimported-type-in-signature",
         "def unique(l: List[int]) -> List[int]:\n    return sorted(set(l))\n",
         UNIQUE_TESTS, "unique", False),
    Case("the-same-with-its-import",
         "from typing import List\n\n\ndef unique(l: List[int]) -> List[int]:\n"
         "    return sorted(set(l))\n", UNIQUE_TESTS, "unique", True),
    Case("string-annotation",
         "def unique(l: 'List[int]') -> 'List[int]':\n    return sorted(set(l))\n",
         UNIQUE_TESTS, "unique", True),
    Case("unimported-module-level-annotated-name",
         "cache: Dict[int, int] = {}\n\n\ndef unique(l):\n    return sorted(set(l))\n",
         UNIQUE_TESTS, "unique", False),
    Case("local-annotation-never-evaluated",
         "def unique(l):\n    seen: Set[int] = set(l)\n    return sorted(seen)\n",
         UNIQUE_TESTS, "unique", True),
    # The recursion limit, at the depths python3 reaches: from check, via map, at top level.
    Case("recursion-from-check-deepest", DEEP, _check("candidate(997) == 997"), "deep", True),
    Case("recursion-from-check-one-deeper", DEEP, _check("candidate(998) == 998"), "deep", False),
    Case("recursion-via-map-deepest", DEEP, _check("list(map(candidate, [997])) == [997]"),
         "deep", True),
    Case("recursion-via-map-one-deeper", DEEP, _check("list(map(candidate, [998])) == [998]"),
         "deep", False),
    Case("recursion-top-level-deepest", DEEP,
         "assert deep(998) == 998\n\n\ndef check(candidate):\n    pass\n", "deep", True),
    Case("recursion-top-level-one-deeper", DEEP,
         "assert deep(999) == 999\n\n\ndef check(candidate):\n    pass\n", "deep", False),
    Case("recursion-module-code-deepest", DEEP + "X = deep(998)\n", _check("candidate(1) == 1"),
         "deep", True),
    Case("recursion-module-code-one-deeper", DEEP + "X = deep(999)\n",
         _check("candidate(1) == 1"), "deep", False),
    Case("program-raises-its-own-limit",
         "import sys\nsys.setrecursionlimit(10000)\n\n\n" + DEEP,
         _check("candidate(5000) == 5000"), "deep", True),
    # The tests' module-level names share the program's namespace in python3's file.
    Case("program-helper-named-check-is-the-tests",
         "def check(x):\n    return x > 0\n\n\ndef pos(xs):\n    return [x for x in xs if check(x)]\n",
         _check("candidate([1, -1]) == [1]"), "pos", False),
    Case("module-imported-only-by-the-tests",
         "def root(x):\n    return math.sqrt(x)\n",
         "import math\n\n\n" + _check("candidate(4) == 2.0"), "root", True),
    Case("module-imported-by-neither", "def root(x):\n    return math.sqrt(x)\n",
         _check("candidate(4) == 2.0"), "root", False),
    # __name__, __file__, site's builtins, what import finds.
    Case("main-block-runs", "VALUE = 0\nif __name__ == '__main__':\n    VALUE = 1\n\n\n"
         "def f():\n    return VALUE\n", _check("candidate() == 1"), "f", True),
    Case("file-is-the-program",
         "def f():\n    return open(__file__).read().startswith('def f')\n",
         _check("candidate() is True"), "f", True),
    Case("exit-is-a-builtin", "def f():\n    return callable(exit) and callable(quit)\n",
         _check("candidate() is True"), "f", True),
    Case("sandbox-modules-not-importable", "import wire\n\n\ndef f():\n    return 1\n",
         _check("candidate() == 1"), "f", False),
    Case("argv-is-the-file", "import sys\n\n\ndef f():\n    return sys.argv[0].endswith('.py')\n",
         _check("candidate() is True"), "f", True),
    # Exceptions by class; iterators stay iterators.
    Case("own-exception-caught-as-its-builtin-base",
         "class Bad(ValueError):\n    pass\n\n\ndef f(x):\n    raise Bad('no')\n",
         "def check(candidate):\n    try:\n        candidate(1)\n    except ValueError:\n"
         "        pass\n    else:\n        assert False\n", "f", True),
    Case("generator-is-not-a-list", "def f():\n    return (x for x in [1, 2])\n",
         _check("candidate() == [1, 2]"), "f", False),
    Case("generator-listed", "def f():\n    return (x for x in [1, 2])\n",
         _check("list(candidate()) == [1, 2]"), "f", True),
]

_PYTHON3: dict[str, Any] = {}


def python3_passes(case: Case) -> bool:
    if case.id not in _PYTHON3:
        _PYTHON3[case.id] = python3_file(case.program, case.tests, case.entry)
    return bool(_PYTHON3[case.id].passed)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_verdict_is_python3s(sandbox2: Any, case: Case) -> None:
    docker_or_skip()  # python3's own verdict runs in the sandbox image
    ref = python3_passes(case)
    assert ref == case.python3_passes, f"python3 itself now says {ref}: {_PYTHON3[case.id]}"
    verdict = sandbox2.run(Job(case.program, case.tests, case.entry))
    assert verdict.passed == ref, (case.id, verdict.status, verdict.detail,
                                   [(t.status, t.message) for t in verdict.tests])
