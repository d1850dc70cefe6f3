"""Stop strings on streamed text: where a stop string cuts it, and how much may be shown.

A stream never shows a stop string nor the start of one that may still complete: text that
could begin one is held back until the next piece decides it.
"""

from __future__ import annotations

from collections.abc import Sequence


def find_stop(text: str, stops: Sequence[str], start: int = 0) -> int | None:
    """Where the first stop string in `text[start:]` begins (None: none there)."""
    hits = [p for s in stops if (p := text.find(s, start)) >= 0]
    return min(hits) if hits else None


def stop_search_start(shown: int, stops: Sequence[str]) -> int:
    """Only the tail can hold a new stop string: search from just before what was shown."""
    return max(0, shown - max((len(s) for s in stops), default=0))


def safe_length(text: str, stops: Sequence[str]) -> int:
    """How much of `text` can be shown: not an incomplete multi-byte character at the end,
    nor a tail that may be the start of a stop string."""
    safe = len(text)
    if text.endswith("\ufffd"):
        safe = len(text.rstrip("\ufffd"))
    for s in stops:
        for k in range(min(len(s) - 1, safe), 0, -1):
            if text.endswith(s[:k], 0, safe):
                safe -= k
                break
    return safe
