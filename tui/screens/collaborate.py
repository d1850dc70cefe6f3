"""Collaborate: pick a problem, watch the helper and main agents write, run the program.

A run is `coopcode.solve` on a worker thread, and Ctrl+G on an edited program is
`coopcode.judge` (solve's last step on its own); the events they emit (TokenDelta,
AttemptReady, VerdictReady, ...) come here as messages, and this screen only renders them.

Under the schemes with a contract for aux (`contract`, `plan`) the contract sits between the
helper's and main's panes: the problem's before the run, or main's own as it writes it.
"""

from __future__ import annotations

import dataclasses
import threading
import time
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
    Static,
    TabbedContent,
    TabPane,
    TextArea,
)

from coopcode import (
    DEFAULT_SCHEME,
    MAIN_SEES,
    AttemptReady,
    Event,
    Failed,
    Problem,
    SandboxUnavailable,
    TokenDelta,
    UserError,
    VerdictReady,
    analyse_cooperation,
    get_scheme,
    has_helper,
    reward_names,
    scheme_names,
    with_main_seeing,
)
from tui.messages import Cancelled, CoopEvent, SandboxDown, SandboxReran
from tui.scheme_fit import misfit
from tui.session_sandbox import SessionSandbox, one_line
from tui.widgets.agent_pane import AgentPane, style_code
from tui.widgets.contract_pane import ContractPane
from tui.widgets.marked_program import LEGEND, line_authors, marks_text
from tui.widgets.nav import NavBar
from tui.widgets.problem_list import ProblemList, load_listed_sets
from tui.widgets.results import TestsTable, VerdictSummary
from tui.widgets.tabs import show_tab

FLUSH_EVERY = 1 / 10  # s; tokens are drawn in batches at most this often (see _flush_deltas)


def listed_schemes() -> list[str]:
    """The toolbar's schemes: every scheme but the `--main-sees code` variants, which the
    "main sees" choice beside it picks (`contract` + code is `contract+code`)."""
    variants = {get_scheme(name).sees_code_variant for name in scheme_names()}
    return [name for name in scheme_names() if name not in variants]


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
        self.humaneval: list[Problem] = []  # HumanEval's problems, once loaded
        self.problem: Problem | None = None  # what was picked or opened
        self.problem_text = ""  # the editor text that `problem` came from
        self.run_id = 0
        self.generating = False
        self.testing = False
        self.reruns = 0  # programs the sandbox ran again in this run (a worker was lost)
        self.cancel_event = threading.Event()
        self.attempt: AttemptReady | None = None  # the latest generated attempt
        self.run_problem: Problem | None = None  # the problem the latest attempt solved
        self.run_scheme = ""
        self.run_started = 0.0
        # The adapters whose run's settings the toolbar took (`_follow_adapters`).
        self.defaults_for: tuple[str | None, str | None] | None = None
        self.run_reward: str | None = None  # the reward of the latest run (None: default)
        self.run_reward_name = ""
        self._deltas: list[tuple[int, TokenDelta]] = []  # (run id, delta) not yet drawn
        self._deltas_lock = threading.Lock()

    def compose(self) -> ComposeResult:
        yield NavBar("collaborate")
        # One row where it fits; below 100 columns the problem's name on a row of its own
        # (with Run, docked right) and the settings, labels included, on the next (app.tcss).
        with Horizontal(id="toolbar"):
            yield Label("no problem", id="problem-label")
            yield Button("Run", id="run-button", compact=True, variant="primary")
            with Horizontal(id="settings"):
                yield from self._settings()
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
                yield Lazy(Horizontal(AgentPane("helper", id="helper-pane"),
                                      ContractPane(id="contract-pane"),
                                      AgentPane("main", id="main-pane"), id="panes"))
            with TabPane("F9 Program", id="tab-program"):
                # No soft wrap: the gutter beside it marks who wrote each line, line for line.
                program = TextArea.code_editor("", id="program", soft_wrap=False)
                program.border_title = "combined program · editable"
                program.border_subtitle = f"{LEGEND} · Esc leaves the editor"
                marks = Static("", id="program-marks")
                summary = VerdictSummary("[dim]Ctrl+R runs the agents[/]", id="summary")
                # The summary scrolls rather than cut the verdict short.
                box = VerticalScroll(summary, id="summary-box")
                yield Lazy(Vertical(Horizontal(marks, program, id="program-row"),
                                    Horizontal(TestsTable(id="tests"), box, id="results"),
                                    id="program-pane"))
        yield Footer(compact=True, show_command_palette=False)

    def _settings(self) -> ComposeResult:
        yield Label("scheme", classes="dim")
        yield Select([(s, s) for s in listed_schemes()], value=DEFAULT_SCHEME,
                     allow_blank=False, compact=True, id="scheme")
        # What main is shown of the helper's work, where the scheme has a choice
        # (`--main-sees`): hidden for the others.
        yield Select([(f"sees {m}", m) for m in MAIN_SEES], value=MAIN_SEES[0],
                     allow_blank=False, compact=True, id="sees", classes="sees")
        yield Label("turns", classes="dim")
        yield Select([(str(t), t) for t in (1, 2, 3)], value=1, allow_blank=False,
                     compact=True, id="turns")
        # The reward the verdict is scored with; blank: the scheme's default (the seed
        # paper's). Loaded adapters set it to the one they were trained with.
        yield Label("reward", classes="dim")
        yield Select([(r, r) for r in reward_names()], prompt="default", compact=True,
                     id="reward")

    def on_mount(self) -> None:
        self.watch(self.app, "agents_state", self._agents_changed)
        self.call_after_refresh(self._follow_adapters)  # the ones given on the command line
        self.call_after_refresh(self.focus_search)  # typing searches from the first key
        self.call_after_refresh(self._watch_program_scroll)
        self.set_interval(FLUSH_EVERY, self._flush_deltas)
        self.call_after_refresh(self._highlight_editors)
        self.call_after_refresh(self._show_scheme)
        self._load_problems()

    def _watch_program_scroll(self) -> None:
        editor = self.query("#program")
        if editor:  # the Program tab mounts just after the first frame (Lazy)
            self.watch(editor.first(), "scroll_y", lambda _y: self._show_marks(), init=False)
        else:
            self.set_timer(0.2, self._watch_program_scroll)

    @on(TextArea.Changed, "#program")
    def _show_marks(self) -> None:
        """Who wrote each line of the program in view (the helper, main, the prompt, or
        you in the editor), in the gutter, line for line with the editor's scroll."""
        editor = self.query_one("#program", TextArea)
        attempt = self.attempt
        if attempt is None or not editor.text.strip():
            self.query_one("#program-marks", Static).update("")
            return
        authors = line_authors(editor.text, attempt.helper_code, attempt.main_code,
                               original=attempt.program)
        first = int(editor.scroll_y)
        self.query_one("#program-marks", Static).update(
            marks_text(authors[first:first + editor.scrollable_content_region.height]))

    def _main_in_view(self) -> None:
        """Main's code in the program editor's view: at 80x24 the editor shows a few lines,
        and the prompt's imports and the helper's code come first."""
        editor = self.query_one("#program", TextArea)
        attempt = self.attempt
        if attempt is None:
            return
        authors = line_authors(editor.text, attempt.helper_code, attempt.main_code,
                               original=attempt.program)
        mains = [i for i, a in enumerate(authors) if a == "main"]
        height = editor.scrollable_content_region.height
        if mains and height and mains[-1] >= height:
            editor.scroll_to(y=max(0, min(mains[0], mains[-1] - height + 1)), animate=False)

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
        """New adapters: what their run was trained with (scheme, what main sees, reward)
        becomes the toolbar's choice, said in a notification; the user may change it, and it
        stays until other adapters load (issue 42: credit adapters scored with the seed's;
        issue 55: the contract pair ran under sequential)."""
        from coopcode import run_defaults, split_scheme, trained_with

        spec = self.app.session.spec  # type: ignore[attr-defined]
        adapters = (spec.helper_adapter, spec.main_adapter)
        if adapters == self.defaults_for:
            return
        self.defaults_for = adapters
        trained = trained_with(*adapters)
        defaults = run_defaults(trained, set())
        scheme, sees = split_scheme(defaults.scheme or DEFAULT_SCHEME)
        if scheme not in listed_schemes():
            scheme, sees = DEFAULT_SCHEME, MAIN_SEES[0]
        self.query_one("#scheme", Select).value = scheme
        self.query_one("#sees", Select).value = sees
        self.query_one("#reward", Select).value = defaults.reward or Select.NULL
        if trained is not None and defaults.said:
            self.notify(f"{trained.run} was trained with {trained.words()}: the toolbar's "
                        "choice now (change it there)", title="adapters", timeout=6)

    def reward_choice(self, scheme: str) -> tuple[str | None, str]:
        """(the reward to ask for, its name as shown): None asks for the scheme's default."""
        from coopcode import default_reward_name

        select = self.query_one("#reward", Select)
        chosen = None if select.is_blank() else str(select.value)
        return chosen, chosen or default_reward_name(scheme)

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
        if not self.generating:
            self._show_contract(self.chosen_scheme(), problem)

    def _show_problem_label(self, edited: bool = False) -> None:
        label = "no problem"
        if self.problem is not None:
            label = self.problem.task_id
            if not label.endswith("/" + self.problem.entry_point):  # compose/<entry point>
                label += f" · {self.problem.entry_point}"
            label += " (edited)" if edited else ""
        self.query_one("#problem-label", Label).update(label)

    # -- the scheme, and aux's contract between the panes -----------------------------------

    def chosen_scheme(self) -> str:
        """The scheme as the toolbar says: the one chosen, with what main sees."""
        scheme = str(self.query_one("#scheme", Select).value)
        return with_main_seeing(scheme, str(self.query_one("#sees", Select).value))

    @on(Select.Changed, "#scheme")
    @on(Select.Changed, "#sees")
    def _show_scheme(self) -> None:
        scheme = str(self.query_one("#scheme", Select).value)
        for widget in self.query(".sees"):
            widget.display = bool(get_scheme(scheme).sees_code_variant)
        if not self.generating:  # a run's panes stay as they are until the next one
            self._show_contract(self.chosen_scheme(), self.problem)

    def _show_contract(self, scheme: str, problem: Problem | None, running: bool = False) -> None:
        """Between the panes, the contract `scheme` works to (`ContractPane.show_for`)."""
        found = self.query("#contract-pane")
        if not found:  # the Agents tab mounts just after the first frame (Lazy)
            self.set_timer(0.1, lambda: self._show_contract(scheme, problem, running))
            return
        source = get_scheme(scheme).contract_source
        self.query_one("#panes").set_class(bool(source), "-contract")
        found.first(ContractPane).show_for(source, problem, running)

    @on(TextArea.Changed, "#prompt")
    def _prompt_edited(self, event: TextArea.Changed) -> None:
        edited = self.problem is not None and event.text_area.text != self.problem_text
        self._show_problem_label(edited)

    def current_problem(self) -> Problem | None:
        """The problem as the editor shows it; an edited or pasted prompt is parsed afresh."""
        text = self.query_one("#prompt", TextArea).text
        if self.problem is not None and text == self.problem_text:
            return self.problem
        if not text.strip():
            self.notify("Pick a problem, open one (Ctrl+O) or type a prompt first.",
                        severity="warning")
            return None
        from coopcode import parse_problem_source

        try:
            parsed = parse_problem_source(text, "editor.py")
        except UserError as e:
            hint = "" if _looks_like_a_stub(text) else (
                "\nThe prompt is a Python function stub: a `def name(args):` line and a "
                "docstring saying what it does, with an example (Ctrl+N starts one).")
            self.notify(str(e) + hint, severity="error", title="prompt", timeout=10)
            return None
        picked = self.problem
        if picked is not None and picked.contract is not None \
                and parsed.entry_point == picked.entry_point:
            # The picked problem's prompt, edited: aux's contract is still the one it had.
            parsed = dataclasses.replace(parsed, contract=picked.contract)
        return parsed

    # -- actions ----------------------------------------------------------------------------

    @on(Button.Pressed, "#run-button")
    def action_run(self) -> None:
        if self.generating:
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
        scheme = self.chosen_scheme()
        refused = misfit([scheme], [problem], "pick a compose problem (type compose in the "
                         "search) or choose the plan scheme")
        if refused:  # before anything runs: one line, as `coopcode solve` says it
            self.notify(refused, severity="error", title=f"the {scheme} scheme", timeout=10)
            return
        turns = int(self.query_one("#turns", Select).value)  # type: ignore[arg-type]
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
        self.run_id += 1
        self.reruns = 0
        self.cancel_event = threading.Event()
        self.generating, self.attempt, self.run_problem = True, None, problem
        self.run_scheme = scheme
        self.run_reward, self.run_reward_name = self.reward_choice(scheme)
        self.run_started = time.monotonic()
        for pane in self.query(AgentPane):
            pane.reset()  # the pre-filled code (`def aux(`, the signature) arrives as the first delta
        self.query_one("#helper-pane", AgentPane).display = has_helper(scheme)
        self._show_contract(scheme, problem, running=True)
        self.query_one("#program", TextArea).load_text("")
        self.query_one("#tests", TestsTable).clear()
        self.query_one("#summary", VerdictSummary).show_idle("the agents are writing…")
        show_tab(self.query_one("#tabs", TabbedContent), "tab-agents", "#main-code")
        self._generate(problem, agents, scheme, turns, self.run_id, self.cancel_event)

    def action_show_tab(self, pane: str) -> None:
        show_tab(self.query_one("#tabs", TabbedContent), pane)

    def action_cancel(self) -> None:
        if self.app.cancel_queued_run():  # type: ignore[attr-defined]
            self.notify("Queued run cancelled: the agents go on loading.")
        elif self.generating and not self.cancel_event.is_set():
            self.cancel_event.set()
            self.notify("Cancelling…")

    def action_sandbox(self) -> None:
        program = self.query_one("#program", TextArea).text
        if self.run_problem is None or not program.strip():
            self.notify("No program yet: Ctrl+R runs the agents first.", severity="warning")
            return
        if self.generating or self.testing:
            self.notify("Busy: wait for the current run.", severity="warning")
            return
        self.run_id += 1
        self.reruns = 0
        scheme = self.attempt.scheme if self.attempt else DEFAULT_SCHEME
        self.run_reward, self.run_reward_name = self.reward_choice(scheme)
        self._start_tests(self.run_problem, program, self.run_id)

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
        name = f"{self.run_problem.entry_point}.py" if self.run_problem else "program.py"

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

    # -- workers: they only post events ---------------------------------------------------

    @work(thread=True, group="generate")
    def _generate(self, problem: Problem, agents: Any, scheme: str, turns: int, run_id: int,
                  cancel: threading.Event) -> None:
        from coopcode import SolveConfig, solve

        def emit(event: Event) -> None:
            if isinstance(event, TokenDelta):
                # Buffered, not posted: a message per token would keep the event loop busy
                # redrawing and make keys lag while a fast model streams.
                with self._deltas_lock:
                    self._deltas.append((run_id, event))
            else:
                self.post_message(CoopEvent(run_id, event))

        try:
            # `coopcode solve`'s settings (greedy, its token budget, top-p, seed, reward), with
            # the scheme and turns chosen here.
            result = solve(problem, agents.engine, SessionSandbox(self, run_id),
                           SolveConfig(scheme=scheme, turns=turns, reward=self.run_reward),
                           helper_adapter=agents.helper_name, main_adapter=agents.main_name,
                           emit=emit, cancel=cancel)
            if cancel.is_set() and not any(a.verdict for a in result.attempts):
                self.post_message(Cancelled(run_id))
        except SandboxUnavailable as e:  # an outage, not a verdict: a status line and a retry
            self.post_message(SandboxDown(run_id, one_line(e)))
        except Exception as e:  # noqa: BLE001 - shown as one line; the UI must survive it
            emit(Failed(message=one_line(e)))

    def _start_tests(self, problem: Problem, program: str, run_id: int) -> None:
        self.testing = True
        self.query_one("#summary", VerdictSummary).show_idle("running the tests in the sandbox…")
        self._test_worker(problem, program, self.attempt, run_id)

    @work(thread=True, group="sandbox")
    def _test_worker(self, problem: Problem, program: str, attempt: AttemptReady | None,
                     run_id: int) -> None:
        """Judge the (edited) program as the run judged the agents' one. A worker lost
        meanwhile is replaced and the program run again by the sandbox (said on the screen);
        a sandbox down for good is a status line, and the next run opens a new one."""
        from coopcode import SolveConfig, judge

        def emit(event: Event) -> None:
            self.post_message(CoopEvent(run_id, event))

        try:
            judge(problem, program, SessionSandbox(self, run_id),
                  SolveConfig(scheme=attempt.scheme if attempt else DEFAULT_SCHEME,
                              reward=self.run_reward),
                  helper_code=attempt.helper_code if attempt else "",
                  main_code=attempt.main_code if attempt else program, emit=emit)
        except SandboxUnavailable as e:
            self.post_message(SandboxDown(run_id, one_line(e)))
        except Exception as e:  # noqa: BLE001
            emit(Failed(message=one_line(e)))

    # -- rendering events -----------------------------------------------------------------

    def _flush_deltas(self) -> None:
        """Draw the buffered token deltas: consecutive ones of an agent in one insert."""
        with self._deltas_lock:
            if not self._deltas:
                return  # the usual case: nothing streamed since the last frame
            batch, self._deltas = self._deltas, []
        merged: list[tuple[str, int, str, int]] = []  # (agent, turn, text, tokens)
        for run_id, d in batch:
            if run_id != self.run_id:
                continue
            if merged and merged[-1][:2] == (d.agent, d.turn):
                agent, turn, text, n = merged[-1]
                merged[-1] = (agent, turn, text + d.text, n + d.tokens)
            else:
                merged.append((d.agent, d.turn, d.text, d.tokens))
        if not merged:
            return
        helper = self.query_one("#helper-pane", AgentPane)
        contract = self.query_one("#contract-pane", ContractPane)
        main_waits = get_scheme(self.run_scheme).main_sees_helper
        for agent, turn, text, n in merged:
            if agent == "planner":  # main writing aux's contract first (`plan`)
                contract.append(text, turn, tokens=n)
                continue
            if contract.state == "streaming":
                contract.finish()  # the agents start once the contract is written
            if agent == "helper":
                helper.append(text, turn, tokens=n)
                continue
            if main_waits and turn == 1 and helper.state == "streaming":
                helper.finish()  # main starts once the helper's code is complete
            self.query_one("#main-pane", AgentPane).append(text, turn, tokens=n)

    def on_coop_event(self, message: CoopEvent) -> None:
        if message.run_id != self.run_id:
            return  # a straggler from a run that was cancelled or replaced
        self._flush_deltas()  # every token drawn before what follows the generation
        e = message.event
        if isinstance(e, AttemptReady):
            if self.generating:  # one sample's time, alone: the Bench estimate's fallback
                self.app.sample_seconds = time.monotonic() - self.run_started  # type: ignore[attr-defined]
            self.generating = False
            self.testing = True
            self.attempt = e
            for pane in self.query(AgentPane):
                pane.finish()
            # Each pane ends on the code that went into the program (what the model wrote
            # around it, a stray `}` or a closing fence, is left out of both).
            self.query_one("#helper-pane", AgentPane).show_final(e.helper_code)
            self.query_one("#main-pane", AgentPane).show_final(e.main_code)
            if e.contract.strip():  # the contract as main saw it (a planner's body dropped)
                contract = self.query_one("#contract-pane", ContractPane)
                contract.show_contract(e.contract, contract.source)
            program = self.query_one("#program", TextArea)
            style_code(program)
            program.load_text(e.program)
            self.call_after_refresh(self._main_in_view)
            self._show_marks()
            self.query_one("#summary", VerdictSummary).show_idle("running the tests in the sandbox…")
            show_tab(self.query_one("#tabs", TabbedContent), "tab-program", "#tests")
        elif isinstance(e, VerdictReady):
            self.testing = False
            self.query_one("#tests", TestsTable).show(e.verdict)
            helper = self.attempt.helper_code if self.attempt else ""
            main = self.attempt.main_code if self.attempt else ""
            entry = self.run_problem.entry_point if self.run_problem else ""
            # What the sandbox found by running each agent's code alone.
            found = e.cooperation or {}
            solves, needed = found.get("helper_solves"), found.get("both_needed")
            coop = dataclasses.replace(analyse_cooperation(helper, main, entry, solves),
                                       both_needed=needed if isinstance(needed, bool) else None)
            self.query_one("#summary", VerdictSummary).show(
                e.verdict, e.reward, coop, e.scheme, reruns=self.reruns,
                reward_name=self.run_reward_name, agents=e.agents,
                agent_rewards=e.agent_rewards)
            self.call_after_refresh(self._main_in_view)  # the Program tab is laid out now
        elif isinstance(e, Failed):
            self.generating = self.testing = False
            for pane in self.query(AgentPane):
                pane.finish()
            self.query_one("#summary", VerdictSummary).show_idle(f"error: {e.message}")
            self.notify(e.message, severity="error", title="run failed", timeout=8)

    def on_sandbox_reran(self, message: SandboxReran) -> None:
        if message.run_id == self.run_id:
            self.reruns = message.reruns

    def on_sandbox_down(self, message: SandboxDown) -> None:
        """No verdict: the program was not judged. A status line, and Ctrl+G to try again."""
        if message.run_id != self.run_id:
            return
        self._flush_deltas()
        self.generating = self.testing = False
        for pane in self.query(AgentPane):
            pane.finish()
        self.query_one("#tests", TestsTable).clear()
        self.query_one("#summary", VerdictSummary).show_outage(message.text)
        self.notify(f"sandbox down: {message.text}", severity="warning", title="sandbox",
                    timeout=8)

    def on_cancelled(self, message: Cancelled) -> None:
        if message.run_id != self.run_id:
            return
        self._flush_deltas()
        self.generating = False
        for pane in self.query(AgentPane):
            pane.finish("cancelled")
        self.query_one("#summary", VerdictSummary).show_idle("cancelled · Ctrl+R runs again")
        self.notify("Generation cancelled.")


def _looks_like_a_stub(text: str) -> bool:
    """Whether the editor holds Python with a function (a stub with a slip, not prose)."""
    return any(line.lstrip().startswith("def ") for line in text.splitlines())
