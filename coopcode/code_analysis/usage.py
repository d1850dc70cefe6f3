"""What counts as the main agent *using* the helper, decided from the syntax tree.

The cooperative reward pays for use, so use is defined here strictly (never from text):
- The helper's functions are the top-level functions of its code. One is *trivial* when its
  body (after a docstring) does nothing: only `pass`, `...` or `raise`, or a single `return`
  of nothing, of a constant or of one of its parameters unchanged; or when its answer is a
  constant whatever it is given: every way out of it returns the same literal (`return
  [0.0, 1.0]`, `return ['A+', 'B']`, `return -1` on every path), it never runs off its end,
  and it changes none of its arguments. Main calling such a helper per item (`[aux(x) for x
  in xs]`) looks like a split, but the helper answers nothing.
- Main *redefines* a helper function when its code defines (at any depth), assigns or imports
  the same name: the helper's code is then dead, whatever main calls.
- A *use* is a place in main's answer (its entry point and the functions of its own that it
  calls) where a live helper function (not trivial, not redefined) is called and the call's
  value is used: returned, passed on, tested, iterated, stored in a container, or assigned
  to a variable that is read. Handing the helper to another function (`map(aux, xs)`,
  `sorted(xs, key=aux)`) is a use too.
- A *discarded* call is one whose value is thrown away: a bare statement `aux(x)`, or an
  assignment to names that are never read.
Comments and strings are not code, so a call written in them is neither.
"""

from __future__ import annotations

import ast

from coopcode.code_analysis.docstrings import without_docstring
from coopcode.code_analysis.patterns import main_scope, parse_or_none, top_functions
from coopcode.code_analysis.program import defines
from coopcode.records.cooperation import HelperUse

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    a = fn.args
    names = [*a.posonlyargs, *a.args, *a.kwonlyargs, *((a.vararg,) if a.vararg else ()),
             *((a.kwarg,) if a.kwarg else ())]
    return {x.arg for x in names}


def _literal(node: ast.AST | None) -> bool:
    """A value written out in full: a constant, or a display of literals (`[0.0, 1.0]`, `-1`)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return all(_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _literal(k) for k in node.keys) and all(
            _literal(v) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        return _literal(node.operand)
    return False


def _always_returns(body: list[ast.stmt]) -> bool:
    """Whether running `body` ends in a return or a raise on every path (an if's both ways)."""
    last = body[-1] if body else None
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    return isinstance(last, ast.Return | ast.Raise)


def _changes_arguments(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the function may change an argument in place (`xs.append(...)`, `xs[0] = 1`)."""
    given = _params(fn)
    for node in ast.walk(fn):
        if (isinstance(node, ast.Attribute | ast.Subscript) and isinstance(node.value, ast.Name)
                and node.value.id in given):
            if isinstance(node.ctx, ast.Store | ast.Del):
                return True
            if isinstance(node, ast.Attribute):  # a method call on an argument may change it
                return True
    return False


def _returns_one_literal(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Every way out of `fn` returns the same literal, whatever it was given."""
    todo: list[ast.AST] = list(fn.body)
    returns: list[ast.expr | None] = []
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Yield | ast.YieldFrom):
            return False
        if isinstance(node, ast.Return):
            returns.append(node.value)
        if not isinstance(node, (*_FUNCS, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return (bool(returns) and all(_literal(v) for v in returns)
            and len({ast.dump(v) for v in returns if v is not None}) == 1
            and _always_returns(without_docstring(fn)) and not _changes_arguments(fn))


def is_trivial(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a function does nothing: `pass`, `...`, `raise`, returns an argument unchanged,
    or returns the same constant whatever it is given."""
    body = without_docstring(fn)
    idle = [s for s in body if isinstance(s, ast.Pass | ast.Raise)
            or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    rest = [s for s in body if s not in idle]
    if not rest:
        return True
    if len(rest) == 1 and isinstance(rest[0], ast.Return):
        value = rest[0].value
        if value is None or _literal(value) or (isinstance(value, ast.Name)
                                                and value.id in _params(fn)):
            return True
    return _returns_one_literal(fn)


def _returns_value(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any((isinstance(n, ast.Return) and n.value is not None)
               or isinstance(n, ast.Yield | ast.YieldFrom) for n in ast.walk(fn))


def bound_names(module: ast.Module) -> set[str]:
    """Names main's code binds itself: functions (at any depth), assignments, imports."""
    out: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, (*_FUNCS, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
    return out


class _Uses:
    """Counts used and discarded helper calls in main's scope."""

    def __init__(self, roots: list[ast.AST], live: set[str]) -> None:
        self.live = live
        self.parent: dict[ast.AST, ast.AST] = {}
        self.loaded: set[str] = set()
        for root in roots:
            for node in ast.walk(root):
                for child in ast.iter_child_nodes(node):
                    self.parent[child] = node
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    self.loaded.add(node.id)
        self.roots = roots
        self.bare_calls: list[ast.Expr] = []

    def _target_read(self, target: ast.AST) -> bool:
        if isinstance(target, ast.Name):
            return target.id in self.loaded
        if isinstance(target, ast.Tuple | ast.List):
            return any(self._target_read(t) for t in target.elts)
        if isinstance(target, ast.Starred):
            return self._target_read(target.value)
        return True  # an attribute or an item: stored where something else can read it

    def _value_used(self, node: ast.AST) -> bool:
        up = self.parent.get(node)
        while isinstance(up, ast.Await):
            node, up = up, self.parent.get(up)
        if isinstance(up, ast.Expr):
            self.bare_calls.append(up)
            return False
        if isinstance(up, ast.Assign) and node is up.value:
            return any(self._target_read(t) for t in up.targets)
        if isinstance(up, ast.AnnAssign | ast.AugAssign) and node is up.value:
            return self._target_read(up.target)
        if isinstance(up, ast.NamedExpr) and node is up.value:
            return self._target_read(up.target) or self._value_used(up)
        return True

    def count(self) -> tuple[int, int]:
        used = discarded = 0
        for root in self.roots:
            for node in ast.walk(root):
                if not (isinstance(node, ast.Name) and node.id in self.live
                        and isinstance(node.ctx, ast.Load)):
                    continue
                up = self.parent.get(node)
                if isinstance(up, ast.Call) and up.func is node:
                    if self._value_used(up):
                        used += 1
                    else:
                        discarded += 1
                else:
                    used += 1  # handed over as a function: map(aux, xs), key=aux
        return used, discarded


def analyse_use(helper_code: str, main_code: str, entry_point: str = "") -> HelperUse:
    """How `main_code` uses the functions of `helper_code` (parsed, never run)."""
    helper_mod, main_mod = parse_or_none(helper_code), parse_or_none(main_code)
    if helper_mod is None or main_mod is None:
        return HelperUse()
    helpers = top_functions(helper_mod)
    main_funcs = top_functions(main_mod)
    entry = main_funcs.get(entry_point) if entry_point else None
    if entry is None and not entry_point and len(main_funcs) == 1:
        entry = next(iter(main_funcs.values()))
    trivial = tuple(n for n, fn in helpers.items() if is_trivial(fn))
    bound = bound_names(main_mod)
    redefined = tuple(n for n in helpers if n in bound)
    live = {n for n in helpers if n not in trivial and n not in redefined}
    counter = _Uses(main_scope(main_mod, set(helpers), entry_point), live)
    used, discarded = counter.count() if live else (0, 0)
    stripped = main_code
    if counter.bare_calls:
        drop = {id(s) for s in counter.bare_calls}

        class _Strip(ast.NodeTransformer):
            def visit_Expr(self, node: ast.Expr) -> ast.AST:
                return ast.Pass() if id(node) in drop else node

        stripped = ast.unparse(ast.fix_missing_locations(_Strip().visit(main_mod)))
    return HelperUse(
        parsed=True, helper_functions=tuple(helpers), trivial=trivial, redefined=redefined,
        helper_returns=any(_returns_value(helpers[n]) for n in live | set(redefined)
                           if n not in trivial),
        entry_returns=entry is not None and _returns_value(entry),
        used=used, discarded=discarded, main_without_discarded=stripped)


def main_calls_helper(main_code: str, helper_code: str) -> bool:
    """Whether the main code calls a function the helper defined (cooperation, not just glue)."""
    try:
        helper_names = {
            n.name for n in ast.parse(helper_code).body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        called = {
            n.func.id for n in ast.walk(ast.parse(main_code))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
    except SyntaxError:
        return False
    return bool(helper_names & called) and not any(defines(main_code, h) for h in helper_names & called)
