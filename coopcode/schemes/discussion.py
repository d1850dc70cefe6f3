"""`discussion`: a parallel round, then one round in which each agent sees the other's first
answer and revises its own."""

from __future__ import annotations

from coopcode.schemes.base import DISCUSS_NOTE, SampleState, Scheme, Steps


class Discussion(Scheme):
    name = "discussion"
    roles = ("helper", "main")

    def first_turn(self, s: SampleState) -> Steps:
        yield [s.ask_first("helper"), s.ask_first("main", knows_helper=True)]
        yield [s.ask_revision(role, 1, note=DISCUSS_NOTE) for role in ("helper", "main")]
