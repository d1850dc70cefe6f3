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
import select
import socket
import time
import types
from collections.abc import Mapping
from typing import Any

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

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            payload = {"op": "call", "name": name, "args": encode_value(args),
                       "kwargs": encode_value(kwargs)}
        except UnsupportedValue as e:
            raise UnsupportedValue(f"the tests passed a non-data argument to {name}: {e}") from None
        self.calls += 1
        reply = self.request(payload)
        if "ok" in reply:
            try:
                return decode_value(reply["ok"])
            except ProtocolError as e:
                return self._die(f"the program broke the protocol: {e}")
        if "raise" in reply:
            raise program_exception(*_triple(reply["raise"]))
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
            compiled = self.request({"op": "load", "program": job["program"], "names": names})
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
        ns: dict[str, Any] = {"__name__": "__tests__", "__builtins__": builtins}
        for name, desc in found.items():
            if desc == "call":
                ns[name] = Proxy(self, str(name))
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

    def _setup(self, source: str, line: int, ns: dict[str, Any]) -> str:
        try:
            exec(_compiled(source), ns)
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
        try:
            exec(_compiled(source), ns)
        except ChildGone:
            status, message, kind = "error", self.gone, "ProgramDied"
        except AssertionError as e:
            status, message = "failed", _short(e) or "assertion failed"
        except BaseException as e:
            status, message, kind = "error", _short(e), exception_name(e)
        if self.gone != gone_before and status != "error":  # died, and the test hid it
            status, message, kind = "error", self.gone, "ProgramDied"
        self._record(index, status, message, kind, time.perf_counter() - start)

    def _record(self, index: int, status: str, message: str, kind: str, took: float) -> None:
        self.report({"op": "record", "index": index, "status": status, "message": message,
                     "error_type": kind, "duration": round(took, 6)})


class Proxy:
    """Stands in for a program-defined callable inside the tests."""

    def __init__(self, judge: Judge, name: str) -> None:
        self._judge = judge
        self.__name__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._judge.call(self.__name__, args, kwargs)

    def __repr__(self) -> str:
        return f"<program function {self.__name__}>"


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


def _compiled(source: str) -> types.CodeType:
    """Test steps compiled once per judge: the samples of one problem share their tests."""
    code = _CODE.get(source)
    if code is None:
        if len(_CODE) > 4096:
            _CODE.clear()
        code = _CODE[source] = compile(source, "<tests>", "exec")
    return code


def program_exception(kind: str, message: str, line: Any = None) -> Exception:
    """Re-create the program's exception as the builtin of that name (so a test expecting
    ValueError still works), else a ProgramError carrying the name."""
    cls = getattr(builtins, kind, None)
    exc: Exception
    try:
        if not (isinstance(cls, type) and issubclass(cls, Exception)):
            raise TypeError
        exc = cls(message)
    except Exception:
        exc = ProgramError(f"{kind}: {message}")
    exc.coopcode_type = kind  # type: ignore[attr-defined]
    return exc


def exception_name(e: BaseException) -> str:
    return str(getattr(e, "coopcode_type", "") or type(e).__name__)


def _triple(x: Any) -> tuple[str, str, Any]:
    if isinstance(x, list) and len(x) == 3:
        return _short(x[0]), _short(x[1]), x[2] if type(x[2]) is int else None
    return "Exception", "unreadable exception", None


def _error_field(x: Any) -> list[Any] | None:
    return list(_triple(x)) if x is not None else None


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
