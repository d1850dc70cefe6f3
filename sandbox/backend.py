"""Choosing a backend: `open_sandbox(backend="auto" | "docker" | "process")`."""

from __future__ import annotations

from collections.abc import Callable

from sandbox.pool import WorkerPool
from sandbox.verdict import SandboxUnavailable

BACKENDS = ("auto", "docker", "process")


def open_sandbox(
    backend: str = "auto",
    workers: int | None = None,
    warn: Callable[[str], None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> WorkerPool:
    """Start a warm sandbox. `auto` uses Docker when a daemon answers (building the image
    if it is missing, reporting through `progress`), otherwise the process backend after
    ONE line through `warn`. `docker` raises SandboxUnavailable when it cannot run."""
    if backend not in BACKENDS:
        raise SandboxUnavailable(f"unknown sandbox backend {backend!r}: use one of {', '.join(BACKENDS)}")
    if backend in ("auto", "docker"):
        from sandbox.docker_backend import DockerSandbox

        try:
            return DockerSandbox(workers, progress=progress)
        except SandboxUnavailable as e:
            if backend == "docker":
                raise
            if warn is not None:
                warn(f"warning: {e}; falling back to the process sandbox (weaker isolation)")
    from sandbox.process_backend import ProcessSandbox

    return ProcessSandbox(workers)
