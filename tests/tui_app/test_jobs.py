"""Jobs the TUI starts as children stop on SIGINT (they save and exit 130), even when the TUI
itself was started with SIGINT ignored (under nohup, from a background job) and passed that
on to its children."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from tui.jobs import ChildJob, coopcode_argv, describe_exit

REPO = Path(__file__).resolve().parent.parent.parent


def test_stop_reaches_a_child_started_with_sigint_ignored(tiny_model_dir: Path, tmp_path: Path) -> None:
    argv = coopcode_argv("bench", "--model", str(tiny_model_dir), "--problems", str(REPO / "examples"),
                         "--n", "60", "--k", "1", "--max-new-tokens", "200", "--dtype", "float32",
                         "--sandbox", "process", "--out", str(tmp_path / "run"), "--events", "jsonl")
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)  # what nohup or `&` hands down
    try:
        job = ChildJob("bench", argv, cwd=REPO)
        job.start()
    finally:
        signal.signal(signal.SIGINT, before)
    deadline = time.time() + 120
    while time.time() < deadline and b'"started"' not in job.events_path.read_bytes():
        time.sleep(0.2)
    assert job.running, job.stderr_tail()
    t0 = time.time()
    job.stop(grace=20)  # SIGINT first; SIGTERM only after the grace
    assert job.returncode == 130 and time.time() - t0 < 20, job.stderr_tail(40)
    assert describe_exit(job, job.returncode) == "bench stopped"
