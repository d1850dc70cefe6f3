"""Collaborate screen: streaming token by token, the sandbox verdict, cancel, edit, copy, save."""

from __future__ import annotations

from pathlib import Path

from tests.tui_app.conftest import SteppedEngine, wait_until
from tui.demo import KNOWN, scripted_answer
from tui.widgets.agent_pane import AgentPane
from tui.widgets.results import TestsTable

HELPER, MAIN = KNOWN["has_close_elements"]
# What the prompts pre-fill; collab streams it as each agent's first delta (ungated here:
# it comes before the engine's first token).
PREFILL = {"helper": "def aux(",
           "main": "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"}


def chunks(text: str, size: int = 4) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


async def test_streams_token_by_token_then_runs_the_tests(make_app):
    engine = SteppedEngine(lambda prompt, _a, _i: scripted_answer(prompt), chunk=4)
    app = make_app(engine, problem="HumanEval/0")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: app.agents_state == "ready" and screen.problem, what="ready")
        await pilot.press("ctrl+r")
        helper = screen.query_one("#helper-pane", AgentPane)
        main = screen.query_one("#main-pane", AgentPane)
        await wait_until(pilot, lambda: screen.query_one("#tabs").active == "tab-agents")
        # The helper writes first (sequential scheme); each chunk shows up alone, in order,
        # after the code the prompt pre-filled (`def aux(`, the signature).
        for pane, text in ((helper, HELPER), (main, MAIN)):
            prefix = PREFILL[pane.role]
            assert text.startswith(prefix)
            sent = ""
            pieces = chunks(text[len(prefix):])
            for i, piece in enumerate(pieces):
                engine.gate.release()
                sent += piece
                await wait_until(pilot, lambda p=pane, s=prefix + sent: p.text == s,
                                 what=repr(sent[-12:]))
                assert pane.code_view.text == prefix + sent
                assert pane.tokens == len(chunks(sent))  # the pre-filled delta is not a token
                if i < len(pieces) - 1:  # after the last one the attempt may be complete
                    assert pane.state == "streaming"
                if pane is main:
                    assert helper.state == "done"  # main writes once the helper's code is in
        # The closing fence is the stop string: nothing after it reaches the pane.
        for _ in range(50):
            engine.gate.release()
        table = screen.query_one("#tests", TestsTable)
        await wait_until(pilot, lambda: table.row_count > 0, what="test results")
        assert "```" not in main.text and "This code is correct" not in main.text
        program = screen.query_one("#program").text
        assert "def aux(a: float, b: float)" in program and "def has_close_elements" in program
        statuses = {str(table.get_row_at(i)[1]) for i in range(table.row_count)}
        assert statuses == {"passed"}
        summary = str(screen.query_one("#summary").render())
        assert "PASSED" in summary and "1.20" in summary
        assert "main calls aux inside a loop" in summary
        assert "tok/s" in str(main.border_subtitle)


async def test_escape_cancels_a_generation_cleanly(make_app):
    engine = SteppedEngine(lambda prompt, _a, _i: scripted_answer(prompt), chunk=4)
    app = make_app(engine, problem="HumanEval/0")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: app.agents_state == "ready" and screen.problem)
        await pilot.press("ctrl+r")
        helper = screen.query_one("#helper-pane", AgentPane)
        for _ in range(3):
            engine.gate.release()
        await wait_until(pilot, lambda: len(helper.text) == len(PREFILL["helper"]) + 12)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not screen.run.generating, what="cancelled")
        assert helper.state == "cancelled"
        assert helper.text == HELPER[:len(PREFILL["helper"]) + 12]  # nothing after the cancel
        assert screen.query_one("#program").text == ""
        assert screen.query_one("#tests", TestsTable).row_count == 0
        # The app is ready for the next run, which completes normally.
        for _ in range(200):
            engine.gate.release()
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: screen.query_one("#tests", TestsTable).row_count > 0)


async def test_edit_the_program_and_rerun_copy_and_save(make_app, workdir: Path):
    app = make_app(problem="HumanEval/0")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: app.agents_state == "ready" and screen.problem)
        await pilot.press("ctrl+r")
        table = screen.query_one("#tests", TestsTable)
        await wait_until(pilot, lambda: table.row_count > 0)
        # Break the program in the editor; Ctrl+G runs the edited text in the sandbox.
        editor = screen.query_one("#program")
        editor.load_text(editor.text.replace("< threshold", "> threshold"))
        await pilot.press("ctrl+g")
        await wait_until(pilot, lambda: "FAILED" in str(screen.query_one("#summary").render()))
        statuses = [str(table.get_row_at(i)[1]) for i in range(table.row_count)]
        assert "failed" in statuses, (statuses, str(screen.query_one("#summary").render()))
        await pilot.press("f6")
        assert app.clipboard == editor.text
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "PathDialog")
        await pilot.press("enter")  # the proposed name: <entry point>.py
        await wait_until(pilot, lambda: (workdir / "has_close_elements.py").exists())
        assert (workdir / "has_close_elements.py").read_text().rstrip() == editor.text.rstrip()


async def test_search_open_a_file_and_paste_a_prompt(make_app, workdir: Path):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.humaneval, what="HumanEval loaded")
        screen.query_one("#search").focus()
        await pilot.press(*"below_zero")
        listing = screen.query_one("#problems")
        await wait_until(pilot, lambda: listing.problem_count == 1)  # under HumanEval's heading
        await pilot.press("enter", "enter")  # to the list, then pick the highlighted one
        await wait_until(pilot, lambda: screen.problem is not None)
        assert screen.problem.task_id == "HumanEval/3"
        # Open a problem.py through the dialog.
        (workdir / "twice.py").write_text(
            'def twice(x: int) -> int:\n    """Double x.\n    >>> twice(2)\n    4\n    """\n')
        await pilot.press("ctrl+o")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "PathDialog")
        await pilot.press(*"twice.py", "enter")
        await wait_until(pilot, lambda: screen.problem is not None and screen.problem.entry_point == "twice")
        # A typed prompt (Ctrl+N) is parsed when run: its docstring examples are the tests.
        await pilot.press("ctrl+n")
        screen.query_one("#prompt").load_text(
            'from typing import List\n\n\n'
            'def below_zero(operations: List[int]) -> bool:\n    """True if the balance dips.\n'
            '    >>> below_zero([1, -2])\n    True\n    """\n')
        await wait_until(pilot, lambda: app.agents_state == "ready")
        await pilot.press("ctrl+r")
        table = screen.query_one("#tests", TestsTable)
        await wait_until(pilot, lambda: table.row_count > 0)
        assert str(table.get_row_at(0)[1]) == "passed"


async def test_two_turns_revise_from_public_example_feedback(make_app, workdir: Path):
    # The demo agents do not know this problem: turn 1 fails its public example, so both
    # agents get the sandbox's feedback and write a second turn, marked in their panes.
    (workdir / "triple.py").write_text(
        'def triple(x: int) -> int:\n    """Three times x.\n    >>> triple(2)\n    6\n    """\n')
    app = make_app(problem=str(workdir / "triple.py"))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: app.agents_state == "ready" and screen.problem)
        screen.query_one("#turns").value = 2
        await pilot.press("ctrl+r")
        table = screen.query_one("#tests", TestsTable)
        await wait_until(pilot, lambda: table.row_count > 0)
        main = screen.query_one("#main-pane", AgentPane)
        assert "# ── turn 2 ──" in main.text and main.turn == 2
        assert str(table.get_row_at(0)[1]) == "error"  # NotImplementedError, both turns
        summary = str(screen.query_one("#summary").render())
        assert "FAILED 0/1 tests" in summary and "main ignores the helper" in summary
