"""The untrusted side of a job: confine this process, then load the program and serve calls.

Runs in a process forked from the zygote, which never saw any test or program text, so the
program cannot find the tests in its own memory. Everything after `exec(program)` is under
the program's control: nothing this process says is trusted beyond "this is data the
program could have returned" (see `judge.py`).

Stdlib only; copied into the image.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

import confine
import pyenv
from wire import (
    FrameReader,
    UnsupportedValue,
    decode_value,
    encode_value,
    pack_frame,
    read_frame,
    write_all,
    write_frame,
)

# Fixed descriptor layout of the child: 0 /dev/null, 1/2 capture pipes, 3 requests, 4 replies.
REQ_FD = 3
REP_FD = 4
_MESSAGE_LIMIT = 2000  # characters of an exception message we pass on


def child_main(fds: list[int], params: Mapping[str, Any], ctl: socket.socket) -> NoReturn:
    """Entry point right after fork in the zygote; never returns."""
    try:
        ctl.detach()  # the zygote's socket object must not close a reused fd number later
        _arrange_fds(*fds)
        _confine(params)
    except BaseException as e:  # confinement failed: never run the program unconfined
        try:
            write_frame(REP_FD, {"op": "setup_failed", "error": f"{type(e).__name__}: {e}"})
        finally:
            os._exit(70)
    try:
        _serve()
    except BaseException:
        pass
    _flush()
    os._exit(0)


def _arrange_fds(req: int, rep: int, out: int, err: int) -> None:
    high = [os.dup(fd) for fd in (req, rep, out, err)]  # out of the way of 0..4 first
    for fd in (req, rep, out, err):
        os.close(fd)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    for target, fd in zip((REQ_FD, REP_FD, 1, 2), high):
        os.dup2(fd, target)
        os.close(fd)
    if devnull > REP_FD:
        os.close(devnull)
    os.closerange(REP_FD + 1, os.sysconf("SC_OPEN_MAX"))
    for fd in (REQ_FD, REP_FD):
        os.set_inheritable(fd, False)  # no exec'd program inherits the RPC pipes


def _confine(p: Mapping[str, Any]) -> None:
    # Own process group: one killpg reaches every descendant that stays in it (escapees are
    # the runner's cleanup's business). Not setsid(): with scheduler autogroups a new session
    # costs milliseconds, and there is no terminal to leave anyway.
    os.setpgid(0, 0)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if p.get("mount_ns"):
        confine.unshare(confine.CLONE_NEWNS | confine.CLONE_NEWIPC)
        confine.private_filesystem(p["tmpfs_mb"], p.get("hide", ()))
    limits = {
        "RLIMIT_AS": int(p["memory_mb"]) << 20,
        "RLIMIT_FSIZE": int(p["fsize_mb"]) << 20,
        "RLIMIT_NOFILE": int(p["nofile"]),
        "RLIMIT_CORE": 0,
        "RLIMIT_MSGQUEUE": 0,  # POSIX message queues would outlive the job
    }
    if p.get("nproc"):
        limits["RLIMIT_NPROC"] = int(p["nproc"])
    confine.apply_rlimits(limits)
    confine.set_cpu_limit(int(p["cpu_limit"]))
    if p.get("uid") is not None:
        confine.drop_privileges(int(p["uid"]), int(p["gid"]))
    confine.set_no_new_privs()
    confine.set_parent_death_signal(signal.SIGKILL)  # set after setuid, which clears it
    confine.raise_oom_score()
    os.umask(0o077)
    os.makedirs(p["workdir"], mode=0o700, exist_ok=True)
    os.chdir(p["workdir"])
    os.environ.clear()
    os.environ.update(p.get("env", {}))
    os.environ["HOME"] = p["workdir"]
    pyenv.standard_streams(1, 2, 0)


# Module code that asks how deep it runs: exec'd where the program's module code is, it
# gives the depth python3's module code is at, seen from our side (pyenv.RecursionBudget).
_DEPTH_PROBE = compile("depth = recursion_depth()", "<probe>", "exec", 0, True)


def _serve() -> None:
    reader = FrameReader()
    load = read_frame(REQ_FD, reader)
    try:
        # dont_inherit: compiled as python3 compiles a file, with none of our __future__ flags
        code = compile(load["program"], "<program>", "exec", pyenv.COMPILE_FLAGS, True)
    except BaseException as e:  # SyntaxError, ValueError (NUL bytes), RecursionError, ...
        write_frame(REP_FD, {"op": "compiled", "ok": False, "error": _describe(e)})
        return
    # Said before any program code runs, so syntax_ok is the one fact the program can't forge.
    write_frame(REP_FD, {"op": "compiled", "ok": True})
    namespace = pyenv.program_namespace(os.getcwd(), load["program"])
    budget = pyenv.RecursionBudget()
    probe: dict[str, Any] = {"recursion_depth": pyenv.recursion_depth}
    exec(_DEPTH_PROBE, probe)
    budget.enter(probe["depth"], pyenv.SCRIPT_CALL_DEPTH)
    error = None
    try:
        exec(code, namespace)
    except BaseException as e:
        error = _describe(e)
    _flush()
    if error is None:  # the tests' module code runs next in python3's single file
        pyenv.bind_test_globals(namespace, load.get("test_imports", ()), load.get("test_names", ()))
    names = {n: _describe_name(namespace, n) for n in load.get("names", ())}
    write_frame(REP_FD, {"op": "loaded", "ok": error is None, "error": error, "names": names})
    if error is not None:
        return
    while True:
        try:
            msg = read_frame(REQ_FD, reader)
        except EOFError:
            return
        if msg.get("op") != "call":
            return
        write_all(REP_FD, _call(namespace, msg, budget))
        _flush()


def _call(namespace: Mapping[str, Any], msg: Mapping[str, Any],
          budget: pyenv.RecursionBudget) -> bytes:
    fn: Callable[..., Any] = namespace.get(msg["name"], _undefined(msg["name"]))
    try:
        args = decode_value(msg["args"])
        kwargs = decode_value(msg["kwargs"])
        # fn's frame will be as deep as this call's; python3's is at msg["depth"]
        budget.enter(pyenv.recursion_depth(), int(msg.get("depth") or 0) or pyenv.SCRIPT_CALL_DEPTH + 1)
        result = fn(*args, **kwargs)
        return pack_frame({"ok": encode_value(result)})  # too big -> UnsupportedValue
    except UnsupportedValue as e:
        return pack_frame({"unsupported": _text(e)})
    except Exception as e:
        return pack_frame({"raise": _describe(e)})
    except BaseException as e:  # SystemExit, KeyboardInterrupt, ...: the program quits
        try:
            write_frame(REP_FD, {"exit": _describe(e)})
            _flush()
        finally:
            os._exit(0)


def _undefined(name: str) -> Callable[..., Any]:
    def missing(*args: Any, **kwargs: Any) -> Any:
        raise NameError(f"name {name!r} is not defined")

    return missing


def _describe_name(namespace: Mapping[str, Any], name: str) -> Any:
    if name not in namespace:
        return None
    obj = namespace[name]
    try:
        if isinstance(obj, types.ModuleType):  # e.g. tests that use the program's `import math`
            return {"module": str(obj.__name__)}
        if callable(obj):
            return "call"
        return {"value": encode_value(obj)}
    except Exception:
        return None


def _describe(e: BaseException) -> list[Any]:
    line = getattr(e, "lineno", None) if isinstance(e, SyntaxError) else None
    tb = e.__traceback__
    while tb is not None:  # innermost frame of the program, for a useful message
        if tb.tb_frame.f_code.co_filename == "<program>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return [_text(type(e).__name__), _text(e), line, pyenv.builtin_base(e)]


def _text(x: object) -> str:
    try:
        s = str(x)
    except BaseException:
        s = "<unprintable>"
    return s[:_MESSAGE_LIMIT] if type(s) is str else "<unprintable>"


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
