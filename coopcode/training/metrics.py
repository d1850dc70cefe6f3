"""Where step metrics go: metrics.jsonl, events (the TUI plots them), TensorBoard if present."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import json
import os
import resource
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coopcode.core.events import Emit, Metric
from coopcode.core.files import append_line

if TYPE_CHECKING:
    from torch.utils.tensorboard import SummaryWriter

_earlier_peak_mb = 0.0  # the highest peak before the last `start_step_peak` reset it


def peak_rss_mb() -> float:
    """The process's peak resident memory so far, in MB (ru_maxrss: KB on Linux, B on macOS),
    counting the peaks `start_step_peak` reset."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return max(_earlier_peak_mb, peak / 2**20 if sys.platform == "darwin" else peak / 1024)


def start_step_peak() -> bool:
    """Start measuring a step's own peak (`step_peak_rss_mb`): Linux resets a process's
    high-water mark when "5" is written to /proc/self/clear_refs. False where it cannot."""
    global _earlier_peak_mb
    before = peak_rss_mb()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    _earlier_peak_mb = before
    return True


def step_peak_rss_mb() -> float:
    """The peak resident memory since `start_step_peak`, in MB (VmHWM; without a reset, the
    process's peak so far)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return peak_rss_mb()


def step_memory() -> dict[str, float]:
    """A step's memory figures for metrics.jsonl, read at its end (after the freed memory is
    handed back): its own peak, the process's peak (evaluations included), what is left."""
    return {"step_peak_rss_mb": step_peak_rss_mb(), "peak_rss_mb": peak_rss_mb(),
            "rss_mb": rss_mb()}


def rss_mb() -> float:
    """The process's resident memory now, in MB (0.0 where /proc is not there)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None where there is no glibc."""
    name = ctypes.util.find_library("c") if sys.platform.startswith("linux") else None
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except OSError:
        return None


def release_free_memory() -> None:
    """Hand the memory freed during a step back to the system (glibc's malloc_trim).

    A step's tensors differ in size from step to step (prompt and completion lengths), and
    glibc keeps what they freed in fragmented arenas: without a trim, a long run's resident
    memory climbs step after step until the machine runs out. Elsewhere (no glibc) a no-op."""
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


class MetricsLog:
    """Appends one JSON line per step and emits a `Metric` event with the same values."""

    def __init__(self, out: Path, emit: Emit, *, tensorboard: bool = True, write: bool = True) -> None:
        self.path = out / "metrics.jsonl"
        self.emit = emit
        self.write = write  # False on ranks other than 0: one process writes the run's files
        self.history: list[dict[str, Any]] = _read(self.path)
        self._tb: SummaryWriter | None = None
        if tensorboard and write:
            try:
                from torch.utils.tensorboard import SummaryWriter  # needs the tensorboard package

                self._tb = SummaryWriter(str(out / "tb"))
            except ImportError:
                self._tb = None

    def log(self, step: int, values: dict[str, float], extra: dict[str, Any] | None = None) -> None:
        clean = {k: float(v) for k, v in values.items()}
        record = {"step": step, **clean, **(extra or {})}
        if self.write:  # whole or not at all, on disk before the next step (a kill, a full disk)
            append_line(self.path, json.dumps(record) + "\n")
        self.history.append(record)
        self.emit(Metric(step=step, values=clean))
        if self._tb is not None:
            for k, v in clean.items():
                self._tb.add_scalar(k, v, step)
            self._tb.flush()

    def recent(self, key: str, window: int = 10) -> float | None:
        """Mean of `key` over the last `window` steps (None when never logged)."""
        vals = [r[key] for r in self.history[-window:] if isinstance(r.get(key), int | float)]
        return sum(vals) / len(vals) if vals else None

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out
