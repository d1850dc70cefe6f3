"""Public examples from a docstring, turned into assert statements.

HumanEval docstrings show examples in a handful of styles:

    >>> add(2, 3)            f(3) == 4            f("a") ➞ True
    5                        f(3) => 4            f(3) -> 4    f(3) = 4  (rare)

Only pairs whose both sides parse as Python expressions are kept, and the call must use the
entry point; anything else is prose and is ignored.
"""

from __future__ import annotations

import ast
import re

_ARROW = re.compile(
    r"^(?:for\s+)?(?P<lhs>.+?)\s*(?:➞|==>|=>|->|==|should return|#\s*returns|returns)\s*(?P<rhs>.+?)\s*$"
)


def _is_expr(text: str) -> bool:
    try:
        ast.parse(text, mode="eval")
    except SyntaxError:
        return False
    return True


def _calls(expr: str, name: str) -> bool:
    tree = ast.parse(expr, mode="eval")
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
        for n in ast.walk(tree)
    )


class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id == self.old:
            return ast.copy_location(ast.Name(id=self.new, ctx=node.ctx), node)
        return node


def _assertion(lhs: str, rhs: str, entry_point: str) -> str | None:
    lhs, rhs = lhs.strip().rstrip(","), rhs.strip().rstrip(".,;")
    # Drop trailing comments such as "# f(x) = 1 + 2x" after the call.
    lhs = lhs.split("  #")[0].split(" # ")[0].strip()
    rhs = rhs.split("  #")[0].split(" # ")[0].strip()
    if not (_is_expr(lhs) and _is_expr(rhs)) or not _calls(lhs, entry_point):
        return None
    if _calls(rhs, entry_point):
        return None
    # Prose such as "True if ..." is not a value.
    try:
        ast.literal_eval(rhs)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        if not re.fullmatch(r"[\w\.\(\)\[\]\{\}, '\"\-+*/:]+", rhs):
            return None
    call = ast.unparse(_Rename(entry_point, "candidate").visit(ast.parse(lhs, mode="eval")))
    return f"assert {call} == {rhs}"


def docstring_examples(docstring: str, entry_point: str) -> list[str]:
    """Assert statements for the examples shown in `docstring` (may be empty)."""
    lines = [line.strip() for line in docstring.splitlines()]
    found: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(">>>"):
            expr = line[3:].strip()
            # Doctest continuation lines.
            j = i + 1
            while j < len(lines) and lines[j].startswith("..."):
                expr += "\n" + lines[j][3:].strip()
                j += 1
            expected = []
            while j < len(lines) and lines[j] and not lines[j].startswith(">>>"):
                expected.append(lines[j])
                j += 1
            if expected:
                a = _assertion(expr, " ".join(expected), entry_point)
            else:
                # ">>> f(x) == y" with no output line: the line is itself the example.
                m = _ARROW.match(expr)
                a = _assertion(m.group("lhs"), m.group("rhs"), entry_point) if m else None
            if a:
                found.append(a)
            i = j
            continue
        if entry_point + "(" in line:
            m = _ARROW.match(line.lstrip("-*• ").replace("Example:", "").strip())
            if m:
                a = _assertion(m.group("lhs"), m.group("rhs"), entry_point)
                if a:
                    found.append(a)
        i += 1
    # Keep order, drop duplicates.
    return list(dict.fromkeys(found))
