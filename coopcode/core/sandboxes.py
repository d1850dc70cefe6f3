"""Opening the sandbox for a command: no Docker (or no process backend) is one line to the
user, not a traceback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coopcode.core.errors import UserError


def open_sandbox_for_cli(backend: str, warn: Callable[[str], None]) -> Any:
    from sandbox import SandboxUnavailable, open_sandbox

    try:
        return open_sandbox(backend=backend, warn=warn)
    except SandboxUnavailable as e:
        raise UserError(str(e)) from None
