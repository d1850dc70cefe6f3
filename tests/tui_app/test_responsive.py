"""The UI stays responsive while a model generates, loads, and while a bench child runs.

Two measures: keys pressed during the job take effect promptly, and a 20 ms timer on the
event loop never stalls (a blocking call on the loop would show up as a long gap).
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

from tests.tui_app.conftest import wait_until
from tui.session import AgentsSpec, default_engine_factory
from tui.widgets.agent_pane import AgentPane

# A tick every 20 ms is asked for. Blocking work on the loop (generating, loading a model)
# would stall it for the whole job: 5 s and more here. The bounds leave slack for a 2-core
# machine that other suites load at the same time (load averages of 10-40 were seen, with
# single key delays up to 1.6 s and a median of 0.4 s).
MAX_GAP = 2.5  # s
MAX_KEY = 2.5  # s from key press to its visible effect
TYPICAL_KEY = 1.0  # s, the median key delay
# Loading a model in-process first imports torch: its C extension initialises while holding
# the GIL (~1 s here), which no worker thread can avoid. A load on the loop itself would
# stall it for the whole load (5 s and more), which this bound still catches.
MAX_GAP_LOADING = 3.0


def slack() -> float:
    """How much a busy machine stretches the bounds: the 1-minute load per core, between 1
    and 2.5. A job blocking the loop stalls it for the whole job, which the same load
    stretches as much, so the bounds stay discriminating."""
    return _per_core(os.getloadavg()[0])


def _per_core(load: float) -> float:
    """A load (runnable threads) per core, clamped to [1, 2.5]: the factor the bounds stretch by."""
    return min(max(load / (os.cpu_count() or 1), 1.0), 2.5)


class LoopWatch:
    """Records the longest gap between ticks of a 20 ms interval timer on the app's loop."""

    def __init__(self, app: Any) -> None:
        self.last = time.monotonic()
        self.worst = 0.0
        self.running: list[int] = []  # the kernel's runnable threads at each tick
        app.set_interval(0.02, self.tick)

    def tick(self) -> None:
        now = time.monotonic()
        self.worst = max(self.worst, now - self.last)
        self.last = now
        self.running.append(int(Path("/proc/loadavg").read_text().split()[3].split("/")[0]))

    def slack(self) -> float:
        """`slack()` measured over the watch instead of the last minute: the mean of the
        runnable threads per core while it ran (this loop's own thread among them)."""
        return _per_core(statistics.mean(self.running or [0]))


async def press_and_time(pilot: Any, key: str, effect: Any) -> float:
    """Seconds from a key reaching the app to its effect.

    The key is queued as the terminal driver queues it: `pilot.press` would also wait for the whole process
    to go idle (up to 2 s), which it never does while a model generates on another thread.
    """
    from textual import events

    app = pilot.app
    started = time.monotonic()
    key_event = events.Key(key, None)
    key_event.set_sender(app)
    app.post_message(key_event)
    await wait_until(pilot, effect, timeout=10, what=f"effect of {key}")
    return time.monotonic() - started


async def test_keys_work_while_the_real_engine_generates(make_app, tiny_engine: Any):
    k = slack()  # the machine's load before this test adds its own
    app = make_app(tiny_engine, problem="HumanEval/0")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: app.agents_state == "ready" and screen.problem)
        await pilot.press("f2", "f3")  # build the screens first: measure the job, not compose
        watch = LoopWatch(app)
        await pilot.press("ctrl+r")
        helper = screen.query_one("#helper-pane", AgentPane)
        await wait_until(pilot, lambda: helper.tokens > 3, timeout=60, what="tokens streaming")
        delays = []
        for _ in range(3):
            delays.append(await press_and_time(pilot, "f2", lambda: app.current_mode == "agents"))
            delays.append(await press_and_time(pilot, "f3", lambda: app.current_mode == "collaborate"))
        assert screen.run.generating, "the keys were pressed while the agents were still writing"
        await pilot.press("escape")
        await wait_until(pilot, lambda: not screen.run.generating, timeout=30)
        print(f"key delays {[round(d, 3) for d in delays]}, worst loop gap {watch.worst:.3f}s")
        assert max(delays) < MAX_KEY * k and statistics.median(delays) < TYPICAL_KEY * k, delays
        assert watch.worst < MAX_GAP * k, f"event loop stalled {watch.worst:.2f}s"


@pytest.mark.slow  # a child process loads the tiny model: ~40 s here
async def test_keys_work_while_a_model_loads_and_a_bench_runs(make_app, tiny_model_dir: Path):
    k = slack()  # the machine's load before this test adds its own
    app = make_app(spec=AgentsSpec(model=str(tiny_model_dir), sandbox="process"),
                   engine_factory=default_engine_factory, mode="bench")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f3", "f5")
        watch = LoopWatch(app)
        screen = app.screen
        for fid, value in {"ks": "1", "n": "3", "limit": "4", "max-new-tokens": "48",
                           "out-name": "r"}.items():
            screen.query_one(f"#{fid}").value = value
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: screen.busy)
        delays, busy = [], []
        for _ in range(3):
            delays.append(await press_and_time(pilot, "f3", lambda: app.current_mode == "collaborate"))
            delays.append(await press_and_time(pilot, "f5", lambda: app.current_mode == "bench"))
            delays.append(await press_and_time(pilot, "ctrl+t", lambda d=app.current_theme.dark:
                                               app.current_theme.dark != d))
            busy.append(screen.busy)
        # A loaded machine slows the keys more than the child's bench: at least the first
        # round of keys must have been pressed while it ran.
        assert busy[0], "the keys were pressed while the bench was running"
        await wait_until(pilot, lambda: not screen.busy, timeout=240)
        await wait_until(pilot, lambda: app.agents_state == "ready", timeout=60)
        # The load it ran under, not only the load before it: on two workers the other
        # worker's next test can start after this one began (2026-12-07, a fresh clone on 2
        # cores: slack 1.0 at the start, median key 1.25 s; 0.42-0.59 s alone), and the
        # 1-minute load average lags a 30 s test (two busy loops started 8 s in: load slack
        # 1.22, median key 1.24 s; runnable threads per core 2.18). Alone: 1.10.
        k = max(k, watch.slack())
        print(f"key delays {[round(d, 3) for d in delays]}, worst loop gap {watch.worst:.3f}s, "
              f"slack {k:.2f}")
        assert max(delays) < MAX_GAP_LOADING * k and statistics.median(delays) < TYPICAL_KEY * k, delays
        assert watch.worst < MAX_GAP_LOADING * k, f"event loop stalled {watch.worst:.2f}s"
