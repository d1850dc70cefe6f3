"""Recording the forwards of the embedded engine's decode loop (what each one held)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from coopcode.engines.embedded.batching import Forward


@contextmanager
def traced(engine: Any) -> Iterator[list[Forward]]:
    """Every forward the engine runs inside the block: rows in flight, decode tokens, the
    sizes of the prompt chunks, the adapters."""
    batcher = engine.batcher()
    batcher.trace = seen = []
    try:
        yield seen
    finally:
        batcher.trace = None
