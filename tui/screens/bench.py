"""Bench: pass@k / acc@k as a child process, the table filling in, earlier runs side by side."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import (
    Button,
    DataTable,
    Footer,
    Input,
    Label,
    ProgressBar,
    RichLog,
    Select,
    SelectionList,
    Static,
    TabbedContent,
    TabPane,
)

from coopcode import (
    BUILT_IN_SETS,
    BenchConfig,
    Event,
    Finished,
    Log,
    Progress,
    Started,
    TokenDelta,
    UserError,
    VerdictReady,
    option_args,
    scheme_names,
)
from tui.bench_estimate import InFlight, SampleSeconds, bench_seconds_per_sample, estimate_text
from tui.config_form import form_fields, form_values
from tui.jobs import coopcode_argv
from tui.runs import BenchRun, list_bench_runs, list_checkpoints
from tui.scheme_fit import needs_contract
from tui.screens.job_screen import JobScreen, eta_text
from tui.widgets.nav import NavBar
from tui.widgets.scores import LiveScores, ScoresTable, fill_scores, paired_text, run_prompt
from tui.widgets.tabs import show_tab
from tui.widgets.ticks import TickList

# Every built-in set and split (`coopcode problems list`): HumanEval's, and compose's, whose
# problems carry the contract for aux that the `contract` scheme needs.
SPLITS = tuple(name for name, _ in BUILT_IN_SETS)
# The form shows BenchConfig's `form=N` fields; it proposes a run sized for a CPU (10
# samples: minutes with the 0.5B model on 2 cores, not the CLI's hour), the estimate beside
# it saying how long before it starts.
PRESETS: dict[str, Any] = {"ks": (1, 2), "n": 2, "limit": 5}
NO_ADAPTER = "none"
LOADED = "loaded"  # the agents as loaded on F2
AGENT_CHOICES = [("as loaded (F2)", LOADED), ("none: the base", NO_ADAPTER)]


class BenchScreen(JobScreen):
    job_name = "bench"
    # Arriving, the focus is on a drop-down, not in a text field: `/` and `?` then work
    # at once (in a field they are text).
    AUTO_FOCUS = "#split"
    BINDINGS = [
        Binding("ctrl+r", "start", "Start", id="bench.start", priority=True),
        Binding("escape", "stop", "Stop", id="bench.stop"),
        Binding("ctrl+l", "refresh", "Rescan", id="bench.refresh"),
        Binding("f7", "show_tab('tab-live')", "Live", id="bench.tab-live", show=False,
                priority=True),
        Binding("f8", "show_tab('tab-runs')", "Runs", id="bench.tab-runs", show=False,
                priority=True),
        Binding("f9", "samples", "Samples", id="bench.samples", priority=True),
    ]
    ACTION_HELP = {
        "show_tab('tab-live')": "The Live tab: the running bench's progress and scores",
        "show_tab('tab-runs')": "The Runs tab: earlier benches side by side, paired",
        "samples": "One run sample by sample: helper, main, the program (who wrote each "
                   "line) and the verdict (the run highlighted in Runs, else the latest)",
        "start": "Start a bench run (a child process; rerunning the same name resumes)",
        "stop": "Stop the bench (finished problems are kept)",
        "refresh": "Rescan runs/ for earlier benches",
    }

    def __init__(self) -> None:
        super().__init__()
        self.live: LiveScores | None = None
        self.runs: dict[str, BenchRun] = {}
        self.out_name = ""
        self.inflight: InFlight | None = None
        self.started_total: int | None = None  # the running bench's Started total, once seen
        self._split_sizes: dict[str, int] = {}
        self.defaults_for: tuple[str | None, str | None] | None = None  # (`_follow_agents`)

    def compose(self) -> ComposeResult:
        yield NavBar("bench")
        with Horizontal(id="bench-body"):
            with VerticalScroll(id="bench-form", classes="form"):
                yield from form_fields(BenchConfig, PRESETS)
                with Horizontal(classes="field"):
                    yield Label("problems", classes="field-label")
                    yield Select([(s, s) for s in SPLITS], value=SPLITS[0],
                                 allow_blank=False, compact=True, id="split")
                # The agents benched: as loaded on F2 (the default: what Collaborate runs),
                # none, or a trained run; their names in full on the line under it.
                with Horizontal(classes="field"):
                    yield Label("agents", classes="field-label")
                    yield Select(AGENT_CHOICES, value=LOADED, allow_blank=False, compact=True,
                                 id="agents")
                yield Static("", id="agents-note")
                with Horizontal(classes="field"):
                    yield Label("out", classes="field-label")
                    yield Input(time.strftime("tui-%m%d-%H%M"), compact=True, id="out-name")
                yield TickList(*[(s, s, s in BenchConfig().schemes) for s in scheme_names()],
                               id="schemes")
                yield from self.release_box()
                with Horizontal(classes="buttons"):
                    yield Button("Start", id="start", variant="success", compact=True)
                    yield Button("Stop", id="stop", variant="error", compact=True, disabled=True)
            with TabbedContent(initial="tab-live", id="bench-tabs"):
                with TabPane("F7 Live", id="tab-live"):
                    with Horizontal(id="bench-progress-row"):
                        yield ProgressBar(total=100, show_eta=False, id="bench-progress")
                        yield Label("idle", id="bench-rate")
                    # Before a run: its estimate; during it: the tokens of the samples in flight.
                    yield Label("", id="bench-detail")
                    yield ScoresTable(id="live-table")
                    yield Static(id="bench-patterns")
                    yield RichLog(id="log", wrap=True, markup=False, min_width=20)
                with TabPane("F8 Runs", id="tab-runs"):
                    with Horizontal(id="runs-row"):
                        yield TickList(id="runs")
                        with Vertical(id="compare-column"):
                            yield ScoresTable(id="compare")
                            yield Static(id="paired")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one("#schemes", SelectionList).border_title = "schemes"
        self.log_view.border_title = "log"
        self.query_one("#runs", SelectionList).border_title = "earlier runs"
        self.query_one("#compare", DataTable).border_title = "side by side"
        self.query_one("#paired", Static).border_title = "paired: B − A over shared problems"
        self.query_one("#bench-patterns", Static).display = False
        fill_scores(self.query_one("#live-table", ScoresTable), list(PRESETS["ks"]), [])
        self.action_refresh()
        self.set_interval(0.5, self._show_inflight)
        self.set_interval(2.0, self._show_estimate)  # the memory line moves as things load
        self.call_after_refresh(self._show_estimate)
        self.watch(self.app, "agents_state", lambda _s: self.propose_release(), init=True)
        self.watch(self.app, "agents_state", self._agents_changed, init=True)

    # -- the agents: as Collaborate has them, and their run's settings ----------------------

    def _agents_changed(self, state: str) -> None:
        if state in ("ready", "idle", "error"):
            self._follow_agents()

    def chosen_adapters(self) -> tuple[str | None, str | None]:
        """(helper, main) as the agents field says: the loaded ones, none, or a run's."""
        value = str(self.query_one("#agents", Select).value)
        if value == LOADED:
            from coopcode import resolve_adapter_path

            spec = self.app.session.spec  # type: ignore[attr-defined]
            return (resolve_adapter_path(spec.helper_adapter, "helper"),
                    resolve_adapter_path(spec.main_adapter, "main"))
        if value == NO_ADAPTER:
            return None, None
        from coopcode import choose_adapters

        chosen = choose_adapters(value, None, None)
        return chosen.helper, chosen.main

    def _follow_agents(self) -> None:
        """The form starts from what Collaborate has loaded: the run's scheme ticked, its
        held-out split and its reward, so Ctrl+R benches the adapters loaded on F2 as they
        were trained. Taken again only when other adapters are chosen."""
        from coopcode import run_defaults, trained_with

        try:
            adapters = self.chosen_adapters()
        except UserError:
            adapters = (None, None)
        self._show_agents(adapters)
        if adapters == self.defaults_for or self.busy:
            return
        self.defaults_for = adapters
        trained = trained_with(*adapters)
        defaults = run_defaults(trained, set(), problems=True)
        if trained is None:
            return
        schemes = self.query_one("#schemes", SelectionList)
        if defaults.scheme in scheme_names():
            schemes.deselect_all()
            schemes.select(defaults.scheme)
            schemes.highlighted = scheme_names().index(defaults.scheme)  # in view
        if defaults.problems in SPLITS:
            self.query_one("#split", Select).value = defaults.problems
        reward = self.query_one("#reward", Select)
        reward.value = defaults.reward or Select.NULL
        if defaults.said:
            self.notify(f"{trained.run}: {', '.join(p for p in (defaults.scheme, defaults.problems, defaults.reward) if p)} "
                        "(as trained; change them here)", title="bench", timeout=6)

    def _show_agents(self, adapters: tuple[str | None, str | None]) -> None:
        """The agents benched, by name, in full under the field."""
        from tui.widgets.nav import adapters_name

        self.query_one("#agents-note", Static).update(
            adapters_name(*adapters) or "the base model alone (no adapters)")

    @on(Select.Changed, "#agents")
    def _agents_chosen(self) -> None:
        self._follow_agents()

    # -- before a run: how long it will take ------------------------------------------------

    def planned_samples(self) -> int | None:
        """n x problems x schemes for the form as it is (None while a field is not a number)."""
        from coopcode import load_problems

        try:
            values = form_values(self, BenchConfig)
        except ValueError:
            return None
        split = str(self.query_one("#split", Select).value)
        if split not in self._split_sizes:
            self._split_sizes[split] = len(load_problems(split))
        problems = self._split_sizes[split]
        if values.get("limit"):
            problems = min(problems, int(values["limit"]))
        schemes = len(self.query_one("#schemes", SelectionList).selected)
        return int(values["n"]) * problems * schemes

    def sample_seconds(self) -> SampleSeconds | None:
        """Seconds per sample measured here: the last bench of this model, else this
        session's Collaborate run (one sample alone, an upper bound)."""
        from coopcode import DEFAULT_MODEL

        app: Any = self.app
        agents = app.session.agents
        model = agents.engine.model_name if agents is not None else (
            app.session.spec.model or DEFAULT_MODEL)
        found = bench_seconds_per_sample(model)
        alone = getattr(app, "sample_seconds", None)
        if found is None and alone:
            found = SampleSeconds(alone, "one sample alone on F3; a bench batches, so likely less")
        return found

    @on(SelectionList.SelectedChanged, "#schemes")
    def _offer_contracts(self) -> None:
        """A scheme that needs the problem's contract, ticked on HumanEval: the matching
        compose split instead (said in a notification), the one set whose problems have one."""
        split = self.query_one("#split", Select)
        ticked = self.query_one("#schemes", SelectionList).selected
        if not str(split.value).startswith("humaneval") or not any(map(needs_contract, ticked)):
            return
        part = str(split.value).partition(":")[2]
        compose = {"fit": "train"}.get(part, part)
        split.value = f"compose:{compose}" if f"compose:{compose}" in SPLITS else "compose:test"
        self.notify(f"problems: {split.value} (the contract scheme needs problems with a "
                    "contract for aux)", title="bench")

    @on(Input.Changed)
    @on(Select.Changed, "#split")
    @on(SelectionList.SelectedChanged, "#schemes")
    def _show_estimate(self) -> None:
        if self.busy:
            return
        samples = self.planned_samples()
        detail = self.query_one("#bench-detail", Label)
        estimate = "" if samples is None else estimate_text(samples, self.sample_seconds())
        detail.update(f"{estimate}\n{self.memory_text()}".strip())

    # -- during a run: the samples in flight -------------------------------------------------

    def absorb(self, event: Event) -> bool:
        if isinstance(event, TokenDelta):
            if self.inflight is not None:
                self.inflight.add(event)
            return True
        return False

    def _show_inflight(self) -> None:
        if self.busy and self.inflight is not None:
            self.query_one("#bench-detail", Label).update(self.inflight.summary())

    def on_screen_resume(self) -> None:
        self.action_refresh()  # a run may have saved adapters or results since the last visit

    def action_refresh(self) -> None:
        select = self.query_one("#agents", Select)
        current = select.value
        options = AGENT_CHOICES + [(r.name, str(r.path)) for r in list_checkpoints() if r.adapters]
        select.set_options(options)
        select.value = current if any(v == current for _, v in options) else LOADED
        self.runs = {str(r.path): r for r in list_bench_runs()}
        runs = self.query_one("#runs", SelectionList)
        chosen = set(runs.selected)
        runs.clear_options()
        for key, run in self.runs.items():
            runs.add_option((run_prompt(run), key, key in chosen))
        self._compare()

    def action_show_tab(self, pane: str) -> None:
        show_tab(self.query_one("#bench-tabs", TabbedContent), pane)

    def action_samples(self) -> None:
        """Drill down: the run highlighted in the Runs list, else this screen's last run."""
        from tui.screens.samples import SamplesScreen

        runs = self.query_one("#runs", TickList)
        run: Path | None = None
        if self.query_one("#bench-tabs", TabbedContent).active == "tab-runs" \
                and runs.highlighted is not None:
            run = Path(str(runs.get_option_at_index(runs.highlighted).value))
        elif self.out_name and (Path("runs") / self.out_name).is_dir():
            run = Path("runs") / self.out_name
        elif self.runs:
            run = next(iter(self.runs.values())).path  # the newest
        if run is None:
            self.notify("No bench run yet: Ctrl+R starts one.", severity="warning")
            return
        self.app.push_screen(SamplesScreen(run))

    @on(SelectionList.SelectedChanged, "#runs")
    def _compare(self) -> None:
        chosen = [self.runs[k] for k in self.query_one("#runs", SelectionList).selected if k in self.runs]
        ks = sorted({k for run in chosen for k in run.ks}) or [1]
        rows = [(f"{run.name}: {r.get('method', '?')}", r) for run in chosen for r in run.rows]
        fill_scores(self.query_one("#compare", ScoresTable), ks, rows)
        self.query_one("#paired", Static).update(paired_text([str(run.path) for run in chosen]))

    def _show_patterns(self, rows: list[dict[str, Any]]) -> None:
        """After a run: how main used the helper, per method (the summary's `cooperation`)."""
        from coopcode import pattern_line

        shown = [r for r in rows if r.get("cooperation")]
        patterns = self.query_one("#bench-patterns", Static)
        patterns.display = bool(shown)
        text = Text()
        for r in shown:
            text.append(f"{r.get('method', '?')}: ", style="bold")
            line = pattern_line(r)
            if "both_needed_rate" in r and r["both_needed_rate"] is None:
                line += " · both needed: no passing sample to measure"  # said, not left out
            text.append(line + "\n")
        text.rstrip()
        patterns.update(text)

    def build_argv(self) -> tuple[list[str], list[int], int]:
        """The `coopcode bench` command for the form, its k list and n (ValueError names a bad
        field, UserError a bad value: the check `coopcode bench` itself runs)."""
        session = self.app.session  # type: ignore[attr-defined]
        values = form_values(self, BenchConfig)
        # The split and the schemes have widgets of their own.
        values["problems"] = str(self.query_one("#split", Select).value)
        values["schemes"] = tuple(self.query_one("#schemes", SelectionList).selected)
        config = BenchConfig(**values)
        config.validate()
        if any(map(needs_contract, config.schemes)):
            from coopcode import check_problems_fit, load_problems

            check_problems_fit(list(config.schemes), load_problems(config.problems),
                               remedy="choose a compose split, or the plan scheme")
        out = self.query_one("#out-name", Input).value.strip()
        if not out or "/" in out:
            raise ValueError("out: give a folder name for runs/<out>")
        self.out_name = out
        args = ["bench", "--events", "jsonl", *option_args(config, values), "--out", f"runs/{out}",
                "--sandbox", session.spec.sandbox]
        if session.spec.model:
            args += ["--model", session.spec.model]
        args += session.spec.engine_args  # the engine the TUI was started with, and its options
        for role, path in zip(("helper", "main"), self.chosen_adapters(), strict=True):
            if path:  # each named: the child takes no run's defaults the form does not show
                args += [f"--{role}-adapter", path]
        return coopcode_argv(*args), list(config.ks), config.n

    @on(Button.Pressed, "#start")
    def action_start(self) -> None:
        if self.busy:
            self.notify("A bench is already running (Esc stops it).", severity="warning")
            return
        try:
            argv, ks, n = self.build_argv()
        except (ValueError, UserError) as e:
            self.notify(str(e), severity="error", title="bench config")
            return
        self.live = LiveScores(ks, n)
        self.inflight = InFlight(int(form_values(self, BenchConfig)["max_new_tokens"]))
        fill_scores(self.query_one("#live-table", ScoresTable), ks, [])
        self.query_one("#bench-patterns", Static).display = False
        bar = self.query_one("#bench-progress", ProgressBar)
        bar.update(total=None, progress=0)
        self.query_one("#bench-rate", Label).update("starting · loading the model…")
        self.started_total = None
        show_tab(self.query_one("#bench-tabs", TabbedContent), "tab-live")
        self.start_job(argv)

    @on(Button.Pressed, "#stop")
    def _stop_pressed(self) -> None:
        self.action_stop()

    def job_ended(self, returncode: int | None) -> None:
        super().job_ended(returncode)
        if self.inflight is not None and self.inflight.total:
            self.query_one("#bench-detail", Label).update(
                f"{self.inflight.total:,} tokens written in this session")
        if returncode != 0:
            self.query_one("#bench-rate", Label).update("stopped" if self.job and self.job.stopping
                                                        else f"failed (exit {returncode})")
        self.action_refresh()

    def handle_event(self, event: Event) -> None:
        bar = self.query_one("#bench-progress", ProgressBar)
        if isinstance(event, Started):
            self.started_total = event.total
            bar.update(total=max(event.total, 1), progress=event.meta.get("resumed", 0))
            self.query_one("#bench-rate", Label).update(f"0/{event.total} samples")
        elif isinstance(event, Progress):
            bar.update(total=max(event.total, 1), progress=event.done)
            self.query_one("#bench-rate", Label).update(
                f"{event.done}/{event.total} · {event.samples_per_s:.2f} samples/s · "
                f"ETA {eta_text(event.eta_s)}")
            if self.live is not None:
                fill_scores(self.query_one("#live-table", ScoresTable), self.live.ks,
                            [(r["method"], r) for r in self.live.rows()])
        elif isinstance(event, VerdictReady) and self.live is not None:
            self.live.add(event)
            if self.inflight is not None:
                self.inflight.done(event.task_id, event.sample)
        elif isinstance(event, Log) and event.level != "warning" and self.started_total is None:
            # What the child says while it loads (its first event is minutes away on a CPU).
            self.query_one("#bench-rate", Label).update(f"starting · {event.message}")
        elif isinstance(event, Finished):
            summary = event.summary
            ks = [int(k) for k in summary.get("ks", [])] or (self.live.ks if self.live else [1])
            fill_scores(self.query_one("#live-table", ScoresTable), ks,
                        [(r.get("method", "?"), r) for r in summary.get("rows", [])])
            self._show_patterns(summary.get("rows", []))
            self.query_one("#bench-rate", Label).update(
                f"done · {summary.get('meta', {}).get('wall_seconds', '?')} s")
