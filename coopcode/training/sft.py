"""SFT: a warm start before RL, the agents fine-tuned on given code (`--algo sft`).

Each step takes the next `--rollout-batch` examples (the same seeded order over epochs as the
RL trainers' problems, `data.ProblemOrder`); every agent's loss is the mean negative
log-likelihood of its target tokens, the prompt's tokens unscored
(`examples.render_targets`: the prompt each agent gets at bench time, the code after its
pre-filled start and the closing fence). The log-probs are the RL trainers' (one batched
forward per micro-batch, at temperature 1), and so are the adapters, the optimizers, the
schedule, clipping, data-parallel ranks and checkpoints (`trainer.AdapterTrainer`): an SFT
run's `helper/` and `main/` start an RL run through `--helper-adapter` / `--main-adapter`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from coopcode.core.errors import UserError
from coopcode.core.events import Say
from coopcode.engines import Engine
from coopcode.problems import Problem
from coopcode.schemes import adapter_of, get_scheme
from coopcode.training.config import TrainConfig
from coopcode.training.context import TrainingRun
from coopcode.training.data import ProblemOrder
from coopcode.training.distributed import Ranks, no_sync
from coopcode.training.examples import Example, Target, load_examples, render_targets
from coopcode.training.metrics import release_free_memory, start_step_peak, step_memory
from coopcode.training.policy import TransformersPolicy
from coopcode.training.trainer import AdapterTrainer


@dataclass(frozen=True)
class Accumulated:
    """One agent's gradient pass over its share of a step's targets."""

    metrics: dict[str, float]  # `<role>/loss`, `<role>/target_tokens`
    tokens: int  # prompt and target tokens it trained on (this rank's): the step's throughput


class SFTTrainer(AdapterTrainer):
    """Fine-tunes the agents of `config.collab_scheme` on the examples of `config.examples`."""

    algorithm = "sft"

    def __init__(
        self,
        engine: Engine,
        config: TrainConfig,
        problems: Sequence[Problem],
        *,
        policy: TransformersPolicy | None = None,
        sync_dir: Path | None = None,
        ranks: Ranks | None = None,
        total_steps: int | None = None,
        cancel: threading.Event | None = None,
        examples: Sequence[Example] | None = None,
        warn: Say | None = None,  # told a line a user should see (examples left out, ...)
    ) -> None:
        config.validate()
        if config.algo != self.algorithm:
            raise UserError(f"{type(self).__name__} trains {self.algorithm}, not {config.algo}")
        scheme = get_scheme(config.collab_scheme)
        assert config.examples is not None  # validate() made sure
        chosen = list(examples) if examples is not None else load_examples(
            config.examples, problems, scheme, warn)
        self.examples = chosen
        self.targets: list[list[Target]] = render_targets(chosen, problems, scheme, engine)
        self.order = ProblemOrder(len(self.targets), config.problems_per_step, config.seed)
        super().__init__(engine, config, policy=policy, sync_dir=sync_dir, ranks=ranks,
                         cancel=cancel,
                         total_steps=total_steps or config.total_steps(len(self.targets)))
        # The trained role of each target's adapter (`planner` under `plan` learns in main's).
        self._role_of = {adapter_of(r): r for r in self.roles}
        self._total = 1  # the loss's normaliser: the step's target tokens of the agent (all ranks)
        long = sum(len(t.target_ids) > config.max_new_tokens for ts in self.targets for t in ts)
        if long and warn is not None:
            warn(f"{long} targets are longer than --max-new-tokens "
                     f"{config.max_new_tokens}: the agents learn answers RL would cut short")

    @classmethod
    def from_run(cls, run: TrainingRun) -> SFTTrainer:
        """The trainer of `run`: the examples of its config on its problems (nothing is run,
        so neither its sandbox nor its scorer is used)."""
        return cls(run.engine, run.config, run.problems, policy=run.policy,
                   sync_dir=run.sync_dir, ranks=run.ranks, cancel=run.cancel, warn=run.warn)

    def run_meta(self) -> dict[str, int]:
        """The Started event counts the examples trained on."""
        return {"examples": len(self.targets)}

    def targets_of(self, role: str, examples: Sequence[list[Target]]) -> list[Target]:
        return [t for ts in examples for t in ts if self._role_of[t.adapter] == role]

    def train_step(self) -> dict[str, float]:
        """One optimizer step of every agent on the next examples; the step's metrics."""
        started = time.time()
        start_step_peak()
        everyone = [self.targets[i] for i in self.order.indices(self.step)]
        self.step_task_ids = [ts[0].task_id for ts in everyone if ts]
        mine = self.ranks.shard(everyone)
        metrics: dict[str, float] = {}
        tokens = 0
        for role in self.roles:
            done = self.accumulate(role, self.targets_of(role, mine))
            tokens += done.tokens
            metrics.update(done.metrics)
        self._check_cancel()  # the last point to stop: the optimizer steps go together
        for role in self.roles:
            metrics.update(self.apply_gradients(role))
        self.step += 1
        seconds = time.time() - started
        release_free_memory()
        metrics.update({
            "loss": sum(metrics[f"{r}/loss"] for r in self.roles),
            "grad_norm": max(metrics[f"{r}/grad_norm"] for r in self.roles),
            "lr": metrics[f"{self.roles[0]}/lr"],
            "epoch": self.order.epoch(self.step - 1),
            "update_seconds": seconds,
            "step_seconds": seconds,
            "tokens_per_s": tokens / max(seconds, 1e-9),  # trained (prompt + target) tokens
            **step_memory(),
        })
        return self.ranks.average(metrics)

    def accumulate(self, role: str, targets: list[Target]) -> Accumulated:
        """This agent's gradient of the mean target-token NLL over the step's examples."""
        size = sum(len(t.target_ids) for t in targets)
        self._total = max(1, self.ranks.total(size))
        mb = self.config.micro_batch
        chunks: list[list[Target] | None] = [targets[i:i + mb] for i in range(0, len(targets), mb)]
        if self.ranks.distributed and not chunks:
            chunks = [None]  # the reduction needs every rank's (here: zero) gradient
        self.policy.select(adapter_of(role))
        module = self.losses[role]
        loss_sum = 0.0
        for i, chunk in enumerate(chunks):
            self._check_cancel()
            with torch.enable_grad(), no_sync(module, last=i == len(chunks) - 1):
                loss, _ = module(chunk)
                if loss.requires_grad:
                    loss.backward()
            loss_sum += float(loss.detach()) / self.ranks.world
        # loss_sum is this rank's share of the mean over every rank's tokens: times the world,
        # the ranks' average (`Ranks.average`) is that mean.
        return Accumulated({f"{role}/loss": loss_sum * self.ranks.world,
                            f"{role}/target_tokens": float(self._total)},
                           size + sum(len(t.prompt_ids) for t in targets))

    def _chunk_loss(self, chunk: list[Target]) -> tuple[torch.Tensor, Any]:
        """The summed NLL of a micro-batch's target tokens over the step's (all ranks')."""
        name = adapter_of(chunk[0].role)
        lp = self.policy.logprobs(name, [t.prompt_ids for t in chunk],
                                  [t.target_ids for t in chunk], temperature=1.0)
        nll = -(lp.values * lp.mask).sum()
        # DDP averages the ranks' gradients: scale by the world size to get their sum.
        return nll / self._total * self.ranks.world, lp


def example_loss(trainer: SFTTrainer, examples: Sequence[list[Target]] | None = None
                 ) -> dict[str, float]:
    """Each agent's mean NLL per target token over `examples` (all of the trainer's by
    default), as the adapters are now: what a warm start lowers."""
    chosen = trainer.targets if examples is None else examples
    out = {}
    with torch.no_grad():
        for role in trainer.roles:
            targets = trainer.targets_of(role, chosen)
            total, n = 0.0, 0
            mb = trainer.config.micro_batch
            for i in range(0, len(targets), mb):
                chunk = targets[i:i + mb]
                lp = trainer.policy.logprobs(adapter_of(role), [t.prompt_ids for t in chunk],
                                             [t.target_ids for t in chunk], temperature=1.0)
                total += float(-(lp.values * lp.mask).sum())
                n += int(lp.mask.sum())
            out[role] = total / max(1, n)
    return out
