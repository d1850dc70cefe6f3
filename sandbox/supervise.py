"""Run one job under the runner's watch: spawn the child, hand the job to the judge, enforce
the time budget, capture output, and turn what happened into a verdict dict.

Timeouts are CPU-aware: the budget `timeout` is CPU seconds of the program, all its processes
together (polled from /proc: the program's process, the children it reaped and every live
descendant, so a program that forks spends one budget, not one per process; backed by
RLIMIT_CPU per process), and a wall-clock limit that is a generous multiple of
it catches sleeping, blocking or stopped programs. The wall clock leaves out the time the
program and the judge spent runnable but waiting for a CPU (their schedstat run delay): on a
loaded machine (other jobs; a Docker cgroup that gets one share against every process
outside it) a correct program may wait for a CPU far longer than it computes, and that must
not make it a timeout. A cap of many times the limit bounds even that.

Stdlib only; copied into the image.
"""

from __future__ import annotations

import os
import select
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from confine import children_by_parent
from wire import wall_cap, wall_limit

OUTPUT_KEEP = 64 * 1024  # bytes of stdout/stderr kept per job; the rest is read and dropped
CPU_POLL = 0.05  # seconds between CPU-time checks of the program's processes
TREE_MAX = 4096  # descendants read per check at most (a slot's pids limit is far below)
_CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat_ticks(pid: int, *, zombie: bool) -> int | None:
    """CPU time of `pid` and its reaped children in clock ticks (whole numbers, so that sums
    over a tree compare exactly with a budget: 1.00 s is not "over 1 s"); None when it is
    gone (or a zombie, unless `zombie`: an exited descendant nobody reaped has still spent
    its time)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    if fields[0] == b"Z" and not zombie:
        return None
    return sum(int(x) for x in fields[11:15])


def cpu_seconds(pid: int) -> float | None:
    """CPU time of `pid` and its reaped children, or None when it is gone."""
    ticks = _stat_ticks(pid, zombie=False)
    return None if ticks is None else ticks / _CLK_TCK


# Whether this kernel lists each thread's children in /proc (CONFIG_PROC_CHILDREN): some do
# not (a Firecracker VM's 6.18 kernel, for one), and there a program's descendants are found
# from every process's parent instead (`confine.children_by_parent`).
_PROC_CHILDREN = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


def _children(pid: int) -> list[int]:
    """Live children of every thread of `pid` (empty when it is gone)."""
    kids: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                kids.extend(int(x) for x in f.read().split())
        except (OSError, ValueError):
            pass
    return kids


def tree_cpu_seconds(pid: int) -> float | None:
    """CPU time of `pid`, the children it reaped and every descendant still in its tree
    (zombies included), or None when `pid` is gone. A descendant is counted by itself until
    it is reaped and by its parent after, never twice; an orphan that left the tree (its
    parent exited first) stops counting, which the wall-clock limit still bounds."""
    total = _stat_ticks(pid, zombie=False)
    if total is None:
        return None
    index = None if _PROC_CHILDREN else children_by_parent()
    children = _children if index is None else (lambda p: index.get(p, []))
    seen = {pid}
    todo = children(pid)
    while todo and len(seen) < TREE_MAX:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        total += _stat_ticks(p, zombie=True) or 0
        todo.extend(children(p))
    return total / _CLK_TCK


def run_delay_seconds(pid: int) -> float | None:
    """Seconds `pid` has spent runnable but waiting for a CPU (also while its cgroup was
    throttled), or None when it is gone or the kernel does not keep scheduler statistics."""
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


class RunDelay:
    """Run delay accumulated since the job started by the processes that do its work."""

    def __init__(self, pids: list[int]) -> None:
        self.start = {pid: run_delay_seconds(pid) or 0.0 for pid in pids}
        self.last = dict.fromkeys(pids, 0.0)

    def seconds(self) -> float:
        for pid, base in self.start.items():
            now = run_delay_seconds(pid)
            if now is not None:  # a process that is gone keeps its last reading
                self.last[pid] = max(0.0, now - base)
        return sum(self.last.values())


def _pump(fd: int, streams: Mapping[int, Capture], open_fds: list[int]) -> None:
    """Read what `fd` has into its capture; at its end, stop watching it."""
    data = os.read(fd, 1 << 16)
    if data:
        streams[fd].feed(data)
    else:
        open_fds.remove(fd)


def describe_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        return f"killed by {name}"
    return f"exited with code {os.waitstatus_to_exitcode(status)}"


class Capture:
    """Keeps the first OUTPUT_KEEP bytes of a stream and counts the rest."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = OUTPUT_KEEP - len(self.kept)
        if room > 0:
            self.kept += data[:room]

    def text(self) -> str:
        s = self.kept.decode("utf-8", "replace")
        if self.total > len(self.kept):
            s += f"\n[... {self.total - len(self.kept)} more bytes not kept]"
        return s


@dataclass
class Outcome:
    """What the supervisor observed; `verdict()` turns it into the contract's shape."""

    steps: list[dict[str, Any]]
    compiled: dict[str, Any] | None = None
    loaded: dict[str, Any] | None = None
    records: dict[int, dict[str, Any]] = field(default_factory=dict)
    done: bool = False
    gone: str = ""  # the child died / quit before loading finished
    setup_failed: str = ""
    timed_out: str = ""
    child_status: int | None = None
    killed_at_end: bool = False  # the program was alive when the job ended: we killed it
    calls: int = 0  # calls the tests made into the program
    judge_crashed: bool = False
    cpu: float = 0.0
    wall: float = 0.0
    waited: float = 0.0  # seconds the program and the judge were runnable but had no CPU
    stdout: Capture = field(default_factory=Capture)
    stderr: Capture = field(default_factory=Capture)

    def verdict(self) -> dict[str, Any]:
        cases = [s for s in self.steps if s["kind"] == "case"]
        # How the program's process ended, when it ended on its own before the tests were
        # over (at the end of a job we kill it, which says nothing about the program).
        exit_desc = ""
        if self.child_status is not None and not self.killed_at_end:
            exit_desc = describe_status(self.child_status)
        status, detail, syntax_ok, runnable = "failed", "", False, False
        fill = ("error", "not run")
        if self.timed_out:
            fill = ("timeout", f"not run: {self.timed_out}")
        if self.setup_failed:
            status, detail = "sandbox_error", f"sandbox setup failed: {self.setup_failed}"
        elif self.compiled is None:
            status = "timeout" if self.timed_out else "sandbox_error"
            detail = self.timed_out or self.gone or "the sandbox lost the job before it started"
        elif not self.compiled.get("ok"):
            status, detail = "syntax_error", _error_line(self.compiled.get("error"))
            fill = ("error", "not run: the program does not compile")
        else:
            syntax_ok = True
            if self.loaded is None:
                status = "timeout" if self.timed_out else "error"
                detail = self.timed_out or f"the program quit while loading ({self.gone or exit_desc})"
                fill = fill if self.timed_out else ("error", f"not run: {detail}")
            elif not self.loaded.get("ok"):
                status, detail = "error", _error_line(self.loaded.get("error"))
                fill = ("error", f"not run: the program raised at import: {detail}")
            else:
                runnable = True
                if not self.timed_out and not self.done:
                    why = exit_desc and f"the program {exit_desc}"
                    fill = ("error", f"not run: the test process died ({why or 'unknown'})")
        tests = []
        for i, step in enumerate(cases):
            rec = self.records.get(i) or {"status": fill[0], "message": fill[1],
                                         "error_type": "NotRun", "duration": 0.0}
            tests.append({"index": i, "source": step["source"], "status": rec["status"],
                          "message": str(rec.get("message", "")),
                          "error_type": str(rec.get("error_type", "")),
                          "duration": float(rec.get("duration", 0.0))})
        if runnable:
            if self.timed_out:
                status, detail = "timeout", self.timed_out
            elif not tests:
                status, detail = "no_tests", "the tests contain no test case"
            elif all(t["status"] == "passed" for t in tests):
                status = "passed"
            else:
                status = "failed"
                died = next((t["message"] for t in tests if t["error_type"] == "ProgramDied"), "")
                detail = died and f"the program died during the tests: {died}"
        return {
            "status": status,
            "tests": tests,
            "syntax_ok": syntax_ok,
            "runnable": runnable,
            "duration": round(self.wall, 6),
            "stdout": self.stdout.text(),
            "stderr": self.stderr.text(),
            "detail": detail,
            "extra": {"cpu_seconds": round(self.cpu, 3), "cpu_wait_seconds": round(self.waited, 3),
                      "exit": exit_desc, "calls": self.calls,
                      "stdout_bytes": self.stdout.total, "stderr_bytes": self.stderr.total},
        }


def _error_line(err: Any) -> str:
    if isinstance(err, list) and len(err) == 3:
        kind, msg, line = err
        where = f" (line {line})" if isinstance(line, int) and f"line {line}" not in str(msg) else ""
        return f"{kind}: {msg}{where}"
    return "unknown error"


class JobHost(Protocol):
    """What the supervisor needs from the runner around it."""

    def spawn(self, fds: list[int]) -> int:
        """Start the job's child through the zygote with these four fds; return its pid."""

    def wait_fds(self) -> list[int]:
        """Descriptors that become readable when a process may have exited."""

    def poll_exits(self) -> dict[int, tuple[int, float | None]]:
        """{pid: (wait status, CPU seconds or None)} for processes that exited since last time."""

    def kill_child(self, pid: int) -> None:
        """End the program and everything it started."""

    def judge_submit(self, job: Mapping[str, Any], fds: list[int]) -> int:
        """Hand the job and the child's request/reply pipe ends to the judge; return the fd
        on which its reports arrive."""

    def judge_read(self) -> list[Any] | None:
        """Reports the judge sent so far (after its fd was readable); None when it died."""

    def judge_notice(self, job_id: Any, why: str) -> None:
        """Tell the judge that the program's process is gone, and why."""

    def judge_kill(self) -> None:
        """Kill the judge (it is replaced before the next job)."""

    @property
    def judge_pid(self) -> int:
        """The judge's pid (-1 when none runs)."""


class Supervisor:
    """Watches one job from spawn to verdict."""

    def __init__(self, job: Mapping[str, Any], host: JobHost) -> None:
        self.job = job
        self.host = host
        self.timeout = float(job["timeout"])
        self.out = Outcome(steps=list(job["steps"]))

    def run(self) -> Outcome:
        start = time.monotonic()
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            child = self.host.spawn([req_r, rep_w, out_w, err_w])
        except OSError as e:
            self.out.setup_failed = str(e)
            for fd in (req_r, req_w, rep_r, rep_w, out_r, out_w, err_r, err_w):
                os.close(fd)
            return self.out
        for fd in (req_r, rep_w, out_w, err_w):
            os.close(fd)
        try:
            try:
                link = self.host.judge_submit(self.job, [req_w, rep_r])
            finally:
                os.close(req_w)
                os.close(rep_r)
            self._watch(child, start, link, out_r, err_r)
        finally:
            self._finish(child, out_r, err_r)
            os.close(out_r)
            os.close(err_r)
            self.out.wall = time.monotonic() - start
        return self.out

    def _watch(self, child: int, start: float, link: int, out_r: int, err_r: int) -> None:
        # The child's run delay counts from its birth (it is new); the judge's from now.
        delay = RunDelay([child, self.host.judge_pid])
        delay.start[child] = 0.0
        cap = start + wall_cap(self.timeout)

        def deadline() -> float:
            return min(cap, start + wall_limit(self.timeout) + self.out.waited)

        streams = {out_r: self.out.stdout, err_r: self.out.stderr}
        open_fds = [link, out_r, err_r]
        next_cpu = time.monotonic() + CPU_POLL
        child_alive = True
        while True:
            now = time.monotonic()
            wait = max(0.0, min(next_cpu, deadline()) - now)
            ready, _, _ = select.select(open_fds + self.host.wait_fds(), [], [], wait)
            for fd in ready:
                if fd in streams:
                    _pump(fd, streams, open_fds)
                elif fd == link:
                    reports = self.host.judge_read()
                    if reports is None:  # the judge died (killed by the program?)
                        self.out.judge_crashed = True
                        return
                    for msg in reports:
                        self._on_report(msg)
            if self.out.done:
                return
            exits = self.host.poll_exits()
            if child in exits and child_alive:
                child_alive = False
                self._child_exited(*exits[child])
                status = exits[child][0]
                xcpu = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU
                if xcpu or self.out.cpu > self.timeout:
                    self._time_out(f"CPU time limit of {self.timeout:g} s exceeded")
                    return
                self.host.judge_notice(self.job.get("id"), f"the program {describe_status(status)}")
            now = time.monotonic()
            if now >= next_cpu or now >= deadline():
                if child_alive:
                    cpu = tree_cpu_seconds(child)
                    if cpu is not None:
                        self.out.cpu = cpu
                        if cpu > self.timeout:
                            self._time_out(f"CPU time limit of {self.timeout:g} s exceeded")
                            return
                self.out.waited = delay.seconds()
                next_cpu = now + CPU_POLL
            if now >= deadline():
                why = (f"wall-clock cap of {wall_cap(self.timeout):g} s reached" if now >= cap else
                       f"wall-clock limit of {wall_limit(self.timeout):g} s exceeded")
                self._time_out(f"{why} (CPU budget {self.timeout:g} s; "
                               f"{self.out.waited:.1f} s more spent waiting for a CPU)")
                return

    def _child_exited(self, status: int, cpu: float | None) -> None:
        self.out.child_status = status
        if cpu is not None:  # its own and its reaped children's (the tree's last reading may
            # be more)
            self.out.cpu = max(self.out.cpu, cpu)

    def _time_out(self, why: str) -> None:
        self.out.timed_out = why
        self.host.judge_kill()  # it may be stuck in a call or in the tests themselves

    def _on_report(self, msg: Any) -> None:
        if not isinstance(msg, dict) or msg.get("id") != self.job.get("id"):
            return
        op = msg.get("op")
        if op == "compiled":
            self.out.compiled = msg
        elif op == "loaded":
            self.out.loaded = msg
        elif op == "record":
            self.out.records[int(msg["index"])] = msg
        elif op == "gone":
            self.out.gone = str(msg.get("why", ""))
        elif op == "setup_failed":
            self.out.setup_failed = str(msg.get("error", ""))
        elif op == "done":
            self.out.done = True
            self.out.calls = int(msg.get("calls", 0))

    def _finish(self, child: int, out_r: int, err_r: int) -> None:
        """Kill the program, wait for it, drain the last output."""
        if self.out.child_status is None:
            self.out.killed_at_end = True
        self.host.kill_child(child)
        deadline = time.monotonic() + 3.0
        while self.out.child_status is None and time.monotonic() < deadline:
            select.select(self.host.wait_fds(), [], [], 0.05)
            exits = self.host.poll_exits()
            if child in exits:
                self._child_exited(*exits[child])
        drain_until = time.monotonic() + 0.2
        fds = [out_r, err_r]
        streams = {out_r: self.out.stdout, err_r: self.out.stderr}
        while fds and time.monotonic() < drain_until:
            ready, _, _ = select.select(fds, [], [], max(0.0, drain_until - time.monotonic()))
            for fd in ready:
                _pump(fd, streams, fds)
