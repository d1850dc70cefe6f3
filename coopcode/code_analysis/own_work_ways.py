"""The ways main's own work with the helper's answer shows in its code: one check per way of
`coopcode.code_analysis.own_work`'s definition (its module doc has the words and examples).
Every check reads main's code as `MarkedMain` marks it, and takes no evidence from a
statement main copied from the helper.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from itertools import combinations

from coopcode.code_analysis.marked_main import (
    COMPS,
    FUNCS,
    MarkedMain,
    header,
    names,
    params,
    reads,
    same,
    target_names,
)

_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)


def _sides(node: ast.AST) -> list[ast.AST]:
    """The operands of an operation that combines values: arithmetic, a comparison, an index."""
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        return [node.value, node.slice]
    return []


class Ways(MarkedMain):
    """The checks, each named after its way in the definition."""

    # -- 1. the helper per item ---------------------------------------------------------------

    def per_item(self) -> bool:
        for node in self.evidence_nodes():
            if not self.is_answer(node):
                continue
            if isinstance(node, ast.Name) and node.id in self.helpers:  # map(aux, xs), key=aux
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
        call on a comprehension's item, a test of it in a filter, or an element that uses it
        with the item (`[(x - lo) / (hi - lo) for x in xs]`); a lambda's call on its argument."""
        child: ast.AST = answer
        while child in self.parent:
            up = self.parent[child]
            if isinstance(up, ast.stmt):
                return False
            if isinstance(up, ast.comprehension) and child is not up.iter:
                up = self.parent[up]  # a filter or a later generator's iterable
            if isinstance(up, COMPS):
                items = {n for g in up.generators for n in target_names(g.target)}
                element = [getattr(up, f) for f in ("elt", "key", "value") if hasattr(up, f)]
                per_item = (self.is_helper_call(answer) and reads(answer.args + [  # type: ignore[attr-defined]
                    k.value for k in answer.keywords], items)) or (  # type: ignore[attr-defined]
                    any(child in g.ifs for g in up.generators) and reads([child], items)) or (
                    any(child is e for e in element) and reads([child], items))
                return per_item and self.reads_own([g.iter for g in up.generators], guards=True)
            if isinstance(up, ast.Lambda):
                holder = self.parent.get(up)
                if isinstance(holder, ast.keyword):
                    holder = self.parent.get(holder)
                return (self.is_helper_call(answer) and reads([answer], params(up))
                        and isinstance(holder, ast.Call) and self.reads_own(
                            [a for a in (*holder.args, *(k.value for k in holder.keywords))
                             if a is not up]))
            child = up
        return False

    # -- 2. a loop ----------------------------------------------------------------------------

    def _per_item_body(self, body: list[ast.stmt], items: set[str]) -> bool:
        """A loop body that takes the helper's answer for each item: a statement of it uses
        the answer and reads the item (or a name made from it in the body)."""
        items = set(items)
        inner = [s for b in body for s in ast.walk(b) if isinstance(s, ast.stmt)]
        for bind in inner:
            if isinstance(bind, ast.Assign | ast.AugAssign) and reads([bind.value], items):
                targets = bind.targets if isinstance(bind, ast.Assign) else [bind.target]
                items |= {n for t in targets for n in target_names(t)}
        for stmt in inner:
            head = header(stmt)
            if self.has_answer(head) and reads(head, items):
                return True
        return False

    def loop(self) -> bool:
        for stmt in self.evidence_statements():
            if isinstance(stmt, ast.For | ast.AsyncFor):
                if (self.reads_own([stmt.iter], guards=True)
                        and self._per_item_body(stmt.body, target_names(stmt.target))):
                    return True
                if self.has_answer([stmt.iter]) and self.reads_own(stmt.body):
                    return True
            elif isinstance(stmt, ast.While):
                if (self.reads_own([stmt.test], guards=True)
                        and self._per_item_body(stmt.body, names(stmt.test))):
                    return True
        return False

    # -- 3. a branch --------------------------------------------------------------------------

    def _ways(self, node: ast.If | ast.While | ast.IfExp) -> tuple[list[ast.AST], list[ast.AST]]:
        """The two ways a test can go; an `if` without `else` goes on with what follows it."""
        if isinstance(node, ast.IfExp):
            return [node.body], [node.orelse]
        other: list[ast.AST] = list(node.orelse)
        if isinstance(node, ast.If) and not node.orelse:
            up = self.parent.get(node)
            block = next((b for b in (getattr(up, f, None) for f in ("body", "orelse", "finalbody"))
                          if isinstance(b, list) and node in b), [])
            other = block[block.index(node) + 1:]
        return list(node.body), other

    def branch(self) -> bool:
        for stmt in self.evidence_statements():
            if isinstance(stmt, ast.If | ast.While) and self.has_answer([stmt.test]):
                one, other = self._ways(stmt)
                if self.reads_own(one + other):
                    return True
        return False

    # -- 4. a combination ---------------------------------------------------------------------

    def combination(self) -> bool:
        computed = (self.computed & self.stated()) - self.answers
        for stmt in self.evidence_statements():
            head = header(stmt)
            if self.has_answer(head) and self.own_names(head, computed, guards=False):
                return True
        return False

    # -- 5. per entry of what the helper counted ----------------------------------------------

    def _entries(self) -> Iterator[tuple[ast.expr, ast.expr, list[ast.AST]]]:
        """(target, the helper's answer iterated, the code run per entry) of each loop and
        comprehension over the helper's answer or its `.items()` / `.keys()`."""
        for node in self.evidence_nodes():
            scope: list[ast.AST]
            if isinstance(node, ast.For | ast.AsyncFor):
                target, it, scope = node.target, node.iter, list(node.body)
            elif isinstance(node, ast.comprehension):
                comp = self.parent[node]
                scope = [getattr(comp, f) for f in ("elt", "key", "value") if hasattr(comp, f)]
                scope += [test for g in comp.generators for test in g.ifs]  # type: ignore[attr-defined]
                target, it = node.target, node.iter
            else:
                continue
            if (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and not it.args
                    and it.func.attr in ("items", "keys")):
                if it.func.attr == "items" and not isinstance(target, ast.Tuple | ast.List):
                    continue
                it = it.func.value
            if self.is_answer(it):
                yield target, it, scope

    def _parts_read(self, side: ast.AST, mapping: ast.AST, parts: dict[str, str],
                    key: str | None) -> set[str]:
        """The parts of an entry that `side` reads: the names unpacked from it, or (for a
        loop over the keys) "key" and "value" where it looks the key up (`counts[k]`)."""
        found: set[str] = set()
        looked_up: set[ast.AST] = set()
        for n in ast.walk(side):
            if (key and isinstance(n, ast.Subscript) and same(n.value, mapping)
                    and isinstance(n.slice, ast.Name) and n.slice.id == key):
                found.add("value")
                looked_up |= set(ast.walk(n))
        for n in ast.walk(side):
            if (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in parts
                    and n not in looked_up):
                found.add(parts[n.id])
        return found

    def per_entry(self) -> bool:
        """A loop over the entries of a mapping the helper counted (or of pairs it returned)
        whose body relates an entry's parts to each other or to a value main stated: `for
        num, count in aux(lst).items(): if count >= num ...`, `{k: v for k, v in
        counts.items() if v == most}`, `for k in counts: if counts[k] >= k ...`."""
        stated = self.stated()
        for target, mapping, scope in self._entries():
            key: str | None = None
            if isinstance(target, ast.Tuple | ast.List):
                parts = {n.id: n.id for n in target.elts if isinstance(n, ast.Name)}
            elif isinstance(target, ast.Name):
                parts, key = {target.id: "key"}, target.id
            else:
                continue
            others = stated - set(parts) - names(mapping)  # values main stated besides
            for node in (n for s in scope for n in ast.walk(s)):
                if not isinstance(node, ast.BinOp | ast.Compare):
                    continue
                marks = [(self._parts_read(side, mapping, parts, key), reads([side], others))
                         for side in _sides(node)]
                if any(one and (two - one or besides)
                       for i, (one, _b) in enumerate(marks)
                       for j, (two, besides) in enumerate(marks) if i != j):
                    return True
        return False

    # -- 6. main's own term -------------------------------------------------------------------

    def own_term(self) -> bool:
        """One operation (arithmetic, a comparison, an index) whose one operand holds the
        helper's answer and another, without it, reads main's own inputs: `aux(s) +
        s.endswith('y')`, `n - sum(aux(s))`, `aux(l)[len(l) // 2]`."""
        for node in self.evidence_nodes():
            sides = _sides(node)
            if not sides or self.in_helper_args(node):
                continue
            answered = [self.has_answer([s]) for s in sides]
            if any(answered) and any(not a and self.reads_own([s], guards=True)
                                     for s, a in zip(sides, answered, strict=True)):
                return True
        return False

    # -- 7. a guarded adjustment --------------------------------------------------------------

    def adjustment(self) -> bool:
        """A test of main's own inputs (not of the answer) chooses between two ways that both
        use the helper's answer, differently, one changing it by arithmetic:
        `aux(s) + 1 if s.endswith('y') else aux(s)`."""
        for node in self.evidence_nodes():
            if not isinstance(node, ast.If | ast.IfExp):
                continue
            if self.has_answer([node.test]) or not self.reads_own([node.test], guards=True):
                continue
            one, other = self._ways(node)
            if not (self.has_answer(one) and self.has_answer(other)):
                continue
            if len(one) == len(other) and all(same(a, b) for a, b in zip(one, other, strict=True)):
                continue
            if any(isinstance(n, ast.BinOp) and isinstance(n.op, _ARITHMETIC)
                   and sum(self.has_answer([s]) for s in (n.left, n.right)) == 1
                   for way in (one, other) for w in way for n in ast.walk(w)):
                return True
        return False

    # -- 8. the helper's answers on two inputs ------------------------------------------------

    def two_inputs(self) -> bool:
        """Arithmetic or a comparison of two of the helper's answers computed on different
        inputs of main (no input shared): `aux(s0) == aux(s1)`, `aux(a) * aux(b)`."""
        for node in self.evidence_nodes():
            if not isinstance(node, ast.BinOp | ast.Compare):
                continue
            found = [self.sources(s) for s in _sides(node) if self.has_answer([s])]
            if any(a and b and not a & b for a, b in combinations(found, 2)):
                return True
        return False

    # -- 9. a sum over the helper's answer ----------------------------------------------------

    def sum_over(self) -> bool:
        """Main adds up what the helper returned: `sum(aux(s))`, `sum(x ** 2 for x in
        aux(lst))`, or a loop over the answer that accumulates into a name of main's
        (`for d in aux(n): total += d`)."""
        for node in self.evidence_nodes():
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "sum" and node.args):
                arg = node.args[0]
                if self.is_answer(arg) and not (isinstance(arg, ast.Name) and arg.id in self.helpers):
                    return True
                if isinstance(arg, COMPS) and self.has_answer([arg.generators[0].iter]):
                    return True
            elif isinstance(node, ast.For | ast.AsyncFor) and self.has_answer([node.iter]):
                items = target_names(node.target)
                if reads(node.body, items) and any(
                        (isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Add | ast.Sub | ast.Mult)
                         and isinstance(n.target, ast.Name))
                        or (isinstance(n, ast.Assign) and len(n.targets) == 1
                            and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.BinOp)
                            and reads([n.value], {n.targets[0].id}))
                        for s in node.body for n in ast.walk(s)):
                    return True
        return False

    # -- 10. main's own function on the helper's answer ------------------------------------

    def own_function(self) -> bool:
        """The helper's answer handed to a function main wrote itself (nested or beside the
        entry point, not calling the helper) that does work of its own: a loop, a
        comprehension, a branch, or more than one statement. `def all_prefixes(string): ...`
        / `return all_prefixes(aux(s))`: main's step on the helper's, the composed task's
        split. A one-expression function (`def wrap(x): return x >= 3`) is a shell in a
        function, not this."""
        entry = self.roots[0] if self.roots else None
        own = {n.name: n for n in self.nodes()
               if isinstance(n, FUNCS) and n is not entry and n.name not in self.helpers}
        for node in self.evidence_nodes():
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in own and any(self.is_answer(a) for a in node.args)
                    and _does_work(own[node.func.id])):
                return True
        return False

    def any_way(self) -> bool:
        return any(check() for check in (
            self.per_item, self.loop, self.branch, self.combination, self.per_entry,
            self.own_term, self.adjustment, self.two_inputs, self.sum_over, self.own_function))


def _does_work(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    looks = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.IfExp, *COMPS)
    return len(body) > 1 or any(isinstance(n, looks) for s in body for n in ast.walk(s))
