"""Bench screen: a short real bench of the tiny model as a child process; stop; earlier runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.tui_app.conftest import wait_until
from tui.session import AgentsSpec


def set_form(screen, **values: str) -> None:
    for fid, value in values.items():
        screen.query_one(f"#{fid}").value = value


@pytest.mark.slow  # a child process loads the tiny model: ~40 s here
async def test_short_bench_fills_the_table_then_compares_runs(make_app, tiny_model_dir: Path,
                                                               workdir: Path):
    # An earlier run to compare with, as `coopcode bench --out runs/earlier` leaves it.
    (workdir / "runs" / "earlier").mkdir(parents=True)
    (workdir / "runs" / "earlier" / "summary.json").write_text(json.dumps(
        {"ks": [1], "rows": [{"method": "sequential", "pass@1": 0.5, "acc@1": 0.75, "problems": 4}]}))
    app = make_app(spec=AgentsSpec(model=str(tiny_model_dir), sandbox="process"), mode="bench",
                   autoload=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        # 128 tokens an agent: long enough that the screen's timer (every 0.5 s) sees the
        # samples being written (16 came and went between two of its reads)
        set_form(screen, ks="1", n="2", limit="1", **{"max-new-tokens": "128", "out-name": "tiny"})
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: screen.job is not None)
        bar = screen.query_one("#bench-progress")
        table = screen.query_one("#live-table")
        # A bench never sits on "0/1 samples" with nothing moving: it says loading first,
        # then each sample's tokens as they are written.
        rate, detail = screen.query_one("#bench-rate"), screen.query_one("#bench-detail")
        seen: list[str] = []
        while screen.busy:
            now = f"{rate.render()} | {detail.render()}"
            if not seen or seen[-1] != now:
                seen.append(now)
            await pilot.pause(0.02)
        assert seen[0].startswith("starting · loading the model"), seen
        assert any("starting · loading" in s and "model…" not in s for s in seen), seen
        assert any(re.search(r"0/2 samples \| writing [12]: \d+", s) for s in seen), seen
        assert screen.job.returncode == 0, screen.job.stderr_tail()
        assert bar.total == 2 and bar.progress == 2
        assert table.row_count == 1
        row = [str(c) for c in table.get_row_at(0)]
        assert row[0] == "sequential" and row[1].endswith("%") and row[-1] == "1"
        assert "done" in str(screen.query_one("#bench-rate").render())
        assert (workdir / "runs" / "tiny" / "summary.json").exists()
        # Both runs are listed; choosing them puts their rows side by side.
        runs = screen.query_one("#runs")
        await wait_until(pilot, lambda: runs.option_count == 2)
        runs.select_all()
        compare = screen.query_one("#compare")
        await wait_until(pilot, lambda: compare.row_count == 2)
        labels = sorted(str(compare.get_row_at(i)[0]) for i in range(2))
        assert labels == ["earlier: sequential", "tiny: sequential"]
        assert "50.0%" in [str(c) for c in compare.get_row_at(
            [str(compare.get_row_at(i)[0]) for i in range(2)].index("earlier: sequential"))]


async def test_stop_ends_the_child_and_the_ui_stays_usable(make_app, tiny_model_dir: Path):
    app = make_app(spec=AgentsSpec(model=str(tiny_model_dir), sandbox="process"), mode="bench",
                   autoload=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        set_form(screen, ks="1", n="2", limit="20", **{"max-new-tokens": "64", "out-name": "long"})
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: screen.busy)
        await wait_until(pilot, lambda: screen.query_one("#bench-progress").total is not None,
                         timeout=120, what="the child started")
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "ConfirmDialog")
        await pilot.press("y")
        def log() -> str:
            return "\n".join(str(line.text) for line in screen.query_one("#log").lines)

        await wait_until(pilot, lambda: "bench stopped" in log(), timeout=60, what="stopped")
        assert screen.job.returncode != 0 and not screen.busy
        assert not screen.query_one("#start").disabled


async def test_the_estimate_is_samples_times_the_seconds_measured_here(make_app, workdir: Path):
    app = make_app(mode="bench")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        detail = screen.query_one("#bench-detail")
        await wait_until(pilot, lambda: app.agents_state == "ready")
        # Nothing measured yet: it says so rather than guess.
        set_form(screen, n="2", limit="5")
        await wait_until(pilot, lambda: "not measured here yet" in str(detail.render()))
        assert str(detail.render()).startswith("10 samples")
        # A bench of this model ran here: 400 samples in 800 s.
        run = workdir / "runs" / "earlier"
        run.mkdir(parents=True)
        (run / "meta.json").write_text(json.dumps({
            "model": "scripted-demo", "last_session_seconds": 800.0,
            "last_session": {"samples": 400}}))
        set_form(screen, n="3")
        await wait_until(pilot, lambda: "2.0 s" in str(detail.render()))
        estimate, memory = str(detail.render()).split("\n", 1)
        assert estimate == "15 samples × 2.0 s ≈ 30s (measured: runs/earlier, 400 samples)"
        assert memory.startswith("memory: TUI") and "GB free" in memory
        # The CPU-sized defaults: minutes, not the CLI's hour.
        assert [screen.query_one(f"#{f}").value for f in ("ks", "n", "limit")] == ["1,2", "3", "5"]
