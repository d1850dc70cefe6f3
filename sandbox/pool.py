"""A pool of warm runner workers behind the `Sandbox` interface, shared by both backends.

A worker that dies, hangs or reports itself dirty after a job is replaced (in the
background), so the pool never hands out a worker with leftovers of a previous job.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import itertools
import os
import signal
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from sandbox.testsplit import TestSourceError, split_tests
from sandbox.verdict import ERROR, SANDBOX_ERROR, Job, SandboxUnavailable, Verdict
from sandbox.wire import wall_cap
from sandbox.worker import Worker, WorkerLost

HOST_GRACE = 30.0  # seconds beyond a job's wall-clock cap before the host gives up on a worker
START_TIMEOUT = 60.0


def job_message(job: Job, job_id: int) -> dict[str, Any]:
    """The runner's job message: the tests split into steps (host side, pure ast)."""
    split = split_tests(job.tests)
    entry = job.entry_point or split.entry_point
    names = set(split.names)
    if entry:
        names.add(entry)
    return {
        "op": "job",
        "id": job_id,
        "program": job.program,
        "steps": [s.to_dict() for s in split.steps],
        "names": sorted(names),
        "entry_point": entry,
        "param": split.param,
        "timeout": float(job.timeout),
        "memory_mb": int(job.memory_mb),
    }


class WorkerPool:
    """Thread-safe pool of `size` workers made by `start_worker(slot)`."""

    name = "pool"

    def __init__(self, size: int, start_worker: Callable[[int], Worker]) -> None:
        self.size = max(1, size)
        self._start_worker = start_worker
        self._cond = threading.Condition()
        self._idle: list[Worker] = []
        self._live = 0  # idle + busy + starting
        self._closed = False
        self._all: set[Worker] = set()
        self._ids = itertools.count(1)
        self.last_error = ""
        self.replaced = 0
        self.start_seconds = 0.0
        self._owner_pid = os.getpid()
        _register(self)

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(self.size) as ex:
            results = list(ex.map(self._try_start, range(self.size)))
        self.start_seconds = time.monotonic() - t0
        if not any(results):
            self.close()
            raise SandboxUnavailable(f"{self.name} sandbox: no worker started ({self.last_error})")

    def _try_start(self, slot: int, reserved: bool = False) -> bool:
        """Start a worker into the idle list; `reserved`: `_live` already counts it."""
        with self._cond:
            if self._closed:
                if reserved:
                    self._live -= 1
                return False
            if not reserved:
                self._live += 1
        try:
            worker = self._start_worker(slot)
        except Exception as e:
            self.last_error = str(e).splitlines()[0] if str(e) else type(e).__name__
            with self._cond:
                self._live -= 1
                self._cond.notify_all()
            return False
        with self._cond:
            if self._closed:
                worker.close()
                return False
            self._all.add(worker)
            self._idle.append(worker)
            self._cond.notify()
        return True

    def close(self) -> None:
        with self._cond:
            self._closed = True
            workers = list(self._all)
            self._all.clear()
            self._idle.clear()
            self._cond.notify_all()
        if os.getpid() != self._owner_pid:
            return  # a forked copy of the pool: the workers are the parent's to stop
        for w in workers:
            try:
                w.close()
            except Exception:
                pass

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ workers

    def _acquire(self) -> Worker:
        with self._cond:
            while True:
                if self._closed:
                    raise SandboxUnavailable(f"the {self.name} sandbox is closed")
                if self._idle:
                    return self._idle.pop()
                if self._live == 0:
                    raise SandboxUnavailable(
                        f"{self.name} sandbox has no working worker ({self.last_error})")
                self._cond.wait()

    def _release(self, worker: Worker) -> None:
        with self._cond:
            if self._closed:
                worker.close()
                return
            self._idle.append(worker)
            self._cond.notify()

    def _replace(self, worker: Worker) -> None:
        """Drop a worker and start a fresh one in the background."""
        with self._cond:
            self._all.discard(worker)
            closed = self._closed
            if closed:
                self._live -= 1
            self.replaced += 1

        def swap() -> None:
            worker.close()
            if not closed:  # the replacement takes the slot and the place in `_live`
                self._try_start(worker.slot, reserved=True)

        threading.Thread(target=swap, daemon=True).start()

    # ------------------------------------------------------------ Sandbox interface

    def run(self, job: Job) -> Verdict:
        try:
            msg = job_message(job, next(self._ids))
        except TestSourceError as e:
            return Verdict(status=SANDBOX_ERROR, backend=self.name, detail=str(e))
        timeout = wall_cap(job.timeout) + HOST_GRACE
        lost = ""
        for _attempt in range(2):  # a worker lost once may be bad luck; twice is the program
            worker = self._acquire()
            try:
                reply = worker.request(msg, timeout)
            except WorkerLost as e:
                lost = str(e)
                self._replace(worker)
                continue
            except BaseException:
                self._replace(worker)  # e.g. KeyboardInterrupt mid-job: state unknown
                raise
            if reply.get("clean"):
                self._release(worker)
            else:
                self.last_error = f"{worker.name} was dirty: {reply.get('reason')}"
                self._replace(worker)
            return self._verdict(reply, worker)
        return Verdict(status=ERROR, backend=self.name,
                       detail=f"the sandbox worker died twice running this program ({lost})")

    def _verdict(self, reply: dict[str, Any], worker: Worker) -> Verdict:
        d = dict(reply.get("verdict") or {})
        d["backend"] = self.name
        extra = dict(d.get("extra") or {})
        extra["worker"] = worker.name
        if not reply.get("clean"):
            extra["worker_replaced"] = str(reply.get("reason", ""))
        d["extra"] = extra
        try:
            return Verdict.from_dict(d)
        except (TypeError, ValueError) as e:
            return Verdict(status=SANDBOX_ERROR, backend=self.name, detail=f"bad verdict: {e}")

    def run_many(
        self,
        jobs: Sequence[Job],
        on_result: Callable[[int, Verdict], None] | None = None,
    ) -> list[Verdict]:
        """Run jobs spread over the workers; `on_result(i, verdict)` is called from worker
        threads as each finishes. Returns verdicts in the order of `jobs`."""
        results: list[Verdict | None] = [None] * len(jobs)

        def one(i: int) -> None:
            v = self.run(jobs[i])
            results[i] = v
            if on_result is not None:
                on_result(i, v)

        with concurrent.futures.ThreadPoolExecutor(self.size) as ex:
            for f in [ex.submit(one, i) for i in range(len(jobs))]:
                f.result()
        return [v for v in results if v is not None]

    def status(self) -> dict[str, Any]:
        with self._cond:
            return {"backend": self.name, "size": self.size, "live": self._live,
                    "idle": len(self._idle), "replaced": self.replaced,
                    "start_seconds": round(self.start_seconds, 3),
                    "features": next(iter(self._all)).features if self._all else {},
                    "last_error": self.last_error}


# ---------------------------------------------------------------- cleanup on exit

_OPEN: weakref.WeakSet[WorkerPool] = weakref.WeakSet()
_HANDLED = False


def _register(pool: WorkerPool) -> None:
    """Close every open pool at interpreter exit and on SIGTERM/SIGHUP (Ctrl-C arrives as
    KeyboardInterrupt and ends in atexit). A hard kill is covered elsewhere: Docker closes
    a container's stdin when our attach socket dies, and process workers have a
    parent-death signal."""
    global _HANDLED
    _OPEN.add(pool)
    if _HANDLED:
        return
    _HANDLED = True
    atexit.register(close_all)
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) == signal.SIG_DFL:
            signal.signal(sig, _on_signal)


def close_all() -> None:
    for pool in list(_OPEN):
        pool.close()


def _forget_in_child() -> None:
    """A forked child must not stop its parent's workers when it exits."""
    _OPEN.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def _on_signal(signum: int, frame: object) -> None:
    close_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
