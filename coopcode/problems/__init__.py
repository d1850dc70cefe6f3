"""Problems: the `Problem` type and loaders for HumanEval, the compose set, JSONL files and
problem.py files."""

from __future__ import annotations

from pathlib import Path

from coopcode.core.errors import ProblemError
from coopcode.problems.compose import load_compose
from coopcode.problems.contract import Contract
from coopcode.problems.humaneval import (
    held_out_ids,
    load_humaneval,
    load_jsonl_problems,
    validation_ids,
)
from coopcode.problems.problem import Problem
from coopcode.problems.problem_file import load_problem_file, parse_problem_source

SPEC_HELP = ("use humaneval[:train|test|val|fit|all] (val and fit divide train), "
             "compose[:train|val|test|all], a .jsonl or .jsonl.gz in HumanEval format, a .py or "
             "a folder of .py")

__all__ = [
    "BUILT_IN_SETS",
    "Contract",
    "Problem",
    "held_out_ids",
    "load_compose",
    "load_humaneval",
    "load_jsonl_problems",
    "load_problem_file",
    "load_problems",
    "parse_problem_source",
    "validation_ids",
]


def load_problems(spec: str = "humaneval:test") -> list[Problem]:
    """Problems named by `spec`.

    `humaneval[:train|test|val|fit|all]` (val, 30 problems, and fit, 94, divide train's
    124), `compose[:train|val|test|all]` (two HumanEval steps composed, with a contract), a
    `.jsonl`/`.jsonl.gz` file in HumanEval format, a `problem.py` file, or a folder of
    problem files. A set's name alone is its test split.
    """
    if not spec.strip():
        raise ProblemError(f"no problems named: {SPEC_HELP}")
    if spec == "humaneval" or spec.startswith("humaneval:"):
        return load_humaneval(spec.partition(":")[2] or "test")
    if spec == "compose" or spec.startswith("compose:"):
        return load_compose(spec.partition(":")[2] or "test")
    path = Path(spec)
    if path.is_dir():
        files = sorted(f for f in path.glob("*.py") if f.is_file())
        if not files:
            raise ProblemError(f"{path}: no .py problem files in this folder: {SPEC_HELP}")
        return [load_problem_file(f) for f in files]
    if not path.exists() and not path.is_symlink():
        raise ProblemError(f"{spec}: no such file: {SPEC_HELP}")
    if path.name.endswith((".jsonl", ".jsonl.gz", ".json")):
        return load_jsonl_problems(path)
    if path.suffix == ".py":
        return [load_problem_file(path)]
    raise ProblemError(f"{spec}: unknown problem format: {SPEC_HELP}")


# The sets coopcode ships, each split with what it is (`coopcode problems list`).
BUILT_IN_SETS: tuple[tuple[str, str], ...] = (
    ("humaneval:test", "HumanEval's 40 held-out problems (the default everywhere)"),
    ("humaneval:train", "the other 124 HumanEval problems"),
    ("humaneval:val", "30 of train, for validation while training"),
    ("humaneval:fit", "the 94 of train that are not val"),
    ("humaneval:all", "all 164 HumanEval problems"),
    ("compose:train", "f(g(...)), f and g from humaneval:fit; g is aux's contract"),
    ("compose:val", "f(g(...)), f and g from humaneval:val; g is aux's contract"),
    ("compose:test", "f(g(...)), f and g from humaneval:test; g is aux's contract"),
    ("compose:all", "the three compose splits together"),
)
