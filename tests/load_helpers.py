"""Load on this machine's CPUs for a test: busy loops in processes of their own."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def spinning(n: int) -> Iterator[None]:
    """`n` busy loops (plain Python, no model code) for the duration of the block."""
    # Each in its own session: with autogroup scheduling a session shares the CPU as one.
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
                for _ in range(n)]
    try:
        yield
    finally:
        for p in spinners:
            p.kill()
            p.wait()
