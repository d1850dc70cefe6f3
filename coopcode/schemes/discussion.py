"""`discussion`: a parallel round, then one round in which each agent sees the other's first
answer and revises its own."""

from __future__ import annotations

from coopcode.records.vocabulary import Role
from coopcode.schemes.base import DISCUSS_NOTE, SampleState, Scheme, Steps


class Discussion(Scheme):
    name = "discussion"
    roles = (Role.HELPER, Role.MAIN)

    def first_turn(self, s: SampleState) -> Steps:
        yield [s.ask_first(Role.HELPER), s.ask_first(Role.MAIN, knows_helper=True)]
        yield [s.ask_revision(role, 1, note=DISCUSS_NOTE) for role in (Role.HELPER, Role.MAIN)]
