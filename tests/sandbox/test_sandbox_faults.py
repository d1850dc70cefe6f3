"""An infrastructure failure is never a verdict: workers killed mid-run (a process killed, a
container `docker kill`ed) and a backend that cannot start workers for a while (as when the
Docker daemon restarts) cost re-runs, counted in `infra_retries`, and not one wrong verdict:
every canonical HumanEval solution still passes. A backend that stays down stops the run
with one line naming it."""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

import pytest
from sandbox_helpers import BACKENDS, assert_nothing_left, open_backend

from sandbox import Job, SandboxUnavailable
from sandbox.pool import WorkerPool


def canonical_jobs(humaneval: dict[str, dict[str, Any]], n: int) -> list[Job]:
    problems = list(humaneval.values())[:n]
    return [Job(program=p["prompt"] + p["canonical_solution"], tests=p["test"],
                entry_point=p["entry_point"], timeout=10) for p in problems]


def kill_workers(pool: WorkerPool, backend: str) -> int:
    """Kill every live worker of `pool` from outside, as an operator or the OOM killer would;
    how many were killed (one already gone is not counted)."""
    with pool._cond:
        workers = list(pool._all)
    killed = 0
    if backend == "docker":
        from sandbox.image import client

        dc = client()
        for w in workers:
            try:
                dc.api.kill(w.name)
                killed += 1
            except Exception:
                pass  # already gone
    else:
        for w in workers:
            try:
                os.kill(w.transport.proc.pid, signal.SIGKILL)  # type: ignore[attr-defined]
                killed += 1
            except ProcessLookupError:
                pass
    return killed


class Outage:
    """The pool's backend refusing to start workers while `down` is set (what a stopped
    Docker daemon does to a replacement); the workers themselves are real."""

    def __init__(self, pool: WorkerPool) -> None:
        self.down = threading.Event()
        self.refused = 0
        start = pool._start_worker

        def gated(slot: int) -> Any:
            if self.down.is_set():
                self.refused += 1
                raise ConnectionError("backend down (the test's outage)")
            return start(slot)

        pool._start_worker = gated


@pytest.mark.parametrize("backend", BACKENDS)
def test_killed_workers_are_replaced_and_their_jobs_run_again(backend: str,
                                                              humaneval: dict[str, Any]) -> None:
    pool = open_backend(backend, workers=2)
    try:
        jobs = canonical_jobs(humaneval, 164)
        kills = [0]
        done = threading.Event()

        def killer() -> None:
            # Rounds until three workers have died while the jobs run: a round that finds
            # every worker being replaced kills none (a loaded machine starts them slowly).
            while kills[0] < 3 and not done.wait(0.3):
                kills[0] += kill_workers(pool, backend)

        thread = threading.Thread(target=killer)
        thread.start()
        try:
            verdicts = pool.run_many(jobs)
        finally:
            done.set()
            thread.join()
        assert kills[0] >= 3, f"the {len(jobs)} jobs ended before three workers were killed"
        print(f"{backend}: {kills[0]} workers killed under {len(jobs)} jobs, "
              f"{pool.infra_retries} jobs re-run, "
              f"{sum(v.status != 'passed' for v in verdicts)} wrong verdicts")
        assert [v.status for v in verdicts] == ["passed"] * len(jobs)  # not one wrong verdict
        assert pool.infra_retries >= 1 and pool.status()["infra_retries"] == pool.infra_retries
    finally:
        pool.close()
    assert_nothing_left(backend)


def test_a_backend_down_for_a_while_costs_waiting_not_verdicts(humaneval: dict[str, Any]) -> None:
    pool = open_backend("process", workers=2)
    try:
        outage = Outage(pool)
        jobs = canonical_jobs(humaneval, 30)
        outage.down.set()
        kill_workers(pool, "process")  # the daemon stops: its containers go with it
        threading.Timer(2.0, outage.down.clear).start()  # ...and comes back 2 s later
        started = time.monotonic()
        verdicts = pool.run_many(jobs)
        print(f"a 2 s outage under {len(jobs)} jobs: {outage.refused} starts refused, "
              f"{pool.infra_retries} jobs re-run, done {time.monotonic() - started:.1f} s after "
              f"it began, {sum(v.status != 'passed' for v in verdicts)} wrong verdicts")
        assert [v.status for v in verdicts] == ["passed"] * len(jobs)
        assert outage.refused >= 2  # replacements were refused, then retried with backoff
        assert time.monotonic() - started >= 1.5  # the jobs waited for the backend
        assert pool.infra_retries >= 1
    finally:
        pool.close()
    assert_nothing_left("process")


def test_a_backend_that_stays_down_stops_the_run_with_one_line(humaneval: dict[str, Any]) -> None:
    pool = open_backend("process", workers=2)
    try:
        pool.recovery_s = 1.0
        outage = Outage(pool)
        outage.down.set()
        kill_workers(pool, "process")
        started = time.monotonic()
        with pytest.raises(SandboxUnavailable) as raised:
            pool.run_many(canonical_jobs(humaneval, 10))
        assert time.monotonic() - started < 20
        message = str(raised.value)
        assert "\n" not in message
        assert "could not start a worker for 1 s (backend down (the test's outage))" in message
        assert "rerun to resume" in message
    finally:
        pool.close()
    assert_nothing_left("process")
