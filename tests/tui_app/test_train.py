"""Train screen: a short real MAGRPO run of the tiny model as a child process, then Stop."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest

from coopcode.core import events as ev
from tests.tui_app.conftest import wait_until
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
        # (the row can appear before the run's manifest is written, its step "?" until the
        # next refresh: wait for the step)
        def step_cell() -> str:
            return str(table.get_row_at(0)[-2]) if table.row_count == 1 else ""

        await wait_until(pilot, lambda: step_cell().startswith("0 of "), timeout=120,
                         what="a checkpoint and its kept step")
        row = [str(c) for c in table.get_row_at(0)]
        # The form validates (every 10 steps, from step 0): the run's adapters are the kept
        # step's, and the step cell says so; at 100 columns the optional algo column may go.
        assert row[0] == "tiny-run" and row[-2].startswith("0 of ") and row[-2].endswith("/20")
        assert row[1] in ("magrpo", row[-2])
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
        options = [v for _label, v in app.screen.query_one("#helper-adapter").options]
        assert "checkpoints/tiny-run" in options


def header(screen) -> str:
    return str(screen.query_one("#train-status").render())


async def test_the_header_is_true_from_the_first_second_and_after_a_stop(make_app):
    # The header says what the run is doing at every moment: not "idle" while a new run
    # loads, not the earlier run's step on a new one, not "sampling..." after a stop.
    app = make_app(mode="train", autoload=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        # An earlier run's last words.
        screen.handle_event(ev.Started(job="train", total=1))
        await pilot.pause()
        # A new run: a real child that loads (here: sleeps) before its first event.
        screen.start_job([sys.executable, "-c", "import time; time.sleep(60)"])
        await pilot.pause()
        assert header(screen).startswith("starting · loading the model"), header(screen)
        screen.handle_event(ev.Log(message="loading qwen2.5-coder-0.5b-instruct"))
        await pilot.pause()
        assert header(screen) == "starting · loading qwen2.5-coder-0.5b-instruct"
        screen.handle_event(ev.Started(job="train", total=20))
        screen.handle_event(ev.Progress(done=0, total=20, label="step 1/20: sampling, 412 tokens"))
        await pilot.pause()
        assert header(screen) == "step 1/20: sampling, 412 tokens"
        # Stopped before step 1 ended: no Finished event comes.
        await pilot.press("escape")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "ConfirmDialog")
        await pilot.press("y")
        await wait_until(pilot, lambda: not screen.busy and "sampling" not in header(screen),
                         what="the stop said")
        assert header(screen) == "stopped before step 1: nothing saved"


@pytest.mark.slow  # a child process loads the tiny model: ~40 s here
async def test_a_real_run_says_what_it_does_before_its_first_step_ends(make_app,
                                                                       tiny_model_dir: Path):
    app = make_app(spec=AgentsSpec(model=str(tiny_model_dir), sandbox="process"), mode="train",
                   autoload=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        for fid, value in {"group-size": "2", "steps": "3", "max-new-tokens": "48",
                           "problems": "humaneval:train", "run-name": "tiny-header"}.items():
            screen.query_one(f"#{fid}").value = value
        seen: list[str] = []
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert header(screen).startswith("starting"), header(screen)
        # Every header the run shows, to its end: on a loaded machine the events of a short
        # step can arrive together, so one step's counts may never be on screen between polls.
        deadline = time.monotonic() + 240
        while screen.busy and time.monotonic() < deadline:
            text = header(screen)
            if not seen or seen[-1] != text:
                seen.append(text)
            await pilot.pause(0.02)
        assert any(s.startswith("starting · loading") for s in seen), seen
        counts = [int(m.group(1)) for s in seen
                  if (m := re.search(r"step \d/3: \w+, (\d+) tokens", s))]
        assert counts and max(counts) > 0, seen
        await wait_until(pilot, lambda: not screen.busy, timeout=240, what="the run's end")
        assert header(screen).startswith("finished at step 3/3"), header(screen)
