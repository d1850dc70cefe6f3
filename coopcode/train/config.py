"""Training configuration: one dataclass, every field with a default and a one-line help.

Parameters, by group:
- what to train: `algo`, `model`, `problems`, `limit`, `scheme`, `joint`
- sampling: `group_size`, `max_new_tokens`, `temperature`, `top_p`, `turns`, `gamma`,
  `early_stop_reward`, `timeout`
- the update: `learning_rate`, `lr_schedule`, `warmup_steps`, `weight_decay`, `max_grad_norm`,
  `advantage_std`, `logprob_reduction`, `kl_coef`, `log_kl`, `micro_batch`
- the adapters: `lora_rank`, `lora_alpha`, `lora_dropout`, `lora_targets`, `helper_init`,
  `main_init`
- the schedule: `steps`, `epochs`, `problems_per_step`, `save_every`, `keep_checkpoints`, `seed`

The CLI (`coopcode train --help`) takes its help texts from the field metadata here, so the
two never disagree.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from coopcode.errors import UserError
from coopcode.inputs import check_timeout

ALGOS = ("magrpo", "grpo")
TRAIN_SCHEMES = ("sequential", "parallel")  # MAGRPO; GRPO always uses the `single` scheme
JOINT_MODES = ("aligned", "cross")
LR_SCHEDULES = ("constant", "linear", "cosine")
REDUCTIONS = ("sum", "mean")


def _f(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass
class TrainConfig:
    """A MAGRPO (two agents) or GRPO (one agent) run with LoRA adapters on one base model."""

    # -- what to train ---------------------------------------------------------------------
    algo: str = _f("magrpo", "magrpo (helper + main, joint reward) or grpo (one agent).")
    model: str | None = _f(None, "Base model: catalog name, folder or HF id (None: the embedded 0.5B).")
    problems: str = _f("humaneval:train", "Training problems: humaneval[:split], a .jsonl, a .py or a folder.")
    limit: int | None = _f(None, "Only the first N problems (before shuffling).")
    scheme: str = _f("sequential", "MAGRPO scheme: sequential (main sees the helper's code) or parallel.")
    joint: str = _f("aligned", "Joint actions: aligned (sample g with sample g, G actions) or cross (G x G).")

    # -- sampling --------------------------------------------------------------------------
    group_size: int = _f(4, "G: completions each agent samples per problem (>= 2: the group is the baseline).")
    max_new_tokens: int = _f(256, "Token budget per agent completion.")
    temperature: float = _f(0.8, "Sampling temperature (log-probs are taken at the same temperature).")
    top_p: float = _f(0.95, "Nucleus sampling.")
    turns: int = _f(1, "Turns H; later turns revise from feedback on the public examples.")
    gamma: float = _f(0.9, "Discount of later turns' returns (multi-turn).")
    early_stop_reward: float | None = _f(None, "Multi-turn: a node whose mean reward reaches this gets no revision turn.")
    timeout: float = _f(5.0, "CPU seconds per program in the sandbox.")

    # -- the update ------------------------------------------------------------------------
    learning_rate: float = _f(5e-5, "AdamW learning rate for the LoRA weights.")
    lr_schedule: str = _f("constant", "After warm-up: constant, linear (to 0) or cosine (to 0).")
    warmup_steps: int = _f(3, "Linear warm-up steps (Adam's first steps are the noisiest).")
    weight_decay: float = _f(0.0, "AdamW weight decay.")
    max_grad_norm: float = _f(1.0, "Clip each agent's gradient to this norm (0: no clipping).")
    advantage_std: bool = _f(False, "Divide advantages by the group's standard deviation.")
    logprob_reduction: str = _f("sum", "log pi(a|h) of a completion: sum over its tokens (the paper) or mean.")
    kl_coef: float = _f(0.0, "Weight of the KL penalty to the frozen base model (0: none).")
    log_kl: bool = _f(False, "Measure the KL to the base even when kl_coef is 0 (one more forward).")
    micro_batch: int = _f(8, "Completions per forward/backward in the update (memory bound).")

    # -- adapters --------------------------------------------------------------------------
    lora_rank: int = _f(8, "LoRA rank r (RL needs little capacity; r=8 on all layers is ~18 MB for 0.5B).")
    lora_alpha: int = _f(16, "LoRA alpha (scale alpha/r).")
    lora_dropout: float = _f(0.0, "LoRA dropout; 0 keeps sampling and scoring on the same policy.")
    lora_targets: str = _f("all-linear", "Modules to adapt: all-linear or a comma-separated list (q_proj,v_proj).")
    helper_init: str | None = _f(None, "Start the helper from this adapter folder instead of a fresh one.")
    main_init: str | None = _f(None, "Start the main (or GRPO) agent from this adapter folder.")

    # -- schedule --------------------------------------------------------------------------
    steps: int | None = _f(None, "Optimizer steps (None: `epochs` passes over the problems).")
    epochs: int = _f(1, "Passes over the problems when `steps` is not given.")
    problems_per_step: int = _f(1, "Problems per optimizer step (--rollout-batch): all of their samples are in flight at once.")
    save_every: int = _f(10, "Save a checkpoint every N steps (and always at the end).")
    keep_checkpoints: int = _f(1, "Resumable states to keep in trainer_state/ (newest first).")
    seed: int = _f(0, "Seed for data order and sampling.")

    @property
    def roles(self) -> tuple[str, ...]:
        return ("single",) if self.algo == "grpo" else ("helper", "main")

    @property
    def collab_scheme(self) -> str:
        return "single" if self.algo == "grpo" else self.scheme

    def total_steps(self, n_problems: int) -> int:
        if self.steps is not None:
            return self.steps
        return self.epochs * math.ceil(n_problems / self.problems_per_step)

    def validate(self) -> None:
        """Raise UserError (one line) for values a user can get wrong (NaN fails every test)."""
        def need(ok: bool, message: str) -> None:
            if not ok:
                raise UserError(message)

        def finite(x: float) -> bool:
            return math.isfinite(x)

        need(self.algo in ALGOS, f"unknown algorithm {self.algo!r}: use one of {', '.join(ALGOS)}")
        need(self.scheme in TRAIN_SCHEMES,
             f"unknown training scheme {self.scheme!r}: use one of {', '.join(TRAIN_SCHEMES)}")
        need(self.joint in JOINT_MODES, f"unknown joint mode {self.joint!r}: use aligned or cross")
        need(self.group_size >= 2,
             f"--group-size must be at least 2 (got {self.group_size}): the group is the baseline")
        need(self.turns >= 1, f"--turns must be at least 1 (got {self.turns})")
        need(0 <= self.gamma <= 1, f"--gamma must be between 0 and 1 (got {self.gamma})")
        need(self.max_new_tokens >= 1, f"--max-new-tokens must be at least 1 (got {self.max_new_tokens})")
        need(0 < self.temperature <= 5,
             f"--temperature must be in (0, 5] for training (got {self.temperature}): "
             "greedy samples give the group no spread to learn from")
        need(0 < self.top_p <= 1, f"--top-p must be in (0, 1] (got {self.top_p})")
        need(self.learning_rate > 0 and finite(self.learning_rate),
             f"--lr must be a positive number (got {self.learning_rate})")
        need(self.lr_schedule in LR_SCHEDULES,
             f"unknown --lr-schedule {self.lr_schedule!r}: use one of {', '.join(LR_SCHEDULES)}")
        need(self.warmup_steps >= 0, f"--warmup-steps must be >= 0 (got {self.warmup_steps})")
        need(self.logprob_reduction in REDUCTIONS,
             f"unknown --logprob {self.logprob_reduction!r}: use sum or mean")
        need(self.kl_coef >= 0 and finite(self.kl_coef), f"--kl-coef must be >= 0 (got {self.kl_coef})")
        need(self.max_grad_norm >= 0 and finite(self.max_grad_norm),
             f"--max-grad-norm must be >= 0 (got {self.max_grad_norm})")
        need(self.weight_decay >= 0 and finite(self.weight_decay),
             f"--weight-decay must be >= 0 (got {self.weight_decay})")
        need(self.early_stop_reward is None or finite(self.early_stop_reward),
             f"--early-stop-reward must be a finite number (got {self.early_stop_reward})")
        need(self.micro_batch >= 1, f"--micro-batch must be at least 1 (got {self.micro_batch})")
        need(self.lora_rank >= 1, f"--lora-rank must be at least 1 (got {self.lora_rank})")
        need(self.lora_alpha >= 1, f"--lora-alpha must be at least 1 (got {self.lora_alpha})")
        need(0 <= self.lora_dropout < 1, f"--lora-dropout must be in [0, 1) (got {self.lora_dropout})")
        need(bool(lora_target_modules(self.lora_targets)),
             f"--lora-targets {self.lora_targets!r}: use all-linear or module names like q_proj,v_proj")
        need(self.steps is None or self.steps >= 1, f"--steps must be at least 1 (got {self.steps})")
        need(self.epochs >= 1, f"--epochs must be at least 1 (got {self.epochs})")
        need(self.problems_per_step >= 1,
             f"--problems-per-step must be at least 1 (got {self.problems_per_step})")
        need(self.save_every >= 1, f"--save-every must be at least 1 (got {self.save_every})")
        need(self.keep_checkpoints >= 1, f"--keep must be at least 1 (got {self.keep_checkpoints})")
        need(self.limit is None or self.limit >= 1, f"--limit must be at least 1 (got {self.limit})")
        check_timeout(self.timeout)
        if self.algo == "grpo":
            need(self.helper_init is None, "--helper-adapter: GRPO trains one agent (use --main-adapter)")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """A config from a saved dict (unknown keys, e.g. from a newer version, are ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


# TrainConfig field -> its `coopcode train` flag, where the two names differ.
FLAGS = {"learning_rate": "--lr", "advantage_std": "--std-norm", "logprob_reduction": "--logprob",
         "helper_init": "--helper-adapter", "main_init": "--main-adapter",
         "keep_checkpoints": "--keep", "group_size": "--group-size"}


def flag(name: str) -> str:
    """The CLI flag of a TrainConfig field."""
    return FLAGS.get(name, "--" + name.replace("_", "-"))


def help_for(name: str) -> str:
    """The one-line help of a TrainConfig field (the CLI's option help)."""
    for f in fields(TrainConfig):
        if f.name == name:
            return str(f.metadata.get("help", ""))
    raise KeyError(name)


def lora_target_modules(targets: str) -> str | list[str]:
    return "all-linear" if targets == "all-linear" else [t.strip() for t in targets.split(",") if t.strip()]
