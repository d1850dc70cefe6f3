"""`concat`: two independent agents, a helper and a single-agent solver, glued together."""

from __future__ import annotations

from coopcode.schemes.base import SampleState, Scheme, Steps


class Concat(Scheme):
    name = "concat"
    roles = ("helper", "single")

    def first_turn(self, s: SampleState) -> Steps:
        yield [s.ask_first("helper"), s.ask_first("single")]
