"""Training: MAGRPO (helper + main) and GRPO (one agent) with LoRA adapters on one base.

Modules, one job each: `config` (TrainConfig), `data` (problems and their order), `tree`
(joint actions, returns, advantages), `rollout` (sampling and scoring), `logprobs` (batched
log-probs), `magrpo` / `grpo` (the trainers), `checkpoint` (run folders), `metrics`, `run`
(a whole run) and `cli`. Importing this package is cheap: torch loads with the trainers.
"""

from __future__ import annotations

import sys
from importlib import import_module
from types import ModuleType
from typing import Any

from coopcode.train.config import TrainConfig

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
    "ExecutionScorer": "coopcode.train.rollout",
    "output_scorer": "coopcode.train.rollout",
    "MAGRPOTrainer": "coopcode.train.magrpo",
    "GRPOTrainer": "coopcode.train.grpo",
    "TrainResult": "coopcode.train.run",
    "train": "coopcode.train.run",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'coopcode.train' has no attribute {name!r}")


class _TrainPackage(ModuleType):
    """`coopcode.train` is this package and, when called, the `train` function.

    `from coopcode import train` asks the `coopcode` package for its attribute `train`, and
    once anything of this package was imported (`TrainConfig` is), Python has set that
    attribute to this package: calling it must still train.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.train(*args, **kwargs)


sys.modules[__name__].__class__ = _TrainPackage
