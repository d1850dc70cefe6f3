"""How the main agent uses the helper's code: the cooperation patterns, read from the syntax tree.

The MAGRPO paper reports cooperation schemes that emerge in training (fallback, decorator,
coordinator, strategy filter) in prose only. `classify_cooperation(helper_code, main_code,
entry_point)` measures them: it parses both agents' code (never runs it) and returns the
sorted names of the patterns the pair shows. A program may carry several. The rules, each
with an example (`aux` is the helper's function, `f` the entry point):

- `ignored`: main never calls the helper (or defines a function of the same name itself,
  shadowing it). `def f(xs): return sum(xs)`
- `wrapper`: main only returns the helper's result: it calls the helper with its own
  parameters (or constants) and returns the result unchanged, and no other rule applies.
  `def f(xs): return aux(xs)`
- `fallback`: main has its own way it takes when the helper fails or returns something
  unusable: a helper call inside `try` whose `except` does more than re-raise; a test on the
  helper's result where one branch uses the result and the other does not touch the
  helper; or `aux(x) or <own>`.
  `r = aux(xs)` / `if r is None: return sorted(xs)[0]` / `return r`
- `decorator`: main calls the helper (outside loops) for the core and adds pre- or
  post-processing or edge cases: an argument main computed (`aux(s.lower())`), a result
  main transforms (`return aux(xs)[::-1]`, `any(b < 0 for b in aux(ops))`), or an early
  return that does not involve the helper (`if not xs: return []`).
- `coordinator`: main splits the work and calls the helper on the parts: a call inside a
  loop, a comprehension or a lambda (`[aux(x) for x in xs]`), the helper handed to another
  function (`map(aux, xs)`, `sorted(xs, key=aux)`), or two calls in one statement or block
  (`return aux(left) + aux(right)`).
- `strategy-filter`: the helper's result decides which branch main takes: it sits in the
  test of an `if`, `while`, conditional expression or comprehension filter
  (`[x for x in xs if aux(x)]`, `if aux(n): ... else: ...`), or the helper is given to
  `filter`; tests that make a fallback are not counted again.

Programs with no helper function, or code that does not parse, get no pattern ([]).
A record without patterns is classified from its `helper_code` and `main_code`; the entry
point is guessed as main's one function the helper does not define when it is not given.

The patterns name the shape of main's code; they do not say whether the pair split the work
(a `decorator` is as often a one-expression shell around a helper that wrote the whole
answer). The headline measures are `own_work` and `helper_solves`
(`coopcode.code_analysis.cooperation`).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable, Mapping

PATTERNS = ("ignored", "wrapper", "fallback", "decorator", "coordinator", "strategy-filter")
# The patterns where main does more with the helper than return its result.
COOPERATING = frozenset({"fallback", "decorator", "coordinator", "strategy-filter"})

_COMPS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_TRIES = tuple(t for t in (getattr(ast, "Try", None), getattr(ast, "TryStar", None)) if t)


def top_functions(module: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {n.name: n for n in module.body if isinstance(n, _FUNCS)}


def parse_or_none(code: str) -> ast.Module | None:
    try:
        return ast.parse(code or "")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def main_scope(main: ast.Module, helpers: set[str], entry_point: str) -> list[ast.AST]:
    """The code that is main's answer: the entry point and main's own functions it calls."""
    own = {name: fn for name, fn in top_functions(main).items() if name not in helpers}
    entry = own.get(entry_point)
    if entry is None and len(own) == 1:
        entry = next(iter(own.values()))  # a record without its entry point: main's one function
    if entry is None:
        return [main]
    return reached(entry, own)


def reached(start: ast.AST, functions: Mapping[str, ast.AST]) -> list[ast.AST]:
    """`start` and the `functions` (name -> def) it calls, and those they call, in turn."""
    seen, todo = [start], [start]
    while todo:
        for node in ast.walk(todo.pop()):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                fn = functions.get(node.func.id)
                if fn is not None and fn not in seen:
                    seen.append(fn)
                    todo.append(fn)
    return seen


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _loads(nodes: Iterable[ast.AST], names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, ast.Load)
               for node in nodes for n in ast.walk(node))


def _exits(stmts: list[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Return | ast.Raise) for s in stmts for n in ast.walk(s))


def _only_reraises(handler: ast.ExceptHandler) -> bool:
    return all(isinstance(s, ast.Raise) for s in handler.body)


class _Analysis:
    """One pass over main's scope, collecting the evidence each rule looks at."""

    def __init__(self, roots: list[ast.AST], helpers: set[str]) -> None:
        self.roots = roots
        self.helpers = set(helpers)
        self.parent: dict[ast.AST, ast.AST] = {}
        for root in roots:
            for node in ast.walk(root):
                for child in ast.iter_child_nodes(node):
                    self.parent[child] = node
        self.params = {a.arg for root in roots if isinstance(root, _FUNCS)
                       for a in (*root.args.posonlyargs, *root.args.args, *root.args.kwonlyargs,
                                 *((root.args.vararg,) if root.args.vararg else ()),
                                 *((root.args.kwarg,) if root.args.kwarg else ()))}
        self._aliases()
        self.results = self._result_names()

    def _aliases(self) -> None:
        # `f = aux` then `f(x)` is a call of the helper.
        for root in self.roots:
            for node in ast.walk(root):
                if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
                        and node.value.id in self.helpers):
                    self.helpers |= {t.id for t in node.targets if isinstance(t, ast.Name)}

    def is_helper_call(self, node: ast.AST) -> bool:
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in self.helpers)

    def nodes(self) -> Iterable[ast.AST]:
        for root in self.roots:
            yield from ast.walk(root)

    def calls(self) -> list[ast.Call]:
        return [n for n in self.nodes() if isinstance(n, ast.Call) and self.is_helper_call(n)]

    def _result_names(self) -> set[str]:
        """Variables that hold a helper's result (`r = aux(x)`, `a, b = aux(x)`, `(r := aux(x))`)."""
        out: set[str] = set()
        for call in self.calls():
            up = self.parent.get(call)
            targets: list[ast.AST] = []
            if isinstance(up, ast.Assign):
                targets = list(up.targets)
            elif isinstance(up, ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
                targets = [up.target]
            for t in targets:
                out |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
        return out - self.params

    def touches_helper(self, nodes: Iterable[ast.AST], *, results: bool = True) -> bool:
        """Whether the code calls or names the helper (or, with `results`, reads its result)."""
        names = self.helpers | (self.results if results else set())
        return _loads(nodes, names)

    # -- context --------------------------------------------------------------------------

    def ancestors(self, node: ast.AST) -> Iterable[tuple[ast.AST, ast.AST]]:
        """(child, parent) pairs from `node` up to its root."""
        while node in self.parent:
            up = self.parent[node]
            yield node, up
            node = up

    def in_loop(self, node: ast.AST) -> bool:
        """Whether `node` runs once per item: a loop body, a comprehension element, a lambda."""
        for child, up in self.ancestors(node):
            if isinstance(up, ast.For | ast.AsyncFor):
                if child in up.body:
                    return True
            elif isinstance(up, ast.While):
                if child is up.test or child in up.body:
                    return True
            elif isinstance(up, ast.Lambda):
                return True
            elif isinstance(up, ast.comprehension):
                # The first generator's iterable is evaluated once; everything else per item.
                comp = self.parent[up]
                if child is not up.iter or up is not comp.generators[0]:  # type: ignore[attr-defined]
                    return True
            elif isinstance(up, _COMPS):
                if not isinstance(child, ast.comprehension):
                    return True  # the element (or a dict comprehension's key or value)
            elif isinstance(up, _FUNCS):
                return False
        return False

    def ifexp_branches(self, node: ast.AST) -> tuple[tuple[int, bool], ...]:
        """Which arm of each enclosing conditional expression `node` is in (up to its statement)."""
        out = []
        for child, up in self.ancestors(node):
            if isinstance(up, ast.stmt):
                break
            if isinstance(up, ast.IfExp) and child is not up.test:
                out.append((id(up), child is up.body))
        return tuple(out)

    def test_of(self, node: ast.AST) -> ast.AST | None:
        """The if/while/conditional/comprehension test `node` sits in, if any."""
        for child, up in self.ancestors(node):
            if isinstance(up, ast.If | ast.While | ast.IfExp) and child is up.test:
                return up
            if isinstance(up, ast.comprehension) and child in up.ifs:
                return up
            if isinstance(up, ast.stmt):
                return None
        return None

    def block_of(self, stmt: ast.stmt) -> tuple[ast.AST, str, list[ast.stmt]] | None:
        up = self.parent.get(stmt)
        if up is None:
            return None
        for name in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(up, name, None)
            if isinstance(block, list) and stmt in block:
                return up, name, block
        return None

    def statement_of(self, node: ast.AST) -> ast.stmt | None:
        for child, _up in self.ancestors(node):
            if isinstance(child, ast.stmt):
                return child
        return node if isinstance(node, ast.stmt) else None

    def branches(self, node: ast.If | ast.IfExp) -> tuple[list[ast.AST], list[ast.AST]]:
        """The two ways an if can go; an `if` without `else` goes on with what follows it."""
        if isinstance(node, ast.IfExp):
            return [node.body], [node.orelse]
        if node.orelse:
            return list(node.body), list(node.orelse)
        where = self.block_of(node)
        after = where[2][where[2].index(node) + 1:] if where else []
        return list(node.body), list(after)


def _fallbacks(an: _Analysis) -> set[ast.AST]:
    """The try statements, tests and `or`s that make a fallback."""
    found: set[ast.AST] = set()
    for node in an.nodes():
        if isinstance(node, _TRIES):
            if (node.handlers and an.touches_helper(node.body, results=False)
                    and not all(_only_reraises(h) for h in node.handlers)):
                found.add(node)
        elif isinstance(node, ast.If | ast.IfExp) and an.touches_helper([node.test]):
            one, other = an.branches(node)
            for uses, skips in ((one, other), (other, one)):
                if (_loads(uses, an.results) and skips
                        and not an.touches_helper(skips)):
                    found.add(node)
        elif (isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or)
              and an.test_of(node) is None):
            first, rest = node.values[0], node.values[1:]
            if an.touches_helper([first]) and not an.touches_helper(rest):
                found.add(node)
    return found


def _is_plain_arg(an: _Analysis, arg: ast.AST) -> bool:
    if isinstance(arg, ast.Starred):
        arg = arg.value
    return isinstance(arg, ast.Constant) or (isinstance(arg, ast.Name) and arg.id in an.params)


def _post_processed(an: _Analysis, call: ast.Call, fallbacks: set[ast.AST]) -> bool:
    """Whether main does more with this call's result than return or test it."""
    node: ast.AST = call
    up = an.parent.get(node)
    while isinstance(up, ast.Await):
        node, up = up, an.parent.get(up)
    if isinstance(up, ast.Return | ast.IfExp) or up in fallbacks:
        return False
    if isinstance(up, ast.Expr):  # result dropped: main goes on with its own statements
        stmts = [s for r in an.roots for s in ast.walk(r) if isinstance(s, ast.stmt)
                 and not isinstance(s, (*_FUNCS, ast.Import, ast.ImportFrom))]
        return len(stmts) > 1
    if isinstance(up, ast.Assign | ast.AnnAssign | ast.NamedExpr):
        targets = up.targets if isinstance(up, ast.Assign) else [up.target]
        names = {n for t in targets for n in _names(t)}
        for use in an.nodes():
            if not (isinstance(use, ast.Name) and use.id in names
                    and isinstance(use.ctx, ast.Load)):
                continue
            holder = an.parent.get(use)
            if (isinstance(holder, ast.Return | ast.IfExp) or holder in fallbacks
                    or an.test_of(use) is not None):
                continue  # returned as it is, or only looked at
            return True
        return False
    return an.test_of(node) is None  # inside a larger expression: main transforms the result


def _edge_cases(an: _Analysis, fallbacks: set[ast.AST]) -> bool:
    """An early exit (return/raise) on a path that never touches the helper, outside loops."""
    for node in an.nodes():
        if not isinstance(node, ast.If | ast.IfExp) or node in fallbacks or an.in_loop(node):
            continue
        if an.touches_helper([node.test]):
            continue
        one, other = an.branches(node)
        for branch in (one, other):
            plain = not an.touches_helper(branch)
            if isinstance(node, ast.IfExp):
                if plain and an.touches_helper(one + other):
                    return True
            elif plain and _exits([s for s in branch if isinstance(s, ast.stmt)]):
                return True
    return False


def _analyse(an: _Analysis) -> set[str]:
    fallbacks = _fallbacks(an)
    found: set[str] = {"fallback"} if fallbacks else set()
    calls = an.calls()
    value_calls: list[ast.Call] = []
    for call in calls:
        test = an.test_of(call)
        if test is not None:
            if test not in fallbacks:
                found.add("strategy-filter")
            continue
        if an.in_loop(call):
            found.add("coordinator")
            continue
        if any(an.is_helper_call(up) for _c, up in an.ancestors(call)):
            continue  # aux(aux(x)): the outer call is the site
        value_calls.append(call)
    # Results read in a test (`flag = aux(x)` / `if flag:`) decide a branch too.
    for node in an.nodes():
        if isinstance(node, ast.Name) and node.id in an.results and isinstance(node.ctx, ast.Load):
            test = an.test_of(node)
            if test is not None and test not in fallbacks:
                found.add("strategy-filter")
    # The helper handed over as a function: to `filter` it picks items, elsewhere it is
    # applied to each part.
    for node in an.nodes():
        if isinstance(node, ast.Call) and not an.is_helper_call(node):
            handed = [a for a in (*node.args, *(k.value for k in node.keywords))
                      if isinstance(a, ast.Name) and a.id in an.helpers]
            if handed:
                name = node.func.id if isinstance(node.func, ast.Name) else ""
                found.add("strategy-filter" if name == "filter" else "coordinator")
    by_block: dict[tuple[int, tuple[tuple[int, bool], ...]], int] = defaultdict(int)
    for call in value_calls:
        stmt = an.statement_of(call)
        where = an.block_of(stmt) if stmt is not None else None
        by_block[(id(where[2]) if where else id(stmt), an.ifexp_branches(call))] += 1
    if any(count >= 2 for count in by_block.values()):
        found.add("coordinator")
    if value_calls and (
            any(not all(_is_plain_arg(an, a) for a in (*c.args, *(k.value for k in c.keywords)))
                for c in value_calls)
            or any(_post_processed(an, c, fallbacks) for c in value_calls)
            or _edge_cases(an, fallbacks)):
        found.add("decorator")
    if value_calls and not found:
        found.add("wrapper")
    return found


def classify_cooperation(helper_code: str, main_code: str, entry_point: str = "") -> list[str]:
    """The sorted cooperation pattern names of one (helper, main) pair (see the module doc)."""
    helper_mod, main_mod = parse_or_none(helper_code), parse_or_none(main_code)
    if helper_mod is None or main_mod is None:
        return []
    helpers = set(top_functions(helper_mod))
    if not helpers:
        return []
    # A helper main defines again itself is main's code, not the helper's.
    helpers -= set(top_functions(main_mod))
    if not helpers:
        return ["ignored"]
    an = _Analysis(main_scope(main_mod, helpers, entry_point), helpers)
    if not an.touches_helper(an.roots, results=False):
        return ["ignored"]
    found = _analyse(an)
    return sorted(found) if found else ["ignored"]


def pattern_rates(patterns: Iterable[Iterable[str]]) -> dict[str, float]:
    """The share of programs carrying each pattern (a program may carry several)."""
    lists = [set(p) for p in patterns]
    if not lists:
        return {}
    return {name: round(sum(name in p for p in lists) / len(lists), 4) for name in PATTERNS}
