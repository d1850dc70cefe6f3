"""Ctrl+R while the agents load: the run waits for them instead of being refused."""

from __future__ import annotations

import threading
from typing import Any

from tests.tui_app.conftest import record_notes, wait_until
from tui.demo import demo_engine
from tui.widgets.results import TestsTable


class GatedLoader:
    """A real engine factory whose every load waits for the test: a slow model the test controls.

    Each release lets one load finish with fresh demo agents (or fail with `error`).
    """

    def __init__(self, error: str = "") -> None:
        self.gate = threading.Semaphore(0)
        self.asked: list[str | None] = []  # the model of each load begun
        self.engines: list[Any] = []  # the engine each finished load gave
        self.error = error

    def __call__(self, model: str | None, progress: Any) -> Any:
        self.asked.append(model)
        progress("waiting for the test to release the load")
        # A test that failed releases nothing: give up, or shutting down waits for this thread.
        if not self.gate.acquire(timeout=60):
            raise RuntimeError("the test released no load for 60 s")
        if self.error:
            raise RuntimeError(self.error)
        engine = demo_engine(delay=0.0)
        self.engines.append(engine)
        return engine


async def test_ctrl_r_while_loading_runs_once_the_agents_are_loaded(make_app):
    loader = GatedLoader()
    app = make_app(engine_factory=loader, problem="HumanEval/0")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        notes = record_notes(app)
        await wait_until(pilot, lambda: screen.problem and loader.asked, what="loading begun")
        assert app.agents_state == "loading"
        await pilot.press("ctrl+r")
        assert "run queued" in app.status_line
        assert any("Run queued" in n for n in notes)
        await pilot.press("ctrl+r")  # a second press keeps one run waiting, not two
        assert not screen.run.generating and screen.run.run_id == 0
        loader.gate.release()
        table = screen.query_one("#tests", TestsTable)
        await wait_until(pilot, lambda: table.row_count > 0, timeout=60, what="the queued run")
        assert {str(table.get_row_at(i)[1]) for i in range(table.row_count)} == {"passed"}
        assert screen.run.run_id == 1 and len(loader.engines[0].calls) > 0
        assert "run queued" not in app.status_line and "scripted-demo" in app.status_line
        assert any("queued run started" in n for n in notes)


async def test_escape_cancels_the_queued_run(make_app):
    loader = GatedLoader()
    app = make_app(engine_factory=loader, problem="HumanEval/0")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        notes = record_notes(app)
        await wait_until(pilot, lambda: screen.problem and loader.asked, what="loading begun")
        await pilot.press("ctrl+r")
        assert "run queued" in app.status_line
        await pilot.press("escape")
        assert "run queued" not in app.status_line and "loading agents" in app.status_line
        assert any("Queued run cancelled" in n for n in notes)
        loader.gate.release()
        # The run would start in the same step that marks the agents ready.
        await wait_until(pilot, lambda: app.agents_state == "ready", timeout=60)
        assert screen.run.run_id == 0 and not screen.run.generating
        assert loader.engines[0].calls == []


async def test_a_failed_load_drops_the_queued_run_and_says_why(make_app):
    loader = GatedLoader(error="no model at ./nowhere")
    app = make_app(engine_factory=loader, problem="HumanEval/0")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        notes = record_notes(app)
        await wait_until(pilot, lambda: screen.problem and loader.asked, what="loading begun")
        await pilot.press("ctrl+r")
        loader.gate.release()
        await wait_until(pilot, lambda: app.agents_state == "error", timeout=60)
        assert screen.run.run_id == 0 and "run queued" not in app.status_line
        assert any("no model at ./nowhere" in n and "queued run was dropped" in n for n in notes)
        # Ctrl+R says what is wrong and what to do instead of waiting for nothing.
        await pilot.press("ctrl+r")
        assert screen.run.run_id == 0 and app.agents_state == "error"
        assert "no model at ./nowhere" in notes[-1] and "F2" in notes[-1]


async def test_ctrl_r_with_nothing_loading_loads_the_agents_then_runs(make_app):
    loader = GatedLoader()
    app = make_app(engine_factory=loader, problem="HumanEval/0", autoload=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.problem, what="the problem")
        assert app.agents_state == "idle" and loader.asked == []
        await pilot.press("ctrl+r")
        assert app.agents_state == "loading" and "run queued" in app.status_line
        await wait_until(pilot, lambda: loader.asked, what="loading begun")
        loader.gate.release()
        table = screen.query_one("#tests", TestsTable)
        await wait_until(pilot, lambda: table.row_count > 0, timeout=60, what="the queued run")
        assert screen.run.run_id == 1


async def test_agents_chosen_during_a_load_load_next_and_the_run_waits_for_them(make_app):
    loader = GatedLoader()
    app = make_app(engine_factory=loader, problem="HumanEval/0")
    async with app.run_test(size=(100, 30)) as pilot:
        collab = app.screen
        notes = record_notes(app)
        await wait_until(pilot, lambda: collab.problem and loader.asked, what="loading begun")
        await pilot.press("ctrl+r")
        await pilot.press("f2")
        await wait_until(pilot, lambda: app.current_mode == "agents")
        app.screen.query_one("#model-other").value = "other-model"
        await pilot.press("ctrl+r")
        assert any("load when the current load ends" in n for n in notes)
        loader.gate.release()  # the first load ends; the chosen agents load next
        await wait_until(pilot, lambda: len(loader.asked) == 2, timeout=60, what="second load")
        assert loader.asked[1] == "other-model"
        assert app.agents_state == "loading" and collab.run.run_id == 0  # still waiting
        loader.gate.release()
        table = collab.query_one("#tests", TestsTable)
        await wait_until(pilot, lambda: table.row_count > 0, timeout=60, what="the queued run")
        first, second = loader.engines
        assert first.calls == [] and len(second.calls) > 0  # it ran on the agents chosen last
        assert any("F3 shows it" in n for n in notes)  # it started while Agents was on screen
