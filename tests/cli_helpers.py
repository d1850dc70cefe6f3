"""Running the `coopcode` CLI as a user does (a subprocess, stdout a pipe) and judging its errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def coopcode(*args: str, env: dict[str, str] | None = None, timeout: float = 300,
             cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coopcode", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=cwd)


def assert_one_line_error(done: subprocess.CompletedProcess, *needles: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    # One error line, last; progress lines ("loading model ...") may come before it.
    assert len(errors) == 1 and lines[-1] == errors[0], done.stderr
    assert "Traceback" not in done.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]


def assert_refused(done: subprocess.CompletedProcess, *needles: str) -> None:
    """Refused before anything loads: exit 2 and the `error:` line is all of stderr."""
    assert_one_line_error(done, *needles)
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
