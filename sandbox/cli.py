"""`coopcode sandbox build | status | run`: the sandbox from the command line.

Mounted by coopcode's CLI as a sub-app. Imports stay light here (Docker and the pool load
inside the commands) so `coopcode --help` stays fast. User errors end in one line on stderr
and exit code 2; `run` exits 0 when every test passed and 1 otherwise.
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
import time
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

app = typer.Typer(help="The sandbox: build the image, show its status, run a file.",
                  no_args_is_help=True, add_completion=False)

# A CPU-seconds ceiling: beyond an hour the wall-clock deadline (a multiple) overflows time_t.
MAX_TIMEOUT = 3600.0

BackendOpt = Annotated[str, typer.Option("--backend", "--sandbox",
                                         help="auto (Docker when a daemon answers), docker or process.")]


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def _progress(message: str) -> None:
    typer.echo(message, err=True)


@app.command()
def build() -> None:
    """Build the sandbox image if it is missing (registry, else offline via debootstrap)."""
    from sandbox.image import ensure_image
    from sandbox.verdict import SandboxUnavailable

    try:
        tag = ensure_image(progress=_progress)
    except SandboxUnavailable as e:
        _fail(str(e))
    except Exception as e:
        _fail(f"image build failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
    typer.echo(tag)


@app.command()
def status(
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object (keys: docker, process, auto_backend, pool).")] = False,
    probe: Annotated[bool, typer.Option("--probe/--no-probe",
                                        help="Start a one-worker pool and time one job.")] = True,
) -> None:
    """Daemon, image, containers, process-backend isolation and a pool probe.

    Plain `key : value` lines, values in full (they pipe as they are). `--json` prints one
    object: `docker` {daemon, image, and server_version, image_present, our_containers,
    other_containers with a daemon, else error}, `process` {root, namespaces, python,
    isolation}, `auto_backend`, and `pool` {backend, start_seconds, job_ms, status, features,
    or error} unless --no-probe.
    """
    info = collect_status(probe)
    if json_out:
        typer.echo(json.dumps(info, indent=2))
        return
    d = info["docker"]
    if d["daemon"]:
        typer.echo(f"docker daemon : answers (server {d['server_version']})")
        typer.echo(f"image         : {d['image']} ({'present' if d['image_present'] else 'missing: run `coopcode sandbox build`'})")
        typer.echo(f"containers    : {d['our_containers']} of this process, {d['other_containers']} of other live owners")
    else:
        typer.echo(f"docker daemon : no ({d['error']})")
    p = info["process"]
    typer.echo(f"process       : {p['isolation']} (python {p['python']})")
    typer.echo(f"auto backend  : {info['auto_backend']}")
    pool = info.get("pool")
    if pool:
        if pool.get("error"):
            typer.echo(f"pool          : {pool['backend']}: {pool['error']}")
        else:
            typer.echo(f"pool          : {pool['backend']}, 1 worker started in {pool['start_seconds']:.2f} s, "
                       f"one job in {pool['job_ms']:.1f} ms ({pool['status']})")


def collect_status(probe: bool) -> dict[str, Any]:
    from sandbox.image import image_present, image_tag
    from sandbox.process_backend import isolation_summary, namespaces_available, sandbox_python
    from sandbox.verdict import SandboxUnavailable

    root = os.geteuid() == 0
    info: dict[str, Any] = {"docker": {"daemon": False, "image": image_tag()}}
    try:
        from sandbox import docker_backend, image

        dc = image.client()
        ours = docker_backend.our_containers(dc)
        every = docker_backend.sandbox_containers(dc)
        info["docker"].update(
            daemon=True, server_version=dc.version().get("Version", "?"),
            image_present=image_present(image_tag(), dc),
            our_containers=len(ours), other_containers=len(every) - len(ours))
    except SandboxUnavailable as e:
        info["docker"]["error"] = str(e)
    ns = root and namespaces_available()
    from sandbox import cgroups

    features: dict[str, object] = {"namespaces": ns, "cgroup": cgroups.available(),
                                   "uid": "per-slot" if root else os.getuid()}
    info["process"] = {"root": root, "namespaces": ns, "python": sandbox_python(root),
                       "isolation": isolation_summary(features)}
    docker_ready = info["docker"]["daemon"] and info["docker"].get("image_present")
    info["auto_backend"] = "docker" if docker_ready else "process"
    if probe:
        info["pool"] = _probe("docker" if docker_ready else "process")
    return info


def _probe(backend: str) -> dict[str, Any]:
    from sandbox import Job, SandboxUnavailable, open_sandbox

    t0 = time.monotonic()
    try:
        with open_sandbox(backend=backend, workers=1) as sb:
            started = time.monotonic() - t0
            t1 = time.perf_counter()
            v = sb.run(Job(program="def f(x):\n    return x + 1\n",
                           tests="assert f(1) == 2\n", entry_point="f"))
            took = (time.perf_counter() - t1) * 1000
            features = sb.status()["features"]
    except SandboxUnavailable as e:
        return {"backend": backend, "error": str(e)}
    return {"backend": backend, "start_seconds": round(started, 3), "job_ms": round(took, 2),
            "status": v.status, "features": features}


@app.command()
def run(
    file: Annotated[Path, typer.Argument(help="A .py file: a solution plus `def check(candidate)` "
                                               "and `check(entry)`, or plain asserts.")],
    backend: BackendOpt = "auto",
    timeout: Annotated[float, typer.Option("--timeout", help="CPU seconds for the whole job.")] = 5.0,
    entry: Annotated[str | None, typer.Option("--entry", help="The function the tests call "
                                              "`candidate` (default: from `check(NAME)`).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the verdict as one JSON object.")] = False,
) -> None:
    """Run FILE's solution against its tests in the sandbox and print the verdict."""
    from sandbox import Job, SandboxUnavailable, open_sandbox
    from sandbox.testsplit import split_solution_file

    # NaN passes `<= 0`; infinity overflows the wall-clock deadline: both are refused.
    if not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT):
        _fail(f"--timeout must be positive and at most {MAX_TIMEOUT:g} CPU seconds (got {timeout})")
    if entry is not None and not entry.isidentifier():
        _fail(f"--entry {entry!r}: not a Python function name")
    source = _read_solution(file)
    program, tests, found_entry = split_solution_file(source)
    job = Job(program=program, tests=tests, entry_point=entry or found_entry, timeout=timeout)
    try:
        with open_sandbox(backend=backend, workers=1, warn=_progress, progress=_progress) as sb:
            verdict = sb.run(job)
    except SandboxUnavailable as e:
        _fail(str(e))
    if json_out:
        typer.echo(json.dumps(verdict.to_dict(), indent=2))
    else:
        _print_verdict(verdict)
    raise typer.Exit(0 if verdict.passed else 1)


def _read_solution(file: Path) -> str:
    """The text of FILE, or one line saying why it cannot be the file to run."""
    try:
        st = file.stat()
    except FileNotFoundError:
        _fail(f"no such file: {file}" + (" (a broken symlink)" if file.is_symlink() else ""))
    except OSError as e:
        _fail(f"cannot read {file}: {e.strerror}")
    if stat.S_ISDIR(st.st_mode):
        _fail(f"{file}: a folder, where a .py file is expected: pass the file inside it")
    if not stat.S_ISREG(st.st_mode):  # a FIFO would block the read forever
        _fail(f"{file}: not a regular file (a FIFO, socket or device): pass a .py file")
    try:
        data = file.read_bytes()
    except OSError as e:
        _fail(f"cannot read {file}: {e.strerror}")
    if b"\0" in data:
        _fail(f"{file}: a binary file, not Python source")
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        _fail(f"{file}:{line}: not UTF-8 text: save the file as UTF-8")
    if not source.strip():
        _fail(f"{file}: an empty file: write a solution and its tests (asserts or def check)")
    return source


def _print_verdict(v: Any) -> None:
    mark = {"passed": "ok", "failed": "FAIL", "error": "ERROR", "timeout": "TIMEOUT"}
    for t in v.tests:
        first = t.source.strip().splitlines()[0] if t.source.strip() else ""
        line = f"  {mark.get(t.status, t.status):7} {first[:90]}"
        if not t.passed and t.message:
            line += f"\n          {t.error_type + ': ' if t.error_type else ''}{t.message[:200]}"
        typer.echo(line)
    summary = f"{v.status.upper()}: {v.n_passed}/{v.n_tests} tests passed ({v.backend}, {v.duration * 1000:.0f} ms)"
    if v.detail:
        summary += f"\n{v.detail}"
    typer.echo(summary, err=False)
    if v.stdout.strip():
        typer.echo("--- program stdout ---\n" + v.stdout.rstrip()[:2000])
    sys.stdout.flush()
