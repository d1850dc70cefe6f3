"""Idle threads give their CPU workers back, so the thread computing gets every core.

PyTorch's CPU kernels run on OpenMP, and OpenMP keeps a team of worker threads per thread that
has run a parallel kernel. The embedded engine computes on its own decode thread while the
thread that loaded the model (or trains, or loaded an adapter) waits. When idle workers spin
(libgomp's default; coopcode sets `OMP_WAIT_POLICY=PASSIVE`, but a user's environment or a
program that loaded torch first may not), measured on a 2-core AMD EPYC, a single-token
forward of the 0.5B model took 50 ms on a thread after the main thread had run one forward,
against 36-38 ms when the main thread's team had been released (`omp_pause_resource_all`,
OpenMP 5.0). So a thread about to wait on another one's computation calls `release()`; its
team is made again, in microseconds, the next time it computes. Under PASSIVE it costs and
gains next to nothing (BENCHMARKS.md, "A single stream").
"""

from __future__ import annotations

import ctypes
import glob
import os
from typing import Any

_pause: Any = None  # omp_pause_resource_all of the OpenMP runtime torch runs on, once found
_looked = False


def _find_pause() -> Any:
    global _pause, _looked
    if _looked:
        return _pause
    _looked = True
    try:
        import torch

        libs = glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "libgomp*.so*"))
        libs += glob.glob(os.path.join(os.path.dirname(torch.__file__), os.pardir, "torch.libs",
                                       "libgomp*.so*"))
        for path in [*libs, None]:  # None: whatever runtime the process has loaded already
            try:
                fn = getattr(ctypes.CDLL(path), "omp_pause_resource_all", None)
            except OSError:
                continue
            if fn is not None:
                fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int
                _pause = fn
                break
    except Exception:  # noqa: BLE001 - no OpenMP to release is not an error
        _pause = None
    return _pause


def release() -> bool:
    """Let this thread's OpenMP workers go (soft pause); True if the runtime did."""
    pause = _find_pause()
    if pause is None:
        return False
    return bool(pause(1) == 0)  # 1: omp_pause_soft
