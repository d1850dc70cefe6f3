"""Main's answer read from the syntax tree, with the helper's answers and main's own inputs
marked: what `coopcode.code_analysis.own_work`'s checks look at (its module doc has the words).

- the *helper's answers*: used calls of a live helper (or of main's own function that uses
  one), a helper handed over as a function, and names that hold one (`r = aux(xs)`);
- main's *own inputs*: its parameters and names it computed from them without the helper;
- *guards*: tests that do not look at the helper's answer;
- *sources* of an answer: the own inputs the helper was given to compute it (`aux(a)` has
  `{a}`), so two answers on different inputs can be told apart;
- *copied* statements: statements main wrote word for word as the helper did (layout,
  comments and docstrings aside), calling one of the helper's functions. They are the
  helper's work re-written, so no check takes its evidence from them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
COMPS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_TESTED = (ast.If, ast.IfExp, ast.While, ast.Assert)
# Statements whose header is an expression of their own and whose body is other statements.
_COMPOUND = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Try,
             *(t for t in (getattr(ast, "TryStar", None), getattr(ast, "Match", None)) if t))


def params(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    a = fn.args
    names = [*a.posonlyargs, *a.args, *a.kwonlyargs, *((a.vararg,) if a.vararg else ()),
             *((a.kwarg,) if a.kwarg else ())]
    return {x.arg for x in names}


def target_names(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def reads(nodes: Iterable[ast.AST], wanted: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in wanted
               for node in nodes for n in ast.walk(node))


def header(stmt: ast.stmt) -> list[ast.AST]:
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


def same(a: ast.AST, b: ast.AST) -> bool:
    """The same code, whatever its layout."""
    return ast.dump(a) == ast.dump(b)


class MarkedMain:
    """Main's answer with the helper's answers and main's own inputs marked."""

    def __init__(self, roots: list[ast.AST], helpers: set[str],
                 copied: Iterable[ast.stmt] = ()) -> None:
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
        self.params = {p for r in roots if isinstance(r, FUNCS) for p in params(r)}
        self.copied = {n for stmt in copied for n in ast.walk(stmt)}
        self.answers: set[str] = set()  # names holding the helper's answer
        self.computed: set[str] = set()  # names main computed from its inputs, without the helper
        self._mark_names()
        self._sources: dict[str, set[str]] = {}
        self._mark_sources()

    # -- what a node is ---------------------------------------------------------------------

    def nodes(self) -> Iterator[ast.AST]:
        for root in self.roots:
            yield from ast.walk(root)

    def statements(self) -> Iterator[ast.stmt]:
        for node in self.nodes():
            if isinstance(node, ast.stmt) and not isinstance(node, FUNCS):
                yield node

    def evidence_nodes(self) -> Iterator[ast.AST]:
        """The nodes a check may take as main's work: not in a statement copied from the helper."""
        return (n for n in self.nodes() if n not in self.copied)

    def evidence_statements(self) -> Iterator[ast.stmt]:
        return (s for s in self.statements() if s not in self.copied)

    def is_helper_call(self, node: ast.AST) -> bool:
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in self.helpers)

    def _value_used(self, call: ast.AST) -> bool:
        up = self.parent.get(call)
        while isinstance(up, ast.Await):
            up = self.parent.get(up)
        return not isinstance(up, ast.Expr)

    def is_answer(self, node: ast.AST) -> bool:
        """A read of the helper's answer: a used call, a handed-over helper, a name holding one."""
        if self.is_helper_call(node):
            return self._value_used(node)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in self.answers:
                return True
            up = self.parent.get(node)
            return node.id in self.helpers and not (isinstance(up, ast.Call) and up.func is node)
        return False

    def has_answer(self, nodes: Iterable[ast.AST]) -> bool:
        return any(self.is_answer(n) for node in nodes for n in ast.walk(node))

    def in_helper_args(self, node: ast.AST) -> bool:
        while node in self.parent:
            up = self.parent[node]
            if self.is_helper_call(up) and node is not up.func:  # type: ignore[attr-defined]
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

    def own_names(self, nodes: Iterable[ast.AST], wanted: set[str], *, guards: bool) -> bool:
        for node in nodes:
            for n in ast.walk(node):
                if (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in wanted
                        and not self.in_helper_args(n)
                        and (guards or not self._in_guard(n))):
                    return True
        return False

    @property
    def own(self) -> set[str]:
        """Main's own inputs: its parameters and the names it computed from them alone."""
        return (self.params | self.computed) - self.answers

    def reads_own(self, nodes: Iterable[ast.AST], *, guards: bool = False) -> bool:
        """Whether the code reads main's own inputs (not as the helper's arguments; in a guard
        only with `guards`)."""
        return self.own_names(nodes, self.own, guards=guards)

    # -- names ------------------------------------------------------------------------------

    def bindings(self) -> Iterator[tuple[set[str], list[ast.AST]]]:
        """(names bound, the code their value comes from)."""
        for node in self.nodes():
            if isinstance(node, ast.Assign):
                yield {n for t in node.targets for n in target_names(t)}, [node.value]
            elif isinstance(node, ast.AnnAssign | ast.AugAssign) and node.value is not None:
                yield target_names(node.target), [node.value]
            elif isinstance(node, ast.NamedExpr):
                yield target_names(node.target), [node.value]
            elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
                yield target_names(node.target), [node.iter]

    def stated(self) -> set[str]:
        """Names bound by statements (not inside one expression, as a comprehension's item)."""
        out: set[str] = set()
        for stmt in self.statements():
            if isinstance(stmt, ast.Assign):
                out |= {n for t in stmt.targets for n in target_names(t)}
            elif isinstance(stmt, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
                out |= target_names(stmt.target)
        return out

    def _mark_names(self) -> None:
        for _ in range(8):  # to a fixed point: a name may be bound from one bound later
            before = (len(self.answers), len(self.computed))
            for bound, values in self.bindings():
                bound -= self.helpers  # `f = aux` names the helper, it holds no answer
                if self.has_answer(values):
                    self.answers |= bound
                elif self.own_names(values, self.params | self.computed, guards=True):
                    self.computed |= bound
            if (len(self.answers), len(self.computed)) == before:
                break
        self.computed -= self.params

    def _mark_sources(self) -> None:
        for _ in range(8):
            before = sum(len(v) for v in self._sources.values())
            for bound, values in self.bindings():
                found = set().union(*(self.sources(v) for v in values))
                for name in bound & self.answers:
                    self._sources.setdefault(name, set()).update(found)
            if sum(len(v) for v in self._sources.values()) == before:
                break

    def sources(self, node: ast.AST) -> set[str]:
        """The own inputs the helper was given for the answers read in `node` (`aux(a) +
        aux(b)` has {a, b}; `r` after `r = aux(xs)` has {xs})."""
        out: set[str] = set()
        for n in ast.walk(node):
            if self.is_helper_call(n):
                args = [*n.args, *(k.value for k in n.keywords)]  # type: ignore[attr-defined]
                out |= {a.id for arg in args for a in ast.walk(arg)
                        if isinstance(a, ast.Name) and a.id in self.own}
            elif isinstance(n, ast.Name) and n.id in self.answers:
                out |= self._sources.get(n.id, set())
        return out
