"""One writer per run folder: a second bench or training on the same folder is refused in one
line; a killed writer (even one whose forked children live on) leaves no stale lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coopcode.core.errors import UserError
from coopcode.core.run_lock import RunLock
from coopcode.evaluation.results import ResultsStore
from tests.cli_helpers import assert_refused, coopcode

HOLD = """
import os, sys, time
from pathlib import Path
from coopcode.core.run_lock import RunLock
lock = RunLock.acquire(Path(sys.argv[1]))
if sys.argv[2] == "fork" and os.fork() == 0:
    time.sleep(60)  # a child (as a sandbox worker is) outliving its parent
    os._exit(0)
print("held", flush=True)
time.sleep(60)
"""


def _holder(folder: Path, mode: str = "plain") -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder), mode], stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def _kill(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


def test_a_second_writer_is_refused_and_a_killed_one_frees_the_folder(tmp_path: Path) -> None:
    holder = _holder(tmp_path)
    try:
        with pytest.raises(UserError, match=rf"being written by another process \(pid {holder.pid}\)"):
            ResultsStore(tmp_path)
    finally:
        os.kill(holder.pid, signal.SIGKILL)  # SIGKILL: no cleanup of its own
        holder.wait(10)
    store = ResultsStore(tmp_path)  # the kernel dropped the lock with the process
    with pytest.raises(UserError, match="already being written by this process"):
        RunLock.acquire(tmp_path)  # a second writer in the same process is refused too
    store.close()
    with RunLock.acquire(tmp_path):  # closed: free again
        pass


def test_children_forked_by_the_writer_do_not_keep_its_lock(tmp_path: Path) -> None:
    holder = _holder(tmp_path, "fork")
    os.kill(holder.pid, signal.SIGKILL)  # the parent dies; its forked child sleeps on
    holder.wait(10)
    try:
        with RunLock.acquire(tmp_path):
            pass
    finally:
        os.killpg(holder.pid, signal.SIGKILL)


def test_bench_and_train_on_a_folder_in_use_are_refused_before_loading(tmp_path: Path,
                                                                      cli_env: dict[str, str]) -> None:
    holder = _holder(tmp_path / "run")
    try:
        started = time.monotonic()
        assert_refused(coopcode("bench", "--out", str(tmp_path / "run"), "--limit", "1", "--n", "1",
                                "--k", "1", env=cli_env), "being written by another process")
        assert_refused(coopcode("train", "--out", str(tmp_path / "run"), "--steps", "1",
                                env=cli_env), "being written by another process")
        assert time.monotonic() - started < 120  # no model was loaded to find this out
    finally:
        _kill(holder)
