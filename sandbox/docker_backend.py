"""The Docker backend: a warm pool of long-lived, locked-down containers.

Each container runs the trusted runner as its main process (pid 1) and talks to us over its
attach socket (stdin in, stdout out, multiplexed frames). It has no network, a read-only
root, tmpfs /work, /tmp and /dev/shm, memory/pids/CPU limits, an unprivileged user, no
capabilities and no-new-privileges. Containers are labelled with their owner; ours are
removed on close, at exit and on SIGTERM; a hard kill of the owner closes the attach socket,
which closes the runner's stdin (StdinOnce), so it exits and Docker removes it (auto-remove);
and stale ones from dead owners are removed when a pool starts.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Callable
from typing import Any

from sandbox.image import client as docker_client
from sandbox.image import ensure_image
from sandbox.pool import START_TIMEOUT, WorkerPool
from sandbox.verdict import SandboxUnavailable
from sandbox.worker import DockerAttachTransport, Worker

LABEL = "coopcode.sandbox"
OWNER_LABEL = "coopcode.sandbox.owner"
CONTAINER_UID = "65534:65534"  # nobody
RUNNER_CMD = ["python3", "-I", "-B", "-S", "/opt/coopcode/runner.py", "--docker"]
PIDS_LIMIT = 128  # the fork-bomb bound (RLIMIT_NPROC would count the uid across containers)
TMPFS = "rw,nosuid,nodev,noexec,size=64m,mode=1777"


def owner_id(pid: int | None = None) -> str:
    """host:pid:start-time, so a reused pid does not look like the old owner."""
    pid = pid or os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_time(pid)}"


def _start_time(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except OSError:
        return "?"


def _owner_alive(owner: str) -> bool:
    host, _, rest = owner.partition(":")
    if host != socket.gethostname():
        return True  # another machine's (DOCKER_HOST shared): not ours to judge
    pid, _, start = rest.partition(":")
    return pid.isdigit() and _start_time(int(pid)) == start


def sandbox_containers(dc: Any, owner: str | None = None) -> list[dict[str, Any]]:
    """Summaries ({"Id", "Names", "Labels", "State", ...}) of sandbox containers, optionally of
    one owner. The low-level list: it does not inspect each container, so it does not trip
    over ones that are being removed meanwhile."""
    label = f"{OWNER_LABEL}={owner}" if owner else LABEL
    return list(dc.api.containers(all=True, filters={"label": label}))


def remove_stale(dc: Any) -> int:
    """Remove sandbox containers whose owning process is gone. Returns how many."""
    removed = 0
    for c in sandbox_containers(dc):
        if not _owner_alive((c.get("Labels") or {}).get(OWNER_LABEL, "")):
            _remove(dc, c["Id"])
            removed += 1
    return removed


def our_containers(dc: Any) -> list[dict[str, Any]]:
    return sandbox_containers(dc, owner_id())


def _remove(dc: Any, container_id: str) -> None:
    import docker

    try:
        dc.api.remove_container(container_id, force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as e:
        if "already in progress" not in str(e):
            raise


class DockerSandbox(WorkerPool):
    """Warm containers running `runner.py --docker`."""

    name = "docker"

    def __init__(
        self,
        workers: int | None = None,
        *,
        image: str | None = None,
        progress: Callable[[str], None] | None = None,
        memory_mb: int = 1024,
    ) -> None:
        self.client = docker_client()
        try:
            self.image = image or ensure_image(progress, self.client)
        except SandboxUnavailable:
            raise
        except Exception as e:
            raise SandboxUnavailable(f"could not build the sandbox image ({e}): run "
                                     "`coopcode sandbox build` to see why, or use --sandbox process") from None
        self.memory_mb = memory_mb
        self.stale_removed = remove_stale(self.client)
        self._owner = owner_id()
        super().__init__(workers or os.cpu_count() or 1, self._start)
        self.start()

    def healthy(self) -> bool:
        """Whether the daemon answers a ping (within 5 s)."""
        import docker

        try:
            return bool(docker.from_env(version=self.client.api.api_version, timeout=5).ping())
        except Exception:
            return False

    def down_message(self) -> str:
        if self.healthy():
            return super().down_message()
        return (f"the Docker daemon stopped answering ({self.last_error}) and was not back "
                f"within {self.recovery_s:.0f} s: start it again (dockerd, or systemctl start "
                "docker), then rerun to resume; what was scored is kept")

    def _host_config(self, api: Any) -> Any:
        import docker

        return api.create_host_config(
            network_mode="none",
            read_only=True,
            tmpfs={"/work": TMPFS, "/tmp": TMPFS},
            shm_size=16 << 20,
            mem_limit=self.memory_mb << 20,
            memswap_limit=self.memory_mb << 20,  # no swap on top
            pids_limit=PIDS_LIMIT,
            nano_cpus=1_000_000_000,  # one CPU each: a runaway job cannot starve the others
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            ipc_mode="private",
            ulimits=[docker.types.Ulimit(name="nofile", soft=256, hard=256),
                     docker.types.Ulimit(name="core", soft=0, hard=0)],
            auto_remove=True,
        )

    def _start(self, slot: int) -> Worker:
        import docker

        # A client per start: workers start in parallel threads and docker-py's client is
        # not documented as thread-safe.
        dc = docker.from_env(version=self.client.api.api_version, timeout=60)
        api = dc.api
        name = f"coopcode-sandbox-{os.getpid()}-{slot}-{secrets.token_hex(3)}"
        container = api.create_container(
            self.image, command=RUNNER_CMD, user=CONTAINER_UID, stdin_open=True,
            name=name, working_dir="/work", network_disabled=True,
            environment={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"},
            labels={LABEL: "1", OWNER_LABEL: self._owner},
            host_config=self._host_config(api),
        )
        cid = container["Id"]
        try:
            # Attach before start: nothing the runner says is lost, and with StdinOnce our
            # socket closing (even by our death) closes its stdin.
            raw = api.attach_socket(cid, params={"stdin": 1, "stdout": 1, "stderr": 1,
                                                 "stream": 1})
            api.start(cid)
            worker = Worker(DockerAttachTransport(raw._sock, keepalive=raw), name, slot)
            worker.on_close.append(lambda: _remove(dc, cid))
            worker.wait_ready(START_TIMEOUT)
        except Exception:
            _remove(dc, cid)
            raise
        return worker
