"""Main copies the helper: main does not call the helper, and one of main's functions has
nearly the helper's body. Two agents writing the same answer, not a division of work.

A body is a top-level function's statements without its docstring, as `ast.unparse` prints
them (formatting and comments do not count); a near copy is a difflib ratio of at least
NEAR_COPY between a helper body and a main body. Nothing is executed: the code is only parsed.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Mapping
from typing import Any

from coopcode.code_analysis.docstrings import without_docstring

NEAR_COPY = 0.8


def function_bodies(code: str) -> list[str]:
    """Each top-level function's body without its docstring, as ast.unparse prints it
    ([] when the code does not parse)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(ast.unparse(ast.Module(body=without_docstring(node), type_ignores=[])))
    return out


def main_copies_helper(sample: Mapping[str, Any]) -> bool:
    """A bench record (`helper_code`, `main_code`, `main_calls_helper`): main re-writes one of
    the helper's bodies instead of calling it."""
    if sample.get("main_calls_helper"):
        return False
    helper = function_bodies(sample.get("helper_code") or "")
    main = function_bodies(sample.get("main_code") or "")
    return any(difflib.SequenceMatcher(None, h, m).ratio() >= NEAR_COPY
               for h in helper for m in main if h.strip() and m.strip())
