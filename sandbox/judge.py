"""The trusted side of a job: evaluate the test code, calling the program through proxies.

The judge is a long-lived process forked by the runner (and replaced when a job's wall
clock runs out or it dies). It executes the *tests* (trusted: they come from the dataset or
the problem file) in a fresh namespace per job, with `candidate` and any program-defined
names the tests use bound to proxies. A proxy call sends plain-data
arguments to the program's process and gets back plain data (or an exception name and
message), decoded into fresh builtin objects. So every `assert` is evaluated here, on
builtin values: an `__eq__` that is always True, patched builtins or AssertionError, a
redefined `check`, a fake marker on stdout or an exit code cannot make a test pass.

Stdlib only; copied into the image.
"""

from __future__ import annotations

import builtins
import importlib
import os
import reprlib
import select
import socket
import time
import types
from collections.abc import Mapping
from typing import Any

import pyenv
from wire import (
    FrameReader,
    ProtocolError,
    UnsupportedValue,
    decode_value,
    encode_value,
    pack_frame,
    write_frame,
)

_MESSAGE_LIMIT = 1000


class ChildGone(BaseException):
    """The program's process died, quit or broke the protocol. A BaseException so that a
    test's own `except Exception:` cannot swallow it."""


class ProgramError(Exception):
    """An exception raised by the program whose type has no builtin counterpart."""


class Judge:
    """Evaluates one job's tests. `link` is the stream to the runner: reports go out on it,
    and the runner's notices (the program's process died) come in on it."""

    def __init__(self, req_w: int, rep_r: int, link: socket.socket, link_reader: FrameReader,
                 job_id: Any) -> None:
        self._req = req_w
        self._rep = rep_r
        self._link = link
        self._link_reader = link_reader
        self._job_id = job_id
        self._reader = FrameReader()
        self._pending: list[bytes] = []
        self.calls = 0  # calls into the program, for the verdict's extra
        self.gone = ""  # why the program can no longer answer, once it cannot
        # Where the running test step is, for the depth python3 would call the program at:
        # the step's module code is at `step_depth` (+1: the probe's own frame) here, and at
        # python3's module level or one deeper, inside `check`, there.
        self.step_depth = 0
        self.step_in_check = False
        # The running case's last call into the program and what it returned: a failed
        # `assert candidate(x) == y` then says what candidate(x) was.
        self.last_call: tuple[str, tuple[Any, ...], dict[str, Any], Any] | None = None

    # ------------------------------------------------------------ talking to the child

    def _receive(self) -> dict[str, Any]:
        while True:
            for frame in self._reader.frames():
                if not isinstance(frame, dict):
                    raise ProtocolError("reply is not an object")
                return frame
            ready, _, _ = select.select([self._rep, self._link.fileno()], [], [])
            if self._rep in ready:  # data the child sent before dying still counts
                chunk = os.read(self._rep, 1 << 16)
                if chunk:
                    self._reader.feed(chunk)
                    continue
                self._die(self._await_notice(2.0))  # EOF: give the runner time to say why
            why = self._read_notice()
            if why:
                self._die(why)

    def _read_notice(self) -> str:
        """Read what the runner sent; its notice for this job if there is one, else ""."""
        data = self._link.recv(1 << 16)
        if not data:
            os._exit(0)  # the runner is gone
        self._link_reader.feed(data)
        for msg in self._link_reader.frames():
            if isinstance(msg, dict) and msg.get("op") == "notice" and msg.get("id") == self._job_id:
                return str(msg.get("why", "")) or "the program died"
        return ""

    def _await_notice(self, timeout: float) -> str:
        """The runner's word on why the program stopped answering."""
        deadline = time.monotonic() + timeout
        while select.select([self._link.fileno()], [], [], max(0.0, deadline - time.monotonic()))[0]:
            why = self._read_notice()
            if why:
                return why
        return "the program closed its reply channel"

    def _die(self, why: str) -> Any:
        self.gone = self.gone or why
        raise ChildGone(self.gone)

    def request(self, msg: Mapping[str, Any]) -> dict[str, Any]:
        if self.gone:
            raise ChildGone(self.gone)
        self.flush()
        try:
            write_frame(self._req, msg)
        except BrokenPipeError:
            pass  # the child is gone, but what it said before going is still to be read
        try:
            return self._receive()
        except ProtocolError as e:
            return self._die(f"the program broke the protocol: {e}")

    def python3_depth(self, proxy_depth: int) -> int:
        """The recursion depth the program's function would run at in python3's single file,
        where the proxy's frame (at `proxy_depth` here) is the function's own."""
        if not self.step_depth:
            return 0  # not from a test step: the child assumes a call from inside check
        return proxy_depth - self.step_depth + pyenv.SCRIPT_CALL_DEPTH + self.step_in_check

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
             depth: int = 0) -> Any:
        try:
            payload = {"op": "call", "name": name, "args": encode_value(args),
                       "kwargs": encode_value(kwargs), "depth": depth}
        except UnsupportedValue as e:
            raise UnsupportedValue(f"the tests passed a non-data argument to {name}: {e}") from None
        self.calls += 1
        reply = self.request(payload)
        if "ok" in reply:
            try:
                value = decode_value(reply["ok"])
            except ProtocolError as e:
                return self._die(f"the program broke the protocol: {e}")
            self.last_call = (name, args, kwargs, value)
            return value
        if "raise" in reply:
            raise program_exception(*_triple(reply["raise"]), base=_base_of(reply["raise"]))
        if "unsupported" in reply:
            raise UnsupportedValue(f"{name} {_short(reply['unsupported'])}")
        if "exit" in reply:
            kind, msg, _ = _triple(reply["exit"])
            return self._die(f"the program raised {kind}({msg}) and quit")
        return self._die("the program broke the protocol: unknown reply")

    # ------------------------------------------------------------ running the tests

    def report(self, msg: Mapping[str, Any]) -> None:
        self._pending.append(pack_frame(dict(msg, id=self._job_id)))

    def flush(self) -> None:
        """Send buffered reports. Called before every wait on the program (so whatever was
        decided is with the runner if the program then hangs) and at the end: one wakeup of
        the runner per call instead of one per report."""
        if self._pending:
            data, self._pending = b"".join(self._pending), []
            self._link.sendall(data)

    def run(self, job: Mapping[str, Any]) -> None:
        try:
            self._run(job)
        finally:
            self.report({"op": "done", "calls": self.calls})  # the runner's cue: job over
            self.flush()

    def _run(self, job: Mapping[str, Any]) -> None:
        names = list(job.get("names", ()))
        try:
            compiled = self.request({"op": "load", "program": job["program"], "names": names,
                                     "test_imports": list(job.get("test_imports", ())),
                                     "test_names": list(job.get("test_names", ()))})
            if compiled.get("op") == "setup_failed":  # our confinement failed, not the program
                self.report({"op": "setup_failed", "error": _short(compiled.get("error"))})
                return
            if compiled.get("op") != "compiled":
                self._die("the program broke the protocol before it ran")
            self.report({"op": "compiled", "ok": compiled.get("ok") is True,
                         "error": _error_field(compiled.get("error"))})
            if compiled.get("ok") is not True:
                return
            try:
                loaded = self._receive()
            except ProtocolError as e:
                self._die(f"the program broke the protocol: {e}")
            if loaded.get("op") != "loaded":
                self._die("the program broke the protocol while loading")
        except ChildGone:
            self.report({"op": "gone", "why": self.gone})
            return
        ok = loaded.get("ok") is True
        self.report({"op": "loaded", "ok": ok, "error": _error_field(loaded.get("error"))})
        if ok:
            self._run_steps(job, loaded.get("names") or {})

    def _bindings(self, job: Mapping[str, Any], found: Mapping[str, Any]) -> dict[str, Any]:
        ns: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
        for name, desc in found.items():
            if desc == "call":
                ns[name] = program_function(self, str(name))
            elif isinstance(desc, dict) and "value" in desc:
                try:
                    ns[name] = decode_value(desc["value"])
                except ProtocolError:
                    pass
            elif isinstance(desc, dict) and isinstance(desc.get("module"), str):
                module = _stdlib_module(desc["module"])
                if module is not None:  # our own import: the program's copy stays there
                    ns[name] = module
        entry = job.get("entry_point")
        if job.get("param"):
            ns[job["param"]] = ns.get(entry, Missing(entry)) if entry else Missing(None)
        return ns

    def _run_steps(self, job: Mapping[str, Any], found: Mapping[str, Any]) -> None:
        ns = self._bindings(job, found)
        blocked = ""  # once set, the remaining cases cannot run and say why
        index = 0
        for step in job["steps"]:
            source = step["source"]
            self.step_in_check = bool(step.get("in_check"))
            if step["kind"] != "case":
                if not blocked:
                    blocked = self._setup(source, step.get("line", 0), ns)
                continue
            if blocked:
                self._record(index, "error", f"not run: {blocked}", "NotRun", 0.0)
            else:
                self._case(index, source, ns)
                if self.gone:
                    blocked = f"the program died: {self.gone}"
            index += 1

    def _exec_step(self, source: str, ns: dict[str, Any]) -> None:
        """Run one test step (setup or case): the probe first, from the same place, so that
        calls into the program know how deep the step's own code is."""
        probe: dict[str, Any] = {"recursion_depth": pyenv.recursion_depth}
        exec(_DEPTH_PROBE, probe)
        self.step_depth = probe["depth"]
        exec(_compiled(source), ns)

    def _setup(self, source: str, line: int, ns: dict[str, Any]) -> str:
        try:
            self._exec_step(source, ns)
        except ChildGone:
            return f"the program died: {self.gone}"
        except BaseException as e:
            kind, msg = exception_name(e), _short(e)
            return f"test setup at line {line} raised {kind}: {msg}"
        return ""

    def _case(self, index: int, source: str, ns: dict[str, Any]) -> None:
        start = time.perf_counter()
        gone_before = self.gone
        status, message, kind = "passed", "", ""
        self.last_call = None
        try:
            self._exec_step(source, ns)
        except ChildGone:
            status, message, kind = "error", self.gone, "ProgramDied"
        except AssertionError as e:
            status, message = "failed", _short(e) or _returned(self.last_call) or "assertion failed"
        except BaseException as e:
            status, message, kind = "error", _short(e), exception_name(e)
        if self.gone != gone_before and status != "error":  # died, and the test hid it
            status, message, kind = "error", self.gone, "ProgramDied"
        self._record(index, status, message, kind, time.perf_counter() - start)

    def _record(self, index: int, status: str, message: str, kind: str, took: float) -> None:
        self.report({"op": "record", "index": index, "status": status, "message": message,
                     "error_type": kind, "duration": round(took, 6)})


def program_function(judge: Judge, name: str) -> Any:
    """Stands in for a program-defined callable inside the tests. A plain function, not an
    object with `__call__`: CPython counts a call through `__call__` one deeper, and the
    program's recursion limit is held to python3's from this frame's depth."""

    def call(*args: Any, **kwargs: Any) -> Any:
        depth = judge.python3_depth(pyenv.recursion_depth() - 1)
        return judge.call(name, args, kwargs, depth)

    call.__name__ = call.__qualname__ = name
    return call


class Missing:
    """`candidate` when the program does not define the entry point."""

    def __init__(self, name: str | None) -> None:
        self._name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._name is None:
            raise NameError("no entry point was given for the tests' candidate")
        raise NameError(f"the program does not define {self._name!r}")


# Modules the tests may take from the program's imports (the program names the module, so
# only ones without import-time side effects: never `antigravity`, `this`, `turtle`, ...).
_TEST_MODULES = frozenset(
    "array bisect cmath collections copy datetime decimal fractions functools hashlib heapq "
    "itertools json math numbers operator os os.path random re statistics string sys time "
    "typing unicodedata".split())


def _stdlib_module(name: str) -> types.ModuleType | None:
    """Our own import of a module the program imported and the tests use by name."""
    if name not in _TEST_MODULES:
        return None
    try:
        return importlib.import_module(name)
    except Exception:
        return None


_CODE: dict[str, types.CodeType] = {}
_DEPTH_PROBE = compile("depth = recursion_depth()", "<probe>", "exec", 0, True)


def _compiled(source: str) -> types.CodeType:
    """Test steps compiled once per judge: the samples of one problem share their tests.
    dont_inherit: as python3 compiles the tests' file, with none of our __future__ flags."""
    code = _CODE.get(source)
    if code is None:
        if len(_CODE) > 4096:
            _CODE.clear()
        code = _CODE[source] = compile(source, "<tests>", "exec", 0, True)
    return code


_PROGRAM_CLASSES: dict[tuple[str, type], type] = {}


def program_exception(kind: str, message: str, line: Any = None, base: str = "") -> Exception:
    """Re-create the program's exception as the builtin of that name (so a test expecting
    ValueError still works); a class of the program's own, as a class of that name under its
    nearest builtin base (`except ValueError:` catches the program's `class Bad(ValueError)`
    as in python3); else a ProgramError carrying the name."""
    cls = getattr(builtins, kind, None)
    exc: Exception
    try:
        if not (isinstance(cls, type) and issubclass(cls, Exception)):
            parent = getattr(builtins, base, None)
            if not (isinstance(parent, type) and issubclass(parent, Exception)):
                raise TypeError
            cls = _PROGRAM_CLASSES.get((kind, parent))
            if cls is None:
                if len(_PROGRAM_CLASSES) > 1024:
                    _PROGRAM_CLASSES.clear()
                cls = _PROGRAM_CLASSES[(kind, parent)] = type(kind, (parent,), {})
        exc = cls(message)
    except Exception:
        exc = ProgramError(f"{kind}: {message}")
    exc.coopcode_type = kind  # type: ignore[attr-defined]
    return exc


def exception_name(e: BaseException) -> str:
    return str(getattr(e, "coopcode_type", "") or type(e).__name__)


def _base_of(x: Any) -> str:
    """The builtin base the child named for a program's exception (its 4th field)."""
    return _short(x[3]) if isinstance(x, list) and len(x) == 4 else ""


def _triple(x: Any) -> tuple[str, str, Any]:
    if isinstance(x, list) and len(x) in (3, 4):
        return _short(x[0]), _short(x[1]), x[2] if type(x[2]) is int else None
    return "Exception", "unreadable exception", None


def _error_field(x: Any) -> list[Any] | None:
    return list(_triple(x)) if x is not None else None


# Bounded reprs: a returned list of a million items is said in a line, not a megabyte.
_REPR = reprlib.Repr()  # Python 3.11's Repr takes no arguments: set after
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict, _REPR.maxset = 4, 8, 8, 6, 6
_REPR.maxstring, _REPR.maxlong, _REPR.maxother = 60, 40, 60


def _returned(call: tuple[str, tuple[Any, ...], dict[str, Any], Any] | None) -> str:
    """`candidate([1.0, 2.0], 0.3) returned False`: the last call of a failed case and its
    value (decoded builtins, so their repr is the builtin's own), or ''."""
    if call is None:
        return ""
    name, args, kwargs, value = call
    shown = [_REPR.repr(a) for a in args] + [f"{k}={_REPR.repr(v)}" for k, v in kwargs.items()]
    return _short(f"{name}({', '.join(shown)}) returned {_REPR.repr(value)}")


def _short(x: object) -> str:
    s = str(x) if not isinstance(x, str) else x
    return s if len(s) <= _MESSAGE_LIMIT else s[:_MESSAGE_LIMIT] + "..."


def judge_main(link: socket.socket, fd_channel: socket.socket) -> None:
    """Serve jobs until the runner goes away. Each job arrives as a frame on `link`, its two
    pipe ends (requests to the child, replies from it) on `fd_channel`."""
    reader = FrameReader()
    while True:
        job = _next_job(link, reader)
        _, fds, _, _ = socket.recv_fds(fd_channel, 64, 2)
        if len(fds) != 2:
            os._exit(1)
        try:
            Judge(fds[0], fds[1], link, reader, job.get("id")).run(job)
        finally:
            for fd in fds:
                os.close(fd)


def _next_job(link: socket.socket, reader: FrameReader) -> dict[str, Any]:
    while True:
        for msg in reader.frames():
            if isinstance(msg, dict) and msg.get("op") == "job":
                return msg  # anything else (a late notice for a finished job) is stale
        data = link.recv(1 << 16)
        if not data:
            os._exit(0)
        reader.feed(data)
