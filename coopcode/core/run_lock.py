"""One writer per run folder: a bench `--out` or a training run is written by one process.

Two processes appending to one samples.jsonl would sample everything twice, and the second
to open it would cut what it takes for the first's torn last line; two trainers in one run
folder would overwrite each other's checkpoints. So the writer holds an exclusive POSIX
record lock (`lockf`) on `<folder>/.lock` while it runs, and a second writer is refused at
once with one line naming the holder. Record locks belong to the process: the kernel drops
them when it exits however it dies (SIGKILL included), and children forked by it (sandbox
workers) do not inherit them, so a killed run never leaves a stale lock behind. Within one
process record locks do not exclude each other (and closing any descriptor of the file would
drop them), so the folders this process holds are also kept in a set and refused a second time.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

from coopcode.core.errors import UserError

LOCK_FILE = ".lock"
_held: set[str] = set()  # folders this process holds (resolved paths)
_held_lock = threading.Lock()


class RunLock:
    """Held from `acquire` until `release` (or the process's end)."""

    def __init__(self, folder: Path, fd: int, key: str) -> None:
        self.folder, self._fd, self._key = folder, fd, key

    @classmethod
    def acquire(cls, folder: Path, what: str = "run") -> RunLock:
        """Lock `folder` (created if missing) or raise a UserError naming the process holding it."""
        folder.mkdir(parents=True, exist_ok=True)
        key = str(folder.resolve())
        with _held_lock:
            if key in _held:
                raise UserError(f"{folder}: this {what} is already being written by this process: "
                                "choose another folder")
            fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                os.close(fd)
                raise UserError(f"{folder}: this {what} is being written by another process "
                                f"(pid {holder}): wait for it to end or stop it, or choose another "
                                "folder") from None
            _held.add(key)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(folder, fd, key)

    @classmethod
    def check_free(cls, folder: Path, what: str = "run") -> None:
        """Refuse early (before a model loads) a folder another process is writing; the
        writer's own `acquire` later is what actually excludes."""
        if folder.is_dir():
            cls.acquire(folder, what).release()

    def release(self) -> None:
        if self._fd >= 0:
            with _held_lock:
                os.close(self._fd)  # closing drops the process's record locks on the file
                self._fd = -1
                _held.discard(self._key)

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
