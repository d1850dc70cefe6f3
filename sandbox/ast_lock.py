"""One `ast.parse` at a time in this process.

CPython keeps the AST constructor's recursion depth in interpreter-wide state: when a thread
switch lands inside `ast.parse` (a finalizer the garbage collector runs midway is enough)
and another thread parses meanwhile, one of them fails with "SystemError: AST constructor
recursion depth mismatch" (CPython gh-106905; seen here on 3.11.7, in a bench whose pool
threads split tests while its judging thread parsed programs). coopcode parses on several
threads (the sandbox's pool, the judging, the scheduler's final jobs), so `install` wraps
`ast.parse`, which `ast.literal_eval` calls too, in a lock. Parsing holds the GIL anyway:
the lock makes nothing wait that ran in parallel. Re-entrant, for a finalizer that parses.

What coopcode parses is mostly a model's code: the compiler's warnings about that text
(`invalid escape sequence '\\s'` in a plain string, a DeprecationWarning on 3.11 and a
SyntaxWarning printed to the user's terminal from 3.12) are about the parsed text, not about
the program parsing it, so the locked parse does not pass them on.

Stdlib only (the sandbox package's rule).
"""

from __future__ import annotations

import ast
import threading
import warnings
from typing import Any

_LOCK = threading.RLock()
_UNLOCKED = ast.parse


def locked_parse(*args: Any, **kwargs: Any) -> Any:
    with _LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return _UNLOCKED(*args, **kwargs)


def install() -> None:
    """Make `ast.parse` the locked one in this process (idempotent)."""
    ast.parse = locked_parse  # type: ignore[assignment]
