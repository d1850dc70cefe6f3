"""The Docker pool against a real engine: lockdown, lifecycle, cleanup, replacement."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from sandbox_helpers import docker_or_skip, our_containers

from sandbox import Job, SandboxUnavailable, open_sandbox
from sandbox.docker_backend import LABEL, OWNER_LABEL, DockerSandbox, owner_id, sandbox_containers
from sandbox.image import ensure_image, image_present, image_tag

pytestmark = pytest.mark.docker

ADD = Job(program="def add(a, b):\n    return a + b\n", tests="assert add(1, 2) == 3\n",
          entry_point="add")


@pytest.fixture(scope="module")
def docker_client() -> object:
    docker_or_skip()
    from sandbox.image import client

    dc = client()
    ensure_image(progress=print, docker_client=dc)
    return dc


@pytest.fixture
def pool(docker_client: object) -> Iterator[DockerSandbox]:
    sb = DockerSandbox(1)
    try:
        yield sb
    finally:
        sb.close()


def test_image_is_tagged_by_its_inputs_and_builds_once(docker_client: object) -> None:
    tag = image_tag()
    assert tag.startswith("coopcode-sandbox:") and len(tag.split(":")[1]) == 12
    assert image_present(tag, docker_client)
    start = time.monotonic()
    assert ensure_image(docker_client=docker_client) == tag  # present: nothing to do
    assert time.monotonic() - start < 2


def test_containers_are_locked_down(pool: DockerSandbox, docker_client: object) -> None:
    (container,) = our_containers()
    attrs = docker_client.api.inspect_container(container["Id"])  # type: ignore[attr-defined]
    host = attrs["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["PidsLimit"] > 0 and host["Memory"] > 0 and host["NanoCpus"] > 0
    assert set(host["Tmpfs"]) == {"/work", "/tmp"}
    assert attrs["Config"]["User"] == "65534:65534"
    assert attrs["Config"]["Labels"][LABEL] == "1"
    assert attrs["Config"]["Labels"][OWNER_LABEL].split(":")[1] == str(os.getpid())


def test_pool_size_defaults_to_cpu_count(docker_client: object) -> None:
    with open_sandbox("docker") as sb:
        assert sb.size == (os.cpu_count() or 1)
        assert len(our_containers()) == sb.size
        assert sb.run(ADD).passed
    assert our_containers() == []


def test_close_removes_our_containers(docker_client: object) -> None:
    sb = DockerSandbox(2)
    assert len(our_containers()) == 2
    sb.close()
    assert our_containers() == []


def test_dirty_container_is_replaced_and_the_next_job_is_clean(pool: DockerSandbox) -> None:
    leave_a_child = ("import os, time\n"
                     "if os.fork() == 0:\n    os.setsid()\n    time.sleep(1000)\n"
                     "def add(a, b):\n    return a + b\n")
    first = pool.run(Job(program=leave_a_child, tests=ADD.tests, entry_point="add"))
    assert first.passed  # leaving a child is not wrong; the worker is just not reusable as is
    second = pool.run(ADD)
    assert second.passed
    assert pool.status()["replaced"] == 0  # a stray process is killed in place...
    shm = ("import ctypes\nctypes.CDLL(None).shmget(0, 4096, 0o1000 | 0o600)\n"
           "def add(a, b):\n    return a + b\n")
    third = pool.run(Job(program=shm, tests=ADD.tests, entry_point="add"))
    assert third.extra.get("worker_replaced")  # ...a SysV segment means a new container
    fourth = pool.run(ADD)
    assert fourth.passed and fourth.extra["worker"] != third.extra["worker"]
    assert pool.status()["replaced"] == 1


def test_stale_containers_of_dead_owners_are_removed_at_start(docker_client: object) -> None:
    import docker

    dc: docker.DockerClient = docker_client  # type: ignore[assignment]
    stale = dc.containers.create(image_tag(), command=["sleep", "1000"], labels={
        LABEL: "1", OWNER_LABEL: f"{os.uname().nodename}:999999999:0"})
    with DockerSandbox(1) as sb:
        assert sb.stale_removed >= 1
    with pytest.raises(docker.errors.NotFound):
        dc.containers.get(stale.id)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL],
                         ids=["ctrl-c", "sigterm", "sigkill"])
def test_containers_go_when_their_owner_is_interrupted_or_killed(
    docker_client: object, sig: signal.Signals
) -> None:
    # Ctrl-C ends in atexit, SIGTERM in our handler; SIGKILL leaves no chance to clean up:
    # then the attach sockets close, Docker closes the runners' stdin (StdinOnce), the
    # runners exit and auto-remove takes the containers.
    # The owner installs the handlers it relies on: started from a background job or under
    # nohup, a process inherits SIGINT ignored (and Python then keeps it ignored).
    code = ("import signal, time\n"
            "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "signal.signal(signal.SIGTERM, signal.SIG_DFL)\n"
            "from sandbox.docker_backend import DockerSandbox\n"
            "sb = DockerSandbox(2)\n"
            "print('ready', flush=True)\n"
            "time.sleep(600)\n")
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
    owned = owner_id(owner.pid)
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "ready"
        assert len(sandbox_containers(docker_client, owned)) == 2
        owner.send_signal(sig)
        owner.wait(timeout=30)
    finally:
        owner.kill()
        owner.wait()
    deadline = time.monotonic() + 20
    while sandbox_containers(docker_client, owned) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sandbox_containers(docker_client, owned) == []


def test_docker_backend_without_a_daemon_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(SandboxUnavailable, match="no Docker daemon answers.*--sandbox process"):
        open_sandbox("docker")


def test_auto_falls_back_to_process_with_one_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    warnings: list[str] = []
    with open_sandbox("auto", workers=1, warn=warnings.append) as sb:
        assert sb.name == "process"
        assert sb.run(ADD).passed
    assert len(warnings) == 1 and "process sandbox" in warnings[0]
    assert "\n" not in warnings[0]


def test_auto_prefers_docker(docker_client: object) -> None:
    warnings: list[str] = []
    with open_sandbox("auto", workers=1, warn=warnings.append) as sb:
        assert sb.name == "docker"
    assert warnings == []


def test_a_forked_child_exiting_does_not_stop_the_parents_pool(docker_client: object) -> None:
    # A child forked from a process holding a pool exits through atexit; that must leave
    # the parent's containers alone.
    code = ("import os, sys\n"
            "from sandbox import Job\n"
            "from sandbox.docker_backend import DockerSandbox\n"
            "sb = DockerSandbox(1)\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    sys.exit(0)\n"
            "os.waitpid(pid, 0)\n"
            "job = Job(program='def f():\\n    return 1\\n', tests='assert f() == 1\\n')\n"
            "print(sb.run(job).status, sb.status()['replaced'])\n"
            "sb.close()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "passed 0", out.stderr[-1000:]
