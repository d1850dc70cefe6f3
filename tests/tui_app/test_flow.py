"""The main flow a new user takes, key by key, with no other key in between."""

from __future__ import annotations

from tests.tui_app.conftest import SteppedEngine, wait_until
from tui.demo import scripted_answer
from tui.widgets.agent_pane import AgentPane
from tui.widgets.results import TestsTable


async def test_search_pick_from_the_list_then_ctrl_r_shows_the_run_and_its_verdict(make_app):
    # The run stays in view: the list picked from keeps the focus, and a focused widget
    # pulls its tab back to the front, so the Agents tab must take the focus with it.
    engine = SteppedEngine(lambda prompt, _a, _i: scripted_answer(prompt), chunk=4)
    app = make_app(engine)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: app.agents_state == "ready" and screen.humaneval,
                         what="ready")
        for _ in range(8):  # Shift+Tab to the search, as the user did
            if app.focused is screen.query_one("#search"):
                break
            await pilot.press("shift+tab")
        assert app.focused is screen.query_one("#search")
        await pilot.press(*"strlen", "enter", "enter")
        await wait_until(pilot, lambda: screen.problem is not None, what="picked")
        assert screen.problem.entry_point == "strlen"
        await pilot.press("ctrl+r")
        tabs = screen.query_one("#tabs")
        main = screen.query_one("#main-pane", AgentPane)
        for _ in range(3):
            engine.gate.release()
            await pilot.pause(0.05)
        assert tabs.active == "tab-agents", "the agents' code streams on screen"
        for _ in range(200):
            engine.gate.release()
        await wait_until(pilot, lambda: main.state == "done", what="main done")
        table = screen.query_one("#tests", TestsTable)
        await wait_until(pilot, lambda: table.row_count > 0, what="the verdict")
        await pilot.pause(0.1)
        assert tabs.active == "tab-program", "the verdict is on screen, not behind a tab"
        assert "tests" in str(screen.query_one("#summary").render())
