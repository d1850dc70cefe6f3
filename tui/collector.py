"""Python's cycle collector, kept from stalling the interface.

A full collection walks every tracked object while holding the GIL, so the event loop can
neither draw nor take a key until it ends. Once torch and transformers are imported that
is ~220,000 objects, 0.4-0.8 s a pass here, and importing them starts a new full pass each
time the heap grows by a quarter: loading the tiny model in the TUI ran 8 full passes of
0.4-1.3 s (measured with `gc.callbacks`, 2026-11-28), and the longest became the loop's
longest gap.

So a load runs with the collector paused, and what it leaves is moved to the permanent
generation (`gc.freeze`): modules, classes and the model live as long as the TUI anyway,
and later passes walk only what came after. Freeing a model is the one time the frozen
objects must be walked again (the model's cycles are among them): `collect_all` thaws,
collects and freezes what is left.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0  # loads under way (one at a time in the TUI, but nesting is safe)
_was_enabled = True  # the collector's state before the outermost pause


@contextmanager
def paused_then_frozen() -> Iterator[None]:
    """Run the body with the cycle collector paused, then freeze what exists and resume."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.freeze()
                if _was_enabled:
                    gc.enable()


def collect_all() -> None:
    """Collect every cycle, the frozen included (a released model's), then freeze the rest."""
    with _lock:
        gc.unfreeze()
        gc.collect()
        gc.freeze()
