"""`coopcode evaluate RUN --rescore`: a finished bench re-scored with the sandbox as it is now.

The run is real: HumanEval/34's ten committed samples of the seed-0 credit pair. Nine passed
when committed, five of them although Python fails them (`List` never imported)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from coopcode.evaluation.compare import summarize_folder
from coopcode.evaluation.report import write_report
from tests.cli_helpers import assert_one_line_error, coopcode

REPO = Path(__file__).resolve().parent.parent
COMMITTED = REPO / "docs" / "coop" / "samples" / "magrpo-credit"
TASK = "HumanEval/34"


def _run_of_task34(folder: Path) -> None:
    """The committed run, cut to HumanEval/34, with the verdicts it was committed with."""
    folder.mkdir()
    with gzip.open(COMMITTED / "samples.jsonl.gz", "rt") as f:
        records = [r for r in map(json.loads, f) if r["task_id"] == TASK]
    for r in records:  # as first scored: the five unimported-List programs passed
        if "List[" in r["program"] and "from typing" not in r["program"] and r["passed"] is False:
            r["passed"], r["pass_fraction"], r["verdict"]["status"] = True, 1.0, "passed"
    (folder / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    meta = json.loads((COMMITTED / "meta.json").read_text())
    meta["task_ids"] = [TASK]
    meta.pop("rescored", None)
    (folder / "meta.json").write_text(json.dumps(meta))
    summary = summarize_folder(folder)
    write_report(folder, summary, meta)


def test_rescore_writes_pythons_verdicts_back_into_the_run(tmp_path: Path,
                                                          cli_env: dict[str, str]) -> None:
    run = tmp_path / "run"
    _run_of_task34(run)
    before = json.loads((run / "summary.json").read_text())["rows"][0]
    assert before["per_problem"][TASK]["passed"] == 9
    done = coopcode("evaluate", str(run), "--rescore", "--sandbox", "process", "--json", env=cli_env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    changed = [c for c in result["changed"] if c["before"] == "passed"]
    assert len(changed) == 5 and all(c["after"] == "error" and "List" in c["why"] for c in changed)
    assert result["before"]["sequential"]["pass@1"] == 0.9
    assert result["after"]["sequential"]["pass@1"] == 0.4
    records = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    assert sum(r["passed"] for r in records) == 4
    assert all(r["reward_name"] == "seed" and r["reward"]["total"] < 1.1 for r in records
               if not r["passed"])
    after = json.loads((run / "summary.json").read_text())["rows"][0]
    assert after["pass@1"] == 0.4 and after["per_problem"][TASK]["passed"] == 4
    assert "40.00" in (run / "report.md").read_text()
    assert json.loads((run / "meta.json").read_text())["rescored"][0]["changed_verdicts"] >= 5
    # Once more: nothing left to mend.
    again = coopcode("evaluate", str(run / "samples.jsonl"), "--rescore", "--sandbox", "process",
                     "--json", env=cli_env)
    assert [c for c in json.loads(again.stdout)["changed"] if "passed" in (c["before"], c["after"])] == []


def test_rescore_refuses_what_is_not_a_run(tmp_path: Path, cli_env: dict[str, str]) -> None:
    assert_one_line_error(coopcode("evaluate", str(tmp_path), "--rescore", env=cli_env),
                          "no samples.jsonl")
    run = tmp_path / "run"
    shutil.copytree(COMMITTED, run)
    assert_one_line_error(coopcode("evaluate", str(run), "--rescore", "--out",
                                   str(tmp_path / "x.jsonl"), env=cli_env), "leave out --out")
