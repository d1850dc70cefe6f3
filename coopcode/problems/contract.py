"""The `Contract`: the helper's part of a problem, fixed in advance.

A contract is aux's signature and docstring (what the helper implements and what main may
call without seeing its body), aux's own tests and, optionally, a reference body. In a
problem file (JSONL) it is one object under `contract`:

    {"signature": "def aux(string: str) -> int:",
     "docstring": "Return length of given string\\n>>> aux('abc')\\n3",
     "imports": "",                                   # optional: lines the signature needs
     "test": "def check(candidate):\\n    assert candidate('') == 0\\n",
     "solution": "    return len(string)\\n"}            # optional: completes the stub

`candidate` in the tests is bound to `aux`. The solution is a body that completes
`Contract.prompt`, the way HumanEval's canonical_solution completes its prompt.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coopcode.code_analysis.docstrings import has_docstring
from coopcode.core.errors import ProblemError

AUX = "aux"  # the helper's function, everywhere in coopcode (coopcode.schemes.prompts)

_KEYS = ("signature", "docstring", "imports", "test", "solution", "entry_point")


@dataclass(frozen=True)
class Contract:
    """aux's signature and docstring, its tests, and (optionally) a reference body."""

    signature: str  # the def line(s), e.g. "def aux(string: str) -> int:"
    docstring: str  # as written between the quotes, indentation removed
    tests: str  # `def check(candidate): ...`, candidate bound to aux
    imports: str = ""  # module-level lines the signature needs ("from typing import List")
    solution: str | None = None  # a body completing `prompt` (None: no reference)
    entry_point: str = AUX

    @property
    def prompt(self) -> str:
        """The stub a helper completes: imports, the signature and the docstring."""
        head = self.imports.rstrip("\n") + "\n\n\n" if self.imports.strip() else ""
        return f"{head}{self.signature.rstrip()}\n{docstring_block(self.docstring, '    ')}"

    @property
    def program(self) -> str | None:
        """The stub completed by the reference body (None without one)."""
        return None if self.solution is None else self.prompt + self.solution

    def to_dict(self) -> dict[str, Any]:
        return {"signature": self.signature, "docstring": self.docstring,
                "imports": self.imports, "test": self.tests, "solution": self.solution,
                "entry_point": self.entry_point}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Contract:
        """The contract of a dict as `to_dict` writes it (a problem file's keys: `test` for the
        tests; `imports`, `solution` and `entry_point` may be left out). Not checked:
        `contract_from_record` checks a problem file's."""
        return cls(signature=data["signature"], docstring=data["docstring"], tests=data["test"],
                   imports=data.get("imports") or "", solution=data.get("solution"),
                   entry_point=data.get("entry_point") or AUX)


def docstring_block(text: str, indent: str) -> str:
    """`text` (as written between the quotes) as a triple-quoted docstring at `indent`."""
    quote = "'''" if '"""' in text else '"""'
    lines = [f"{indent}{line}".rstrip() for line in text.strip("\n").splitlines()]
    return f'{indent}{quote}' + "\n".join(lines).lstrip() + f"\n{indent}{quote}\n"


def raw_docstring(source: str, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """`fn`'s docstring as written between its quotes (escapes such as `\\n` kept, so it can
    be written back into code), dedented; '' when it has none."""
    if not has_docstring(fn):
        return ""
    text = ast.get_source_segment(source, fn.body[0]) or ""
    text = text.lstrip("rRuU")
    quote = text[:3] if text[:3] in ('"""', "'''") else text[:1]
    return inspect.cleandoc(text[len(quote):len(text) - len(quote)])


def contract_from_record(value: Any, where: str) -> Contract | None:
    """The contract of a JSONL record (`value` is its `contract` field; None: none).

    Raises ProblemError with one line naming `where` (file:line) and what is wrong.
    """
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ProblemError(f"{where}: contract must be an object with signature, docstring and "
                           "test (see docs/guide/problems.md)")
    unknown = sorted(set(value) - set(_KEYS))
    if unknown:
        raise ProblemError(f"{where}: contract has unknown key(s) {', '.join(unknown)}: use "
                           f"{', '.join(_KEYS)}")
    missing = [k for k in ("signature", "docstring", "test")
               if not (isinstance(value.get(k), str) and value[k].strip())]
    if missing:
        raise ProblemError(f"{where}: contract lacks {', '.join(missing)} (non-empty strings)")
    for key in ("imports", "solution", "entry_point"):
        if value.get(key) is not None and not isinstance(value[key], str):
            raise ProblemError(f"{where}: contract {key} must be a string")
    if value.get("entry_point", AUX) != AUX:
        raise ProblemError(f"{where}: contract entry_point is {value['entry_point']!r}: the "
                           f"helper's function is called {AUX}")
    contract = Contract.from_dict({**value, "docstring": inspect.cleandoc(value["docstring"])})
    check_contract(contract, where)
    return contract


def check_contract(contract: Contract, where: str) -> None:
    """ProblemError (one line naming `where`) unless the contract's parts parse and agree."""
    try:
        stub = ast.parse(contract.prompt)
    except SyntaxError as e:
        raise ProblemError(f"{where}: contract signature does not parse ({e.msg}): write one "
                           f"line such as `def {AUX}(x: int) -> int:`") from None
    functions = [n for n in stub.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    if [f.name for f in functions] != [AUX]:
        named = ", ".join(f.name for f in functions) or "no function"
        raise ProblemError(f"{where}: contract signature defines {named}: the helper's "
                           f"function is called {AUX}: write `def {AUX}(...):`")
    try:
        ast.parse(contract.tests)
    except SyntaxError as e:
        raise ProblemError(f"{where}: contract test does not parse (line {e.lineno}: {e.msg})") \
            from None
    if contract.solution is not None:
        try:
            ast.parse(contract.prompt + contract.solution)
        except SyntaxError as e:
            raise ProblemError(f"{where}: contract solution does not complete the stub "
                               f"(line {e.lineno}: {e.msg}): give the body of {AUX}, indented")\
                from None
