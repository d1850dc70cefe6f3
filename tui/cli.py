"""`coopcode tui`: registered on the main CLI by `register(app)`.

This module is imported by every `coopcode` command, so it imports nothing heavy: Textual,
torch and the app load inside the command.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import typer

from coopcode import (
    AdapterChoice,
    EngineConfig,
    ModelChoice,
    SandboxChoice,
    check_options,
    config_options,
    option,
    option_args,
)

SCREENS = ("agents", "collaborate", "train", "bench")


@dataclass(frozen=True)
class TuiConfig:
    """Where the app opens and how it looks."""

    problem: str | None = option(None, "Start on this problem: a task id (HumanEval/0, "
                                 "compose/NAME) or a problem.py.")
    screen: str = option("collaborate", "agents, collaborate, train or bench.", choices=SCREENS,
                         noun="screen")
    theme: str = option("dark", "dark or light (Ctrl+T toggles).", choices=("dark", "light"),
                        noun="theme")
    scripted: bool = option(False, "Scripted demo agents instead of a model (demos and tests).",
                            hidden=True)

    def validate(self) -> None:
        check_options(self)


@config_options
def tui(model: ModelChoice, adapters: AdapterChoice, sandbox: SandboxChoice,
        engine_config: EngineConfig, config: TuiConfig) -> None:
    """The interactive app: watch the agents collaborate, run the code, train and benchmark."""
    from tui.app import CoopApp
    from tui.session import AgentsSpec, Session, engine_factory_for

    chosen = adapters.chosen()  # --adapters RUN: the pair's (or one agent's) folders
    spec = AgentsSpec(model=model.model, helper_adapter=chosen.helper,
                      main_adapter=chosen.main, sandbox=sandbox.sandbox,
                      engine_args=engine_args_of(engine_config))
    if config.scripted:
        from tui.demo import demo_engine

        session = Session(spec,
                          engine_factory=lambda _model, _progress: demo_engine())
    else:
        session = Session(spec, engine_factory=engine_factory_for(engine_config.engine,
                                                                  engine_config.kwargs()))
    app = CoopApp(session, mode=config.screen, theme=config.theme, problem=config.problem)
    try:
        app.run()
    finally:
        _leave(session, app.return_code or 0)


# How long the window-less process may spend closing the session before it leaves anyway.
CLOSE_GRACE_S = 0.5


def engine_args_of(engine_config: EngineConfig) -> tuple[str, ...]:
    """The engine flags a user gave (those not at their default), for the TUI's children."""
    given = [f.name for f in fields(EngineConfig) if getattr(engine_config, f.name) != f.default]
    return tuple(option_args(engine_config, given))


def _leave(session: object, code: int) -> None:
    """Quit at once once the window is gone (Ctrl+Q returns the prompt within a second).

    Closing the sandbox takes ~0.2 s; what is slow is the interpreter's own teardown with
    torch loaded (~1.4 s measured here) and anything that hangs (a daemon that stopped
    answering). So the session closes on a thread for at most CLOSE_GRACE_S, then the process
    leaves without that teardown. Nothing is lost: the TUI writes no files itself (its jobs are
    child processes with their own files), and a Docker worker dies with its owner (its
    runner's stdin closes and Docker removes the container, `sandbox.docker_backend`).
    """
    import os
    import sys
    import threading

    closing = threading.Thread(target=session.close, daemon=True)  # type: ignore[attr-defined]
    closing.start()
    closing.join(CLOSE_GRACE_S)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def register(app: typer.Typer) -> None:
    app.command("tui")(tui)
