"""Reading checkpoint folders: the runs in `checkpoints/` and what each holds.

A run is `checkpoints/<run>/` with `helper/` and/or `main/` PEFT adapter folders, a
`manifest.json` (written by `coopcode train`; see `coopcode.training.checkpoint`) and a
`metrics.jsonl`. Reading is tolerant: a half-written or foreign folder is described as far
as it can be, never an exception. Used by `coopcode checkpoints` and the TUI.

Runs are found where `--adapters NAME` finds them (`coopcode.core.adapters.checkpoint_roots`):
`./checkpoints`, then each folder of `$COOPCODE_CHECKPOINTS`, then the cache's
`checkpoints/`; a run name found in two of them is the first one's. `--dir` reads one folder.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coopcode.core.adapters import CHECKPOINTS_ENV, checkpoint_roots, find_run, looked_in
from coopcode.core.errors import UserError
from coopcode.records.vocabulary import Role

if TYPE_CHECKING:
    from coopcode.training.guards import CollapseWarning

ROLES: tuple[str, ...] = (Role.HELPER, Role.MAIN)
DEFAULT_ROOT = Path("checkpoints")


@dataclass
class CheckpointInfo:
    """One run folder."""

    name: str
    path: Path
    adapters: dict[str, int] = field(default_factory=dict)  # role -> bytes of weights
    manifest: dict[str, Any] = field(default_factory=dict)
    resumable_step: int | None = None  # newest complete trainer state

    @property
    def algorithm(self) -> str:
        return str(self.manifest.get("algorithm", "?"))

    @property
    def step(self) -> int | None:
        step = self.manifest.get("step")
        return step if isinstance(step, int) else None

    @property
    def kept_step(self) -> int | None:
        """The step the run's adapters (helper/, main/) are, where validation kept one; the
        last step's are then in last/. None: the adapters are the last step's."""
        kept = self.manifest.get("kept")
        step = kept.get("step") if isinstance(kept, dict) else None
        return step if isinstance(step, int) and self.manifest.get("last") else None

    @property
    def step_words(self) -> str:
        """`45/90` or, where a validated step is kept, `kept 15; last 45/90`."""
        done = "?" if self.step is None else f"{self.step}/{self.total_steps or '?'}"
        if self.kept_step is None:
            return done
        early = " stopped itself" if self.manifest.get("stopped_early") else ""
        return f"kept {self.kept_step}; last {done}{early}"

    @property
    def total_steps(self) -> int | None:
        total = self.manifest.get("total_steps")
        return total if isinstance(total, int) else None

    @property
    def base(self) -> str:
        base = self.manifest.get("base")
        return str(base.get("name", "?")) if isinstance(base, dict) else "?"

    @property
    def reward(self) -> float | None:
        metrics = self.manifest.get("metrics")
        value = metrics.get("reward_mean") if isinstance(metrics, dict) else None
        return float(value) if isinstance(value, int | float) else None

    @property
    def config(self) -> dict[str, Any]:
        config = self.manifest.get("config")
        return config if isinstance(config, dict) else {}

    @property
    def reward_name(self) -> str:
        """The reward the run trained on (a config naming none: its algorithm's seed reward)."""
        name = self.config.get("reward")
        if isinstance(name, str) and name:
            return name
        return "seed-grpo" if self.algorithm == "grpo" else "seed"

    def warnings(self) -> list[CollapseWarning]:
        """The collapse guards' findings on the run's metrics (`coopcode.training.guards`)."""
        from coopcode.training.guards import collapse_warnings

        budget = self.config.get("max_new_tokens")
        return collapse_warnings(self.metrics_history(), budget if isinstance(budget, int) else None)

    def metrics_history(self) -> list[dict[str, Any]]:
        """metrics.jsonl, one dict per step (torn lines skipped)."""
        path = self.path / "metrics.jsonl"
        if not path.exists():
            return []
        out = []
        for line in path.read_text(errors="replace").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                out.append(record)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": str(self.path),
            "algorithm": self.algorithm,
            "base": self.base,
            "step": self.step,
            "kept_step": self.kept_step,
            "total_steps": self.total_steps,
            "reward_mean": self.reward,
            "reward_name": self.reward_name,
            "adapters": self.adapters,
            "resumable_step": self.resumable_step,
            "manifest": self.manifest,
        }


def _weights_size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.glob("adapter_model.*") if f.is_file())


def read_checkpoint(path: Path) -> CheckpointInfo:
    """What a run folder holds (empty fields for what is missing or unreadable)."""
    manifest: dict[str, Any] = {}
    try:
        data = json.loads((path / "manifest.json").read_text())
        manifest = data if isinstance(data, dict) else {}
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        pass
    adapters = {r: _weights_size(path / r) for r in ROLES if (path / r / "adapter_config.json").exists()}
    resumable = None
    states = path / "trainer_state"
    if states.is_dir():
        steps = [int(p.name[5:]) for p in states.glob("step-*")
                 if p.is_dir() and p.name[5:].isdigit()]
        resumable = max(steps) if steps else None
    return CheckpointInfo(path.name, path, adapters, manifest, resumable)


def list_checkpoints(root: Path | None = None) -> list[CheckpointInfo]:
    """Runs under `root` (folders with an adapter or a manifest), newest first; with no
    `root` (or the default one), the runs of every folder of the search path, a name found
    twice being the first folder's."""
    if root is None or root == DEFAULT_ROOT:
        seen: dict[str, CheckpointInfo] = {}
        for found in checkpoint_roots():
            for run in _runs_in(found.path):
                seen.setdefault(run.name, run)
        return _newest_first(list(seen.values()))
    return _newest_first(_runs_in(root))


def _runs_in(root: Path) -> list[CheckpointInfo]:
    if not root.is_dir():
        return []
    runs = [read_checkpoint(p) for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return [r for r in runs if r.adapters or r.manifest]


def _newest_first(runs: list[CheckpointInfo]) -> list[CheckpointInfo]:
    def mtime(r: CheckpointInfo) -> float:
        m = r.path / "manifest.json"
        return (m if m.exists() else r.path).stat().st_mtime

    return sorted(runs, key=mtime, reverse=True)


def check_root(root: Path) -> Path:
    """`root` unless it exists and is not a folder (a missing root just holds no runs). The
    default root stands for the whole search path: with no run anywhere on it, a UserError
    that names every place it looked, so the user learns where runs are found (not only
    checkpoints/ of the current folder) and a script sees the failure in the exit code."""
    if root.exists() and not root.is_dir():
        raise UserError(f"{root}: a file, where --dir needs the folder holding the runs")
    if root == DEFAULT_ROOT and not list_checkpoints():
        raise UserError(f"no checkpoint runs in {looked_in()}: set {CHECKPOINTS_ENV} to the "
                        "folder holding your runs, or train one with `coopcode train`")
    return root


def find_checkpoint(name: str, root: Path = DEFAULT_ROOT) -> CheckpointInfo:
    """A run by folder path or by name under `root` (the default: the search path), or a
    UserError."""
    if not name.strip():
        raise UserError("no run named: pass a run name from `coopcode checkpoints list` or a run folder")
    if root.exists() and not root.is_dir():
        raise UserError(f"{root}: a file, where --dir needs the folder holding the runs")
    found = find_run(name) if root == DEFAULT_ROOT else None
    for candidate in (Path(name), root / name, *([found] if found is not None else [])):
        if candidate.exists() and not candidate.is_dir():
            raise UserError(f"{candidate}: a file, where a run folder is expected "
                            "(see `coopcode checkpoints list`)")
        if candidate.is_dir():
            info = read_checkpoint(candidate)
            if info.adapters or info.manifest:
                return info
            raise UserError(f"{candidate}: not a checkpoint run (no adapters, no manifest.json)")
    where = looked_in() if root == DEFAULT_ROOT else str(root)
    raise UserError(f"no checkpoint run {name!r} (looked in {where}; see `coopcode checkpoints list`)")


def reward_curve(history: list[dict[str, Any]], buckets: int = 10) -> list[dict[str, Any]]:
    """Mean reward and pass rate over consecutive blocks of steps (a training curve)."""
    rows = [r for r in history if isinstance(r.get("reward/mean"), int | float)]
    if not rows:
        return []
    size = max(1, -(-len(rows) // buckets))
    out = []
    for start in range(0, len(rows), size):
        block = rows[start:start + size]
        out.append({
            "steps": f"{block[0].get('step', '?')}-{block[-1].get('step', '?')}",
            "reward_mean": sum(r["reward/mean"] for r in block) / len(block),
            "pass_rate": sum(float(r.get("pass_rate", 0.0)) for r in block) / len(block),
        })
    return out


CURVES = "curves.png"


def plot_curves(info: CheckpointInfo, path: Path | None = None) -> Path:
    """The run's training curves as a PNG (`RUN/curves.png` unless `path`), or a UserError."""
    from coopcode.evaluation.plots import plot_training

    history = info.metrics_history()
    if not history:
        raise UserError(f"{info.path}: no metrics.jsonl to plot (a run writes one per step)")
    path = path or info.path / CURVES
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UserError(f"{path}: cannot write the curves here (permission denied)")
    config = info.config
    steps = [r["step"] for r in history if isinstance(r.get("step"), int)]
    title = (f"{info.name}: {info.algorithm} ({info.reward_name} reward), steps {min(steps, default=0)}-{max(steps, default=0)}"
             f"\n{info.base}, n={config.get('group_size', '?')} samples per problem and agent, "
             f"T={config.get('temperature', '?')}, problems {config.get('problems', '?')}")
    return plot_training(history, title, path)
