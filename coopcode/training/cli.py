"""`coopcode train` and `coopcode checkpoints list|show`.

Importing this module stays cheap (the CLI imports it for --help): torch, transformers and
the trainer load inside the commands.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from coopcode.core.errors import UserError
from coopcode.core.events import Emit, Event, Say
from coopcode.display.console import make_console
from coopcode.records.vocabulary import Role
from coopcode.settings.common import EventsOutput, JsonOutput, MainSees, SandboxChoice
from coopcode.settings.options import check_options, config_options, given_on_command_line, option
from coopcode.training.config import TrainConfig

if TYPE_CHECKING:
    from coopcode.evaluation.stats import Choice
    from coopcode.training.run import TrainResult

out = make_console()  # plain on a pipe: no wrapping, no padding (coopcode.display.console)
err = make_console(stderr=True)

checkpoints_app = typer.Typer(help="Trained adapter runs in checkpoints/: list them, show one.",
                              no_args_is_help=True)


@dataclass(frozen=True)
class TrainRun:
    """Where a training runs and on how many threads: not part of its recipe (TrainConfig)."""

    out: str | None = option(None, "Run folder [default: checkpoints/<run>].")
    run: str | None = option(None, "Run name: the folder checkpoints/<run> [default: <algo>-<time>].")
    resume: bool = option(False, "Continue the run in --out/--run from its last checkpoint (same "
                          "total steps, no repeated data).")
    threads: int | None = option(None, "CPU threads for torch [default: torch's choice]; 1 is "
                                 "often faster on a busy machine.", at_least=1)

    def validate(self) -> None:
        check_options(self)


@dataclass(frozen=True)
class RunsFolder:
    """The folder `coopcode checkpoints` reads."""

    root: str = option("checkpoints", "Folder holding the runs.", flags=("--dir",))

    def validate(self) -> None:
        pass


@dataclass(frozen=True)
class CurvesPlot:
    plot: bool = option(False, "Also write the training curves (reward per level, pass rate, "
                        "cooperation patterns, loss) to RUN/curves.png.")

    def validate(self) -> None:
        pass


@config_options
def train_command(
    ctx: typer.Context,
    config: TrainConfig,
    sees: MainSees,
    where: TrainRun,
    sandbox: SandboxChoice,
    events: EventsOutput,
) -> None:
    """Train the helper and main agents (MAGRPO) or one agent (GRPO) as LoRA adapters.

    Writes checkpoints/<run>/helper/ and main/ (PEFT adapters that solve, bench and the TUI load), manifest.json and metrics.jsonl. Ctrl-C stops after saving; --resume continues.
    """
    from coopcode.core.events import JsonlWriter
    from coopcode.core.inputs import check_run_name
    from coopcode.engines.agents import resolve_adapter_path

    out_dir = None if where.out is None else Path(where.out)
    run, resume, threads = where.run, where.resume, where.threads
    config = replace(config, helper_init=resolve_adapter_path(config.helper_init, Role.HELPER),
                     main_init=resolve_adapter_path(config.main_init, Role.MAIN),
                     scheme=sees.scheme(config.scheme))
    explicit = given_on_command_line(ctx, TrainConfig)
    if resume and out_dir is None and run is None:
        raise UserError("--resume needs the run: give --out checkpoints/<run> or --run <run>")
    if run is not None:
        check_run_name(run)
    folder = out_dir or Path("checkpoints") / (run or f"{config.algo}-{time.strftime('%Y%m%d-%H%M%S')}")

    emit: Emit = JsonlWriter(sys.stdout) if events.events else TrainPrinter(err)
    cancel = threading.Event()

    def on_sigint(_sig: int, _frame: FrameType | None) -> None:
        if cancel.is_set():
            raise KeyboardInterrupt
        cancel.set()
        err.print("[yellow]stopping: saving at the end of this step (Ctrl-C again to abort)[/]")

    signal.signal(signal.SIGINT, on_sigint)
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    # With --events, loading's progress goes out as log events too: a program following the
    # run (the TUI) can say what it is doing before the first step starts.
    to_events = None if events.events is None else _log_events(emit)
    result = _run(config, folder, resume, explicit, sandbox.sandbox, emit, cancel, to_events)
    if events.events is None:
        err.print(f"[green]{'stopped' if result.stopped else 'done'}[/] at step "
                  f"{result.step}/{result.total_steps}: {result.out}")
    raise typer.Exit(130 if result.stopped else 0)


def _log_events(emit: Emit) -> Say:
    from coopcode.core.events import Log

    def progress(message: str) -> None:
        emit(Log(message=message))  # "warning:" lines keep their word (the guards own the level)

    return progress


def _run(config: TrainConfig, folder: Path, resume: bool, explicit: set[str], backend: str,
         emit: Emit, cancel: threading.Event, events_progress: Say | None = None
         ) -> TrainResult:
    from coopcode.core.sandboxes import open_sandbox_for_cli
    from coopcode.training.run import train

    def warn(message: str) -> None:
        err.print(f"[yellow]warning:[/] {message}", highlight=False)

    def progress(message: str) -> None:
        if events_progress is not None:
            events_progress(message)
        else:
            err.print(f"[dim]{message}[/]", highlight=False)

    # Cheap checks before the sandbox and the model load: bad input fails in a second.
    from coopcode.core.adapters import check_adapter
    from coopcode.schemes import check_problems_fit
    from coopcode.training import checkpoint as ckpt
    from coopcode.training.data import load_training_problems
    from coopcode.training.run import resolve_config

    config = resolve_config(config, folder, resume, explicit)
    check_problems_fit([config.collab_scheme],
                       load_training_problems(config.problems, config.limit))
    inits = [init for init in (config.helper_init, config.main_init) if init]
    problems = []
    for init in inits:  # the folders themselves, before the base resolves; each bad one named
        try:
            check_adapter(init, "", "")
        except UserError as e:
            problems.append(str(e))
    if problems:
        raise UserError("; ".join(problems))
    if config.examples:  # a warm start's examples file, checked before the model loads
        from coopcode.schemes import get_scheme
        from coopcode.training.examples import load_examples

        config.validate()
        load_examples(config.examples, load_training_problems(config.problems, config.limit),
                      get_scheme(config.collab_scheme))
    ckpt.check_writable(folder)  # creates the run folder: only once the input is known good
    if inits:
        from coopcode.models import resolve_model

        base = resolve_model(config.model, progress)  # a hash, not a model load
        for init in inits:
            check_adapter(init, base.fingerprint, base.name)
    with open_sandbox_for_cli(backend, warn) as sb:
        return train(config, folder, resume=resume, sandbox=sb, emit=emit, cancel=cancel,
                     explicit=explicit, progress=progress)


class TrainPrinter:
    """Human output: one line per step on stderr, checkpoints and the end."""

    KEYS = (("reward/mean", "reward {:.3f}"), ("reward/std", "±{:.3f}"), ("pass_rate", "pass {:.0%}"),
            ("coop/own_work", "own work {:.0%}"), ("coop/helper_solves", "helper solves {:.0%}"),
            ("coop/both_needed", "both needed {:.0%}"),
            ("alone/pass_rate", "main alone {:.0%}"),
            ("val/pass@1", "val pass@1 {:.1%}"), ("val/own_work", "val own work {:.0%}"),
            ("loss", "loss {:+.3f}"), ("grad_norm", "|g| {:.2f}"), ("kl", "kl {:.4f}"),
            ("tokens_per_s", "{:.0f} tok/s"), ("step_seconds", "{:.1f} s"), ("step_peak_rss_mb", "peak {:.0f} MB"),
            ("rss_mb", "after {:.0f} MB"))

    def __init__(self, console: Console) -> None:
        self.console = console
        self.total = 0

    def __call__(self, event: Event) -> None:
        from coopcode.core import events as ev

        if isinstance(event, ev.Started):
            self.total = event.total
            m = event.meta
            if m.get("algo") == "sft":
                self.console.print(f"[bold]training[/] sft on {m.get('model')}: "
                                   f"{m.get('examples')} examples, {event.total} steps -> "
                                   f"{m.get('out')}", highlight=False)
                return
            self.console.print(f"[bold]training[/] {m.get('algo')} on {m.get('model')}: "
                               f"{m.get('problems')} problems, G={m.get('group_size')}, "
                               f"reward {m.get('reward') or 'seed'}, "
                               f"{event.total} steps -> {m.get('out')}", highlight=False)
        elif isinstance(event, ev.Metric):
            parts = [_figure(event.values, k, fmt) for k, fmt in self.KEYS if k in event.values]
            where = "before training" if event.step == 0 else f"step {event.step}/{self.total}"
            self.console.print(f"{where}  " + "  ".join(parts), highlight=False)
        elif isinstance(event, ev.Log):
            if event.level == "warning":
                self.console.print(f"[yellow]warning:[/] {event.message}", highlight=False,
                                   soft_wrap=True)
            else:
                self.console.print(f"[dim]{event.message}[/]", highlight=False)


def _figure(values: dict[str, float], key: str, fmt: str) -> str:
    """One figure of a step's line; a validation figure with its standard error."""
    text = fmt.format(values[key])
    se = values.get(f"{key}_se")
    if se is not None and key.startswith("val/"):
        text += f" ±{se:.1%}"
    return text


@checkpoints_app.command("list")
@config_options
def checkpoints_list(folder: RunsFolder, as_json: JsonOutput) -> None:
    """The trained runs: algorithm, base model, step, recent reward, adapters, path.

    Runs are looked for in ./checkpoints, then each folder of $COOPCODE_CHECKPOINTS
    (`:`-separated), then $COOPCODE_CACHE/checkpoints (default ~/.cache/coopcode/checkpoints);
    a name in two of them is the first one's. `--dir` reads one folder. With no run anywhere,
    one error naming the places looked in, exit 2 (`--json` too). On a terminal a table;
    piped, a header and one tab-separated line per run, nothing cut
    (`coopcode checkpoints list | grep my-run`); the reward is the recent mean with the name
    of the reward it is measured in. A run that kept a validated step shows
    `kept 45; last 90/90` (helper/ and main/ are step 45's, last/ the last step's). `--json`
    keys: name, path, algorithm, base, step, kept_step, total_steps, reward_mean,
    reward_name, adapters, resumable_step, manifest.
    """
    from coopcode.display.listing import print_listing
    from coopcode.training.saved_runs import DEFAULT_ROOT, check_root, list_checkpoints

    root = Path(folder.root)
    if root != DEFAULT_ROOT and not root.exists():  # a fresh checkout has no checkpoints/ yet
        raise UserError(f"--dir {root}: no such folder: pass the folder holding the runs")
    runs = list_checkpoints(check_root(root))
    if as_json.as_json:
        print(json.dumps([r.to_dict() for r in runs], default=str))
        return
    if not runs:
        # stderr: a pipe reading the listing gets no rows, not a sentence to parse.
        err.print(f"no runs in {root}/ (train one with `coopcode train`)", highlight=False)
        return
    rows = []
    for r in runs:
        step = r.step_words
        # Named: a credit run's 0.78 and a coop run's 3.0 are on different scales.
        reward = (f"{'?' if r.reward is None else f'{r.reward:.3f}'} {r.reward_name}"
                  if r.algorithm != "sft" else "- (sft)")  # a warm start earns no reward
        size = f"{sum(r.adapters.values()) / 1e6:.1f} MB"
        rows.append([r.name, r.algorithm, r.base, step, reward, ", ".join(r.adapters) or "-", size,
                     str(r.path)])
    print_listing(out, ("run", "algo", "base", "step", "reward", "adapters", "size", "path"), rows)


@checkpoints_app.command("show")
@config_options
def checkpoints_show(
    run: Annotated[str, typer.Argument(help="A run name in checkpoints/ or a run folder.")],
    folder: RunsFolder,
    as_json: JsonOutput,
    curves: CurvesPlot,
) -> None:
    """One run: its base model, algorithm, settings, adapters and training curve."""
    from coopcode.training.saved_runs import find_checkpoint, plot_curves, reward_curve
    from coopcode.training.validation import choose_step, evaluations, kept_words

    info = find_checkpoint(run, Path(folder.root))
    history = info.metrics_history()
    curve = reward_curve(history)
    warnings = info.warnings()
    written = plot_curves(info) if curves.plot else None
    evals = evaluations(info.path, history)
    choice = choose_step(evals)
    if as_json.as_json:
        extra = {"curves_png": str(written)} if written is not None else {}
        validation = {"evaluations": [{"step": e["step"], **e["figures"]} for e in evals],
                      "choice": choice.to_dict() if choice is not None else None}
        print(json.dumps({**info.to_dict(), "curve": curve, "validation": validation,
                          "warnings": [w.to_dict() for w in warnings], **extra}, default=str))
        return
    m = info.manifest
    base: dict[str, Any] = m["base"] if isinstance(m.get("base"), dict) else {}
    out.print(f"[bold]{info.name}[/]  {info.path}")
    out.print(f"algorithm {info.algorithm}, step {info.step}/{info.total_steps}, "
              f"resumable at {info.resumable_step if info.resumable_step is not None else '-'}")
    if info.kept_step is not None:
        kept = m["kept"]
        out.print(f"adapters: step {info.kept_step}'s ({kept_words(kept)}); the last step's "
                  f"in {info.path / str(m['last'])}"
                  + (" (the run stopped itself: no new best for --patience validations)"
                     if m.get("stopped_early") else ""), highlight=False)
    out.print(f"base {base.get('name', '?')} ({str(base.get('fingerprint', '?'))[:16]}), "
              f"coopcode {m.get('coopcode_version', '?')}")
    for role, size in info.adapters.items():
        out.print(f"  {role}/  {size / 1e6:.1f} MB")
    config = info.config
    if config and info.algorithm == "sft":  # a warm start: its data and its loss
        keys: tuple[str, ...] = ("problems", "examples", "scheme", "max_new_tokens",
                                 "learning_rate", "lora_rank", "seed")
        out.print("config: " + ", ".join(f"{k}={config[k]}" for k in keys if k in config),
                  highlight=False, soft_wrap=True)
        losses = [r for r in history if isinstance(r.get("loss"), int | float)]
        if losses:
            out.print(f"loss (mean NLL per target token, summed over the agents): step "
                      f"{losses[0]['step']} {losses[0]['loss']:.3f} -> step {losses[-1]['step']} "
                      f"{losses[-1]['loss']:.3f}", highlight=False)
    elif config:
        keys = ("problems", "scheme", "joint", "group_size", "max_new_tokens", "temperature",
                "turns", "learning_rate", "lora_rank", "kl_coef", "seed")
        out.print(f"reward {info.reward_name}; config: "
                  + ", ".join(f"{k}={config[k]}" for k in keys if k in config), highlight=False)
    if curve:
        table = Table(title="training curve")
        for col in ("steps", "reward", "pass rate"):
            table.add_column(col)
        for row in curve:
            table.add_row(row["steps"], f"{row['reward_mean']:.3f}", f"{row['pass_rate']:.1%}")
        out.print(table)
    if evals:
        _print_validation(evals, choice)
    for w in warnings:
        out.print(f"[yellow]warning ({w.kind}):[/] {w.message}", highlight=False, soft_wrap=True)
    if not warnings and curve:
        out.print("[dim]collapse guards: no warnings[/]")
    if written is not None:
        out.print(f"curves: {written}", highlight=False, soft_wrap=True)


def _with_se(figures: dict[str, float], key: str) -> str:
    value, se = figures.get(key), figures.get(f"{key}_se")
    if value is None:
        return "-"
    return f"{value:.1%}" + ("" if se is None else f" ± {se:.1%}")


def _print_validation(evals: list[dict[str, Any]], choice: Choice | None) -> None:
    """The run's evaluations, each figure ± its standard error over problems, and which step
    the two-standard-error rule prefers."""
    table = Table(title="validation (± standard error over problems)")
    keys = [k for k in ("val/pass@1", "val/own_work", "val/helper_solves", "val/both_needed")
            if any(k in e["figures"] for e in evals)]
    for col in ("step", *(k.split("/", 1)[1].replace("_", " ") for k in keys)):
        table.add_column(col)
    for e in evals:
        table.add_row(str(e["step"]), *(_with_se(e["figures"], k) for k in keys))
    out.print(table)
    if choice is None:
        return
    if choice.preferred is not None:
        out.print(f"val pass@1: {choice.preferred} is preferred: ahead of every other evaluation "
                  "by more than 2 standard errors (paired over problems)", highlight=False)
    else:
        out.print(f"val pass@1: no step is preferred: {choice.best} leads, but not "
                  f"{', '.join(choice.tied)} by more than 2 standard errors (paired over "
                  "problems)", highlight=False, soft_wrap=True)


@dataclass(frozen=True)
class ExamplesFile:
    """Where `coopcode problems sft-examples` writes."""

    out: str | None = option(None, "The examples file to write, replaced whole [default: "
                             "SET-sft.jsonl here, e.g. compose-train-sft.jsonl].")

    def validate(self) -> None:
        pass

    def path(self, problem_set: str) -> Path:
        if self.out:
            return Path(self.out)
        stem = Path(problem_set).stem if problem_set.endswith((".jsonl", ".py")) else problem_set
        return Path(f"{stem.replace(':', '-').replace('/', '-')}-sft.jsonl")


@config_options
def sft_examples_command(
    problem_set: Annotated[str, typer.Argument(
        metavar="SET", help="A set with canonical solutions (compose:train, humaneval:fit, ...).")],
    target: ExamplesFile,
    sandbox: SandboxChoice,
    as_json: JsonOutput,
) -> None:
    """Write warm-start examples (`coopcode train --algo sft --examples FILE`) from a set's canonical solutions.

    Each line holds the whole canonical answer (`solution`, one agent) and, where the problem has a contract with a reference aux and a composed canonical solution (compose), its halves (`helper`: aux's reference; `main`: the entry point calling aux). Each is run in the sandbox with the problem's tests; those that fail are dropped and counted.
    """
    from coopcode.core.sandboxes import open_sandbox_for_cli
    from coopcode.problems import load_problems
    from coopcode.training.canonical_examples import write_examples

    problems = load_problems(problem_set)
    path = target.path(problem_set)

    def warn(message: str) -> None:
        err.print(f"[yellow]warning:[/] {message}", highlight=False)

    try:
        with open_sandbox_for_cli(sandbox.sandbox, warn) as sb:
            written = write_examples(problems, sb, path)
    except OSError as e:
        raise UserError(f"cannot write {path}: {e.strerror or e}") from None
    if as_json.as_json:
        print(json.dumps(written.to_dict()))
        return
    out.print(f"{written.lines} examples of {len(problems)} problems -> {path}: "
              f"{written.pairs} pairs (helper + main), {written.solutions} solutions",
              highlight=False, soft_wrap=True)
    for label, ids in (("failed their tests as a pair, left out", written.failed_pairs),
                       ("failed their tests as one solution, left out", written.failed_solutions),
                       ("have no contract reference or no inner aux: no pair",
                        written.no_split),
                       ("have no canonical solution", written.no_solution)):
        if ids:
            shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
            out.print(f"  {len(ids)} {label}: {shown}", highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Mount `train` and `checkpoints` on the coopcode CLI. (`sft-examples` is mounted by the
    `problems` group, which imports it from here: `coopcode.problem_sets.cli`.)"""
    app.command("train")(train_command)
    app.add_typer(checkpoints_app, name="checkpoints")
