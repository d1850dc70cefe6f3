"""`sequential` (the default, the seed paper's architecture): the helper writes `aux`; then the
main agent sees the helper's code and writes the entry point, free to call it."""

from __future__ import annotations

from coopcode.schemes.base import SampleState, Scheme, Steps


class Sequential(Scheme):
    name = "sequential"
    roles = ("helper", "main")
    main_sees_helper = True
    trainable = True

    def first_turn(self, s: SampleState) -> Steps:
        yield [s.ask_first("helper")]
        yield [s.ask_first("main", s.attempt.helper_code)]
