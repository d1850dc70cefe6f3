"""What looks like main's work with the helper's answer but is not, found from the syntax tree
and taken out before `coopcode.code_analysis.own_work` looks for main's work.

- *A fallback that can never run* (`drop_dead_ways`): an `if` or conditional expression
  whose test always comes out the same is replaced by the way it takes. Two kinds of test:
  - a test whether the helper's answer is None (`r is None`, `aux(x) == None`, and their
    negations) where the helper never returns None: `r = aux(l)` / `if r is None: return
    sorted(set(l))` / `return r` is `r = aux(l)` / `return r`. A helper never returns None
    when it yields, or when it cannot run off its end and every `return` gives a value that
    is plainly not None: a literal other than None, a display or comprehension, an
    f-string, arithmetic, a comparison, `not`, a call of itself, or a local name every
    assignment of which is such a value (`count = 0` ... `count += 1` ... `return count`).
    Other calls are not followed (a name can be rebound; `list.sort` returns None), so
    `return sorted(xs)` counts as maybe None and its fallback stays.
  - a test already decided on the way there: the same test again, its negation, or the
    same question asked of a sequence's length (`xs`, `not xs`, `len(xs) == 0`, `len(xs) >
    0`, `len(xs) == 1` once `xs` is known empty), inside a way of the first test or after
    an `if` that leaves (`if not xs: return []`), unless the code in between rebinds a name
    it reads. The chains the coop-reward runs learned, `aux(l, 1) if l else [] if not l
    else aux(l, 0) + [l[-1]] if l else []`, end in such ways: only `aux(l, 1) if l else []`
    can run.
- *No-ops* (`drop_no_ops`): arithmetic or slicing that gives back its operand unchanged is
  read as the operand: `x + 0`, `x - 0`, `x * 1`, `x / 1`, `x // 1`, `x ** 1`, `x + n - n`,
  `x * n // n`, `x + 0 * n`, `x[:]`, `x[0:]`, `x[::1]`, `x[:len(x)]`, where the 0 or 1 may
  be a name bound once to one (`offset = len(s) - len(s)`). Slicing the helper's answer from
  the start to the length of the input the helper was given (`n = len(xs)` /
  `return aux(xs)[:n]`) is read as the answer too: in the shapes the agents write (a
  comprehension over the input, a filter of it, a running value per item) the answer has no
  more items than the input, so the slice keeps it whole; where a helper gives more, this
  reads a real cut as none. Without these, a computed name in a no-op passed for main's
  own work (way 4 of the definition).
- *Copies of the helper* (`copied_statements`): main's statements that are, word for word
  (layout, comments and docstrings aside), statements of the helper's code, and call one of
  the helper's functions. Main re-wrote the helper's body there (and so calls its
  sub-function, or itself); that is the helper's work, not main's.
"""

from __future__ import annotations

import ast
import copy
from collections import Counter
from collections.abc import Iterable

from coopcode.code_analysis.marked_main import FUNCS, params, same

_PLAIN = (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp,
          ast.GeneratorExp, ast.JoinedStr, ast.BinOp, ast.Compare, ast.UnaryOp, ast.Lambda)


# -- a fallback that can never run ------------------------------------------------------------

def own_nodes(fn: ast.AST) -> Iterable[ast.AST]:
    """The nodes of a function, not those of the functions and lambdas inside it."""
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (*FUNCS, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))


def _ends(body: list[ast.stmt]) -> bool:
    """Whether running `body` always ends in a return or a raise (never runs off its end)."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ast.Return | ast.Raise):
        return True
    if isinstance(last, ast.If):
        return _ends(last.body) and _ends(last.orelse)
    if isinstance(last, ast.With | ast.AsyncWith):
        return _ends(last.body)
    if isinstance(last, ast.Try):
        return _ends(last.finalbody) or ((_ends(last.body) or _ends(last.orelse))
                                         and all(_ends(h.body) for h in last.handlers))
    if isinstance(last, ast.While):  # `while True:` without break leaves only by return
        return (isinstance(last.test, ast.Constant) and last.test.value is True
                and not any(isinstance(n, ast.Break) for n in own_nodes(last)))
    return False


def never_returns_none(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a helper function plainly never returns None (see the module doc)."""
    own = list(own_nodes(fn))
    if any(isinstance(n, ast.Yield | ast.YieldFrom) for n in own):
        return True
    if isinstance(fn, ast.AsyncFunctionDef):
        return True  # a coroutine
    returns = [n for n in own if isinstance(n, ast.Return)]
    if not returns or not _ends(fn.body):
        return False
    # Every value each local name is given; None where it is not a plain `name = value`
    # (a loop target, an unpacking, `with ... as`, a walrus, a global).
    binds: dict[str, list[ast.AST | None]] = {}
    plain_targets: set[ast.AST] = set()
    for n in own:
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    plain_targets.add(t)
                    binds.setdefault(t.id, []).append(n.value)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            plain_targets.add(n.target)  # `count += 1`: arithmetic, never None
            binds.setdefault(n.target.id, []).append(ast.BinOp(n.target, n.op, n.value))
        elif isinstance(n, ast.Global | ast.Nonlocal):
            for name in n.names:
                binds.setdefault(name, []).append(None)
    for n in own:
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del) \
                and n not in plain_targets:
            binds.setdefault(n.id, []).append(None)
    unknown = params(fn)

    def plain(value: ast.AST | None, depth: int = 0) -> bool:
        if value is None or depth > 8:
            return False
        if isinstance(value, ast.Constant):
            return value.value is not None
        if isinstance(value, ast.BoolOp):
            return all(plain(v, depth + 1) for v in value.values)
        if isinstance(value, ast.IfExp):
            return plain(value.body, depth + 1) and plain(value.orelse, depth + 1)
        if isinstance(value, ast.Call):
            return isinstance(value.func, ast.Name) and value.func.id == fn.name
        if isinstance(value, ast.Name):
            found = binds.get(value.id)
            return (value.id not in unknown and bool(found)
                    and all(plain(v, depth + 1) for v in found or ()))
        return isinstance(value, _PLAIN)

    return all(plain(r.value) for r in returns)


def _none_test(test: ast.AST) -> tuple[ast.AST, bool] | None:
    """(what is tested, whether the test asks "is it None") for `x is None`, `x == None`,
    `None is not x` and the like."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, right, op = test.left, test.comparators[0], test.ops[0]
    if not isinstance(op, ast.Is | ast.IsNot | ast.Eq | ast.NotEq):
        return None
    for tested, other in ((left, right), (right, left)):
        if isinstance(other, ast.Constant) and other.value is None:
            return tested, isinstance(op, ast.Is | ast.Eq)
    return None


def _atom(test: ast.AST) -> tuple[ast.AST, bool]:
    """(what a test asks about, whether it asks that it holds): `not xs`, `len(xs) == 0` ask
    that `xs` does not hold (is empty); `len(xs) > 0`, `bool(xs)` that it does."""
    holds = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, holds = test.operand, not holds
    if (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "bool"
            and len(test.args) == 1):
        test = test.args[0]
    measured = _len_compare(test)
    if measured is not None:
        seq, op, k = measured
        if (type(op), k) in ((ast.Gt, 0), (ast.NotEq, 0), (ast.GtE, 1)):
            return seq, holds
        if (type(op), k) in ((ast.Eq, 0), (ast.Lt, 1), (ast.LtE, 0)):
            return seq, not holds
    return test, holds


def _len_compare(test: ast.AST) -> tuple[ast.AST, ast.cmpop, int] | None:
    """(xs, op, k) for `len(xs) op k` with a whole number k."""
    if (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.left, ast.Call) and isinstance(test.left.func, ast.Name)
            and test.left.func.id == "len" and len(test.left.args) == 1
            and isinstance(test.comparators[0], ast.Constant)
            and type(test.comparators[0].value) is int):
        return test.left.args[0], test.ops[0], test.comparators[0].value
    return None


_EMPTY_LEN = {ast.Eq: lambda k: k == 0, ast.NotEq: lambda k: k != 0, ast.Lt: lambda k: 0 < k,
              ast.LtE: lambda k: 0 <= k, ast.Gt: lambda k: 0 > k, ast.GtE: lambda k: 0 >= k}


def _stored(nodes: Iterable[ast.AST]) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del)}


def _exits(body: list[ast.stmt]) -> bool:
    """Whether a block always leaves what encloses it (return, raise, break, continue)."""
    last = body[-1] if body else None
    if isinstance(last, ast.If):
        return _exits(last.body) and _exits(last.orelse)
    return isinstance(last, ast.Return | ast.Raise | ast.Break | ast.Continue)


class _DropDeadWays(ast.NodeTransformer):
    """Replaces each `if` and conditional expression whose test is decided where it stands
    with the way it always takes."""

    def __init__(self, helpers: set[str], holders: set[str]) -> None:
        self.helpers, self.holders = helpers, holders
        self.known: dict[str, tuple[bool, set[str]]] = {}  # atom -> (it holds, its names)

    def _none_fixed(self, test: ast.AST) -> bool | None:
        """How a None test of a never-None answer always comes out; None if it is not one."""
        found = _none_test(test)
        if found is None:
            return None
        tested, asks_none = found
        if ((isinstance(tested, ast.Call) and isinstance(tested.func, ast.Name)
             and tested.func.id in self.helpers)
                or (isinstance(tested, ast.Name) and tested.id in self.holders)):
            return not asks_none
        return None

    def _decided(self, test: ast.AST) -> bool | None:
        """How `test` comes out on this path, where that is decided; None where it is not."""
        fixed = self._none_fixed(test)
        if fixed is not None:
            return fixed
        if isinstance(test, ast.BoolOp):
            found = [self._decided(v) for v in test.values]
            stop = isinstance(test.op, ast.Or)  # an `or` is decided by a true value
            if stop in found:
                return stop
            return (not stop) if all(f is not None for f in found) else None
        atom, holds = _atom(test)
        known = self.known.get(ast.dump(atom))
        if known is not None:
            return known[0] == holds
        inner, holds = test, True
        while isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.Not):
            inner, holds = inner.operand, not holds
        measured = _len_compare(inner)
        if measured is not None:  # len(xs) == 2 where xs is known empty
            seq, op, k = measured
            empty = self.known.get(ast.dump(seq))
            if empty is not None and not empty[0] and type(op) in _EMPTY_LEN:
                return _EMPTY_LEN[type(op)](k) == holds
        return None

    def _learn(self, test: ast.AST, value: bool) -> dict[str, tuple[bool, set[str]]]:
        """What taking one way of `test` (`value`: the test held) tells about the rest."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) == value:
            return {k: v for part in test.values for k, v in self._learn(part, value).items()}
        atom, holds = _atom(test)
        return {ast.dump(atom): (holds == value, {n.id for n in ast.walk(atom)
                                                  if isinstance(n, ast.Name)})}

    def _under(self, facts: dict[str, tuple[bool, set[str]]], node: ast.expr) -> ast.expr:
        saved = self.known
        self.known = {**saved, **facts}
        try:
            return self.visit(node)  # type: ignore[no-any-return]
        finally:
            self.known = saved

    def _block_under(self, facts: dict[str, tuple[bool, set[str]]],
                     stmts: list[ast.stmt]) -> list[ast.stmt]:
        saved = self.known
        self.known = {**saved, **facts}
        try:
            return self._block(stmts)
        finally:
            self.known = saved

    def _block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        saved = self.known
        changed = _stored(stmts)  # what the block rebinds is not known in it
        self.known = {k: v for k, v in saved.items() if not v[1] & changed}
        out: list[ast.stmt] = []
        try:
            for stmt in stmts:
                done = self.visit(stmt)
                out.extend(done if isinstance(done, list) else [done] if done else [])
                if isinstance(done, ast.If) and not done.orelse and _exits(done.body):
                    learnt = self._learn(done.test, False)  # `if not xs: return []` / ...
                    self.known = {**self.known, **{k: v for k, v in learnt.items()
                                                   if not v[1] & changed}}
        finally:
            self.known = saved
        return out

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for field, old in ast.iter_fields(node):
            if isinstance(old, list) and old and all(isinstance(x, ast.stmt) for x in old):
                setattr(node, field, self._block(old) or [ast.Pass()])
            elif isinstance(old, list):
                setattr(node, field, [self.visit(x) if isinstance(x, ast.AST) else x for x in old])
            elif isinstance(old, ast.AST):
                setattr(node, field, self.visit(old))
        return node

    def visit_If(self, node: ast.If) -> ast.AST | list[ast.stmt]:
        node.test = self.visit(node.test)
        decided = self._decided(node.test)
        if decided is not None:
            return self._block(node.body if decided else node.orelse) or [ast.Pass()]
        node.body = self._block_under(self._learn(node.test, True), node.body) or [ast.Pass()]
        node.orelse = self._block_under(self._learn(node.test, False), node.orelse)
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        node.test = self.visit(node.test)
        decided = self._decided(node.test)
        if decided is not None:
            return self.visit(node.body if decided else node.orelse)
        node.body = self._under(self._learn(node.test, True), node.body)
        node.orelse = self._under(self._learn(node.test, False), node.orelse)
        return node


def drop_dead_ways(main: ast.Module, never_none: set[str]) -> ast.Module:
    """`main` with every `if` and conditional expression whose test is decided replaced by the
    way it always takes: a None test of an answer from a helper in `never_none`, or a test
    already decided on the way there (a copy; see the module doc)."""
    # Names that only ever hold such an answer: every binding is `name = aux(...)`.
    value_of: dict[ast.AST, ast.AST] = {t: a.value for a in ast.walk(main)
                                        if isinstance(a, ast.Assign) for t in a.targets}
    kinds: dict[str, set[bool]] = {}
    for n in ast.walk(main):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del):
            value = value_of.get(n)
            kinds.setdefault(n.id, set()).add(
                isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                and value.func.id in never_none)
        elif isinstance(n, ast.arg):
            kinds.setdefault(n.arg, set()).add(False)
    holders = {name for name, k in kinds.items() if k == {True}}
    out = _DropDeadWays(never_none, holders).visit(copy.deepcopy(main))
    return ast.fix_missing_locations(out)


# -- no-ops ------------------------------------------------------------------------------------

def _once_bound(module: ast.Module) -> dict[str, ast.AST]:
    """Names bound exactly once, by a plain `name = value`, with their value."""
    count: Counter[str] = Counter()
    value: dict[str, ast.AST] = {}
    for n in ast.walk(module):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del):
            count[n.id] += 1
        elif isinstance(n, ast.arg):
            count[n.arg] += 1
        elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            value[n.targets[0].id] = n.value
    return {k: v for k, v in value.items() if count[k] == 1}


class _DropNoOps(ast.NodeTransformer):
    def __init__(self, once: dict[str, ast.AST], helpers: set[str]) -> None:
        self.once, self.helpers = once, helpers

    def _resolve(self, node: ast.AST | None, depth: int = 0) -> ast.AST | None:
        while isinstance(node, ast.Name) and node.id in self.once and depth < 8:
            node, depth = self.once[node.id], depth + 1
        return node

    def _is(self, node: ast.AST | None, number: int) -> bool:
        node = self._resolve(node)
        if isinstance(node, ast.Constant):
            return type(node.value) in (int, float) and node.value == number
        if not isinstance(node, ast.BinOp):
            return False
        if number == 0:
            return ((isinstance(node.op, ast.Sub) and same(node.left, node.right))
                    or (isinstance(node.op, ast.Mult)
                        and (self._is(node.left, 0) or self._is(node.right, 0))))
        return isinstance(node.op, ast.Div | ast.FloorDiv) and same(node.left, node.right)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        op, left, right = node.op, node.left, node.right
        if isinstance(op, ast.Add | ast.Sub) and self._is(right, 0):
            return left
        if isinstance(op, ast.Add) and self._is(left, 0):
            return right
        if isinstance(op, ast.Mult | ast.Div | ast.FloorDiv | ast.Pow) and self._is(right, 1):
            return left
        if isinstance(op, ast.Mult) and self._is(left, 1):
            return right
        # x + n - n, x - n + n, x * n // n, x * n / n
        undo = {ast.Sub: ast.Add, ast.Add: ast.Sub, ast.FloorDiv: ast.Mult, ast.Div: ast.Mult}
        if (isinstance(left, ast.BinOp) and undo.get(type(op)) is type(left.op)
                and same(left.right, right)):
            return left.left
        return node

    def _len_of(self, node: ast.AST | None) -> ast.AST | None:
        node = self._resolve(node)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "len" and len(node.args) == 1 and not node.keywords):
            return node.args[0]
        return None

    def _whole(self, value: ast.AST, upper: ast.AST | None) -> bool:
        """Whether slicing `value` up to `upper` keeps all of it."""
        if upper is None or (isinstance(upper, ast.Constant) and upper.value is None):
            return True
        measured = self._len_of(upper)
        if measured is None:
            return False
        if same(measured, value):
            return True
        call = self._resolve(value)  # the helper's answer sliced to its own input's length
        return (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id in self.helpers
                and any(same(measured, a) for a in call.args))

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        cut = node.slice
        if (isinstance(node.ctx, ast.Load) and isinstance(cut, ast.Slice)
                and (cut.lower is None or self._is(cut.lower, 0)
                     or (isinstance(cut.lower, ast.Constant) and cut.lower.value is None))
                and (cut.step is None or self._is(cut.step, 1)
                     or (isinstance(cut.step, ast.Constant) and cut.step.value is None))
                and self._whole(node.value, cut.upper)):
            return node.value
        return node


def drop_no_ops(module: ast.Module, helpers: set[str]) -> ast.Module:
    """`module` with arithmetic and slicing that change nothing read as their operand (a
    copy; see the module doc). `helpers`: the helper's function names."""
    out = _DropNoOps(_once_bound(module), helpers).visit(copy.deepcopy(module))
    return ast.fix_missing_locations(out)


# -- copies of the helper ----------------------------------------------------------------------

def copied_statements(roots: list[ast.AST], helper: ast.Module) -> list[ast.stmt]:
    """Main's statements that are statements of the helper's code word for word and call one of
    the helper's functions (see the module doc)."""
    functions = {n.name for n in helper.body if isinstance(n, FUNCS)}

    def calls_helper(stmt: ast.stmt) -> bool:
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                   and n.func.id in functions for n in ast.walk(stmt))

    theirs = {ast.dump(s) for s in ast.walk(helper)
              if isinstance(s, ast.stmt) and not isinstance(s, (*FUNCS, ast.Expr))
              and calls_helper(s)}
    return [s for root in roots for s in ast.walk(root)
            if isinstance(s, ast.stmt) and not isinstance(s, FUNCS) and ast.dump(s) in theirs]
