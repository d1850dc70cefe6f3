"""Bench screen: intervals in the tables, the paired comparison of chosen runs, and the
cooperation patterns after a run."""

from __future__ import annotations

import json
from pathlib import Path

from coopcode.core import events as ev
from coopcode.evaluation.compare import summarize_folder
from tests.test_compare import A_COUNTS, B_COUNTS, TASKS, make_run
from tests.tui_app.conftest import wait_until


def bench_run(folder: Path, counts: list[int]) -> None:
    """A results folder with samples, meta and the summary `coopcode bench` would write."""
    make_run(folder, dict(zip(TASKS, counts)), 4)
    (folder / "summary.json").write_text(json.dumps(summarize_folder(folder).to_dict()))


async def test_runs_tab_pairs_the_chosen_runs(make_app, workdir: Path):
    bench_run(workdir / "runs" / "untrained", A_COUNTS)
    bench_run(workdir / "runs" / "trained", B_COUNTS)
    app = make_app(mode="bench", autoload=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        screen.query_one("#bench-tabs").active = "tab-runs"
        runs = screen.query_one("#runs")
        await wait_until(pilot, lambda: runs.option_count == 2)
        paired = screen.query_one("#paired")
        assert "choose two or more runs" in str(paired.render())
        # the baseline is the run chosen first
        runs.select(str(Path("runs") / "untrained"))
        runs.select(str(Path("runs") / "trained"))
        compare = screen.query_one("#compare")
        # Both runs shown: a row each, or, where that is wider than the column (it is at
        # 120 columns once the layout has settled), a column each. Which one depends on
        # whether the table had its width yet when the selection came.
        await wait_until(pilot, lambda: len(compare.shown[1]) == 2 and compare.row_count
                         == (5 if compare.transposed else 2), what="both runs in the table")
        # Either way, row 0's second cell is the baseline's pass@1.
        cells = [str(c) for c in compare.get_row_at(0)]
        # each score carries its standard error, then its 95% interval on a second line
        assert "±" in cells[1] and "–" in cells[1].split("\n")[1]
        text = str(paired.render())
        assert "trained − untrained" in text
        assert "pass@1 +15.0 pts [-2.3, +32.3]" in text
        assert "5 gained / 1 lost" in text


async def test_patterns_show_after_a_run(make_app):
    app = make_app(mode="bench", autoload=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        patterns = screen.query_one("#bench-patterns")
        assert not patterns.display  # nothing to say before a run ends
        row = {"method": "sequential", "problems": 4, "pass@1": 0.5, "acc@1": 0.6,
               "pass@1_se": 0.1, "pass@1_ci": [0.3, 0.7], "acc@1_se": 0.1, "acc@1_ci": [0.4, 0.8],
               "cooperation": {"ignored": 0.25, "wrapper": 0.0, "fallback": 0.0,
                               "decorator": 0.5, "coordinator": 0.25, "strategy-filter": 0.0}}
        screen.handle_event(ev.Finished(job="bench", summary={"ks": [1], "rows": [row]}))
        await pilot.pause()
        assert patterns.display
        assert str(patterns.render()) == "sequential: decorator 50% · ignored 25% · coordinator 25%"
        live = screen.query_one("#live-table")
        assert [str(c) for c in live.get_row_at(0)][1] == "50.0% ±10.0\n30.0–70.0%"


def test_live_rows_carry_intervals_as_problems_finish() -> None:
    from tui.widgets.scores import LiveScores

    live = LiveScores([1], 2)
    for task, results in {"a": (True, True), "b": (True, False), "c": (False, False)}.items():
        for i, ok in enumerate(results):
            live.add(ev.VerdictReady(task_id=task, sample=i, scheme="sequential",
                                     verdict={"status": "passed" if ok else "failed",
                                              "n_passed": int(ok), "n_tests": 1}))
    (row,) = live.rows()
    # per-problem pass@1 1, .5, 0: mean .5, se = sqrt(.25 / 3) = .288675
    assert row["problems"] == 3 and row["pass@1"] == 0.5
    assert abs(row["pass@1_se"] - 0.288675) < 1e-6 and row["pass@1_ci"] == [0.0, 1.0]
