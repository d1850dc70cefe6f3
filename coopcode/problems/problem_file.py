"""A single `problem.py`: a function signature and docstring with an empty body.

    from typing import List

    def below_zero(operations: List[int]) -> bool:
        \"\"\"Return True if the running balance ever drops below zero.
        >>> below_zero([1, 2, -4, 5])
        True
        \"\"\"

    def check(candidate):            # optional hidden tests
        assert candidate([1, -2]) is True

The entry point is the one top-level function whose body is only a docstring (optionally
followed by `pass` or `...`); other functions with bodies stay in the prompt as given code.
Set `__entry_point__ = "name"` to choose when several functions are empty. Tests come from
`def check(candidate)` and top-level asserts; without those, the docstring's examples are the
tests (and stay the public examples either way).

A contract for the helper (coopcode.problems.contract) is declared by `def check_aux(candidate)`,
aux's tests, beside `def aux(...)` with a signature and docstring; a body after aux's
docstring is its reference solution. Neither is part of the prompt:

    def aux(s: str) -> int:
        \"\"\"Count the vowels in s.\"\"\"
        return sum(c in "aeiou" for c in s)

    def check_aux(candidate):
        assert candidate("banana") == 3
"""

from __future__ import annotations

import ast
from pathlib import Path

from coopcode.code_analysis.docstrings import has_docstring, without_docstring
from coopcode.core.errors import ProblemError
from coopcode.core.inputs import read_text_file
from coopcode.problems.contract import AUX, Contract, check_contract, raw_docstring
from coopcode.problems.examples import docstring_examples
from coopcode.problems.problem import Problem

CHECK_AUX = "check_aux"


def _is_empty_body(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    if not has_docstring(fn):
        return False  # no docstring: nothing tells the agents what to write
    return all(
        isinstance(s, ast.Pass)
        or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and s.value.value is Ellipsis)
        for s in without_docstring(fn)
    )


def _is_check_call(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "check"
    )


def _is_main_guard(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "__name__" in ast.unparse(node.test)


def parse_problem_source(source: str, name: str = "problem.py") -> Problem:
    """Parse problem-file text into a Problem; raise ProblemError with one clear line."""
    if not source.strip():
        raise ProblemError(f"{name}: an empty file: write the target function's signature and "
                           "docstring (see examples/below_zero.py)")
    try:
        module = ast.parse(source, filename=name)
    except SyntaxError as e:
        raise ProblemError(f"{name}:{e.lineno}: syntax error: {e.msg}") from None

    functions = [n for n in module.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    contract_fns = _contract_functions(functions, name)
    functions = [f for f in functions if f not in contract_fns]
    target = _find_target(module, functions, name)

    check_fns = [f for f in functions if f.name == "check"]
    lines = source.splitlines(keepends=True)
    keep = [True] * len(lines)

    def drop(first: int, last: int) -> None:
        for i in range(first - 1, last):
            keep[i] = False

    # The prompt is the file as written, minus the tests and the entry point's empty body.
    test_preamble: list[str] = []
    asserts: list[str] = []
    for node in module.body:
        first, last = _first_line(node), node.end_lineno or node.lineno
        if node in check_fns or node in contract_fns or _is_check_call(node) \
                or _is_main_guard(node):
            drop(first, last)
        elif isinstance(node, ast.Assign) and "__entry_point__" in ast.unparse(node.targets[0]):
            drop(first, last)
        elif isinstance(node, ast.Assert):
            asserts.append(ast.unparse(node))
            drop(first, last)
        elif node is target:
            doc_end = node.body[0].end_lineno or node.body[0].lineno
            drop(doc_end + 1, last)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            test_preamble.append("".join(lines[first - 1: last]))
    prompt = _tidy("".join(line for line, k in zip(lines, keep) if k))

    examples = docstring_examples(ast.get_docstring(target) or "", target.name)
    tests = _tests_text(test_preamble, check_fns, asserts, examples, lines, target.name, name)
    return Problem(
        task_id=Path(name).stem,
        prompt=prompt,
        entry_point=target.name,
        tests=tests,
        examples=tuple(examples),
        source=name,
        contract=_contract(contract_fns, test_preamble, source, lines, name),
    )


def _contract_functions(functions: list[ast.FunctionDef | ast.AsyncFunctionDef], name: str
                        ) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """`aux` and `check_aux` when the file declares a contract (it has `check_aux`), else []."""
    checks = [f for f in functions if f.name == CHECK_AUX]
    if not checks:
        return []
    auxes = [f for f in functions if f.name == AUX]
    if not auxes:
        raise ProblemError(f"{name}:{checks[0].lineno}: {CHECK_AUX} holds aux's tests, but the file "
                           f"has no `def {AUX}(...)`: write aux's signature and docstring (the "
                           "contract) beside it")
    if len(auxes) > 1 or len(checks) > 1:
        twice = auxes[1] if len(auxes) > 1 else checks[1]
        raise ProblemError(f"{name}:{twice.lineno}: {twice.name} is defined twice: a problem has "
                           "one contract")
    aux = auxes[0]
    if not has_docstring(aux):
        raise ProblemError(f"{name}:{aux.lineno}: {AUX} has no docstring: the contract is aux's "
                           "signature and docstring, so say what aux does")
    if isinstance(aux, ast.AsyncFunctionDef) or aux.decorator_list:
        raise ProblemError(f"{name}:{aux.lineno}: {AUX} must be a plain `def` (no async, no "
                           "decorators)")
    return [aux, checks[0]]


def _contract(contract_fns: list[ast.FunctionDef | ast.AsyncFunctionDef], preamble: list[str],
              source: str, lines: list[str], name: str) -> Contract | None:
    """The contract `_contract_functions` found, checked (None when there is none)."""
    if not contract_fns:
        return None
    aux, check = contract_fns
    returns = f" -> {ast.unparse(aux.returns)}" if aux.returns else ""
    doc_end = aux.body[0].end_lineno or aux.body[0].lineno
    body = "".join(lines[doc_end: aux.end_lineno])
    solution = body if not _is_empty_body(aux) and body.strip() else None
    check_lines = lines[_first_line(check) - 1: check.end_lineno]
    check_text = check_lines[0].replace(CHECK_AUX, "check", 1) + "".join(check_lines[1:])
    contract = Contract(signature=f"def {AUX}({ast.unparse(aux.args)}){returns}:",
                        docstring=raw_docstring(source, aux),
                        tests="\n".join(p.rstrip("\n") + "\n" for p in [*preamble, check_text]),
                        imports="".join(preamble).rstrip("\n"), solution=solution)
    check_contract(contract, f"{name}:{aux.lineno}")
    return contract


def _find_target(module: ast.Module, functions: list[ast.FunctionDef | ast.AsyncFunctionDef],
                 name: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    """The entry point: named by `__entry_point__`, else the one function with an empty body."""
    chosen = None
    for node in module.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__entry_point__" for t in node.targets
        ):
            if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                raise ProblemError(f"{name}:{node.lineno}: __entry_point__ must be a string")
            chosen = node.value.value
    empty = [f for f in functions if f.name != "check" and _is_empty_body(f)]
    if chosen is not None:
        targets = [f for f in functions if f.name == chosen]
        if not targets:
            raise ProblemError(f"{name}: __entry_point__ names {chosen!r}, which is not defined")
        target = targets[0]
    elif len(empty) == 1:
        target = empty[0]
    elif not empty:
        raise ProblemError(
            f"{name}: no entry point: write the target function as a signature and a docstring "
            "with an empty body"
        )
    else:
        names = ", ".join(f.name for f in empty)
        raise ProblemError(
            f"{name}: several functions have empty bodies ({names}); set __entry_point__ = \"...\""
        )

    return target


def _tests_text(preamble: list[str], check_fns: list[ast.FunctionDef | ast.AsyncFunctionDef],
                asserts: list[str], examples: list[str], lines: list[str], entry: str,
                name: str) -> str:
    """The hidden tests: the file's imports, then its `check`, its asserts (on `candidate`),
    or else the docstring's `>>>` examples."""
    tests_parts = list(preamble)
    if check_fns:
        check = check_fns[-1]
        tests_parts.append("".join(lines[_first_line(check) - 1: check.end_lineno]))
    if asserts:
        renamed = [a.replace(f"{entry}(", "candidate(") for a in asserts]
        if check_fns:
            tests_parts.extend(renamed)
        else:
            tests_parts.append("def check(candidate):\n" + "".join(f"    {a}\n" for a in renamed))
    if not check_fns and not asserts:
        if not examples:
            raise ProblemError(
                f"{name}: no tests: add `def check(candidate)` with asserts, or `>>>` examples "
                f"in the docstring of {entry}"
            )
        tests_parts.append("def check(candidate):\n" + "".join(f"    {a}\n" for a in examples))
    return "\n".join(p.rstrip("\n") + "\n" for p in tests_parts)


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno] + [d.lineno for d in decorators])


def _tidy(text: str) -> str:
    """Trim blank runs left where tests were cut out (at most two blank lines in a row)."""
    out: list[str] = []
    blanks = 0
    for line in text.splitlines():
        blanks = blanks + 1 if not line.strip() else 0
        if blanks <= 2:
            out.append(line.rstrip())
    return "\n".join(out).strip("\n") + "\n"


def load_problem_file(path: Path) -> Problem:
    """Read and parse one problem file."""
    return parse_problem_source(read_text_file(path, "problem file", ProblemError), str(path))
