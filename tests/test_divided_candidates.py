"""Issue 41's candidates (docs/divided/candidates/): every validation figure in a candidate's
metrics.jsonl comes back from its committed evaluation samples, and BENCHMARKS.md's table of
candidates is what docs/divided/candidates/summarize.py prints from them."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from coopcode.evaluation.compare import read_records, samples_file, summarize_folder

REPO = Path(__file__).resolve().parent.parent
CANDIDATES = REPO / "docs" / "divided" / "candidates"
FOLDERS = sorted(f for f in CANDIDATES.iterdir() if (f / "metrics.jsonl").exists())


def test_there_are_candidates() -> None:
    assert FOLDERS, "no committed candidate runs"


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_validation_figures_come_from_the_committed_samples(folder: Path) -> None:
    config = json.loads((folder / "config.json").read_text())
    assert config["problems"] == "compose:train" and config["eval_problems"] == "compose:val"
    records = {r["step"]: r for r in map(json.loads, (folder / "metrics.jsonl").read_text().splitlines())
               if "val/pass@1" in r}
    assert 0 in records and len(records) >= 2  # before training, and after
    for step, record in records.items():
        (row,) = summarize_folder(folder / "validation" / f"step-{step:06d}").rows
        assert row["problems"] == 40 and row["samples"] == 80
        assert record["val/pass@1"] == row["pass@1"]
        # no passing sample, no share of them: neither side has the figure
        assert record.get("val/both_needed") == row["both_needed_rate"]
        assert record["val/own_work"] == row["own_work_rate"]


def test_benchmarks_lists_every_candidate_as_summarize_prints_it() -> None:
    printed = subprocess.run([sys.executable, str(CANDIDATES / "summarize.py")],
                             capture_output=True, text=True, check=True).stdout
    benchmarks = (REPO / "BENCHMARKS.md").read_text()
    rows = [line for line in printed.splitlines() if line.startswith("| ")]
    assert len(rows) == len(FOLDERS) + 1  # the head and a line per candidate
    for line in rows:
        assert line in benchmarks, line


def _each_agent_alone(folder: Path) -> tuple[int, int, int, int]:
    records = read_records(samples_file(folder))
    agents = [r.get("agents") or {} for r in records]
    helper = [a.get("helper_contract") == 1.0 for a in agents]
    main = [a.get("main_with_reference") == 1.0 for a in agents]
    return (sum(bool(r["passed"]) for r in records), sum(helper), sum(main),
            sum(h and m for h, m in zip(helper, main)))


@pytest.mark.parametrize("label,folder", [
    ("`sft-pair`, step 45 (the warm start)", "checkpoints/compose-sft-pair-0.5b/validation/step-000045"),
    ("`warm`, step 30", "docs/divided/candidates/warm/validation/step-000030"),
    ("`warm`, step 45", "docs/divided/candidates/warm/validation/step-000045"),
])
def test_where_the_pair_loses_is_counted_from_the_samples(label: str, folder: str) -> None:
    """BENCHMARKS' "Where the pair loses" rows: each agent judged alone, recounted."""
    counts = _each_agent_alone(REPO / folder)
    line = f"| {label} | " + " | ".join(map(str, counts)) + " |"
    assert line in (REPO / "BENCHMARKS.md").read_text(), line


def test_the_single_agents_warm_start_passes_as_benchmarks_says() -> None:
    """"passes 13 of 80 on its own": GRPO's warm start on validation, recounted."""
    records = read_records(samples_file(
        REPO / "checkpoints" / "compose-sft-solo-0.5b" / "validation" / "step-000045"))
    assert (sum(bool(r["passed"]) for r in records), len(records)) == (13, 80)
    assert "passes 13 of 80 on its own" in " ".join((REPO / "BENCHMARKS.md").read_text().split())


def test_the_cold_candidates_main_learned_to_guess_as_benchmarks_says() -> None:
    """"61 -> 157 -> 213 of 240 main completions": cold's training samples, each main
    completion's code read for a function that answers with one literal."""
    from coopcode.written.code import answers_a_constant, extract_code

    path = REPO / "docs" / "divided" / "candidates" / "cold" / "samples.jsonl.gz"
    records = [json.loads(line) for line in gzip.open(path, "rt")]  # a step's record per problem
    thirds = [[0, 0], [0, 0], [0, 0]]
    for r in records:
        entry = r["task_id"].split("/", 1)[1]
        for action in r["actions"]:
            third = thirds[(r["step"] - 1) // 15]
            third[0] += answers_a_constant(extract_code(action["main"]), entry)
            third[1] += 1
    assert thirds == [[61, 240], [157, 240], [213, 240]]
    text = " ".join((REPO / "BENCHMARKS.md").read_text().split())
    assert "in training 61 -> 157 -> 213 of 240 main completions" in text


def test_the_finals_step_rule_picks_the_best_validation_later_on_ties() -> None:
    """docs/divided/scripts/chosen_step.py on the committed candidates: `warm` peaked at step
    30 (15.0); `cold` began highest (2.5 at step 0) and began from the base model, so there is
    nothing to bench there, said in one line."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "chosen_step", REPO / "docs" / "divided" / "scripts" / "chosen_step.py")
    assert spec is not None and spec.loader is not None
    rule = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rule)
    folder = REPO / "docs" / "divided" / "candidates"
    assert rule.chosen_step(folder / "warm") == 30
    assert rule.chosen_step(folder / "cold") == 0
    with pytest.raises(SystemExit, match="started from the base model"):
        rule.adapters_of(folder / "cold", 0)
    with pytest.raises(SystemExit, match="was not kept"):
        rule.adapters_of(folder / "warm", 30)
    assert rule.adapters_of(folder / "warm", 0) == "runs/divided/sft-pair"  # its warm start


def test_the_grpo_finals_fall_on_validation_is_counted_from_its_record() -> None:
    """BENCHMARKS: the GRPO final's val pass@1 18.8 ±5.0 at step 0 and 3.8 ±2.8 at step 45;
    at step 45 its code parses in 76 of 80 and none answers with a constant."""
    import ast

    from coopcode.written.code import answers_a_constant

    run = REPO / "docs" / "divided" / "final-runs" / "grpo"
    figures = {}
    for step in (0, 45):
        (row,) = summarize_folder(run / "validation" / f"step-{step:06d}").rows
        figures[step] = (round(100 * row["pass@1"], 1), row["samples"])
    assert figures == {0: (18.8, 80), 45: (3.8, 80)}
    records = read_records(samples_file(run / "validation" / "step-000045"))

    def parses(code: str) -> bool:
        try:
            ast.parse(code)
        except SyntaxError:
            return False
        return True

    assert sum(parses(r["main_code"]) for r in records) == 76
    assert not any(answers_a_constant(r["main_code"], r["entry_point"]) for r in records)
    text = " ".join((REPO / "BENCHMARKS.md").read_text().split())
    assert "**18.8 ±5.0** at step 0" in text and "**3.8 ±2.8** at step 45" in text


def test_the_cold_candidates_reward_terms_on_validation_are_as_benchmarks_says() -> None:
    """"main's test term on validation went 0.10 (step 0) -> 0.25 -> 0.35 -> 0.29" and the
    helper's aux tests 0.65 -> 0.72 (steps 0 and 45), from the committed samples."""
    run = REPO / "docs" / "divided" / "candidates" / "cold" / "validation"

    def term(step: int, name: str) -> float:
        records = read_records(samples_file(run / f"step-{step:06d}"))
        assert len(records) == 80
        return round(sum(r["reward"][name] for r in records) / len(records), 2)

    assert [term(s, "main_tests") for s in (0, 15, 30, 45)] == [0.10, 0.25, 0.35, 0.29]
    assert [term(s, "helper_tests") for s in (0, 45)] == [0.65, 0.72]
    text = " ".join((REPO / "BENCHMARKS.md").read_text().split())
    assert "0.10 (step 0) -> 0.25 -> 0.35 -> 0.29" in text and "0.65 -> 0.72" in text


def test_the_twenty_cold_samples_read_by_hand_are_as_benchmarks_says() -> None:
    """The 20 step-45 validation samples drawn with random.Random(3): every main a literal,
    the helper's aux passing all of its own tests in 10."""
    import random

    from coopcode.written.code import answers_a_constant

    records = read_records(samples_file(
        REPO / "docs" / "divided" / "candidates" / "cold" / "validation" / "step-000045"))
    drawn = random.Random(3).sample(records, 20)
    assert all(answers_a_constant(r["main_code"], r["entry_point"]) for r in drawn)
    assert sum(r["reward"]["helper_tests"] == 1.0 for r in drawn) == 10
    text = " ".join((REPO / "BENCHMARKS.md").read_text().split())
    assert "all of its own tests in 10 of the 20" in text
