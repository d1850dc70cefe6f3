"""Problems: problem.py parsing (good and malformed), HumanEval and its fixed splits, JSONL."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from coopcode.core.errors import ProblemError
from coopcode.problems import (
    load_humaneval,
    load_problem_file,
    load_problems,
    parse_problem_source,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_problem_file_with_check_and_doctests() -> None:
    p = load_problem_file(EXAMPLES / "below_zero.py")
    assert p.entry_point == "below_zero"
    assert p.task_id == "below_zero"
    # The prompt ends with the docstring, like HumanEval's; the tests are not in it.
    assert p.prompt.rstrip().endswith('"""')
    assert "def check" not in p.prompt and "assert" not in p.prompt
    assert p.prompt.startswith("from typing import List")
    assert "def check(candidate):" in p.tests and "from typing import List" in p.tests
    assert p.examples == ("assert candidate([1, 2, 3]) == False",
                          "assert candidate([1, 2, -4, 5]) == True")
    assert "def check(candidate):" in p.public_tests


def test_doctests_become_the_tests_without_check() -> None:
    p = load_problem_file(EXAMPLES / "is_palindrome.py")
    assert p.tests.count("assert candidate(") == 3


def test_entry_point_is_found_not_guessed_from_file_name() -> None:
    source = '''
import math

def helper_given(x):
    return x * 2

def area(r: float) -> float:
    """Area of a circle of radius r.
    >>> round(area(1.0), 2)
    3.14
    """
'''
    p = parse_problem_source(source, "shapes.py")
    assert p.entry_point == "area"
    assert "def helper_given" in p.prompt  # given code stays in the prompt
    assert p.examples == ("assert round(candidate(1.0), 2) == 3.14",)


def test_top_level_asserts_are_tests() -> None:
    source = '''
def inc(x):
    """Add one."""

assert inc(1) == 2
assert inc(-1) == 0
'''
    p = parse_problem_source(source, "inc.py")
    assert "assert candidate(1) == 2" in p.tests and "assert candidate(-1) == 0" in p.tests
    assert "assert" not in p.prompt


def test_explicit_entry_point_among_several_stubs() -> None:
    source = '''
__entry_point__ = "b"

def a(x):
    """A."""

def b(x):
    """B.
    >>> b(1)
    1
    """
'''
    p = parse_problem_source(source, "two.py")
    assert p.entry_point == "b"
    assert "__entry_point__" not in p.prompt


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def f(x):\n    return (\n", "syntax error"),
        ("def f(x):\n    return x\n", "no entry point"),
        ('def f(x):\n    """Doc."""\n', "no tests"),
        ('def f(x):\n    """A."""\n\ndef g(x):\n    """B."""\n', "several functions"),
        ('__entry_point__ = "zz"\ndef f(x):\n    """A.\n    >>> f(1)\n    1\n    """\n', "not defined"),
    ],
)
def test_malformed_problem_files_get_one_clear_line(source: str, message: str) -> None:
    with pytest.raises(ProblemError, match=message) as info:
        parse_problem_source(source, "bad.py")
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("bad.py")


def test_missing_file() -> None:
    with pytest.raises(ProblemError, match="no such file"):
        load_problem_file(Path("/nonexistent/problem.py"))


def test_humaneval_split_is_fixed_and_complete() -> None:
    train, test = load_humaneval("train"), load_humaneval("test")
    assert (len(train), len(test)) == (124, 40)
    assert not {p.task_id for p in train} & {p.task_id for p in test}
    # Pinned: the split depends only on task ids, so it is the same on every machine.
    assert [p.task_id for p in test[:5]] == ["HumanEval/5", "HumanEval/6", "HumanEval/7",
                                             "HumanEval/9", "HumanEval/14"]
    everything = load_humaneval("all")
    assert len(everything) == 164
    assert all(p.canonical_solution for p in everything)
    with pytest.raises(ProblemError, match="unknown HumanEval split"):
        load_humaneval("dev")


VAL_IDS = [f"HumanEval/{i}" for i in (3, 11, 22, 25, 27, 45, 46, 48, 58, 64, 70, 73, 80, 87, 89,
                                     90, 94, 97, 98, 103, 108, 111, 113, 115, 117, 125, 127,
                                     132, 139, 146)]


def test_validation_split_divides_train_and_leaves_test_alone() -> None:
    train = [p.task_id for p in load_humaneval("train")]
    val = [p.task_id for p in load_humaneval("val")]
    fit = [p.task_id for p in load_humaneval("fit")]
    assert (len(val), len(fit)) == (30, 94)
    assert set(val) <= set(train) and not set(val) & set(fit)
    assert sorted(val + fit, key=train.index) == train  # in task order, nothing lost or doubled
    # Pinned like the test split: runs validated on these stay comparable on every machine.
    assert val == VAL_IDS
    assert [p.task_id for p in load_problems("humaneval:val")] == VAL_IDS
    # train and test are what they were before val and fit (committed runs and tables use them).
    test = [p.task_id for p in load_humaneval("test")]
    assert not set(test) & (set(val) | set(fit))
    digest = {name: hashlib.sha256(",".join(ids).encode()).hexdigest()[:16]
              for name, ids in (("train", train), ("test", test))}
    assert digest == {"train": "70a09c3910b0b118", "test": "c2bfc17b1c91e160"}
    with pytest.raises(ProblemError, match="use one of train, test, val, fit, all"):
        load_problems("humaneval:dev")


def test_humaneval_public_examples_are_parsed() -> None:
    problems = {p.task_id: p for p in load_humaneval("all")}
    assert problems["HumanEval/0"].examples == (
        "assert candidate([1.0, 2.0, 3.0], 0.5) == False",
        "assert candidate([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3) == True",
    )
    # "f(x) ➞ y" and "f(x) returns y" styles
    assert "assert candidate('hello') == 'ehllo'" in problems["HumanEval/86"].examples
    with_examples = sum(1 for p in problems.values() if p.examples)
    assert with_examples >= 130


def test_jsonl_loader(tmp_path: Path) -> None:
    record = {"task_id": "t/1", "prompt": 'def f(x):\n    """Double.\n    >>> f(2)\n    4\n    """\n',
              "entry_point": "f", "test": "def check(candidate):\n    assert candidate(3) == 6\n"}
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps(record) + "\n")
    (p,) = load_problems(str(path))
    assert (p.task_id, p.entry_point, p.examples) == ("t/1", "f", ("assert candidate(2) == 4",))
    path.write_text('{"task_id": "x"}\n')
    with pytest.raises(ProblemError, match="lacks prompt, entry_point, test"):
        load_problems(str(path))
    path.write_text("{not json\n")
    with pytest.raises(ProblemError, match="not valid JSON"):
        load_problems(str(path))


def test_problem_folder(tmp_path: Path) -> None:
    with pytest.raises(ProblemError, match="no .py problem files"):
        load_problems(str(tmp_path))
    problems = load_problems(str(EXAMPLES))
    assert {p.entry_point for p in problems} >= {"below_zero", "is_palindrome"}
