"""A pool of warm runner workers behind the `Sandbox` interface, shared by both backends.

A worker that dies, hangs or reports itself dirty after a job is replaced (in the
background), so the pool never hands out a worker with leftovers of a previous job.

An infrastructure failure is never a verdict. A job whose worker was lost (its container
killed, its process gone, the Docker daemon stopped) runs again on a fresh worker, up to
MAX_ATTEMPTS times (each re-run counted in `infra_retries`). A replacement that cannot start
(the daemon is down) is retried with backoff for up to `recovery_s` seconds while jobs wait
for a worker; once the backend answers again the pool refills and the jobs go on. Only when
it does not come back within that time does the pool raise `SandboxUnavailable`, one line
naming what is down, and the run stops (keeping what it scored; a rerun resumes). A job that
loses every worker it is given while the backend is healthy is the program's doing (it
kills its sandbox): that one is an `error` verdict, as before.
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
# How long a pool waits for its backend to come back (a Docker daemon restarting takes
# seconds; a host reboot is longer than a run should hang). COOPCODE_SANDBOX_RECOVERY_S
# overrides it.
RECOVERY_S = 120.0
MAX_ATTEMPTS = 4  # runs of one job on fresh workers before a healthy backend blames the program
BACKOFF_S = (0.5, 1.0, 2.0, 4.0)  # between attempts to start a replacement (then the last)


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
        "test_imports": list(split.imports),
        "test_names": [n for n in split.bound if n != entry],
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
        self.infra_retries = 0  # jobs re-run because their worker was lost
        self.recovery_s = float(os.environ.get("COOPCODE_SANDBOX_RECOVERY_S", RECOVERY_S))
        self._down_since: float | None = None  # replacements have failed to start since
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
        if self._start_reserved(slot):
            return True
        with self._cond:
            self._live -= 1
            self._cond.notify_all()
        return False

    def _start_reserved(self, slot: int) -> bool:
        """Start a worker into a slot `_live` already counts (False: not started; the slot
        stays counted for the caller to retry or give up)."""
        try:
            worker = self._start_worker(slot)
        except Exception as e:
            self.last_error = str(e).splitlines()[0] if str(e) else type(e).__name__
            return False
        with self._cond:
            closed = self._closed
            if not closed:
                self._all.add(worker)
                self._idle.append(worker)
                self._down_since = None
                self._cond.notify()
        if closed:
            _quietly(worker.close)
        return not closed

    def _restart(self, slot: int) -> None:
        """Start a replacement into a reserved slot, retrying with backoff while the backend
        is down, for up to `recovery_s` since starts began to fail; then give the slot up."""
        for attempt in itertools.count():
            with self._cond:
                if self._closed:
                    self._live -= 1
                    self._cond.notify_all()
                    return
            if self._start_reserved(slot):
                return
            with self._cond:
                now = time.monotonic()
                if self._down_since is None:
                    self._down_since = now
                if now - self._down_since > self.recovery_s:
                    self._live -= 1
                    self._cond.notify_all()  # jobs waiting for a worker see the slot gone
                    return
                self._cond.wait(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)])

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
            _quietly(w.close)

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
                    raise SandboxUnavailable(self.down_message())
                self._cond.wait()

    def down_message(self) -> str:
        """One line: the backend cannot start workers (what is down, what to do)."""
        waited = f" for {self.recovery_s:.0f} s" if self._down_since is not None else ""
        return (f"the {self.name} sandbox could not start a worker{waited} ({self.last_error}): "
                "what was scored is kept; rerun to resume once it works again")

    def healthy(self) -> bool:
        """Whether the backend itself answers (a lost worker was then the program's doing)."""
        return True

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
            _quietly(worker.close)  # the backend may be down: closing then fails, harmlessly
            if not closed:  # the replacement takes the slot and the place in `_live`
                self._restart(worker.slot)

        threading.Thread(target=swap, daemon=True).start()

    # ------------------------------------------------------------ Sandbox interface

    def run(self, job: Job) -> Verdict:
        try:
            msg = job_message(job, next(self._ids))
        except TestSourceError as e:
            return Verdict(status=SANDBOX_ERROR, backend=self.name, detail=str(e))
        timeout = wall_cap(job.timeout) + HOST_GRACE
        lost = ""
        for attempt in range(MAX_ATTEMPTS):
            if attempt:
                with self._cond:
                    self.infra_retries += 1
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
        if not self.healthy():
            raise SandboxUnavailable(self.down_message())
        return Verdict(status=ERROR, backend=self.name,
                       detail=f"the sandbox worker died {MAX_ATTEMPTS} times running this "
                              f"program ({lost})")

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

        ex = concurrent.futures.ThreadPoolExecutor(self.size)
        try:
            for f in [ex.submit(one, i) for i in range(len(jobs))]:
                f.result()
        except BaseException:
            # Ctrl-C, or the backend gone for good: leave at once; what still waits for a
            # worker ends when the pool is closed (on the way out).
            ex.shutdown(wait=False, cancel_futures=True)
            raise
        ex.shutdown(wait=True)
        return [v for v in results if v is not None]

    def status(self) -> dict[str, Any]:
        with self._cond:
            return {"backend": self.name, "size": self.size, "live": self._live,
                    "idle": len(self._idle), "replaced": self.replaced,
                    "infra_retries": self.infra_retries,
                    "start_seconds": round(self.start_seconds, 3),
                    "features": next(iter(self._all)).features if self._all else {},
                    "last_error": self.last_error}


def _quietly(fn: Callable[[], None]) -> None:
    try:
        fn()
    except Exception:
        pass


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
