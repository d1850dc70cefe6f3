"""How long a bench will take before it starts, and how its samples in flight are doing.

The estimate is samples x seconds per sample, the seconds *measured* on this machine: by the
last bench of the same model in runs/ (its meta.json: the last session's wall time over the
samples it wrote), else by this session's own Collaborate run (one sample alone: an upper
bound, since a bench batches its samples), else unknown (said so, never guessed).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class SampleSeconds:
    seconds: float  # per sample
    source: str  # where it was measured, for the user


def bench_seconds_per_sample(model: str, root: Path = Path("runs")) -> SampleSeconds | None:
    """Seconds per sample of the most recent bench of `model` in `root` (its last session)."""
    best: tuple[float, SampleSeconds] | None = None
    for meta_path in root.glob("*/meta.json") if root.is_dir() else ():
        try:
            meta = json.loads(meta_path.read_text())
            session = meta.get("last_session") or {}
            samples, wall = int(session.get("samples", 0)), float(meta["last_session_seconds"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if meta.get("model") != model or samples <= 0 or wall <= 0:
            continue
        mtime = meta_path.stat().st_mtime
        found = SampleSeconds(wall / samples, f"runs/{meta_path.parent.name}, {samples} samples")
        if best is None or mtime > best[0]:
            best = (mtime, found)
    return best[1] if best else None


def estimate_text(samples: int, per_sample: SampleSeconds | None) -> str:
    """`10 samples × 12.3 s ≈ 2m03s (measured: runs/x, 400 samples)`."""
    if per_sample is None:
        return f"{samples} samples · time per sample not measured here yet (a run on F3 measures it)"
    total = samples * per_sample.seconds
    return (f"{samples} samples × {per_sample.seconds:.1f} s ≈ {duration(total)} "
            f"(measured: {per_sample.source})")


def duration(seconds: float) -> str:
    """`45s`, `12m05s`, `2h10m`."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


class InFlight:
    """Tokens written so far by each sample of a running bench, from its token events.

    Fed on the job's follower thread (a token event per few tokens is too many to post to
    the UI one by one); the screen reads a summary on a timer."""

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        # (task id, sample): a sample of two schemes at once counts as one (token events
        # do not name the scheme)
        self.tokens: dict[tuple[str, int], int] = {}
        self.total = 0
        self.lock = threading.Lock()

    def add(self, event: Any) -> None:
        key = (event.task_id, event.sample)
        with self.lock:
            self.tokens[key] = self.tokens.get(key, 0) + event.tokens
            self.total += event.tokens

    def done(self, task_id: str, sample: int) -> None:
        with self.lock:
            self.tokens.pop((task_id, sample), None)

    def summary(self, width: int = 5) -> str:
        """`writing 3: 120 · 88 · 40 tok (of 512 each) · 1,204 tok in all`."""
        with self.lock:
            counts = sorted(self.tokens.values(), reverse=True)
            total = self.total
        if not counts:
            return f"{total:,} tok in all" if total else ""
        shown = " · ".join(str(c) for c in counts[:width]) + (" …" if len(counts) > width else "")
        return (f"writing {len(counts)}: {shown} tok (of {self.max_tokens} per agent) · "
                f"{total:,} tok in all")
