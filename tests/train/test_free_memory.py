"""A long training run hands the memory a step freed back to the system after each step
(`release_free_memory`), so its resident memory does not climb step after step: glibc keeps
freed blocks that sit below a live one, which is what a step's tensors of changing sizes
leave behind. Measured on this process's own memory (/proc), no model needed."""

from __future__ import annotations

import sys

import pytest

from coopcode.training.metrics import peak_rss_mb, release_free_memory, rss_mb

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="glibc's malloc_trim and /proc: Linux only")


def test_freed_blocks_pinned_below_live_ones_are_handed_back() -> None:
    release_free_memory()  # what earlier tests freed would be reused without growing
    before = rss_mb()
    big, pinned = [], []
    for _ in range(2000):  # ~190 MB in blocks under the mmap threshold, each followed by a live one
        big.append(bytearray(100_000))
        pinned.append(bytearray(600))
    grown = rss_mb() - before
    assert grown > 150
    del big
    assert rss_mb() - before > 150  # freed, but glibc keeps it: the climb a long run saw
    release_free_memory()
    assert rss_mb() - before < 40
    assert len(pinned) == 2000


def test_current_and_peak_memory_read_in_megabytes() -> None:
    now, peak = rss_mb(), peak_rss_mb()
    assert 10 < now <= peak + 1
