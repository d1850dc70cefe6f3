"""Problems: the `Problem` type and loaders for HumanEval, JSONL files and problem.py files."""

from __future__ import annotations

from pathlib import Path

from coopcode.core.errors import ProblemError
from coopcode.problems.humaneval import (
    held_out_ids,
    load_humaneval,
    load_jsonl_problems,
    validation_ids,
)
from coopcode.problems.problem import Problem
from coopcode.problems.problem_file import load_problem_file, parse_problem_source

SPEC_HELP = ("use humaneval[:train|test|val|fit|all] (val and fit divide train), a .jsonl or "
             ".jsonl.gz in HumanEval format, a .py or a folder of .py")

__all__ = [
    "Problem",
    "held_out_ids",
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
    124), a `.jsonl`/`.jsonl.gz` file in HumanEval format, a `problem.py` file, or a folder
    of problem files.
    """
    if not spec.strip():
        raise ProblemError(f"no problems named: {SPEC_HELP}")
    if spec == "humaneval" or spec.startswith("humaneval:"):
        return load_humaneval(spec.partition(":")[2] or "test")
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
