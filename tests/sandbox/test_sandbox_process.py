"""The process backend's isolation as root, and its fallback for a user without root."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from sandbox import Job
from sandbox.process_backend import UID_BASE, ProcessSandbox, sandbox_python

REPO = Path(__file__).resolve().parents[2]
INSPECT = """
import os
def inspect():
    return {"uid": os.getuid(), "pid": os.getpid(), "cwd": os.getcwd(),
            "env": sorted(os.environ), "net": open("/proc/net/dev").read().count(":"),
            "root_writable": os.access("/", os.W_OK), "home": os.path.exists("/root/.bashrc")}
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and uid drop need root")
def test_root_runs_jobs_unprivileged_in_their_own_namespaces() -> None:
    with ProcessSandbox(1) as sb:
        features = sb.status()["features"]
        assert features["namespaces"] and features["cgroup"]
        tests = ("def check(candidate):\n"
                 "    s = candidate()\n"
                 f"    assert s['uid'] >= {UID_BASE}\n"
                 "    assert s['pid'] == 1\n"  # init of its own pid namespace
                 "    assert s['net'] == 1\n"  # loopback only (and it is down)
                 "    assert s['root_writable'] is False\n"
                 "    assert s['home'] is False\n"
                 "    assert s['cwd'] == '/tmp/job'\n"
                 "    assert 'COOPCODE_SANDBOX_TEST_SECRET' not in s['env']\n")
        v = sb.run(Job(program=INSPECT, tests=tests, entry_point="inspect"))
        assert v.passed, [t.message for t in v.tests]


def test_sandbox_python_can_be_read_by_an_unprivileged_uid() -> None:
    exe = sandbox_python(os.geteuid() == 0)
    out = subprocess.run([exe, "-I", "-S", "-c", "import sys; print(sys.version_info >= (3, 9))"],
                         capture_output=True, text=True)
    assert out.stdout.strip() == "True"


NON_ROOT = """
import json, sys
from sandbox import Job
from sandbox.process_backend import ProcessSandbox
escapee = ("import os, time\\n"
           "if os.fork() == 0:\\n    os.setsid()\\n    time.sleep(1000)\\n"
           "def add(a, b):\\n    return a + b\\n")
with ProcessSandbox(1) as sb:
    out = {"features": sb.status()["features"]}
    out["plain"] = sb.run(Job(program="def add(a, b):\\n    return a + b\\n",
                              tests="assert add(1, 2) == 3\\n", entry_point="add")).status
    out["escapee"] = sb.run(Job(program=escapee, tests="assert add(1, 2) == 3\\n",
                                entry_point="add")).status
    out["wrong"] = sb.run(Job(program="def add(a, b):\\n    return 0\\n",
                              tests="assert add(1, 2) == 3\\n", entry_point="add")).status
print(json.dumps(out))
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="simulating a user without root needs root and setpriv")
def test_without_root_the_fallback_still_judges_and_sweeps() -> None:
    # Run the host side itself as an ordinary user (nobody) with the system Python: no
    # namespaces, no uid drop; rlimits, a process group and the zygote's sweep remain.
    python = sandbox_python(True)
    if python == sys.executable and not os.access(python, os.X_OK):
        pytest.skip("no Python readable by an unprivileged user")
    # The checkout may sit under a folder only root can enter (mktemp -d makes them 0700):
    # give the unprivileged user its own world-readable copy of the package.
    pkg_root = Path(tempfile.mkdtemp(prefix="coopcode-nonroot-", dir="/tmp"))
    try:
        pkg_root.chmod(0o755)
        shutil.copytree(REPO / "sandbox", pkg_root / "sandbox",
                        ignore=shutil.ignore_patterns("__pycache__"))
        for path in pkg_root.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        proc = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c", NON_ROOT],
            capture_output=True, text=True, timeout=120, cwd="/tmp",
            env={"PYTHONPATH": str(pkg_root), "PATH": "/usr/bin:/bin", "HOME": "/tmp"})
    finally:
        shutil.rmtree(pkg_root, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["features"]["namespaces"] is False and out["features"]["uid"] == 65534
    assert (out["plain"], out["escapee"], out["wrong"]) == ("passed", "passed", "failed")
    left = subprocess.run(["pgrep", "-u", "65534", "-f", "sandbox/runner.py"],
                          capture_output=True, text=True).stdout.split()
    assert left == []


def test_a_zygote_killed_between_jobs_is_replaced_and_the_next_job_runs() -> None:
    """The runner forks jobs from a zygote; if something kills it while the worker is idle
    (a program of its uid in Docker, a memory limit), the next job must not fail."""
    from sandbox_helpers import our_runner_pids

    job = Job(program="def f():\n    return 1\n", tests="assert f() == 1\n", entry_point="f")
    with ProcessSandbox(1) as sb:
        assert sb.run(job).passed
        zygotes = [p for p in our_runner_pids()
                   if b"--zygote" in Path(f"/proc/{p}/cmdline").read_bytes()]
        assert len(zygotes) == 1
        os.kill(zygotes[0], 9)
        verdicts = [sb.run(job) for _ in range(3)]
        assert [v.status for v in verdicts] == ["passed"] * 3, verdicts[0].detail


def test_closing_one_sandbox_leaves_another_of_the_same_process_working() -> None:
    """Two sandboxes in one process (a test session's and a test's own, the TUI's and a
    bench's) get different uids and cgroups: closing one, which kills what runs in its
    cgroup and as its uids, must not touch the other's workers."""
    job = Job(program="def f():\n    return 1\n", tests="assert f() == 1\n", entry_point="f")
    with ProcessSandbox(2) as first:
        assert first.run(job).passed
        second = ProcessSandbox(2)
        assert set(second.slots).isdisjoint(first.slots)
        assert second.run(job).passed
        second.close()
        assert [first.run(job).status for _ in range(4)] == ["passed"] * 4
