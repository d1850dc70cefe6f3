"""The coopcode Textual app: four screens (modes) over one session of agents and sandbox.

The first frame comes before anything heavy: the model and the sandbox load on worker
threads after mount, with their progress in the top bar and on the Agents screen.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from textual import events, work
from textual.actions import SkipAction
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.widgets import TextArea

from tui.session import AgentsSpec, Session

THEMES = {"dark": "textual-dark", "light": "textual-light"}


class CoopApp(App[None]):
    """`coopcode tui`."""

    TITLE = "coopcode"
    # Screens get -narrow below 100 columns: layouts that stack what sits side by side
    # there, so no figure is cut (app.tcss).
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses elsewhere find it
    # Screens are imported when first shown: start-up pays only for the first one.
    MODES = {
        "agents": lambda: _screen("agents", "AgentsScreen"),
        "collaborate": lambda: _screen("collaborate", "CollaborateScreen"),
        "train": lambda: _screen("train", "TrainScreen"),
        "bench": lambda: _screen("bench", "BenchScreen"),
    }
    BINDINGS = [
        Binding("f1", "help", "Help", id="app.help", priority=True),
        # Not a priority: a `?` typed into a field or an editor is text.
        Binding("question_mark", "keys", "Keys", id="app.keys", key_display="?"),
        Binding("f2", "switch_mode('agents')", "Agents", id="app.agents", show=False, priority=True),
        Binding("f3", "switch_mode('collaborate')", "Collaborate", id="app.collaborate",
                show=False, priority=True),
        Binding("f4", "switch_mode('train')", "Train", id="app.train", show=False, priority=True),
        Binding("f5", "switch_mode('bench')", "Bench", id="app.bench", show=False, priority=True),
        # Not a priority: a `/` typed into a field or an editor is text.
        Binding("slash", "search", "Search", id="app.search", key_display="/", show=False),
        Binding("ctrl+t", "toggle_theme", "Theme", id="app.theme", priority=True),
        Binding("ctrl+q", "request_quit", "Quit", id="app.quit", show=False, priority=True),
        Binding("ctrl+p", "command_palette", "Commands", id="app.palette", show=False, priority=True),
        # Tab moves the focus before the keys typed after it are handed out (see action).
        Binding("tab", "next_field", "Next field", id="app.next-field", show=False, priority=True),
        Binding("shift+tab", "previous_field", "Previous field", id="app.previous-field",
                show=False, priority=True),
    ]

    ACTION_HELP = {
        "help": "what each screen is for, and its keys",
        "keys": "this list: every key of the screen you are on",
        "switch_mode('agents')": "the Agents screen: base model and adapters",
        "switch_mode('collaborate')": "the Collaborate screen: run the pair on a problem",
        "switch_mode('train')": "the Train screen: MAGRPO/GRPO runs",
        "switch_mode('bench')": "the Bench screen: pass@k, earlier runs",
        "search": "search the problems (Collaborate's search box), from any screen",
        "toggle_theme": "light / dark theme",
        "request_quit": "quit (asks whether to stop or detach running jobs)",
        "command_palette": "command palette: every action by name",
        "next_field": "next field (in the program editor Tab indents: Esc leaves it)",
        "previous_field": "previous field",
    }

    status_line: reactive[str] = reactive("")
    agents_state: reactive[str] = reactive("idle")  # idle, loading, ready, error
    load_message: reactive[str] = reactive("", always_update=True)

    def __init__(
        self,
        session: Session | None = None,
        *,
        mode: str = "collaborate",
        theme: str = "dark",
        problem: str | None = None,
        autoload: bool = True,
    ) -> None:
        super().__init__()
        self.session = session or Session()
        self.start_mode = mode
        self.initial_problem = problem
        self.autoload = autoload
        self.theme = THEMES.get(theme, theme)
        self.sandbox_state = "opening"
        self.sandbox_asked = False
        self.agents_error = ""
        self.loading_spec: AgentsSpec | None = None  # what the load under way is loading
        self.next_spec: AgentsSpec | None = None  # chosen during that load: it loads next
        self.queued_run: Callable[[], None] | None = None  # a run asked for before the agents were ready
        self.sample_seconds: float | None = None  # one Collaborate sample's time (bench estimate)
        self.released_for = ""  # the job the model was freed for (tui.memory)

    def on_mount(self) -> None:
        self.switch_mode(self.start_mode)
        self._update_status()
        stamp = os.environ.get("COOPCODE_TUI_FIRST_FRAME")
        if stamp:  # benchmarks/tui_startup.py: when the first frame was on screen
            self.call_after_refresh(lambda: Path(stamp).write_text(
                f"{time.time():.4f} {time.process_time():.4f}\n"))
        if self.autoload:
            # After the first frame: loading must never delay or freeze the interface.
            self.call_after_refresh(self.load_agents, self.session.spec)
            self.call_after_refresh(self.open_sandbox)

    # -- loading ----------------------------------------------------------------------------

    def load_agents(self, spec: AgentsSpec) -> None:
        """Load `spec`'s agents on a worker; asked for during a load, they load right after it."""
        if self.agents_state == "loading":
            # One load at a time (they share the engine); the latest choice is the one kept.
            same = self.loading_spec is not None and spec.same_agents(self.loading_spec)
            self.next_spec = None if same else spec
            return
        self._start_load(spec)

    def _start_load(self, spec: AgentsSpec) -> None:
        self.loading_spec = spec
        self.agents_state = "loading"
        self.agents_error = ""
        self._update_status()
        self._load_worker(spec)

    def queue_run(self, start: Callable[[], None]) -> bool:
        """Call `start` once the agents are loaded, loading the session's if nothing is loading.

        One run waits at a time: a later one replaces it. False when one was already waiting.
        """
        if self.agents_state != "loading":
            self.load_agents(self.session.spec)
        self.open_sandbox()  # the run's tests need it
        first = self.queued_run is None
        self.queued_run = start
        self._update_status()
        return first

    def cancel_queued_run(self) -> bool:
        """Forget the run waiting for the agents; False when there was none."""
        if self.queued_run is None:
            return False
        self.queued_run = None
        self._update_status()
        return True

    @work(thread=True, exclusive=True, group="load")
    def _load_worker(self, spec: AgentsSpec) -> None:
        def progress(message: str) -> None:
            self.call_from_thread(self._progress, message)

        try:
            self.session.load_agents(spec, progress)
        except Exception as e:  # noqa: BLE001 - one line to the user, the app lives on
            text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            self.call_from_thread(self._loaded, text)
        else:
            self.call_from_thread(self._loaded, "")

    def _progress(self, message: str) -> None:
        self.load_message = message

    def _loaded(self, error: str) -> None:
        if self.next_spec is not None:
            # Other agents were chosen during this load: those are the ones the user wants.
            if error:
                self.notify(error, severity="error", title="loading the agents", timeout=10)
            spec, self.next_spec = self.next_spec, None
            self._start_load(spec)
            return
        self.loading_spec = None
        self.agents_error = error
        self.agents_state = "error" if error else "ready"
        self.load_message = f"error: {error}" if error else "agents ready"
        start, self.queued_run = self.queued_run, None
        if error:
            dropped = "\nThe queued run was dropped." if start else ""
            self.notify(error + dropped, severity="error", title="loading the agents", timeout=10)
        self._update_status()
        if start is not None and not error:
            start()

    def release_agents(self, job: str) -> bool:
        """Free the loaded model while `job` (a child with a model of its own) runs; False
        when nothing was freed (none loaded, or a load under way)."""
        if self.agents_state == "loading" or not self.session.release_agents():
            return False
        self.agents_state, self.agents_error = "idle", ""
        self.load_message = f"model freed while the {job} runs: it loads again when it ends"
        self.released_for = job
        self._update_status()
        return True

    def restore_agents(self) -> None:
        """The job that freed the model ended: load the agents again."""
        self.released_for = ""
        if self.agents_state == "idle":
            self.load_agents(self.session.spec)

    def open_sandbox(self) -> None:
        """Open the sandbox on a worker, once."""
        if not self.sandbox_asked:
            self.sandbox_asked = True
            self._open_sandbox()

    @work(thread=True, exclusive=True, group="sandbox-open")
    def _open_sandbox(self) -> None:
        def warn(message: str) -> None:
            self.call_from_thread(self.notify, message, severity="warning", title="sandbox")

        try:
            sandbox = self.session.open_sandbox(warn)
        except Exception as e:  # noqa: BLE001
            self.sandbox_state = "unavailable"
            self.call_from_thread(self.notify, f"sandbox unavailable: {e}", severity="error",
                                  title="sandbox", timeout=10)
        else:
            self.sandbox_state = getattr(sandbox, "name", "ready")
        self.call_from_thread(self._update_status)

    def _update_status(self) -> None:
        agents = self.session.agents
        if self.agents_state == "ready" and agents is not None:
            from tui.widgets.nav import adapters_name

            model = agents.engine.model_name or "model"
            # One run's pair said once: `compose-magrpo-0.5b (helper+main)`.
            adapters = adapters_name(agents.helper_adapter[1] if agents.helper_adapter else None,
                                     agents.main_adapter[1] if agents.main_adapter else None)
            who = model.rstrip("/").split("/")[-1] + (f" + {adapters}" if adapters else "")
        elif self.agents_state == "loading":
            who = "run queued · loading agents…" if self.queued_run else "loading agents…"
        elif self.agents_state == "error":
            who = "agents: error (F2)"
        elif self.released_for:
            who = f"agents: freed for the {self.released_for}"
        else:
            who = "agents: not loaded (F2)"
        sandbox = self.sandbox_state if len(self.sandbox_state) < 14 else "unavailable"
        self.status_line = f"{who} · sandbox: {sandbox} "

    # -- actions ----------------------------------------------------------------------------

    def action_help(self) -> None:
        from tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_keys(self) -> None:
        from tui.screens.keys import KeysScreen

        if not isinstance(self.screen, ModalScreen):
            self.push_screen(KeysScreen(self.screen))

    async def action_search(self) -> None:
        """`/`: to Collaborate's search box, its Problem tab shown, from anywhere. Awaited,
        so the keys typed right after `/` reach the box, not the screen being left."""
        if isinstance(self.screen, ModalScreen):
            return  # a dialog or an overlay keeps its keys
        await self.switch_mode("collaborate")
        focus_search = getattr(self.screen, "focus_search", None)
        if focus_search is not None:
            focus_search(new=True)

    def action_next_field(self) -> None:
        """Tab, as a priority binding: Textual hands each key to the widget focused when the
        key reaches the app, and a screen binding would move the focus only once Tab came
        back up. On an interface lagging behind a model load, the keys typed after Tab would
        then go to the field being left. Here the focus moves as Tab arrives. An editor that
        indents with Tab keeps it."""
        focused = self.focused
        if isinstance(focused, TextArea) and focused.tab_behavior == "indent" \
                and not focused.read_only:
            raise SkipAction()
        self.screen.focus_next()

    def action_previous_field(self) -> None:
        self.screen.focus_previous()

    def action_toggle_theme(self) -> None:
        self.theme = THEMES["light"] if self.current_theme.dark else THEMES["dark"]

    def running_jobs(self) -> list[Any]:
        """Child jobs (train, bench) still running."""
        jobs = []
        for mode in ("train", "bench"):
            screen = self._screen_for_mode(mode)
            job = getattr(screen, "job", None)
            if job is not None and job.running:
                jobs.append(job)
        return jobs

    def _screen_for_mode(self, mode: str) -> Screen[Any] | None:
        try:
            stack = self.get_screen_stack(mode)
        except KeyError:  # a mode never switched to has no screen yet
            return None
        return stack[0] if stack else None

    def action_request_quit(self) -> None:
        jobs = self.running_jobs()
        if not jobs:
            self.exit()
            return
        from tui.screens.dialogs import QuitDialog

        def decide(choice: str | None) -> None:
            if choice == "stop":
                self.notify("Stopping the running jobs…")
                self._stop_and_exit(jobs)
            elif choice == "detach":
                for job in jobs:
                    job.detach()
                self.exit(message=_detach_message(jobs))

        self.push_screen(QuitDialog([j.name for j in jobs]), decide)

    @work(thread=True, group="quit")
    def _stop_and_exit(self, jobs: list[Any]) -> None:
        for job in jobs:
            job.stop()
        self.call_from_thread(self.exit)

    def on_key(self, event: events.Key) -> None:
        """Runs before Textual's own key handling (the app's bindings): a key the dialog on
        top says was not meant for it goes no further (`DecisionDialog.drops_key`)."""
        drops_key = getattr(self.screen, "drops_key", None)
        if drops_key is not None and drops_key(event):
            event.prevent_default()
            event.stop()

    def on_unmount(self) -> None:
        for mode in ("collaborate",):
            run = getattr(self._screen_for_mode(mode), "run", None)
            if run is not None:
                run.cancel_event.set()  # a generation still writing stops with the app

    # -- command palette --------------------------------------------------------------------

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Every main action by name: the screens, and the current screen's own actions."""
        yield from super().get_system_commands(screen)
        for mode, title in (("agents", "Agents"), ("collaborate", "Collaborate"),
                            ("train", "Train"), ("bench", "Bench")):
            yield SystemCommand(f"Go to {title}", f"Switch to the {title} screen",
                                lambda m=mode: self.switch_mode(m))
        yield SystemCommand("Search problems (/)", "Collaborate's search box: HumanEval and "
                            "compose, by id, name, words of the prompt or set (compose:test)",
                            lambda: self.run_action("search"))
        yield SystemCommand("Help", "Keys and screens", self.action_help)
        yield SystemCommand("Toggle light/dark", "Switch between the light and dark theme",
                            self.action_toggle_theme)
        helps: dict[str, str] = getattr(screen, "ACTION_HELP", {})
        for binding in getattr(screen, "BINDINGS", []):
            if not isinstance(binding, Binding):
                continue
            action = binding.action
            yield SystemCommand(f"{binding.description} ({binding.key})", helps.get(action, ""),
                                lambda s=screen, a=action: self.call_later(s.run_action, a))


def _screen(module: str, name: str) -> Screen[Any]:
    import importlib

    cls = getattr(importlib.import_module(f"tui.screens.{module}"), name)
    return cls()  # type: ignore[no-any-return]


def _detach_message(jobs: list[Any]) -> str:
    lines = [f"{j.name} (pid {j.pid}) keeps running; events: {j.events_path}" for j in jobs]
    return "\n".join(lines)
