"""`train`: a whole run — set-up, resume, the step loop, checkpoints, metrics and events.

The steps, in the order a run takes them: `train` resolves the config, loads the problems
and the engine and makes the run (`context.TrainingRun`); `_train` checks a resumed run
against what it began with, builds the trainer of its `--algo` (`algorithms.TRAINERS`),
restores it, prepares the folder and announces the run; `_StepLoop` trains, validates, logs
and saves (`_Checkpointer`) until the end, a stop request or `--patience`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coopcode.core.errors import UserError
from coopcode.core.events import Emit, Finished, Log, Progress, Say, Started, ignore
from coopcode.core.files import append_line, no_space, write_failure
from coopcode.core.run_lock import RunLock
from coopcode.records.vocabulary import Role
from coopcode.training import checkpoint as ckpt
from coopcode.training import validation as val
from coopcode.training.config import TrainConfig, flag
from coopcode.training.context import Trainer, TrainingRun
from coopcode.training.data import load_training_problems
from coopcode.training.guards import CollapseWatch, collapse_warnings
from coopcode.training.metrics import MetricsLog

if TYPE_CHECKING:
    from coopcode.engines import Engine
    from coopcode.training.policy import TransformersPolicy
    from coopcode.training.rollout import ProblemRollout, Scorer
    from sandbox import Sandbox

# Fields --resume may change; everything else must match the saved run (or the resumed run
# would not be the run that was started).
# What a resumed run may change: the schedule's end, who samples (not what is sampled), and
# the validation (it measures the agents, it does not change what is trained).
RESUMABLE_OVERRIDES = ("steps", "save_every", "keep_checkpoints", "timeout", "rollout_engine",
                       "rollout_base_url", "deterministic", "eval_every", "eval_problems",
                       "eval_n", "eval_limit", "keep_eval_adapters", "keep_step", "patience")
# A saved config.json that lacks a setting ran without it: each is read as what such a run
# did, so that resuming it goes on as it began.
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
        # A config saved without a reward ran the seed's default: named, as a new run's is.
        saved = with_reward(TrainConfig.from_dict(data))
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


def open_rollout_engine(config: TrainConfig, progress: Say | None = None
                        ) -> tuple[Engine, TransformersPolicy | None]:
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


def train(
    config: TrainConfig,
    out: Path,
    *,
    resume: bool = False,
    engine: Engine | None = None,
    sandbox: Sandbox | None = None,
    scorer: Scorer | None = None,
    emit: Emit = ignore,
    cancel: threading.Event | None = None,
    explicit: set[str] | None = None,
    progress: Say | None = None,
) -> TrainResult:
    """Train (or resume) the run in `out`; `engine` and `sandbox` are loaded by the caller
    (or the engine here from `config.model`)."""
    config.validate()
    ckpt.check_writable(out)
    # One training per run folder (rank 0 writes it), refused before anything is read or loaded.
    lock = RunLock.acquire(out, "training run") if os.environ.get("RANK", "0") == "0" else None
    try:
        config = resolve_config(config, out, resume, explicit)
        # Read before the model loads: a bad problem set fails in a second, not after a minute.
        problems = load_training_problems(config.problems, config.limit)
        eval_problems = val.load_eval_problems(config) if config.eval_every else []
        saved = SavedState.latest(out) if resume else None
        from coopcode.training.distributed import init_ranks

        ranks = init_ranks()  # torchrun: this process's share; alone: rank 0 of 1
        if not ranks.main:
            emit, progress = ignore, None  # rank 0 speaks for the run
        with ExitStack() as owned:
            policy = None
            if engine is None:
                engine, policy = open_rollout_engine(config, progress)
                # Closed before the process exits: its decode thread must be out of torch.
                owned.callback(engine.close)
            run = TrainingRun(config=config, out=out, problems=problems, engine=engine,
                              policy=policy, sandbox=sandbox, scorer=scorer,
                              eval_problems=eval_problems, ranks=ranks, emit=emit,
                              cancel=cancel or threading.Event())
            result, finished = _train(run, saved)
        emit(finished)
        return result
    finally:
        if lock is not None:
            lock.release()


@dataclass(frozen=True)
class SavedState:
    """The last complete save of a run being resumed: its folder and its state.json."""

    folder: Path
    info: dict[str, Any]

    @classmethod
    def latest(cls, out: Path) -> SavedState | None:
        """The run's last complete save, or None before its first."""
        folder = ckpt.latest_state(out)
        if folder is None:
            return None
        return cls(folder, json.loads((folder / "state.json").read_text()))


def _train(run: TrainingRun, saved: SavedState | None) -> tuple[TrainResult, Finished]:
    """The run from its checks to its end: the result, and the Finished event to emit once
    the engine is closed."""
    from coopcode.training.algorithms import make_trainer

    _check_resumed(run, saved)
    trainer = make_trainer(run)
    if saved is not None:
        _restore(run, trainer, saved.folder)
    if run.ranks.main:
        _prepare_folder(run, trainer.step)
    log = MetricsLog(run.out, run.emit, write=run.ranks.main)
    try:
        _announce(run, trainer, resumed=saved is not None)
        steps = _StepLoop(run, trainer, log)
        stopped = steps.train()
    finally:
        log.close()
    return steps.result(stopped)


def _check_resumed(run: TrainingRun, saved: SavedState | None) -> None:
    """A resumed run goes on as it began: on the same base model and problems (else a
    UserError), with a warning where its arithmetic will round differently."""
    if saved is None:
        return
    _check_base(run.out, run.engine, saved.info)
    changed = _runtime_changed(saved.info.get("runtime"), run.config)
    if changed and run.ranks.main:
        run.emit(Log(level="warning", message=changed))
    if saved.info and saved.info.get("task_ids") != [p.task_id for p in run.problems]:
        raise UserError(f"{run.out}: the problems changed since the run started "
                        f"({run.config.problems}); resume with the same data")


def _restore(run: TrainingRun, trainer: Trainer, folder: Path) -> None:
    """The trainer as it was saved in `folder` (weights, optimizer, data order, step); rank 0
    publishes the saved adapters as the run's last step's."""
    trainer_state, _ = ckpt.load_state(folder)
    names = list(trainer.adapter_names().values())
    for name in names:
        trainer.policy.load_weights(name, folder / name)
    trainer.load_state_dict(trainer_state)
    if run.ranks.main:
        ckpt.publish_adapters(run.out, folder, names, into=last_dir(run.config))


def _prepare_folder(run: TrainingRun, step: int) -> None:
    """The run folder as of `step`: the metrics, samples and validations of steps after it
    removed (a resumed run takes them again), and the config written at the first start."""
    for name in ("metrics.jsonl", "samples.jsonl"):
        ckpt.truncate_metrics(run.out / name, step)
    val.prune(run.out, step)
    if not (run.out / "config.json").exists():
        ckpt.write_json_atomic(run.out / "config.json", run.config.to_dict())


def _announce(run: TrainingRun, trainer: Trainer, *, resumed: bool) -> None:
    """The run's Started event (and, resumed, where it goes on), and rank 0's live status of
    the step in progress."""
    config, total = run.config, trainer.total_steps
    run.emit(Started(job="train", total=total, meta={
        "out": str(run.out), "algo": config.algo, "model": run.engine.model_name,
        "problems": len(run.problems), "group_size": config.group_size, "reward": config.reward,
        **trainer.run_meta(),
        "resumed_from": trainer.step if resumed else None,
    }))
    if resumed:
        run.emit(Log(message=f"resuming {run.out} at step {trainer.step}/{total}"))
    if run.ranks.main:
        trainer.watch_phases(StepStatus(run.emit, trainer, total))


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

    run: TrainingRun
    trainer: Trainer
    log: MetricsLog
    kept: dict[str, Any] | None = None  # the validated step the top-level adapters are
    stopped_early: bool = False

    @property
    def names(self) -> list[str]:
        return list(self.trainer.adapter_names().values())

    @property
    def writes(self) -> bool:
        return self.run.ranks.main  # every rank holds the same adapters; one writes them

    def keep(self, kept: dict[str, Any] | None) -> None:
        """Publish the kept step's adapters (saved by its validation) as the run's."""
        if kept is None:
            return
        self.kept = kept
        if self.writes and keeps_best(self.run.config):
            saved = val.eval_dir(self.run.out, kept["step"]) / "adapters"
            ckpt.publish_adapters(self.run.out, saved, self.names)

    def __call__(self, step: int) -> None:
        if not self.writes:
            return
        out, config, engine, log = self.run.out, self.run.config, self.run.engine, self.log
        names = self.names

        def write_adapters(folder: Path) -> None:
            for name in names:
                self.trainer.policy.save(name, folder / name)

        info = {"task_ids": [p.task_id for p in self.run.problems], "algorithm": config.algo,
                "base": {"name": engine.model_name, "fingerprint": engine.model_fingerprint},
                "runtime": runtime()}
        final = ckpt.save_state(out, step, self.trainer.state_dict(), write_adapters, info,
                                keep=config.keep_checkpoints)
        ckpt.publish_adapters(out, final, names, into=last_dir(config))
        last = log.history[-1] if log.history else {}
        metrics = {"reward_mean": log.recent("reward/mean"), "pass_rate": log.recent("pass_rate"),
                   "window": min(10, len(log.history)),
                   "last": {k: v for k, v in last.items() if k != "samples"},
                   "warnings": [w.to_dict() for w in collapse_warnings(log.history,
                                                                         config.max_new_tokens)]}
        ckpt.write_json_atomic(out / "manifest.json", ckpt.manifest(
            base_name=engine.model_name, fingerprint=engine.model_fingerprint,
            algorithm=config.algo, config=config.to_dict(), step=step,
            total_steps=self.trainer.total_steps, metrics=metrics, adapters=names,
            run=out.name) | {
                "runtime": runtime(), "kept": self.kept, "stopped_early": self.stopped_early,
                "last": last_dir(config) or None})
        self.run.emit(Log(message=f"checkpoint step {step}: {out}"))


class _StepLoop:
    """The steps of a run: train, validate when due, log, save; until the last step, a stop
    request, or validation without a new best for --patience evaluations."""

    def __init__(self, run: TrainingRun, trainer: Trainer, log: MetricsLog) -> None:
        self.run, self.trainer, self.log = run, trainer, log
        self.config, self.total = run.config, trainer.total_steps
        self.save = _Checkpointer(run, trainer, log)
        # Rank 0 evaluates (the others wait for it at the next step's first reduction).
        self.validate: val.Validation | None = None
        if run.config.eval_every and run.ranks.main:
            # A resumed run: the kept step among the evaluations it has left.
            self.save.keep(val.keep(val.evaluations(run.out, log.history), run.config.keep_step))
            self.validate = val.Validation(run, trainer)
            self.validate.warn_overlap(run.problems)
        self.watch = CollapseWatch(run.config.max_new_tokens)
        self.started, self.first_step = time.time(), trainer.step

    def train(self) -> bool:
        """Train to the end; whether a stop request ended the run first."""
        from coopcode.training.trainer import TrainingStopped

        trainer = self.trainer
        try:
            if self.validate is not None:
                self._validate_before_training(self.validate)
            while trainer.step < self.total and not self.save.stopped_early:
                if self.run.cancel.is_set():
                    raise TrainingStopped(trainer.step)
                self._step()
        except OSError as e:
            if not no_space(e):
                raise
            raise UserError(self._no_space(e)) from None
        except TrainingStopped:
            self._save_stopped()
            return True
        return False

    def _validate_before_training(self, validate: val.Validation) -> None:
        """The agents before any update (the curve's start), and whether the validations a
        resumed run has already say to stop."""
        trainer, log = self.trainer, self.log
        if trainer.step == 0 and not val.evaluated_at_start(log.history):
            figures = validate(0)
            if figures:
                log.log(0, {**figures, "val/kept_step": 0.0})
        self._judge(log.history)
        if self.save.stopped_early and trainer.step < self.total:
            self.run.emit(Log(message=f"the run stopped itself at step {trainer.step}: "
                                      f"{self.config.patience} validations without a new best "
                                      f"({flag('patience')}); a larger one lets it go on"))

    def _step(self) -> None:
        """One step: train, validate when due, log, record the samples, save when due."""
        config, trainer, log, emit = self.config, self.trainer, self.log, self.run.emit
        values = trainer.train_step()
        step = trainer.step
        validated = False
        if self.validate is not None and val.is_due(config, step, self.total):
            # Before the step is logged and saved: a run killed here redoes the step.
            figures = self.validate(step)
            values.update(figures)
            validated = bool(figures)
        if validated and self._judge([*log.history, {"step": step, **values}]):
            emit(Log(message=f"stopping at step {step}: {config.patience} validations "
                             f"without a new best val pass@1 ({flag('patience')})"))
        if validated and self.save.kept is not None:  # the curve says which step is kept
            values["val/kept_step"] = float(self.save.kept["step"])
        log.log(step, values, extra={"task_ids": trainer.step_task_ids})
        for warning in self.watch.new(log.history):  # each kind once, when it first shows
            emit(Log(message=f"{warning.kind}: {warning.message}", level="warning"))
        self._record_samples(step, trainer.last_rollouts)
        rate = (time.time() - self.started) / max(1, step - self.first_step)
        emit(Progress(done=step, total=self.total, label=f"step {step}/{self.total}",
                      eta_s=rate * (self.total - step)))
        # A validated step is saved with the kept step it chose (manifest and adapters agree).
        if step % config.save_every == 0 or step == self.total or self.save.stopped_early or \
                (validated and keeps_best(config)):
            self.save(step)

    def _judge(self, history: list[dict[str, Any]]) -> bool:
        """Keep the best step so far; whether validation says to stop (--patience)."""
        config, save = self.config, self.save
        found = val.evaluations(self.run.out, history)
        kept = val.keep(found, config.keep_step)
        if kept is not None and kept != save.kept:
            save.keep(kept)
            self.run.emit(Log(message=f"keeping step {kept['step']} ({val.kept_words(kept)})"))
        if config.patience is not None and found and val.since_best(found) >= config.patience:
            save.stopped_early = True
        return save.stopped_early

    def _record_samples(self, step: int, rollouts: list[ProblemRollout]) -> None:
        """Every rank's samples of the step, in problem order, into samples.jsonl (rank 0)."""
        ranks = self.run.ranks
        lines = ranks.in_order(ranks.gather(sample_lines(step, rollouts)))
        if ranks.main and lines:
            append_line(self.run.out / "samples.jsonl", "".join(f"{line}\n" for line in lines))

    def _no_space(self, error: OSError) -> str:
        """The line a full disk ends the run with: where it stopped and what was saved."""
        saved = ckpt.latest_state(self.run.out)
        kept = (f"the last complete save (step {saved.name.split('-')[-1].lstrip('0') or 0}) is "
                "kept" if saved is not None else "no step was saved yet")
        return write_failure(self.run.out, error, f"stopped at step {self.trainer.step}; {kept}",
                             "free some space and rerun with --resume")

    def _save_stopped(self) -> None:
        """A stop request: save the last step unless it is saved already."""
        step = self.trainer.step
        saved = ckpt.latest_state(self.run.out)
        if step > 0 and (saved is None or not saved.name.endswith(f"{step:06d}")):
            self.save(step)
        self.run.emit(Log(message=f"stopped after step {step}; rerun with --resume to continue"))

    def result(self, stopped: bool) -> tuple[TrainResult, Finished]:
        """What the run ended with, and the Finished event that says so."""
        trainer, save, log = self.trainer, self.save, self.log
        last = log.history[-1] if log.history else {}
        result = TrainResult(self.run.out, trainer.step, self.total, stopped, last,
                             kept=save.kept, stopped_early=save.stopped_early)
        finished = Finished(job="train", summary={
            "out": str(self.run.out), "step": trainer.step, "total_steps": self.total,
            "stopped": stopped, "stopped_early": save.stopped_early,
            "kept_step": save.kept["step"] if save.kept else None,
            "reward_mean": log.recent("reward/mean")})
        return result, finished


class StepStatus:
    """The step in progress as Progress events (`step 1/20: sampling, 412 tokens`), at most
    one a second while tokens come and one at each change of phase: a user watching a run
    sees it move from the first token, not only when a step ends (minutes on a CPU).

    Called by the rollout builder on its engine's thread, hence the lock."""

    EVERY = 1.0  # s between two "sampling, N tokens" events

    def __init__(self, emit: Emit, trainer: Trainer, total: int) -> None:
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


def sample_lines(step: int, rollouts: list[ProblemRollout]) -> list[str]:
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
            action: dict[str, Any] = {"reward": a.reward.to_dict() if a.reward else None,
                                      "passed": a.passed, **codes}
            if a.cooperation is not None and Role.HELPER in codes:
                action["cooperation"] = a.cooperation.to_record()
            if a.agent_rewards:  # per-agent credit, and what it was measured against
                action["credit"] = a.agent_rewards
            if a.alone is not None:
                action["alone"] = {Role.MAIN: a.alone.code, "reward": a.alone.reward.to_dict(),
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


def _runtime_changed(saved: object, config: TrainConfig) -> str:
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


def _check_base(out: Path, engine: Engine, info: dict[str, Any]) -> None:
    """A resumed run must continue on the base model it started on (`info`: its last save's
    state.json)."""
    base = info.get("base") or {}
    trained_on = base.get("fingerprint")
    if trained_on and engine.model_fingerprint and trained_on != engine.model_fingerprint:
        raise UserError(f"{out} was trained on {base.get('name', 'another model')} "
                        f"({trained_on[:12]}), not {engine.model_name} "
                        f"({engine.model_fingerprint[:12]}): resume it with --model "
                        f"{base.get('name', '...')}")
