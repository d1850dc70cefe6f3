"""Trained adapters from anywhere in the TUI, and the defaults that follow them.

The app runs in an empty folder: the committed runs are found through COOPCODE_CHECKPOINTS,
as a user's would be. The agents are the scripted demo pair; the program runs in the real
process sandbox.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tui_app.conftest import record_notes, wait_until
from tests.tui_app.test_config_forms import parsed
from tui.session import AgentsSpec

REPO = Path(__file__).resolve().parents[2]
PAIR, SINGLE = "compose-magrpo-0.5b", "compose-grpo-0.5b"  # contract + own; one agent
TASK = "compose/all_prefixes_of_anti_shuffle"


@pytest.fixture
def found(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The repository's runs, found by the variable from the empty folder the app runs in."""
    monkeypatch.setenv("COOPCODE_CHECKPOINTS", str(REPO / "checkpoints"))
    return REPO / "checkpoints"


def pair_spec(found: Path) -> AgentsSpec:
    """What `coopcode tui --adapters compose-magrpo-0.5b` loads (tui.cli)."""
    from coopcode import choose_adapters

    chosen = choose_adapters(PAIR, None, None)
    assert chosen.helper == str(found / PAIR / "helper")
    return AgentsSpec(sandbox="process", helper_adapter=chosen.helper, main_adapter=chosen.main)


async def test_the_pair_runs_under_its_scheme_and_reward_and_bench_and_train_follow(make_app, found):
    app = make_app(spec=pair_spec(found), problem=TASK)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: app.agents_state == "ready" and screen.problem)
        # The contract pair's own scheme and reward, not sequential and the default (seed).
        await wait_until(pilot, lambda: screen.query_one("#scheme").value == "contract")
        assert screen.query_one("#reward").value == "own"
        assert screen.query_one("#sees").value == "contract" and screen.query_one("#sees").display
        await pilot.press("ctrl+r")
        summary = screen.query_one("#summary")
        await wait_until(pilot, lambda: "PASSED" in str(summary.render()), timeout=30)
        assert "reward (own)" in str(summary.render())
        # The user's choice stays until other adapters load.
        screen.query_one("#reward").value = "seed"
        app.load_agents(app.session.spec)
        await wait_until(pilot, lambda: app.agents_state == "ready")
        await pilot.pause(0.2)
        assert screen.query_one("#reward").value == "seed"

        # Bench: before, helper/main `none` and humaneval:test, so Ctrl+R benched another thing.
        await pilot.press("f5")
        bench = app.screen
        await wait_until(pilot, lambda: bench.query_one("#split").value == "compose:test")
        assert bench.query_one("#schemes").selected == ["contract"]
        assert bench.query_one("#reward").value == "own"
        assert PAIR in str(bench.query_one("#agents-note").render())
        config = parsed(bench.build_argv()[0])
        assert (config.problems, config.schemes, config.reward) == ("compose:test", ("contract",), "own")
        argv = bench.build_argv()[0]
        assert argv[argv.index("--helper-adapter") + 1] == str(found / PAIR / "helper")
        assert argv[argv.index("--main-adapter") + 1] == str(found / PAIR / "main")
        # The agents field: none, or another run, each with its own recipe.
        bench.query_one("#agents").value = str(found / SINGLE)
        await wait_until(pilot, lambda: bench.query_one("#schemes").selected == ["single"])
        assert "--helper-adapter" not in bench.build_argv()[0]

        # Train: the loaded pair trained further, on the recipe it was trained with.
        await pilot.press("f4")
        train = app.screen
        await wait_until(pilot, lambda: train.query_one("#scheme").value == "contract")
        assert (train.query_one("#algo").value, train.query_one("#reward").value,
                train.query_one("#problems").value) == ("magrpo", "own", "compose:train")
        config = parsed(train.build_argv())
        assert (config.scheme, config.reward, config.problems) == ("contract", "own", "compose:train")
        assert (config.helper_init, config.main_init) == (str(found / PAIR / "helper"),
                                                           str(found / PAIR / "main"))
        train.query_one("#start-from").value = "base"
        await pilot.pause()
        assert parsed(train.build_argv()).helper_init is None


async def test_the_agents_screen_finds_runs_anywhere_and_says_where_it_looked(make_app, found):
    app = make_app(mode="agents", autoload=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        run = screen.query_one("#run")
        await wait_until(pilot, lambda: len(run.options) > 5, what="the runs listed")
        # Runs found outside the repository, and where it looked said.
        hint = str(screen.query_one("#runs-hint").render())
        assert "checkpoints (here)" in " ".join(hint.split()) and str(found) in hint.replace("\n", "")
        assert any(PAIR in str(label) and "pair" in str(label) for label, _ in run.options)
        # Ctrl+L says what it found where.
        notes = record_notes(app)
        await pilot.press("ctrl+l")
        await wait_until(pilot, lambda: any("runs in" in note for note in notes))
        # A run sets both agents; a single agent's sets main alone.
        run.value = str(found / PAIR)
        await wait_until(pilot, lambda: screen.query_one("#helper-adapter").value == str(found / PAIR))
        assert screen.query_one("#main-adapter").value == str(found / PAIR)
        run.value = str(found / SINGLE)
        await wait_until(pilot, lambda: screen.query_one("#helper-adapter").value == "none")
        assert screen.query_one("#main-adapter").value == str(found / SINGLE)
        # A run by name, typed, as --adapters takes it.
        typed = screen.query_one("#run-other")
        typed.value = PAIR
        typed.focus()
        await pilot.press("enter")
        run.value = str(found / SINGLE)  # something else first: the name then changes it
        await wait_until(pilot, lambda: screen.query_one("#helper-adapter").value == "none")
        await pilot.press("enter")
        await wait_until(pilot, lambda: screen.query_one("#helper-adapter").value == str(found / PAIR))
        assert screen.query_one("#run").value == str(found / PAIR)  # the run it is, named
        typed.value = "no-such-run"
        await pilot.press("enter")
        await wait_until(pilot, lambda: any("no such run" in note for note in notes))
        # Every option is one short line: a long one wrapped into the label below (`Macredit`).
        for select_id in ("#run", "#helper-adapter", "#main-adapter"):
            select = screen.query_one(select_id)
            long = [str(label) for label, _ in select.options
                    if len(str(label)) > select.size.width - 3]
            assert not long, (select_id, select.size.width, long)
