"""Training configuration: one dataclass, every field with a default and a one-line help.

Parameters, by group:
- what to train: `algo`, `model`, `problems`, `limit`, `scheme`, `joint`, `reward`, `examples`
- sampling: `group_size`, `max_new_tokens`, `temperature`, `top_p`, `turns`, `gamma`,
  `early_stop_reward`, `timeout`
- the update: `learning_rate`, `helper_lr`, `main_lr`, `lr_schedule`, `warmup_steps`,
  `weight_decay`, `max_grad_norm`, `advantage_std`, `logprob_reduction`, `token_level_loss`,
  `drop_constant_groups`, `resample_constant_groups`, `agent_credit`, `kl_coef`,
  `kl_reference`, `log_kl`, `micro_batch`
- the adapters: `lora_rank`, `lora_alpha`, `lora_dropout`, `lora_targets`, `helper_init`,
  `main_init`
- the schedule: `steps`, `epochs`, `problems_per_step`, `save_every`, `keep_checkpoints`, `seed`
- validation: `eval_every`, `eval_problems`, `eval_n`, `eval_limit` (a bench of the agents at
  step 0, every N steps and the last; off unless `eval_every` is given), `keep_eval_adapters`,
  `keep_step` (which validated step the run's adapters are), `patience` (stop when validation
  no longer improves)

Each field is declared once, here (`coopcode.settings.options.option`): its default, its help, its
flag, its bounds and its place on the TUI's Train form. `coopcode train`'s options, the TUI
form, validation and the saved config.json all derive from these fields.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from coopcode.collaboration.sampling import SampleSettings
from coopcode.core.errors import UserError
from coopcode.core.inputs import MAX_TEMPERATURE, check_server_urls
from coopcode.engines.registry import engine_kind, rollout_engine_names
from coopcode.records.vocabulary import Role
from coopcode.rewards import CREDITS, reward_names
from coopcode.schemes import get_scheme, trainable_scheme_names
from coopcode.settings.common import ModelChoice
from coopcode.settings.options import check_options, option, option_like, option_named

ALGOS = ("magrpo", "grpo", "sft")
GRPO_SCHEME = "single"  # GRPO trains one agent: the single-agent scheme
JOINT_MODES = ("aligned", "cross")


def train_scheme_names() -> tuple[str, ...]:
    """What `--scheme` takes: the schemes MAGRPO trains, and `single` (one agent) for SFT."""
    return (*trainable_scheme_names(), GRPO_SCHEME)
LR_SCHEDULES = ("constant", "linear", "cosine")
REDUCTIONS = ("sum", "mean")
KL_REFERENCES = ("start", "base")
KEEP_STEPS = ("best", "last")


@dataclass
class TrainConfig:
    """A MAGRPO (two agents) or GRPO (one agent) run with LoRA adapters on one base model."""

    # -- what to train ---------------------------------------------------------------------
    algo: str = option("magrpo", "magrpo (helper + main, joint reward), grpo (one agent) or sft "
                       "(a warm start on --examples: the agents fine-tuned on given code).",
                       choices=ALGOS, noun="algorithm", form=1)
    model: str | None = option_like(ModelChoice, "model")
    problems: str = option("humaneval:train", "Training problems: humaneval[:split], a .jsonl, a .py or a folder.",
                           label="data", form=8)
    limit: int | None = option(None, "Only the first N problems (before shuffling).", at_least=1)
    scheme: str = option("sequential", "MAGRPO scheme: one whose `trainable` says so, e.g. sequential "
                         "(main sees the helper's code) or parallel; with --algo sft, the scheme "
                         "whose prompts the pair learns on, or single (one agent).",
                         choices=train_scheme_names, noun="training scheme")
    joint: str = option("aligned", "Joint actions: aligned (sample g with sample g, G actions) or cross (G x G).",
                        choices=JOINT_MODES, noun="joint mode")
    reward: str | None = option(
        None, f"The reward trained on: {', '.join(reward_names())} (see the README's Rewards) "
        "[default: seed for magrpo, seed-grpo for grpo].", choices=reward_names, noun="reward",
        form=9)
    examples: str | None = option(
        None, "--algo sft: the examples, a JSONL file of {task_id, helper, main} (a pair) or "
        "{task_id, solution} (one agent) lines, task ids from --problems (`coopcode problems "
        "sft-examples` writes them from a set's canonical solutions).")

    # -- sampling --------------------------------------------------------------------------
    group_size: int = option(4, "G: completions each agent samples per problem (>= 2: the group is the baseline).",
                             flags=("--group-size", "-G"), at_least=2, why="the group is the baseline",
                             label="G", form=2)
    max_new_tokens: int = option(256, "Token budget per agent completion.", at_least=1,
                                 label="max tokens", form=7)
    temperature: float = option_like(SampleSettings, "temperature",
                                     help="Sampling temperature (log-probs are taken at the same temperature).",
                                     within=f"(0, {MAX_TEMPERATURE:g}]",
                                why="greedy samples give the group no spread to learn from")
    top_p: float = option_like(SampleSettings, "top_p")
    turns: int = option(1, "Turns H; later turns revise from feedback on the public examples.",
                        at_least=1, form=3)
    gamma: float = option(0.9, "Discount of later turns' returns (multi-turn).", within="[0, 1]")
    early_stop_reward: float | None = option(None, "Multi-turn: a node whose mean reward reaches this gets no revision turn.")
    timeout: float = option_like(SampleSettings, "timeout")

    # -- the update ------------------------------------------------------------------------
    learning_rate: float = option(5e-5, "AdamW learning rate for the LoRA weights.", flags=("--lr",),
                                  above=0, label="lr", form=4)
    helper_lr: float | None = option(
        None, "The helper's learning rate [default: --lr].", above=0)
    main_lr: float | None = option(
        None, "Main's (or GRPO's one agent's) learning rate [default: --lr]: main's gradient is "
        "the one that spiked before every collapse seen on compose.", above=0)
    lr_schedule: str = option("constant", "After warm-up: constant, linear (to 0) or cosine (to 0).",
                              choices=LR_SCHEDULES)
    warmup_steps: int = option(3, "Linear warm-up steps (Adam's first steps are the noisiest).", at_least=0)
    weight_decay: float = option(0.0, "AdamW weight decay.", at_least=0)
    max_grad_norm: float = option(1.0, "Clip each agent's gradient to this norm (0: no clipping).", at_least=0)
    advantage_std: bool = option(False, "Divide advantages by the group's standard deviation.",
                                 flags=("--std-norm/--no-std-norm",))
    logprob_reduction: str = option("sum", "log pi(a|h) of a completion: sum over its tokens (the paper) or mean.",
                                    flags=("--logprob",), choices=REDUCTIONS)
    token_level_loss: bool = option(
        False, "Token-level loss (Dr. GRPO / DAPO): every token's -A*log pi summed over the agent's "
        "completions and divided by their total tokens, so long completions do not weigh less per "
        "token (needs --logprob sum) [default: per completion, the paper's].")
    drop_constant_groups: bool = option(
        False, "Leave out sibling groups whose rewards are all equal (DAPO's dynamic sampling, "
        "without resampling): they carry no signal and no longer dilute the loss's normalisation.")
    resample_constant_groups: int = option(
        0, "Sample a problem's first turn again, up to N more times, while every agent's group "
        "scored alike (DAPO's dynamic sampling): a group with no spread teaches nothing, and "
        "whole steps of such groups left collapsing runs nothing to pull them back (0: never).",
        flags=("--resample-constant-groups",), at_least=0)
    agent_credit: str | None = option(
        None, "Who gets what: joint (both agents the joint reward) or counterfactual (the helper "
        "its contribution over main alone: one more main sample per joint action, ~1/3 more "
        "generation) [default: the reward's own: counterfactual for credit, joint otherwise].",
        choices=CREDITS, noun="credit")
    kl_coef: float = option(0.0, "Weight of the KL penalty to the reference policy (0: none; "
                            "one more forward per trained completion).", at_least=0)
    kl_reference: str = option(
        "start", "What the KL measures against: start (each agent's adapters as the run began, "
        "e.g. its SFT warm start from --helper-adapter/--main-adapter; the base where it began "
        "fresh) or base (the bare base model).", flags=("--kl-ref",), choices=KL_REFERENCES,
        noun="KL reference")
    kl_cap: float | None = option(
        None, "Cap each token's KL estimate (k3, exp(r) - r - 1 with r = log pi_ref - log pi) at "
        "C, as verl and OpenRLHF cap it at 10 (off unless given): a token the policy has all "
        "but ruled out while the reference still favours it weighs exp(r), enough to carry a "
        "step's mean KL into the hundreds and main's gradient norm past 10^5; a capped token "
        "adds C and no gradient.", above=0)
    log_kl: bool = option(False, "Measure the KL to the reference even when kl_coef is 0 (one more forward).")
    micro_batch: int = option(8, "Completions per forward/backward in the update (memory bound).", at_least=1)

    # -- adapters --------------------------------------------------------------------------
    lora_rank: int = option(8, "LoRA rank r (RL needs little capacity; r=8 on all layers is ~18 MB for 0.5B).",
                            at_least=1, label="LoRA rank", form=5)
    lora_alpha: int = option(16, "LoRA alpha (scale alpha/r).", at_least=1)
    lora_dropout: float = option(0.0, "LoRA dropout; 0 keeps sampling and scoring on the same policy.",
                                 within="[0, 1)")
    lora_targets: str = option("all-linear", "Modules to adapt: all-linear or a comma-separated list (q_proj,v_proj).")
    helper_init: str | None = option(None, "Start the helper from this adapter folder instead of a fresh one.",
                                     flags=("--helper-adapter",))
    main_init: str | None = option(None, "Start the main (or GRPO) agent from this adapter folder.",
                                   flags=("--main-adapter",))

    # -- schedule --------------------------------------------------------------------------
    steps: int | None = option(None, "Optimizer steps (None: `epochs` passes over the problems).",
                               at_least=1, form=6)
    epochs: int = option(1, "Passes over the problems when `steps` is not given.", at_least=1)
    problems_per_step: int = option(1, "Problems per optimizer step (--rollout-batch): all of their samples are in flight at once.",
                                    flags=("--problems-per-step", "--rollout-batch"), at_least=1)
    save_every: int = option(10, "Save a checkpoint every N steps (and always at the end).", at_least=1)
    keep_checkpoints: int = option(1, "Resumable states to keep in trainer_state/ (newest first).",
                                   flags=("--keep",), at_least=1)
    seed: int = option(0, "Seed for data order and sampling.")

    # -- validation ------------------------------------------------------------------------
    eval_every: int | None = option(
        None, "Bench the agents on --eval-problems at step 0, every N steps and at the last "
        "step (off unless given): val/* in metrics.jsonl, samples in RUN/validation/; the "
        "run's adapters are then its best validated step (--keep-step).",
        at_least=1, label="validate every", form=10)
    eval_problems: str | None = option(
        None, "Validation problems: humaneval[:split] (val is held out of fit, not of train), "
        "a .jsonl, a .py or a folder [default: the val split of --problems' set where it has "
        "one (compose:train -> compose:val), else humaneval:val].")
    eval_n: int = option(2, "Samples per validation problem (val/pass@1 is their pass rate).",
                         at_least=1)
    eval_limit: int | None = option(None, "Only the first N validation problems.", at_least=1)
    keep_eval_adapters: bool = option(
        False, "Keep the adapters each validation measured (validation/step-N/adapters/<agent>/, "
        "~17 MB an agent for the 0.5B model), so the step validation prefers can be benched "
        "or used later [default: only the last step's, and with --keep-step best the kept "
        "step's, are kept].")
    keep_step: str = option(
        "best", "With --eval-every, which adapters the run is (RUN/helper, RUN/main: what solve, "
        "bench and the TUI load): best (the validated step with the highest val pass@1 where it "
        "leads every other by two standard errors, else the earliest step it does not lead that "
        "far: the warm start unless training shows better) or last; the last step's adapters "
        "are kept beside them in RUN/last/.", choices=KEEP_STEPS, noun="kept step")
    patience: int | None = option(
        None, "With --eval-every: stop the run after P validations in a row with no new best "
        "val pass@1 (off unless given).", at_least=1)

    # -- who samples the rollouts ----------------------------------------------------------
    rollout_engine: str = option(
        "transformers", "Who samples: transformers (the model being trained samples itself; "
        "`local` names it too), vllm (vLLM in-process) or openai (OpenAI-compatible servers "
        "at --rollout-base-url, e.g. vllm serve).", choices=rollout_engine_names,
        noun="rollout engine")
    rollout_base_url: tuple[str, ...] = option(
        (), "--rollout-engine openai: the servers' URLs, comma-separated (vllm serve started with "
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True --enable-lora; they must read the run folder).")
    deterministic: bool = option(
        False, "Sample every completion alone, so the same config, seed, machine and --threads "
        "give the same steps bit for bit (samples, rewards, weights); batched, a sample's "
        "rounding depends on what shares its forward, which thread timing decides (slower: no "
        "batching; README, Training you can rerun).")

    @property
    def roles(self) -> tuple[str, ...]:
        return get_scheme(self.collab_scheme).roles

    @property
    def collab_scheme(self) -> str:
        return GRPO_SCHEME if self.algo == "grpo" else self.scheme

    @property
    def credit_mode(self) -> str:
        """How the reward is shared: `agent_credit`, else the reward's own (`Reward.credit`)."""
        if self.agent_credit is not None:
            return self.agent_credit
        from coopcode.rewards import resolve_reward

        return resolve_reward(self.reward, self.collab_scheme).credit

    @property
    def validation_problems(self) -> str:
        """`eval_problems`, or the val split of the training set's (`compose:train` ->
        `compose:val`), else `humaneval:val`."""
        if self.eval_problems:
            return self.eval_problems
        from coopcode.problems import BUILT_IN_SETS

        val = f"{self.problems.split(':', 1)[0]}:val"
        return val if any(name == val for name, _ in BUILT_IN_SETS) else "humaneval:val"

    def lr_of(self, role: str) -> float:
        """The learning rate of an agent: its own where given, else `learning_rate`."""
        own = self.helper_lr if role == Role.HELPER else self.main_lr
        return self.learning_rate if own is None else own

    def total_steps(self, n_problems: int) -> int:
        if self.steps is not None:
            return self.steps
        return self.epochs * math.ceil(n_problems / self.problems_per_step)

    def validate(self) -> None:
        """Raise UserError (one line naming the flag) for a value a user can get wrong."""
        check_options(self)  # each field against its choices and bounds (NaN fails every test)
        if self.algo == "sft" and not self.examples:
            raise UserError(f"{flag('algo')} sft fine-tunes on examples: give {flag('examples')} "
                            "FILE.jsonl (`coopcode problems sft-examples SET --out FILE.jsonl` "
                            "writes them)")
        if self.examples and self.algo != "sft":
            raise UserError(f"{flag('examples')} is the data of a warm start: use it with "
                            f"{flag('algo')} sft")
        if self.algo == "magrpo" and self.scheme == GRPO_SCHEME:
            raise UserError(f"{flag('scheme')} {GRPO_SCHEME} is one agent: train it with "
                            f"{flag('algo')} grpo (or sft)")
        if not lora_target_modules(self.lora_targets):
            raise UserError(f"{flag('lora_targets')} {self.lora_targets!r}: use all-linear or "
                            "module names like q_proj,v_proj")
        if self.token_level_loss and self.logprob_reduction != "sum":
            raise UserError(f"{flag('token_level_loss')} sums log-probs over tokens: use it with "
                            f"{flag('logprob_reduction')} sum")
        if self.algo == "grpo" and self.agent_credit == "counterfactual":
            raise UserError(f"{flag('agent_credit')} counterfactual shares a pair's reward: "
                            "GRPO trains one agent")
        if self.collab_scheme == GRPO_SCHEME and self.helper_init is not None:
            raise UserError(f"{flag('helper_init')}: {self.algo} with the single scheme trains "
                            f"one agent (use {flag('main_init')})")
        rollouts = engine_kind(self.rollout_engine)
        if rollouts.served != bool(self.rollout_base_url):
            raise UserError(f"{flag('rollout_base_url')} goes with {flag('rollout_engine')} openai "
                            "(the servers that sample the rollouts)")
        check_server_urls(flag("rollout_base_url"), self.rollout_base_url)
        if self.patience is not None and not self.eval_every:
            raise UserError(f"{flag('patience')} counts validations: give {flag('eval_every')} N")
        if self.resample_constant_groups and self.algo == "sft":
            raise UserError(f"{flag('resample_constant_groups')} resamples rollouts: SFT has none")
        if self.deterministic and rollouts.rollouts != "in place":
            raise UserError(f"{flag('deterministic')} is for rollouts the trained model samples "
                            f"itself ({flag('rollout_engine')} transformers)")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """A config from a saved dict (unknown keys, e.g. from a newer version, are ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def flag(name: str) -> str:
    """The `coopcode train` flag of a TrainConfig field."""
    return option_named(TrainConfig, name).flag


def lora_target_modules(targets: str) -> str | list[str]:
    return "all-linear" if targets == "all-linear" else [t.strip() for t in targets.split(",") if t.strip()]
