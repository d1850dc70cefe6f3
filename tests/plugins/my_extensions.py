"""One user module that adds a reward, a scheme and an engine with an option of its own,
importing only from `coopcode`. Tests name it in COOPCODE_PLUGINS (the command line) or import
it (the TUI's pilot); nothing else registers them."""

from __future__ import annotations

from dataclasses import dataclass

from coopcode import (
    EngineKind,
    RewardBreakdown,
    SampleState,
    Scheme,
    ScriptedEngine,
    Steps,
    option,
    register_engine,
    register_reward,
    register_scheme,
)


@register_reward("short", terms=("tests", "brevity"), summary="Passing tests, minus length")
def short(inp):  # type: ignore[no-untyped-def]
    return RewardBreakdown(tests=inp.verdict.pass_fraction, brevity=-len(inp.program) / 1e4)


@register_scheme
class Blind(Scheme):
    """Both agents at once, main not told of the helper; MAGRPO may train it."""

    name, roles, trainable = "blind", ("helper", "main"), True

    def first_turn(self, s: SampleState) -> Steps:
        yield [s.ask_first("helper"), s.ask_first("main")]


@dataclass(frozen=True)
class CannedOptions:
    """The canned engine's own options (`--engine-option NAME=VALUE`)."""

    op: str = option("+", "The operator main's answer applies to aux's two arguments.",
                     choices=("+", "-", "*"), noun="operator")


class Canned(ScriptedEngine):
    """Answers each prompt's open `def` with a body: the helper `aux(x, y)` returns
    `x <op> y`, main returns `aux(x, y)`."""

    def __init__(self, model: str | None = None, op: str = "+", **kw: object) -> None:
        super().__init__(lambda prompt, adapter, index: f"x, y):\n    return x {op} y\n"
                         if prompt.endswith("def aux(") else "    return aux(x, y)\n")
        self.op = op


register_engine(EngineKind("canned", f"{__name__}:Canned", "canned (always one answer)",
                           settings=CannedOptions))
