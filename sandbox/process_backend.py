"""The process backend: the same runner as in Docker, as local worker processes.

As root (these machines): each worker slot has its own unprivileged uid and cgroup (pids +
memory); the worker lives in a network namespace with no interfaces, and each job runs as
pid 1 of a fresh pid namespace with a private mount namespace (host root read-only,
size-capped tmpfs /tmp and /dev/shm, home directories hidden) and IPC namespace, so the
job's death takes everything it started with it.
Not root (a laptop): rlimits (RLIMIT_NPROC included), its own process group and session, a
fresh work dir, and a sweep of leftover processes; weaker, and `sandbox status` says so.
"""

from __future__ import annotations

import functools
import json
import os
import stat
import subprocess
import sys
import threading

from sandbox import cgroups, confine
from sandbox.pool import START_TIMEOUT, WorkerPool
from sandbox.verdict import SandboxUnavailable
from sandbox.worker import PipeTransport, Worker

RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runner.py")
UID_BASE = 2_000_000_000  # far above any real account; below 2**31 for old tools
MAX_WORKERS = 32  # uids are UID_BASE + owner pid * MAX_WORKERS + slot
HIDE = ("/root", "/home")  # where secrets (ssh keys, tokens, dotfiles) usually live
SLOT_PIDS = 64
WORKER_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


def slot_uid(slot: int) -> int:
    """A uid used by nothing else on the machine: kill(-1) as it reaches only this slot."""
    return UID_BASE + (os.getpid() % (1 << 22)) * MAX_WORKERS + slot


# Slots (uid and cgroup) are the process's, shared by all its sandboxes: two sandboxes in one
# process must never hold the same slot, or closing one (which kills what is in its cgroup
# and runs as its uid) kills the other's workers.
_slots_lock = threading.Lock()
_slots_taken: set[int] = set()


def _reserve_slots(n: int) -> list[int]:
    with _slots_lock:
        free = [s for s in range(MAX_WORKERS) if s not in _slots_taken][:n]
        if len(free) < n:
            raise SandboxUnavailable(f"process sandbox: more than {MAX_WORKERS} workers open in "
                                     f"one process (close a sandbox first)")
        _slots_taken.update(free)
        return free


def _release_slots(slots: list[int]) -> None:
    with _slots_lock:
        _slots_taken.difference_update(slots)


def _forget_slots_in_child() -> None:
    _slots_taken.clear()  # a forked child has its own pid, hence its own uids and cgroups


os.register_at_fork(after_in_child=_forget_slots_in_child)


@functools.lru_cache(maxsize=1)
def namespaces_available() -> bool:
    return confine.can_use_namespaces()


@functools.lru_cache(maxsize=4)
def sandbox_python(drop_uid: bool) -> str:
    """An interpreter the job's uid can use: once it runs unprivileged it must still read the
    stdlib (a pyenv or venv under /root, mode 700, cannot be read)."""
    if not drop_uid:
        return sys.executable
    for exe in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        stdlib = _stdlib_of(exe)
        if stdlib and _world_readable(os.path.realpath(exe)) and _world_readable(stdlib):
            return exe
    return sys.executable


def _stdlib_of(exe: str) -> str | None:
    try:
        out = subprocess.run(
            [exe, "-I", "-S", "-c",
             "import sys, sysconfig; assert sys.version_info >= (3, 9); "
             "print(sysconfig.get_paths()['stdlib'])"],
            capture_output=True, text=True, timeout=10, env=WORKER_ENV)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _world_readable(path: str) -> bool:
    """Others may traverse every ancestor and read the path itself."""
    parts = os.path.abspath(path).split(os.sep)
    for i in range(2, len(parts) + 1):
        p = os.sep.join(parts[:i])
        try:
            mode = os.stat(p).st_mode
        except OSError:
            return False
        need = stat.S_IXOTH if (stat.S_ISDIR(mode) or i < len(parts)) else stat.S_IROTH
        if not mode & need:
            return False
    return True


def isolation_summary(features: dict[str, object]) -> str:
    if features.get("namespaces"):
        parts = ["pid/mount/net/ipc namespaces", f"uid {features.get('uid')}"]
        parts.append("cgroup pids+memory" if features.get("cgroup") else "no cgroup")
        return ", ".join(parts) + ", rlimits"
    if features.get("uid") not in (None, os.getuid()):
        return f"uid {features.get('uid')}, rlimits, no namespaces"
    return "rlimits and process group only (not root: no namespaces, no uid drop)"


class ProcessSandbox(WorkerPool):
    """Local worker processes running `sandbox/runner.py`."""

    name = "process"

    def __init__(self, workers: int | None = None, *, memory_mb: int = 1024) -> None:
        size = min(workers or os.cpu_count() or 1, MAX_WORKERS)
        self.root = os.geteuid() == 0
        self.namespaces = self.root and namespaces_available()
        self.python = sandbox_python(self.root)
        self.memory_mb = memory_mb
        self.slots = _reserve_slots(size)  # pool slot i runs in process-wide slot slots[i]
        super().__init__(size, self._start)
        if self.root:
            cgroups.remove_stale()
        try:
            self.start()
        except BaseException:
            _release_slots(self.slots)
            raise

    def close(self) -> None:
        super().close()
        if os.getpid() == self._owner_pid:
            _release_slots(self.slots)

    def _config(self, slot: int) -> tuple[dict[str, object], cgroups.SlotCgroup | None]:
        cfg: dict[str, object] = {"mode": "process", "namespaces": self.namespaces}
        cg = None
        if self.root:
            uid = slot_uid(self.slots[slot])
            prefix = os.path.realpath(self.python)
            cfg.update(uid=uid, gid=uid, nproc=SLOT_PIDS, tmpfs_mb=64,
                       hide=[h for h in HIDE if not prefix.startswith(h + os.sep)])
            cg = cgroups.create(f"{os.getpid()}-{self.slots[slot]}", SLOT_PIDS, self.memory_mb << 20)
            if cg is not None:
                cfg["cgroup_procs"] = list(cg.procs_files)
        else:
            # RLIMIT_NPROC counts all of the user's processes: leave room above today's.
            mine = sum(1 for p in os.listdir("/proc") if p.isdigit() and _owned(p))
            cfg["nproc"] = mine + 256
        return cfg, cg

    def _start(self, slot: int) -> Worker:
        cfg, cg = self._config(slot)
        proc = subprocess.Popen(
            [self.python, "-I", "-B", "-S", RUNNER, "--process", json.dumps(cfg)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=WORKER_ENV,
            start_new_session=True,  # Ctrl-C in the terminal reaches us, not the workers
        )
        worker = Worker(PipeTransport(proc), f"process-{slot}", slot)
        if cg is not None:
            worker.on_close.append(lambda: cgroups.remove(cg))
        try:
            worker.wait_ready(START_TIMEOUT)
        except Exception:
            worker.close()
            raise
        return worker


def _owned(pid: str) -> bool:
    try:
        return os.stat(f"/proc/{pid}").st_uid == os.getuid()
    except OSError:
        return False
