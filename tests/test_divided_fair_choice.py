"""The fair round's recipe choice (docs/divided-fair/candidates/choose_recipe.py), run on the
committed anchored candidate's record standing in for each candidate at one of its steps: the
rule PLAN.md fixed (the best kept step where it leads by two standard errors, else the
simplest within two, a candidate that kept its start left out) and no choice before every
candidate has finished."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _experiments import load

REPO = Path(__file__).resolve().parent.parent
CANDIDATES = REPO / "docs" / "divided-fair" / "candidates"
SCRIPT = CANDIDATES / "choose_recipe.py"
chooser = load("docs/divided-fair/candidates/choose_recipe.py")


def _root(tmp_path: Path, kept: dict[str, int]) -> Path:
    """Each named candidate: a copy of the anchored record whose manifest keeps `kept[name]`
    (its validations: 10.0% at step 0, 10.6 at 15, 15.0 at 30, 21.2 at 45)."""
    for name, step in kept.items():
        folder = tmp_path / name
        shutil.copytree(CANDIDATES / "anchored", folder)
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest["kept"]["step"] = step
        (folder / "manifest.json").write_text(json.dumps(manifest))
    return tmp_path


def _chosen(root: Path) -> dict:
    return chooser.choose_recipe([chooser.candidate(n, root) for n in chooser.SIMPLEST])


def test_the_committed_anchored_candidate_is_read_at_the_step_it_kept() -> None:
    found = chooser.candidate("anchored")
    assert found["finished"] and found["kept"] == 30
    assert [p["step"] for p in found["curve"]] == [0, 15, 30, 45]
    assert len(found["per_problem"]) == 40
    assert sum(found["per_problem"].values()) / 40 == pytest.approx(0.15)


def test_a_lead_of_two_standard_errors_chooses_the_leader_however_many_options_it_has(
        tmp_path: Path) -> None:
    # anchored at 45 (21.2%) leads both candidates kept at step 15 (10.6%) by > 2 SE
    result = _chosen(_root(tmp_path, {"no-kl": 15, "one-lr": 15, "anchored": 45}))
    assert result["chosen"] == "anchored" and result["choice"]["preferred"] == "anchored"
    assert result["as_written"] == "anchored"


def test_without_that_lead_the_simplest_within_two_standard_errors_is_chosen(
        tmp_path: Path) -> None:
    # one-lr at 45 leads no-kl at 15 by > 2 SE but anchored at 30 by 1.8 SE only
    result = _chosen(_root(tmp_path / "a", {"no-kl": 15, "one-lr": 45, "anchored": 30}))
    assert result["choice"]["best"] == "one-lr" and result["choice"]["tied"] == ["anchored"]
    assert result["chosen"] == "one-lr"
    # the same figures, no-kl the best: no-kl (simplest) though anchored is within 2 SE
    result = _chosen(_root(tmp_path / "b", {"no-kl": 45, "one-lr": 15, "anchored": 30}))
    assert result["chosen"] == "no-kl"
    # anchored best but one-lr within 2 SE of it: one-lr
    result = _chosen(_root(tmp_path / "c", {"no-kl": 15, "one-lr": 30, "anchored": 45}))
    assert result["choice"]["best"] == "anchored" and result["chosen"] == "one-lr"


def test_a_candidate_that_kept_its_start_is_not_a_recipe(tmp_path: Path) -> None:
    # anchored at 30 (15.0%) leads no-kl at 0 (10.0%) by 1.7 SE and one-lr at 15 by less:
    # as first written the rule takes the simplest, no-kl, a run that kept its warm start
    root = _root(tmp_path / "a", {"no-kl": 0, "one-lr": 15, "anchored": 30})
    result = _chosen(root)
    assert result["as_written"] == "no-kl"
    assert result["chosen"] == "one-lr" and result["why"].endswith("; no-kl kept its start")
    table = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)],
                           capture_output=True, text=True, cwd=REPO, check=True).stdout
    assert "Chosen: **one-lr**" in table
    assert "the rule as first written gives no-kl." in table
    # one left: chosen alone; none left: nothing chosen
    result = _chosen(_root(tmp_path / "b", {"no-kl": 0, "one-lr": 0, "anchored": 30}))
    assert result["chosen"] == "anchored" and result["as_written"] == "no-kl"
    result = _chosen(_root(tmp_path / "c", {"no-kl": 0, "one-lr": 0, "anchored": 0}))
    assert result["chosen"] is None and result["why"] == "no candidate kept a step after its start"
    done = subprocess.run([sys.executable, str(SCRIPT), "--root", str(tmp_path / "c"), "--name"],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 1
    assert done.stderr.strip() == "choose_recipe.py: no candidate kept a step after its start"


def test_nothing_is_chosen_before_every_candidate_has_finished(tmp_path: Path) -> None:
    root = _root(tmp_path, {"no-kl": 15, "one-lr": 45, "anchored": 30})
    manifest = json.loads((root / "no-kl" / "manifest.json").read_text())
    manifest["step"] = 6
    (root / "no-kl" / "manifest.json").write_text(json.dumps(manifest))
    assert _chosen(root)["chosen"] is None
    shutil.rmtree(root / "one-lr")
    done = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), "--name"],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == "choose_recipe.py: waiting for no-kl, one-lr"
    table = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)],
                           capture_output=True, text=True, cwd=REPO, check=True).stdout
    assert "| no-kl |" in table and "not finished (6 of 45 steps)" in table
    assert "| one-lr |" in table and "no record yet" in table


RECORD = REPO / "docs" / "divided-fair" / "run_record.py"


@pytest.mark.parametrize(("change", "finished"), [
    ({}, True),                                      # the last step, a step kept
    ({"step": 44}, False),                           # one step short
    ({"step": 30, "stopped_early": True}, True),     # stopped itself after 30
    ({"kept": None}, False),                         # the last step, nothing kept
])
def test_the_queue_waits_for_a_run_that_ended_and_kept_a_step(
        tmp_path: Path, change: dict, finished: bool) -> None:
    """What next.sh and bench_final.sh ask before they choose, bench or keep a run:
    `run_record.py finished FOLDER`, on the anchored record with its manifest changed."""
    folder = _root(tmp_path, {"run": 30}) / "run"
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, **change}))
    done = subprocess.run([sys.executable, str(RECORD), "finished", str(folder)], cwd=REPO)
    assert done.returncode == (0 if finished else 1)
    (folder / "metrics.jsonl").unlink()
    done = subprocess.run([sys.executable, str(RECORD), "finished", str(folder)], cwd=REPO)
    assert done.returncode == 1


def test_the_committed_candidates_give_the_committed_recipe() -> None:
    """RECORD.md 2026-12-06 (third session): no-kl and one-lr kept their start, so anchored is
    the recipe (the rule as first written would have given no-kl), and recipe.txt holds its
    options as candidate.sh gives them."""
    result = _chosen(CANDIDATES)
    assert (result["chosen"], result["as_written"]) == ("anchored", "no-kl")
    assert [chooser.candidate(n)["kept"] for n in chooser.SIMPLEST] == [0, 0, 30]
    options = subprocess.run(["bash", str(REPO / "docs/divided-fair/scripts/candidate.sh"),
                              "anchored", "--options"], capture_output=True, text=True, check=True)
    assert (REPO / "docs/divided-fair/recipe.txt").read_text() == options.stdout



def test_a_final_is_benched_from_the_copy_git_keeps(tmp_path: Path) -> None:
    """`run_record.py bench-folder ROW`, what bench_final.sh benches: the kept copy in
    checkpoints/, which every machine has (a new machine's runs/ is empty: on 2026-12-06
    grpo-seed0 would have been trained again), else the finished run folder, else one
    clear line."""
    kept = REPO / "checkpoints" / "compose-fair-grpo-seed0-0.5b"
    copy = tmp_path / "checkpoints" / "compose-fair-grpo-seed0-0.5b"
    shutil.copytree(kept, copy, ignore=shutil.ignore_patterns("*.safetensors", "validation"))
    run = tmp_path / "runs" / "divided-fair" / "final-runs" / "grpo-seed0"
    shutil.copytree(copy, run)

    def ask(row: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(RECORD), "bench-folder", row],
                              capture_output=True, text=True, cwd=tmp_path)

    asked = ask("grpo-seed0")
    assert asked.returncode == 0 and asked.stdout.strip() == "checkpoints/compose-fair-grpo-seed0-0.5b"
    shutil.rmtree(copy / "main")  # a record without its adapters is not a kept final
    assert ask("grpo-seed0").stdout.strip() == "runs/divided-fair/final-runs/grpo-seed0"
    manifest = json.loads((run / "manifest.json").read_text())  # a run still training
    (run / "manifest.json").write_text(json.dumps({**manifest, "step": 20}))
    missing = ask("grpo-seed0")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.strip() == ("run_record.py: grpo-seed0 has not finished here, and "
                                      "checkpoints/ keeps no finished copy of it")
    assert ask("magrpo-seed1").returncode == 1
