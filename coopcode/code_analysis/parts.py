"""Whether an agent's code is a well-formed part: what the `own` reward's syntax terms pay.

Parsing is not enough. RL runs that collapsed learned bodies that parse and do nothing (a
bare `import`, a literal, a call of an inner function nobody wrote) and still earned the
syntax credit. A part is *well formed* when all of these hold; `part_fault` names the
first that does not ('' when none):
1. the output was not cut at the token budget (what survives a cut is the prefix that
   parses, `coopcode.code_analysis.program`, not the answer the agent meant to give);
2. the code parses;
3. it defines the function its part asks for: the helper `aux` (the contract's entry
   point), main the problem's entry point, both at the top level; a single agent's aux may
   sit inside its entry point, as in the compose problems' canonical solutions
   (`find_function`);
4. the function does work: past its docstring and imports it is not trivial
   (`coopcode.code_analysis.usage.is_trivial`: only `pass`, `...` or `raise`, a literal or a
   parameter returned unchanged, the same literal on every path);
5. it returns something: a `return` of its own with a value other than None, or a `yield`;
6. it reads one of its parameters, where it has any (an answer that ignores its input is a
   constant however it is computed: `import math` / `return math.pi`);
7. it calls no name that nobody defines. The calls looked at are the function's and those
   of the top-level functions it calls, in turn; a name called must be bound somewhere in
   the agent's code (a function, a class, an assignment, an import, a parameter, at any
   depth), by what the program puts around that code (`around`: the problem's imports and
   given functions, the contract's imports; for main, the helper's functions and aux), or
   be a builtin. Code with `from m import *` is given the benefit of the doubt.
Read from the syntax tree, never run.

`lift` and `without` make a single agent's aux judgeable as a part: its aux runnable at
the top level (for aux's own tests), and its code with aux taken out (so its entry point
runs with the reference aux, as a pair's main does).
"""

from __future__ import annotations

import ast
import builtins
import copy
import textwrap
from collections.abc import Iterable

from coopcode.code_analysis.marked_main import FUNCS, params, reads
from coopcode.code_analysis.not_work import own_nodes
from coopcode.code_analysis.patterns import parse_or_none, reached, top_functions
from coopcode.code_analysis.usage import bound_names, is_trivial

BUILTINS = frozenset(dir(builtins))

Function = ast.FunctionDef | ast.AsyncFunctionDef


def find_function(module: ast.Module, name: str, inside: str = "") -> Function | None:
    """`name`'s def: within the top-level function `inside` first (the shallowest), else at
    the top level (the last one, which is the one that counts)."""
    functions = top_functions(module)
    outer = functions.get(inside) if inside else None
    if outer is not None:
        for node in ast.walk(outer):
            if isinstance(node, FUNCS) and node is not outer and node.name == name:
                return node
    return functions.get(name)


def names_bound(module: ast.Module) -> set[str]:
    """Every name the code binds, at any depth: `usage.bound_names` (functions, classes,
    assignments, imports) and parameters, `except ... as` names and `match` captures."""
    out = bound_names(module)
    for node in ast.walk(module):
        if isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            out.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            out.add(node.rest)
    return out


def undefined_calls(module: ast.Module, scope: Iterable[ast.AST],
                    around: Iterable[str] = ()) -> list[str]:
    """The names called in `scope` that neither `module`, `around` nor the builtins define."""
    known = names_bound(module) | set(around) | BUILTINS
    if "*" in known:  # a star import may define anything
        return []
    called = {n.func.id for root in scope for n in ast.walk(root)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return sorted(called - known)


def work_fault(fn: Function) -> str:
    """Why `fn` does no work of its own (rules 4 to 6 of the module doc); '' when it does."""
    bare = copy.copy(fn)
    bare.body = [s for s in fn.body if not isinstance(s, ast.Import | ast.ImportFrom)] or [ast.Pass()]
    if is_trivial(bare):
        return f"{fn.name} does nothing (a docstring, imports, pass, a literal or an argument)"
    if not any((isinstance(n, ast.Return) and n.value is not None
                and not (isinstance(n.value, ast.Constant) and n.value.value is None))
               or isinstance(n, ast.Yield | ast.YieldFrom) for n in own_nodes(fn)):
        return f"{fn.name} returns nothing"
    given = params(fn)
    if given and not reads(fn.body, given):
        return f"{fn.name} reads none of its parameters"
    return ""


def part_fault(code: str, name: str, *, inside: str = "", around: Iterable[str] = (),
               cut: bool = False) -> str:
    """Why `code` is not a well-formed part defining `name` (see the module doc); '' when it
    is. `inside`: the top-level function `name` may be nested in; `around`: the names the
    program defines around the code; `cut`: the output ran out of tokens."""
    if cut:
        return "cut at the token budget"
    module = parse_or_none(code)
    if module is None:
        return "does not parse"
    fn = find_function(module, name, inside)
    if fn is None:
        return f"defines no {name}"
    fault = work_fault(fn)
    if fault:
        return fault
    missing = undefined_calls(module, reached(fn, top_functions(module)), around)
    return f"calls {missing[0]}, which nobody defines" if missing else ""


def lift(code: str, name: str, inside: str) -> str | None:
    """`code` with `name` runnable at the top level: as it is where `name` is defined there,
    with `name`'s def nested in `inside` copied out after it otherwise (it then runs without
    the names of the function around it: an aux that needs them is not one on its own).
    None where there is no `name`."""
    module = parse_or_none(code)
    fn = find_function(module, name, inside) if module is not None else None
    if module is None or fn is None:
        return None
    if fn in module.body:
        return code
    start = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
    text = textwrap.dedent("\n".join(code.splitlines()[start - 1:fn.end_lineno]))
    if parse_or_none(text) is None:  # a def that shares its lines with other code
        text = ast.unparse(fn)
    return code.rstrip("\n") + "\n\n\n" + text.strip("\n") + "\n"


class _DropDefs(ast.NodeTransformer):
    def __init__(self, name: str) -> None:
        self.name = name

    def _drop(self, node: Function) -> Function | None:
        if node.name == self.name:
            return None
        self.generic_visit(node)
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = _drop  # type: ignore[assignment]

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        if isinstance(getattr(node, "body", None), list) and not node.body:  # type: ignore[attr-defined]
            node.body = [ast.Pass()]  # type: ignore[attr-defined]
        return node


def without(code: str, name: str, inside: str) -> str:
    """`code` with every def of `name` taken out: at the top level and within the top-level
    function `inside` (a block left empty gets `pass`). Code that does not parse, as it is."""
    module = parse_or_none(code)
    if module is None:
        return code
    module.body = [n for n in module.body if not (isinstance(n, FUNCS) and n.name == name)]
    module.body = [_DropDefs(name).visit(n) if isinstance(n, FUNCS) and n.name == inside else n
                   for n in module.body]
    out = ast.unparse(ast.fix_missing_locations(module))
    return out + "\n" if parse_or_none(out) is not None else code
