"""The shared hostile corpus through both backends.

For each program: the right verdict (and never a pass for a hack), the pool keeps serving,
the next job sees a clean worker, nothing is left running, and the host is unchanged. One
worker per pool, so the probe job after each program runs where the program ran (or on its
replacement).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from hostile_corpus import CORPUS, TESTS, HostileCase
from sandbox_helpers import BACKENDS, assert_nothing_left, open_backend, our_sandbox_uid_pids

from sandbox import Job, Verdict
from sandbox.pool import WorkerPool
from sandbox.process_backend import MAX_WORKERS, UID_BASE

SECRET_ENV = "COOPCODE_SANDBOX_TEST_SECRET"
PROBE = """
import os
def state():
    return {"cwd": sorted(os.listdir(".")), "tmp": sorted(os.listdir("/tmp")),
            "shm": sorted(os.listdir("/dev/shm")),
            "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
            "sysv": [len(open("/proc/sysvipc/" + k).read().splitlines()) - 1
                     for k in ("shm", "msg", "sem")]}
"""
# Inside a container: the runner (pid 1), the zygote, the judge and the probe itself.
# In the process backend the probe is pid 1 of its own pid namespace.
PROBE_PIDS = {"docker": 4, "process": 1}


def probe_tests(backend: str) -> str:
    return f"""
def check(candidate):
    s = candidate()
    assert s["cwd"] == ["solution.py"], s["cwd"]  # its own program's file, nothing else
    assert s["tmp"] in ([], ["job"]), s["tmp"]
    assert s["shm"] == [], s["shm"]
    assert len(s["pids"]) == {PROBE_PIDS[backend]}, s["pids"]
    assert s["sysv"] == [0, 0, 0], s["sysv"]
"""


@dataclass
class HostEnv:
    """What a hostile program must neither reach nor change."""

    secret: str = field(default_factory=lambda: secrets.token_hex(16))
    marker: str = field(default_factory=lambda: secrets.token_hex(6))
    secret_path: str = ""
    canary: str = ""
    port: int = 0
    connections: list[bytes] = field(default_factory=list)
    owned_before: set[str] = field(default_factory=set)

    def values(self) -> dict[str, object]:
        return {"secret": self.secret, "marker": self.marker, "secret_path": self.secret_path,
                "canary": self.canary, "port": self.port}

    def sandbox_owned_files(self) -> set[str]:
        """Entries in the host's shared temp dirs owned by a sandbox uid (nobody, which the
        containers run as, or one of our process-backend slot uids)."""
        first = UID_BASE + (os.getpid() % (1 << 22)) * MAX_WORKERS
        found = set()
        for d in ("/tmp", "/var/tmp", "/dev/shm"):
            try:
                entries = list(os.scandir(d))
            except OSError:
                continue
            for e in entries:
                try:
                    uid = e.stat(follow_symlinks=False).st_uid
                except OSError:
                    continue
                if uid == 65534 or first <= uid < first + MAX_WORKERS:
                    found.add(e.path)
        return found

    def pwned_files(self) -> list[str]:
        found = []
        for d in ("/tmp", "/var/tmp", "/dev/shm", "/root", "/etc", os.getcwd(), "/work/main"):
            try:
                found += [os.path.join(d, n) for n in os.listdir(d)
                          if self.marker in n and n.startswith(("pwned-", "junk-"))]
            except OSError:
                pass
        return found


@pytest.fixture(scope="module")
def host() -> Iterator[HostEnv]:
    env = HostEnv()
    env.secret_path = f"/var/tmp/coopcode-secret-{env.marker}"
    with open(env.secret_path, "w") as f:
        f.write(env.secret)
    os.chmod(env.secret_path, 0o600)
    # World-writable on purpose: only the sandbox, not permissions, may keep programs off it.
    env.canary = f"/var/tmp/coopcode-canary-{env.marker}"
    with open(env.canary, "w") as f:
        f.write("canary")
    os.chmod(env.canary, 0o666)
    os.environ[SECRET_ENV] = env.secret  # the sandboxes are opened after this
    env.owned_before = env.sandbox_owned_files()
    # A listener on the host's loopback: the only network target a test may use.
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    env.port = listener.getsockname()[1]
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            env.connections.append(conn.recv(100) or b"(connected)")
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield env
    finally:
        stop.set()
        thread.join()
        listener.close()
        os.environ.pop(SECRET_ENV, None)
        for path in [env.secret_path, env.canary] + env.pwned_files():
            try:
                os.unlink(path)
            except OSError:
                pass


@pytest.fixture(scope="module", params=BACKENDS)
def pool(request: pytest.FixtureRequest, host: HostEnv) -> Iterator[WorkerPool]:
    sb = open_backend(request.param, workers=1)
    try:
        yield sb
    finally:
        sb.close()
    assert_nothing_left(request.param)


def host_checks(case: HostileCase, v: Verdict, host: HostEnv) -> None:
    everything = json.dumps(v.to_dict())
    if "stdout_truncated" in case.checks:
        assert len(v.stdout) < 70_000 and v.extra["stdout_bytes"] > len(v.stdout)
    if "stdout_100mb" in case.checks:
        assert v.extra["stdout_bytes"] >= 100 << 20
        assert len(v.stdout) < 70_000
    if "no_connection" in case.checks:
        assert host.connections == []
    if "no_secret" in case.checks:
        assert host.secret not in everything
    if "not_root" in case.checks:
        assert "escalated" not in v.stdout and "uid=0(" not in v.stdout
    if "answer_too_big" in case.checks:  # refused for its size, not for its time
        assert all("exceeds" in t.message for t in v.tests), v.tests
    if "no_test_source" in case.checks:
        assert "candidate(2) == 4" not in v.stdout and "candidate(3) == 9" not in v.stdout


def assert_host_unchanged(host: HostEnv) -> None:
    with open(host.canary) as f:
        assert f.read() == "canary"
    assert stat.S_IMODE(os.stat(host.canary).st_mode) == 0o666
    assert host.pwned_files() == []
    assert host.sandbox_owned_files() <= host.owned_before  # nothing new in /tmp & co
    assert host.connections == []


@pytest.mark.slow
@pytest.mark.parametrize("case", CORPUS, ids=[c.name for c in CORPUS])
def test_hostile_program(pool: WorkerPool, host: HostEnv, case: HostileCase) -> None:
    job = Job(program=case.render(**host.values()), tests=TESTS, entry_point="solve",
              timeout=case.timeout)
    v = pool.run(job)
    assert v.status in case.expect, (v.status, v.detail, v.tests)
    if "passed" not in case.expect:
        assert not v.passed and not any(t.passed for t in v.tests), v.tests
    host_checks(case, v, host)
    # The pool keeps serving, and what it hands out next is clean.
    probe = pool.run(Job(program=PROBE, tests=probe_tests(pool.name), entry_point="state"))
    assert probe.passed, [t.message for t in probe.tests if not t.passed] or probe.detail
    if pool.name == "process":
        assert our_sandbox_uid_pids() == []
    assert_host_unchanged(host)


def test_corpus_is_big_enough() -> None:
    assert len(CORPUS) >= 30
    assert len({c.name for c in CORPUS}) == len(CORPUS)
