"""`coopcode tui`: registered on the main CLI by `register(app)`.

This module is imported by every `coopcode` command, so it imports nothing heavy: Textual,
torch and the app load inside the command.
"""

from __future__ import annotations

from typing import Annotated

import typer


def tui(
    model: Annotated[str | None, typer.Option("--model", "-m", help="Catalog name, local folder or Hugging Face id (default: the embedded 0.5B).")] = None,
    helper_adapter: Annotated[str | None, typer.Option("--helper-adapter", help="LoRA adapter folder (or checkpoints/<run>) for the helper.")] = None,
    main_adapter: Annotated[str | None, typer.Option("--main-adapter", help="LoRA adapter folder (or checkpoints/<run>) for the main agent.")] = None,
    sandbox: Annotated[str, typer.Option("--sandbox", help="auto (Docker when a daemon answers), docker or process.")] = "auto",
    problem: Annotated[str | None, typer.Option("--problem", help="Start on this problem: a HumanEval id or a problem.py.")] = None,
    screen: Annotated[str, typer.Option("--screen", help="agents, collaborate, train or bench.")] = "collaborate",
    theme: Annotated[str, typer.Option("--theme", help="dark or light (Ctrl+T toggles).")] = "dark",
    scripted: Annotated[bool, typer.Option("--scripted", hidden=True, help="Scripted demo agents instead of a model (demos and tests).")] = False,
) -> None:
    """The interactive app: watch the agents collaborate, run the code, train and benchmark."""
    from coopcode.errors import UserError

    if screen not in ("agents", "collaborate", "train", "bench"):
        raise UserError(f"--screen {screen}: use agents, collaborate, train or bench")
    if theme not in ("dark", "light"):
        raise UserError(f"--theme {theme}: use dark or light")
    from tui.app import CoopApp
    from tui.session import AgentsSpec, Session

    spec = AgentsSpec(model=model, helper_adapter=helper_adapter, main_adapter=main_adapter,
                      sandbox=sandbox)
    if scripted:
        from tui.demo import demo_engine

        session = Session(spec,
                          engine_factory=lambda _model, _progress: demo_engine())
    else:
        session = Session(spec)
    app = CoopApp(session, mode=screen, theme=theme, problem=problem)
    try:
        app.run()
    finally:
        _leave(session, app.return_code or 0)


# How long the window-less process may spend closing the session before it leaves anyway.
CLOSE_GRACE_S = 0.5


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
