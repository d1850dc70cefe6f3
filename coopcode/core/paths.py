"""Where coopcode keeps things on disk."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Converted models and other caches: $COOPCODE_CACHE, else ~/.cache/coopcode."""
    env = os.environ.get("COOPCODE_CACHE")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "coopcode"
    return base
