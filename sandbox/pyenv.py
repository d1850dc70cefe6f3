"""The program's process as `python3 solution.py` gives it, where isolation does not say otherwise.

A job's program runs in a child forked from the zygote, not in a fresh interpreter, and its
tests run in another process. Left alone, that shows through: the child's own `from
__future__ import annotations` would be inherited by `compile` (annotations never
evaluated: `def f(x: List[int])` without the import would pass), `__name__` would not be
`"__main__"`, the runner's modules would be importable, `exit` missing (we run with -S), the
recursion limit met sooner (our frames sit below the program's), and the names the tests
bind at module level (which share one namespace with the program in the harness's single
file) invisible. This module puts each of those back as python3 has it. The differences
that remain are made on purpose; README's "The sandbox" lists them.

Stdlib only; copied into the image.
"""

from __future__ import annotations

import builtins
import importlib.machinery
import io
import os
import re
import sys
import types
from collections.abc import Iterable
from typing import Any

FILENAME = "solution.py"
HERE = os.path.dirname(os.path.abspath(__file__))
# The sandbox's own modules: a program must not find them (python3 would not).
SANDBOX_MODULES = ("runner", "supervise", "judge", "child", "zygote", "runner_procs", "confine",
                   "wire", "pyenv")
COMPILE_FLAGS = 0  # with dont_inherit=True: no __future__ flag of ours reaches the program

_DEPTH_MESSAGE = re.compile(r"recursion depth (\d+)")


def recursion_depth() -> int:
    """The interpreter's recursion depth of this function's own frame, as the recursion limit
    counts it (CPython says it when asked for a limit below it). Frame count if not."""
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(1)
    except RecursionError as e:
        found = _DEPTH_MESSAGE.search(str(e))
        if found:
            return int(found.group(1))
    else:  # pragma: no cover - a depth below 1 cannot happen
        sys.setrecursionlimit(limit)
    depth = 0
    frame: types.FrameType | None = sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth


# What `recursion_depth()` says when a script's module code calls it: runner.py, run as a
# script like the program's python3 file, measures it at its own module level (see
# `measure_script_depth`). The default is CPython 3.11's.
SCRIPT_CALL_DEPTH = 3
BASE_LIMIT = sys.getrecursionlimit()  # python3's default limit (1000), read before anyone sets it


def measure_script_depth() -> None:
    """Called from runner.py's module level: one frame above where a script's module code
    calls a function."""
    global SCRIPT_CALL_DEPTH
    SCRIPT_CALL_DEPTH = recursion_depth() - 1


class RecursionBudget:
    """Keeps the program's recursion limit where python3 would have it, although the
    sandbox's frames sit below the program's: before the program's module code and before
    each call into it, the limit is raised by exactly the depth python3 would not have spent.
    A limit the program sets itself (`sys.setrecursionlimit(10**6)`) is kept as its own."""

    def __init__(self) -> None:
        self.limit = BASE_LIMIT  # the program's limit, in python3's terms
        self._set = -1  # the raw limit we last set
        self._offset = 0

    def enter(self, ours: int, python3: int) -> None:
        """A frame about to run at recursion depth `ours` would be at `python3` there."""
        self._settle()
        self._offset = ours - python3
        self._set = max(self.limit + self._offset, ours + 1)
        sys.setrecursionlimit(self._set)

    def _settle(self) -> None:
        current = sys.getrecursionlimit()
        if self._set != -1 and current != self._set:
            self.limit = current  # the program set its own limit
        self._set = -1


class TestsOwn:
    """What a name the tests bind at module level (`check`, `METADATA`, a test helper) is to
    the program: in the harness's single file the tests' binding replaces the program's after
    the program's module code ran. The sandbox keeps the tests' objects out of the program's
    reach, so this stands in for them: calling it fails, as calling `check(x)` with data does
    in python3 (`'int' object is not callable`)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{self._name} is the tests' own {self._name} here (the tests bind it "
                        "after the program's code, as in python3's single file)")

    def __repr__(self) -> str:
        return f"<the tests' {self._name}>"


def program_namespace(workdir: str, program: str) -> dict[str, Any]:
    """The `__main__` module the program runs in, with `__file__` a real file holding the
    program (not the tests), `sys.argv`, `sys.path` and `sys.modules` as python3 sets them."""
    path = os.path.join(workdir, FILENAME)
    try:
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(program)
    except OSError:
        pass  # a full or tiny work dir: the program still runs, only its file is missing
    module = types.ModuleType("__main__")  # __doc__, __package__, __spec__, __loader__: None
    module.__file__ = path
    module.__cached__ = None  # type: ignore[attr-defined]
    module.__annotations__ = {}
    module.__builtins__ = builtins  # type: ignore[attr-defined]
    module.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
    for name in SANDBOX_MODULES:
        sys.modules.pop(name, None)
    sys.modules["__main__"] = module
    sys.path[:] = [workdir] + [p for p in sys.path if p not in (HERE, workdir, "")]
    sys.argv[:] = [path]
    return module.__dict__


def bind_test_globals(namespace: dict[str, Any], imports: Iterable[str],
                      names: Iterable[str]) -> None:
    """What the tests' module-level code does to the program's namespace in python3's single
    file: their imports are run there (a function using `math` that only the tests import
    works), and every other name they bind stands in as `TestsOwn`."""
    for name in names:
        namespace[name] = TestsOwn(str(name))
    for source in imports:
        try:
            exec(compile(source, "<tests>", "exec", COMPILE_FLAGS, True), namespace)
        except BaseException:
            pass  # the tests' own import fails there too: their setup reports it


def standard_streams(out_fd: int, err_fd: int, in_fd: int) -> None:
    """stdout, stderr and stdin with python3's encodings and error handlers for this locale."""
    def stream(fd: int, mode: str, like: Any, default_errors: str) -> io.TextIOWrapper:
        encoding = getattr(like, "encoding", None) or "utf-8"
        errors = getattr(like, "errors", None) or default_errors
        return io.TextIOWrapper(io.FileIO(fd, mode, closefd=False), encoding=encoding,
                                errors=errors)

    sys.stdout = stream(out_fd, "w", sys.__stdout__, "strict")
    sys.stderr = stream(err_fd, "w", sys.__stderr__, "backslashreplace")
    sys.stdin = stream(in_fd, "r", sys.__stdin__, "strict")


def site_builtins() -> None:
    """`exit`, `quit`, `help`, `copyright`, `credits` and `license`, and the site directories:
    what `site` gives python3 and our -S start leaves out. Run in the zygote, before any fork."""
    import site

    site.main()


def builtin_base(e: BaseException) -> str:
    """The nearest builtin exception class of `e` (a program's `class Bad(ValueError)` is a
    ValueError to the tests, as `except ValueError:` in python3 catches it)."""
    for cls in type(e).__mro__:
        if getattr(builtins, cls.__name__, None) is cls:
            return cls.__name__
    return "BaseException"
