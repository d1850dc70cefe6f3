"""Runs on disk the screens list: trained adapters in `checkpoints/` and benches in `runs/`.

Checkpoint runs are read by `coopcode.list_checkpoints` (the same reader as `coopcode checkpoints`);
bench runs are `--out` folders holding `summary.json`. Reading is tolerant: a half-written
run is shown as far as it can be, never a crash.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coopcode import CheckpointInfo, list_checkpoints

__all__ = ["BenchRun", "CheckpointInfo", "describe_checkpoint", "list_bench_runs",
           "list_checkpoints", "reward_text", "trained_reward"]


def reward_text(run: CheckpointInfo) -> str:
    """`0.784 credit`: the recent mean reward with the name of the reward it is measured in
    (a credit run's 0.78 and a coop run's 3.0 are on different scales)."""
    return f"{run.reward:.3f} {run.reward_name}" if run.reward is not None else f"? {run.reward_name}"


def describe_checkpoint(run: CheckpointInfo) -> str:
    """One line: algorithm, step and latest mean reward (named)."""
    step = "?" if run.step is None else str(run.step)
    return f"{run.algorithm}, step {step}, reward {reward_text(run)}"


def trained_reward(adapter: str | None) -> str | None:
    """The reward the run holding `adapter` (a run folder or its helper/ or main/) trained
    with; None for no adapter or a folder that is no run of ours."""
    if not adapter:
        return None
    from coopcode import read_checkpoint

    path = Path(adapter)
    for folder in (path, path.parent):
        if (folder / "manifest.json").is_file():
            return read_checkpoint(folder).reward_name
    return None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class BenchRun:
    name: str
    path: Path
    summary: dict[str, Any]

    @property
    def ks(self) -> list[int]:
        return [int(k) for k in self.summary.get("ks", [])]

    @property
    def rows(self) -> list[dict[str, Any]]:
        rows = self.summary.get("rows", [])
        return rows if isinstance(rows, list) else []


def list_bench_runs(root: Path = Path("runs")) -> list[BenchRun]:
    """Bench `--out` folders that hold a summary, newest first."""
    if not root.is_dir():
        return []
    runs = []
    for summary in root.glob("*/summary.json"):
        data = _read_json(summary)
        if data:
            runs.append(BenchRun(summary.parent.name, summary.parent, data))
    return sorted(runs, key=lambda r: (r.path / "summary.json").stat().st_mtime, reverse=True)
