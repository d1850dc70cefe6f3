"""Choosing a backend: `open_sandbox(backend="auto" | "docker" | "process")`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from sandbox.verdict import SandboxUnavailable

if TYPE_CHECKING:
    from sandbox.pool import WorkerPool

BACKENDS = ("auto", "docker", "process")


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def open_sandbox(
    backend: str = "auto",
    workers: int | None = None,
    warn: Callable[[str], None] | None = None,
    progress: Callable[[str], None] | None = _stderr,
) -> WorkerPool:
    """Start a warm sandbox (a context manager; `close()` when done).

    `auto` uses Docker when a daemon answers, building the image first if it is missing
    (one progress line, through `progress`); otherwise the process backend, after ONE
    warning line through `warn`. `docker` and `process` raise SandboxUnavailable, with a
    message a user can act on, when they cannot run. `workers` defaults to the CPU count.
    """
    if backend not in BACKENDS:
        raise SandboxUnavailable(
            f"unknown sandbox backend {backend!r}: use one of {', '.join(BACKENDS)}")
    if backend in ("auto", "docker"):
        from sandbox.docker_backend import DockerSandbox

        try:
            return DockerSandbox(workers, progress=progress)
        except SandboxUnavailable as e:
            if backend == "docker":
                raise
            if warn is not None:
                warn(f"warning: {e}; using the process sandbox instead (weaker isolation)")
    from sandbox.process_backend import ProcessSandbox

    return ProcessSandbox(workers)
