"""What a training run hands its parts: the run itself (`TrainingRun`, what a trainer is built
from) and what the run's step loop asks of a trainer (`Trainer`, whatever its algorithm).

Cheap to import: the types the fields name load only for the type checker, so `run.py`
can name them without loading torch before the run starts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from coopcode.core.events import Emit, Log, ignore

if TYPE_CHECKING:
    from coopcode.engines import Engine
    from coopcode.problems import Problem
    from coopcode.training.config import TrainConfig
    from coopcode.training.distributed import Ranks
    from coopcode.training.policy import TransformersPolicy
    from coopcode.training.rollout import ProblemRollout, Scorer
    from sandbox import Sandbox

# Told as a step goes: its phase ("sampling", "scoring", ...) and the tokens sampled so far.
PhaseWatcher = Callable[[str, int], None]


def _one_process() -> Ranks:
    from coopcode.training.distributed import Ranks

    return Ranks()


@dataclass(frozen=True)
class TrainingRun:
    """One training run as its parts see it: the resolved config, the run folder, what is
    trained on, what samples, what scores, this process's place among the ranks and where
    events go. `run.train` makes it once; each trainer builds itself from it
    (`Trainer.from_run`)."""

    config: TrainConfig  # the run's: on --resume the saved one, with the changes allowed
    out: Path  # the run folder
    problems: list[Problem]  # the training problems
    engine: Engine  # samples the rollouts and the validation
    # Computes the gradients; None: the engine's own model is trained in place.
    policy: TransformersPolicy | None = None
    sandbox: Sandbox | None = None  # runs the code: the execution reward, the validation
    scorer: Scorer | None = None  # scores joint actions in place of the execution reward
    eval_problems: list[Problem] = field(default_factory=list)  # none without --eval-every
    ranks: Ranks = field(default_factory=_one_process)  # torchrun's ranks; alone: 0 of 1
    emit: Emit = ignore  # the run's events (rank 0 speaks for the run; the others' go nowhere)
    cancel: threading.Event = field(default_factory=threading.Event)  # set: stop after the step

    @property
    def sync_dir(self) -> Path:
        """Where a sampler apart from the policy (vLLM, servers) gets each step's adapters."""
        return self.out / "rollout_adapters"

    def warn(self, message: str) -> None:
        """A line the user should see, as a warning event."""
        self.emit(Log(message=message, level="warning"))


class Trainer(Protocol):
    """What a run asks of its trainer, whatever the algorithm (`algorithms.TRAINERS`).

    `trainer.AdapterTrainer` holds all of it but the step itself, which each algorithm adds
    (`train_step`), with the way it builds itself from a run (`from_run`)."""

    algorithm: str
    engine: Engine
    policy: TransformersPolicy
    step: int  # optimizer steps completed
    total_steps: int
    last_rollouts: list[ProblemRollout]  # this rank's of the last step (none for SFT)
    step_task_ids: list[str]  # the last step's problems, over all ranks

    @classmethod
    def from_run(cls, run: TrainingRun) -> Trainer:
        """The trainer of `run`."""
        ...

    def adapter_names(self) -> dict[str, str]:
        """role -> adapter (and folder) name."""
        ...

    def train_step(self) -> dict[str, float]:
        """One optimizer step of every agent; the step's metrics."""
        ...

    def sync_sampler(self) -> None:
        """Hand a sampler apart from the policy the current adapter weights."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Everything but the adapter weights that a resumed run needs."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a `state_dict`."""
        ...

    def run_meta(self) -> dict[str, int]:
        """What the run's Started event says of the data beyond its problems."""
        ...

    def watch_phases(self, watcher: PhaseWatcher) -> None:
        """Tell `watcher` each phase of a step as it starts and the tokens sampled so far."""
        ...
