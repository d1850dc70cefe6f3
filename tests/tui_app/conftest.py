"""TUI test helpers: an app factory over a real sandbox, `wait_until`, a stepped engine."""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from coopcode.engines import ScriptedEngine
from coopcode.engines.base import Completion, DeltaCallback, GenerationRequest


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run `async def` tests in a fresh event loop (Textual's pilot is async; no plugin needed)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    asyncio.run(pyfuncitem.obj(**args))
    return True


async def wait_until(pilot: Any, predicate: Callable[[], object], timeout: float = 15.0,
                     what: str = "") -> None:
    """Let the app run until `predicate()` holds (never a bare sleep-and-hope)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")
        await pilot.pause(0.02)


def record_notes(app: Any) -> list[str]:
    """Every notification the app shows from now on (toasts expire; this list does not)."""
    notes: list[str] = []
    show = app.notify

    def notify(message: str, **kw: Any) -> None:
        notes.append(message)
        show(message, **kw)

    app.notify = notify
    return notes


class SteppedEngine(ScriptedEngine):
    """A ScriptedEngine whose every chunk waits for the test to release it.

    The test then sees the UI after each single token: streaming verified token by token.
    """

    def __init__(self, script: Any, chunk: int = 4) -> None:
        super().__init__(script, chunk=chunk)
        self.gate = threading.Semaphore(0)
        self.sent: list[str] = []

    def generate(self, requests: Sequence[GenerationRequest], on_delta: DeltaCallback | None = None,
                 cancel: threading.Event | None = None) -> list[list[Completion]]:
        def gated(ri: int, si: int, text: str, tokens: int) -> None:
            # A test that failed releases nothing more: give up after a while, or the event
            # loop's shutdown would wait for this thread for ever.
            deadline = time.monotonic() + 20
            while not self.gate.acquire(timeout=0.02):
                if cancel is not None and cancel.is_set():
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError("the test released no token for 20 s")
            self.sent.append(text)
            if on_delta is not None:
                on_delta(ri, si, text, tokens)

        return super().generate(requests, gated, cancel)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in an empty folder (checkpoints/ and runs/ are relative) with a private cache."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COOPCODE_CACHE", str(tmp_path / "cache"))
    return tmp_path


@pytest.fixture
def make_app(process_sandbox: Any, workdir: Path) -> Callable[..., Any]:
    """A CoopApp over `engine` and the real process sandbox."""
    from tui.app import CoopApp
    from tui.session import AgentsSpec, Session

    def make(engine: Any = None, *, spec: AgentsSpec | None = None, engine_factory: Any = None,
             **kw: Any) -> CoopApp:
        from tui.demo import demo_engine

        eng = engine or demo_engine(delay=0.0)
        session = Session(spec or AgentsSpec(sandbox="process"),
                          engine_factory=engine_factory or (lambda _m, _p: eng),
                          sandbox_opener=lambda _b, _w: process_sandbox)
        return CoopApp(session, **kw)

    return make
