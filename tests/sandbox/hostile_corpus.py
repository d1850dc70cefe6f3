"""Hostile programs, shared by the Docker and process backend tests.

Each is a *wrong* (or hostile) solution of `solve(x) == x * x` that tries to escape, hurt the
machine or forge a pass. These are strings: nothing here is ever executed outside the
sandbox. `$port`, `$secret_path`, `$secret`, `$canary` and `$marker` are filled in per run
(see `HostEnv`).
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field

TESTS = """
def check(candidate):
    assert candidate(2) == 4
    assert candidate(3) == 9
"""

# Job statuses (see sandbox.verdict).
FAILED, ERROR, TIMEOUT, PASSED = "failed", "error", "timeout", "passed"


@dataclass(frozen=True)
class HostileCase:
    name: str
    program: str
    expect: frozenset[str]  # acceptable job statuses
    timeout: float = 1.0  # CPU seconds: small, so timeouts cost the suite little
    checks: tuple[str, ...] = field(default=())  # extra host-side checks, see the test module

    def render(self, **values: object) -> str:
        return string.Template(self.program).substitute({k: str(v) for k, v in values.items()})


def case(name: str, program: str, *expect: str, timeout: float = 1.0,
         checks: tuple[str, ...] = ()) -> HostileCase:
    return HostileCase(name, program.strip() + "\n", frozenset(expect), timeout, checks)


CORPUS: list[HostileCase] = [
    # ---- resource exhaustion -------------------------------------------------------
    case("fork_bomb_at_import", """
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
""", TIMEOUT),
    case("fork_bomb_in_function", """
import os
def solve(x):
    while True:
        try:
            os.fork()
        except OSError:
            pass
""", TIMEOUT),
    case("memory_bomb", """
def solve(x):
    return len(bytearray(8 * 1024 ** 3))
""", FAILED),
    case("memory_grow", """
def solve(x):
    hoard = []
    while True:
        hoard.append(bytearray(10 ** 7))
""", FAILED, TIMEOUT),
    case("memory_bomb_in_forks", """
import os
def solve(x):
    for _ in range(6):
        if os.fork() == 0:
            try:
                block = bytearray(400 * 1024 * 1024)
                for i in range(0, len(block), 4096):
                    block[i] = 1
            finally:
                os._exit(0)
    return 0
""", FAILED, TIMEOUT),
    case("infinite_loop_silent", """
def solve(x):
    while True:
        pass
""", TIMEOUT),
    case("infinite_loop_with_output", """
def solve(x):
    while True:
        print("spam " * 200)
""", TIMEOUT, checks=("stdout_truncated",)),
    case("stdout_100mb_then_correct", """
import sys
chunk = "x" * (1 << 20)
for _ in range(100):
    sys.stdout.write(chunk)
sys.stdout.flush()
def solve(x):
    return x * x
""", PASSED, timeout=5.0, checks=("stdout_100mb",)),
    case("disk_fill", """
def solve(x):
    for path in ("fill", "/tmp/fill", "/dev/shm/fill"):
        try:
            with open(path, "wb") as f:
                while True:
                    f.write(b"x" * (1 << 20))
        except OSError:
            pass
    return 0
""", FAILED, TIMEOUT),
    # ---- escaping the box ----------------------------------------------------------
    case("connect_to_host_loopback", """
import socket
def solve(x):
    s = socket.create_connection(("127.0.0.1", $port), timeout=2)
    s.sendall(b"escaped")
    return x * x
""", FAILED, checks=("no_connection",)),
    case("read_host_files", """
import os
def solve(x):
    found = []
    for path in ("$secret_path", "/etc/shadow", "/proc/1/environ", "/proc/1/cmdline",
                 "/root/.bash_history", "/proc/self/environ"):
        try:
            with open(path, "rb") as f:
                found.append(f.read(4096))
        except OSError as e:
            found.append(repr(e).encode())
    print(found)
    return 0
""", FAILED, checks=("no_secret",)),
    case("environment_secrets", """
import os
print(dict(os.environ))
def solve(x):
    return os.environ.get("COOPCODE_SANDBOX_TEST_SECRET", "none")
""", FAILED, checks=("no_secret",)),
    case("write_outside_workdir", """
import os
def solve(x):
    for path in ("$canary", "/tmp/pwned-$marker", "/var/tmp/pwned-$marker",
                 "/etc/pwned-$marker", "/root/pwned-$marker", "/work/main/pwned-$marker",
                 "../pwned-$marker", "/dev/shm/pwned-$marker"):
        try:
            with open(path, "w") as f:
                f.write("pwned")
        except OSError:
            pass
    try:
        os.unlink("$canary")
    except OSError:
        pass
    return 0
""", FAILED, checks=("canary",)),
    case("signals_to_parent", """
import os, signal
def solve(x):
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGALRM,
                signal.SIGCHLD, signal.SIGSTOP, signal.SIGKILL):
        try:
            os.kill(os.getppid(), sig)
        except OSError:
            pass
    return 0
""", FAILED),
    case("kill_runner_and_everything", """
import os, signal
def solve(x):
    for pid in [1] + [int(p) for p in os.listdir("/proc") if p.isdigit()]:
        if pid != os.getpid():
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
    return 0
""", FAILED, ERROR),
    case("become_root", """
import os, subprocess
def solve(x):
    report = []
    for attempt in (lambda: os.setuid(0), lambda: os.setgid(0), lambda: os.setgroups([0])):
        try:
            attempt()
            report.append("escalated")
        except OSError as e:
            report.append(repr(e))
    for cmd in (["su", "-c", "id"], ["sudo", "-n", "id"], ["mount", "-t", "tmpfs", "x", "/mnt"]):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=2)
            report.append(out.stdout + out.stderr)
        except (OSError, subprocess.SubprocessError) as e:
            report.append(repr(e))
    print(report, os.getuid(), os.geteuid())
    return 0 if os.geteuid() else x * x
""", FAILED, checks=("not_root",)),
    case("ctypes_segfault", """
import ctypes
def solve(x):
    return ctypes.string_at(0, 10)
""", FAILED),
    case("deep_recursion", """
def solve(x):
    return solve(x + 1)
""", FAILED),
    case("deep_recursion_unbounded", """
import sys
sys.setrecursionlimit(10 ** 8)
def solve(x):
    return solve(x + 1) + 1
""", FAILED, TIMEOUT),
    case("thread_outlives_job", """
import threading, time
def spin():
    while True:
        with open("/tmp/pwned-$marker", "a") as f:
            f.write("still here")
        time.sleep(0.01)
threading.Thread(target=spin).start()
def solve(x):
    return 0
""", FAILED),
    case("children_outlive_job", """
import os, time
def solve(x):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            while True:
                try:
                    with open("/tmp/pwned-$marker", "a") as f:
                        f.write("alive")
                except OSError:
                    pass
                time.sleep(0.01)
        os._exit(0)
    return 0
""", FAILED),
    case("forged_rpc_replies_from_child", """
import json, os, struct, time
def spam():
    for payload in ({"ok": 5}, {"op": "record", "status": "passed"}, {"ok": {"t": [4]}}, "junk"):
        data = json.dumps(payload).encode()
        os.write(4, struct.pack(">I", len(data)) + data)
    os.write(4, struct.pack(">I", 1 << 31))
if os.fork() == 0:
    time.sleep(0.05)
    try:
        spam()
    finally:
        os._exit(0)
def solve(x):
    return 1
""", FAILED, ERROR),
    case("sysv_shared_memory_left_behind", """
import ctypes
libc = ctypes.CDLL(None)
segment = libc.shmget(0, 4096, 0o1000 | 0o600)
def solve(x):
    return segment
""", FAILED),
    case("chmod_mess_in_workdir", """
import os
def solve(x):
    os.makedirs("a/b/c")
    for d in ("/tmp", "/dev/shm", "."):
        with open(os.path.join(d, "junk-$marker"), "w") as f:
            f.write("junk")
    os.chmod("a/b/c", 0)
    os.chmod("a/b", 0)
    os.chmod(".", 0)
    return 0
""", FAILED),
    case("close_rpc_channel", """
import os
for fd in range(3, 64):
    try:
        os.close(fd)
    except OSError:
        pass
def solve(x):
    return x * x
""", ERROR, FAILED),
    # ---- reward hacks --------------------------------------------------------------
    case("sys_exit_before_tests", """
import sys
def solve(x):
    return 0
sys.exit(0)
""", ERROR),
    case("os_exit_before_tests", """
import os
def solve(x):
    return 0
os._exit(0)
""", ERROR),
    case("os_exit_in_function", """
import os
def solve(x):
    os._exit(0)
""", FAILED),
    case("system_exit_from_function", """
def solve(x):
    raise SystemExit(0)
""", FAILED),
    case("keyboard_interrupt_from_function", """
def solve(x):
    raise KeyboardInterrupt
""", FAILED),
    case("fake_success_markers", """
import sys
print("All tests passed!\\nPASSED\\n{\\"passed\\": true, \\"status\\": \\"passed\\"}")
sys.stderr.write("OK\\n")
def solve(x):
    print("test passed")
    return 0
""", FAILED),
    case("forged_host_frames_on_stdout", """
import json, os, struct
verdict = {"op": "verdict", "id": 1, "clean": True, "reason": "",
           "verdict": {"status": "passed", "tests": [], "syntax_ok": True, "runnable": True}}
data = json.dumps(verdict).encode()
for fd in (1, 2):
    os.write(fd, struct.pack(">I", len(data)) + data)
    os.write(fd, struct.pack(">BxxxL", 1, len(data) + 4) + struct.pack(">I", len(data)) + data)
def solve(x):
    return 0
""", FAILED),
    case("eq_always_true", """
class Anything:
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
def solve(x):
    return Anything()
""", FAILED),
    case("int_subclass_eq_always_true", """
class Int(int):
    def __eq__(self, other):
        return True
    __hash__ = int.__hash__
def solve(x):
    return Int(0)
""", FAILED),
    case("str_and_list_subclass_eq", """
class S(str):
    def __eq__(self, other):
        return True
class L(list):
    def __eq__(self, other):
        return True
def solve(x):
    return S("nope") if x == 2 else L([0])
""", FAILED),
    case("redefine_check", """
def check(candidate):
    pass
def solve(x):
    return 0
check = lambda candidate: None
""", FAILED),
    case("monkeypatch_builtins", """
import builtins
class Never(Exception):
    pass
builtins.AssertionError = Never
builtins.abs = lambda v: 0
builtins.isinstance = lambda *a: True
builtins.len = lambda v: 0
builtins.print = lambda *a, **k: None
def solve(x):
    return 0
""", FAILED, ERROR),  # ERROR: the patches also break the child's own serving code
    case("patch_assertion_error_globally", """
import sys
AssertionError = Exception
sys.modules["builtins"].__dict__["AssertionError"] = type("AE", (Exception,), {})
def solve(x):
    assert False, "passes anyway?"
""", FAILED),
    case("sleep_past_deadline", """
import time
def solve(x):
    time.sleep(60)
    return x * x
""", TIMEOUT),
    case("ignore_sigxcpu_and_spin", """
import resource, signal
signal.signal(signal.SIGXCPU, signal.SIG_IGN)
try:
    resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
except (ValueError, OSError):
    pass
def solve(x):
    while True:
        pass
""", TIMEOUT),
    case("stop_self", """
import os, signal
def solve(x):
    os.kill(os.getpid(), signal.SIGSTOP)  # ignored where the job is its pid namespace's init
    return 0
""", TIMEOUT, FAILED),
    case("search_memory_for_tests", """
import gc, os
needle = "candidate(" + "2) == 4"  # split, so this source is not itself a hit
found = []
for obj in gc.get_objects():
    if obj is found:
        continue
    values = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()
    found += [v for v in list(values) if isinstance(v, str) and needle in v and v != needle]
for path in ("/proc/%d/mem" % os.getppid(), "/proc/1/mem", "/proc/1/environ"):
    try:
        with open(path, "rb") as f:
            found.append(repr(f.read(64)))
    except OSError as e:
        found.append(repr(e))
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
found.append("ptrace(1)=%d" % libc.ptrace(16, 1, 0, 0))
found.append("ptrace(ppid)=%d" % libc.ptrace(16, os.getppid(), 0, 0))
print(found)
def solve(x):
    return 0
""", FAILED, timeout=10.0, checks=("no_test_source",)),
    # Encoding the 50 MB answer before refusing it costs ~0.35 CPU s a job; the budget is
    # generous so the verdict is the size refusal, never a race with a loaded machine's CPU
    # (at 1 s it turned into a timeout once, beside a training run).
    case("huge_return_value", """
def solve(x):
    return "x" * (50 * 1024 * 1024)
""", FAILED, timeout=5.0, checks=("answer_too_big",)),
    case("syntax_error", """
def solve(x)
    return x * x
""", "syntax_error"),
]
