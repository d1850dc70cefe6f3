"""`parallel`: both agents work at once; the main agent knows a helper `aux` is coming, not
its code."""

from __future__ import annotations

from coopcode.records.vocabulary import Role
from coopcode.schemes.base import SampleState, Scheme, Steps


class Parallel(Scheme):
    name = "parallel"
    roles = (Role.HELPER, Role.MAIN)
    trainable = True

    def first_turn(self, s: SampleState) -> Steps:
        yield [s.ask_first(Role.HELPER), s.ask_first(Role.MAIN, knows_helper=True)]
