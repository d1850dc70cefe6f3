"""What `coopcode problems list` and `problems show` print: the sets, and a problem as data."""

from __future__ import annotations

import ast
from typing import Any

from coopcode.problems import BUILT_IN_SETS, load_problems
from coopcode.problems.problem import Problem


def count_tests(tests: str) -> int:
    """The assert statements in test source (a loop of asserts counts once)."""
    try:
        return sum(1 for node in ast.walk(ast.parse(tests)) if isinstance(node, ast.Assert))
    except SyntaxError:
        return 0


def problem_sets() -> list[dict[str, Any]]:
    """Every built-in set and split: name, size, description."""
    return [{"name": name, "size": len(load_problems(name)), "description": description}
            for name, description in BUILT_IN_SETS]


def problem_summary(problem: Problem) -> dict[str, Any]:
    """One problem as `problems show --json` prints it."""
    contract = problem.contract
    return {
        "task_id": problem.task_id,
        "entry_point": problem.entry_point,
        "prompt": problem.prompt,
        "sources": list(problem.sources),
        "contract": None if contract is None else {
            "entry_point": contract.entry_point, "signature": contract.signature,
            "docstring": contract.docstring, "imports": contract.imports,
            "prompt": contract.prompt, "n_tests": count_tests(contract.tests)},
        "canonical_solution": problem.canonical_solution,
        "aux_solution": None if contract is None else contract.solution,
        "n_tests": count_tests(problem.tests),
        "n_examples": len(problem.examples),
    }
