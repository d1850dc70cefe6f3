"""Per-worker cgroups for the process backend: a pids limit and a memory limit per slot.

RLIMIT_NPROC and RLIMIT_AS bound one uid and one process; a cgroup bounds the sum, so a
fork bomb that also allocates cannot take the machine's memory. Works with cgroup v1
(separate pids/ and memory/ hierarchies) and v2 (unified). Best effort: without a writable
cgroup filesystem the backend runs without it and `sandbox status` says so.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

ROOT = "/sys/fs/cgroup"
GROUP = "coopcode"


@dataclass(frozen=True)
class SlotCgroup:
    dirs: tuple[str, ...]  # removed when the worker closes
    procs_files: tuple[str, ...]  # the job child writes its pid into each


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _v2() -> bool:
    return os.path.exists(os.path.join(ROOT, "cgroup.controllers"))


def _parents() -> list[str]:
    if _v2():
        return [os.path.join(ROOT, GROUP)]
    return [os.path.join(ROOT, c, GROUP) for c in ("pids", "memory")]


def available() -> bool:
    """Whether `create` can work here (root, and a v2 or v1 pids+memory hierarchy)."""
    if os.geteuid() != 0:
        return False
    if _v2():
        return os.access(ROOT, os.W_OK)
    return all(os.access(os.path.join(ROOT, c), os.W_OK) for c in ("pids", "memory"))


def create(name: str, pids_max: int, memory_bytes: int) -> SlotCgroup | None:
    """Create the slot's cgroup(s); None when cgroups are not available to us."""
    if os.geteuid() != 0:
        return None
    made: list[str] = []
    try:
        if _v2():
            parent = os.path.join(ROOT, GROUP)
            _write(os.path.join(ROOT, "cgroup.subtree_control"), "+pids +memory")
            os.makedirs(parent, exist_ok=True)
            _write(os.path.join(parent, "cgroup.subtree_control"), "+pids +memory")
            path = os.path.join(parent, name)
            os.makedirs(path, exist_ok=True)  # a slot's group may outlive a quick restart
            made.append(path)
            _write(os.path.join(path, "pids.max"), str(pids_max))
            _write(os.path.join(path, "memory.max"), str(memory_bytes))
            if os.path.exists(os.path.join(path, "memory.swap.max")):
                _write(os.path.join(path, "memory.swap.max"), "0")
        else:
            for controller, settings in (
                ("pids", {"pids.max": pids_max}),
                ("memory", {"memory.limit_in_bytes": memory_bytes,
                            "memory.memsw.limit_in_bytes": memory_bytes}),
            ):
                base = os.path.join(ROOT, controller)
                if not os.path.isdir(base):
                    raise OSError(f"no {controller} controller")
                path = os.path.join(base, GROUP, name)
                os.makedirs(path, exist_ok=True)  # a slot's group may outlive a quick restart
                _kill_members(path)
                made.append(path)
                for key, value in settings.items():
                    if os.path.exists(os.path.join(path, key)):
                        _write(os.path.join(path, key), str(value))
    except OSError:
        remove(SlotCgroup(tuple(made), ()))
        return None
    return SlotCgroup(tuple(made), tuple(os.path.join(p, "cgroup.procs") for p in made))


def remove(cg: SlotCgroup) -> None:
    for path in cg.dirs:
        _rmdir(path)


def _rmdir(path: str) -> None:
    """rmdir fails while members are still exiting: kill them and retry for a moment."""
    deadline = time.monotonic() + 2.0
    while True:
        _kill_members(path)
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)


def _kill_members(path: str) -> None:
    try:
        with open(os.path.join(path, "cgroup.procs")) as f:
            pids = [int(x) for x in f.read().split()]
    except OSError:
        return
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def remove_stale() -> None:
    """Remove slot cgroups named `<pid>-<slot>` whose owning process is gone."""
    for parent in _parents():
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for name in names:
            owner = name.split("-", 1)[0]
            path = os.path.join(parent, name)
            if owner.isdigit() and os.path.isdir(path) and not _alive(int(owner)):
                _rmdir(path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
