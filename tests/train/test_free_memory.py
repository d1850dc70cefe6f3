"""A long training run hands the memory a step freed back to the system after each step
(`release_free_memory`), so its resident memory does not climb step after step: glibc keeps
freed blocks that sit below a live one, which is what a step's tensors of changing sizes
leave behind. Measured on this process's own memory (/proc), no model needed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from coopcode.training.metrics import (
    peak_rss_mb,
    release_free_memory,
    rss_mb,
    start_step_peak,
    step_peak_rss_mb,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="glibc's malloc_trim and /proc: Linux only")


# In a fresh interpreter: in a process that already freed many small blocks (the suite's
# earlier tests), glibc serves the small live blocks from those holes, the big ones lie side
# by side, and freeing them shrinks the heap on its own: nothing would be left to hand back.
PINNED_BELOW_LIVE = """
from coopcode.training.metrics import release_free_memory, rss_mb
release_free_memory()
before = rss_mb()
big, pinned = [], []
for _ in range(2000):  # ~190 MB in blocks under the mmap threshold, each followed by a live one
    big.append(bytearray(100_000))
    pinned.append(bytearray(600))
grown = rss_mb() - before
del big
kept = rss_mb() - before  # freed, but glibc keeps it: the climb a long run saw
release_free_memory()
print(grown, kept, rss_mb() - before, len(pinned))
"""


def test_freed_blocks_pinned_below_live_ones_are_handed_back() -> None:
    done = subprocess.run([sys.executable, "-c", PINNED_BELOW_LIVE], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    grown, kept, after, pinned = (float(x) for x in done.stdout.split())
    assert grown > 150 and kept > 150, (grown, kept)
    assert after < 40, after
    assert pinned == 2000


def test_current_and_peak_memory_read_in_megabytes() -> None:
    now, peak = rss_mb(), peak_rss_mb()
    assert 10 < now <= peak + 1


def test_a_step_peak_is_the_step_own_and_the_process_peak_keeps_the_highest() -> None:
    """A step that needs little reports little, though an earlier one peaked higher: the
    peak a step line shows is that step's, and the process's peak still counts the earlier."""
    release_free_memory()
    assert start_step_peak()
    big = bytearray(300 << 20)  # touched: 300 MB resident
    big[:: 4096] = b"x" * len(range(0, len(big), 4096))
    high = step_peak_rss_mb()
    assert high - rss_mb() > -10 and high > 300
    del big
    release_free_memory()
    assert start_step_peak()
    small = step_peak_rss_mb()
    assert small < high - 250, (small, high)
    assert peak_rss_mb() >= high - 1
