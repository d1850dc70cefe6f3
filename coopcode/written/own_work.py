"""Does main do work of its own with the helper's answer? Decided from the syntax tree.

A pair cooperates when the work is split: the helper answers a part and main does something
with that answer that the helper did not. A main that wraps one expression around a helper
which already wrote the whole answer (`return aux(s) >= 3`) has split nothing. `own_work`
says which of the two a pair is. It parses the code (never runs it) and looks at main's
answer: the entry point and main's own functions it calls.

Words used below:
- the *helper's answer*: the value of a call of a live helper function (not trivial, not
  written again by main; `coopcode.written.usage`) that main uses, a name that holds
  one (`r = aux(xs)`, `for b in aux(ops)`), or a helper handed over as a function. Main's own
  functions that use the helper count as the helper here.
- main's *own inputs*: its parameters, and names it computed from them without the helper
  (`n = len(xs)`, `odds = [x for x in xs if x % 2]`).
- a *guard*: a test (of an `if`, a conditional expression, a `while`, an `assert`, a
  comprehension filter) that does not look at the helper's answer (`if not xs: return []`).
  Own inputs read in guards, or passed to the helper as arguments, are not own work: they
  only choose or prepare the helper's call.

Main does **own work** when one of these holds:
1. *The helper per item*: the helper is called once per item of main's own data: in a
   comprehension or a lambda over main's inputs (`sum(1 for n in arr if aux(n) > 0)`,
   `sorted(xs, key=lambda x: aux(x))`), or handed to a call that also takes main's inputs
   (`sorted(arr, key=aux)`, `map(aux, xs)`, `filter(aux, xs)`).
2. *A loop*: a `for` over main's inputs (or a `while` testing them) whose body uses the
   helper's answer, or a `for` over the helper's answer whose body reads main's inputs.
3. *A branch*: an `if` or `while` statement tests the helper's answer and one of its ways
   (the body, the `else`, or what follows an `if` without `else`) reads main's inputs:
   `r = aux(xs)` / `if r is None: return sorted(xs)[0]` / `return r`.
4. *A combination*: a statement uses the helper's answer together with a name main computed
   from its inputs in a statement of its own (`evens = aux(xs)`, `odds = [x for x in xs if
   x % 2]`, `return sorted(evens + odds)`).

Not own work: one expression around the call (`return aux(s) >= 3`,
`return aux(brackets) == 0`, `return not aux(s)`, `return aux(x)[::-1]`, `return list(aux(x))`,
`return aux(x) == True`, `return aux(n) ** 3`, `return aux(arr, 0)[:] if arr else []`);
the same spread over statements (`r = aux(s)` / `out = r >= 3` / `return out`; `if aux(s) >= 3:
return True` / `return False`); an edge case before returning the helper's answer (`if not
xs: return []` / `return aux(xs)`); arguments main prepared (`return aux(s.lower())`); a
call whose value is thrown away; a helper that does nothing; a helper main wrote again. A
main that ignores the helper does no own work *with* it (it may well solve the task alone).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from coopcode.written.cooperation import main_scope, parse_or_none, top_functions
from coopcode.written.usage import analyse_use

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_TESTED = (ast.If, ast.IfExp, ast.While, ast.Assert)
# Statements whose header is an expression of their own and whose body is other statements.
_COMPOUND = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Try,
             *(t for t in (getattr(ast, "TryStar", None), getattr(ast, "Match", None)) if t))


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    a = fn.args
    names = [*a.posonlyargs, *a.args, *a.kwonlyargs, *((a.vararg,) if a.vararg else ()),
             *((a.kwarg,) if a.kwarg else ())]
    return {x.arg for x in names}


def _target_names(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _reads(nodes: Iterable[ast.AST], names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names
               for node in nodes for n in ast.walk(node))


def _header(stmt: ast.stmt) -> list[ast.AST]:
    """The expressions a statement evaluates itself (a compound statement's header)."""
    if isinstance(stmt, ast.If | ast.While):
        return [stmt.test]
    if isinstance(stmt, ast.For | ast.AsyncFor):
        return [stmt.target, stmt.iter]
    if isinstance(stmt, ast.With | ast.AsyncWith):
        return list(stmt.items)
    if isinstance(stmt, _COMPOUND):
        return []
    return [stmt]


class _Main:
    """Main's answer with the helper's answers and main's own inputs marked."""

    def __init__(self, roots: list[ast.AST], helpers: set[str]) -> None:
        self.roots = roots
        self.parent: dict[ast.AST, ast.AST] = {}
        for root in roots:
            for node in ast.walk(root):
                for child in ast.iter_child_nodes(node):
                    self.parent[child] = node
        self.helpers = set(helpers)
        for root in roots:  # `f = aux` then `f(x)`
            for node in ast.walk(root):
                if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
                        and node.value.id in self.helpers):
                    self.helpers |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        self.params = {p for r in roots if isinstance(r, _FUNCS) for p in _params(r)}
        self.answers: set[str] = set()  # names holding the helper's answer
        self.computed: set[str] = set()  # names main computed from its inputs, without the helper
        self._mark_names()

    # -- what a node is ---------------------------------------------------------------------

    def nodes(self) -> Iterator[ast.AST]:
        for root in self.roots:
            yield from ast.walk(root)

    def statements(self) -> Iterator[ast.stmt]:
        for node in self.nodes():
            if isinstance(node, ast.stmt) and not isinstance(node, _FUNCS):
                yield node

    def _is_helper_call(self, node: ast.AST) -> bool:
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in self.helpers)

    def _value_used(self, call: ast.AST) -> bool:
        up = self.parent.get(call)
        while isinstance(up, ast.Await):
            up = self.parent.get(up)
        return not isinstance(up, ast.Expr)

    def is_answer(self, node: ast.AST) -> bool:
        """A read of the helper's answer: a used call, a handed-over helper, a name holding one."""
        if self._is_helper_call(node):
            return self._value_used(node)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in self.answers:
                return True
            up = self.parent.get(node)
            return node.id in self.helpers and not (isinstance(up, ast.Call) and up.func is node)
        return False

    def has_answer(self, nodes: Iterable[ast.AST]) -> bool:
        return any(self.is_answer(n) for node in nodes for n in ast.walk(node))

    def _in_helper_args(self, node: ast.AST, stop: ast.AST | None = None) -> bool:
        while node is not stop and node in self.parent:
            up = self.parent[node]
            if self._is_helper_call(up) and node is not up.func:  # type: ignore[attr-defined]
                return True
            if isinstance(up, ast.stmt):
                return False
            node = up
        return False

    def _in_guard(self, node: ast.AST) -> bool:
        """Inside a test that does not look at the helper's answer."""
        while node in self.parent:
            up = self.parent[node]
            if isinstance(up, _TESTED) and node is up.test and not self.has_answer([node]):
                return True
            if isinstance(up, ast.comprehension) and node in up.ifs and not self.has_answer([node]):
                return True
            if isinstance(up, ast.stmt):
                return False
            node = up
        return False

    def _own_names(self, nodes: Iterable[ast.AST], names: set[str], *, guards: bool) -> bool:
        for node in nodes:
            for n in ast.walk(node):
                if (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names
                        and not self._in_helper_args(n)
                        and (guards or not self._in_guard(n))):
                    return True
        return False

    def reads_own(self, nodes: Iterable[ast.AST], *, guards: bool = False) -> bool:
        """Whether the code reads main's own inputs (not as the helper's arguments; in a guard
        only with `guards`)."""
        return self._own_names(nodes, (self.params | self.computed) - self.answers, guards=guards)

    # -- names ------------------------------------------------------------------------------

    def _bindings(self) -> Iterator[tuple[set[str], list[ast.AST]]]:
        """(names bound, the code their value comes from)."""
        for node in self.nodes():
            if isinstance(node, ast.Assign):
                yield {n for t in node.targets for n in _target_names(t)}, [node.value]
            elif isinstance(node, ast.AnnAssign | ast.AugAssign) and node.value is not None:
                yield _target_names(node.target), [node.value]
            elif isinstance(node, ast.NamedExpr):
                yield _target_names(node.target), [node.value]
            elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
                yield _target_names(node.target), [node.iter]

    def _stated(self) -> set[str]:
        """Names bound by statements (not inside one expression, as a comprehension's item)."""
        out: set[str] = set()
        for stmt in self.statements():
            if isinstance(stmt, ast.Assign):
                out |= {n for t in stmt.targets for n in _target_names(t)}
            elif isinstance(stmt, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
                out |= _target_names(stmt.target)
        return out

    def _mark_names(self) -> None:
        for _ in range(8):  # to a fixed point: a name may be bound from one bound later
            before = (len(self.answers), len(self.computed))
            for names, values in self._bindings():
                names -= self.helpers  # `f = aux` names the helper, it holds no answer
                if self.has_answer(values):
                    self.answers |= names
                elif self._own_names(values, self.params | self.computed, guards=True):
                    self.computed |= names
            if (len(self.answers), len(self.computed)) == before:
                break
        self.computed -= self.params

    # -- the four ways ----------------------------------------------------------------------

    def per_item(self) -> bool:
        for node in self.nodes():
            if not self.is_answer(node):
                continue
            if isinstance(node, ast.Name) and node.id in self.helpers:  # handed over: map(aux, xs), sorted(xs, key=aux)
                call = self.parent.get(node)
                if isinstance(call, ast.keyword):
                    call = self.parent.get(call)
                if isinstance(call, ast.Call) and self.reads_own(
                        [a for a in (*call.args, *(k.value for k in call.keywords)) if a is not node]):
                    return True
                continue
            if self._per_item_call(node):
                return True
        return False

    def _per_item_call(self, answer: ast.AST) -> bool:
        """The helper's answer taken once per item of main's own data, in one expression: a
        call on a comprehension's item, or a test of it in a filter; a lambda's call on its
        argument."""
        child: ast.AST = answer
        while child in self.parent:
            up = self.parent[child]
            if isinstance(up, ast.stmt):
                return False
            if isinstance(up, ast.comprehension) and child is not up.iter:
                up = self.parent[up]  # a filter or a later generator's iterable
            if isinstance(up, _COMPS):
                items = {n for g in up.generators for n in _target_names(g.target)}
                per_item = (self._is_helper_call(answer) and _reads(answer.args + [  # type: ignore[attr-defined]
                    k.value for k in answer.keywords], items)) or (  # type: ignore[attr-defined]
                    any(child in g.ifs for g in up.generators) and _reads([child], items))
                return per_item and self.reads_own([g.iter for g in up.generators], guards=True)
            if isinstance(up, ast.Lambda):
                holder = self.parent.get(up)
                if isinstance(holder, ast.keyword):
                    holder = self.parent.get(holder)
                return (self._is_helper_call(answer) and _reads([answer], _params(up))
                        and isinstance(holder, ast.Call) and self.reads_own(
                            [a for a in (*holder.args, *(k.value for k in holder.keywords))
                             if a is not up]))
            child = up
        return False

    def _per_item_body(self, body: list[ast.stmt], items: set[str]) -> bool:
        """A loop body that takes the helper's answer for each item: a statement of it uses
        the answer and reads the item (or a name made from it in the body)."""
        items = set(items)
        inner = [s for b in body for s in ast.walk(b) if isinstance(s, ast.stmt)]
        for bind in inner:
            if isinstance(bind, ast.Assign | ast.AugAssign) and _reads([bind.value], items):
                targets = bind.targets if isinstance(bind, ast.Assign) else [bind.target]
                items |= {n for t in targets for n in _target_names(t)}
        for stmt in inner:
            header = _header(stmt)
            if self.has_answer(header) and _reads(header, items):
                return True
        return False

    def loop(self) -> bool:
        for stmt in self.statements():
            if isinstance(stmt, ast.For | ast.AsyncFor):
                if (self.reads_own([stmt.iter], guards=True)
                        and self._per_item_body(stmt.body, _target_names(stmt.target))):
                    return True
                if self.has_answer([stmt.iter]) and self.reads_own(stmt.body):
                    return True
            elif isinstance(stmt, ast.While):
                if (self.reads_own([stmt.test], guards=True)
                        and self._per_item_body(stmt.body, _names(stmt.test))):
                    return True
        return False

    def branch(self) -> bool:
        for stmt in self.statements():
            if not isinstance(stmt, ast.If | ast.While) or not self.has_answer([stmt.test]):
                continue
            ways: list[ast.AST] = [*stmt.body, *stmt.orelse]
            if isinstance(stmt, ast.If) and not stmt.orelse:
                up = self.parent.get(stmt)
                block = next((b for b in (getattr(up, f, None) for f in ("body", "orelse", "finalbody"))
                              if isinstance(b, list) and stmt in b), [])
                ways += block[block.index(stmt) + 1:]
            if self.reads_own(ways):
                return True
        return False

    def combination(self) -> bool:
        computed = (self.computed & self._stated()) - self.answers
        for stmt in self.statements():
            header = _header(stmt)
            if self.has_answer(header) and self._own_names(header, computed, guards=False):
                return True
        return False


def own_work(helper_code: str, main_code: str, entry_point: str = "") -> bool:
    """Whether main does work of its own with the helper's answer (see the module doc)."""
    helper_mod, main_mod = parse_or_none(helper_code), parse_or_none(main_code)
    if helper_mod is None or main_mod is None or not top_functions(helper_mod):
        return False
    use = analyse_use(helper_code, main_code, entry_point)
    if not use.uses_helper:
        return False
    helpers = set(top_functions(helper_mod))
    roots = main_scope(main_mod, helpers, entry_point)
    live = set(use.live)
    # Main's own functions that use the helper stand for it where main calls them.
    entry = roots[0] if roots and isinstance(roots[0], _FUNCS) else None
    users = {r.name for r in roots if isinstance(r, _FUNCS) and r is not entry
             and any(isinstance(n, ast.Name) and n.id in live for n in ast.walk(r))}
    main = _Main(roots, live | users)
    return main.per_item() or main.loop() or main.branch() or main.combination()
