"""Run one job under the runner's watch: spawn the child, fork the judge, enforce the time
budget, capture output, and turn what happened into a verdict dict.

Timeouts are CPU-aware: the budget `timeout` is CPU seconds of the program's process (polled
from /proc and backed by RLIMIT_CPU), and a wall-clock limit that is a generous multiple of
it catches sleeping, blocking or stopped programs. So a loaded machine slows a correct program
down without turning it into a timeout.

Stdlib only; copied into the image.
"""

from __future__ import annotations

import os
import select
import signal
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from wire import FrameReader, ProtocolError, wall_limit

OUTPUT_KEEP = 64 * 1024  # bytes of stdout/stderr kept per job; the rest is read and dropped
CPU_POLL = 0.05  # seconds between CPU-time checks of the program's process
_CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float | None:
    """CPU time of `pid` and its reaped children, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    if fields[0] == b"Z":
        return None
    return sum(int(x) for x in fields[11:15]) / _CLK_TCK


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
    judge_crashed: bool = False
    cpu: float = 0.0
    wall: float = 0.0
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
            "extra": {"cpu_seconds": round(self.cpu, 3), "exit": exit_desc,
                      "stdout_bytes": self.stdout.total, "stderr_bytes": self.stderr.total},
        }


def _error_line(err: Any) -> str:
    if isinstance(err, list) and len(err) == 3:
        kind, msg, line = err
        where = f" (line {line})" if isinstance(line, int) else ""
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

    def close_in_judge(self) -> None:
        """Close, in the freshly forked judge, the runner descriptors it must not hold."""


class Supervisor:
    """Watches one job from spawn to verdict."""

    def __init__(self, job: Mapping[str, Any], host: JobHost) -> None:
        self.job = job
        self.host = host
        self.timeout = float(job["timeout"])
        self.out = Outcome(steps=list(job["steps"]))
        self._judge_exited = False

    def run(self) -> Outcome:
        start = time.monotonic()
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        notice_r, notice_w = os.pipe()
        report_r, report_w = os.pipe()
        try:
            child = self.host.spawn([req_r, rep_w, out_w, err_w])
        except OSError as e:
            self.out.setup_failed = str(e)
            for fd in (req_r, req_w, rep_r, rep_w, out_r, out_w, err_r, err_w, notice_r,
                       notice_w, report_r, report_w):
                os.close(fd)
            return self.out
        for fd in (req_r, rep_w, out_w, err_w):
            os.close(fd)
        judge = os.fork()
        if judge == 0:
            self._judge_process([req_w, rep_r, notice_r, report_w],
                                [out_r, err_r, notice_w, report_r])
        for fd in (req_w, rep_r, notice_r, report_w):
            os.close(fd)
        try:
            self._watch(child, judge, start, report_r, out_r, err_r, notice_w)
        finally:
            self._finish(child, judge, out_r, err_r)
            for fd in (out_r, err_r, notice_w, report_r):
                os.close(fd)
            self.out.wall = time.monotonic() - start
        return self.out

    def _judge_process(self, keep: list[int], close: list[int]) -> None:
        code = 0
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in close:
                os.close(fd)
            self.host.close_in_judge()
            from judge import judge_main

            judge_main(keep, self.job)
        except BaseException:
            traceback.print_exc()
            code = 1
        os._exit(code)

    def _watch(self, child: int, judge: int, start: float, report_r: int, out_r: int,
               err_r: int, notice_w: int) -> None:
        wall_deadline = start + wall_limit(self.timeout)
        reader = FrameReader()
        streams = {out_r: self.out.stdout, err_r: self.out.stderr}
        open_fds = [report_r, out_r, err_r]
        next_cpu = time.monotonic() + CPU_POLL
        child_alive = True
        while True:
            now = time.monotonic()
            wait = max(0.0, min(next_cpu, wall_deadline) - now)
            ready, _, _ = select.select(open_fds + self.host.wait_fds(), [], [], wait)
            for fd in ready:
                if fd in streams:
                    data = os.read(fd, 1 << 16)
                    if data:
                        streams[fd].feed(data)
                    else:
                        open_fds.remove(fd)
                elif fd == report_r:
                    data = os.read(fd, 1 << 16)
                    if not data:
                        open_fds.remove(fd)
                        self.out.judge_crashed = not self.out.done
                        continue
                    reader.feed(data)
                    try:
                        for msg in reader.frames():
                            self._on_report(msg)
                    except ProtocolError:
                        self.out.judge_crashed = True
            exits = self.host.poll_exits()
            if child in exits and child_alive:
                child_alive = False
                self._child_exited(*exits[child])
                status = exits[child][0]
                why = describe_status(status)
                xcpu = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU
                if xcpu or self.out.cpu > self.timeout:
                    self._time_out(f"CPU time limit of {self.timeout:g} s exceeded")
                    return
                try:
                    os.write(notice_w, f"the program {why}".encode())
                except OSError:
                    pass
            if judge in exits:
                self._judge_exited = True
            if judge in exits and report_r in open_fds:
                self._drain_reports(report_r, reader)
                return
            if self.out.done or report_r not in open_fds:
                return
            now = time.monotonic()
            if now >= next_cpu and child_alive:
                cpu = cpu_seconds(child)
                if cpu is not None:
                    self.out.cpu = cpu
                    if cpu > self.timeout:
                        self._time_out(f"CPU time limit of {self.timeout:g} s exceeded")
                        return
                next_cpu = now + CPU_POLL
            if now >= wall_deadline:
                self._time_out(f"wall-clock limit of {wall_limit(self.timeout):g} s exceeded "
                               f"(CPU budget {self.timeout:g} s)")
                return

    def _drain_reports(self, report_r: int, reader: FrameReader) -> None:
        """The judge exited: whatever it wrote before is still in the pipe."""
        while select.select([report_r], [], [], 0)[0]:
            data = os.read(report_r, 1 << 16)
            if not data:
                break
            reader.feed(data)
        try:
            for msg in reader.frames():
                self._on_report(msg)
        except ProtocolError:
            pass
        self.out.judge_crashed = not self.out.done

    def _child_exited(self, status: int, cpu: float | None) -> None:
        self.out.child_status = status
        if cpu is not None:
            self.out.cpu = cpu

    def _time_out(self, why: str) -> None:
        self.out.timed_out = why

    def _on_report(self, msg: Any) -> None:
        if not isinstance(msg, dict):
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

    def _finish(self, child: int, judge: int, out_r: int, err_r: int) -> None:
        """Kill the program and the judge, wait for both, drain the last output."""
        if self.out.child_status is None:
            self.out.killed_at_end = True
        self.host.kill_child(child)
        try:
            os.kill(judge, signal.SIGKILL)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 3.0
        need_child = self.out.child_status is None
        need_judge = not self._judge_exited
        while (need_child or need_judge) and time.monotonic() < deadline:
            select.select(self.host.wait_fds(), [], [], 0.05)
            exits = self.host.poll_exits()
            if child in exits and need_child:
                self._child_exited(*exits[child])
                need_child = False
            if judge in exits:
                need_judge = False
        drain_until = time.monotonic() + 0.2
        fds = [out_r, err_r]
        streams = {out_r: self.out.stdout, err_r: self.out.stderr}
        while fds and time.monotonic() < drain_until:
            ready, _, _ = select.select(fds, [], [], max(0.0, drain_until - time.monotonic()))
            for fd in ready:
                data = os.read(fd, 1 << 16)
                if data:
                    streams[fd].feed(data)
                else:
                    fds.remove(fd)
