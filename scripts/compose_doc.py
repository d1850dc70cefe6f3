"""docs/compose.md, written from the compose set's records (by the build, compose_build.py
beside this file, and checked by the tests against the committed data): what the set is, its
counts, and ten problems in full."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from coopcode.problems.compose import SPLIT_SOURCES
from coopcode.problems.contract import Contract

SHOWN = {"train": 4, "val": 3, "test": 3}  # ten in all
SHORT_LINES = 40  # shown problems are picked among those whose prompt reads in one screen


def shown_records(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ten problems the page shows: per split, the first short ones in sha256 order."""
    picked = []
    for split, n in SHOWN.items():
        pool = [r for r in records if r["split"] == split and r["prompt"].count("\n") <= SHORT_LINES]
        pool.sort(key=lambda r: hashlib.sha256(r["task_id"].encode()).hexdigest())
        picked += pool[:n]
    return picked


def _count_asserts(tests: str) -> int:
    return sum(1 for line in tests.splitlines() if line.strip().startswith("assert "))


def render_doc(records: Sequence[dict[str, Any]], max_uses: int) -> str:
    """The page, from the records of compose.jsonl and the build's limit on a source's uses."""
    rows = []
    for split, source in SPLIT_SOURCES.items():
        mine = [r for r in records if r["split"] == split]
        steps = {s for r in mine for s in r["sources"]}
        tests = sum(_count_asserts(r["test"]) for r in mine)
        rows.append(f"| `compose:{split}` | {len(mine)} | `humaneval:{source}` | {len(steps)} | "
                    f"{tests / max(1, len(mine)):.1f} |")
    parts = [HEAD, "| split | problems | steps drawn from | HumanEval problems used | tests per problem |",
             "|---|---|---|---|---|", *rows, f"| all | {len(records)} | | | |", "", BODY.format(uses=max_uses)]
    for r in shown_records(records):
        contract = Contract.from_dict(r["contract"])
        parts += [f"### `{r['task_id']}` ({r['split']})", "",
                  f"Inner step (aux) {r['sources'][0]}, outer step {r['sources'][1]}; "
                  f"{_count_asserts(r['test'])} hidden tests of the whole, aux's tests are "
                  f"{r['sources'][0]}'s.", "",
                  "The prompt:", "", "```python", r["prompt"].rstrip(), "```", "",
                  "The contract (what the helper completes, and what main may call):", "",
                  "```python", contract.prompt.rstrip(), "```", "",
                  "The canonical halves: aux's body, then the whole's (which nests both steps):",
                  "", "```python", (contract.solution or "").rstrip(), "```", "",
                  "```python", r["canonical_solution"].rstrip(), "```", ""]
    return "\n".join(parts)


HEAD = """# The `compose` problem set: a problem where the work divides

<!-- Written by `python scripts/compose_build.py` from
coopcode/problems/data/compose.jsonl; tests/test_compose.py checks that it still matches. -->

Each problem composes two HumanEval problems: an inner step g and an outer step f that takes
what g returns. The entry point (`<f>_of_<g>`) takes g's parameters and returns f(g(...));
its docstring states both steps and shows examples of the whole. Each problem carries a
**contract** for the helper: g's signature and docstring with g renamed `aux`, g's HumanEval
tests as aux's tests, and g's canonical body as aux's reference. So the helper has a part of
its own (aux) and main has one (f, around aux): `sources` names them, inner first.

Every scheme is given the same statement of the task: the docstring states aux's step in the
contract's own words, its `>>>` examples of `aux` included (HumanEval's statement of g), so a
single agent reads what the helper's contract and main's view of it show. f's step is its
HumanEval docstring without its `>>>` examples (they call f on f's own inputs, not on the
whole's); the examples of the whole stand in for them.

```
coopcode problems list                      # every set and split, with its size
coopcode problems show compose:val --json   # one problem a line
coopcode bench --problems compose:test ...  # like any problem set
```
"""

BODY = """Splits follow HumanEval's: both steps of a `compose:test` problem come from `humaneval:test`,
those of `compose:train` from `humaneval:fit` and of `compose:val` from `humaneval:val`, so
no HumanEval problem is a step on two sides (training on `compose:train` never sees a step
of a test problem). A step may appear in several problems of its split, at most {uses} times
as the inner step and {uses} times as the outer one, pairs taken in a fixed sha256 order, so
the set stays varied; `compose:val` is small because its 30 sources allow few pairs.

How it is built (`python scripts/compose_build.py`, about 10 s with a warm Docker
sandbox; the same bytes every time, and a test rebuilds it and compares):

- **Types.** f must have one required parameter whose type takes g's return type. Types come
  from the signatures where HumanEval annotates them (`List[int]` and `list[int]` are the
  same, a bare `list` leaves its items open, `Optional[X]` is `X | None`) and otherwise from
  the values: a parameter's from the literal arguments of its tests, a return type from what
  g's canonical returns on them in the sandbox. An int is taken where a float is expected;
  nothing else is loose.
- **Inputs** are g's literal test and example arguments (examples first); an input is kept
  when g's value on it lies within the range f's own tests use (for a number: prime_fib of a
  million never ends) and the whole returns a plain value on it.
- **Expected values** are computed **in the sandbox** by the canonical f(g(x)): each input is
  a test case `assert False, repr(candidate(x))` and the judge's message is read back with
  `ast.literal_eval`. An input whose value is not a plain literal, or whose call raises,
  times out or takes over 0.25 s, is dropped. A problem needs at least 3 inputs left, two
  different values among them, and an f that changes g's result somewhere.
- **Tests** of the whole are `assert candidate(x) == value` (a float within 1e-6, as
  HumanEval compares floats); up to three of them, short ones with different values (and
  no float an exact comparison would trip on), are shown as `>>>` examples. These are the
  problem's public examples (what a revision's feedback runs); aux's examples call `aux`, not
  the entry point, and are never run against it.
- Every canonical whole passes its tests and every canonical aux passes aux's, in the
  sandbox, before the file is written.

The JSONL lines are HumanEval records (`task_id`, `prompt`, `entry_point`,
`canonical_solution`, `test`) plus `split`, `sources` and `contract` (`signature`,
`docstring`, `imports`, `test`, `solution`, `entry_point`): the format of [your own
problems](guide/problems.md), so a file of your own can carry contracts too.

## Ten of them
"""
