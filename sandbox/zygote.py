"""The zygote: a clean, pre-warmed process that forks one child per job.

The runner starts it with a fresh exec before it sees any job, and it only ever receives
spawn parameters and four pipe descriptors, never a program or a test. A job's child is
therefore forked from memory that holds no tests (the program cannot dig expected values out
of its heap) and no other program, and it starts with the common stdlib already imported,
which is most of why a job costs milliseconds.

Protocol (SOCK_SEQPACKET, one JSON object per message):
  runner -> zygote  {"op": "spawn", "params": {...}} + 4 fds (req_r, rep_w, out_w, err_w)
                    {"op": "sweep"}       kill every leftover descendant (no-namespace mode)
  zygote -> runner  {"op": "ready", "pid": P}, {"op": "spawned", "pid": P} or
                    {"op": "spawn_failed", "error": E},
                    {"op": "exited", "pid": P, "status": S, "cpu": CPU seconds},
                    {"op": "swept", "left": N}

Stdlib only; copied into the image.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import socket
import time
from typing import Any, NoReturn

import confine
import pyenv

# Modules HumanEval/MBPP-style solutions commonly import, loaded once here so that each
# forked child has them for free.
PRELOAD = (
    "abc array bisect cmath collections collections.abc copy dataclasses datetime decimal "
    "enum fractions functools hashlib heapq itertools json math numbers operator random re "
    "statistics string textwrap typing unicodedata"
).split()

MAX_MESSAGE = 1 << 16


def send(sock: socket.socket, msg: dict[str, Any]) -> None:
    sock.send(json.dumps(msg).encode())


class Zygote:
    def __init__(self, ctl_fd: int, pid_namespaces: bool) -> None:
        self.ctl = socket.socket(fileno=ctl_fd)
        self.jobs: set[int] = set()
        self.own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY) if pid_namespaces else -1
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        os.set_blocking(self.wake_r, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)

    def loop(self) -> NoReturn:
        send(self.ctl, {"op": "ready", "pid": os.getpid()})
        while True:
            ready, _, _ = select.select([self.ctl.fileno(), self.wake_r], [], [])
            if self.wake_r in ready:
                try:
                    while os.read(self.wake_r, 512):
                        pass
                except BlockingIOError:
                    pass
            self.reap()
            if self.ctl.fileno() in ready:
                data, fds, _, _ = socket.recv_fds(self.ctl, MAX_MESSAGE, 8)
                if not data:  # the runner is gone
                    os._exit(0)
                msg = json.loads(data)
                if msg.get("op") == "spawn":
                    self.spawn(msg["params"], fds)
                elif msg.get("op") == "kill":
                    self.kill(int(msg["pid"]))
                elif msg.get("op") == "sweep":
                    send(self.ctl, {"op": "swept", "left": self.sweep()})
                for fd in fds:
                    os.close(fd)

    def reap(self) -> None:
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in self.jobs:
                self.jobs.discard(pid)
                cpu = usage.ru_utime + usage.ru_stime
                send(self.ctl, {"op": "exited", "pid": pid, "status": status, "cpu": cpu})

    def spawn(self, params: dict[str, Any], fds: list[int]) -> None:
        if len(fds) != 4:
            send(self.ctl, {"op": "spawn_failed", "error": f"expected 4 fds, got {len(fds)}"})
            return
        try:
            if self.own_pidns >= 0:
                # The next fork becomes pid 1 of a new pid namespace: when it dies, the kernel
                # kills everything the job left, setsid()'d escapees included.
                confine.unshare(confine.CLONE_NEWPID)
            try:
                pid = os.fork()
            finally:
                if self.own_pidns >= 0 and os.getpid() != 1:
                    confine.setns(self.own_pidns, confine.CLONE_NEWPID)
        except OSError as e:
            send(self.ctl, {"op": "spawn_failed", "error": f"{e}"})
            return
        if pid == 0:
            from child import child_main

            child_main(fds, params, self.ctl)
        self.jobs.add(pid)
        send(self.ctl, {"op": "spawned", "pid": pid})

    def kill(self, pid: int) -> None:
        """Kill job `pid` and its process group, if it is still ours: a job we reaped is
        gone, and its pid may already name another process (pids wrap quickly on a busy
        machine), which must never be signalled."""
        if pid not in self.jobs:
            return
        confine.kill_job(pid)

    def sweep(self) -> int:
        """Kill every remaining descendant. As a child subreaper we inherit orphans, so
        repeatedly killing our children converges even on escapees that double-forked."""
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            kids = _children_of(os.getpid())
            if not kids:
                return 0
            for pid in kids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)
            self.reap()
        return len(_children_of(os.getpid()))


def _children_of(parent: int) -> list[int]:
    return confine.children_by_parent(zombies=False).get(parent, [])


def zygote_main(ctl_fd: int, pid_namespaces: bool, cgroup_procs: list[str]) -> NoReturn:
    # Joining a cgroup costs milliseconds (the kernel waits for an RCU grace period), so
    # the zygote joins the slot's cgroups once and every child inherits them at fork.
    confine.join_cgroups(cgroup_procs)
    confine.set_dumpable(False)
    confine.set_parent_death_signal(signal.SIGKILL)
    confine.set_child_subreaper()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in PRELOAD:
        try:
            __import__(name)
        except ImportError:
            pass
    pyenv.site_builtins()  # exit, quit, help and the site directories, as python3 has them
    import child  # noqa: F401  (loaded before any fork, like the rest)

    # Everything loaded so far lives for the zygote's life: freeze it out of the cyclic GC,
    # whose traversals would otherwise write to every object in each child and copy the
    # shared pages (copy-on-write) for nothing.
    gc.collect()
    gc.freeze()
    Zygote(ctl_fd, pid_namespaces).loop()
