"""`single`: one agent writes the function (the main adapter, if any, is that agent)."""

from __future__ import annotations

from coopcode.records.vocabulary import Role
from coopcode.schemes.base import SampleState, Scheme, Steps


class Single(Scheme):
    name = "single"
    roles = (Role.SINGLE,)
    revising_roles = (Role.SINGLE,)

    def first_turn(self, s: SampleState) -> Steps:
        yield [s.ask_first(Role.SINGLE)]
