"""The trusted runner: receives jobs from the host, runs each in a fresh child, reports verdicts.

One runner per sandbox worker: the main process of a Docker container (`--docker`, talking
over the container's stdin/stdout) or a worker process of the process backend (`--process
CONFIG`, over pipes). Per job it asks the zygote (`zygote.py`) for a confined child, hands
the job to the judge (`judge.py`, a long-lived trusted process) that evaluates the tests
against it, watches time and output (`supervise.py`), then kills everything the job left
and checks that the worker is clean before it reports (so the host never reuses a dirty
worker).

Host protocol (frames, see wire.py):
  runner -> host  {"op": "ready", "features": {...}}
  host -> runner  {"op": "job", "id": N, "program", "steps", "names", "entry_point", "param",
                   "timeout", "memory_mb"}
  runner -> host  {"op": "verdict", "id": N, "verdict": {...}, "clean": bool, "reason": str}
  host -> runner  {"op": "exit"}            (or EOF)

Stdlib only; run as a script (its directory is then first on sys.path); copied into the image.
"""

from __future__ import annotations

import gc
import json
import math
import os
import signal
import sys
import tempfile
import time
import traceback
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__" and sys.path[:1] != [HERE]:
    sys.path.insert(0, HERE)  # we run with -I, which leaves the script's directory out

import confine  # noqa: E402
import judge  # noqa: E402,F401  (imported once here, so each forked judge has it)
import pyenv  # noqa: E402
from runner_procs import SPAWN_ENV, JudgeClient, ZygoteClient, ZygoteDied  # noqa: E402
from supervise import Supervisor  # noqa: E402
from wire import FrameReader, read_frame, write_frame  # noqa: E402

# How deep a script's module code runs, measured here at runner.py's own module level (we
# run as a script, as the program's python3 file would): the zygote's children and the judge
# hold the program's recursion limit to python3's with it.
pyenv.measure_script_depth()

DOCKER_CONFIG: dict[str, Any] = {
    "mode": "docker",
    "workdir": "/work/job",
    "wipe": ["/work", "/tmp", "/dev/shm"],  # the container's only writable places
}


class Runner:
    def __init__(self, config: dict[str, Any]) -> None:
        self.cfg = config
        self.mode = config["mode"]
        self.namespaces = bool(config.get("namespaces"))
        self.zygote = ZygoteClient(self.namespaces, list(config.get("cgroup_procs", [])))
        self.judge = JudgeClient(self._prepare_judge)
        self.wake_r, self.wake_w = os.pipe()
        for fd in (self.wake_r, self.wake_w):
            os.set_blocking(fd, False)
        self.reaped: dict[int, tuple[int, float | None]] = {}
        self.jobs = 0
        self.workdir = ""
        self._job: dict[str, Any] = {}

    # ------------------------------------------------------------ lifecycle

    def setup(self) -> None:
        confine.set_dumpable(False)  # same-uid children cannot ptrace us or open our fds
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        if self.mode == "process":
            # No parent-death signal here: it fires when the *thread* that started us ends,
            # and the host starts workers from short-lived threads. The host's death closes
            # our stdin instead, and we exit at EOF.
            confine.set_child_subreaper()
            if self.namespaces:
                confine.unshare(confine.CLONE_NEWNET)  # no interfaces but a downed loopback
        self.zygote.start()
        gc.collect()
        gc.freeze()  # as in the zygote: the forked judge should not copy pages for the GC
        self.judge.start()

    def serve(self) -> None:
        self.setup()
        features = {"mode": self.mode, "namespaces": self.namespaces,
                    "uid": self.cfg.get("uid", os.getuid()), "cgroup": bool(self.cfg.get("cgroup_procs")),
                    "python": sys.version.split()[0], "pid": os.getpid()}
        write_frame(1, {"op": "ready", "features": features})
        reader = FrameReader()
        while True:
            try:
                msg = read_frame(0, reader)
            except EOFError:
                break
            if msg.get("op") == "exit":
                break
            if msg.get("op") == "ping":
                write_frame(1, {"op": "pong"})
                continue
            if msg.get("op") != "job":
                continue
            reply = self.run_job(msg)
            write_frame(1, reply)

    def run_job(self, job: dict[str, Any]) -> dict[str, Any]:
        self.jobs += 1
        self._job = job
        self.workdir = self._workdir()
        try:
            verdict = Supervisor(job, self).run().verdict()
        except Exception:
            verdict = {"status": "sandbox_error", "tests": [],
                       "detail": "runner error: " + traceback.format_exc(limit=3)[-800:]}
        try:
            clean, reason = self.cleanup()
        except Exception:
            clean, reason = False, "cleanup failed: " + traceback.format_exc(limit=2)[-400:]
        return {"op": "verdict", "id": job.get("id"), "verdict": verdict,
                "clean": clean, "reason": reason}

    def _workdir(self) -> str:
        if self.mode == "docker":
            return str(self.cfg["workdir"])
        if self.namespaces:
            return "/tmp/job"  # inside the job's private tmpfs
        return os.path.join(tempfile.gettempdir(), f"coopcode-job-{os.getpid()}-{self.jobs}")

    # ------------------------------------------------------------ JobHost for the supervisor

    def spawn(self, fds: list[int]) -> int:
        try:
            if not self.zygote.alive:
                self.zygote.start()
            return self.zygote.spawn(self._spawn_params(), fds)
        except (ZygoteDied, BrokenPipeError, ConnectionError):
            # The zygote died between jobs (a program of the same uid killed it, or a memory
            # limit did) and we have not reaped it yet: bury it, start a fresh one, once.
            self._bury_zygote()
            self.zygote.start()
            return self.zygote.spawn(self._spawn_params(), fds)

    def _bury_zygote(self) -> None:
        pid = self.zygote.pid
        self.zygote.forget()
        if pid > 0:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass

    def _spawn_params(self) -> dict[str, Any]:
        job_timeout = float(self._job["timeout"])
        return {
            "memory_mb": int(self._job.get("memory_mb", 512)),
            "cpu_limit": math.ceil(job_timeout) + 1,  # backstop; /proc polling is finer
            "fsize_mb": 16,
            "nofile": 64,
            "nproc": self.cfg.get("nproc"),
            "uid": self.cfg.get("uid"),
            "gid": self.cfg.get("gid"),
            "mount_ns": self.namespaces,
            "tmpfs_mb": int(self.cfg.get("tmpfs_mb", 64)),
            "hide": self.cfg.get("hide", []),
            "workdir": self.workdir,
            "env": SPAWN_ENV,
        }

    def wait_fds(self) -> list[int]:
        fds = [self.wake_r]
        if self.zygote.sock is not None:
            fds.append(self.zygote.sock.fileno())
        return fds

    def poll_exits(self) -> dict[int, tuple[int, float | None]]:
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass
        exits = self.zygote.poll()
        exits.update(self._reap())
        return exits

    def _reap(self) -> dict[int, tuple[int, float | None]]:
        out: dict[int, tuple[int, float | None]] = {}
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            out[pid] = (status, None)
            if pid == self.zygote.pid:
                self.zygote.forget()
            elif pid == self.judge.pid:
                self.judge.forget()
        return out

    def kill_child(self, pid: int) -> None:
        # The zygote (the job's parent) kills it: only the parent knows the pid is still the
        # job's. With the zygote dead the job was reparented to us (subreaper / pid 1): kill
        # it only while /proc says it is our child, i.e. not reaped, so the pid is its own.
        if self.zygote.kill(pid) or not _is_child_of_mine(pid):
            return
        confine.kill_job(pid)

    def _prepare_judge(self) -> None:
        """In the freshly forked judge: drop what is the runner's alone."""
        confine.set_parent_death_signal(signal.SIGKILL)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in (0, 1):  # the host channel
            devnull = os.open(os.devnull, os.O_RDWR)
            os.dup2(devnull, fd)
            os.close(devnull)
        if self.zygote.sock is not None:
            self.zygote.sock.close()
        os.close(self.wake_r)
        os.close(self.wake_w)

    def judge_submit(self, job: Any, fds: list[int]) -> int:
        return self.judge.submit(dict(job), fds)

    def judge_read(self) -> list[Any] | None:
        return self.judge.read()

    def judge_notice(self, job_id: Any, why: str) -> None:
        self.judge.notice(job_id, why)

    def judge_kill(self) -> None:
        self.judge.kill()

    @property
    def judge_pid(self) -> int:
        return self.judge.pid

    # ------------------------------------------------------------ after each job

    def cleanup(self) -> tuple[bool, str]:
        """Kill whatever the job left and check the worker is as it was."""
        if self.mode == "docker":
            return self._cleanup_docker()
        ok, reason = self._cleanup_uid() if self.cfg.get("uid") is not None else self._sweep()
        if not self.namespaces and not (_wipe(self.workdir) and _rmdir(self.workdir)):
            return False, f"could not remove {self.workdir}"
        return ok, reason

    def _cleanup_docker(self) -> tuple[bool, str]:
        # We are pid 1 of the container: kill(-1) reaches every other process in it,
        # setsid()'d escapees and the zygote included (a fresh zygote is exec'd after).
        if not self.zygote.alive or _pids() - {1, self.zygote.pid, self.judge.pid}:
            os.kill(-1, signal.SIGKILL)
            self.zygote.forget()
            self.judge.forget()
            deadline = time.monotonic() + 5.0
            while _pids() - {1} and time.monotonic() < deadline:
                self._reap()
                time.sleep(0.005)
            if _pids() - {1}:
                return False, f"processes survived kill(-1): {sorted(_pids() - {1})}"
            self.zygote.start()
        for path in self.cfg["wipe"]:
            if os.path.isdir(path) and not _wipe(path):
                return False, f"could not empty {path}"
        return _ipc_clean()

    def _cleanup_uid(self) -> tuple[bool, str]:
        # The job ran as pid 1 of its own pid namespace with a private tmpfs and IPC
        # namespace: its death took every process, file and IPC object with it. Check it.
        uid = int(self.cfg["uid"])
        deadline = time.monotonic() + 5.0
        while _pids_of_uid(uid) and time.monotonic() < deadline:
            self._kill_all_as(uid)
            time.sleep(0.01)
        left = _pids_of_uid(uid)
        return (not left, f"processes of uid {uid} survived: {sorted(left)}" if left else "")

    def _kill_all_as(self, uid: int) -> None:
        """kill(-1) as the slot's dedicated uid reaches exactly that slot's processes."""
        pid = os.fork()
        if pid == 0:
            try:
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)

    def _sweep(self) -> tuple[bool, str]:
        # Not root: no namespaces, no spare uid. The zygote is a child subreaper, so every
        # process the job left ends up as its child; it kills them until none remain.
        left = self.zygote.sweep()
        return (left == 0, f"{left} processes survived the sweep" if left else "")


def _pids() -> set[int]:
    return {int(p) for p in os.listdir("/proc") if p.isdigit()}


def _is_child_of_mine(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1]) == os.getpid()
    except (OSError, ValueError, IndexError):
        return False


def _pids_of_uid(uid: int) -> set[int]:
    found = set()
    for pid in _pids():
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                found.add(pid)
        except OSError:
            pass
    return found


def _wipe(path: str) -> bool:
    """Empty a directory the job could write to (the job may have chmod-ed things 000)."""
    try:
        entries = list(os.scandir(path))
    except FileNotFoundError:
        return True
    except PermissionError:
        os.chmod(path, 0o700)
        entries = list(os.scandir(path))
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                os.chmod(entry.path, 0o700)
                _wipe(entry.path)
                os.rmdir(entry.path)
            else:
                os.unlink(entry.path)
        except FileNotFoundError:
            pass
        except OSError:
            return False
    return not os.listdir(path)


def _rmdir(path: str) -> bool:
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


def _ipc_clean() -> tuple[bool, str]:
    """SysV IPC objects outlive processes; a container holding one is not clean."""
    for kind in ("shm", "msg", "sem"):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                if len(f.read().splitlines()) > 1:
                    return False, f"a SysV {kind} object was left behind"
        except OSError:
            pass
    return True, ""


def main(argv: list[str]) -> None:
    if argv[:1] == ["--zygote"]:
        from zygote import zygote_main

        cfg = json.loads(argv[1])
        zygote_main(int(cfg["fd"]), bool(cfg["pid_ns"]), list(cfg["cgroup_procs"]))
    elif argv[:1] == ["--docker"]:
        Runner(dict(DOCKER_CONFIG)).serve()
    elif argv[:1] == ["--process"]:
        Runner(json.loads(argv[1])).serve()
    else:
        sys.exit("usage: runner.py --docker | --process CONFIG_JSON | --zygote CONFIG_JSON")


if __name__ == "__main__":
    main(sys.argv[1:])
