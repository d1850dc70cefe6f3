"""Warm-start examples from a problem set's own solutions (`coopcode problems sft-examples`).

For every problem with a canonical solution, one line of an examples file
(`coopcode.training.examples`):
- `solution`: the whole canonical answer, the entry point's signature and its canonical body;
- `helper` and `main`, where the problem has a contract with a reference body and its
  canonical solution is a composition (`compose`: it defines the inner step `aux` and the
  outer step inside the entry point and returns outer(aux(...))): the helper is aux's
  signature and reference body, main the entry point without the inner `aux`, so its call
  reaches the helper's.
Docstrings are left out of the code: every prompt shows them already, and copied they would
spend most of the 256-token budget (a compose docstring states both steps). Each pair is run
in the sandbox with the problem's hidden tests (main with the reference aux), and so is each
solution; one that fails is dropped, and counted.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coopcode.code_analysis.program import combine
from coopcode.problems import Problem
from coopcode.schemes.prompts import entry_signature
from sandbox import Job, Sandbox

TIMEOUT = 10.0  # CPU seconds per program: canonical solutions, some of them slow on purpose


@dataclass
class Written:
    """What `write_examples` wrote and what it left out."""

    path: Path
    lines: int = 0
    pairs: int = 0
    solutions: int = 0
    no_solution: list[str] = field(default_factory=list)  # no canonical solution to learn
    no_split: list[str] = field(default_factory=list)  # no contract reference or inner aux
    failed_pairs: list[str] = field(default_factory=list)  # the pair failed the tests
    failed_solutions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "lines": self.lines, "pairs": self.pairs,
                "solutions": self.solutions, "no_solution": self.no_solution,
                "no_split": self.no_split, "failed_pairs": self.failed_pairs,
                "failed_solutions": self.failed_solutions}


def whole(problem: Problem) -> str | None:
    """The canonical answer as an agent writes it: the signature, then the canonical body."""
    signature = entry_signature(problem)
    if not signature or not problem.canonical_solution:
        return None
    return signature + problem.canonical_solution.lstrip("\n")


def halves(problem: Problem) -> tuple[str, str] | None:
    """(helper, main) from a composed canonical solution and the contract's reference, or
    None where the problem has no such split."""
    contract, signature = problem.contract, entry_signature(problem)
    if contract is None or contract.solution is None or not signature:
        return None
    outer = without_inner(problem.canonical_solution or "", contract.entry_point)
    if outer is None:
        return None
    helper = contract.signature.rstrip() + "\n" + contract.solution.lstrip("\n")
    return helper, signature + outer


def without_inner(body: str, name: str) -> str | None:
    """A function body (as `canonical_solution` holds it) without its nested `def name`
    (None when it has none)."""
    try:
        module = ast.parse("def _outer():\n" + body)
    except SyntaxError:
        return None
    fn = module.body[0]
    assert isinstance(fn, ast.FunctionDef)
    inner = [n for n in fn.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
             and n.name == name]
    if not inner or len(inner) == len(fn.body):
        return None
    lines = ("def _outer():\n" + body).splitlines(keepends=True)
    drop: set[int] = set()
    for n in inner:
        first = min([n.lineno] + [d.lineno for d in n.decorator_list])
        drop.update(range(first - 1, (n.end_lineno or n.lineno)))
    kept = [line for i, line in enumerate(lines) if i and i not in drop]
    return "".join(kept).lstrip("\n")


def _job(problem: Problem, helper: str, main: str) -> Job:
    program = combine(problem.prompt, problem.entry_point, helper, main).text
    return Job(program=program, tests=problem.tests, entry_point=problem.entry_point,
               timeout=TIMEOUT)


def derive(problems: Sequence[Problem], sandbox: Sandbox) -> tuple[list[dict[str, str]], Written]:
    """The example lines of `problems` that pass their tests in the sandbox, and the tally."""
    report = Written(Path())
    found: list[tuple[Problem, str | None, tuple[str, str] | None]] = []
    for p in problems:
        single = whole(p)
        pair = halves(p)
        if single is None:
            report.no_solution.append(p.task_id)
            continue
        if pair is None:
            report.no_split.append(p.task_id)
        found.append((p, single, pair))
    jobs, where = [], []
    for i, (p, single, pair) in enumerate(found):
        if single is not None:
            jobs.append(_job(p, "", single))
            where.append((i, "solution"))
        if pair is not None:
            jobs.append(_job(p, *pair))
            where.append((i, "pair"))
    verdicts = sandbox.run_many(jobs)
    passed = {(i, kind) for (i, kind), v in zip(where, verdicts) if v.passed}
    lines = []
    for i, (p, single, pair) in enumerate(found):
        line: dict[str, str] = {"task_id": p.task_id}
        if pair is not None:
            if (i, "pair") in passed:
                line["helper"], line["main"] = pair
                report.pairs += 1
            else:
                report.failed_pairs.append(p.task_id)
        if single is not None:
            if (i, "solution") in passed:
                line["solution"] = single
                report.solutions += 1
            else:
                report.failed_solutions.append(p.task_id)
        if len(line) > 1:
            lines.append(line)
    report.lines = len(lines)
    return lines, report


def write_examples(problems: Sequence[Problem], sandbox: Sandbox, out: Path) -> Written:
    """Write the examples of `problems` to `out` (JSONL, replaced whole); the tally."""
    lines, report = derive(problems, sandbox)
    report.path = out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines),
                   encoding="utf-8")
    tmp.replace(out)
    return report
