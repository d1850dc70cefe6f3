"""`train`: a whole run — set-up, resume, the step loop, checkpoints, metrics and events."""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from coopcode.core.errors import UserError
from coopcode.core.events import Emit, Finished, Log, Progress, Started, ignore
from coopcode.core.files import append_line, no_space, write_failure
from coopcode.core.run_lock import RunLock
from coopcode.problems import Problem
from coopcode.training import checkpoint as ckpt
from coopcode.training.config import TrainConfig, flag
from coopcode.training.data import load_training_problems
from coopcode.training.guards import CollapseWatch, collapse_warnings
from coopcode.training.metrics import MetricsLog

# Fields --resume may change; everything else must match the saved run (or the resumed run
# would not be the run that was started).
# What a resumed run may change: the schedule's end, who samples (not what is sampled), and
# the validation (it measures the agents, it does not change what is trained).
RESUMABLE_OVERRIDES = ("steps", "save_every", "keep_checkpoints", "timeout", "rollout_engine",
                       "rollout_base_url", "deterministic", "eval_every", "eval_problems",
                       "eval_n", "eval_limit", "keep_eval_adapters", "keep_step", "patience")
# What a run saved before a setting existed did, so that resuming it goes on as it began.
SAVED_BEFORE = {"kl_reference": "base", "keep_step": "last"}


@dataclass
class TrainResult:
    out: Path
    step: int
    total_steps: int
    stopped: bool = False  # a stop was requested before the last step
    metrics: dict[str, Any] = field(default_factory=dict)
    kept: dict[str, Any] | None = None  # the validated step the run's adapters are (`validation.keep`)
    stopped_early: bool = False  # validation brought no new best for --patience evaluations


def resolve_config(config: TrainConfig, out: Path, resume: bool,
                   explicit: set[str] | None = None) -> TrainConfig:
    """The config to run: the given one for a new run, the saved one (plus allowed changes)
    for `--resume`. `explicit` names the fields the user set (to catch conflicting flags)."""
    saved_path = out / "config.json"
    has_run = saved_path.exists() or ckpt.latest_state(out) is not None
    if not resume:
        if has_run:
            raise UserError(f"{out} already holds a training run: pass --resume to continue it, "
                            "or choose another --out")
        return with_reward(config)
    if not saved_path.exists():
        raise UserError(f"{out}: no training run to resume (no config.json)")
    try:
        data = json.loads(saved_path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise TypeError("not a JSON object")
        data = {**SAVED_BEFORE, **data}
        saved = with_reward(TrainConfig.from_dict(data))  # runs from before --reward: the seed's
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, TypeError) as e:
        raise UserError(f"{saved_path}: unreadable ({e}): the run cannot be resumed; "
                        "start a new one with another --out") from None
    changes = {}
    for name in sorted(explicit or ()):
        new, old = getattr(config, name), getattr(saved, name)
        if new == old:
            continue
        if name not in RESUMABLE_OVERRIDES:
            allowed = ", ".join(flag(n) for n in RESUMABLE_OVERRIDES)
            raise UserError(f"--resume continues {out} with its saved settings: {flag(name)} was "
                            f"{old!r}, not {new!r} (only {allowed} may change)")
        changes[name] = new
    return replace(saved, **changes)


def with_reward(config: TrainConfig) -> TrainConfig:
    """The config with its reward named (the default one when none was given), so a run's
    config.json and manifest say which reward it was trained on."""
    from coopcode.rewards import default_reward_name

    return replace(config, reward=config.reward or default_reward_name(config.collab_scheme))


def open_rollout_engine(config: TrainConfig, progress: Any = None) -> tuple[Any, Any]:
    """The engine that samples and the policy that learns. The embedded engine: one model
    does both (the adapters are trained in place; the policy is made from the engine). vLLM
    or servers: they sample, and a separate transformers copy of the model computes the
    gradients (`EngineKind.rollouts` says which)."""
    from coopcode.engines import engine_kind, load_engine
    from coopcode.training.policy import TransformersPolicy

    kind = engine_kind(config.rollout_engine)
    kw: dict[str, Any] = {"deterministic": True} if config.deterministic else {}
    if kind.served:
        kw["base_urls"] = list(config.rollout_base_url)
    engine = load_engine(config.model, kind.name, progress=progress, **kw)
    if kind.rollouts == "in place":  # the engine's model is the policy: no second copy
        return engine, None
    return engine, TransformersPolicy.load(config.model, progress=progress)


def make_trainer(engine: Any, config: TrainConfig, problems: list[Problem], *,
                 warn: Any = None, **kw: Any) -> Any:
    from coopcode.training.grpo import GRPOTrainer
    from coopcode.training.magrpo import MAGRPOTrainer

    if config.algo == "sft":
        from coopcode.training.sft import SFTTrainer

        return SFTTrainer(engine, config, problems, warn=warn, **kw)
    cls = GRPOTrainer if config.algo == "grpo" else MAGRPOTrainer
    return cls(engine, config, problems, **kw)


def train(
    config: TrainConfig,
    out: Path,
    *,
    resume: bool = False,
    engine: Any = None,
    sandbox: Any = None,
    scorer: Any = None,
    emit: Emit = ignore,
    cancel: threading.Event | None = None,
    explicit: set[str] | None = None,
    progress: Any = None,
) -> TrainResult:
    """Train (or resume) the run in `out`; `engine` and `sandbox` are loaded by the caller
    (or the engine here from `config.model`)."""
    config.validate()
    ckpt.check_writable(out)
    # One training per run folder (rank 0 writes it), refused before anything is read or loaded.
    lock = RunLock.acquire(out, "training run") if os.environ.get("RANK", "0") == "0" else None
    try:
        return _train(config, out, resume, engine, sandbox, scorer, emit, cancel, explicit,
                      progress)
    finally:
        if lock is not None:
            lock.release()


def _restore(trainer: Any, state_dir: Path, names: list[str], out: Path, publish: bool,
             into: str = "") -> None:
    """The trainer as it was saved in `state_dir` (weights, optimizer, data order, step)."""
    trainer_state, _ = ckpt.load_state(state_dir)
    for name in names:
        trainer.policy.load_weights(name, state_dir / name)
    trainer.load_state_dict(trainer_state)
    if publish:
        ckpt.publish_adapters(out, state_dir, names, into=into)


def keeps_best(config: TrainConfig) -> bool:
    """Whether the run's adapters are its best validated step's (the last step's in last/)."""
    return bool(config.eval_every) and config.keep_step == "best"


def last_dir(config: TrainConfig) -> str:
    """Where a save publishes the last step's adapters: last/ where the top level holds the
    kept step's, else the top level itself ('')."""
    return ckpt.LAST_DIR if keeps_best(config) else ""


@dataclass
class _Checkpointer:
    """Saves a resumable state of the run and publishes its adapters and manifest."""

    out: Path
    config: TrainConfig
    trainer: Any
    engine: Any
    problems: list[Problem]
    log: MetricsLog
    names: list[str]
    total: int
    emit: Emit
    writes: bool  # every rank holds the same adapters; one writes them
    kept: dict[str, Any] | None = None  # the validated step the top-level adapters are
    stopped_early: bool = False

    def keep(self, kept: dict[str, Any] | None) -> None:
        """Publish the kept step's adapters (saved by its validation) as the run's."""
        if kept is None:
            return
        self.kept = kept
        if self.writes and keeps_best(self.config):
            from coopcode.training.validation import eval_dir

            ckpt.publish_adapters(self.out, eval_dir(self.out, kept["step"]) / "adapters",
                                  self.names)

    def __call__(self, step: int) -> None:
        if not self.writes:
            return
        out, config, engine, log = self.out, self.config, self.engine, self.log

        def write_adapters(folder: Path) -> None:
            for name in self.names:
                self.trainer.policy.save(name, folder / name)

        info = {"task_ids": [p.task_id for p in self.problems], "algorithm": config.algo,
                "base": {"name": engine.model_name, "fingerprint": engine.model_fingerprint},
                "runtime": runtime()}
        final = ckpt.save_state(out, step, self.trainer.state_dict(), write_adapters, info,
                                keep=config.keep_checkpoints)
        ckpt.publish_adapters(out, final, self.names, into=last_dir(config))
        last = log.history[-1] if log.history else {}
        metrics = {"reward_mean": log.recent("reward/mean"), "pass_rate": log.recent("pass_rate"),
                   "window": min(10, len(log.history)),
                   "last": {k: v for k, v in last.items() if k != "samples"},
                   "warnings": [w.to_dict() for w in collapse_warnings(log.history,
                                                                         config.max_new_tokens)]}
        ckpt.write_json_atomic(out / "manifest.json", ckpt.manifest(
            base_name=engine.model_name, fingerprint=engine.model_fingerprint,
            algorithm=config.algo, config=config.to_dict(), step=step, total_steps=self.total,
            metrics=metrics, adapters=self.names, run=out.name) | {
                "runtime": runtime(), "kept": self.kept, "stopped_early": self.stopped_early,
                "last": last_dir(config) or None})
        self.emit(Log(message=f"checkpoint step {step}: {out}"))


def _train(config: TrainConfig, out: Path, resume: bool, engine: Any, sandbox: Any, scorer: Any,
           emit: Emit, cancel: threading.Event | None, explicit: set[str] | None,
           progress: Any) -> TrainResult:
    config = resolve_config(config, out, resume, explicit)
    problems = load_training_problems(config.problems, config.limit)
    from coopcode.training import validation as val

    eval_problems = val.load_eval_problems(config) if config.eval_every else []
    state_dir = ckpt.latest_state(out) if resume else None
    state_info = json.loads((state_dir / "state.json").read_text()) if state_dir else {}
    from coopcode.training.distributed import init_ranks

    ranks = init_ranks()  # torchrun: this process's share; alone: rank 0 of 1
    if not ranks.main:
        emit, progress = ignore, None  # rank 0 speaks for the run
    policy = None
    owned = engine is None
    if owned:
        engine, policy = open_rollout_engine(config, progress)
    _check_base(out, engine, resume)
    changed = _runtime_changed(state_info.get("runtime"), config)
    if changed and ranks.main:
        emit(Log(level="warning", message=changed))
    if state_info and state_info.get("task_ids") != [p.task_id for p in problems]:
        raise UserError(f"{out}: the problems changed since the run started "
                        f"({config.problems}); resume with the same data")

    cancel = cancel or threading.Event()
    trainer = make_trainer(engine, config, problems, sandbox=sandbox, scorer=scorer, cancel=cancel,
                           policy=policy, sync_dir=out / "rollout_adapters", ranks=ranks,
                           warn=lambda message: emit(Log(message=message, level="warning")))
    total = trainer.total_steps
    names = list(trainer.adapter_names().values())
    if state_dir is not None:
        _restore(trainer, state_dir, names, out, publish=ranks.main, into=last_dir(config))
    if ranks.main:
        for name in ("metrics.jsonl", "samples.jsonl"):
            ckpt.truncate_metrics(out / name, trainer.step)
        val.prune(out, trainer.step)
        if not (out / "config.json").exists():
            ckpt.write_json_atomic(out / "config.json", config.to_dict())
    log = MetricsLog(out, emit, write=ranks.main)
    emit(Started(job="train", total=total, meta={
        "out": str(out), "algo": config.algo, "model": engine.model_name,
        "problems": len(problems), "group_size": config.group_size, "reward": config.reward,
        **({"examples": len(trainer.targets)} if config.algo == "sft" else {}),
        "resumed_from": trainer.step if state_dir else None,
    }))
    if state_dir is not None:
        emit(Log(message=f"resuming {out} at step {trainer.step}/{total}"))
    status = StepStatus(emit, trainer, total)
    rollouts = getattr(trainer, "rollouts", None)
    if ranks.main and rollouts is not None and hasattr(rollouts, "on_phase"):
        rollouts.on_phase = status  # the step in progress, tokens sampled so far

    save = _Checkpointer(out, config, trainer, engine, problems, log, names, total, emit,
                         writes=ranks.main)
    if config.eval_every and ranks.main:  # a resumed run: the kept step among what is left
        save.keep(val.keep(val.evaluations(out, log.history), config.keep_step))
    # Rank 0 evaluates (the others wait for it at the next step's first reduction).
    validate = None
    if config.eval_every and ranks.main:
        validate = val.Validation(config, out, trainer, sandbox, eval_problems, emit=emit,
                                  cancel=cancel)
        validate.warn_overlap(problems)

    from coopcode.training.trainer import TrainingStopped

    started, first_step = time.time(), trainer.step
    stopped = False
    watch = CollapseWatch(config.max_new_tokens)
    def judge_evaluations(history: list[dict[str, Any]]) -> bool:
        """Keep the best step so far; whether validation says to stop (--patience)."""
        found = val.evaluations(out, history)
        kept = val.keep(found, config.keep_step)
        if kept is not None and kept != save.kept:
            save.keep(kept)
            emit(Log(message=f"keeping step {kept['step']} ({val.kept_words(kept)})"))
        if config.patience is not None and found and val.since_best(found) >= config.patience:
            save.stopped_early = True
        return save.stopped_early

    try:
        if validate is not None and trainer.step == 0 and not val.evaluated_at_start(log.history):
            figures = validate(0)  # the agents before any update: the curve's start
            if figures:
                log.log(0, {**figures, "val/kept_step": 0.0})
        if validate is not None:
            judge_evaluations(log.history)
            if save.stopped_early and trainer.step < total:
                emit(Log(message=f"the run stopped itself at step {trainer.step}: "
                                 f"{config.patience} validations without a new best "
                                 f"({flag('patience')}); a larger one lets it go on"))
        while trainer.step < total and not save.stopped_early:
            if cancel.is_set():
                raise TrainingStopped(trainer.step)
            values = trainer.train_step()
            step = trainer.step
            validated = False
            if validate is not None and val.is_due(config, step, total):
                # Before the step is logged and saved: a run killed here redoes the step.
                figures = validate(step)
                values.update(figures)
                validated = bool(figures)
            if validated and judge_evaluations([*log.history, {"step": step, **values}]):
                emit(Log(message=f"stopping at step {step}: {config.patience} validations "
                                 f"without a new best val pass@1 ({flag('patience')})"))
            if validated and save.kept is not None:  # the curve says which step is kept
                values["val/kept_step"] = float(save.kept["step"])
            log.log(step, values, extra={"task_ids": trainer.step_task_ids})
            for warning in watch.new(log.history):  # each kind once, when it first shows
                emit(Log(message=f"{warning.kind}: {warning.message}", level="warning"))
            lines = ranks.in_order(ranks.gather(sample_lines(step, trainer.last_rollouts)))
            if ranks.main and lines:  # every rank's samples of the step, in problem order
                append_line(out / "samples.jsonl", "".join(f"{line}\n" for line in lines))
            rate = (time.time() - started) / max(1, step - first_step)
            emit(Progress(done=step, total=total, label=f"step {step}/{total}",
                          eta_s=rate * (total - step)))
            # A validated step is saved with the kept step it chose (manifest and adapters agree).
            if step % config.save_every == 0 or step == total or save.stopped_early or \
                    (validated and keeps_best(config)):
                save(step)
    except OSError as e:
        if not no_space(e):
            raise
        saved = ckpt.latest_state(out)
        kept = (f"the last complete save (step {saved.name.split('-')[-1].lstrip('0') or 0}) is "
                "kept" if saved is not None else "no step was saved yet")
        raise UserError(write_failure(out, e, f"stopped at step {trainer.step}; {kept}",
                                      "free some space and rerun with --resume")) from None
    except TrainingStopped:
        stopped = True
        saved = ckpt.latest_state(out)
        if trainer.step > 0 and (saved is None or not saved.name.endswith(f"{trainer.step:06d}")):
            save(trainer.step)
        emit(Log(message=f"stopped after step {trainer.step}; rerun with --resume to continue"))
    finally:
        log.close()
        if owned:
            engine.close()  # its decode thread must be out of torch before the process exits
    last = log.history[-1] if log.history else {}
    result = TrainResult(out, trainer.step, total, stopped, last, kept=save.kept,
                         stopped_early=save.stopped_early)
    emit(Finished(job="train", summary={"out": str(out), "step": trainer.step, "total_steps": total,
                                        "stopped": stopped, "stopped_early": save.stopped_early,
                                        "kept_step": save.kept["step"] if save.kept else None,
                                        "reward_mean": log.recent("reward/mean")}))
    return result


class StepStatus:
    """The step in progress as Progress events (`step 1/20: sampling, 412 tokens`), at most
    one a second while tokens come and one at each change of phase: a user watching a run
    sees it move from the first token, not only when a step ends (minutes on a CPU).

    Called by the rollout builder on its engine's thread, hence the lock."""

    EVERY = 1.0  # s between two "sampling, N tokens" events

    def __init__(self, emit: Emit, trainer: Any, total: int) -> None:
        self.emit, self.trainer, self.total = emit, trainer, total
        self.phase, self.last = "", 0.0
        self.lock = threading.Lock()

    def __call__(self, phase: str, tokens: int) -> None:
        now = time.monotonic()
        with self.lock:
            if phase == self.phase and now - self.last < self.EVERY:
                return
            self.phase, self.last = phase, now
        step = self.trainer.step + 1
        self.emit(Progress(done=self.trainer.step, total=self.total,
                           label=f"step {step}/{self.total}: {phase}, {tokens} tokens"))


def sample_lines(step: int, rollouts: list[Any]) -> list[str]:
    """What the agents wrote at this step and what it scored (turn 1), one JSON line per
    problem: `samples.jsonl`, for reading a run: per joint action its reward, each agent's
    code, the pair's cooperation (patterns, own work, the helper alone solves it) and, with
    per-agent credit, each agent's reward and main's answer alone."""
    lines = []
    for r in rollouts:
        node = r.root
        actions = []
        for a in node.actions:
            codes = {role: node.samples[role][i].code for role, i in a.members.items()}
            action = {"reward": a.reward.to_dict() if a.reward else None, "passed": a.passed,
                      **codes}
            if a.cooperation is not None and "helper" in codes:
                action["cooperation"] = a.cooperation.to_record()
            if a.agent_rewards:  # per-agent credit, and what it was measured against
                action["credit"] = a.agent_rewards
            if a.alone is not None:
                action["alone"] = {"main": a.alone.code, "reward": a.alone.reward.to_dict(),
                                   "passed": a.alone.passed}
            actions.append(action)
        lines.append(json.dumps({"step": step, "task_id": r.problem.task_id, "actions": actions}))
    return lines


def runtime() -> dict[str, Any]:
    """What a run's arithmetic depends on beyond its config (README, "Training you can
    rerun"): torch's version and CPU threads (the update's sums are split by thread)."""
    import torch

    return {"torch": torch.__version__, "threads": torch.get_num_threads(),
            "device": "cuda" if torch.cuda.is_available() else "cpu"}


def _runtime_changed(saved: Any, config: TrainConfig) -> str:
    """A warning when a --deterministic run resumes on other threads or another torch (its
    steps from here are not the ones it would have taken), else ''."""
    if not config.deterministic or not isinstance(saved, dict):
        return ""
    now = runtime()
    diffs = [f"{key} {saved[key]} -> {now[key]}" for key in ("threads", "torch", "device")
             if key in saved and saved[key] != now[key]]
    if not diffs:
        return ""
    hint = f" (--threads {saved['threads']})" if "threads" in saved else ""
    return (f"resumed with {', '.join(diffs)}: the arithmetic rounds differently, so the "
            f"steps from here are not bit for bit those of an uninterrupted run{hint}")


def _check_base(out: Path, engine: Any, resume: bool) -> None:
    """A resumed run must continue on the base model it started on."""
    if not resume:
        return
    state = ckpt.latest_state(out)
    info = json.loads((state / "state.json").read_text()) if state else {}
    base = info.get("base") or {}
    trained_on = base.get("fingerprint")
    if trained_on and engine.model_fingerprint and trained_on != engine.model_fingerprint:
        raise UserError(f"{out} was trained on {base.get('name', 'another model')} "
                        f"({trained_on[:12]}), not {engine.model_name} "
                        f"({engine.model_fingerprint[:12]}): resume it with --model "
                        f"{base.get('name', '...')}")
