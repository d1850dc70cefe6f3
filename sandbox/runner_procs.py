"""The runner's two helper processes, seen from the runner: the zygote that forks each job's
child (zygote.py) and the long-lived judge that evaluates the tests (judge.py).

Stdlib only; copied into the image.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from typing import Any

from wire import FrameReader, ProtocolError, pack_frame

HERE = os.path.dirname(os.path.abspath(__file__))
# The zygote's environment, and the program's (plus HOME, its work dir): a locale, a PATH,
# nothing of the host's.
SPAWN_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


class ZygoteDied(OSError):
    """The zygote is gone (in Docker a program can kill it: same uid); the job cannot start
    and the runner starts a fresh one."""


class ZygoteClient:
    def __init__(self, pid_namespaces: bool, cgroup_procs: list[str]) -> None:
        self.pid_namespaces = pid_namespaces
        self.cgroup_procs = cgroup_procs
        self.pid = -1
        self.sock: socket.socket | None = None
        self.exits: dict[int, tuple[int, float | None]] = {}

    def start(self) -> None:
        """Fresh exec, so the zygote's memory never held a job (see zygote.py)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        theirs.set_inheritable(True)
        cfg = {"fd": theirs.fileno(), "pid_ns": self.pid_namespaces,
               "cgroup_procs": self.cgroup_procs}
        argv = [sys.executable, "-I", "-B", "-S", os.path.join(HERE, "runner.py"),
                "--zygote", json.dumps(cfg)]
        actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                   (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]
        self.pid = os.posix_spawn(sys.executable, argv, SPAWN_ENV, file_actions=actions)
        theirs.close()
        self.sock = ours
        msg = self._recv(60.0)
        if msg is None or msg.get("op") != "ready":
            raise ZygoteDied(f"zygote did not start: {msg}")

    @property
    def alive(self) -> bool:
        return self.sock is not None

    def forget(self) -> None:
        if self.sock is not None:
            self.sock.close()
        self.sock = None

    def _recv(self, timeout: float) -> dict[str, Any] | None:
        if self.sock is None:
            raise ZygoteDied("zygote is gone")
        if not select.select([self.sock], [], [], timeout)[0]:
            return None
        try:
            data = self.sock.recv(1 << 16)
        except OSError:  # reset: it died with our last message unread
            data = b""
        if not data:
            self.forget()
            raise ZygoteDied("zygote closed its socket")
        msg: dict[str, Any] = json.loads(data)
        if msg.get("op") == "exited":
            self.exits[int(msg["pid"])] = (int(msg["status"]), float(msg["cpu"]))
        return msg

    def spawn(self, params: dict[str, Any], fds: list[int]) -> int:
        if self.sock is None:
            raise ZygoteDied("zygote is gone")
        socket.send_fds(self.sock, [json.dumps({"op": "spawn", "params": params}).encode()], fds)
        while True:
            msg = self._recv(30.0)
            if msg is None:
                raise ZygoteDied("zygote did not answer a spawn request")
            if msg["op"] == "spawned":
                return int(msg["pid"])
            if msg["op"] == "spawn_failed":
                raise OSError(f"could not start the job: {msg.get('error')}")

    def poll(self) -> dict[int, tuple[int, float | None]]:
        try:
            while self.sock is not None and self._recv(0.0) is not None:
                pass
        except ZygoteDied:
            pass
        exits, self.exits = self.exits, {}
        return exits

    def kill(self, pid: int) -> bool:
        """Ask the zygote to kill its job `pid` (False: the zygote is gone). Only the parent
        can do it safely: until it reaps the job, the pid cannot belong to anyone else."""
        if self.sock is None:
            return False
        try:
            self.sock.send(json.dumps({"op": "kill", "pid": pid}).encode())
        except OSError:
            self.forget()
            return False
        return True

    def sweep(self) -> int:
        if self.sock is None:
            return 0
        self.sock.send(json.dumps({"op": "sweep"}).encode())
        while True:
            msg = self._recv(10.0)
            if msg is None:
                return -1
            if msg["op"] == "swept":
                return int(msg["left"])


class JudgeClient:
    """The long-lived judge process (judge.py), forked from the runner: trusted, so it may
    share our memory; separate, so a test that hangs or a program that kills it costs us
    nothing but a re-fork. Jobs go out on a stream socket, the child's pipe ends on a
    SOCK_SEQPACKET beside it (kept apart so descriptors never ride inside a frame)."""

    RECYCLE_AFTER = 1000  # jobs; bounds whatever state test code leaves in the judge

    def __init__(self, prepare_child: Callable[[], None]) -> None:
        self._prepare_child = prepare_child
        self.pid = -1
        self.link: socket.socket | None = None
        self._fds: socket.socket | None = None
        self._reader = FrameReader()
        self._jobs = 0

    @property
    def alive(self) -> bool:
        return self.link is not None

    def start(self) -> None:
        link, their_link = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        fds, their_fds = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                link.close()
                fds.close()
                self._prepare_child()
                from judge import judge_main

                judge_main(their_link, their_fds)
            except BaseException:
                traceback.print_exc()
                code = 1
            os._exit(code)
        their_link.close()
        their_fds.close()
        self.pid, self.link, self._fds = pid, link, fds
        self._reader = FrameReader()
        self._jobs = 0

    def submit(self, job: dict[str, Any], fds: list[int]) -> int:
        if self.link is None or self._jobs >= self.RECYCLE_AFTER:
            self.kill()
            self.start()
        assert self.link is not None and self._fds is not None
        self._jobs += 1
        socket.send_fds(self._fds, [b"fds"], fds)
        self.link.sendall(pack_frame(job))
        return self.link.fileno()

    def read(self) -> list[Any] | None:
        if self.link is None:
            return None
        try:
            data = self.link.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            self.forget()
            return None
        self._reader.feed(data)
        try:
            return list(self._reader.frames())
        except ProtocolError:
            self.kill()
            return None

    def notice(self, job_id: Any, why: str) -> None:
        if self.link is not None:
            try:
                self.link.sendall(pack_frame({"op": "notice", "id": job_id, "why": why}))
            except OSError:
                pass

    def kill(self) -> None:
        if self.pid > 0:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)  # reaped now, or it would look like a stray process
            except (ProcessLookupError, ChildProcessError):
                pass
        self.forget()

    def forget(self) -> None:
        for sock in (self.link, self._fds):
            if sock is not None:
                sock.close()
        self.link = self._fds = None
        self.pid = -1  # never signal a pid that may have been reused
