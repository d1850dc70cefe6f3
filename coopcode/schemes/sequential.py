"""`sequential` (the default, the seed paper's architecture): the helper writes `aux`; then the
main agent sees the helper's code and writes the entry point, free to call it."""

from __future__ import annotations

from coopcode.records.vocabulary import Role
from coopcode.schemes.base import SampleState, Scheme, Steps


class Sequential(Scheme):
    name = "sequential"
    roles = (Role.HELPER, Role.MAIN)
    main_sees_helper = True
    trainable = True

    def first_turn(self, s: SampleState) -> Steps:
        yield [s.ask_first(Role.HELPER)]
        yield [s.ask_first(Role.MAIN, s.attempt.helper_code)]
