"""Table 2 again (docs/divided-fair/table.py): the builder beside the experiment's data,
run on copies of the first round's committed benches and training record standing in for
the new round's rows, and on the committed folder itself (--check)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from _experiments import load

row_figures = load("docs/divided/divided_table.py").row_figures

REPO = Path(__file__).resolve().parent.parent
FAIR = REPO / "docs" / "divided-fair"
FIRST = REPO / "docs" / "divided"


def _table() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fair_table", FAIR / "table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The new layout filled with the first round's benches: two MAGRPO seeds, one GRPO,
    the single baseline, the contract baseline as the pair's warm start; seed 0's training
    record with a manifest that kept step 45 of 135."""
    root = tmp_path_factory.mktemp("fair")
    for src, dest in (("baselines/single", "baselines/single"),
                      ("baselines/contract", "warm/pair"),
                      ("final/magrpo", "final/magrpo-seed0"),
                      ("final/magrpo-seed1", "final/magrpo-seed1"),
                      ("final/grpo", "final/grpo-seed0")):
        shutil.copytree(FIRST / src, root / dest)
    run = root / "runs" / "magrpo-seed0"
    record = REPO / "checkpoints" / "compose-magrpo-0.5b"
    shutil.copytree(record / "validation", run / "validation")
    shutil.copy(record / "metrics.jsonl", run / "metrics.jsonl")
    (run / "manifest.json").write_text(json.dumps(
        {"step": 135, "total_steps": 135, "kept": {"step": 45}, "stopped_early": False}))
    return root


@pytest.fixture(scope="module")
def built(stand_in: Path) -> dict:
    return _table().build_table(stand_in)


def test_the_mean_over_seeds_and_its_pairings_are_the_rows_own(stand_in: Path,
                                                               built: dict) -> None:
    table = built
    present = {r["row"] for r in table["rows"] if not r.get("not_run")}
    assert present == {"single", "warm-pair", "magrpo-seed0", "magrpo-seed1", "grpo-seed0"}
    seed0, seed1, grpo = (row_figures(stand_in / f, (1, 10)) for f in
                          ("final/magrpo-seed0", "final/magrpo-seed1", "final/grpo-seed0"))
    magrpo = table["means"]["magrpo"]
    assert magrpo["seeds"] == [0, 1] and table["means"]["grpo"]["seeds"] == [0]
    # the same 88 problems in every row: the mean over seeds is the mean of the seeds' means
    assert magrpo["pass@1"] == pytest.approx((seed0.pass_at[1].mean + seed1.pass_at[1].mean) / 2)
    assert table["means"]["grpo"]["pass@1"] == pytest.approx(grpo.pass_at[1].mean)
    versus = next(d for d in table["mean_pairs"] if d["row"] == "magrpo (mean)"
                  and d["against"] == "grpo (mean)" and d["k"] == 1)
    assert versus["diff_mean"] == pytest.approx(magrpo["pass@1"] - grpo.pass_at[1].mean)
    assert versus["clustered"]["clusters"] == 36  # compose:test's HumanEval sources
    # the clustered interval is never narrower than the per-problem one
    assert versus["clustered"]["low"] <= versus["diff_low"] <= versus["diff_mean"]
    # each seed against its warm start and the single model, at k=1 and k=10
    assert {(d["row"], d["against"], d["k"]) for d in table["seeds"]} == {
        (f"magrpo-seed{s}", a, k) for s in (0, 1) for a in ("warm-pair", "single")
        for k in (1, 10)} | {("grpo-seed0", "single", k) for k in (1, 10)}


def test_the_goal_is_checked_part_by_part_and_not_met_on_two_seeds(built: dict) -> None:
    table = built
    goal = table["goal"]
    # seed 0 kept step 45 of 135, and its last evaluation (0.0%) is far below it: the
    # record shows a collapse the run did not stop itself for
    run = table["runs"]["magrpo-seed0"]
    assert (run["kept_step"], run["last_step"], run["last_within_2se"]) == (45, 135, False)
    assert run["val_kept"] == pytest.approx(0.2) and run["val_last"] == 0.0
    assert goal["magrpo-seed0"]["kept_after_0"] is True
    assert goal["magrpo-seed0"]["no_collapse_unnoticed"] is False
    assert goal["magrpo-seed1"]["kept_after_0"] is None  # no record: not measured
    beats = goal["magrpo-seed0"]["beats_warm_start"]
    low = goal["magrpo-seed0"]["beats_warm_start_low"]
    assert beats == (low > 0)
    # two MAGRPO seeds and one GRPO: the mean comparison is not judged yet
    assert goal["magrpo_mean_above_grpo_mean"]["met"] is None
    text = _table().render_markdown(table)
    assert "| magrpo-seed2 | MAGRPO contract pair, seed 2 | not run |" in text
    assert "- magrpo-seed0: kept_after_0: True" in text


def test_the_committed_table_is_what_the_committed_samples_give() -> None:
    done = subprocess.run([sys.executable, str(FAIR / "table.py"), "--check"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
