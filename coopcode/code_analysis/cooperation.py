"""One reading of how a pair cooperated: the measure every view and reward uses.

`analyse_cooperation(helper_code, main_code, entry_point, helper_solves)` gives a
`Cooperation`: the two headline measures, and what the TUI's line and the patterns say.

- `own_work`: main does work of its own with the helper's answer, from the syntax tree
  (`coopcode.code_analysis.own_work` has the definition and its examples).
- `helper_solves`: the helper's code alone passes the problem's tests, one of its functions
  standing in for the entry point (run in the sandbox: `coopcode.collaboration.helper_alone`;
  None where it was not run). The helper then did the whole task, whatever main adds.
- `both_needed`: measured by running it: the pair passes, the helper's code alone (as the
  entry point) fails, and main with the helper replaced by a stub fails too
  (`coopcode.collaboration.judging.both_needed`; None where the pair failed or it was not
  measured). The surest measure of a division of work: neither agent's code does it alone.
- `patterns`: the cooperation patterns (`coopcode.code_analysis.patterns`), the shape of
  main's code around the helper.
- `use`: which helper functions are live and whether main uses one
  (`coopcode.code_analysis.usage`).

The bench's summaries, `evaluate`, the rewards, training's metrics and guards, and the TUI
all read these, so a figure means the same thing wherever it is shown. A recorded sample
carries `"cooperation": {"patterns": [...], "own_work": bool, "helper_solves": bool,
"both_needed": bool or null}`;
`cooperation_of(record)` reads it back (a record without it is read from its code).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any

from coopcode.code_analysis.own_work import own_work
from coopcode.code_analysis.patterns import classify_cooperation, top_functions
from coopcode.code_analysis.usage import analyse_use
from coopcode.records.cooperation import Cooperation

_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.GeneratorExp,
          ast.DictComp)


def analyse_cooperation(helper_code: str, main_code: str, entry_point: str = "",
                        helper_solves: bool | None = None) -> Cooperation:
    """Parse both agents' code (never run it) and say how they cooperated; `helper_solves`
    is what running the helper alone found (None: not run)."""
    return _analysed(helper_code, main_code, entry_point, helper_solves)


# The reading depends on the code alone and takes ~10 ms a pair: a run's summary and its
# comparisons read each sample more than once (loading, summarising, pairing), and a
# table reads every row's thousands of samples. Records are frozen, so one is shared.
@lru_cache(maxsize=16384)
def _analysed(helper_code: str, main_code: str, entry_point: str,
              helper_solves: bool | None) -> Cooperation:
    try:
        helper_mod = ast.parse(helper_code or "")
        main_mod = ast.parse(main_code or "")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        line = getattr(e, "lineno", None)
        return Cooperation(parse_error=f"syntax error on line {line}" if line else type(e).__name__,
                           helper_solves=helper_solves)
    helpers = tuple(top_functions(helper_mod))
    redefined = tuple(n for n in top_functions(main_mod) if n in helpers)
    called: dict[str, int] = {}
    in_loop = False

    def visit(node: ast.AST, looping: bool) -> None:
        nonlocal in_loop
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers:
            called[node.func.id] = called.get(node.func.id, 0) + 1
            in_loop = in_loop or looping
        for child in ast.iter_child_nodes(node):
            visit(child, looping or isinstance(node, _LOOPS))

    visit(main_mod, False)
    return Cooperation(
        helpers, called, in_loop, redefined,
        patterns=tuple(classify_cooperation(helper_code, main_code, entry_point)),
        own_work=own_work(helper_code, main_code, entry_point),
        helper_solves=helper_solves if helpers else False,
        use=analyse_use(helper_code, main_code, entry_point))


def describe_cooperation(main_code: str, helper_code: str, entry_point: str = "") -> Cooperation:
    """`analyse_cooperation` with main's code first: the argument order of the name
    `coopcode` exports."""
    return analyse_cooperation(helper_code, main_code, entry_point)


def cooperation_of(record: Mapping[str, Any]) -> Cooperation:
    """A recorded pair sample's cooperation: the syntax-tree measures computed from its code
    (cheap, and the same whatever else the record holds), `helper_solves` as recorded (None
    where the record does not say)."""
    found = record.get("cooperation")
    solves = found.get("helper_solves") if isinstance(found, Mapping) else None
    needed = found.get("both_needed") if isinstance(found, Mapping) else None
    cooperation = analyse_cooperation(str(record.get("helper_code") or ""),
                                      str(record.get("main_code") or ""),
                                      str(record.get("entry_point") or ""),
                                      solves if isinstance(solves, bool) else None)
    return replace(cooperation, both_needed=needed if isinstance(needed, bool) else None)


def cooperation_rates(found: Iterable[Cooperation]) -> dict[str, float | None]:
    """The headline rates over pair samples: `own_work`, `helper_solves` (over the samples
    whose helper was run alone; None when none was), `uses_helper`, `shell`, and
    `both_needed` (over the passing samples where it was measured; None when none was)."""
    items = list(found)
    if not items:
        return {"own_work": None, "helper_solves": None, "uses_helper": None, "shell": None,
                "both_needed": None}
    judged = [c.helper_solves for c in items if c.helper_solves is not None]
    needed = [c.both_needed for c in items if c.both_needed is not None]

    def share(flags: list[bool]) -> float:
        return round(sum(flags) / len(flags), 4)

    return {"own_work": share([c.own_work for c in items]),
            "helper_solves": share(judged) if judged else None,
            "uses_helper": share([c.uses_helper for c in items]),
            "shell": share([c.shell for c in items]),
            "both_needed": share(needed) if needed else None}
