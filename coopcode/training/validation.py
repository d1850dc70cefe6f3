"""Validation while training: a bench of the agents as they are, on problems they do not train on.

With `eval_every` N, the run benches its agents at step 0 (before any update), after every
N-th step and after the last one, through `coopcode.evaluation.bench.run_bench` on the
training's own engine (the adapters in it, no copy): the bench's prompts, scheduler and
sandbox, `eval_n` samples per problem at the bench's temperature and top-p, the training's
token budget and turns, and the run's seed as the bench seed, so every evaluation draws the same
random numbers and the curve compares like with like. Each evaluation is a bench folder,
`RUN/validation/step-NNNNNN/` (samples.jsonl, summary.json, report.md), so the figures can be
recomputed from what a run keeps; they go into that step's metrics.jsonl record as `val/*`.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coopcode.core.errors import UserError
from coopcode.core.events import Log
from coopcode.evaluation.bench_config import BenchConfig
from coopcode.problems import Problem, load_problems
from coopcode.records.vocabulary import Role
from coopcode.schemes import adapter_of
from coopcode.training.config import TrainConfig, flag
from coopcode.training.context import Trainer, TrainingRun

if TYPE_CHECKING:
    from coopcode.evaluation.stats import Choice

VALIDATION_DIR = "validation"
_STEP = re.compile(r"^step-(\d+)$")
# The bench summary row's keys behind each val/ metric; a key the row lacks (or holds as
# None, as GRPO's for the helper) gives no metric.
METRIC_OF_KEY = {"pass@1": "val/pass@1", "acc@1": "val/acc@1",
                 "own_work_rate": "val/own_work", "helper_solves_rate": "val/helper_solves",
                 "both_needed_rate": "val/both_needed"}


def eval_dir(out: Path, step: int) -> Path:
    """The bench folder of the evaluation after `step` (0: before any update)."""
    return out / VALIDATION_DIR / f"step-{step:06d}"


def is_due(config: TrainConfig, step: int, total: int) -> bool:
    """Whether the run evaluates after `step` (of `total`)."""
    every = config.eval_every
    return every is not None and every > 0 and (step % every == 0 or step == total)


def evaluated_at_start(history: Sequence[Mapping[str, Any]]) -> bool:
    """Whether metrics.jsonl already holds the step-0 evaluation (a resumed run skips it)."""
    return any(r.get("step") == 0 and "val/pass@1" in r for r in history)


def prune(out: Path, step: int) -> None:
    """Remove the evaluations after `step`: a killed run's, whose steps a resume redoes (as
    `checkpoint.truncate_metrics` drops their metrics)."""
    root = out / VALIDATION_DIR
    if not root.is_dir():
        return
    for folder in root.iterdir():
        m = _STEP.match(folder.name)
        if m and int(m.group(1)) > step:
            shutil.rmtree(folder, ignore_errors=True)


def load_eval_problems(config: TrainConfig) -> list[Problem]:
    """The validation problems (the first `eval_limit`), or a UserError naming the flag."""
    problems = load_problems(config.validation_problems)
    if config.eval_limit is not None:
        problems = problems[:config.eval_limit]
    if not problems:
        raise UserError(f"{flag('eval_problems')} {config.validation_problems}: no problems to "
                        "evaluate on")
    return problems


def bench_config(config: TrainConfig, label: str) -> BenchConfig:
    """The bench one evaluation runs: the run's scheme, budget and seed; the bench's
    temperature and top-p (its defaults, 0.8 and 0.95, whatever the run samples with: runs
    of different recipes are evaluated alike, and the figures compare with `coopcode bench`'s)."""
    return BenchConfig(ks=(1,), n=config.eval_n,
                       problems=config.validation_problems, schemes=(config.collab_scheme,),
                       max_new_tokens=config.max_new_tokens, seed=config.seed,
                       turns=config.turns, timeout=config.timeout, label=label,
                       reward=config.reward)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def val_metrics(row: Mapping[str, Any]) -> dict[str, float]:
    """The `val/*` metrics of a bench summary row (those the row has), each with its
    standard error over problems where the row has one (`val/pass@1_se`, ...)."""
    out = {}
    for key, metric in METRIC_OF_KEY.items():
        value, se = row.get(key), row.get(f"{key}_se")
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[metric] = float(value)
            if isinstance(se, int | float) and not isinstance(se, bool):
                out[f"{metric}_se"] = float(se)
    return out


def per_problem(row: Mapping[str, Any], metric: str) -> dict[str, float]:
    """Each problem's estimate behind a `val/*` metric (pass@1: its pass@1; own work: the
    share of its samples with own work), from a bench summary row; problems where it was not
    measured are left out."""
    name = next(k for k, m in METRIC_OF_KEY.items() if m == metric)
    key = name.removesuffix("_rate")
    found = row.get("cooperation_per_problem" if name.endswith("_rate") else "per_problem")
    if not isinstance(found, Mapping):
        return {}
    return {t: float(v[key]) for t, v in found.items()
            if isinstance(v, Mapping) and _number(v.get(key))}


def evaluation_row(folder: Path) -> dict[str, Any] | None:
    """The bench summary row of one evaluation folder: its summary.json's, or recomputed from
    its samples where that summary predates the standard errors of the cooperation rates (or
    is missing). None when the folder holds no evaluation."""
    summary = folder / "summary.json"
    try:
        rows = json.loads(summary.read_text()).get("rows") or []
    except (OSError, ValueError, AttributeError):
        rows = []
    if rows and isinstance(rows[0], dict) and ("own_work_rate_se" in rows[0]
                                               or rows[0].get("own_work_rate") is None):
        return dict(rows[0])
    from coopcode.evaluation.compare import summarize_folder

    try:
        recomputed = summarize_folder(folder).rows
    except (UserError, OSError, ValueError, IndexError):
        return dict(rows[0]) if rows else None
    return dict(recomputed[0]) if recomputed else None


def evaluations(out: Path, history: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A run's evaluations, step 0 first: each `{step, figures, row}`, the figures (`val/*`
    with `val/*_se`) from the evaluation's folder (its summary, or its samples as judged
    now, for runs made before the standard errors were kept), else as metrics.jsonl holds
    them: a figure and its standard error always come from the same samples."""
    found = []
    for record in history:
        if "val/pass@1" not in record:
            continue
        step = int(record["step"])
        figures = {k: float(v) for k, v in record.items() if k.startswith("val/") and _number(v)}
        row = evaluation_row(eval_dir(out, step))
        if row is not None:
            figures = {**figures, **val_metrics(row)}
        found.append({"step": step, "figures": figures, "row": row})
    return found


def choose_step(found: Sequence[Mapping[str, Any]], metric: str = "val/pass@1"
                ) -> Choice | None:
    """Which evaluation the figures prefer by `metric` (`stats.choose`: the best step, and
    whether it leads every other by more than two standard errors, paired over problems);
    None when fewer than two evaluations hold the per-problem figures."""
    from coopcode.evaluation.stats import choose

    candidates = {f"step {e['step']}": per_problem(e["row"], metric)
                  for e in found if e.get("row")}
    candidates = {k: v for k, v in candidates.items() if v}
    return choose(candidates) if len(candidates) >= 2 else None


def keep(found: Sequence[Mapping[str, Any]], rule: str = "best") -> dict[str, Any] | None:
    """Which evaluated step a run's adapters are, by `rule` (`keep_step`): `best` takes the
    step with the highest val pass@1 where it leads every other by more than two standard
    errors (paired over the problems, `stats.choose`), else the earliest step it does not
    lead that far (closer, validation cannot tell them apart, and the earlier has drifted less
    from where the run began); `last` the last evaluation. `{step, rule, best, preferred,
    "val/pass@1", "val/pass@1_se"}`, or None before any evaluation."""
    if not found:
        return None
    by_step = {int(e["step"]): e for e in found}
    step = max(by_step)
    best, preferred = step, False
    if rule == "best":
        choice = choose_step(found)
        if choice is not None:
            best = int(choice.best.split()[-1])
            preferred = choice.preferred is not None
            step = best if preferred else min([best, *(int(t.split()[-1]) for t in choice.tied)])
    figures = by_step[step].get("figures", {})
    return {"step": step, "rule": rule, "best": best, "preferred": preferred,
            "val/pass@1": figures.get("val/pass@1"), "val/pass@1_se": figures.get("val/pass@1_se")}


def kept_words(kept: Mapping[str, Any]) -> str:
    """Why a step is kept, in words: `val pass@1 20.0% ±4.1, the best by two standard errors`."""
    figure = kept.get("val/pass@1")
    se = kept.get("val/pass@1_se")
    shown = "" if figure is None else f"val pass@1 {100 * figure:.1f}%" + (
        f" ±{100 * se:.1f}" if se is not None else "") + ", "
    if kept["rule"] == "last":
        return shown + "the last evaluation"
    if kept["preferred"] or kept["step"] == kept["best"]:
        return shown + ("the best by two standard errors" if kept["preferred"] else "the best")
    return shown + (f"the earliest within two standard errors of the best, step {kept['best']}")


def since_best(found: Sequence[Mapping[str, Any]]) -> int:
    """How many evaluations in a row, up to the last, brought no new best val pass@1 (one
    above every earlier evaluation's): what `patience` counts."""
    best, count = -1.0, 0
    for e in sorted(found, key=lambda e: int(e["step"])):
        value = float(e.get("figures", {}).get("val/pass@1", 0.0))
        if value > best:
            best, count = value, 0
        else:
            count += 1
    return count


def choose_candidates(last: Mapping[str, Mapping[str, Mapping[str, float]]],
                      keys: Sequence[str]) -> dict[str, Any]:
    """Candidate runs compared at their last evaluation, per figure (`stats.choose`): `last`
    maps a candidate to its per-problem estimates by figure; figures fewer than two
    candidates hold are left out."""
    from coopcode.evaluation.stats import choose

    out = {}
    for key in keys:
        candidates = {name: dict(figures.get(key) or {}) for name, figures in last.items()}
        candidates = {k: v for k, v in candidates.items() if v}
        if len(candidates) >= 2:
            out[key] = choose(candidates).to_dict()
    return out


def choice_line(what: str, choice: Mapping[str, Any]) -> str:
    """What the two-standard-error rule says of the candidates for one figure, as a line."""
    leads = ", ".join(f"{name} by {100 * lead['difference']:.1f}±{100 * lead['se']:.1f} "
                      f"({lead['in_se']:.1f} SE)" for name, lead in choice["leads"].items()
                      if lead["se"] is not None)
    verdict = (f"**{choice['preferred']} is preferred**" if choice["preferred"] else
               f"no candidate is preferred: {choice['best']} leads, but not "
               f"{', '.join(choice['tied'])} by more than two standard errors")
    return (f"- {what} at the last evaluation: {verdict} (its lead, paired over the problems: "
            f"{leads}).")


class Validation:
    """Benches a trainer's agents on the validation problems (rank 0 of a run)."""

    def __init__(self, run: TrainingRun, trainer: Trainer) -> None:
        if run.sandbox is None:
            raise UserError(f"{flag('eval_every')} needs a sandbox to run the validation "
                            "problems' tests")
        self.config, self.out, self.trainer = run.config, run.out, trainer
        self.sandbox = run.sandbox
        self.problems, self.emit, self.cancel = run.eval_problems, run.emit, run.cancel

    def warn_overlap(self, training: list[Problem]) -> None:
        """Say so when the validation problems are also trained on (humaneval:val is part of
        humaneval:train, the default training set)."""
        trained = {p.task_id for p in training}
        shared = sum(p.task_id in trained for p in self.problems)
        if shared:
            self.emit(Log(level="warning", message=(
                f"validation: {shared} of the {len(self.problems)} validation problems are "
                f"also trained on: val/* does not measure held-out problems (train on "
                f"{flag('problems')} humaneval:fit to hold humaneval:val out)")))

    def __call__(self, step: int) -> dict[str, float]:
        """Bench the agents as they are after `step`; the `val/*` metrics, or {} when a stop
        request cut the evaluation short (then nothing of it is kept)."""
        from coopcode.evaluation.bench import run_bench

        config, trainer = self.config, self.trainer
        folder = eval_dir(self.out, step)
        shutil.rmtree(folder, ignore_errors=True)  # a killed attempt at this step: redo it whole
        trainer.sync_sampler()  # a separate sampler (vLLM, servers) gets the step's weights
        # each trained adapter under its name (GRPO's single agent trains main's)
        adapters = {adapter_of(role): (adapter_of(role), f"{self.out / adapter_of(role)}@step-{step}")
                    for role in config.roles}
        bench = bench_config(config, label=f"{self.out.name}@step-{step}")
        self.emit(Log(message=f"validation at step {step}: {len(self.problems)} problems x "
                              f"{bench.n} samples, {bench.schemes[0]} scheme"))
        started = time.time()
        python_rng = random.getstate()
        import torch

        # The bench seeds each sample itself; forking the RNGs keeps any draw it makes out of
        # the training's, so a run trains the same with validation as without.
        with torch.random.fork_rng():
            summary = run_bench(bench, self.problems, trainer.engine, self.sandbox, folder,
                                helper_adapter=adapters.get(Role.HELPER),
                                main_adapter=adapters.get(Role.MAIN),
                                cancel=self.cancel)
        random.setstate(python_rng)
        seconds = time.time() - started
        complete = bool(summary.rows) and summary.meta.get("complete", False)
        if self.cancel.is_set() or not complete:
            shutil.rmtree(folder, ignore_errors=True)
            self.emit(Log(message=f"validation at step {step} stopped before the end: not "
                                  "recorded"))
            return {}
        figures = val_metrics(summary.rows[0])
        if config.keep_eval_adapters or config.keep_step == "best":
            # what was measured: the step the run keeps is published from here
            for name in adapters:
                trainer.policy.save(name, folder / "adapters" / name)
        shown = ", ".join(f"{k.split('/', 1)[1]} {v:.3f}" for k, v in figures.items())
        where = folder.relative_to(self.out)
        self.emit(Log(message=f"validation at step {step}: {shown} ({seconds:.0f} s, {where}/)"))
        return {**figures, "val/seconds": seconds}
