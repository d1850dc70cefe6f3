"""One training record of the fair round, read one way for every script beside it: whether
the run has finished, the step it kept, and each validation's figures and per-problem rows.

A record is a run folder (`runs/divided-fair/...`) or its committed copy
(`docs/divided/scripts/keep_run.sh`): `manifest.json`, `metrics.jsonl` and each validation's
samples. A run has finished when it reached its last step or stopped itself (`--patience`) and
kept a step; the scripts wait for that before they choose, bench or keep anything.

    .venv/bin/python docs/divided-fair/run_record.py finished FOLDER   # exit 0 when finished
    .venv/bin/python docs/divided-fair/run_record.py bench-folder ROW  # its kept adapters' folder
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class RunRecord:
    folder: Path
    step: int  # the last step saved
    total_steps: int | None
    stopped_early: bool
    kept: int | None  # the step whose adapters the run keeps (None before it kept one)
    evaluations: dict[int, dict[str, Any]]  # step -> {"figures", "row"} (validation.evaluations)

    @property
    def finished(self) -> bool:
        return (self.step == self.total_steps or self.stopped_early) and self.kept is not None

    def figure(self, step: int, name: str = "val/pass@1") -> float | None:
        return (self.evaluations.get(step) or {}).get("figures", {}).get(name)

    def per_problem(self, step: int, name: str = "val/pass@1") -> dict[str, float] | None:
        """Each validation problem's figure at `step` (None where that step has no rows)."""
        from coopcode.training.validation import per_problem

        row = (self.evaluations.get(step) or {}).get("row")
        return per_problem(row, name) if row else None


def read(folder: Path) -> RunRecord | None:
    """The record in `folder`; None where its manifest or metrics are missing or unreadable."""
    from coopcode.training.validation import evaluations

    try:
        manifest = json.loads((folder / "manifest.json").read_text())
        history = [json.loads(x) for x in (folder / "metrics.jsonl").read_text().splitlines() if x]
    except (OSError, ValueError):
        return None
    kept = (manifest.get("kept") or {}).get("step")
    return RunRecord(folder=folder, step=int(manifest.get("step") or 0),
                     total_steps=manifest.get("total_steps"),
                     stopped_early=bool(manifest.get("stopped_early")),
                     kept=kept if isinstance(kept, int) else None,
                     evaluations={e["step"]: e for e in evaluations(folder, history)})


def bench_folder(row: str, root: Path = Path(".")) -> Path | None:
    """The folder whose `helper/` and `main/` hold final ROW's kept step, to bench: the copy
    kept in git (`keep_checkpoint.sh`: the run's kept adapters, what a user loads), which
    every machine has, so a bench carried between machines keeps its identity and one whose
    `runs/` is empty benches the final without training it again; else the finished run
    folder (before it is kept). None where neither holds a finished run."""
    for folder in (root / "checkpoints" / f"compose-fair-{row}-0.5b",
                   root / "runs" / "divided-fair" / "final-runs" / row):
        record = read(folder)
        if record is not None and record.finished and (folder / "main").is_dir():
            return folder
    return None


USAGE = ("usage: run_record.py finished FOLDER   (exit 0 when finished)\n"
         "       run_record.py bench-folder ROW  (the folder holding ROW's kept adapters)")


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "finished":
        record = read(Path(argv[1]))
        return 0 if record is not None and record.finished else 1
    if len(argv) == 2 and argv[0] == "bench-folder":
        folder = bench_folder(argv[1])
        if folder is None:
            print(f"run_record.py: {argv[1]} has not finished here, and checkpoints/ keeps "
                  "no finished copy of it", file=sys.stderr)
            return 1
        print(folder)
        return 0
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
