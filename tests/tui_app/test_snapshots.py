"""SVG snapshots of every screen at fixed sizes (pytest-textual-snapshot).

Update after an intended change with `pytest tests/tui_app/test_snapshots.py --snapshot-update`
and look at the SVGs in `__snapshots__/` before committing them.
"""

from __future__ import annotations

import os
from typing import Any

from coopcode.core import events as ev
from tests.tui_app.conftest import wait_until
from tui.widgets.agent_pane import AgentPane

SIZE = (80, 24)


def steady(app: Any) -> None:
    """Remove what changes between runs: blinking cursors, clock-based titles and names."""
    for widget in app.screen.query("TextArea, Input"):
        widget.cursor_blink = False
    for pane in app.screen.query(AgentPane):
        if pane.started is not None:
            pane.started, pane.finished = 0.0, pane.tokens / 12.5  # as if 12.5 tok/s
            pane.refresh_title()
    for name in ("#run-name", "#out-name"):
        for widget in app.screen.query(name):
            widget.value = "demo"
    for hint in app.screen.query("#runs-hint"):  # where runs are looked for: a temp cache
        hint.update(str(hint.render()).replace(os.environ.get("COOPCODE_CACHE", "~"), "CACHE"))
    if hasattr(app.screen, "memory_text"):  # this machine's memory: not the screen's to fix
        app.screen.memory_text = lambda: "memory: TUI 1.2 GB · a job loads its own model · 20.0 GB free"
        for refresh in ("_show_estimate", "_show_idle"):
            if hasattr(app.screen, refresh):
                getattr(app.screen, refresh)()


async def ran(pilot: Any) -> None:
    app = pilot.app
    await wait_until(pilot, lambda: app.agents_state == "ready" and app.screen.problem)
    await pilot.press("ctrl+r")
    await wait_until(pilot, lambda: app.screen.query_one("#tests").row_count > 0)
    app.screen.query_one("#tests").focus()
    steady(app)
    await pilot.pause()


def test_collaborate_problem(snap_compare, make_app):
    async def run_before(pilot: Any) -> None:
        await wait_until(pilot, lambda: pilot.app.agents_state == "ready" and pilot.app.screen.problem)
        pilot.app.screen.query_one("#problems").focus()
        steady(pilot.app)

    assert snap_compare(make_app(problem="HumanEval/0"), terminal_size=SIZE, run_before=run_before)


def test_collaborate_program_and_tests(snap_compare, make_app):
    assert snap_compare(make_app(problem="HumanEval/0"), terminal_size=SIZE, run_before=ran)


def test_collaborate_agents_side_by_side(snap_compare, make_app):
    async def run_before(pilot: Any) -> None:
        await ran(pilot)
        # F8, as a user: the tab's `active` set from here went back to the focused Program tab.
        await pilot.press("f8")
        await wait_until(pilot, lambda: pilot.app.screen.query_one("#tabs").active == "tab-agents")
        steady(pilot.app)

    assert snap_compare(make_app(problem="HumanEval/0"), terminal_size=SIZE, run_before=run_before)


def test_collaborate_large_light(snap_compare, make_app):
    assert snap_compare(make_app(problem="HumanEval/0", theme="light"), terminal_size=(120, 36),
                        run_before=ran)


async def ran_contract_pair(pilot: Any, tab: str) -> None:
    """A `contract` pair on a compose problem, paid with `own`, shown on `tab`."""
    app = pilot.app
    await wait_until(pilot, lambda: app.agents_state == "ready" and app.screen.problem)
    app.screen.query_one("#scheme").value = "contract"
    app.screen.query_one("#reward").value = "own"
    await pilot.press("ctrl+r")
    await wait_until(pilot, lambda: "PASSED" in str(app.screen.query_one("#summary").render()))
    await pilot.press({"tab-agents": "f8", "tab-program": "f9"}[tab])  # the focus goes along
    await wait_until(pilot, lambda: app.screen.query_one("#tabs").active == tab)
    steady(app)
    await pilot.pause()


CONTRACT_TASK = "compose/all_prefixes_of_anti_shuffle"


def test_collaborate_contract_pair_between_the_panes(snap_compare, make_app):
    async def run_before(pilot: Any) -> None:
        await ran_contract_pair(pilot, "tab-agents")

    assert snap_compare(make_app(problem=CONTRACT_TASK), terminal_size=(120, 34),
                        run_before=run_before)


def test_collaborate_contract_pair_stacked_80x24(snap_compare, make_app):
    async def run_before(pilot: Any) -> None:
        await ran_contract_pair(pilot, "tab-agents")

    assert snap_compare(make_app(problem=CONTRACT_TASK), terminal_size=SIZE, run_before=run_before)


def test_collaborate_contract_pair_verdict_80x24(snap_compare, make_app):
    async def run_before(pilot: Any) -> None:
        await ran_contract_pair(pilot, "tab-program")

    assert snap_compare(make_app(problem=CONTRACT_TASK), terminal_size=SIZE, run_before=run_before)


def test_agents(snap_compare, make_app):
    async def run_before(pilot: Any) -> None:
        await wait_until(pilot, lambda: pilot.app.agents_state == "ready")
        pilot.app.screen.query_one("#load-log").clear()
        steady(pilot.app)

    assert snap_compare(make_app(mode="agents"), terminal_size=SIZE, run_before=run_before)


def test_train_with_curves(snap_compare, make_app):
    async def run_before(pilot: Any) -> None:
        screen = pilot.app.screen
        steady(pilot.app)
        # The events a run streams (the shapes `coopcode train --events jsonl` writes).
        screen.handle_event(ev.Started(job="train", total=20))
        for step in range(1, 9):
            runs, tests = min(0.3, 0.05 * step), 0.03 * step
            screen.handle_event(ev.Metric(step=step, values={
                "reward/mean": 0.2 + runs + tests, "reward/syntax": 0.2, "reward/runs": runs,
                "reward/tests": tests, "pass_rate": 0.02 * step, "loss": 1.0 / step,
                "helper/loss": 0.4 / step, "main/loss": 0.6 / step}))
            screen.handle_event(ev.Progress(done=step, total=20, eta_s=12.0 * (20 - step)))
        screen.log_view.write("checkpoint step 8: checkpoints/demo")
        await pilot.pause()

    assert snap_compare(make_app(mode="train"), terminal_size=SIZE, run_before=run_before)


def test_bench_finished(snap_compare, make_app):
    async def run_before(pilot: Any) -> None:
        screen = pilot.app.screen
        steady(pilot.app)
        from tui.widgets.scores import LiveScores

        screen.live = LiveScores([1, 3], 3)
        screen.handle_event(ev.Started(job="bench", total=12, meta={"resumed": 0}))
        screen.handle_event(ev.Progress(done=12, total=12, problems_done=4, problems_total=4,
                                         samples_per_s=1.25, eta_s=0.0))
        screen.handle_event(ev.Finished(job="bench", summary={
            "ks": [1, 3], "meta": {"wall_seconds": 9.6},
            "rows": [{"method": "sequential", "pass@1": 0.25, "pass@3": 0.5, "acc@1": 0.4,
                      "acc@3": 0.6, "problems": 4}]}))
        await pilot.pause()

    assert snap_compare(make_app(mode="bench"), terminal_size=SIZE, run_before=run_before)


def test_help(snap_compare, make_app):
    async def run_before(pilot: Any) -> None:
        await pilot.press("f1")
        await wait_until(pilot, lambda: pilot.app.screen.__class__.__name__ == "HelpScreen")

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)
