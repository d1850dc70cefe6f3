"""The words the records and every floor above them share, as string enums.

Each member is its string (`Role.HELPER == "helper"`, `json.dumps(Role.HELPER)` writes
`"helper"`), so records on disk read as they always have, and a value read back from JSON
compares equal to the member without converting it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class _Word(StrEnum):
    # Printed as the string too: a tuple of roles in a message reads as it did.
    __repr__ = str.__repr__

    def __reduce_ex__(self, protocol: Any) -> tuple[type[str], tuple[str]]:
        # Pickled as the plain string: a trainer's saved state keys its optimizers by role,
        # and it loads as it always did, with or without this module.
        return str, (self.value,)


class Role(_Word):
    """Who writes a part of a sample. An adapter is named for the role it was trained for,
    so `HELPER` and `MAIN` also name the two adapters (the others write with main's)."""

    HELPER = "helper"  # writes `aux`
    MAIN = "main"  # writes the entry point, free to call `aux`
    SINGLE = "single"  # writes the entry point alone
    PLANNER = "planner"  # main's adapter writing aux's contract first (the `plan` scheme)


class ContractSource(_Word):
    """Where the contract the helper implements comes from (`Scheme.contract_source`)."""

    NONE = ""  # no contract: the helper writes what it chooses (falsy, as the empty string)
    PROBLEM = "problem"  # the problem's own (`Problem.contract`); a problem without one is refused
    PLANNED = "planned"  # main writes it first, as the planner


class FinishReason(_Word):
    """Why an engine stopped sampling one completion (`Completion.finish_reason`)."""

    STOP = "stop"  # the end-of-sequence token or a stop string
    LENGTH = "length"  # the token budget ran out: the output is cut
    CANCELLED = "cancelled"  # the request was cancelled before it finished
