"""`concat`: two independent agents, a helper and a single-agent solver, glued together."""

from __future__ import annotations

from coopcode.records.vocabulary import Role
from coopcode.schemes.base import SampleState, Scheme, Steps


class Concat(Scheme):
    name = "concat"
    roles = (Role.HELPER, Role.SINGLE)

    def first_turn(self, s: SampleState) -> Steps:
        yield [s.ask_first(Role.HELPER), s.ask_first(Role.SINGLE)]
