"""The Collaborate screen under sandbox faults (real process sandboxes, real kills): a worker
killed while it judges is a re-run said in the summary, never a verdict; a sandbox that stays
down is a status line (no test shown failed) and Ctrl+G tries again once it is back."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

from tests.tui_app.conftest import wait_until
from tui.widgets.results import TestsTable

SLOW = "\nimport time\ntime.sleep(1.5)  # long enough to be killed mid-run\n"


def kill_workers(pool: Any) -> int:
    """SIGKILL every worker process of `pool`, as the OOM killer would."""
    with pool._cond:
        workers = list(pool._all)
    for w in workers:
        try:
            os.kill(w.transport.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return len(workers)


def statuses(table: TestsTable) -> set[str]:
    return {str(table.get_row_at(i)[1]) for i in range(table.row_count)}


async def _first_run(pilot: Any, screen: Any) -> TestsTable:
    """Ctrl+R on HumanEval/0 (the demo agents solve it), then its program slowed down."""
    await wait_until(pilot, lambda: screen.app.agents_state == "ready" and screen.problem)
    await pilot.press("ctrl+r")
    table = screen.query_one("#tests", TestsTable)
    await wait_until(pilot, lambda: table.row_count > 0, what="the first verdict")
    assert statuses(table) == {"passed"}
    editor = screen.query_one("#program")
    editor.load_text(editor.text + SLOW)
    return table


async def test_a_worker_killed_while_judging_is_a_rerun_not_a_verdict(make_app: Any,
                                                                      process_sandbox: Any) -> None:
    app = make_app(problem="HumanEval/0")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        table = await _first_run(pilot, screen)
        before = process_sandbox.infra_retries
        await pilot.press("ctrl+g")
        await wait_until(pilot, lambda: screen.run.testing, what="testing")
        await pilot.pause(0.5)
        assert kill_workers(process_sandbox) >= 1
        await wait_until(pilot, lambda: not screen.run.testing, timeout=30, what="the verdict")
        summary = str(screen.query_one("#summary").render())
        reruns = process_sandbox.infra_retries - before  # an idle worker killed too may cost one
        assert reruns >= 1 and "PASSED" in summary and f"({reruns} re-run" in summary, summary
        assert statuses(table) == {"passed"}


async def test_a_sandbox_down_is_a_status_line_and_a_retry_never_a_failed_test(
        workdir: Path) -> None:
    from sandbox import SandboxUnavailable, open_sandbox
    from tui.app import CoopApp
    from tui.demo import demo_engine
    from tui.session import AgentsSpec, Session

    down = threading.Event()  # the backend refuses to start workers (a stopped daemon)
    opened: list[Any] = []

    def opener(_backend: str, _warn: Any) -> Any:
        if down.is_set():
            raise SandboxUnavailable("process sandbox: no worker started (the test's outage)")
        pool = open_sandbox("process", workers=1)
        pool.recovery_s = 1.0  # how long a replacement is retried before the run gives up
        start = pool._start_worker

        def gated(slot: int) -> Any:
            if down.is_set():
                raise ConnectionError("backend down (the test's outage)")
            return start(slot)

        pool._start_worker = gated
        opened.append(pool)
        return pool

    session = Session(AgentsSpec(sandbox="process"),
                      engine_factory=lambda _m, _p: demo_engine(delay=0.0), sandbox_opener=opener)
    app = CoopApp(session, problem="HumanEval/0")
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            screen = app.screen
            table = await _first_run(pilot, screen)
            summary = screen.query_one("#summary")
            await pilot.press("ctrl+g")
            await wait_until(pilot, lambda: screen.run.testing, what="testing")
            await pilot.pause(0.3)
            down.set()
            assert kill_workers(opened[-1]) == 1
            await wait_until(pilot, lambda: not screen.run.testing, timeout=30, what="the outage")
            text = str(summary.render())
            assert "SANDBOX DOWN" in text and "FAILED" not in text and "Ctrl+G" in text, text
            assert table.row_count == 0  # no test shown, so none shown failed
            # Still down: trying again says so again, and judges nothing.
            await pilot.press("ctrl+g")
            await wait_until(pilot, lambda: not screen.run.testing and "outage" in str(summary.render()),
                             timeout=15, what="the second outage line")
            assert "SANDBOX DOWN" in str(summary.render()) and table.row_count == 0
            # Back: Ctrl+G opens a new sandbox and the program is judged.
            down.clear()
            await pilot.press("ctrl+g")
            await wait_until(pilot, lambda: table.row_count > 0, timeout=30, what="the verdict")
            assert statuses(table) == {"passed"} and "PASSED" in str(summary.render())
            assert len(opened) == 2
    finally:
        for pool in opened:
            pool.close()
