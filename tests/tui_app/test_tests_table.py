"""The tests table redraws on resize (the new width is known only after the layout settles):
that redraw must show the verdict of the moment, never one it has since replaced or dropped."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult

from tui.widgets.results import TestsTable


def verdict(status: str, n: int = 2) -> dict[str, Any]:
    return {"status": status, "n_tests": n,
            "tests": [{"index": i, "status": status, "source": f"assert f({i}) == {i}",
                       "message": ""} for i in range(n)]}


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield TestsTable(id="tests")


def statuses(table: TestsTable) -> list[str]:
    return [str(table.get_row_at(i)[1]) for i in range(table.row_count)]


async def test_a_redraw_scheduled_before_a_new_verdict_draws_the_new_one():
    # The order a loaded machine gave (Ctrl+G in the TUI): the summary's change resizes the
    # table, which schedules a redraw; the next verdict arrives before the screen refreshes.
    app = TableApp()
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.query_one(TestsTable)
        table.show(verdict("passed"))
        await pilot.pause()
        table.on_resize()
        table.show(verdict("failed"))  # as many rows: the table keeps its size, no new resize
        await pilot.pause()  # the screen refreshes: the scheduled redraw runs
        await pilot.pause(0.2)
        assert statuses(table) == ["failed", "failed"]


async def test_a_forgotten_verdict_stays_gone_after_a_resize():
    # A new run empties the table; resizing the terminal while the agents write must not
    # bring the last run's rows back.
    app = TableApp()
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.query_one(TestsTable)
        table.show(verdict("passed"))
        await pilot.pause()
        assert table.row_count == 2
        table.forget()
        await pilot.resize_terminal(100, 30)
        await pilot.pause(0.2)
        assert table.row_count == 0
        table.show(verdict("failed"))  # and it still shows what comes next, at the new width
        await pilot.resize_terminal(80, 24)
        await pilot.pause(0.2)
        assert statuses(table) == ["failed", "failed"]
