"""The contract between the agents under the schemes that keep each to its part.

- `contract`: the problem's own (`Problem.contract`: aux's signature and docstring, its
  tests and a reference body). The helper sees only the contract; main sees the whole task
  and the contract, not aux's body.
- `plan`: main writes the contract first (a signature and a docstring, nothing else); the
  helper implements it; main writes the entry point against it. A planned contract has no
  tests and no reference body.

`contract_for(problem, scheme, text)` is the contract a sample's helper implemented, for the
judging path: the problem's, or the planned one read back from its text (a record keeps it).
"""

from __future__ import annotations

import ast

from coopcode.problems import Contract, Problem
from coopcode.problems.contract import AUX, docstring_block, raw_docstring
from coopcode.records.vocabulary import ContractSource


def planned_contract(code: str) -> Contract | None:
    """The contract in a planner's answer: its `def aux(...)` line(s) and docstring (its body,
    if it wrote one, is dropped); None when there is no parsable `def aux`."""
    try:
        module = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    fn = next((n for n in module.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
               and n.name == AUX), None)
    if fn is None or not fn.body:
        return None
    lines = code.splitlines()
    start = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
    signature = "\n".join(lines[start - 1: fn.body[0].lineno - 1]).rstrip()
    if not signature.rstrip().endswith(":"):  # `def aux(x): return x` on one line
        head = lines[fn.lineno - 1]
        signature = head[: head.index(":", head.index(")")) + 1] if ")" in head and ":" in head \
            else signature
    imports = "\n".join(ast.get_source_segment(code, n) or "" for n in module.body
                        if isinstance(n, ast.Import | ast.ImportFrom))
    return Contract(signature=signature, docstring=raw_docstring(code, fn), tests="",
                    imports=imports)


def contract_stub(contract: Contract) -> str:
    """The contract as main sees it: imports, signature, docstring and `...` for the body."""
    head = contract.imports.rstrip("\n") + "\n\n\n" if contract.imports.strip() else ""
    doc = docstring_block(contract.docstring, "    ") if contract.docstring.strip() else ""
    return f"{head}{contract.signature.rstrip()}\n{doc}    ...\n"


def contract_for(problem: Problem, source: str, text: str = "") -> Contract | None:
    """The contract a sample's helper implemented: the problem's (`source` "problem"), the
    planned one in `text` ("planned"), or none ("")."""
    if source == ContractSource.PROBLEM:
        return problem.contract
    if source == ContractSource.PLANNED:
        return planned_contract(text)
    return None
