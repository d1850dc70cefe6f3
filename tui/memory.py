"""How much memory the TUI holds and a job would add, for the line shown before a job.

A bench or training job runs as a child process with a model of its own: a child cannot use
the TUI's model (separate processes share no tensors; jobs are children so that a crash,
an out-of-memory kill or a detach never takes the interface down). Measured here: a 1-sample
bench child of the 0.5B model peaked at 3.4 GB while the TUI held its own copy. So before a
job starts the screen says what the TUI holds, what the last job of that kind peaked at
(measured when it ended), and what is free, and offers to free the TUI's model while the
job runs: then one model is in memory, the child's.
"""

from __future__ import annotations

import json
import os
import resource
from pathlib import Path
from typing import Any

GB = 1e9


def rss_bytes() -> int:
    """This process's resident memory (Linux /proc; 0 where unknown)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def available_bytes() -> int:
    """Memory the kernel says a new process can have without swapping (MemAvailable)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _peaks_file() -> Path:
    from coopcode import cache_dir

    return cache_dir() / "tui" / "job-peaks.json"


def job_peak(job: str) -> int | None:
    """The peak memory the last `job` (bench, training) started from the TUI reached."""
    try:
        value = json.loads(_peaks_file().read_text()).get(job)
    except (OSError, ValueError, AttributeError):
        return None
    return int(value) if isinstance(value, int | float) and value > 0 else None


def record_job_peak(job: str) -> None:
    """After a job's child was waited for: its peak resident memory, for the next estimate
    (the largest child this process waited for: the job's, beside small sandbox workers)."""
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # KiB on Linux
    if peak <= 0:
        return
    path = _peaks_file()
    try:
        data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        data[job] = peak
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data))
    except (OSError, ValueError):
        pass  # an estimate, never worth an error


def memory_line(job: str, baseline: int, holds_model: bool) -> str:
    """`memory: TUI 5.7 GB (model ~5.5) · a bench peaked at 3.4 GB · 12.3 GB free`."""
    tui, free = rss_bytes(), available_bytes()
    model = tui - baseline if holds_model and tui > baseline else 0
    held = f" (model ~{model / GB:.1f})" if model >= 0.05 * GB else ""
    peak = job_peak(job)
    needs = (f"the last {job} peaked at {peak / GB:.1f} GB" if peak
             else f"a {job} loads its own model" + (f" (~{model / GB:.1f} GB)" if held else ""))
    return f"memory: TUI {tui / GB:.1f} GB{held} · {needs} · {free / GB:.1f} GB free"


def needs_bytes(job: str, baseline: int, holds_model: bool) -> int:
    """What a `job` is expected to take: its last measured peak, else the TUI's model."""
    peak = job_peak(job)
    if peak:
        return peak
    return max(0, rss_bytes() - baseline) if holds_model else 0
