"""Whether a function, class or module opens with a docstring, and its body without it.

A docstring is what `ast.get_docstring` reads: a string literal standing alone as the first
statement. One definition, so that what counts as code an agent wrote (its lines, its body,
whether its function does anything) and what counts as a contract's documentation agree.
"""

from __future__ import annotations

import ast

Documented = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module


def has_docstring(node: Documented) -> bool:
    """Whether `node`'s first statement is its docstring."""
    return ast.get_docstring(node, clean=False) is not None


def without_docstring(node: Documented) -> list[ast.stmt]:
    """`node`'s statements past its docstring (all of them when it has none)."""
    return node.body[1:] if has_docstring(node) else list(node.body)
