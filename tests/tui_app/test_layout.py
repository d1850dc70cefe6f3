"""80x24 keeps every figure, and every reward is named.

Labels may be cut or wrapped to fit; the adapters' names, the sandbox state, pass@k,
steps, rewards and the verdict may not."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from coopcode.core import events as ev
from tests.tui_app.conftest import wait_until
from tui.session import AgentsSpec

REPO = Path(__file__).resolve().parents[2]
CREDIT = "magrpo-credit-0.5b-seed1"  # trained with the credit reward (max 1.45)
COOP = "magrpo-coop-0.5b"  # with the coop reward (max 4.0)


@pytest.fixture
def runs(workdir: Path) -> Path:
    """Two real checkpoint runs (linked from the repository) and two bench summaries."""
    (workdir / "checkpoints").mkdir()
    for name in (CREDIT, COOP):
        (workdir / "checkpoints" / name).symlink_to(REPO / "checkpoints" / name)
    for name, score in (("a-long-bench-run-name-one", 0.25), ("a-long-bench-run-name-two", 0.5)):
        (workdir / "runs" / name).mkdir(parents=True)
        (workdir / "runs" / name / "summary.json").write_text(json.dumps({"ks": [1, 3], "rows": [
            {"method": f"{name}-method", "pass@1": score, "pass@3": 0.6, "acc@1": 0.4,
             "acc@3": 0.7, "problems": 4, "pass@1_se": 0.1, "pass@1_ci": [0.05, 0.45]}]}))
    return workdir


def fits(widget) -> bool:
    """Nothing of the widget's content lies beyond what it shows."""
    return widget.max_scroll_x == 0


def status_text(app) -> str:
    return str(app.screen.query_one("#nav-status").render())


async def test_the_top_bar_keeps_the_adapters_and_the_sandbox_at_80_columns(make_app, runs):
    adapter = str(runs / "checkpoints" / CREDIT)
    app = make_app(spec=AgentsSpec(sandbox="process", helper_adapter=adapter, main_adapter=adapter))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.agents_state == "ready" and "process" in app.status_line)
        await pilot.pause(0.1)
        status = app.screen.query_one("#nav-status")
        shown = status_text(app)
        assert CREDIT in shown and "sandbox: process" in shown, shown
        assert len(shown.rstrip()) <= status.content_region.width, "nothing cut off"
        assert "F5 Bench" in str(app.screen.query_one("#nav-modes").render())


async def test_the_collaborate_verdict_is_whole_at_80x24(make_app):
    app = make_app(problem="HumanEval/0")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: app.agents_state == "ready" and screen.problem)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: screen.query_one("#tests").row_count > 0)
        await pilot.pause(0.2)
        box, summary = screen.query_one("#summary-box"), screen.query_one("#summary")
        text = str(summary.render())
        assert "PASSED 7/7 tests" in text and "pattern" in text
        assert box.max_scroll_y == 0 and box.size.height >= summary.size.height >= 4


async def test_bench_runs_show_their_pass_at_k_and_compare_whole_at_80x24(make_app, runs):
    app = make_app(mode="bench")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await pilot.press("f8")
        listing = screen.query_one("#runs")
        await wait_until(pilot, lambda: listing.option_count == 2)
        for i in range(2):
            prompt = str(listing.get_option_at_index(i).prompt)
            assert prompt.startswith(("25.0% pass@1", "50.0% pass@1")), prompt
        # The visible width of each option holds the figure (names may be cut after it).
        assert listing.scrollable_content_region.width >= len("25.0% pass@1  ") + 4
        listing.select_all()
        compare = screen.query_one("#compare")
        await wait_until(pilot, lambda: compare.row_count > 0)
        await pilot.pause(0.3)
        cells = " ".join(str(c) for r in range(compare.row_count) for c in compare.get_row_at(r))
        assert "25.0%" in cells and "50.0%" in cells and "60.0%" in cells
        assert fits(compare), "every figure in view without scrolling sideways"


async def test_the_checkpoint_table_keeps_steps_and_named_rewards_at_80x24(make_app, runs):
    app = make_app(mode="train", autoload=False)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.query_one("#checkpoints")
        await wait_until(pilot, lambda: table.row_count == 2)
        await pilot.pause(0.3)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(2)]
        rewards = sorted(r[-1].split(" ")[1] for r in rows)
        assert rewards == ["coop", "credit"], rows
        assert all(r[-2] == "60/60" for r in rows), rows
        assert fits(table), rows


@pytest.mark.parametrize("size", [(100, 30), (80, 24)])
async def test_the_quit_dialog_is_whole(make_app, size):
    app = make_app(mode="train", autoload=False)
    async with app.run_test(size=size) as pilot:
        screen = app.screen
        screen.start_job([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            await wait_until(pilot, lambda: screen.busy)
            await pilot.press("ctrl+q")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "QuitDialog")
            await pilot.pause(0.2)
            box = app.screen.query_one(".dialog").region
            for widget in app.screen.query(".dialog *"):
                assert box.contains_region(widget.region), (widget, widget.region, box)
        finally:
            screen.job.stop(grace=2)


# -- rewards with their names ------------------------------------------------------------

async def test_agents_screen_names_each_adapters_reward(make_app, runs):
    app = make_app(mode="agents")
    async with app.run_test(size=(100, 30)) as pilot:
        select = app.screen.query_one("#helper-adapter")
        await wait_until(pilot, lambda: len(select.options) == 3)
        labels = " | ".join(str(label) for label, _v in select.options)
        assert "credit" in labels and "coop" in labels, labels


async def test_train_header_names_the_runs_reward(make_app):
    app = make_app(mode="train", autoload=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        screen.handle_event(ev.Started(job="train", total=20, meta={"reward": "credit"}))
        screen.handle_event(ev.Metric(step=1, values={"reward/mean": 0.784}))
        screen.handle_event(ev.Progress(done=1, total=20, eta_s=60.0))
        await pilot.pause()
        assert "reward 0.784 credit" in str(screen.query_one("#train-status").render())


async def test_collaborate_scores_with_the_adapters_reward_and_lets_the_user_choose(make_app, runs):
    adapter = str(runs / "checkpoints" / CREDIT)
    app = make_app(spec=AgentsSpec(sandbox="process", helper_adapter=adapter, main_adapter=adapter),
                   problem="HumanEval/0")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        reward = screen.query_one("#reward")
        await wait_until(pilot, lambda: app.agents_state == "ready" and screen.problem)
        await wait_until(pilot, lambda: reward.value == "credit", what="the trained reward")
        summary = screen.query_one("#summary")
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: "PASSED" in str(summary.render()))
        assert "reward (credit) 1.45" in str(summary.render())
        reward.value = "seed"  # the user's choice, kept
        await pilot.press("ctrl+g")
        await wait_until(pilot, lambda: "reward (seed)" in str(summary.render()))
        assert "reward (seed) 1.20" in str(summary.render())
