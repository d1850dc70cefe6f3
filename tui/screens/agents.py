"""Agents: the base model (shared) and each agent's adapter, loaded without freezing the UI."""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Button, Footer, Input, Label, ProgressBar, RichLog, Select, Static

from tui.runs import CheckpointInfo, describe_checkpoint, list_checkpoints
from tui.session import AgentsSpec
from tui.widgets.nav import NavBar

NO_ADAPTER = "none"


class AgentsScreen(Screen[None]):
    BINDINGS = [
        Binding("ctrl+r", "load", "Load", id="agents.load", priority=True),
        Binding("ctrl+l", "refresh", "Rescan", id="agents.refresh"),
    ]
    ACTION_HELP = {
        "load": "Load the base model and the agents' adapters",
        "refresh": "Look for new checkpoint runs",
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
            with Vertical(id="agents-form", classes="form"):
                yield Label("Base model · loaded once, shared by both agents", classes="section")
                yield Select(catalog, value=spec.model if spec.model in CATALOG else DEFAULT_MODEL,
                             allow_blank=False, compact=True, id="model")
                yield Input(custom, placeholder="or a Hugging Face id / local folder",
                            compact=True, id="model-other")
                # The adapter given on the command line is the choice shown, found or not
                # (a path that failed to load stays in view with why).
                for role, title in (("helper", "Helper adapter (writes aux)"),
                                    ("main", "Main adapter (writes the entry point)")):
                    given = getattr(spec, f"{role}_adapter") or NO_ADAPTER
                    options = [("none", NO_ADAPTER)] + ([(given, given)] if given != NO_ADAPTER else [])
                    yield Label(title, classes="section")
                    yield Select(options, value=given, allow_blank=False, compact=True,
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

    def action_refresh(self) -> None:
        """Rescan checkpoints/ for runs holding adapters."""
        spec = self.app.session.spec  # type: ignore[attr-defined]
        self.runs = {str(r.path): r for r in list_checkpoints()}
        for role, given in (("helper", spec.helper_adapter), ("main", spec.main_adapter)):
            select = self.query_one(f"#{role}-adapter", Select)
            current = select.value if select.value not in (Select.NULL, None) else (given or NO_ADAPTER)
            options = [("none (the bare base model)", NO_ADAPTER)]
            options += [(f"{r.name} · {describe_checkpoint(r)}", key)
                        for key, r in self.runs.items() if role in r.adapters]
            if current != NO_ADAPTER and all(v != current for _, v in options):
                options.append((str(current), str(current)))  # given on the command line
            select.set_options(options)
            select.value = current
            self._show_manifest(role, str(current))

    @on(Select.Changed, "#helper-adapter")
    def _helper_changed(self, event: Select.Changed) -> None:
        self._show_manifest("helper", str(event.value))

    @on(Select.Changed, "#main-adapter")
    def _main_changed(self, event: Select.Changed) -> None:
        self._show_manifest("main", str(event.value))

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


def _adapter_problem(role: str, value: str) -> str:
    """Why the adapter `value` cannot be loaded (the check loading runs), or ''."""
    from coopcode import UserError, check_adapter, resolve_adapter_path

    try:
        check_adapter(resolve_adapter_path(value, role) or value, "", "")
    except UserError as e:
        return f"✗ {e}"
    return ""
