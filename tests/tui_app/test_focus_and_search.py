"""Typing reaches something you can see: the focus starts in the search box and is
drawn plainly, `/` goes there from anywhere (and the palette has it), the list stops at its
ends, a problem given on the command line is shown in the list, the F-keys work from every
widget, the program editor included."""

from __future__ import annotations

from typing import Any

from textual.widgets import Input, Select, TextArea

from tests.tui_app.conftest import wait_until

TASK = "compose/all_prefixes_of_anti_shuffle"


def background(widget: Any) -> str:
    """The colour a widget (a compact drop-down: its current value's box) is drawn on."""
    target = widget.query_one("SelectCurrent") if isinstance(widget, Select) else widget
    return str(target.styles.background)


async def test_typing_at_once_searches_and_the_focus_is_drawn(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.humaneval, what="the problems listed")
        # Typing searches at once: the first thing a user does is look for a problem.
        assert isinstance(app.focused, Input) and app.focused.id == "search"
        await pilot.press(*"compose:test")
        assert screen.query_one("#search").value == "compose:test"
        listing = screen.query_one("#problems")
        await wait_until(pilot, lambda: listing.problem_count == 88)
        # Each kind of compact field looks different when it has the focus.
        for selector in ("#scheme", "#search", "#run-button"):
            widget = screen.query_one(selector)
            screen.query_one("#turns").focus()
            await pilot.pause()
            blurred = background(widget)
            widget.focus()
            await pilot.pause()
            assert background(widget) != blurred, selector


async def test_slash_goes_to_the_search_from_anywhere_and_the_palette_has_it(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen.humaneval)
        await pilot.press("f5")
        await wait_until(pilot, lambda: app.current_mode == "bench")
        app.screen.query_one("#split").focus()
        await pilot.press("slash")
        await wait_until(pilot, lambda: app.current_mode == "collaborate"
                         and getattr(app.focused, "id", "") == "search")
        assert app.screen.query_one("#tabs").active == "tab-problem"
        # In a field or an editor `/` is text, not a jump.
        await pilot.press("a", "slash", "b")
        assert app.screen.query_one("#search").value == "a/b"
        # `/` starts a new search: what is typed after it replaces the last one.
        app.screen.query_one("#problems").focus()
        await pilot.press("slash", "s", "u", "m")
        assert app.screen.query_one("#search").value == "sum"
        prompt = app.screen.query_one("#prompt", TextArea)
        prompt.focus()
        await pilot.press("slash")
        assert "/" in prompt.text and app.focused is prompt
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Search problems (/)" in titles
        from tui.screens.keys import screen_keys

        assert ("/", "search the problems (Collaborate's search box), from any screen",
                "everywhere") in screen_keys(app.screen)


async def test_the_list_stops_at_its_ends_and_shows_the_problem_given(make_app):
    app = make_app(problem=TASK)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        listing = screen.query_one("#problems")
        await wait_until(pilot, lambda: screen.problem is not None)
        # The list shows the problem given, a compose one too (far below HumanEval/0).
        await wait_until(pilot, lambda: listing.highlighted_option is not None
                         and listing.highlighted_option.id == TASK)
        assert listing.scroll_y > 0  # scrolled down to it, under compose:test
        search = screen.query_one("#search")
        search.value = "sum"
        await wait_until(pilot, lambda: listing.problem_count > 3)
        listing.focus()
        await pilot.pause()
        count = listing.problem_count
        first = listing.highlighted
        for _ in range(count + 5):  # Down stops at the end: no jump back to the top
            await pilot.press("down")
        last = listing.highlighted
        assert last > first and not listing.get_option_at_index(last).disabled
        assert all(listing.get_option_at_index(i).disabled for i in range(last + 1, listing.option_count))
        for _ in range(count + 5):
            await pilot.press("up")
            if app.focused is search:
                break
        assert app.focused is search  # above the first problem: the search box
        assert listing.highlighted == first


async def test_every_f_key_works_from_every_widget_the_editors_included(make_app):
    app = make_app(problem="HumanEval/0")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: app.agents_state == "ready" and screen.problem)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: screen.query_one("#tests").row_count > 0)
        focusable = [w for w in screen.query("*") if w.focusable]
        assert any(isinstance(w, TextArea) and w.id == "program" for w in focusable)
        for widget in focusable:
            for key, mode in (("f5", "bench"), ("f4", "train"), ("f2", "agents"),
                              ("f3", "collaborate")):
                if mode == "collaborate":
                    await pilot.press(key)
                    await wait_until(pilot, lambda: app.current_mode == "collaborate")
                    continue
                widget.focus()
                await pilot.pause()
                await pilot.press(key)
                await wait_until(pilot, lambda m=mode: app.current_mode == m,
                                 what=f"{key} from {widget!r}")
                await pilot.press("f3")
                await wait_until(pilot, lambda: app.current_mode == "collaborate")
        for key, tab in (("f7", "tab-problem"), ("f8", "tab-agents"), ("f9", "tab-program")):
            screen.query_one("#program").focus()
            await pilot.press(key)
            await wait_until(pilot, lambda t=tab: screen.query_one("#tabs").active == t)
