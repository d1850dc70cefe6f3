"""Which trainer trains each `--algo`: a run builds its trainer from this table.

Importing it loads torch (the trainers'); `run.py` imports it once the run starts.
"""

from __future__ import annotations

from coopcode.training.context import Trainer, TrainingRun
from coopcode.training.grpo import GRPOTrainer
from coopcode.training.magrpo import MAGRPOTrainer
from coopcode.training.sft import SFTTrainer

TRAINERS: dict[str, type[Trainer]] = {
    "magrpo": MAGRPOTrainer,
    "grpo": GRPOTrainer,
    "sft": SFTTrainer,
}


def make_trainer(run: TrainingRun) -> Trainer:
    """The trainer of the run's `--algo`, built from the run."""
    return TRAINERS[run.config.algo].from_run(run)
