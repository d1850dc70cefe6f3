"""Train: a MAGRPO/GRPO run as a child process, with live curves, a log and its checkpoints."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.markup import escape
from textual.suggester import SuggestFromList
from textual.widgets import Button, Checkbox, Footer, Input, Label, RichLog, Select, Static

from coopcode import (
    BUILT_IN_SETS,
    Event,
    Finished,
    Log,
    Metric,
    Progress,
    Started,
    TrainConfig,
    UserError,
    get_scheme,
    list_checkpoints,
    option_args,
    term_keys,
    train_scheme_names,
)
from tui.config_form import form_fields, form_values
from tui.jobs import coopcode_argv
from tui.runs import reward_text
from tui.scheme_fit import needs_contract
from tui.screens.job_screen import JobScreen, eta_text
from tui.widgets.fitted_table import FittedTable
from tui.widgets.nav import NavBar
from tui.widgets.plot import PlotView
from tui.widgets.ticks import TickBox

# The form shows TrainConfig's `form=N` fields. Steps has no library default (one epoch):
# the form proposes a short run.
# It validates every 10 steps (at 0, 10 and 20): the run's adapters are then its best
# validated step, not whatever the last step left (blank the field to train without).
PRESETS: dict[str, Any] = {"steps": 20, "eval_every": 10}
# Runs this short save every step, so a stopped demo run always leaves adapters.
SHORT_RUN = 20
FROM_BASE, FROM_LOADED = "base", "loaded"
START_CHOICES = [("the base model", FROM_BASE), ("loaded (F2)", FROM_LOADED)]


# What the plots show, from `coopcode train`'s Metric events: (metric key, curve name). The
# reward plot draws the run's reward terms, whatever they are (`reward_curves`).
LOSS_CURVES = (("loss", "total"), ("helper/loss", "helper"), ("main/loss", "main"),
               ("single/loss", "single"))


def reward_curves(values: dict[str, float]) -> list[tuple[str, str]]:
    """The mean reward, each term of the run's reward, the pass rate, and the validation
    pass@1 (at the steps a run with --eval-every evaluates, step 0 first)."""
    return [("reward/mean", "reward"), *((k, k.split("/", 1)[1]) for k in term_keys(values)),
            ("pass_rate", "pass rate"), ("val/pass@1", "val pass@1")]


class TrainScreen(JobScreen):
    job_name = "training"
    # Arriving, the focus is on a drop-down, not in a text field: `/` and `?` then work
    # at once (in a field they are text).
    AUTO_FOCUS = "#algo"
    BINDINGS = [
        Binding("ctrl+r", "start", "Start", id="train.start", priority=True),
        Binding("escape", "stop", "Stop", id="train.stop"),
        Binding("ctrl+l", "refresh", "Rescan", id="train.refresh"),
    ]
    ACTION_HELP = {
        "start": "Start a training run (a child process)",
        "stop": "Stop the training run (it saves; a rerun resumes)",
        "refresh": "Rescan checkpoints/",
    }

    def __init__(self) -> None:
        super().__init__()
        self.out_dir: Path | None = None
        self.metrics: list[tuple[int, dict[str, float]]] = []
        self.warnings: list[str] = []  # the collapse guards' lines for the running job
        self._last_scan = 0.0
        # The running job as the header tells it: seen Started / Finished, the total steps,
        # the last step's ETA (kept while the next step samples).
        self.seen_started = self.seen_finished = False
        self.total_steps = 0
        self.eta = ""
        self.reward_name = ""  # the run's reward, named beside each reward figure
        self.defaults_for: tuple[str | None, str | None] | None = None  # (`_follow_agents`)

    def compose(self) -> ComposeResult:
        yield NavBar("train")
        with Horizontal(id="train-body"):
            with VerticalScroll(id="train-form", classes="form"):
                yield from form_fields(TrainConfig, PRESETS)
                # The scheme the pair trains under (`--scheme`): sequential, parallel, contract,
                # plan and their +code variants; single is one agent (grpo, sft).
                with Horizontal(classes="field"):
                    yield Label("scheme", classes="field-label")
                    yield Select([(s, s) for s in train_scheme_names()],
                                 value=TrainConfig().scheme, allow_blank=False, compact=True,
                                 id="scheme")
                # Where the adapters start: the base model, or the ones loaded on F2
                # (`--helper-init/--main-init`: what Collaborate runs, trained further).
                with Horizontal(classes="field"):
                    yield Label("start from", classes="field-label")
                    yield Select(START_CHOICES, value=FROM_BASE, allow_blank=False, compact=True,
                                 id="start-from")
                yield Static("", id="start-note")
                with Horizontal(classes="field"):
                    yield Label("run", classes="field-label")
                    yield Input(time.strftime("tui-%m%d-%H%M"), compact=True, id="run-name")
                yield TickBox("resume the run", compact=True, id="resume")
                yield from self.release_box()
                with Horizontal(classes="buttons"):
                    yield Button("Start", id="start", variant="success", compact=True)
                    yield Button("Stop", id="stop", variant="error", compact=True, disabled=True)
            with Vertical(id="train-live"):
                yield Label("idle · Ctrl+R starts a run", id="train-status")
                yield Label("", id="train-warnings")
                with Horizontal(id="plots"):
                    yield PlotView("mean reward · pass rate", id="reward-plot")
                    yield PlotView("loss", id="loss-plot")
                with Horizontal(id="train-bottom"):
                    yield RichLog(id="log", wrap=True, markup=False, min_width=20)
                    yield FittedTable(id="checkpoints", optional=(1,), cursor_type="row",
                                      zebra_stripes=True)
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        # The data field takes a file or folder too; the built-in sets are offered as typed
        # (`c` -> compose:train, → accepts).
        self.query_one("#problems", Input).suggester = SuggestFromList(
            [name for name, _ in BUILT_IN_SETS], case_sensitive=False)
        self.log_view.border_title = "log"
        table = self.query_one("#checkpoints", FittedTable)
        table.border_title = "checkpoints"
        self.action_refresh()
        self._show_warnings()
        self.set_interval(2.0, self._poll_checkpoints)
        self.set_interval(2.0, self._show_idle)
        self._show_idle()
        self.watch(self.app, "agents_state", lambda _s: self.propose_release(), init=True)
        self.watch(self.app, "agents_state", self._agents_changed, init=True)

    # -- the agents: as Collaborate has them, and their run's recipe -------------------------

    def _agents_changed(self, state: str) -> None:
        if state in ("ready", "idle", "error"):
            self._follow_agents()

    def loaded_adapters(self) -> tuple[str | None, str | None]:
        """The (helper, main) adapter folders loaded on F2."""
        from coopcode import resolve_adapter_path

        spec = self.app.session.spec  # type: ignore[attr-defined]
        return (resolve_adapter_path(spec.helper_adapter, "helper"),
                resolve_adapter_path(spec.main_adapter, "main"))

    def _follow_agents(self) -> None:
        """The form starts from what Collaborate has loaded: its adapters as the start (the
        run trained further), and the recipe they were trained with (algorithm, scheme,
        reward, data), all shown and changeable; taken again only when other adapters load."""
        from coopcode import trained_with

        adapters = self.loaded_adapters()
        self._show_start(adapters)
        if adapters == self.defaults_for or self.busy:
            return
        self.defaults_for = adapters
        start = self.query_one("#start-from", Select)
        start.value = FROM_LOADED if any(adapters) else FROM_BASE
        trained = trained_with(*adapters)
        if trained is None:
            return
        if trained.algorithm in ("magrpo", "grpo"):
            self.query_one("#algo", Select).value = trained.algorithm
        if trained.scheme in train_scheme_names() and trained.algorithm != "grpo":
            self.query_one("#scheme", Select).value = trained.scheme
        self.query_one("#reward", Select).value = trained.reward or Select.NULL
        if trained.problems:
            self.query_one("#problems", Input).value = trained.problems
        self.notify(f"{trained.run}: {trained.algorithm}, {trained.words()}, data "
                    f"{trained.problems or '?'} (as trained; change them here)",
                    title="training", timeout=6)

    @on(Select.Changed, "#start-from")
    def _start_changed(self) -> None:
        self._show_start(self.loaded_adapters())

    def _show_start(self, adapters: tuple[str | None, str | None]) -> None:
        from tui.widgets.nav import adapters_name

        loaded = str(self.query_one("#start-from", Select).value) == FROM_LOADED and any(adapters)
        self.query_one("#start-note", Static).update(
            adapters_name(*adapters) if loaded else "fresh adapters on the base model")

    def _show_idle(self) -> None:
        """Before any run: what starting one costs in memory (tui.memory)."""
        if self.job is None and not self.seen_started:
            self._status(f"idle · Ctrl+R starts a run\n{self.memory_text()}")

    def build_argv(self) -> list[str]:
        """The `coopcode train` command for the form (ValueError names a bad field, UserError
        a bad value: the check `coopcode train` itself runs)."""
        session = self.app.session  # type: ignore[attr-defined]
        values = form_values(self, TrainConfig)
        values["scheme"] = str(self.query_one("#scheme", Select).value)
        if str(self.query_one("#start-from", Select).value) == FROM_LOADED:
            # The loaded adapters as the start (`--helper-adapter`/`--main-adapter` of train),
            # each for an agent the run trains (GRPO: main alone).
            roles = get_scheme(TrainConfig(**values).collab_scheme).roles
            for role, path in zip(("helper", "main"), self.loaded_adapters(), strict=True):
                if path and role in roles:
                    values[f"{role}_init"] = path
        config = TrainConfig(**values)
        config.validate()
        if needs_contract(config.collab_scheme):
            from coopcode import check_problems_fit, load_problems

            check_problems_fit([config.collab_scheme], load_problems(config.problems),
                               remedy="set data to compose:train (or a file with contracts), "
                               "or choose the plan scheme")
        run = self.query_one("#run-name", Input).value.strip()
        if not run or "/" in run:
            raise ValueError("run: give a folder name for checkpoints/<run>")
        self.out_dir = Path("checkpoints") / run
        short = config.steps is not None and config.steps <= SHORT_RUN
        args = ["train", "--events", "jsonl", *option_args(config, values),
                "--out", str(self.out_dir), "--save-every", "1" if short else "10"]
        if self.query_one("#resume", Checkbox).value:
            args.append("--resume")
        if session.spec.model:
            args += ["--model", session.spec.model]
        args += ["--sandbox", session.spec.sandbox]
        return coopcode_argv(*args)

    @on(Select.Changed, "#scheme")
    def _offer_contracts(self, event: Select.Changed) -> None:
        """A scheme that needs the problem's contract, on HumanEval data: compose's training
        split instead (said in a notification), the set whose problems have one."""
        data = self.query_one("#problems", Input)
        if needs_contract(str(event.value)) and data.value.strip().startswith("humaneval"):
            data.value = "compose:train"
            self.notify(f"data: compose:train (the {event.value} scheme needs problems with a "
                        "contract for aux)", title="training")

    @on(Button.Pressed, "#start")
    def action_start(self) -> None:
        if self.busy:
            self.notify("A training run is already going (Esc stops it).", severity="warning")
            return
        try:
            argv = self.build_argv()
        except (ValueError, UserError) as e:
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
        super().job_started()
        # True from the first second: the child loads the model before its first event.
        self.seen_started = self.seen_finished = False
        self.total_steps, self.eta = 0, ""
        self.warnings.clear()
        self._show_warnings()
        self._status("starting · loading the model…")

    def job_ended(self, returncode: int | None) -> None:
        stopped = bool(self.job and self.job.stopping) or returncode == 130
        if returncode not in (0, None) and not stopped:
            self._status(f"failed (exit {returncode}): see the log")
        elif not self.seen_finished:
            # Stopped before the run could say how it ended (during loading, or killed).
            self._status("stopped before step 1: nothing saved" if not self.metrics
                         else f"stopped after step {self.metrics[-1][0]}")
        super().job_ended(returncode)
        self.action_refresh()

    def _status(self, text: str) -> None:
        self.query_one("#train-status", Label).update(escape(text))

    def _reward_text(self) -> str:
        """The last reward, and the last validation pass@1 ± its standard error over problems."""
        last = self.metrics[-1][1] if self.metrics else {}
        text = (f" · reward {last['reward/mean']:.3f} {self.reward_name}".rstrip()
                if "reward/mean" in last else "")
        val = next((v for _, v in reversed(self.metrics) if "val/pass@1" in v), None)
        if val is not None:
            se = val.get("val/pass@1_se")
            text += f" · val pass@1 {val['val/pass@1']:.1%}" + (
                f" ± {se:.1%}" if se is not None else "")
            kept = next((v["val/kept_step"] for _, v in reversed(self.metrics)
                         if "val/kept_step" in v), None)
            if kept is not None:  # the step whose adapters the run is (--keep-step)
                text += f" · kept step {int(kept)}"
        return text

    def handle_event(self, event: Event) -> None:
        if isinstance(event, Metric):
            self.metrics.append((event.step, dict(event.values)))
            for plot_id, curves in (("#reward-plot", reward_curves(event.values)),
                                    ("#loss-plot", LOSS_CURVES)):
                plot = self.query_one(plot_id, PlotView)
                for key, name in curves:
                    if key in event.values:
                        plot.add_point(name, event.step, event.values[key])
        elif isinstance(event, Started):
            self.seen_started, self.total_steps = True, event.total
            self.reward_name = str(event.meta.get("reward") or (
                "seed-grpo" if event.meta.get("algo") == "grpo" else "seed"))
            done = int(event.meta.get("resumed_from") or 0)
            self._status(f"step {done + 1}/{event.total}: sampling…")
            self.warnings.clear()
            self._show_warnings()
        elif isinstance(event, Progress) and ": " in event.label:
            # The step in progress (`step 2/20: sampling, 412 tokens`, then scoring, updating).
            eta = f" · ETA {self.eta}" if self.eta else ""
            self._status(f"{event.label}{self._reward_text()}{eta}")
        elif isinstance(event, Progress):
            self.eta = eta_text(event.eta_s)
            self._status(f"step {event.done}/{event.total} done{self._reward_text()} · "
                         f"ETA {self.eta}")
        elif isinstance(event, Log) and not self.seen_started and event.level != "warning":
            self._status(f"starting · {event.message}")
        elif isinstance(event, Log) and event.level == "warning":
            # The collapse guards (coopcode.training.guards): kept in view, not only in the log.
            self.warnings.append(event.message)
            self._show_warnings()
            self.notify(event.message, severity="warning", title="training", timeout=10)
        elif isinstance(event, Log) and "checkpoint" in event.message.lower():
            self.action_refresh()
        elif isinstance(event, Finished):
            self.seen_finished = True
            summary = event.summary
            how = ("stopped itself" if summary.get("stopped_early") else
                   "stopped" if summary.get("stopped") else "finished")
            kept = summary.get("kept_step")
            which = f"step {kept}'s adapters" if kept is not None else "adapters"
            self._status(f"{how} at step {summary.get('step')}/{summary.get('total_steps')} · "
                         f"{which} in {summary.get('out')}")
            self.action_refresh()

    def _show_warnings(self) -> None:
        label = self.query_one("#train-warnings", Label)
        label.update("\n".join(f"⚠ {escape(w)}" for w in self.warnings))
        label.display = bool(self.warnings)

    def _poll_checkpoints(self) -> None:
        # Saves also show up without a Log event (another process, a detached run).
        if self.busy or time.monotonic() - self._last_scan > 10:
            self.action_refresh()

    def action_refresh(self) -> None:
        self._last_scan = time.monotonic()
        rows: list[tuple[str, ...]] = []
        for run in list_checkpoints():
            step = "?" if run.step is None else str(run.step)
            if run.total_steps:
                step += f"/{run.total_steps}"
            if run.kept_step is not None:  # the adapters are a validated step's
                step = f"{run.kept_step} of {step}"
            rows.append((run.name, run.algorithm, step, reward_text(run)))
        if rows != getattr(self, "_shown_rows", None):
            self._shown_rows = rows
            self._fill_checkpoints()

    def _fill_checkpoints(self) -> None:
        self.query_one("#checkpoints", FittedTable).fill(("run", "algo", "step", "reward"),
                                                         self._shown_rows)
