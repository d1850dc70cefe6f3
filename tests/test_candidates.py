"""The candidate recipes' record (docs/candidates/): every validation figure in a candidate's
metrics.jsonl comes back from its committed evaluation samples, and the table of candidates in
the Table 1 runs' journal (docs/benchmarks/table1.md) is what docs/candidates/summarize.py
prints from them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from coopcode.evaluation.compare import summarize_folder

REPO = Path(__file__).resolve().parent.parent
CANDIDATES = REPO / "docs" / "candidates"
JOURNAL = REPO / "docs" / "benchmarks" / "table1.md"  # BENCHMARKS.md's Table 1 runs
FOLDERS = sorted(f for f in CANDIDATES.iterdir() if (f / "metrics.jsonl").exists())


def test_there_are_candidates() -> None:
    assert FOLDERS, "no committed candidate runs"


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_validation_figures_come_from_the_committed_samples(folder: Path) -> None:
    config = json.loads((folder / "config.json").read_text())
    assert config["problems"] == "humaneval:fit" and config["eval_problems"] == "humaneval:val"
    records = {r["step"]: r for r in map(json.loads, (folder / "metrics.jsonl").read_text().splitlines())
               if "val/pass@1" in r}
    assert sorted(records) == [0, 10, 20, 30]
    for step, record in records.items():
        (row,) = summarize_folder(folder / "validation" / f"step-{step:06d}").rows
        assert row["problems"] == 30 and row["samples"] == 60
        assert record["val/pass@1"] == row["pass@1"]
        assert record["val/own_work"] == row["own_work_rate"]
        assert record["val/helper_solves"] == row["helper_solves_rate"]


def test_benchmarks_lists_every_candidate_as_summarize_prints_it() -> None:
    printed = subprocess.run([sys.executable, str(CANDIDATES / "summarize.py")],
                             capture_output=True, text=True, check=True).stdout
    benchmarks = JOURNAL.read_text()
    rows = [line for line in printed.splitlines() if line.startswith("| ")]
    assert len(rows) == len(FOLDERS) + 1
    for line in rows:
        assert line in benchmarks, line
