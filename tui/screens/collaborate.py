"""Collaborate: pick a problem, watch the helper and main agents write, run the program.

A run is `coopcode.solve` on a worker thread, and Ctrl+G on an edited program is
`coopcode.judge` (solve's last step on its own); the events they emit (TokenDelta,
AttemptReady, VerdictReady, ...) come here as messages. Where the run is, and what it
produced, is `CollaborationRun`'s (tui.collaboration_run); this screen forwards the keys to
it and draws what it says.

Under the schemes with a contract for aux (`contract`, `plan`) the contract sits between the
helper's and main's panes: the problem's before the run, or main's own as it writes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.lazy import Lazy
from textual.screen import Screen
from textual.widgets import (
    Button,
    Footer,
    Input,
    Label,
    OptionList,
    Select,
    TabbedContent,
    TabPane,
    TextArea,
)

from coopcode import (
    AttemptReady,
    Failed,
    Problem,
    UserError,
    VerdictReady,
    check_problems_fit,
    get_scheme,
)
from tui.collaboration_run import CollaborationRun, RunOrder
from tui.messages import Cancelled, CoopEvent, SandboxDown, SandboxReran
from tui.prompt_problem import problem_from_prompt
from tui.session_sandbox import SessionSandbox
from tui.widgets.agent_pane import PaneState, style_code
from tui.widgets.agent_panes import AgentPanes
from tui.widgets.nav import NavBar
from tui.widgets.problem_list import ProblemList, load_listed_sets
from tui.widgets.program_view import ProgramView
from tui.widgets.results import TestsTable, VerdictSummary
from tui.widgets.run_settings import RunSettings
from tui.widgets.tabs import show_tab

FLUSH_EVERY = 1 / 10  # s; tokens are drawn in batches at most this often (see _flush_deltas)


class CollaborateScreen(Screen[None]):
    BINDINGS = [
        Binding("ctrl+r", "run", "Run", id="collab.run", priority=True),
        Binding("escape", "cancel", "Cancel", id="collab.cancel"),
        # Ctrl+G first: Ctrl+B is tmux's prefix and never arrives inside tmux.
        Binding("ctrl+g,ctrl+b", "sandbox", "Test", id="collab.sandbox", priority=True),
        Binding("ctrl+o", "open", "Open", id="collab.open", priority=True),
        Binding("ctrl+n", "new_prompt", "New", id="collab.new", priority=True),
        Binding("f6", "copy", "Copy", id="collab.copy", priority=True),
        Binding("ctrl+s", "save", "Save", id="collab.save", priority=True),
        Binding("f7", "show_tab('tab-problem')", "Problem", id="collab.tab-problem",
                show=False, priority=True),
        Binding("f8", "show_tab('tab-agents')", "Agents", id="collab.tab-agents",
                show=False, priority=True),
        Binding("f9", "show_tab('tab-program')", "Program", id="collab.tab-program",
                show=False, priority=True),
    ]
    ACTION_HELP = {
        "run": "Run the helper and main agents on the problem, then its tests "
               "(while they load: as soon as they are ready)",
        "cancel": "Cancel the generation, or the run waiting for the agents",
        "sandbox": "Run the (edited) program against the tests in the sandbox",
        "open": "Open a problem.py file",
        "new_prompt": "Type or paste a new problem prompt",
        "copy": "Copy the combined program to the clipboard",
        "save": "Save the combined program to a file",
        "show_tab('tab-problem')": "The Problem tab: the list and the prompt",
        "show_tab('tab-agents')": "The Agents tab: the agents' code as they write, aux's "
                                  "contract between",
        "show_tab('tab-program')": "The Program tab: the combined program, its tests, the verdict",
    }
    # Keys that are not bindings of this screen (the overlay `?` lists them too).
    EXTRA_KEYS = (
        ("type", "when the screen opens: search (the search box has the focus)"),
        ("type a letter", "in the problem list: search (the letters go to the search box)"),
        ("↑", "on the list's first problem: back to the search box"),
        ("Enter", "in the search box: to the list; in the list: pick the problem"),
        ("Tab / Esc", "in the prompt editor: leave it (the program editor: Esc; Tab indents)"),
    )

    def __init__(self) -> None:
        super().__init__()
        self.run = CollaborationRun()
        self.humaneval: list[Problem] = []  # HumanEval's problems, once loaded
        self.problem: Problem | None = None  # what was picked or opened
        self.problem_text = ""  # the editor text that `problem` came from

    def compose(self) -> ComposeResult:
        yield NavBar("collaborate")
        # One row where it fits; below 100 columns the problem's name on a row of its own
        # (with Run, docked right) and the settings, labels included, on the next (app.tcss).
        with Horizontal(id="toolbar"):
            yield Label("no problem", id="problem-label")
            yield Button("Run", id="run-button", compact=True, variant="primary")
            yield RunSettings(id="settings")
        with TabbedContent(initial="tab-problem", id="tabs"):

            with TabPane("F7 Problem", id="tab-problem"):
                with Horizontal():
                    with Vertical(id="browser"):
                        yield Input(placeholder="search HumanEval, compose", id="search",
                                    compact=True, select_on_focus=False)  # typed letters add up
                        yield ProblemList(id="problems")
                    # Tab leaves: a prompt is typed or pasted, rarely indented by hand.
                    prompt = TextArea.code_editor("", id="prompt", soft_wrap=True,
                                                  tab_behavior="focus")
                    prompt.border_title = "prompt · type or paste, or pick one"
                    yield prompt
            # The hidden tabs mount just after the first frame (Lazy): start-up pays only for
            # what is on screen.
            with TabPane("F8 Agents", id="tab-agents"):
                yield Lazy(AgentPanes(id="panes"))
            with TabPane("F9 Program", id="tab-program"):
                summary = VerdictSummary("[dim]Ctrl+R runs the agents[/]", id="summary")
                # The summary scrolls rather than cut the verdict short.
                box = VerticalScroll(summary, id="summary-box")
                yield Lazy(Vertical(ProgramView(id="program-row"),
                                    Horizontal(TestsTable(id="tests"), box, id="results"),
                                    id="program-pane"))
        yield Footer(compact=True, show_command_palette=False)

    @property
    def settings(self) -> RunSettings:
        return self.query_one(RunSettings)

    @property
    def program_view(self) -> ProgramView:
        return self.query_one(ProgramView)

    def on_mount(self) -> None:
        self.watch(self.app, "agents_state", self._agents_changed)
        self.call_after_refresh(self._follow_adapters)  # the ones given on the command line
        self.call_after_refresh(self.focus_search)  # typing searches from the first key
        self.set_interval(FLUSH_EVERY, self._flush_deltas)
        self.call_after_refresh(self._highlight_editors)
        self.call_after_refresh(self._show_scheme)
        self._load_problems()

    def _highlight_editors(self) -> None:
        # After the first frame: each highlight query takes ~0.1 s to compile.
        style_code(self.query_one("#prompt", TextArea))
        self.watch(self.app, "theme", self._editor_theme, init=False)

    def _editor_theme(self, _theme: str) -> None:
        for editor in self.query(TextArea):
            if editor.language is not None:
                style_code(editor)

    def _agents_changed(self, state: str) -> None:
        if state == "ready":
            self._follow_adapters()

    def _follow_adapters(self) -> None:
        spec = self.app.session.spec  # type: ignore[attr-defined]
        said = self.settings.follow(spec.helper_adapter, spec.main_adapter)
        if said:
            self.notify(said, title="adapters", timeout=6)

    # -- problems ---------------------------------------------------------------------------

    @work(thread=True, group="problems")
    def _load_problems(self) -> None:
        sets = load_listed_sets()
        self.app.call_from_thread(self._show_problems, sets)

    def _show_problems(self, sets: list[tuple[str, list[Problem]]]) -> None:
        listing = self.query_one("#problems", ProblemList)
        listing.set_problems(sets)
        listing.show_matching(self.query_one("#search", Input).value)
        self.humaneval = dict(sets).get("humaneval:all", [])
        wanted = getattr(self.app, "initial_problem", None)
        if wanted and self.problem is None:
            self.pick(wanted)

    def focus_search(self, new: bool = False) -> None:
        """The search box, on the Problem tab (where the screen opens, and `/` anywhere);
        `new`: its text selected, so what is typed next is a new search (`/`, as in less)."""
        show_tab(self.query_one("#tabs", TabbedContent), "tab-problem")
        search = self.query_one("#search", Input)
        search.focus()
        if new:
            search.select_all()

    @on(Input.Changed, "#search")
    def _search(self, event: Input.Changed) -> None:
        self.query_one("#problems", ProblemList).show_matching(event.value)

    @on(Input.Submitted, "#search")
    def _search_enter(self) -> None:
        self.query_one("#problems", OptionList).focus()

    @on(OptionList.OptionSelected, "#problems")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.pick(event.option.id)

    def pick(self, spec: str) -> None:
        """Show a problem: a task id of a listed set (HumanEval/0, compose/...) or a
        problem.py path."""
        try:
            listing = self.query_one("#problems", ProblemList)
            listed = listing.problem(spec)
            if listed is not None:
                self._set_problem(listed, listed.prompt)
                listing.highlight_problem(listed.task_id)  # in view: a compose one too
            elif spec.startswith(("HumanEval/", "compose/")) and not Path(spec).exists():
                raise UserError(f"{spec}: no such task (the list holds every HumanEval and "
                                "compose problem)")
            else:
                from coopcode import load_problem_file

                path = Path(spec).expanduser()
                problem = load_problem_file(path)
                self._set_problem(problem, path.read_text(encoding="utf-8"))
        except (UserError, OSError) as e:
            self.notify(str(e), severity="error", title="problem")

    def _set_problem(self, problem: Problem, text: str) -> None:
        self.problem, self.problem_text = problem, text
        self.query_one("#prompt", TextArea).load_text(text)
        self._show_problem_label()
        if not self.run.generating:
            self._show_contract(self.settings.chosen_scheme(), problem)

    def _show_problem_label(self, edited: bool = False) -> None:
        label = "no problem"
        if self.problem is not None:
            label = self.problem.task_id
            if not label.endswith("/" + self.problem.entry_point):  # compose/<entry point>
                label += f" · {self.problem.entry_point}"
            label += " (edited)" if edited else ""
        self.query_one("#problem-label", Label).update(label)

    @on(TextArea.Changed, "#prompt")
    def _prompt_edited(self, event: TextArea.Changed) -> None:
        edited = self.problem is not None and event.text_area.text != self.problem_text
        self._show_problem_label(edited)

    def current_problem(self) -> Problem | None:
        """The problem as the editor shows it; an edited or pasted prompt is parsed afresh."""
        text = self.query_one("#prompt", TextArea).text
        if not text.strip():
            self.notify("Pick a problem, open one (Ctrl+O) or type a prompt first.",
                        severity="warning")
            return None
        try:
            return problem_from_prompt(text, self.problem, self.problem_text)
        except UserError as e:
            self.notify(str(e), severity="error", title="prompt", timeout=10)
            return None

    # -- the scheme, and aux's contract between the panes -----------------------------------

    @on(Select.Changed, "#scheme")
    @on(Select.Changed, "#sees")
    def _show_scheme(self) -> None:
        self.settings.show_sees()
        if not self.run.generating:  # a run's panes stay as they are until the next one
            self._show_contract(self.settings.chosen_scheme(), self.problem)

    def _show_contract(self, scheme: str, problem: Problem | None, running: bool = False) -> None:
        """Between the panes, the contract `scheme` works to."""
        found = self.query(AgentPanes)
        if not found:  # the Agents tab mounts just after the first frame (Lazy)
            self.set_timer(0.1, lambda: self._show_contract(scheme, problem, running))
            return
        found.first().show_contract_for(scheme, problem, running)

    # -- actions ----------------------------------------------------------------------------

    @on(Button.Pressed, "#run-button")
    def action_run(self) -> None:
        if self.run.generating:
            self.notify("The agents are already writing (Esc cancels).", severity="warning")
            return
        app: Any = self.app
        agents = app.session.agents
        ready = agents is not None and app.agents_state != "loading"
        if not ready and app.agents_state == "error":
            self.notify(f"The agents did not load ({app.agents_error}): choose others on the "
                        "Agents screen (F2).", severity="error", title="run")
            return
        problem = self.current_problem()
        if problem is None:
            return
        scheme = self.settings.chosen_scheme()
        try:  # before anything runs: one line, as `coopcode solve` says it
            check_problems_fit([scheme], [problem], remedy="pick a compose problem (type "
                               "compose in the search) or choose the plan scheme")
        except UserError as e:
            self.notify(str(e), severity="error", title=f"the {scheme} scheme", timeout=10)
            return
        turns = self.settings.turns
        if ready:
            self._start_run(problem, agents, scheme, turns)
            return
        # The agents are loading (or were never asked to load: queue_run starts that). The
        # run waits for them with the problem and settings of this key press.
        first = app.queue_run(lambda: self._start_queued(problem, scheme, turns))
        self.notify("Run queued: it starts when the agents are loaded (Esc cancels)." if first
                    else "Run still queued, now with the problem and settings as they are.")

    def _start_queued(self, problem: Problem, scheme: str, turns: int) -> None:
        self._start_run(problem, self.app.session.agents, scheme, turns)  # type: ignore[attr-defined]
        where = "" if self.app.screen is self else " (F3 shows it)"
        self.notify(f"Agents loaded: the queued run started{where}.")

    def _start_run(self, problem: Problem, agents: Any, scheme: str, turns: int) -> None:
        order = self.run.start_generation(problem, scheme, *self.settings.reward_choice(scheme))
        panes = self.query_one(AgentPanes)
        panes.start(scheme)
        self._show_contract(scheme, problem, running=True)
        self.program_view.clear()
        self.query_one("#tests", TestsTable).forget()
        self.query_one("#summary", VerdictSummary).show_idle("the agents are writing…")
        show_tab(self.query_one("#tabs", TabbedContent), "tab-agents", "#main-code")
        self._generate(order, agents, turns)

    def action_show_tab(self, pane: str) -> None:
        show_tab(self.query_one("#tabs", TabbedContent), pane)

    def action_cancel(self) -> None:
        if self.app.cancel_queued_run():  # type: ignore[attr-defined]
            self.notify("Queued run cancelled: the agents go on loading.")
        elif self.run.cancel():
            self.notify("Cancelling…")

    def action_sandbox(self) -> None:
        program = self.query_one("#program", TextArea).text
        if self.run.problem is None or not program.strip():
            self.notify("No program yet: Ctrl+R runs the agents first.", severity="warning")
            return
        if self.run.busy:
            self.notify("Busy: wait for the current run.", severity="warning")
            return
        order = self.run.start_tests(*self.settings.reward_choice(self.run.judged_scheme))
        self.query_one("#summary", VerdictSummary).show_idle("running the tests in the sandbox…")
        self._test_worker(order, program, self.run.attempt)

    def action_copy(self) -> None:
        program = self.query_one("#program", TextArea).text
        if not program.strip():
            self.notify("No program to copy yet.", severity="warning")
            return
        self.app.copy_to_clipboard(program)
        self.notify("Program copied to the clipboard.")

    def action_save(self) -> None:
        program = self.query_one("#program", TextArea).text
        if not program.strip():
            self.notify("No program to save yet.", severity="warning")
            return
        name = f"{self.run.problem.entry_point}.py" if self.run.problem else "program.py"

        def save(path: str | None) -> None:
            if not path:
                return
            try:
                target = Path(path).expanduser()
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(program if program.endswith("\n") else program + "\n")
            except OSError as e:
                self.notify(f"{path}: {e.strerror or e}", severity="error", title="save")
                return
            self.notify(f"Saved to {path}")

        from tui.screens.dialogs import PathDialog

        self.app.push_screen(PathDialog("Save the program to", name), save)

    def action_open(self) -> None:
        from tui.screens.dialogs import PathDialog

        def opened(path: str | None) -> None:
            if path:
                self.pick(path)
                self.query_one("#tabs", TabbedContent).active = "tab-problem"

        self.app.push_screen(PathDialog("Open a problem file", placeholder="examples/below_zero.py"),
                             opened)

    def action_new_prompt(self) -> None:
        self.problem, self.problem_text = None, ""
        editor = self.query_one("#prompt", TextArea)
        editor.load_text('def solution(x: int) -> int:\n    """Describe the task here.\n'
                         '    >>> solution(1)\n    1\n    """\n')
        self._show_problem_label()
        self.query_one("#problem-label", Label).update("new prompt (editor)")
        self.query_one("#tabs", TabbedContent).active = "tab-problem"
        editor.focus()

    # -- workers: they only post messages (`CollaborationRun.generate` and `.judge`) -------

    @work(thread=True, group="generate")
    def _generate(self, order: RunOrder, agents: Any, turns: int) -> None:
        self.run.generate(order, agents, turns, SessionSandbox(self, order.run_id),
                          self.post_message)

    @work(thread=True, group="sandbox")
    def _test_worker(self, order: RunOrder, program: str, attempt: AttemptReady | None) -> None:
        self.run.judge(order, program, attempt, SessionSandbox(self, order.run_id),
                       self.post_message)

    # -- rendering events -----------------------------------------------------------------

    def _flush_deltas(self) -> None:
        """Draw the buffered token deltas: consecutive ones of an agent in one insert."""
        streams = self.run.take_streams()
        if streams:
            main_waits = get_scheme(self.run.scheme).main_sees_helper
            self.query_one(AgentPanes).draw(streams, main_waits)

    def on_coop_event(self, message: CoopEvent) -> None:
        if not self.run.is_current(message.run_id):
            return  # a straggler from a run that was cancelled or replaced
        self._flush_deltas()  # every token drawn before what follows the generation
        e = message.event
        if isinstance(e, AttemptReady):
            seconds = self.run.attempt_ready(e)
            if seconds is not None:  # one sample's time, alone: the Bench estimate's fallback
                self.app.sample_seconds = seconds  # type: ignore[attr-defined]
            self._finish_panes()
            self.query_one(AgentPanes).show_final(e)
            self.program_view.show(e)
            self.call_after_refresh(self.program_view.main_in_view)
            self.query_one("#summary", VerdictSummary).show_idle("running the tests in the sandbox…")
            show_tab(self.query_one("#tabs", TabbedContent), "tab-program", "#tests")
        elif isinstance(e, VerdictReady):
            self.run.verdict_ready()
            self.query_one("#tests", TestsTable).show(e.verdict)
            self.query_one("#summary", VerdictSummary).show(
                e.verdict, e.reward, self.run.cooperation(e), e.scheme, reruns=self.run.reruns,
                reward_name=self.run.reward_name, agents=e.agents,
                agent_rewards=e.agent_rewards)
            self.call_after_refresh(self.program_view.main_in_view)  # the tab is laid out now
        elif isinstance(e, Failed):
            self.run.failed()
            self._finish_panes()
            self.query_one("#summary", VerdictSummary).show_idle(f"error: {e.message}")
            self.notify(e.message, severity="error", title="run failed", timeout=8)

    def _finish_panes(self, state: PaneState = PaneState.DONE) -> None:
        for panes in self.query(AgentPanes):  # none before the Agents tab mounts (Lazy)
            panes.finish(state)

    def on_sandbox_reran(self, message: SandboxReran) -> None:
        if self.run.is_current(message.run_id):
            self.run.sandbox_reran(message.reruns)

    def on_sandbox_down(self, message: SandboxDown) -> None:
        """No verdict: the program was not judged. A status line, and Ctrl+G to try again."""
        if not self.run.is_current(message.run_id):
            return
        self._flush_deltas()
        self.run.sandbox_down()
        self._finish_panes()
        self.query_one("#tests", TestsTable).forget()
        self.query_one("#summary", VerdictSummary).show_outage(message.text)
        self.notify(f"sandbox down: {message.text}", severity="warning", title="sandbox",
                    timeout=8)

    def on_cancelled(self, message: Cancelled) -> None:
        if not self.run.is_current(message.run_id):
            return
        self._flush_deltas()
        self.run.cancelled()
        self._finish_panes(PaneState.CANCELLED)
        self.query_one("#summary", VerdictSummary).show_idle("cancelled · Ctrl+R runs again")
        self.notify("Generation cancelled.")
