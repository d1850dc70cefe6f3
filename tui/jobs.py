"""Long jobs (train, bench) as child processes that stream JSONL events.

The child writes its events to a file, not a pipe: the TUI tails the file, so it can
*detach* (quit while the run goes on) without the child dying of a broken pipe, and a crash
in the child never takes the interface down. The child gets its own session (process group)
so a terminal hang-up on quit does not reach it, and so Stop can signal it and anything it
spawned.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from coopcode import Event, Log, cache_dir, parse_event


def jobs_dir() -> Path:
    """Where the TUI keeps the event and stderr files of the jobs it starts."""
    return cache_dir() / "tui" / "jobs"


def coopcode_argv(*args: str) -> list[str]:
    """Run the coopcode CLI with this interpreter (the venv's), whatever PATH says."""
    return [sys.executable, "-m", "coopcode", *args]


class ChildJob:
    """One child process: start it, read its events as they come, stop or detach it."""

    def __init__(self, name: str, argv: Sequence[str], *, cwd: Path | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.name = name
        self.argv = list(argv)
        self.cwd = cwd
        self.env = env
        stamp = time.strftime("%Y%m%d-%H%M%S")
        folder = jobs_dir()
        folder.mkdir(parents=True, exist_ok=True)
        self.events_path = folder / f"{name}-{stamp}-{os.getpid()}.jsonl"
        self.stderr_path = self.events_path.with_suffix(".stderr")
        self.proc: subprocess.Popen[bytes] | None = None
        self.detached = False
        self._stopping = False

    def start(self) -> None:
        env = dict(self.env if self.env is not None else os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        env["COOPCODE_DEFAULT_SIGINT"] = "1"  # Stop's SIGINT must reach it (see coopcode.cli)
        with open(self.events_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                self.argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=self.cwd,
                env=env, start_new_session=True,
            )

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.proc.poll() if self.proc else None

    def follow(self, on_event: Callable[[Event], None], *, poll: float = 0.05) -> int:
        """Call `on_event` for each event until the child exits; return its exit code.

        Runs on a worker thread. Lines that are not events (a stray print) become Log events.
        """
        assert self.proc is not None, "start() first"
        with open(self.events_path, encoding="utf-8", errors="replace") as src:
            pending = ""
            while True:
                chunk = src.readline()
                if chunk:
                    pending += chunk
                    if not pending.endswith("\n"):
                        continue  # the child is mid-write: wait for the rest of the line
                    line, pending = pending.strip(), ""
                    if line:
                        on_event(_to_event(line))
                    continue
                if self.detached:
                    return -1
                if self.proc.poll() is not None:
                    rest = src.read()
                    for line in (pending + rest).splitlines():
                        if line.strip():
                            on_event(_to_event(line.strip()))
                    return self.proc.returncode
                time.sleep(poll)

    def stderr_tail(self, lines: int = 5) -> str:
        try:
            text = self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])

    def stop(self, grace: float = 15.0) -> None:
        """Ask the child to stop (SIGINT: runs save and resume), then insist.

        Signals go to the child's own process group only (it is a session leader we created).
        """
        if not self.running or self.proc is None:
            return
        self._stopping = True
        for sig, wait in ((signal.SIGINT, grace), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue

    @property
    def stopping(self) -> bool:
        return self._stopping

    def detach(self) -> None:
        """Stop following; the child keeps running and keeps writing its event file."""
        self.detached = True


def _to_event(line: str) -> Event:
    try:
        return parse_event(line)
    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
        return Log(message=line)


def describe_exit(job: ChildJob, code: int | None) -> str:
    """One line saying how a child ended (with its last stderr line on failure)."""
    if code == 0:
        return f"{job.name} finished"
    if job.stopping or code in (130, -signal.SIGINT):
        return f"{job.name} stopped"
    tail = job.stderr_tail(1)
    return f"{job.name} failed (exit {code})" + (f": {tail}" if tail else "")


def summarize_argv(argv: Sequence[str]) -> str:
    """The command as a user would type it (for the log)."""
    args: list[Any] = list(argv)
    if len(args) > 2 and args[1] == "-m":
        args = ["coopcode", *args[3:]]
    return " ".join(str(a) for a in args)
