"""What every trainer of the agents' LoRA adapters shares (MAGRPO, GRPO, SFT).

The adapters (fresh, from the run's seed, or from a saved folder), one AdamW, learning-rate
schedule and gradient clipping per agent, the DDP wrapper of each agent's loss, handing a
separate sampler the current weights, and the resumable state (optimizers, schedules, RNG,
step). A trainer adds `train_step`, `_chunk_loss` (one micro-batch's loss) and `from_run`
(how it builds itself from a run; `context.Trainer` is what the run asks of it); a warm
start (`sft`) and the RL that follows it therefore share one adapter format, optimizer and
checkpoint code, and `--helper-adapter` / `--main-adapter` pick up either's adapters.
"""

from __future__ import annotations

import math
import random
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from coopcode.schemes import adapter_of, per_role
from coopcode.training.config import TrainConfig, lora_target_modules
from coopcode.training.context import PhaseWatcher
from coopcode.training.distributed import Ranks, agent_loss
from coopcode.training.policy import TransformersPolicy

if TYPE_CHECKING:
    from coopcode.engines import Engine
    from coopcode.training.rollout import ProblemRollout

REFERENCE_PREFIX = "ref-"  # the frozen copy of an agent's starting adapters (KL reference)


class TrainingStopped(Exception):
    """A stop was requested; the trainer is at the end of step `step` (nothing half-applied)."""

    def __init__(self, step: int) -> None:
        super().__init__(f"stopped after step {step}")
        self.step = step


def lr_lambda(config: TrainConfig, total_steps: int) -> Callable[[int], float]:
    """Multiplier of the learning rate at a step: linear warm-up, then the schedule."""
    warm = config.warmup_steps

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / (warm + 1)
        if config.lr_schedule == "constant":
            return 1.0
        progress = min(1.0, (step - warm) / max(1, total_steps - warm))
        if config.lr_schedule == "linear":
            return 1.0 - progress
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    return factor


class AdapterTrainer:
    """The agents of `config.roles` as LoRA adapters of one policy, each with its optimizer."""

    algorithm = ""

    def __init__(self, engine: Engine, config: TrainConfig, *, total_steps: int,
                 policy: TransformersPolicy | None = None, sync_dir: Path | None = None,
                 ranks: Ranks | None = None, cancel: threading.Event | None = None) -> None:
        self.engine, self.config = engine, config
        self.policy = policy or TransformersPolicy.sharing(engine)
        self.sync_dir = sync_dir
        self.ranks = ranks or Ranks()
        self.roles = config.roles
        self.total_steps = total_steps
        self.cancel = cancel
        self.losses: dict[str, torch.nn.Module] = {}  # role -> its loss (in DDP with several ranks)
        self._synced_step = -1
        self.params: dict[str, list[torch.nn.Parameter]] = {}
        self.optimizers: dict[str, torch.optim.Optimizer] = {}
        self.schedulers: dict[str, torch.optim.lr_scheduler.LambdaLR] = {}
        self.references: dict[str, str | None] = {}  # role -> the KL's reference adapter
        self._attach_adapters()
        self.step = 0  # optimizer steps completed
        self.last_rollouts: list[ProblemRollout] = []  # this rank's: what samples.jsonl records
        self.step_task_ids: list[str] = []

    def _chunk_loss(self, chunk: Any) -> tuple[torch.Tensor, Any]:
        raise NotImplementedError

    def _attach_adapters(self) -> None:
        from peft import LoraConfig

        cfg = self.config
        lora = LoraConfig(r=cfg.lora_rank, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                          target_modules=lora_target_modules(cfg.lora_targets), bias="none",
                          task_type="CAUSAL_LM")
        inits = per_role(cfg.helper_init, cfg.main_init)
        for i, role in enumerate(self.roles):
            name = adapter_of(role)
            # LoRA's A matrices start random: from the run's seed, so a run (and every rank of
            # it) starts from the same adapters.
            with torch.random.fork_rng():
                torch.manual_seed(cfg.seed * 1009 + i)
                params = self.policy.add_adapter(name, lora, weights=inits[role])
            self.params[role] = params
            self.policy.select(name)  # DDP takes the weights that require grad now
            self.losses[role] = agent_loss(params, self._chunk_loss, self.ranks)
            opt = torch.optim.AdamW(params, lr=cfg.lr_of(role), weight_decay=cfg.weight_decay)
            self.optimizers[role] = opt
            self.schedulers[role] = torch.optim.lr_scheduler.LambdaLR(
                opt, lr_lambda(cfg, self.total_steps))
            self.references[role] = self._reference(name, inits[role])

    def _reference(self, name: str, start: str | None) -> str | None:
        """The adapter the KL of agent `name` is measured against: None for the bare base;
        with `kl_reference` start and a run that began from saved adapters, a frozen copy of
        them (`ref-<name>`), so the penalty anchors the agent to its warm start. Loaded only
        where the KL is computed."""
        cfg = self.config
        if cfg.kl_reference != "start" or start is None or not (cfg.kl_coef > 0 or cfg.log_kl):
            return None
        ref = f"{REFERENCE_PREFIX}{name}"
        for p in self.policy.add_adapter(ref, weights=start):
            p.requires_grad_(False)
        return ref

    def adapter_names(self) -> dict[str, str]:
        """role -> adapter (and folder) name."""
        return {role: adapter_of(role) for role in self.roles}

    def run_meta(self) -> dict[str, int]:
        """What the run's Started event says of the data beyond its problems: nothing here."""
        return {}

    def watch_phases(self, watcher: PhaseWatcher) -> None:
        """Nothing to tell here: a trainer that samples tells its phases (`MAGRPOTrainer`)."""

    def sync_sampler(self) -> None:
        """A sampler apart from the policy (vLLM, a server) gets the current adapter weights:
        saved as PEFT folders and loaded under the agents' names (the engine versions them).
        Nothing to do when the engine samples from the policy's own model."""
        if self.policy.engine is self.engine or self._synced_step == self.step:
            return
        if self.sync_dir is None:
            raise ValueError("a separate sampler needs a sync_dir for the adapters it loads")
        folder = self.sync_dir / f"step-{self.step:06d}"
        for role in self.roles:
            name = adapter_of(role)
            self.engine.load_adapter(name, str(self.policy.save(name, folder / name)))
        self._synced_step = self.step
        for old in sorted(self.sync_dir.glob("step-*"))[:-2]:  # the server may still read the last
            shutil.rmtree(old, ignore_errors=True)

    def _check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            for opt in self.optimizers.values():
                opt.zero_grad(set_to_none=True)
            raise TrainingStopped(self.step)

    def apply_gradients(self, role: str) -> dict[str, float]:
        """Clip, step this agent's optimizer and schedule, clear its gradients."""
        params = [p for p in self.params[role] if p.grad is not None]
        norm = 0.0
        if params:
            if self.config.max_grad_norm > 0:
                norm = float(torch.nn.utils.clip_grad_norm_(params, self.config.max_grad_norm))
            else:
                norm = float(torch.linalg.vector_norm(
                    torch.stack([torch.linalg.vector_norm(p.grad) for p in params])))
        # Always step (AdamW skips weights without a gradient) so the scheduler stays in order.
        self.optimizers[role].step()
        self.optimizers[role].zero_grad(set_to_none=True)
        lr = float(self.schedulers[role].get_last_lr()[0])
        self.schedulers[role].step()
        return {f"{role}/grad_norm": norm, f"{role}/lr": lr}

    def state_dict(self) -> dict[str, Any]:
        """Everything but the adapter weights that a resumed run needs."""
        return {
            "step": self.step,
            "optimizers": {r: o.state_dict() for r, o in self.optimizers.items()},
            "schedulers": {r: s.state_dict() for r, s in self.schedulers.items()},
            "rng": {"python": random.getstate(), "torch": torch.get_rng_state()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.step = int(state["step"])
        for r in self.roles:
            self.optimizers[r].load_state_dict(state["optimizers"][r])
            self.schedulers[r].load_state_dict(state["schedulers"][r])
        random.setstate(state["rng"]["python"])
        torch.set_rng_state(state["rng"]["torch"])
