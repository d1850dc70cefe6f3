"""Training: MAGRPO (helper + main) and GRPO (one agent) with LoRA adapters on one base
(`coopcode.train`, the function, is `coopcode.training.run.train`).

Modules, one job each: `config` (TrainConfig), `data` (problems and their order), `tree`
(joint actions, returns, advantages), `rollout` (sampling and scoring), `logprobs` (batched
log-probs), `trainer` (what the trainers share), `magrpo` / `grpo` / `sft` (the trainers),
`algorithms` (which trainer each `--algo` builds), `context` (the run a trainer is built
from, and what the run asks of it), `checkpoint` (run folders), `metrics`, `run` (a whole
run) and `cli`. Importing this package is cheap: torch loads with the trainers.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from coopcode.training.config import TrainConfig

__all__ = [
    "ExecutionScorer",
    "GRPOTrainer",
    "MAGRPOTrainer",
    "TrainConfig",
    "TrainResult",
    "output_scorer",
    "train",
]

_LAZY = {
    "ExecutionScorer": "coopcode.training.rollout",
    "output_scorer": "coopcode.training.rollout",
    "MAGRPOTrainer": "coopcode.training.magrpo",
    "GRPOTrainer": "coopcode.training.grpo",
    "TrainResult": "coopcode.training.run",
    "train": "coopcode.training.run",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'coopcode.training' has no attribute {name!r}")
