"""`parallel`: both agents work at once; the main agent knows a helper `aux` is coming, not
its code."""

from __future__ import annotations

from coopcode.schemes.base import SampleState, Scheme, Steps


class Parallel(Scheme):
    name = "parallel"
    roles = ("helper", "main")
    trainable = True

    def first_turn(self, s: SampleState) -> Steps:
        yield [s.ask_first("helper"), s.ask_first("main", knows_helper=True)]
