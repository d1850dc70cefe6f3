"""`coopcode tui` startup: from spawning the command to its first frame in a real terminal.

    .venv/bin/python benchmarks/tui_startup.py [--runs 5] [--scripted]

Each run starts `coopcode tui` in a fresh tmux window (80x24); the app writes the wall-clock
time of its first refresh to a file (COOPCODE_TUI_FIRST_FRAME), so the figure covers the
interpreter, the CLI, Textual and the first compose, and nothing of tmux's polling. The model
loads after that frame, on a worker, so it does not count. Target: under 1.5 s. The CPU time
the app used until then is printed too: on a busy machine it is the steadier figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one_run(coopcode: Path, scripted: bool, workdir: Path, index: int) -> tuple[float, float]:
    """(wall seconds from spawn to first frame, CPU seconds the app had used by then)."""
    stamp = workdir / f"first-frame-{index}"
    session = f"coopcode-startup-{os.getpid()}-{index}"
    flags = "--scripted --sandbox process" if scripted else "--sandbox process"
    command = f"cd {workdir} && COOPCODE_TUI_FIRST_FRAME={stamp} {coopcode} tui {flags}"
    started = time.time()
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", command],
                   check=True)
    try:
        deadline = time.monotonic() + 60
        while not stamp.exists() or not stamp.read_text().strip():
            if time.monotonic() > deadline:
                raise SystemExit("no first frame within 60 s")
            time.sleep(0.01)
        wall, cpu = (float(x) for x in stamp.read_text().split())
        return wall - started, cpu
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        time.sleep(0.5)  # let the killed app release the CPU before the next run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--scripted", action="store_true", help="Scripted agents (no model load).")
    args = ap.parse_args()
    coopcode = Path(sys.executable).with_name("coopcode")
    with tempfile.TemporaryDirectory() as tmp:
        runs = [one_run(coopcode, args.scripted, Path(tmp), i) for i in range(args.runs)]
    times, cpu = [w for w, _ in runs], [c for _, c in runs]
    # Start-up is one thread: on an idle machine wall time is about the CPU time. The CPU
    # figure is what to compare across runs on a shared, busy machine.
    print(f"first frame: median {statistics.median(times):.2f} s wall (min {min(times):.2f}, "
          f"max {max(times):.2f}), median {statistics.median(cpu):.2f} s CPU, over "
          f"{len(runs)} runs (target < 1.5 s); load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
