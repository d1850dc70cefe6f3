"""Helpers shared by the sandbox tests: opening real backends and looking for leftovers.

Hostile and model-written code only ever runs inside a sandbox; these helpers inspect the
host from the outside.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from sandbox.pool import WorkerPool
from sandbox.process_backend import MAX_WORKERS, UID_BASE
from sandbox.verdict import SandboxUnavailable

BACKENDS = [pytest.param("process", id="process"),
            pytest.param("docker", id="docker", marks=pytest.mark.docker)]


def docker_or_skip() -> None:
    """Skip only where Docker truly cannot run (not root and no daemon); as root `make test`
    starts a daemon, so a missing one there is a failure, not a skip."""
    from sandbox.image import client

    try:
        client()
    except SandboxUnavailable as e:
        if os.geteuid() != 0:
            pytest.skip(f"Docker tests need a daemon or root: {e}")
        pytest.fail(f"no Docker daemon although we are root (run scripts/ensure_docker.sh): {e}")


def open_backend(name: str, workers: int) -> WorkerPool:
    if name == "docker":
        docker_or_skip()
        from sandbox.docker_backend import DockerSandbox
        from sandbox.image import ensure_image

        ensure_image(progress=print)
        return DockerSandbox(workers)
    from sandbox.process_backend import ProcessSandbox

    return ProcessSandbox(workers)


def our_sandbox_uid_pids() -> list[int]:
    """Processes running as one of this test process's process-backend slot uids."""
    first = UID_BASE + (os.getpid() % (1 << 22)) * MAX_WORKERS
    found = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                uid = os.stat(f"/proc/{p}").st_uid
            except OSError:
                continue
            if first <= uid < first + MAX_WORKERS:
                found.append(int(p))
    return found


def our_runner_pids() -> list[int]:
    """Process-backend runners (and zygotes) started by this test process or its children."""
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"sandbox/runner.py" in cmd and _descends_from(int(p), os.getpid()):
            found.append(int(p))
    return found


def _descends_from(pid: int, ancestor: int) -> bool:
    for _ in range(64):
        if pid == ancestor:
            return True
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                pid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except OSError:
            return False
        if pid <= 1:
            return False
    return False


def our_containers() -> list[Any]:
    from sandbox.docker_backend import our_containers as ours
    from sandbox.image import client

    try:
        return ours(client())
    except SandboxUnavailable:
        return []


def assert_nothing_left(backend: str) -> None:
    """After close: no runner, no sandboxed process, no container of ours."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        left = our_sandbox_uid_pids() + our_runner_pids()
        containers = our_containers() if backend == "docker" else []
        if not left and not containers:
            return
        time.sleep(0.1)
    raise AssertionError(f"left behind: processes {left}, containers {[c['Names'] for c in containers]}")
