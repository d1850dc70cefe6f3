"""The Train and Bench forms are their configs' `form=N` fields: each row is a config field
with its label, the command a form starts parses (by the real CLI) to the config the form
shows, and a bad value is refused by the CLI's own check before any child starts."""

from __future__ import annotations

from typing import Any

import pytest
import typer

from coopcode.cli import app as cli_app
from coopcode.evaluation.bench_config import BenchConfig
from coopcode.settings.options import config_from_cli, form_options, options
from coopcode.training.config import TrainConfig
from tests.tui_app.conftest import wait_until


def parsed(argv: list[str]) -> Any:
    """The config `coopcode <argv>` would run with, parsed by the real command."""
    name, args = argv[3], argv[4:]  # [python, -m, coopcode, name, ...]
    cls = {"train": TrainConfig, "bench": BenchConfig}[name]
    ctx = typer.main.get_command(cli_app).commands[name].make_context(name, args)  # type: ignore[attr-defined]
    return config_from_cli(cls, {o.name: ctx.params[o.name] for o in options(cls)})


def labels(screen: Any, cls: type) -> list[str]:
    """The labels of the rows holding `cls`'s form fields, in screen order."""
    return [str(screen.query_one(f"#{o.widget_id}").parent.children[0].render())
            for o in form_options(cls)]


@pytest.mark.parametrize(("mode", "cls", "typed", "expected"), [
    ("train", TrainConfig, {"group-size": "3", "learning-rate": "0.001", "problems": "examples"},
     # steps and validation: the form's presets; a run that short saves every step
     TrainConfig(group_size=3, learning_rate=0.001, problems="examples", steps=20, save_every=1,
                 eval_every=10)),
    ("train", TrainConfig, {"reward": "coop", "group-size": "2", "eval-every": ""},
     # the reward, chosen by name; validation blanked: none
     TrainConfig(group_size=2, reward="coop", steps=20, save_every=1)),
    ("bench", BenchConfig, {"ks": "1,2", "n": "2", "temperature": "0.2", "limit": ""},
     BenchConfig(ks=(1, 2), n=2, temperature=0.2, limit=None)),
])
async def test_the_form_starts_the_command_of_its_config(make_app, mode: str, cls: type,
                                                         typed: dict[str, str], expected: Any) -> None:
    app = make_app(mode=mode, autoload=False)
    async with app.run_test(size=(100, 30)):
        screen = app.screen
        assert labels(screen, cls) == [o.label for o in form_options(cls)]
        for widget_id, text in typed.items():
            screen.query_one(f"#{widget_id}").value = text
        built = screen.build_argv()
        argv = built if mode == "train" else built[0]
        assert parsed(argv) == expected


@pytest.mark.parametrize(("mode", "typed", "needle"), [
    ("train", {"group-size": "1"}, "--group-size must be at least 2 (got 1)"),
    ("train", {"learning-rate": "fast"}, "lr: 'fast' is not a valid number"),
    ("bench", {"ks": "1,9", "n": "5"}, "k=9 is larger than n=5"),
    ("bench", {"temperature": "nan"}, "--temperature must be a finite number"),
])
async def test_a_bad_value_is_refused_before_a_child_starts(make_app, mode: str,
                                                            typed: dict[str, str],
                                                            needle: str) -> None:
    app = make_app(mode=mode, autoload=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        shown: list[str] = []
        screen.notify = lambda message, **_kw: shown.append(message)
        for widget_id, text in typed.items():
            screen.query_one(f"#{widget_id}").value = text
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: shown, what="the refusal")
        assert needle in shown[0] and screen.job is None
