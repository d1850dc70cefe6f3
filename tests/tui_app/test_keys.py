"""Every key discoverable and reachable: `?`, type to search, Tab out of
the prompt, the inner tabs' keys, a test key tmux does not eat, Esc's stop dialog."""

from __future__ import annotations

import sys

from textual import events
from textual.widgets import Input, TextArea

from tests.tui_app.conftest import wait_until
from tui.screens.keys import KeysScreen


def overlay_text(app) -> str:
    return "\n".join(" | ".join(row) for row in app.screen.rows)


async def test_question_mark_lists_every_key_of_the_screen_then_closes(make_app):
    app = make_app(problem="HumanEval/0")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.humaneval, what="problems")
        screen.query_one("#problems").focus()
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, KeysScreen), what="the overlay")
        text = overlay_text(app)
        for key in ("Ctrl+R", "Esc", "Ctrl+G", "Ctrl+O", "Ctrl+N", "F6", "Ctrl+S", "F7", "F8",
                    "F9", "F1", "F2", "F5", "Ctrl+P", "Ctrl+T", "Ctrl+Q", "?", "Tab"):
            assert f"\n{key}" in "\n" + text or f"{key} |" in text, f"{key} missing:\n{text}"
        assert "type a letter" in text
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is screen, what="closed")
        # Each screen lists its own keys.
        await pilot.press("f4")
        await wait_until(pilot, lambda: app.current_mode == "train")
        app.set_focus(None)
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, KeysScreen))
        assert "Stop the training run" in overlay_text(app)
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: not isinstance(app.screen, KeysScreen))


async def test_a_question_mark_typed_in_a_field_is_text(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        search = screen.query_one("#search", Input)
        search.focus()
        await pilot.press("a", "question_mark")
        assert search.value == "a?" and not isinstance(app.screen, KeysScreen)


async def test_typing_while_the_list_has_focus_searches(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.humaneval, what="problems")
        listing = screen.query_one("#problems")
        listing.focus()
        await pilot.press(*"strlen")
        search = screen.query_one("#search", Input)
        assert search.value == "strlen"
        # HumanEval's strlen first, then the compose problems built on it.
        await wait_until(pilot, lambda: listing.highlighted is not None and listing.get_option_at_index(
            listing.highlighted).id == "HumanEval/23", what="filtered")
        await pilot.press("enter", "enter")  # to the list, pick
        await wait_until(pilot, lambda: screen.problem is not None)
        assert screen.problem.entry_point == "strlen"


async def test_tab_leaves_the_prompt_editor(make_app):
    app = make_app(problem="HumanEval/0")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.problem is not None)
        prompt = screen.query_one("#prompt", TextArea)
        prompt.focus()
        before = prompt.text
        await pilot.press("tab")
        assert app.focused is not prompt and prompt.text == before


async def test_the_inner_tabs_have_keys(make_app):
    app = make_app(problem="HumanEval/0")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        tabs = screen.query_one("#tabs")
        await wait_until(pilot, lambda: screen.problem is not None)
        screen.query_one("#prompt").focus()  # even from an editor
        for key, pane in (("f8", "tab-agents"), ("f9", "tab-program"), ("f7", "tab-problem")):
            await pilot.press(key)
            await pilot.pause(0.05)
            assert tabs.active == pane
        await pilot.press("f5")
        await wait_until(pilot, lambda: app.current_mode == "bench")
        bench_tabs = app.screen.query_one("#bench-tabs")
        await pilot.press("f8")
        await wait_until(pilot, lambda: bench_tabs.active == "tab-runs")
        await pilot.press("f7")
        await wait_until(pilot, lambda: bench_tabs.active == "tab-live")


async def test_ctrl_g_tests_the_edited_program(make_app):
    # Ctrl+B, the old key, is tmux's prefix: inside tmux it never reaches the app.
    app = make_app(problem="HumanEval/0")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: app.agents_state == "ready" and screen.problem)
        await pilot.press("ctrl+r")
        table = screen.query_one("#tests")
        await wait_until(pilot, lambda: table.row_count > 0)
        editor = screen.query_one("#program")
        editor.load_text(editor.text.replace("< threshold", "> threshold"))
        await pilot.press("ctrl+g")
        await wait_until(pilot, lambda: "FAILED" in str(screen.query_one("#summary").render()))


async def test_escape_typed_twice_on_a_lagging_ui_leaves_the_stop_dialog_open(make_app):
    # A second Esc, typed because the first seemed to do nothing, must not reach the
    # dialog the first one opened and close it unseen.
    app = make_app(mode="train", autoload=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        screen.start_job([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            await wait_until(pilot, lambda: screen.busy)
            for _ in range(2):  # both read from the terminal before the UI handled the first
                key = events.Key("escape", "\x1b")
                key.set_sender(app)
                app.post_message(key)
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ConfirmDialog")
            await pilot.pause(0.3)
            assert type(app.screen).__name__ == "ConfirmDialog"
            await pilot.press("n")  # a key typed with the dialog on screen answers it
            await wait_until(pilot, lambda: app.screen is screen)
            assert screen.busy
        finally:
            screen.job.stop(grace=2)


async def test_tab_indents_in_the_program_editor_and_esc_leaves_it(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await pilot.press("f9")
        editor = screen.query_one("#program", TextArea)
        editor.focus()
        await pilot.press("tab")
        assert editor.text.startswith("    ") and app.focused is editor
        await pilot.press("escape")
        assert app.focused is not editor
