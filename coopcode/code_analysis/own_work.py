"""Does main do work of its own with the helper's answer? Decided from the syntax tree.

A pair cooperates when the work is split: the helper answers a part and main does something
with that answer that the helper did not. A main that wraps one expression around a helper
which already wrote the whole answer (`return aux(s) >= 3`) has split nothing. `own_work`
says which of the two a pair is. It parses the code (never runs it) and looks at main's
answer: the entry point and main's own functions it calls. It is a description of main's
code; the measure by running it is "both needed" (`coopcode.code_analysis.cooperation`).

Words used below:
- the *helper's answer*: the value of a call of a live helper function (not trivial, not
  written again by main; `coopcode.code_analysis.usage`) that main uses, a name that holds
  one (`r = aux(xs)`, `for b in aux(ops)`), or a helper handed over as a function. Main's own
  functions that use the helper count as the helper here.
- main's *own inputs*: its parameters, and names it computed from them without the helper
  (`n = len(xs)`, `odds = [x for x in xs if x % 2]`).
- a *guard*: a test (of an `if`, a conditional expression, a `while`, an `assert`, a
  comprehension filter) that does not look at the helper's answer (`if not xs: return []`).
  Own inputs read in guards, or passed to the helper as arguments, are not own work: they
  only choose or prepare the helper's call.

Main does **own work** when one of these holds (`coopcode.code_analysis.own_work_ways` has one
check per way, named as here):
1. *The helper per item* (`per_item`): the helper is called once per item of main's own
   data: in a comprehension or a lambda over main's inputs (`sum(1 for n in arr if aux(n) >
   0)`, `sorted(xs, key=lambda x: aux(x))`), or handed to a call that also takes main's
   inputs (`sorted(arr, key=aux)`, `map(aux, xs)`, `filter(aux, xs)`); or the answer is used
   with each item of a comprehension over main's inputs (`lo, hi = aux(xs)` / `return [(x -
   lo) / (hi - lo) for x in xs]`), as a loop's body would (way 2).
2. *A loop* (`loop`): a `for` over main's inputs (or a `while` testing them) whose body uses
   the helper's answer, or a `for` over the helper's answer whose body reads main's inputs.
3. *A branch* (`branch`): an `if` or `while` statement tests the helper's answer and one of
   its ways (the body, the `else`, or what follows an `if` without `else`) reads main's
   inputs: `r = aux(xs)` / `if r is None: return sorted(xs)[0]` / `return r`.
4. *A combination* (`combination`): a statement uses the helper's answer together with a
   name main computed from its inputs in a statement of its own (`evens = aux(xs)`, `odds =
   [x for x in xs if x % 2]`, `return sorted(evens + odds)`).
5. *Per entry of what the helper counted* (`per_entry`): a loop or comprehension over the
   entries of a mapping the helper returned (its `.items()`, or pairs unpacked, or its keys
   looked up) relates an entry's parts to each other or to a value main stated: `for num,
   count in aux(lst).items(): if count >= num ...`, `most = max(counts.values())` /
   `{k: v for k, v in counts.items() if v == most}`. The helper counted; main's rule picks.
6. *Main's own term* (`own_term`): one operation (arithmetic, a comparison, an index) has the
   helper's answer in one operand and main's own inputs in another: `aux(s) +
   s.endswith('y')`, `n - sum(aux(s))`, `aux(l)[len(l) // 2]`. Way 4 in one expression.
7. *A guarded adjustment* (`adjustment`): a test of main's own inputs picks between two ways
   that both use the helper's answer, differently, one changing it by arithmetic: `aux(s) +
   1 if s.endswith('y') else aux(s)`. Main's own rule adds to the helper's count.
8. *The helper's answers on two inputs* (`two_inputs`): arithmetic or a comparison of two
   answers the helper gave on different inputs of main (none shared): `aux(s0) == aux(s1)`,
   `aux(a) * aux(b)`. `aux(s) or aux(s[::-1])` (the same input, or an `or`) is not.
9. *A sum over the helper's answer* (`sum_over`): main adds up what the helper returned:
   `sum(aux(s))`, `sum(x ** 2 for x in aux(lst))`, or a loop over the answer accumulating
   into a name of main's (`for d in aux(n): total += d`). `any(...)`, `max(...)`, `len(...)`
   over the answer are not.
10. *Main's own function on the helper's answer* (`own_function`): main hands the answer to
   a function it wrote itself that does work of its own (a loop, a comprehension, a branch,
   more than one statement): `def all_prefixes(string): ...` / `return
   all_prefixes(aux(s))`, the composed task's split (`compose`: main's step on the
   helper's). A one-expression function around the call (`def wrap(x): return x >= 3`) is
   a shell in a function, not this.

Not own work: one expression around the call with constants (`return aux(s) >= 3`,
`return aux(brackets) == 0`, `return not aux(s)`, `return aux(x)[::-1]`, `return
list(aux(x))`, `return aux(x) == True`, `return aux(n) ** 3`, `return aux(arr, 0)[:] if arr
else []`); the same spread over statements (`r = aux(s)` / `out = r >= 3` / `return out`;
`if aux(s) >= 3: return True` / `return False`); an edge case before returning the helper's
answer (`if not xs: return []` / `return aux(xs)`); arguments main prepared (`return
aux(s.lower())`); a call whose value is thrown away; a helper that does nothing (returns a
constant, as `return [0.0, 1.0]`, on every path; `coopcode.code_analysis.usage`); a helper main
wrote again. A main that ignores the helper does no own work *with* it (it may well solve
the task alone). And what only looks like work is taken out first
(`coopcode.code_analysis.not_work`): a fallback that can never run (`if r is None:` where the
helper never returns None), no-op arithmetic or slicing (`aux(s) + n - n`, `aux(xs)[:n]`
with `n = len(xs)`), and statements main copied word for word from the helper's body (its
call of the helper's sub-function included).
"""

from __future__ import annotations

import ast

from coopcode.code_analysis.marked_main import FUNCS
from coopcode.code_analysis.not_work import (
    copied_statements,
    drop_dead_ways,
    drop_no_ops,
    never_returns_none,
)
from coopcode.code_analysis.own_work_ways import Ways
from coopcode.code_analysis.patterns import main_scope, parse_or_none, top_functions
from coopcode.code_analysis.usage import analyse_use


def own_work(helper_code: str, main_code: str, entry_point: str = "") -> bool:
    """Whether main does work of its own with the helper's answer (see the module doc)."""
    helper_mod, main_mod = parse_or_none(helper_code), parse_or_none(main_code)
    if helper_mod is None or main_mod is None or not top_functions(helper_mod):
        return False
    use = analyse_use(helper_code, main_code, entry_point)
    if not use.uses_helper:
        return False
    functions = top_functions(helper_mod)
    helpers = set(functions)
    live = set(use.live)
    main_mod = drop_dead_ways(main_mod, {n for n in live if never_returns_none(functions[n])})
    main_mod = drop_no_ops(main_mod, helpers)
    roots = main_scope(main_mod, helpers, entry_point)
    copied = copied_statements(roots, drop_no_ops(helper_mod, helpers))
    # Main's own functions that use the helper stand for it where main calls them.
    entry = roots[0] if roots and isinstance(roots[0], FUNCS) else None
    users = {r.name for r in roots if isinstance(r, FUNCS) and r is not entry
             and any(isinstance(n, ast.Name) and n.id in live for n in ast.walk(r))}
    return Ways(roots, live | users, copied).any_way()
