"""Each setting is declared once, as a config field (`coopcode.settings.options`): every command offers
exactly its config classes' fields as options, each with the field's flag, help and default, a
field added to a config shows up on the command line with nothing else written, and a bad
value of every kind is refused with one `error:` line naming its flag."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, fields
from typing import Any

import pytest
import typer
from cli_helpers import assert_refused, coopcode
from rich.text import Text
from typer.testing import CliRunner

from coopcode.cli import app
from coopcode.collaboration.solve_config import SolveConfig
from coopcode.core.errors import UserError
from coopcode.engines.engine_config import EngineConfig
from coopcode.evaluation.bench_config import BenchConfig
from coopcode.settings.options import Option, config_options, option, options
from coopcode.training.config import TrainConfig


def typer_commands(t: typer.Typer, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """(command path, the function typer calls) for every command of `t` and its sub-apps."""
    found = []
    for info in t.registered_commands:
        name = info.name or info.callback.__name__.replace("_", "-")
        found.append(((*prefix, name), info.callback))
    for group in t.registered_groups:
        found += typer_commands(group.typer_instance, (*prefix, group.name))
    return found


# `coopcode sandbox ...` is the sandbox part's own command line: the sandbox imports nothing
# of coopcode (its runner is copied into the image), so its few flags are declared there.
COMMANDS = [(path, fn) for path, fn in typer_commands(app) if path[0] != "sandbox"]
CONFIGS = [(cls, " ".join(path)) for path, fn in COMMANDS
           for cls in getattr(fn, "config_classes", {}).values()]


def test_the_commands_are_all_found() -> None:
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"solve", "bench", "evaluate", "compare", "paper-table", "train", "tui", "models list",
            "checkpoints list", "checkpoints show"} <= names
    assert (SolveConfig, "solve") in CONFIGS and (EngineConfig, "paper-table") in CONFIGS


@pytest.mark.parametrize("path", [" ".join(path) for path, _ in COMMANDS])
def test_every_flag_of_a_command_is_exactly_one_config_field(path: str) -> None:
    """No command declares a --flag of its own: each is a field of one of its config classes
    (one default, one help text, one check), and each field is offered."""
    fn = dict((" ".join(p), f) for p, f in COMMANDS)[path]
    fields = Counter(o.name for cls in getattr(fn, "config_classes", {}).values()
                     for o in options(cls))
    offered = [p for p in command(path).params if p.param_type_name == "option"]
    for param in offered:
        assert fields[param.name] == 1, f"coopcode {path}: {param.opts} is not one config field"
    assert sorted(fields) == sorted(p.name for p in offered)


def cli_default(opt: Option) -> Any:
    """The default a field's command-line option has (a list typed as text; a repeated flag:
    none given)."""
    if opt.repeat:
        return None
    return opt.show(opt.default) if opt.kind is tuple and opt.default is not None else opt.default


def command(path: str) -> Any:
    """The click command typer builds for `path` ("checkpoints list"; typer may carry its own
    copy of click)."""
    found = typer.main.get_command(app)
    for name in path.split():
        found = found.commands[name]  # type: ignore[attr-defined]
    return found


def cli_options(name: str) -> dict[str, Any]:
    return {p.name: p for p in command(name).params if p.param_type_name == "option"}


@pytest.mark.parametrize(("cls", "name"), CONFIGS)
def test_every_field_is_an_option_with_its_flags_help_and_default(cls: type, name: str) -> None:
    offered = cli_options(name)
    for opt in options(cls):
        param = offered[opt.name]
        assert [*param.opts, *param.secondary_opts] == [
            d for flag in opt.flags for d in flag.split("/")], opt.name
        assert Text.from_markup(param.help or "").plain == opt.help, opt.name  # as --help shows it
        assert param.default == cli_default(opt), opt.name


ARGUMENTS = {"solve": ["HumanEval/0"], "evaluate": ["samples.jsonl"], "compare": ["a", "b"],
             "checkpoints show": ["run"], "problems show": ["compose"],
             "problems sft-examples": ["compose:train"]}  # each command's arguments (not options)


@pytest.mark.parametrize(("cls", "name"), CONFIGS)
def test_the_command_line_gives_the_config_of_the_flags(cls: type, name: str) -> None:
    """Parsed by the real command: no flags give the defaults; aliases reach their field."""
    required = list(ARGUMENTS.get(name, []))  # click consumes the list it parses
    ctx = command(name).make_context(name, required)
    assert {o.name: ctx.params[o.name] for o in options(cls)} == {
        o.name: () if o.repeat else cli_default(o) for o in options(cls)}  # no flag: no items
    if cls is TrainConfig:
        ctx = command(name).make_context(name, ["--rollout-batch", "3", "-G", "6", "--std-norm"])
        assert (ctx.params["problems_per_step"], ctx.params["group_size"],
                ctx.params["advantage_std"]) == (3, 6, True)


@dataclass
class LongerTrainConfig(TrainConfig):
    """A config that grows one setting, as a new trainer option would."""

    warmup_ratio: float = option(0.1, "Fraction of the steps spent warming up.", within="[0, 1]")


def test_a_field_added_to_a_config_is_on_the_command_line_with_nothing_else_written() -> None:
    got: list[LongerTrainConfig] = []
    demo = typer.Typer()

    @demo.command()
    @config_options
    def run(config: LongerTrainConfig, name: str = "x") -> None:
        got.append(config)

    runner = CliRunner()
    shown = runner.invoke(demo, ["--help"], env={"COLUMNS": "200"})
    assert "--warmup-ratio" in shown.output and "Fraction of the steps spent warming up." in shown.output
    assert runner.invoke(demo, ["--warmup-ratio", "0.5", "-G", "3"]).exit_code == 0
    assert got[-1] == LongerTrainConfig(warmup_ratio=0.5, group_size=3)
    bad = runner.invoke(demo, ["--warmup-ratio", "2"])
    assert isinstance(bad.exception, UserError)
    assert str(bad.exception) == "--warmup-ratio must be in [0, 1] (got 2.0)"


def test_every_field_needs_a_default_and_a_help() -> None:
    @dataclass
    class Undeclared:
        steps: int = 3

    with pytest.raises(TypeError, match="declare it with option"):
        options(Undeclared)


def bad_value(opt: Option) -> Any:
    """A value the field refuses, from what it declares (None: it declares no limit)."""
    if opt.choices:
        return ("bogus",) if opt.kind is tuple else "bogus"
    if opt.within:
        return float(opt.within.strip("[]()").split(",")[1]) + 1  # above the interval
    if opt.above is not None:
        return opt.above
    if opt.at_least is not None:
        return opt.kind(opt.at_least - 1)
    if opt.kind is float:
        return math.nan
    return None


@pytest.mark.parametrize(("cls", "name"), CONFIGS)
def test_validate_refuses_each_declared_limit_in_one_line_naming_the_flag(cls: type, name: str) -> None:
    checked = 0
    for opt in options(cls):
        value = bad_value(opt)
        if value is None:
            continue
        with pytest.raises(UserError) as refused:
            cls(**{opt.name: value}).validate()
        message = str(refused.value)
        assert opt.flag in message and "\n" not in message, (opt.name, message)
        checked += 1
    assert checked >= {TrainConfig: 20, EngineConfig: 2, BenchConfig: 7, SolveConfig: 7}.get(cls, 0)
    for f in fields(cls):  # and the defaults are all good
        assert getattr(cls(), f.name) == f.default
    cls().validate()


NO_MODEL = "/nonexistent/model"


@pytest.mark.parametrize(("args", "needle"), [
    # each kind of declared limit, and the parsers, through the real CLI
    (("train", "--micro-batch", "0"), "--micro-batch must be at least 1 (got 0)"),
    (("train", "--max-grad-norm", "-1"), "--max-grad-norm must be a finite number >= 0"),
    (("train", "--lr", "0"), "--lr must be a positive number (got 0.0)"),
    (("train", "--gamma", "1.5"), "--gamma must be in [0, 1] (got 1.5)"),
    (("train", "--early-stop-reward", "nan"), "--early-stop-reward must be a finite number"),
    (("train", "--logprob", "max"), "unknown value 'max' for --logprob: use one of sum, mean"),
    (("train", "--rollout-batch", "0"), "--problems-per-step must be at least 1"),
    (("train", "--steps", "many"), "Invalid value for '--steps'"),
    (("train", "--agent-credit", "shapley"), "unknown credit 'shapley' for --agent-credit: use one of joint, counterfactual"),
    (("train", "--token-level-loss", "--logprob", "mean"), "--token-level-loss sums log-probs over tokens"),
    (("train", "--algo", "grpo", "--agent-credit", "counterfactual"), "GRPO trains one agent"),
    (("bench", "--scheme", "sequential,solo"), "unknown scheme 'solo' for --scheme"),
    (("bench", "--k", "1,x"), "--k 1,x: expected comma-separated integers like 1,3,5,10"),
    (("bench", "--top-p", "0"), "--top-p must be in (0, 1] (got 0.0)"),
])
def test_a_bad_value_of_each_kind_is_one_error_line(args: tuple[str, ...], needle: str,
                                                    tmp_path: Any) -> None:
    assert_refused(coopcode(*args, "--model", NO_MODEL, "--out", str(tmp_path / "run")), needle)
