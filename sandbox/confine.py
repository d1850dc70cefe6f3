"""Linux confinement primitives: prctl, namespaces, mounts, rlimits, cgroups, uid drop.

Stdlib only (ctypes for the syscalls Python 3.11 does not wrap); copied into the image.
Every function raises OSError on failure so callers can decide what is fatal.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
from collections.abc import Mapping, Sequence

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18

_libc: ctypes.CDLL | None = None


def _lib() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(None, use_errno=True)
        lib.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
        lib.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
        _libc = lib
    return _libc


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def prctl(option: int, arg: int) -> None:
    _check(_lib().prctl(option, arg, 0, 0, 0), f"prctl({option})")  # unused args must be 0


def set_dumpable(flag: bool) -> None:
    """Non-dumpable: same-uid processes can neither ptrace us nor open /proc/<us>/fd|mem."""
    prctl(_PR_SET_DUMPABLE, int(flag))


def set_parent_death_signal(sig: int) -> None:
    prctl(_PR_SET_PDEATHSIG, sig)


def set_child_subreaper() -> None:
    """Orphaned descendants get reparented to us, so we can reap (and count) them."""
    prctl(_PR_SET_CHILD_SUBREAPER, 1)


def set_no_new_privs() -> None:
    """execve can never grant privileges again (setuid binaries, file capabilities)."""
    prctl(_PR_SET_NO_NEW_PRIVS, 1)


def unshare(flags: int) -> None:
    _check(_lib().unshare(flags), "unshare")


def setns(fd: int, nstype: int) -> None:
    _check(_lib().setns(fd, nstype), "setns")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    enc = (lambda s: s.encode() if s is not None else None)  # noqa: E731
    _check(_lib().mount(enc(source), enc(target), enc(fstype), flags, enc(data or None)),
           f"mount {target}")


def can_use_namespaces() -> bool:
    """True when we may create mount/pid/net namespaces (root, or CAP_SYS_ADMIN)."""
    if os.geteuid() != 0:
        return False
    pid = os.fork()
    if pid == 0:  # probe in a throwaway child: unshare is irreversible
        try:
            unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWPID)
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def private_filesystem(tmpfs_mb: int, hide: Sequence[str] = ()) -> None:
    """In a fresh mount namespace: the host's root read-only, private size-capped tmpfs on
    /tmp (for the work dir), /dev/shm, a fresh /proc for our pid namespace, and empty
    read-only tmpfs over `hide` (home directories with secrets). Call as root after
    unshare(CLONE_NEWNS [| CLONE_NEWPID])."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing we mount propagates to the host
    mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)
    flags = MS_NOSUID | MS_NODEV
    mount("tmpfs", "/tmp", "tmpfs", flags, f"size={tmpfs_mb}m,mode=1777")
    if os.path.isdir("/dev/shm"):
        mount("tmpfs", "/dev/shm", "tmpfs", flags | MS_NOEXEC, "size=8m,mode=1777")
    mount("proc", "/proc", "proc", flags | MS_NOEXEC)
    for path in hide:
        if os.path.isdir(path):
            mount("tmpfs", path, "tmpfs", flags | MS_NOEXEC | MS_RDONLY, "size=4k,mode=755")


def apply_rlimits(limits: Mapping[str, int]) -> None:
    """Set soft=hard limits by name, e.g. {"RLIMIT_AS": 512 << 20}. Lowering only."""
    for name, value in limits.items():
        res = getattr(resource, name, None)
        if res is None:
            continue
        soft, hard = resource.getrlimit(res)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(res, (value, value))


def set_cpu_limit(seconds: int) -> None:
    """Soft limit sends SIGXCPU (fatal by default), the hard limit one second later SIGKILL."""
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))


def join_cgroups(procs_files: Sequence[str]) -> None:
    for path in procs_files:
        with open(path, "w") as f:
            f.write(str(os.getpid()))


def drop_privileges(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:  # paranoia: never run model code as root
        raise OSError("uid drop did not take effect")


def raise_oom_score() -> None:
    """Make ourselves the OOM killer's first choice, never the runner."""
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass


def kill_job(pid: int) -> None:
    """SIGKILL a job's process group, then the job itself (a pid namespace's init: killing it
    kills the namespace); a job already gone is no error."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def children_by_parent(*, zombies: bool = True) -> dict[int, list[int]]:
    """Every live process's children (zombies too, unless not `zombies`), from each process's
    parent in /proc/PID/stat: a scan of all the processes this /proc shows (in a Docker
    sandbox, its container's)."""
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            ppid = int(fields[1])
        except (OSError, ValueError, IndexError):
            continue
        if zombies or fields[0] != b"Z":
            kids.setdefault(ppid, []).append(int(name))
    return kids
