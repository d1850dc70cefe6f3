"""Train screen: a short real MAGRPO run of the tiny model as a child process, then Stop."""

from __future__ import annotations

from pathlib import Path

import pytest

from coopcode.core import events as ev
from tests.tui.conftest import wait_until
from tui.session import AgentsSpec
from tui.widgets.plot import PlotView


async def test_the_curves_draw_the_rewards_terms_and_the_guards_warnings_stay_in_view(make_app):
    app = make_app(mode="train", autoload=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert screen.query_one("#reward").is_blank()  # the reward: the algorithm's default
        warnings = screen.query_one("#train-warnings")
        assert not warnings.display
        screen.handle_event(ev.Started(job="train", total=60))
        for step in (1, 2):  # a coop run's metrics: its own terms, whatever they are
            screen.handle_event(ev.Metric(step=step, values={
                "reward/mean": 2.0 + step, "reward/helper": 0.4, "reward/uses": 0.25 * step,
                "reward/beyond_wrapper": 0.5, "pass_rate": 0.25}))
        series = screen.query_one("#reward-plot", PlotView).series
        assert set(series) == {"reward", "helper", "uses", "beyond_wrapper", "pass rate"}
        assert [y for _x, y in series["uses"]] == [0.25, 0.5]
        line = ("helper-ignored: main stopped calling the helper: 40% of joint actions in steps "
                "1-10, 0% in steps 31-40")
        screen.handle_event(ev.Log(message=line, level="warning"))
        await pilot.pause()
        assert warnings.display and "main stopped calling the helper" in str(warnings.render())
        assert screen.warnings == [line]
        screen.handle_event(ev.Started(job="train", total=60))  # a new run starts clean
        await pilot.pause()
        assert not warnings.display and screen.warnings == []


@pytest.mark.slow  # a child process loads the tiny model: ~40 s here
async def test_start_watch_curves_and_checkpoints_then_stop(make_app, tiny_model_dir: Path,
                                                             workdir: Path):
    app = make_app(spec=AgentsSpec(model=str(tiny_model_dir), sandbox="process"), mode="train",
                   autoload=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        # Small on purpose: G=2, 16 tokens, 2 problems: each step takes seconds on the tiny model.
        for fid, value in {"group-size": "2", "steps": "20", "max-new-tokens": "16",
                           "problems": "humaneval:train", "run-name": "tiny-run"}.items():
            screen.query_one(f"#{fid}").value = value
        argv = screen.build_argv()
        assert argv[argv.index("--out") + 1] == "checkpoints/tiny-run"
        assert argv[argv.index("--model") + 1] == str(tiny_model_dir)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: screen.busy)
        assert screen.query_one("#start").disabled and not screen.query_one("#stop").disabled
        # Live curves: the first step's metrics reach both plots.
        reward = screen.query_one("#reward-plot", PlotView)
        loss = screen.query_one("#loss-plot", PlotView)
        await wait_until(pilot, lambda: reward.series.get("reward"), timeout=240, what="a metric")
        assert {"reward", "syntax", "runs", "tests", "pass rate"} <= set(reward.series)
        assert loss.series.get("total") and loss.series.get("helper") and loss.series.get("main")
        # The checkpoint list updates as the run saves (every step for a short run).
        table = screen.query_one("#checkpoints")
        await wait_until(pilot, lambda: table.row_count == 1, timeout=120, what="a checkpoint")
        row = [str(c) for c in table.get_row_at(0)]
        assert row[0] == "tiny-run" and row[1] == "magrpo"
        assert "step" in str(screen.query_one("#train-status").render())
        # Stop: confirmed, the child saves and exits, the run resumes later with --resume.
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "ConfirmDialog")
        await pilot.press("y")

        def log() -> str:
            return "\n".join(str(line.text) for line in screen.query_one("#log").lines)

        await wait_until(pilot, lambda: "training stopped" in log() or "training finished" in log(),
                         timeout=120, what="the run stopped")
        assert not screen.busy and not screen.query_one("#start").disabled
        assert (workdir / "checkpoints" / "tiny-run" / "helper" / "adapter_config.json").exists()
        assert (workdir / "checkpoints" / "tiny-run" / "main" / "adapter_config.json").exists()
        steps = len(reward.series["reward"])
        assert 1 <= steps < 20, "stopped before the end"
        # The Agents screen offers the new adapters.
        await pilot.press("f2")
        await wait_until(pilot, lambda: app.current_mode == "agents")
        options = [v for _label, v in app.screen.query_one("#helper-adapter")._options]
        assert "checkpoints/tiny-run" in options
