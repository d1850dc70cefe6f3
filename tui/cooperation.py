"""How the main agent used the helper's code: the cooperation pattern shown after a run."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Cooperation:
    """What the helper defined and how the main agent's code uses it."""

    helper_functions: tuple[str, ...] = ()
    called: dict[str, int] = field(default_factory=dict)  # helper name -> call sites in main
    in_loop: bool = False  # a call sits inside a loop or comprehension
    redefined: tuple[str, ...] = ()  # helpers main wrote again itself (shadowing the helper's)
    parse_error: str = ""

    @property
    def calls_helper(self) -> bool:
        return bool(self.called) and not self.redefined

    @property
    def summary(self) -> str:
        """One line: does main call the helper, and how."""
        if self.parse_error:
            return f"unknown ({self.parse_error})"
        if not self.helper_functions:
            return "no helper code: main works alone"
        if self.redefined:
            return f"main redefines {', '.join(self.redefined)}: the helper's code is unused"
        if not self.called:
            names = ", ".join(self.helper_functions)
            return f"main ignores the helper ({names} never called)"
        sites = sum(self.called.values())
        names = ", ".join(f"{n}×{c}" if c > 1 else n for n, c in self.called.items())
        where = "inside a loop" if self.in_loop else ("once" if sites == 1 else f"at {sites} sites")
        return f"main calls {names} {where}"


def _functions(module: ast.Module) -> list[str]:
    return [n.name for n in module.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def describe_cooperation(main_code: str, helper_code: str) -> Cooperation:
    """Parse both agents' code (never run it) and describe their cooperation."""
    try:
        helper_mod = ast.parse(helper_code or "")
        main_mod = ast.parse(main_code or "")
    except SyntaxError as e:
        return Cooperation(parse_error=f"syntax error on line {e.lineno}")
    helpers = tuple(_functions(helper_mod))
    redefined = tuple(n for n in _functions(main_mod) if n in helpers)
    called: dict[str, int] = {}
    in_loop = False
    loops = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp,
             ast.GeneratorExp)

    def visit(node: ast.AST, looping: bool) -> None:
        nonlocal in_loop
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers:
            called[node.func.id] = called.get(node.func.id, 0) + 1
            in_loop = in_loop or looping
        for child in ast.iter_child_nodes(node):
            visit(child, looping or isinstance(node, loops))

    visit(main_mod, False)
    return Cooperation(helpers, called, in_loop, redefined)
