"""Bad input said early and whole: adapters checked before the base
loads, every bad path named and kept in view on F2; a prompt in prose gets a hint."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import TextArea

from tests.tui_app.conftest import record_notes, wait_until
from tui.demo import demo_engine
from tui.session import AgentsSpec


async def test_bad_adapters_are_named_before_the_base_loads_and_stay_on_f2(make_app,
                                                                           workdir: Path):
    not_peft = workdir / "not-an-adapter"
    not_peft.mkdir()
    missing = str(workdir / "no-such-run")
    loads: list[str | None] = []

    def factory(model, _progress):
        loads.append(model)  # the base: never loaded for a choice that cannot work
        return demo_engine(delay=0.0)

    app = make_app(spec=AgentsSpec(sandbox="process", helper_adapter=missing,
                                   main_adapter=str(not_peft)),
                   engine_factory=factory, mode="agents")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.agents_state == "error")
        assert loads == []
        assert missing in app.agents_error and str(not_peft) in app.agents_error
        assert "no such folder" in app.agents_error and "no adapter_config.json" in app.agents_error
        screen = app.screen
        state = str(screen.query_one("#agents-state").render())
        assert missing in state and str(not_peft) in state
        # F2 shows the paths that were rejected, and why, not "none".
        assert screen.query_one("#helper-adapter").value == missing
        assert screen.query_one("#main-adapter").value == str(not_peft)
        assert "no such folder" in str(screen.query_one("#helper-manifest").render())
        assert "adapter_config.json" in str(screen.query_one("#main-manifest").render())


async def test_a_prompt_in_plain_english_gets_a_hint_that_a_stub_is_expected(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: app.agents_state == "ready")
        prompt = screen.query_one("#prompt", TextArea)
        prompt.load_text("Write a function that reverses a string.")
        notes = record_notes(app)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: notes, what="a notification")
        text = " ".join(notes)
        assert "editor.py:1" in text and "function stub" in text and "def name(args):" in text
        assert not screen.run.generating
