"""MAGRPO: the helper and main agents trained jointly, as two LoRA adapters on one base.

One step (Algorithm 1 of the MAGRPO paper, with the paper's sum-of-token log-probs):
1. For each of the step's problems, every agent samples a group of G completions with its
   current adapter; joint actions are scored in the sandbox (`rollout.RolloutBuilder`).
2. Returns are discounted over turns and each completion's advantage is its return minus
   its siblings' mean (`tree`).
3. Each agent's loss is -mean(A * log pi(a|h)) over its completions (+ kl_coef * KL to the
   agent's adapters as the run began, or to the bare base: `kl_reference`); log-probs come from one batched forward per sibling group
   (`logprobs.completion_logprobs`). Each agent has its own AdamW, schedule and clipping.

GRPO (`grpo.GRPOTrainer`) is the same trainer with one agent. The adapters, optimizers and
resumable state are every trainer's (`trainer.AdapterTrainer`).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from coopcode.code_analysis.cooperation import analyse_cooperation, cooperation_rates
from coopcode.code_analysis.patterns import pattern_rates
from coopcode.code_analysis.program import answers_a_constant, code_lines
from coopcode.code_analysis.usage import main_calls_helper
from coopcode.core.errors import UserError
from coopcode.engines import Engine
from coopcode.problems import Problem
from coopcode.records.vocabulary import FinishReason, Role
from coopcode.rewards import resolve_reward
from coopcode.schemes import adapter_of
from coopcode.training.config import TrainConfig
from coopcode.training.context import PhaseWatcher, TrainingRun
from coopcode.training.data import ProblemOrder
from coopcode.training.distributed import Ranks, no_sync
from coopcode.training.metrics import release_free_memory, start_step_peak, step_memory
from coopcode.training.policy import TransformersPolicy
from coopcode.training.rollout import (
    ExecutionScorer,
    ProblemRollout,
    RolloutBuilder,
    RolloutStats,
    Scorer,
)
from coopcode.training.trainer import AdapterTrainer, TrainingStopped, lr_lambda
from coopcode.training.tree import (
    Sample,
    assign_advantages,
    discounted_returns,
    mean,
    reward_levels,
)
from sandbox import Sandbox

__all__ = ["MAGRPOTrainer", "TrainingStopped", "lr_lambda", "siblings"]


def token_kl(ref: torch.Tensor, cur: torch.Tensor, mask: torch.Tensor,
             cap: float | None = None) -> torch.Tensor:
    """Each token's KL estimate to the reference, Schulman's k3: exp(r) - r - 1 >= 0 with
    r = log pi_ref - log pi (0 where `mask` is). With `cap`, r is held to [-20, 20] (exp
    stays finite) and each token's estimate to at most `cap`: past it a token adds `cap` and
    no gradient."""
    r = (ref - cur) * mask
    if cap is not None:
        r = r.clamp(-20.0, 20.0)
    k3 = torch.exp(r) - r - 1
    if cap is not None:
        k3 = k3.clamp(max=cap)
    return k3 * mask


class MAGRPOTrainer(AdapterTrainer):
    """Trains the agents of `config.roles` on `problems` with an engine's trainable adapters."""

    algorithm = "magrpo"

    def __init__(
        self,
        engine: Engine,  # samples the rollouts
        config: TrainConfig,
        problems: Sequence[Problem],
        *,
        policy: TransformersPolicy | None = None,  # None: train in place on the engine's model
        sync_dir: Path | None = None,  # where a separate sampler gets each step's adapters
        ranks: Ranks | None = None,  # data-parallel ranks (torchrun); None: one process
        sandbox: Sandbox | None = None,
        scorer: Scorer | None = None,
        total_steps: int | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        config.validate()
        self.reward = resolve_reward(config.reward, config.collab_scheme)
        if config.algo != self.algorithm:
            raise UserError(f"{type(self).__name__} trains {self.algorithm}, not {config.algo}")
        if not problems:
            raise UserError("no problems to train on")
        if scorer is None:
            if sandbox is None:
                raise ValueError("the execution reward needs a sandbox (or pass a scorer)")
            scorer = ExecutionScorer(sandbox, self.reward, config.timeout,
                                     scheme=config.collab_scheme)
        self.problems = list(problems)
        self._loss_context: tuple[str, int, bool] = ("", 1, False)
        self.order = ProblemOrder(len(self.problems), config.problems_per_step, config.seed)
        super().__init__(engine, config, policy=policy, sync_dir=sync_dir, ranks=ranks,
                         cancel=cancel,
                         total_steps=total_steps or config.total_steps(len(self.problems)))
        self.rollouts = RolloutBuilder(engine, config, scorer, sandbox, cancel=cancel)
        self.last_rollouts: list[ProblemRollout] = []  # this rank's

    @classmethod
    def from_run(cls, run: TrainingRun) -> MAGRPOTrainer:
        """The trainer of `run`: its problems, scored by its scorer or in its sandbox."""
        return cls(run.engine, run.config, run.problems, policy=run.policy,
                   sync_dir=run.sync_dir, ranks=run.ranks, sandbox=run.sandbox,
                   scorer=run.scorer, cancel=run.cancel)

    def watch_phases(self, watcher: PhaseWatcher) -> None:
        """Tell `watcher` each phase of a step's rollouts and the tokens sampled so far."""
        self.rollouts.on_phase = watcher

    # -- a step -----------------------------------------------------------------------------

    def train_step(self) -> dict[str, float]:
        """Sample, score, update every agent once; return the step's metrics."""
        cfg = self.config
        started = time.time()
        start_step_peak()
        self.sync_sampler()
        everyone = [self.problems[i] for i in self.order.indices(self.step)]
        self.step_task_ids = [p.task_id for p in everyone]  # the step's, over all ranks
        problems = self.ranks.shard(everyone)
        rollouts, rstats = self.rollouts.run(problems, self.step)
        self._check_cancel()
        for r in rollouts:
            discounted_returns(r.root, cfg.gamma)
            assign_advantages(r.root, scale_by_std=cfg.advantage_std)
        self.last_rollouts = rollouts
        update_started = time.time()
        metrics: dict[str, float] = {}
        for role in self.roles:
            groups = [sibs for r in rollouts for n in r.root.walk()
                      for sibs in siblings(n.samples.get(role, []))]
            metrics.update(self.accumulate(role, groups))
        self._check_cancel()  # the last point to stop: the optimizer steps go together
        for role in self.roles:
            metrics.update(self.apply_gradients(role))
        self.step += 1
        done = time.time()
        release_free_memory()
        metrics.update(self._step_metrics(rollouts, rstats))
        metrics.update({
            "loss": sum(metrics[f"{r}/loss"] for r in self.roles),
            "grad_norm": max(metrics[f"{r}/grad_norm"] for r in self.roles),
            "lr": metrics[f"{self.roles[0]}/lr"],  # the rate this step's update used
            "epoch": self.order.epoch(self.step - 1),
            "gen_seconds": rstats.gen_seconds,
            "score_seconds": rstats.score_seconds,
            "update_seconds": done - update_started,
            "step_seconds": done - started,
            "tokens_per_s": rstats.gen_tokens / max(rstats.gen_seconds, 1e-9),
            **({"resampled_groups": float(rstats.resampled),
                "still_constant_groups": float(rstats.still_constant)}
               if cfg.resample_constant_groups else {}),
            **step_memory(),
            # sandbox jobs run again because their worker was lost (never scored as failures)
            "infra_retries": float(getattr(self.rollouts.sandbox, "infra_retries", 0)),
        })
        if torch.cuda.is_available():
            metrics["cuda_peak_mb"] = torch.cuda.max_memory_allocated() / 2**20
        kls = [metrics[f"{r}/kl"] for r in self.roles if f"{r}/kl" in metrics]
        if kls:
            metrics["kl"] = mean(kls)
        return self.ranks.average(metrics)  # each rank saw its share of the problems

    def accumulate(self, role: str, groups: list[list[Sample]]) -> dict[str, float]:
        """Accumulate this agent's policy-gradient (and KL) gradients over its sibling groups.

        The loss is normalised by all of the agent's samples (on every rank), so skipping
        some changes nothing. With several ranks, the gradients are all-reduced at the last
        backward (DDP over the agent's LoRA weights).
        """
        cfg = self.config
        need_kl = cfg.kl_coef > 0 or cfg.log_kl
        considered = len(groups)
        if cfg.drop_constant_groups:  # all-equal rewards: no signal, and out of the normaliser
            groups = [g for g in groups if any(s.advantage != 0.0 for s in g)]
        samples = [s for g in groups for s in g]
        # The loss's normaliser: the agent's completions (the paper's), or with the token-level
        # loss their tokens (Dr. GRPO / DAPO), over every rank.
        size = (sum(len(s.completion_ids) for s in samples) if cfg.token_level_loss
                else len(samples))
        total = max(1, self.ranks.total(size))
        # A zero-advantage sample adds nothing to the policy gradient: skip its forward
        # (often whole groups, when every joint action got the same reward).
        work = [[s for s in g if s.completion_ids and (s.advantage != 0.0 or need_kl)]
                for g in groups]
        chunks: list[list[Sample] | None] = [
            g[i:i + cfg.micro_batch] for g in work for i in range(0, len(g), cfg.micro_batch)]
        if self.ranks.distributed and not chunks:
            chunks = [None]  # the reduction needs every rank's (here: zero) gradient
        self.policy.select(adapter_of(role))  # also makes only this adapter trainable
        self._loss_context = (role, total, need_kl)
        module = self.losses[role]
        loss_sum, kl_sum, ent_sum, tokens, ent_n = 0.0, 0.0, 0.0, 0, 0
        for i, chunk in enumerate(chunks):
            self._check_cancel()
            with torch.enable_grad(), no_sync(module, last=i == len(chunks) - 1):
                loss, info = module(chunk)
                if loss.requires_grad:
                    loss.backward()
            loss_sum += float(loss.detach()) / self.ranks.world
            if info is None:
                continue
            lp, kl = info
            kl_sum += kl
            measured = lp.entropy[lp.mask]
            measured = measured[~torch.isnan(measured)]
            ent_sum += float(measured.sum())
            ent_n += int(measured.numel())
            tokens += int(lp.mask.sum())
        out = {
            f"{role}/loss": loss_sum,
            f"{role}/entropy": ent_sum / ent_n if ent_n else 0.0,
            f"{role}/adv_abs": mean([abs(s.advantage) for s in samples]),
            f"{role}/completion_tokens": mean([len(s.completion_ids) for s in samples]),
            f"{role}/trained_samples": float(sum(len(g) for g in work)),
        }
        if cfg.drop_constant_groups:
            out[f"{role}/dropped_groups"] = float(considered - len(groups))
        if need_kl:
            out[f"{role}/kl"] = kl_sum / tokens if tokens else 0.0
        return out

    def _chunk_loss(self, chunk: list[Sample]) -> tuple[torch.Tensor, Any]:
        """The loss of one micro-batch (and its log-probs and KL sum, for the metrics)."""
        role, total, need_kl = self._loss_context
        cfg = self.config
        name = adapter_of(role)
        prompts = [s.prompt_ids for s in chunk]
        comps = [s.completion_ids for s in chunk]
        adv = torch.tensor([s.advantage for s in chunk], dtype=torch.float32)
        ref = None
        if need_kl:  # first: the policy's forward below must be the last to select an adapter
            with torch.no_grad():
                ref = self.policy.logprobs(self.references.get(role), prompts, comps,
                                           temperature=cfg.temperature)
        lp = self.policy.logprobs(name, prompts, comps, temperature=cfg.temperature)
        seq = lp.reduce(cfg.logprob_reduction)
        # DDP averages the ranks' gradients: scale by the world size to get their sum.
        loss = -(adv.to(seq.device) * seq).sum() / total * self.ranks.world
        kl_sum = 0.0
        if ref is not None:
            k3 = token_kl(ref.values, lp.values, lp.mask, cfg.kl_cap)
            kl_tok = k3.sum(1)
            if cfg.logprob_reduction == "mean":
                kl_tok = kl_tok / lp.mask.sum(1).clamp(min=1)
            kl_sum = float(k3.detach().sum())
            if cfg.kl_coef > 0:
                loss = loss + cfg.kl_coef * kl_tok.sum() / total * self.ranks.world
        return loss, (lp, kl_sum)

    def _step_metrics(self, rollouts: list[ProblemRollout], rstats: RolloutStats) -> dict[str, float]:
        roots = [r.root for r in rollouts]
        out = {k: float(v) for k, v in reward_levels(roots).items()}
        out["return/mean"] = mean([x for n in roots for x in n.returns])
        if self.config.turns > 1:
            nodes = [n for r in roots for n in r.walk()]
            for t in range(1, self.config.turns + 1):
                at = [n for n in nodes if n.turn == t]
                if at:
                    out[f"turn{t}/reward_mean"] = mean([x for n in at for x in n.rewards])
                    out[f"turn{t}/nodes"] = float(len(at))
        if Role.HELPER in self.roles:
            calls = [main_calls_helper(n.samples[Role.MAIN][a.members[Role.MAIN]].code,
                                       n.samples[Role.HELPER][a.members[Role.HELPER]].code)
                     for n in roots for a in n.actions]
            out["main_calls_helper"] = mean([1.0 if c else 0.0 for c in calls])
            # How cooperation moves with the steps, over this step's first-turn joint actions:
            # the headline rates (own work, the helper alone solves it, a shell) and the
            # share carrying each pattern (the paper's emergent schemes). The judging path
            # analysed each joint action once; a scorer that does not judge leaves it to here.
            found = [a.cooperation if a.cooperation is not None else analyse_cooperation(
                         r.root.samples[Role.HELPER][a.members[Role.HELPER]].code,
                         r.root.samples[Role.MAIN][a.members[Role.MAIN]].code, r.problem.entry_point)
                     for r in rollouts for a in r.root.actions]
            for name, rate in cooperation_rates(found).items():
                if rate is not None:
                    out[f"coop/{name}"] = rate
            for name, rate in pattern_rates([c.patterns for c in found]).items():
                out[f"coop/{name}"] = rate
        for role in self.roles:  # what the collapse guards measure code by (no docstrings)
            out[f"{role}/code_lines"] = mean([float(code_lines(s.code)) for n in roots
                                              for s in n.samples.get(role, [])])
        for role in (Role.MAIN, Role.SINGLE):  # the task's function answering with one literal
            if role in self.roles:
                out[f"{role}/constant_answers"] = mean([
                    1.0 if answers_a_constant(s.code, r.problem.entry_point) else 0.0
                    for r in rollouts for s in r.root.samples.get(role, [])])
        out["truncated_rate"] = rstats.finish.get(FinishReason.LENGTH, 0) / max(1, rstats.samples)
        return out


def siblings(samples: list[Sample]) -> list[list[Sample]]:
    """One node's samples of one agent split into sibling groups (they share a prompt prefix)."""
    groups: dict[int, list[Sample]] = defaultdict(list)
    for s in samples:
        groups[s.group].append(s)
    return [groups[k] for k in sorted(groups)]

