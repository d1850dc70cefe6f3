"""Whether the chosen schemes fit the chosen problems, said in the TUI's words.

`coopcode.schemes.check_problems_fit` refuses a scheme that needs the problem's contract for
aux (`contract`, `contract+code`) on problems without one, naming the CLI's flags; the
screens say the same in terms of their own fields (a compose problem or split, the plan
scheme), before a run or a child starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from coopcode import Problem, get_scheme, scheme_names


def needs_contract(scheme: str) -> bool:
    """Whether `scheme` works to the problem's own contract (a problem without one is refused)."""
    return scheme in scheme_names() and get_scheme(scheme).contract_source == "problem"


def misfit(schemes: Iterable[str], problems: Sequence[Problem], remedy: str) -> str:
    """One line when a scheme needs a contract some of `problems` lack ('' when all fit):
    which scheme, how many problems have none, and `remedy`."""
    for scheme in schemes:
        if not needs_contract(scheme):
            continue
        missing = [p.task_id for p in problems if p.contract is None]
        if len(missing) == 1 and len(problems) == 1:
            return f"{missing[0]} has no contract for aux, which the {scheme} scheme needs: {remedy}"
        if missing:
            return (f"the {scheme} scheme needs a contract for aux, and {len(missing)} of "
                    f"{len(problems)} problems have none (first: {missing[0]}): {remedy}")
    return ""
