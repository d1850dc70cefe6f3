"""App-wide behaviour: help, themes, command palette, footer keys, sizes, quitting with jobs."""

from __future__ import annotations

import sys

from tests.tui_app.conftest import wait_until
from tui.jobs import ChildJob
from tui.widgets.agent_pane import AgentPane

MODES = ("agents", "collaborate", "train", "bench")


async def test_function_keys_switch_screens_and_help_opens_and_closes(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        for key, mode in zip(("f2", "f3", "f4", "f5"), MODES):
            await pilot.press(key)
            await wait_until(pilot, lambda m=mode: app.current_mode == m)
        await pilot.press("f1")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "HelpScreen")
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "BenchScreen")


async def test_theme_toggles_and_starts_light(make_app):
    app = make_app(theme="light")
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.theme == "textual-light"
        await pilot.press("ctrl+t")
        assert app.theme == "textual-dark" and app.current_theme.dark
        await pilot.press("ctrl+t")
        assert app.theme == "textual-light"


async def test_every_main_action_is_in_the_footer_and_the_palette(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        for mode in MODES:
            app.switch_mode(mode)
            await pilot.pause()
            screen = app.screen
            shown = {b.binding.action for b in screen.active_bindings.values() if b.binding.show}
            tab_titles = " ".join(str(t.label) for t in screen.query("Tab"))
            for binding in screen.BINDINGS:
                if binding.action.startswith("show_tab"):
                    # An inner tab's key is written on the tab itself ("F7 Problem").
                    assert binding.key.upper() in tab_titles, (mode, binding.key, tab_titles)
                else:
                    assert binding.action in shown, (mode, binding.action)
                assert binding.id, "every binding has an id (keymaps can rebind it)"
            titles = [c.title for c in app.get_system_commands(screen)]
            for binding in screen.BINDINGS:
                assert any(t.startswith(binding.description) for t in titles), (mode, binding)
            assert {"Go to Agents", "Go to Collaborate", "Go to Train", "Go to Bench", "Help",
                    "Toggle light/dark"} <= set(titles)
        # Driving the palette by name runs the action.
        await pilot.press("ctrl+p")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "CommandPalette")
        await pilot.press(*"go to agents")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.current_mode == "agents")


async def test_layout_fits_80x24_and_scales_up(make_app):
    widths = {}
    for size in ((80, 24), (160, 48)):
        app = make_app(problem="HumanEval/0")
        async with app.run_test(size=size) as pilot:
            await wait_until(pilot, lambda a=app: a.agents_state == "ready" and a.screen.problem)
            await pilot.press("ctrl+r")
            await wait_until(pilot, lambda a=app: a.screen.query_one("#tests").row_count > 0)
            await pilot.press("f8")  # the focus (in the verdict's tests) goes with the tab
            await pilot.pause()
            panes = [p for p in app.screen.query(AgentPane) if p.display]  # no contract here
            assert all(p.region.width > 20 and p.region.height >= 5 for p in panes), size
            widths[size] = panes[0].region.width
            assert panes[0].region.right <= panes[1].region.x  # side by side
    assert widths[(160, 48)] > widths[(80, 24)] * 1.8


def _sleeper() -> list[str]:
    return [sys.executable, "-c",
            "import json, time; print(json.dumps({'type': 'log', 'message': 'working'}), flush=True); "
            "time.sleep(120)"]


async def test_quit_with_a_running_job_asks_stop_or_detach(make_app):
    app = make_app(mode="train")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        screen.start_job(_sleeper())
        await wait_until(pilot, lambda: "working" in "\n".join(
            str(line.text) for line in screen.query_one("#log").lines))
        job: ChildJob = screen.job
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "QuitDialog")
        await pilot.press("escape")  # stay
        await wait_until(pilot, lambda: app.screen is screen)
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "QuitDialog")
        await pilot.press("d")  # detach: the app quits, the run goes on
    try:
        assert job.running, "a detached job keeps running"
    finally:
        job.stop(grace=2)
    assert not job.running

    app = make_app(mode="train")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        screen.start_job(_sleeper())
        job = screen.job
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "QuitDialog")
        await pilot.press("s")  # stop, then quit
        await wait_until(pilot, lambda: not job.running, timeout=30)
    assert job.returncode is not None
