"""Does the helper solve the task by itself? Its code run alone against the problem's tests.

A helper that already writes the whole answer leaves main nothing to do but return it (or
decorate it). `helper_alone_jobs` makes the sandbox jobs that tell: the problem's context
(its imports and given functions) and the helper's code, with one helper function standing
in for the entry point (the tests' `candidate`). The candidates are the helper's top-level
functions that do something (`coopcode.code_analysis.usage.is_trivial`) and whose
parameters can take the entry point's arguments (as many positional arguments as the entry
point requires, up to as many as it has), at most `MAX_CANDIDATES` of them. The helper
solves the task when one candidate passes every test (`helper_solves`).

The jobs run in the sandbox like every other program: nothing here executes model code.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from coopcode.code_analysis.patterns import parse_or_none, top_functions
from coopcode.code_analysis.program import prompt_context
from coopcode.code_analysis.usage import is_trivial
from coopcode.problems import Problem
from sandbox import Job, Verdict

MAX_CANDIDATES = 3  # a helper rarely writes more; bounds the extra sandbox work per sample


def _arity(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, float]:
    """(positional arguments required, most accepted: inf with *args)."""
    positional = [*fn.args.posonlyargs, *fn.args.args]
    required = len(positional) - len(fn.args.defaults)
    most = float("inf") if fn.args.vararg else float(len(positional))
    return required, most


def entry_arity(prompt: str, entry_point: str) -> tuple[int, float] | None:
    """The entry point's (required, most) positional arguments, from the prompt's stub."""
    module = parse_or_none(prompt)
    fn = top_functions(module).get(entry_point) if module is not None else None
    return _arity(fn) if fn is not None else None


def candidates(helper_code: str, prompt: str, entry_point: str) -> list[str]:
    """The helper functions that could stand in for the entry point (see the module doc)."""
    module = parse_or_none(helper_code)
    if module is None:
        return []
    wanted = entry_arity(prompt, entry_point)
    out = []
    for name, fn in top_functions(module).items():
        if is_trivial(fn):
            continue
        if wanted is not None:
            required, most = _arity(fn)
            want_required, want_most = wanted
            if required > want_most or most < want_required:  # no call of the entry's fits
                continue
        out.append(name)
    return out[:MAX_CANDIDATES]


def helper_alone_jobs(problem: Problem, helper_code: str, timeout: float) -> list[Job]:
    """One job per candidate: the problem's context and the helper's code, the candidate
    called as the entry point by the problem's hidden tests."""
    names = candidates(helper_code, problem.prompt, problem.entry_point)
    if not names:
        return []
    context = prompt_context(problem.prompt, problem.entry_point)
    program = "\n\n\n".join(p.strip("\n") for p in (context, helper_code) if p.strip()) + "\n"
    return [Job(program=program, tests=problem.tests, entry_point=name, timeout=timeout)
            for name in names]


def helper_solves(verdicts: Sequence[Verdict]) -> bool:
    """Whether any candidate passed every test (no candidate: the helper cannot solve it)."""
    return any(v.passed for v in verdicts)
