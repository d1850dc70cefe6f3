"""Runs on disk the screens list: trained adapters in `checkpoints/` and benches in `runs/`.

Checkpoint runs are `checkpoints/<run>/` holding `helper/` and/or `main/` PEFT folders and a
`manifest.json` (algorithm, step, metrics). Bench runs are `--out` folders holding
`summary.json`. Reading is tolerant: a half-written run is shown as such, never a crash.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class CheckpointRun:
    name: str
    path: Path
    roles: tuple[str, ...]  # which adapters it holds: "helper", "main"
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def algorithm(self) -> str:
        return str(self.manifest.get("algorithm", "?"))

    @property
    def step(self) -> str:
        step = self.manifest.get("step")
        return "?" if step is None else str(step)

    @property
    def reward(self) -> float | None:
        """The run's latest mean reward, wherever the manifest keeps it."""
        metrics = self.manifest.get("metrics") or {}
        if not isinstance(metrics, dict):
            return None
        for key in ("reward_mean", "mean_reward", "reward", "reward/total", "reward_total"):
            value = metrics.get(key)
            if isinstance(value, int | float):
                return float(value)
        return None

    def describe(self) -> str:
        reward = f"{self.reward:.3f}" if self.reward is not None else "?"
        return f"{self.algorithm}, step {self.step}, reward {reward}"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def list_checkpoint_runs(root: Path = Path("checkpoints")) -> list[CheckpointRun]:
    """Runs with at least one adapter folder, newest first."""
    if not root.is_dir():
        return []
    runs = []
    for folder in root.iterdir():
        if not folder.is_dir():
            continue
        roles = tuple(r for r in ("helper", "main") if (folder / r / "adapter_config.json").exists())
        manifest = _read_json(folder / "manifest.json")
        if roles or manifest:
            runs.append(CheckpointRun(folder.name, folder, roles, manifest))
    return sorted(runs, key=lambda r: r.path.stat().st_mtime, reverse=True)


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
