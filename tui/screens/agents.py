"""Agents: the base model (shared) and each agent's adapter, loaded without freezing the UI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Footer, Input, Label, ProgressBar, RichLog, Select, Static

from tui.runs import CheckpointInfo, describe_checkpoint, list_checkpoints
from tui.session import AgentsSpec
from tui.widgets.nav import NavBar
from tui.widgets.options_select import OptionsSelect

NO_ADAPTER = "none"
NO_RUN_LABEL = "none: each agent's below"


class AgentsScreen(Screen[None]):
    BINDINGS = [
        Binding("ctrl+r", "load", "Load", id="agents.load", priority=True),
        Binding("ctrl+l", "rescan", "Rescan", id="agents.refresh"),
    ]
    ACTION_HELP = {
        "load": "Load the base model and the agents' adapters",
        "rescan": "Look for trained runs again (./checkpoints, $COOPCODE_CHECKPOINTS, the "
                  "cache) and say what was found where",
    }

    def __init__(self) -> None:
        super().__init__()
        self.runs: dict[str, CheckpointInfo] = {}

    def compose(self) -> ComposeResult:
        from coopcode import CATALOG, DEFAULT_MODEL, is_ready

        spec = self.app.session.spec  # type: ignore[attr-defined]
        catalog = [(f"{m.name}{'' if is_ready(m) else ' (not prepared)'}", m.name)
                   for m in CATALOG.values()]
        custom = spec.model if spec.model and spec.model not in CATALOG else ""
        yield NavBar("agents")
        with Horizontal(id="agents-body"):
            with VerticalScroll(id="agents-form", classes="form"):
                yield Label("Base model · loaded once, shared by both agents", classes="section")
                yield Select(catalog, value=spec.model if spec.model in CATALOG else DEFAULT_MODEL,
                             allow_blank=False, compact=True, id="model")
                yield Input(custom, placeholder="or a Hugging Face id / local folder",
                            compact=True, id="model-other")
                # A trained run (`--adapters`): a pair's helper and main, or one agent's.
                yield Label("Trained run · sets both agents' adapters", classes="section")
                yield OptionsSelect([(NO_RUN_LABEL, NO_ADAPTER)], value=NO_ADAPTER,
                                    allow_blank=False, compact=True, id="run")
                yield Input("", placeholder="or a run's name or folder (Enter)", compact=True,
                            id="run-other")
                yield Static("", id="runs-hint")
                # The adapter given on the command line is the choice shown, found or not
                # (a path that failed to load stays in view with why).
                for role, title in (("helper", "Helper adapter (writes aux)"),
                                    ("main", "Main adapter (writes the entry point)")):
                    given = getattr(spec, f"{role}_adapter") or NO_ADAPTER
                    options = [("none", NO_ADAPTER)] + ([(given, given)] if given != NO_ADAPTER else [])
                    yield Label(title, classes="section")
                    yield OptionsSelect(options, value=given, allow_blank=False, compact=True,
                                        id=f"{role}-adapter")
                    yield Static("", id=f"{role}-manifest", classes="manifest")
                yield Button("Load agents", id="load-button", variant="primary", compact=True)
            with Vertical(id="agents-status"):
                yield Label("", id="agents-state")
                yield ProgressBar(total=None, show_eta=False, id="load-progress")
                yield RichLog(id="load-log", wrap=True, markup=False, min_width=20)
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one("#load-log", RichLog).border_title = "loading"
        self.action_refresh()
        self.watch(self.app, "load_message", self._log_progress)
        self.watch(self.app, "agents_state", self._show_state)

    def on_screen_resume(self) -> None:
        self.action_refresh()  # a run may have saved adapters or results since the last visit

    def _log_progress(self, message: str) -> None:
        if message:
            self.query_one("#load-log", RichLog).write(message)

    def _show_state(self, state: str) -> None:
        app = self.app
        text = {
            "idle": "not loaded: Ctrl+R loads the agents",
            "loading": "loading… (the rest of the app stays usable)",
            "ready": "ready",
            "error": f"error: {getattr(app, 'agents_error', '')}",
        }.get(state, state)
        self.query_one("#agents-state", Label).update(f"Agents: {text}")
        self.query_one("#load-progress", ProgressBar).display = state == "loading"

    def action_refresh(self, said: bool = False) -> None:
        """Rescan the runs (./checkpoints, $COOPCODE_CHECKPOINTS, the cache) for adapters;
        `said`: a notification says what was found where (Ctrl+L)."""
        from coopcode import looked_in

        spec = self.app.session.spec  # type: ignore[attr-defined]
        self.runs = {str(r.path): r for r in list_checkpoints()}
        run_select = self.query_one("#run", OptionsSelect)
        current_run = run_select.value
        runs = [(f"{r.name} · {_kind(r)}", key) for key, r in self.runs.items()]
        options = [(NO_RUN_LABEL, NO_ADAPTER), *runs]
        if options != run_select.options:  # unchanged: no events, no churn
            run_select.set_options(options)
            run_select.value = current_run if any(v == current_run for _, v in runs) else NO_ADAPTER
        found = f"{len(self.runs)} run{'s' if len(self.runs) != 1 else ''}"
        self.query_one("#runs-hint", Static).update(f"{found} found in {looked_in()}")
        if said:
            self.notify(f"{found} in {looked_in()}", title="trained runs")
        for role, given in (("helper", spec.helper_adapter), ("main", spec.main_adapter)):
            select = self.query_one(f"#{role}-adapter", OptionsSelect)
            current = select.value if select.value not in (Select.NULL, None) else (given or NO_ADAPTER)
            current = _run_folder(str(current), role, self.runs)
            # One line each, the run's name and its reward (its step and score below it):
            # an option that wraps draws into the label under the drop-down.
            options = [("none (the bare base model)", NO_ADAPTER)]
            options += [(f"{r.name} · {r.reward_name}", key)
                        for key, r in self.runs.items() if role in r.adapters]
            if current != NO_ADAPTER and all(v != current for _, v in options):
                options.append((_path_label(str(current), role), str(current)))  # given as a path
            select.set_options(options)
            select.value = current
            self._show_manifest(role, str(current))
        self._sync_run()

    def _sync_run(self) -> None:
        """The run drop-down says which run the agents' adapters are, where they are one
        run's (both of a pair, or a single agent's main), else none."""
        chosen = {r: str(self.query_one(f"#{r}-adapter", Select).value) for r in ("helper", "main")}
        keys = set(chosen.values()) - {NO_ADAPTER}
        key = next(iter(keys)) if len(keys) == 1 else ""
        run = self.runs.get(key)
        matches = run is not None and {r for r, v in chosen.items() if v == key} == set(run.adapters)
        select = self.query_one("#run", Select)
        wanted = key if matches else NO_ADAPTER
        if select.value != wanted:
            select.value = wanted

    def action_rescan(self) -> None:
        self.action_refresh(said=True)

    @on(Select.Changed, "#run")
    def _run_chosen(self, event: Select.Changed) -> None:
        """A run sets both agents' drop-downs: its helper's and main's, or none for an agent
        it has no adapter for (a single agent's run: main alone)."""
        run = self.runs.get(str(event.value))
        if run is None:  # none: each agent's own choice below stays
            return
        for role in ("helper", "main"):
            select = self.query_one(f"#{role}-adapter", Select)
            wanted = str(event.value) if role in run.adapters else NO_ADAPTER
            if select.value != wanted:
                select.value = wanted

    @on(Input.Submitted, "#run-other")
    def _run_typed(self, event: Input.Submitted) -> None:
        """A run by name or folder, as `--adapters` takes it (found where it looks)."""
        from coopcode import UserError, choose_adapters

        given = event.value.strip()
        if not given:
            return
        try:
            chosen = choose_adapters(given, None, None)
        except UserError as e:
            self.notify(str(e), severity="error", title="trained run", timeout=10)
            return
        for role, path in (("helper", chosen.helper), ("main", chosen.main)):
            select = self.query_one(f"#{role}-adapter", OptionsSelect)
            value = NO_ADAPTER if path is None else _run_folder(str(path), role, self.runs)
            if value != NO_ADAPTER and all(v != value for _, v in select.options):
                select.set_options([*select.options, (_path_label(value, role), value)])
            select.value = value
        self.notify(f"{given}: Ctrl+R loads it", title="trained run")

    @on(Select.Changed, "#helper-adapter")
    def _helper_changed(self, event: Select.Changed) -> None:
        self._show_manifest("helper", str(event.value))
        self._sync_run()

    @on(Select.Changed, "#main-adapter")
    def _main_changed(self, event: Select.Changed) -> None:
        self._show_manifest("main", str(event.value))
        self._sync_run()

    def _show_manifest(self, role: str, value: str) -> None:
        run = self.runs.get(value)
        if value == NO_ADAPTER:
            text = "no adapter: the base model as released"
        elif run is None:
            text = _adapter_problem(role, value) or f"{value} (no manifest)"
        else:
            text = describe_checkpoint(run)
            if run.base != "?":
                text += f" · base {run.base}"
        self.query_one(f"#{role}-manifest", Static).update(text)

    def chosen_spec(self) -> AgentsSpec:
        spec: AgentsSpec = self.app.session.spec  # type: ignore[attr-defined]
        other = self.query_one("#model-other", Input).value.strip()
        model = other or str(self.query_one("#model", Select).value)
        adapters = [str(self.query_one(f"#{r}-adapter", Select).value) for r in ("helper", "main")]
        helper, main = (None if a == NO_ADAPTER else a for a in adapters)
        return spec.with_(model=model, helper_adapter=helper, main_adapter=main)

    @on(Button.Pressed, "#load-button")
    def action_load(self) -> None:
        app: Any = self.app
        spec = self.chosen_spec()
        if app.agents_state == "loading":
            if app.loading_spec is not None and spec.same_agents(app.loading_spec):
                self.notify("Already loading these agents.")
            else:
                self.notify("Queued: these agents load when the current load ends.")
            app.load_agents(spec)  # during a load it only notes what loads next
            return
        self.query_one("#load-log", RichLog).clear()
        app.load_agents(spec)


def _kind(run: CheckpointInfo) -> str:
    """`pair` or `one agent`: what loading the run gives (its reward and step are on the
    agents' lines below it)."""
    return "pair" if len(run.adapters) == 2 else "one agent" if run.adapters else "no adapters"


def _run_folder(value: str, role: str, runs: dict[str, CheckpointInfo]) -> str:
    """A run's `role/` folder (as `--adapters` resolves it) shown as the run it belongs to,
    so a pair given on the command line is the run in the list, not a bare path."""
    path = Path(value)
    if path.name == role and str(path.parent) in runs:
        return str(path.parent)
    for key in runs:
        if path.name == role and Path(key).resolve() == path.parent.resolve():
            return key
    return value


def _path_label(value: str, role: str) -> str:
    """A folder outside the list, as an option: `RUN/helper`, or the path cut from the
    middle (the whole path is on the line under the drop-down)."""
    from tui.widgets.fitted_table import middle_cut

    path = Path(value)
    if path.name == role and path.parent.name:
        return f"{path.parent.name}/{role}"
    return middle_cut(value, 36)


def _adapter_problem(role: str, value: str) -> str:
    """Why the adapter `value` cannot be loaded (the check loading runs), or ''."""
    from coopcode import UserError, check_adapter, resolve_adapter_path

    try:
        check_adapter(resolve_adapter_path(value, role) or value, "", "")
    except UserError as e:
        return f"✗ {e}"
    return ""
