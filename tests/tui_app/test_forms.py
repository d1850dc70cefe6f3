"""The forms as a user on a busy CPU meets them: unticked boxes look unticked, and keys
typed faster than the interface keeps up land where they were aimed."""

from __future__ import annotations

from textual import events

from tests.tui_app.conftest import wait_until


def typed_ahead(app, *keys: str) -> None:
    """Keys read from the terminal before the app handled the first (a UI lagging behind a
    model load): all queued at once on the app (`post_message`, what the terminal driver calls)."""
    for key in keys:
        event = events.Key(key, key if len(key) == 1 else None)
        event.set_sender(app)
        app.post_message(event)


async def test_unticked_boxes_are_drawn_empty(make_app):
    app = make_app(mode="bench", autoload=False)
    async with app.run_test(size=(80, 24)) as pilot:
        schemes = app.screen.query_one("#schemes")
        await pilot.pause()
        marks = {str(schemes.get_option_at_index(i).value): schemes.render_line(i).text[1]
                 for i in range(schemes.option_count)}
        assert marks["sequential"] == "X"
        assert {m for s, m in marks.items() if s != "sequential"} == {" "}, marks
        await pilot.press("f4")
        await wait_until(pilot, lambda: app.current_mode == "train")
        resume = app.screen.query_one("#resume")
        assert "X" not in str(resume.render())
        resume.value = True
        assert "X" in str(resume.render())


async def test_keys_typed_ahead_of_a_lagging_ui_land_in_the_field_tab_moved_to(make_app):
    app = make_app(mode="train", autoload=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        screen.query_one("#group-size").focus()
        await pilot.pause(0.1)
        # G's text is selected on focus: "8" replaces it; Tab; the same for turns.
        typed_ahead(app, "8", "tab", "2", "tab", "3", "e", "-", "5")
        await pilot.pause(0.5)
        values = {f: screen.query_one(f"#{f}").value
                  for f in ("group-size", "turns", "learning-rate")}
        assert values == {"group-size": "8", "turns": "2", "learning-rate": "3e-5"}, values


async def test_memory_is_shown_before_a_job_and_the_tuis_model_can_be_freed_for_it(make_app):
    import sys

    app = make_app(mode="train")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: app.agents_state == "ready")
        await pilot.pause(0.1)
        status = screen.query_one("#train-status")
        await wait_until(pilot, lambda: "GB free" in str(status.render()))
        assert "memory: TUI" in str(status.render())
        screen.query_one("#release").value = True
        screen.start_job([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            await wait_until(pilot, lambda: screen.busy)
            # One model in memory: the child's. The TUI's is freed, and says so.
            assert app.session.agents is None and app.agents_state == "idle"
            assert "freed for the training" in app.status_line
            await pilot.press("escape")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ConfirmDialog")
            await pilot.press("y")
            # The job over, the agents load again by themselves.
            await wait_until(pilot, lambda: app.agents_state == "ready", timeout=30)
            assert app.session.agents is not None and "freed" not in app.status_line
            # What the job peaked at, measured as it ended: the next estimate.
            from tui.memory import job_peak, memory_line

            assert (job_peak("training") or 0) > 1e6
            assert "the last training peaked at" in memory_line("training", 0, False)
        finally:
            if screen.job is not None:
                screen.job.stop(grace=2)
