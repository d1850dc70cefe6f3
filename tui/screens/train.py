"""Train: a MAGRPO/GRPO run as a child process, with live curves, a log and its checkpoints."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, DataTable, Footer, Input, Label, RichLog, Select

from coopcode import events as ev
from tui.jobs import coopcode_argv
from tui.runs import list_checkpoint_runs
from tui.screens.job_screen import JobScreen, form_value
from tui.widgets.nav import NavBar
from tui.widgets.plot import PlotView

# Form fields: (id, label, default, type, CLI flag)
FIELDS: tuple[tuple[str, str, str, type, str], ...] = (
    ("group-size", "G", "4", int, "--group-size"),
    ("turns", "turns", "1", int, "--turns"),
    ("lr", "lr", "5e-5", float, "--lr"),
    ("lora-rank", "LoRA rank", "8", int, "--lora-rank"),
    ("steps", "steps", "20", int, "--steps"),
    ("max-new-tokens", "max tokens", "256", int, "--max-new-tokens"),
    ("problems", "data", "humaneval:train", str, "--problems"),
)


def reward_series(values: dict[str, float]) -> dict[str, float]:
    """The mean-reward levels and the pass rate among a metric event's values."""
    out = {}
    for key, value in values.items():
        k = key.lower()
        if "std" in k or "loss" in k:
            continue
        if "reward" in k or "pass" in k:
            out[key.replace("reward_", "").replace("reward/", "").replace("_mean", "")] = value
    return out


class TrainScreen(JobScreen):
    job_name = "training"
    BINDINGS = [
        Binding("ctrl+r", "start", "Start", id="train.start", priority=True),
        Binding("escape", "stop", "Stop", id="train.stop"),
        Binding("ctrl+l", "refresh", "Rescan", id="train.refresh"),
    ]
    HELP = {
        "start": "Start a training run (a child process)",
        "stop": "Stop the training run (it saves; a rerun resumes)",
        "refresh": "Rescan checkpoints/",
    }

    def __init__(self) -> None:
        super().__init__()
        self.out_dir: Path | None = None
        self.metrics: list[tuple[int, dict[str, float]]] = []
        self._last_scan = 0.0

    def compose(self) -> ComposeResult:
        yield NavBar("train")
        with Horizontal(id="train-body"):
            with Vertical(id="train-form", classes="form"):
                with Horizontal(classes="field"):
                    yield Label("algo", classes="field-label")
                    yield Select([("magrpo", "magrpo"), ("grpo", "grpo")], value="magrpo",
                                 allow_blank=False, compact=True, id="algo")
                for fid, label, default, _kind, _flag in FIELDS:
                    with Horizontal(classes="field"):
                        yield Label(label, classes="field-label")
                        yield Input(default, compact=True, id=fid)
                with Horizontal(classes="field"):
                    yield Label("run", classes="field-label")
                    yield Input(time.strftime("tui-%Y%m%d-%H%M"), compact=True, id="run-name")
                with Horizontal(classes="buttons"):
                    yield Button("Start", id="start", variant="success", compact=True)
                    yield Button("Stop", id="stop", variant="error", compact=True, disabled=True)
            with Vertical(id="train-live"):
                with Horizontal(id="plots"):
                    yield PlotView("mean reward · pass rate", id="reward-plot")
                    yield PlotView("loss", id="loss-plot")
                with Horizontal(id="train-bottom"):
                    yield RichLog(id="log", wrap=True, markup=False, min_width=20)
                    yield DataTable(id="checkpoints", cursor_type="row", zebra_stripes=True)
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.log_view.border_title = "log"
        table = self.query_one("#checkpoints", DataTable)
        table.border_title = "checkpoints"
        table.add_columns("run", "algo", "step", "reward")
        self.action_refresh()
        self.set_interval(2.0, self._poll_checkpoints)

    def build_argv(self) -> list[str]:
        """The `coopcode train` command for the form (ValueError names a bad field)."""
        session = self.app.session  # type: ignore[attr-defined]
        args = ["train", "--events", "jsonl",
                "--algo", str(self.query_one("#algo", Select).value)]
        for fid, label, _default, kind, flag in FIELDS:
            value = form_value(self.query_one(f"#{fid}", Input).value, kind, label)
            args += [flag, str(value)]
        run = self.query_one("#run-name", Input).value.strip()
        if not run or "/" in run:
            raise ValueError("run: give a folder name for checkpoints/<run>")
        self.out_dir = Path("checkpoints") / run
        args += ["--out", str(self.out_dir)]
        if session.spec.model:
            args += ["--model", session.spec.model]
        args += ["--sandbox", session.spec.sandbox]
        return coopcode_argv(*args)

    @on(Button.Pressed, "#start")
    def action_start(self) -> None:
        if self.busy:
            self.notify("A training run is already going (Esc stops it).", severity="warning")
            return
        try:
            argv = self.build_argv()
        except ValueError as e:
            self.notify(str(e), severity="error", title="training config")
            return
        self.metrics.clear()
        for plot in self.query(PlotView):
            plot.clear()
        self.start_job(argv)

    @on(Button.Pressed, "#stop")
    def _stop_pressed(self) -> None:
        self.action_stop()

    def job_started(self) -> None:
        self.query_one("#start", Button).disabled = True
        self.query_one("#stop", Button).disabled = False

    def job_ended(self, returncode: int | None) -> None:
        self.query_one("#start", Button).disabled = False
        self.query_one("#stop", Button).disabled = True
        self.action_refresh()

    def handle_event(self, event: ev.Event) -> None:
        if isinstance(event, ev.Metric):
            self.metrics.append((event.step, dict(event.values)))
            reward = self.query_one("#reward-plot", PlotView)
            for name, value in reward_series(event.values).items():
                reward.add_point(name, event.step, value)
            loss = self.query_one("#loss-plot", PlotView)
            for key, value in event.values.items():
                if "loss" in key.lower():
                    loss.add_point(key, event.step, value)
        elif isinstance(event, ev.Log) and "checkpoint" in event.message.lower():
            self.action_refresh()
        elif isinstance(event, ev.Finished):
            self.action_refresh()

    def _poll_checkpoints(self) -> None:
        # Saves also show up without a Log event (another process, a detached run).
        if self.busy or time.monotonic() - self._last_scan > 10:
            self.action_refresh()

    def action_refresh(self) -> None:
        self._last_scan = time.monotonic()
        table = self.query_one("#checkpoints", DataTable)
        rows: list[tuple[Any, ...]] = []
        for run in list_checkpoint_runs():
            reward = f"{run.reward:.3f}" if run.reward is not None else "?"
            rows.append((run.name, run.algorithm, run.step, reward))
        if rows != getattr(self, "_shown_rows", None):
            self._shown_rows = rows
            table.clear()
            for row in rows:
                table.add_row(*row)
