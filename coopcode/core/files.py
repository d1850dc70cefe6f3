"""Appending records so that a full disk (or a kill) never leaves half of one.

A results file or a metrics log is JSONL that a rerun reads to resume. A record is appended
in full or not at all: when a write fails (the disk is full, a quota is reached), the file
is cut back to where it was, so what is on disk stays valid JSONL and the caller can stop
with one line saying what was kept.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

# Errors that mean "no room to write", which freeing space cures (a rerun then resumes).
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def append_whole(fd: int, data: bytes) -> None:
    """Append `data` to the file open at `fd` and flush it to disk, in full or not at all."""
    start = os.lseek(fd, 0, os.SEEK_END)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)  # a line per record is cheap; a kill must not lose an acknowledged one
    except OSError:
        try:
            os.ftruncate(fd, start)
        except OSError:
            pass  # nothing more can be done; a rerun cuts a torn last line itself
        raise


def append_line(path: Path, line: str) -> None:
    """Append one line (`line` ends with a newline) to `path`, in full or not at all."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        append_whole(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def no_space(e: BaseException) -> bool:
    """Whether `e` is a write that failed for want of space."""
    return isinstance(e, OSError) and e.errno in NO_SPACE


def write_failure(path: Path, e: OSError, kept: str, resume: str) -> str:
    """One line: what could not be written, why, what is kept and how to go on."""
    why = "the disk is full" if no_space(e) else (e.strerror or str(e))
    return f"{path}: cannot write ({why}): {kept}; {resume}"
