"""Issue 41's candidates (docs/divided/candidates/): every validation figure in a candidate's
metrics.jsonl comes back from its committed evaluation samples, and the table of candidates in
the divided-work journal (docs/benchmarks/divided.md) is what docs/divided/candidates/summarize.py
prints from them."""

from __future__ import annotations

import gzip
import json
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from coopcode.evaluation.compare import read_records, samples_file, summarize_folder

REPO = Path(__file__).resolve().parent.parent
CANDIDATES = REPO / "docs" / "divided" / "candidates"
JOURNAL = REPO / "docs" / "benchmarks" / "divided.md"  # BENCHMARKS.md's "Divided work"
FOLDERS = sorted(f for f in CANDIDATES.iterdir() if (f / "metrics.jsonl").exists())


# The samples are model-written code, parsed (never run): some have "\d" in a plain string.
MODEL_CODE_WARNINGS = pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")


def test_there_are_candidates() -> None:
    assert FOLDERS, "no committed candidate runs"


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_validation_figures_come_from_the_committed_samples(folder: Path) -> None:
    config = json.loads((folder / "config.json").read_text())
    assert config["problems"] == "compose:train" and config["eval_problems"] == "compose:val"
    records = {s: r for s, r in _metrics_by_step(folder).items() if "val/pass@1" in r}
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
    benchmarks = JOURNAL.read_text()
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


def _metrics_by_step(run: Path) -> dict[int, dict[str, Any]]:
    """A run's metrics.jsonl, each record under its step."""
    return {r["step"]: r for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())}


def _benchmarks_text() -> str:
    """The divided-work journal with its line breaks and runs of spaces made single spaces."""
    return " ".join(JOURNAL.read_text().split())


@pytest.mark.parametrize("label,folder", [
    ("`sft-pair`, step 45 (the warm start)", "checkpoints/compose-sft-pair-0.5b/validation/step-000045"),
    ("`warm`, step 30", "docs/divided/candidates/warm/validation/step-000030"),
    ("`warm`, step 45", "docs/divided/candidates/warm/validation/step-000045"),
])
def test_where_the_pair_loses_is_counted_from_the_samples(label: str, folder: str) -> None:
    """BENCHMARKS' "Where the pair loses" rows: each agent judged alone, recounted."""
    counts = _each_agent_alone(REPO / folder)
    line = f"| {label} | " + " | ".join(map(str, counts)) + " |"
    assert line in JOURNAL.read_text(), line


def test_the_single_agents_warm_start_passes_as_benchmarks_says() -> None:
    """"passes 13 of 80 on its own": GRPO's warm start on validation, recounted."""
    records = read_records(samples_file(
        REPO / "checkpoints" / "compose-sft-solo-0.5b" / "validation" / "step-000045"))
    assert (sum(bool(r["passed"]) for r in records), len(records)) == (13, 80)
    assert "passes 13 of 80 on its own" in _benchmarks_text()


@pytest.mark.parametrize("name,counts,claim", [
    ("cold", [61, 157, 213], "in training 61 -> 157 -> 213 of 240 main completions"),
    ("plan", [14, 32, 170], "in training in 14 -> 32 -> 170 of 240 main completions"),
])
def test_a_cold_candidates_main_learned_to_guess_as_benchmarks_says(
        name: str, counts: list[int], claim: str) -> None:
    """"61 -> 157 -> 213 of 240 main completions" (cold), "14 -> 32 -> 170" (plan): the
    training samples, each main completion's code read for a function that answers with one
    literal, by thirds of the run."""
    by = _main_reward_by_block(CANDIDATES / name / "samples.jsonl.gz", "main")
    assert [by[(b, True)][0] for b in range(3)] == counts
    assert [by[(b, True)][0] + by[(b, False)][0] for b in range(3)] == [240] * 3
    assert claim in _benchmarks_text()


def _step_rule() -> Any:
    """docs/divided/scripts/chosen_step.py, loaded as a module (it is a script, not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "chosen_step", REPO / "docs" / "divided" / "scripts" / "chosen_step.py")
    assert spec is not None and spec.loader is not None
    rule = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rule)
    return rule


def test_the_finals_step_rule_picks_the_best_validation_later_on_ties() -> None:
    """docs/divided/scripts/chosen_step.py on the committed candidates: `warm` peaked at step
    30 (15.0); `cold` began highest (2.5 at step 0) and began from the base model, so there is
    nothing to bench there, said in one line."""
    rule = _step_rule()
    folder = REPO / "docs" / "divided" / "candidates"
    assert rule.chosen_step(folder / "warm") == 30
    assert rule.chosen_step(folder / "cold") == 0
    with pytest.raises(SystemExit, match="started from the base model"):
        rule.adapters_of(folder / "cold", 0)
    with pytest.raises(SystemExit, match="was not kept"):
        rule.adapters_of(folder / "warm", 30)
    assert rule.adapters_of(folder / "warm", 0) == "runs/divided/sft-pair"  # its warm start


@MODEL_CODE_WARNINGS
def test_the_grpo_finals_fall_on_validation_is_counted_from_its_record() -> None:
    """BENCHMARKS: the GRPO final's val pass@1 18.8 ±5.0 at step 0, 3.8 ±2.8 at step 45 and
    0.0 at steps 90 and 135; at step 45 its code parses in 76 of 80 and none answers with a
    constant, at steps 90 and 135 69 and 45 of 80 do; in training 0 of 960 main completions
    in steps 1-60 answer with a literal, then 81 / 214 / 220 / 231 / 146 of 240 in each
    further fifteen steps. The row is kept at step 0, its warm start's adapter."""
    import ast

    from coopcode.code_analysis.program import answers_a_constant

    run = REPO / "checkpoints" / "compose-grpo-0.5b"
    figures = {}
    for step in (0, 45, 90, 135):
        (row,) = summarize_folder(run / "validation" / f"step-{step:06d}").rows
        records = read_records(samples_file(run / "validation" / f"step-{step:06d}"))
        constants = sum(answers_a_constant(r["main_code"], r["entry_point"]) for r in records)
        figures[step] = (round(100 * row["pass@1"], 1), row["samples"], constants)
    assert figures == {0: (18.8, 80, 0), 45: (3.8, 80, 0), 90: (0.0, 80, 69), 135: (0.0, 80, 45)}
    records = read_records(samples_file(run / "validation" / "step-000045"))

    def parses(code: str) -> bool:
        try:
            ast.parse(code)
        except SyntaxError:
            return False
        return True

    assert sum(parses(r["main_code"]) for r in records) == 76
    by = _main_reward_by_block(run / "samples.jsonl.gz", "single")
    assert [by.get((b, True), (0, 0.0))[0] for b in range(9)] == [0, 0, 0, 0, 81, 214, 220, 231, 146]
    assert json.loads((run / "chosen_step.json").read_text())["step"] == 0
    text = _benchmarks_text()
    assert "**18.8 ±5.0** at step 0" in text and "**3.8 ±2.8** at step 45" in text
    assert "81 / 214 / 220 / 231 / 146 of 240" in text


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
    text = _benchmarks_text()
    assert "0.10 (step 0) -> 0.25 -> 0.35 -> 0.29" in text and "0.65 -> 0.72" in text


def test_the_twenty_cold_samples_read_by_hand_are_as_benchmarks_says() -> None:
    """The 20 step-45 validation samples drawn with random.Random(3): every main a literal,
    the helper's aux passing all of its own tests in 10."""
    import random

    from coopcode.code_analysis.program import answers_a_constant

    records = read_records(samples_file(
        REPO / "docs" / "divided" / "candidates" / "cold" / "validation" / "step-000045"))
    drawn = random.Random(3).sample(records, 20)
    assert all(answers_a_constant(r["main_code"], r["entry_point"]) for r in drawn)
    assert sum(r["reward"]["helper_tests"] == 1.0 for r in drawn) == 10
    text = _benchmarks_text()
    assert "all of its own tests in 10 of the 20" in text


def test_keep_checkpoint_commits_the_chosen_steps_adapters(tmp_path: Path) -> None:
    """keep_checkpoint.sh keeps the adapters the rule picks, not the run's last ones: a run
    whose step-45 evaluation beat step 0 and step 90 is kept with step 45's helper and main,
    named in chosen_step.json and as the manifest's step; its record goes along (samples
    gzipped)."""
    run = tmp_path / "run"
    (run / "validation").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"main_init": "somewhere/main"}))
    (run / "metrics.jsonl").write_text("".join(
        json.dumps({"step": s, "val/pass@1": v}) + "\n" for s, v in ((0, 0.1), (45, 0.3), (90, 0.2))))
    (run / "samples.jsonl").write_text('{"step": 1}\n')
    (run / "manifest.json").write_text(json.dumps({"run": "run", "step": 90, "total_steps": 90}))
    for step in (0, 45, 90):
        v = run / "validation" / f"step-{step:06d}"
        v.mkdir()
        for name in ("summary.json", "meta.json", "samples.jsonl"):
            (v / name).write_text("{}\n")
        if step:
            for role in ("helper", "main"):
                (v / "adapters" / role).mkdir(parents=True)
                (v / "adapters" / role / "adapter_model.safetensors").write_text(f"{role} {step}")
    for role in ("helper", "main"):  # the run's own adapters: those of its last step
        (run / role).mkdir()
        (run / role / "adapter_model.safetensors").write_text(f"{role} last")
    dest = tmp_path / "checkpoints" / "kept"
    done = subprocess.run(["bash", str(REPO / "docs" / "divided" / "scripts" / "keep_checkpoint.sh"),
                           str(run), str(dest)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for role in ("helper", "main"):
        assert (dest / role / "adapter_model.safetensors").read_text() == f"{role} 45"
    assert json.loads((dest / "chosen_step.json").read_text())["step"] == 45
    manifest = json.loads((dest / "manifest.json").read_text())  # the adapters' step, of 90
    assert (manifest["step"], manifest["total_steps"], manifest["run"]) == (45, 90, "run")
    assert (dest / "samples.jsonl.gz").exists() and (dest / "validation" / "step-000045" / "samples.jsonl.gz").exists()
    assert not (dest / "validation" / "step-000045" / "adapters").exists()  # adapters once only


def test_a_run_whose_last_step_wins_is_kept_with_its_own_adapters(tmp_path: Path) -> None:
    """An SFT run (no --keep-eval-adapters) whose last evaluation is its best: chosen_step.py
    points at the run folder itself, whose adapters are that step's."""
    rule = _step_rule()
    run = tmp_path / "sft"
    (run / "main").mkdir(parents=True)
    (run / "metrics.jsonl").write_text(json.dumps({"step": 0, "val/pass@1": 0.05}) + "\n"
                                       + json.dumps({"step": 45, "val/pass@1": 0.16}) + "\n")
    (run / "manifest.json").write_text(json.dumps({"step": 45, "total_steps": 45}))
    assert rule.chosen_step(run) == 45 and rule.adapters_of(run, 45) == str(run)
    (run / "manifest.json").write_text(json.dumps({"step": 44, "total_steps": 45}))  # stopped early
    with pytest.raises(SystemExit, match="was not kept"):
        rule.adapters_of(run, 45)


def test_the_grpo_rows_samples_read_by_hand_are_counted_again() -> None:
    """BENCHMARKS: "2 of the 20 pass"; aux an inner function in 845 of 880 and
    `outer(aux(x))` returned in 810, 17 of the 20 (random.Random(4))."""
    import random
    import re

    records = read_records(samples_file(REPO / "docs" / "divided" / "final" / "grpo"))
    assert len(records) == 880
    drawn = [records[i] for i in random.Random(4).sample(range(len(records)), 20)]
    composes = re.compile(r"\w+\(aux\(")
    assert sum(bool(r["passed"]) for r in drawn) == 2
    assert sum(bool(composes.search(r["main_code"])) for r in drawn) == 17
    assert sum("    def aux(" in r["main_code"] for r in records) == 845
    assert sum(bool(composes.search(r["main_code"])) for r in records) == 810
    text = _benchmarks_text()
    assert "2 of the 20 pass (9.43% of all 880)" in text
    assert "in 845 of the 880 samples" in text and "in 810 it returns" in text


def _main_reward_by_block(path: Path, role: str) -> dict[tuple[int, bool], tuple[int, float]]:
    """Main's reward (syntax + tests terms) per completion from a run's step samples, by
    fifteen-step block and by whether the completion answers with one literal: (count, mean)."""
    from coopcode.code_analysis.program import answers_a_constant, extract_code

    sums: dict[tuple[int, bool], list[float]] = {}
    for line in gzip.open(path, "rt"):
        r = json.loads(line)
        entry = r["task_id"].split("/", 1)[1]
        for a in r["actions"]:
            key = ((r["step"] - 1) // 15, answers_a_constant(extract_code(a[role]), entry))
            sums.setdefault(key, []).append(a["reward"]["main_syntax"] + a["reward"]["main_tests"])
    return {k: (len(v), round(sum(v) / len(v), 2)) for k, v in sums.items()}


@MODEL_CODE_WARNINGS
def test_what_the_reward_paid_a_guess_and_an_attempt_is_counted_from_the_samples() -> None:
    """BENCHMARKS, "Why three runs learned to guess": each cell recounted."""
    text = _benchmarks_text()

    def cell(by: dict, block: int) -> str:
        attempt, literal = by.get((block, False)), by.get((block, True))
        left = f"{attempt[1]:.2f} ({attempt[0]})" if attempt else "—"
        return left + " / " + (f"{literal[1]:.2f} ({literal[0]})" if literal else "—")

    for name, label in (("cold", "`cold` (pair, base model)"), ("plan", "`plan` (pair, base model)"),
                        ("warm", "`warm` (pair, SFT warm start)")):
        by = _main_reward_by_block(CANDIDATES / name / "samples.jsonl.gz", "main")
        row = f"| {label} | " + " | ".join(cell(by, b) for b in range(3)) + " | — |"
        assert row in text, row
    by = _main_reward_by_block(REPO / "checkpoints" / "compose-grpo-0.5b" / "samples.jsonl.gz", "single")
    row = ("| GRPO final (one agent, SFT warm start) | " + " | ".join(cell(by, b) for b in range(3))
           + f" | 46-60: {cell(by, 3)}; 61-75: {cell(by, 4)}; 76-135: ")
    assert row in text, row
    late_attempts = [by[(b, False)][1] for b in range(5, 9)]
    late_literals = [by[(b, True)][1] for b in range(5, 9)]
    assert f"76-135: {min(late_attempts):.2f}-{max(late_attempts):.2f} / " \
           f"{min(late_literals):.2f}-{max(late_literals):.2f} |" in text


def test_the_share_a_constant_answer_passes_is_as_benchmarks_says() -> None:
    """"0.07-0.93 on compose's 307 tasks, median 0.33, and half or more in 122 of them": the
    largest share of a task's asserts that expect one value, read from its check()."""
    import ast
    import statistics
    from collections import Counter

    from coopcode import load_problems

    def expected(test: ast.expr) -> str:
        if isinstance(test, ast.Compare) and isinstance(test.ops[0], ast.Eq):
            return ast.dump(test.comparators[0])
        if isinstance(test, ast.Compare) and isinstance(test.left, ast.Call) \
                and isinstance(test.left.args[0], ast.BinOp):  # abs(candidate(x) - v) < eps
            return ast.dump(test.left.args[0].right)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return "False"
        assert isinstance(test, ast.Call), ast.dump(test)  # assert candidate(x)
        return "True"

    shares = []
    for split in ("compose:train", "compose:val", "compose:test"):
        for problem in load_problems(split):
            values = [expected(node.test) for node in ast.walk(ast.parse(problem.tests))
                      if isinstance(node, ast.Assert)]
            shares.append(Counter(values).most_common(1)[0][1] / len(values))
    assert (len(shares), round(min(shares), 2), round(max(shares), 2)) == (307, 0.07, 0.93)
    assert round(statistics.median(shares), 2) == 0.33 and sum(s >= 0.5 for s in shares) == 122
    text = _benchmarks_text()
    assert "0.07-0.93 on `compose`'s 307 tasks, median 0.33, and half or more in 122" in text


def test_what_plan_and_grpo_scored_while_passing_nothing_is_counted_again() -> None:
    """BENCHMARKS: plan's val acc@1 "rose 7.4 -> 20.6 -> 28.2 -> 36.9%" while its main answered
    with a literal in "0 / 10 / 43 / 76 of the 80"; GRPO's acc@1 "came back 38.5 / 15.4 / 38.1
    / 29.2%", its completions about 6 tokens long from step 91 (metrics.jsonl)."""
    from coopcode.code_analysis.program import answers_a_constant

    def evaluations(run: Path, steps: tuple[int, ...]) -> list[tuple[float, int]]:
        out = []
        for step in steps:
            folder = run / "validation" / f"step-{step:06d}"
            (row,) = summarize_folder(folder).rows
            literal = sum(answers_a_constant(r["main_code"], r["entry_point"])
                          for r in read_records(samples_file(folder)))
            out.append((round(100 * row["acc@1"], 1), literal))
        return out

    assert evaluations(CANDIDATES / "plan", (0, 15, 30, 45)) == [
        (7.4, 0), (20.6, 10), (28.2, 43), (36.9, 76)]
    grpo = REPO / "checkpoints" / "compose-grpo-0.5b"
    assert [acc for acc, _ in evaluations(grpo, (0, 45, 90, 135))] == [38.5, 15.4, 38.1, 29.2]
    metrics = [json.loads(line) for line in (grpo / "metrics.jsonl").read_text().splitlines()]
    late = [m["single/completion_tokens"] for m in metrics if m.get("step", 0) > 90
            and "single/completion_tokens" in m]
    assert len(late) == 45 and 5.5 < sum(late) / len(late) < 6.5
    text = _benchmarks_text()
    assert "rose 7.4 -> 20.6 -> 28.2 -> 36.9%" in text and "in 0 / 10 / 43 / 76 of the 80" in text
    assert "came back 38.5 / 15.4 / 38.1 / 29.2%" in text
    assert "completions 6 tokens long on average from step 91" in text


def test_twenty_of_grpos_last_validation_samples_read_by_hand_are_as_benchmarks_says() -> None:
    """"every one is a body of a single `return`, 13 a whole literal passing 1 to 5 of the
    task's tests ... and 7 a list or dict cut short" (random.Random(5), step 135)."""
    folder = REPO / "checkpoints" / "compose-grpo-0.5b" / "validation" / "step-000135"
    records = read_records(samples_file(folder))
    drawn = [records[i] for i in random.Random(5).sample(range(len(records)), 20)]
    bodies = [r["main_code"].strip().splitlines()[1:] for r in drawn]
    assert all(len(b) == 1 and b[0].strip().startswith("return") for b in bodies)
    cut = [r for r in drawn if r["verdict"]["status"] == "syntax_error"]
    whole = [r for r in drawn if r["verdict"]["status"] != "syntax_error"]
    assert len(cut) == 7 and all(r["main_code"].strip()[-1] not in "]}" for r in cut)
    assert len(whole) == 13 and {r["verdict"]["n_passed"] for r in whole} <= {1, 2, 3, 4, 5}
    assert min(r["verdict"]["n_passed"] for r in whole) == 1
    assert max(r["verdict"]["n_passed"] for r in whole) == 5
    assert "every one is a body of a single `return`, 13 a whole literal passing 1 to 5" in \
        _benchmarks_text()


@MODEL_CODE_WARNINGS
def test_the_magrpo_finals_collapse_is_counted_from_its_record() -> None:
    """BENCHMARKS, "Seed 0 alone ... and main's collapse" and the stop rule: every figure
    recounted from its record so far, docs/divided/final-runs/magrpo (keep_run.sh at step 46;
    checkpoints/compose-magrpo-0.5b once it ends)."""
    run = REPO / "docs" / "divided" / "final-runs" / "magrpo"
    text = _benchmarks_text()
    metrics = _metrics_by_step(run)
    tokens = " / ".join(str(round(metrics[s]["main/completion_tokens"])) for s in range(23, 32))
    assert f"(mean tokens {tokens} in steps 23-31)" in text, tokens
    norms = [round(metrics[s]["main/grad_norm"]) for s in range(23, 27)]
    assert norms == [91, 134, 54, 224] and "91 / 134 / 54 / **224** in steps 23-26" in text
    assert [min(round(metrics[s]["main/grad_norm"]) for s in range(6, 14)),
            max(round(metrics[s]["main/grad_norm"]) for s in range(6, 14))] == [4, 21]
    steps = _actions_by_step(run)
    credit = {s: [a["credit"]["main"] for a in acts] for s, acts in steps.items()}
    unparsed = {s: _unparsed(acts) for s, acts in steps.items()}
    mean = {s: round(sum(v) / len(v), 2) for s, v in credit.items()}
    assert [min(mean[s] for s in range(22, 26)), max(mean[s] for s in range(22, 26))] == [0.45, 0.67]
    assert [mean[s] for s in range(26, 32)] == [0.26, 0.14, 0.07, 0.04, 0.03, 0.0]
    assert max(unparsed[s] for s in range(1, 28)) == 3 and all(len(credit[s]) == 16 for s in credit)
    assert [unparsed[s] for s in range(28, 32)] == [5, 10, 12, 16]
    assert metrics[31]["main/trained_samples"] == 0
    # The stop rule at step 45: val pass@1 0.0 and more than half of steps 31-45's main
    # completions unparseable.
    (row0,) = summarize_folder(run / "validation" / "step-000000").rows
    (row45,) = summarize_folder(run / "validation" / "step-000045").rows
    assert [round(100 * row0["pass@1"], 1), round(100 * row45["pass@1"], 1)] == [10.0, 5.0]
    assert [round(100 * metrics[s]["val/acc@1"], 1) for s in (0, 45)] == [29.6, 16.5]
    assert sum(unparsed[s] for s in range(31, 46)) == 71 and sum(len(credit[s]) for s in range(31, 46)) == 240
    assert [unparsed[s] for s in (31, 32)] == [16, 15] and sum(unparsed[s] for s in range(38, 46)) == 8
    assert [min(mean[s] for s in range(38, 46)), max(mean[s] for s in range(38, 46))] == [0.09, 0.42]
    assert "**5.0 ±3.0** (10.0 ±4.5 at step 0), acc@1 16.5% (29.6%)" in text


def _returns_nothing(code: str, entry_point: str) -> bool:
    """Whether `entry_point`'s own body has no `return` (its inner functions' do not count)."""
    import ast

    try:
        module = ast.parse(code)
    except SyntaxError:
        return False
    defs = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == entry_point]
    return bool(defs) and not any(isinstance(b, ast.Return) for b in defs[-1].body)


@MODEL_CODE_WARNINGS
def test_what_the_magrpo_finals_main_writes_after_its_collapse_is_counted() -> None:
    """BENCHMARKS: 20 of seed 0's main completions of steps 38-45, drawn with
    random.Random(6) and read by hand; what they are, recounted from the syntax tree."""
    import random

    from coopcode.code_analysis.program import extract_code

    drawn = []
    for line in gzip.open(REPO / "docs" / "divided" / "final-runs" / "magrpo" / "samples.jsonl.gz", "rt"):
        r = json.loads(line)
        if 38 <= r["step"] <= 45:
            drawn += [(r["task_id"].split("/", 1)[1], a) for a in r["actions"]]
    picked = random.Random(6).sample(drawn, 20)
    silent = sum(_returns_nothing(extract_code(a["main"]), entry) for entry, a in picked)
    composes = sum("decorator" in a["cooperation"]["patterns"] for _, a in picked)
    unparsed = sum(a["reward"]["main_syntax"] == 0 for _, a in picked)
    passing = sum(a["reward"]["main_tests"] == 1.0 for _, a in picked)
    assert (silent, composes, unparsed, passing) == (14, 5, 1, 1)
    assert ("14 of the 20 define the outer function inside the task's and return nothing" in
            _benchmarks_text())


def _actions_by_step(run: Path) -> dict[int, list[dict[str, Any]]]:
    """A run's joint actions of each training step, from its gzipped samples.jsonl."""
    steps: dict[int, list[dict[str, Any]]] = {}
    for line in gzip.open(run / "samples.jsonl.gz", "rt"):
        r = json.loads(line)
        steps.setdefault(r["step"], []).extend(r["actions"])
    return steps


def _unparsed(actions: list[dict[str, Any]]) -> int:
    return sum(a["reward"]["main_syntax"] == 0 for a in actions)


def _passed(actions: list[dict[str, Any]]) -> int:
    return sum(bool(a["passed"]) for a in actions)


def _second_draw() -> Path:
    """Seed 0's second draw (2026-11-29), carried to the next session (carry_run.sh) and
    kept in checkpoints/ when it ended."""
    return REPO / "checkpoints" / "compose-magrpo-0.5b"


@MODEL_CODE_WARNINGS
def test_seed_0s_second_draw_is_counted_from_its_record() -> None:
    """BENCHMARKS, "Seed 0 again" and "The second draw went further before it turned": the
    same data order as the first attempt, another start, and the turn after step 45."""
    run, first = _second_draw(), REPO / "docs" / "divided" / "final-runs" / "magrpo"
    text = _benchmarks_text()
    metrics = _metrics_by_step(run)
    before = _metrics_by_step(first)
    assert all(metrics[s]["task_ids"] == before[s]["task_ids"] for s in range(1, 47))
    assert [round(metrics[1]["reward/mean"], 2), round(before[1]["reward/mean"], 2)] == [0.92, 1.26]
    val = {s: (round(100 * r["val/pass@1"], 1), round(100 * r["val/pass@1_se"], 1))
           for s, r in metrics.items() if "val/pass@1" in r}
    assert val[0] == (8.8, 3.0) and "**8.8 ±3.0** here against 10.0 ±4.5" in text
    assert val[45] == (20.0, 5.9) and "at step 45 was **20.0 ±5.9** (acc@1 42.1%, own work 80%)" in text
    assert val[90] == (3.8, 2.8) and "Val pass@1 at step 90: **3.8 ±2.8** (acc@1 21.2%, own work 61%)" in text
    assert [round(100 * metrics[s]["val/acc@1"], 1) for s in (45, 90)] == [42.1, 21.2]
    (row45,) = summarize_folder(run / "validation" / "step-000045").rows
    assert round(100 * row45["pass@1"], 1) == 20.0  # the figure comes back from its samples
    steps = _actions_by_step(run)
    credit = {s: [a["credit"]["main"] for a in acts] for s, acts in steps.items()}
    unparsed = {s: _unparsed(acts) for s, acts in steps.items()}
    passed = {s: _passed(acts) for s, acts in steps.items()}
    mean = {s: round(sum(v) / len(v), 2) for s, v in credit.items()}
    tokens = {s: round(metrics[s]["main/completion_tokens"]) for s in credit}
    norms = {s: round(metrics[s].get("main/grad_norm", 0)) for s in credit}

    def span(d: dict[int, Any], a: int, b: int) -> tuple[Any, Any]:
        return min(d[s] for s in range(a, b + 1)), max(d[s] for s in range(a, b + 1))

    assert span(tokens, 1, 45) == (39, 111) and span(mean, 1, 45) == (0.26, 1.04)
    assert sum(unparsed[s] for s in range(1, 46)) == 19 and sum(len(credit[s]) for s in range(1, 46)) == 720
    assert sum(passed[s] for s in range(1, 46)) == 214
    assert max(norms[s] for s in range(1, 46)) == 81
    assert [norms[s] for s in (48, 60, 80, 92)] == [231, 370, 329, 543]
    assert span(tokens, 64, 90) == (155, 256) and span(mean, 61, 90) == (0.10, 0.89)
    assert sum(unparsed[s] for s in range(76, 91)) == 2

    def chars(a: int, b: int) -> int:  # main's kept code, mean length over steps a-b
        lengths = [len(x["main"]) for s in range(a, b + 1) for x in steps[s]]
        return round(sum(lengths) / len(lengths))

    assert (chars(1, 45), chars(76, 90)) == (311, 331)
    assert sum(passed[s] for s in range(61, 91)) == 60 and sum(len(credit[s]) for s in range(61, 91)) == 480
    # The first attempt, for the comparison the text makes.
    first_passed = {s: _passed(acts) for s, acts in _actions_by_step(first).items()}
    assert sum(first_passed[s] for s in range(1, 27)) == 75 and sum(first_passed[s] for s in range(27, 46)) == 0


@MODEL_CODE_WARNINGS
def test_what_the_second_draws_main_writes_after_its_turn_is_counted() -> None:
    """BENCHMARKS: 20 of the second draw's main completions of steps 76-90, drawn with
    random.Random(9) and read by hand; their kinds recounted from the syntax tree."""
    import ast
    import random

    from coopcode.code_analysis.program import extract_code

    def kind(code: str, entry: str) -> str:
        module = ast.parse(code)
        (outer,) = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == entry]
        returns = [b for b in outer.body if isinstance(b, ast.Return)]
        if not returns:
            return "no return"
        value = returns[-1].value
        if isinstance(value, ast.Call) and len(value.args) == 1 and isinstance(value.args[0], ast.Call) \
                and isinstance(value.args[0].func, ast.Name):
            return f"outer({value.args[0].func.id}(x))"
        return "other"

    drawn = []
    for line in gzip.open(_second_draw() / "samples.jsonl.gz", "rt"):
        r = json.loads(line)
        if 76 <= r["step"] <= 90:
            drawn += [(r["task_id"].split("/", 1)[1], a) for a in r["actions"]]
    picked = random.Random(9).sample(drawn, 20)
    kinds = [kind(extract_code(a["main"]), entry) for entry, a in picked]
    assert {k: kinds.count(k) for k in kinds} == {"outer(aux(x))": 11, "outer(of(x))": 1,
                                                   "no return": 6, "other": 2}
    passing = sorted(entry for entry, a in picked if a["passed"])
    assert passing == ["correct_bracketing_of_sort_numbers", "decimal_to_binary_of_solution"]
    assert all(k == "outer(aux(x))" for k, (_, a) in zip(kinds, picked) if a["passed"])
    assert "**11 return the inner function applied to aux's result**" in _benchmarks_text()


def _undefined_calls(code: str) -> set[str]:
    """Names main calls that nothing defines: not aux, not a builtin, not defined, assigned,
    imported or an argument anywhere in its code."""
    import ast
    import builtins

    tree = ast.parse(code)
    known = {"aux"}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            known.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            known |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            known.add(node.id)
        elif isinstance(node, ast.arg):
            known.add(node.arg)
    return {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id not in known and not hasattr(builtins, n.func.id)}


@MODEL_CODE_WARNINGS
def test_seed_0s_end_and_the_step_the_rule_picks_are_counted() -> None:
    """BENCHMARKS, "Seed 0's end": step 135's evaluation, the chosen step, and main calling
    functions nobody defines, recounted from the kept record."""
    run = _second_draw()
    text = _benchmarks_text()
    metrics = _metrics_by_step(run)
    val = {s: round(100 * r["val/pass@1"], 1) for s, r in metrics.items() if "val/pass@1" in r}
    assert val == {0: 8.8, 45: 20.0, 90: 3.8, 135: 0.0} and "**8.8 / 20.0 / 3.8 / 0.0**" in text
    assert json.loads((run / "chosen_step.json").read_text())["step"] == 45
    assert json.loads((run / "manifest.json").read_text())["step"] == 45
    assert "benched at step 45**" in text
    (row,) = summarize_folder(run / "validation" / "step-000135").rows
    assert row["pass@1"] == 0.0 and round(100 * row["acc@1"], 1) == 0.3
    assert round(100 * row["own_work_rate"], 1) == 2.5 and round(100 * row["shell_rate"]) == 94
    assert round(row["reward_terms"]["helper_tests"], 3) == 0.708
    assert [round(metrics[s]["step_seconds"]) for s in (127, 130)] == [324, 89]
    assert round(metrics[135]["val/seconds"]) == 837
    norms = {s: metrics[s]["main/grad_norm"] for s in range(91, 136)}
    assert sum(v > 200 for v in norms.values()) == 11 and round(max(norms.values())) == 543
    tokens = [metrics[s]["main/completion_tokens"] for s in range(91, 136)]
    assert (round(min(tokens)), round(max(tokens))) == (96, 256)
    assert round(100 * sum(metrics[s]["truncated_rate"] for s in range(91, 136)) / 45) == 27
    credit = [metrics[s]["credit/main"] for s in range(91, 136)]
    assert (round(min(credit), 2), round(max(credit), 2)) == (0.07, 0.87)
    steps = _actions_by_step(run)

    def undefined(a: int, b: int) -> tuple[int, int, int, int]:
        acts = [x for s in range(a, b + 1) for x in steps[s]]
        calls = unparsed = 0
        for x in acts:
            try:
                calls += bool(_undefined_calls(x["main"] or ""))
            except SyntaxError:
                unparsed += 1
        return calls, len(acts), unparsed, _passed(acts)

    assert undefined(1, 45)[:2] == (24, 720) and undefined(76, 90)[:2] == (50, 240)
    assert undefined(121, 135) == (116, 240, 10, 3)
    assert "**116 of 240 in steps 121-135**" in text and "3 of those 240 passed" in text


@MODEL_CODE_WARNINGS
def test_twenty_of_seed_0s_last_samples_read_by_hand_are_counted() -> None:
    """BENCHMARKS, "Read by hand: 20 of main's 240 completions of steps 121-135": main calls
    the task's inner function by name without writing it, or writes it wrong."""
    import ast
    import random

    names = {"writes inner": "writes the inner function",
             "inner calls itself": "writes the inner function",
             "calls inner unwritten": "calls it unwritten"}

    def kind(entry: str, code: str) -> str:
        shape = _main_shape(entry, code)
        return names.get(shape, shape)

    acts = [(r["task_id"].split("/", 1)[1], a)
            for r in map(json.loads, gzip.open(_second_draw() / "samples.jsonl.gz", "rt"))
            if 121 <= r["step"] <= 135 for a in r["actions"]]
    picked = random.Random(9).sample(acts, 20)
    kinds = [kind(entry, a["main"]) for entry, a in picked]
    assert {k: kinds.count(k) for k in kinds} == {"calls it unwritten": 11,
                                                   "writes the inner function": 8, "no return": 1}
    assert not any(a["passed"] for _, a in picked)
    one_liners = [a["main"] for (_, a), k in zip(picked, kinds) if k == "calls it unwritten"]
    assert sum(len(ast.parse(c).body[0].body) == 1 for c in one_liners) == 9
    writes = [a["main"] for (entry, a), k in zip(picked, kinds) if k == "writes the inner function"]
    assert sum(bool(_undefined_calls(c)) for c in writes) == 4
    every = [kind(entry, a["main"]) for entry, a in acts]
    assert {k: every.count(k) for k in every} == {"calls it unwritten": 104,
                                                  "writes the inner function": 103,
                                                  "no return": 15, "unparseable": 10, "other": 8}
    text = _benchmarks_text()
    assert "**11 call the task's inner function by its name without writing it**" in text
    assert "Over all 240: 104 call the inner function unwritten, 103 write it" in text


def test_seed_0s_bench_and_twenty_of_its_samples_read_by_hand_are_counted() -> None:
    """BENCHMARKS, "Seed 0's bench, ended": what the pair's 880 compose:test samples are, by
    script, and the 20 read by hand (sorted by problem and sample, random.Random(10))."""
    import re

    final = REPO / "docs" / "divided" / "final"
    records = sorted(read_records(samples_file(final / "magrpo")),
                     key=lambda r: (r["task_id"], int(r["sample"])))
    assert len(records) == 880
    shell = re.compile(r"return \w+\(aux\([^()]*\)\)")

    def last_line(r: dict[str, Any]) -> str:
        lines = r["main_code"].strip().splitlines()
        return lines[-1].strip() if lines else ""

    def halves(r: dict[str, Any]) -> tuple[bool, bool]:
        agents = r["agents"]
        return agents["helper_contract"] == 1.0, agents["main_with_reference"] == 1.0

    def count(rs: list[dict[str, Any]]) -> dict[str, int]:
        kinds = [halves(r) for r in rs]
        return {"passed": sum(bool(r["passed"]) for r in rs),
                "shell": sum(bool(shell.fullmatch(last_line(r))) for r in rs),
                "both right": kinds.count((True, True)), "aux right": kinds.count((True, False)),
                "main right": kinds.count((False, True)), "neither": kinds.count((False, False)),
                "passed, both right": sum(bool(r["passed"]) and halves(r) == (True, True) for r in rs),
                "main unparsed": sum(not r["agents"]["main_parses"] for r in rs)}

    assert count(records) == {"passed": 197, "shell": 798, "both right": 175, "aux right": 296,
                              "main right": 159, "neither": 250, "passed, both right": 175,
                              "main unparsed": 44}
    assert sum(not r["agents"]["helper_parses"] for r in records) == 4
    drawn = [records[i] for i in random.Random(10).sample(range(len(records)), 20)]
    assert count(drawn) == {"passed": 4, "shell": 19, "both right": 3, "aux right": 9,
                            "main right": 2, "neither": 6, "passed, both right": 3,
                            "main unparsed": 1}
    quoted = {r["task_id"].split("/", 1)[1]: bool(r["passed"]) for r in drawn}
    assert quoted["median_of_rolling_max"] and quoted["iscube_of_sum_squares"]
    assert not quoted["pluck_of_parse_nested_parens"]
    alone = read_records(samples_file(final / "magrpo-main"))
    assert sum(bool(r["passed"]) for r in alone) == 4  # 0.45% of 880
    assert sum("aux(" in r["main_code"] for r in alone) == 832
    assert sum("def aux(" in r["main_code"] for r in alone) == 108
    text = _benchmarks_text()
    assert "in 798, with the outer function written inside the entry point" in text
    assert "Both halves right: 175, and all 175 pass; only aux right: 296" in text
    assert "**4 pass; 19 of the 20 end `return outer(aux(x))`**" in text
    assert "it calls aux in 832 of its 880 samples and defines it in 108" in text


@MODEL_CODE_WARNINGS
def test_seed_1s_bench_twenty_samples_read_by_hand_and_the_goals_verdict_are_counted() -> None:
    """BENCHMARKS, "Seed 1's bench" and "The goal's verdict": what the pair's 880
    compose:test samples are (the warm start, by the rule), the 20 read by hand (in the
    committed file's order, random.Random(13)), and seed 0's pair against that warm start."""
    from _experiments import load

    divided = load("docs/divided/divided_table.py")

    final = REPO / "docs" / "divided" / "final"
    records = [json.loads(line) for line in gzip.open(final / "magrpo-seed1" / "samples.jsonl.gz", "rt")]
    assert len(records) == 880

    def count(rs: list[dict[str, Any]]) -> dict[str, int]:
        halves = [(r["agents"]["helper_contract"] == 1.0, r["agents"]["main_with_reference"] == 1.0)
                  for r in rs]
        return {"passed": sum(bool(r["passed"]) for r in rs),
                "both right": halves.count((True, True)), "aux right": halves.count((True, False)),
                "main right": halves.count((False, True)), "neither": halves.count((False, False)),
                "main unparsed": sum(not r["agents"]["main_parses"] for r in rs),
                "helper unparsed": sum(not r["agents"]["helper_parses"] for r in rs),
                "writes inner": sum(_main_shape(r["entry_point"], r["main_code"] or "") == "writes inner"
                                    for r in rs)}

    assert count(records) == {"passed": 102, "both right": 83, "aux right": 220, "main right": 228,
                              "neither": 349, "main unparsed": 59, "helper unparsed": 10,
                              "writes inner": 740}
    drawn = random.Random(13).sample(records, 20)
    assert count(drawn) == {"passed": 2, "both right": 2, "aux right": 4, "main right": 5,
                            "neither": 9, "main unparsed": 1, "helper unparsed": 0,
                            "writes inner": 17}
    quoted = {r["task_id"].split("/", 1)[1]: r for r in drawn}
    assert quoted["fix_spaces_of_anti_shuffle"]["passed"]
    assert quoted["fibfib_of_can_arrange"]["agents"]["main_with_reference"] == 1.0
    assert quoted["anti_shuffle_of_solve"]["agents"]["helper_contract"] == 1.0
    assert "aux(" not in quoted["count_up_to_of_fruit_distribution"]["main_code"]
    seed_0, warm = divided.row_figures(final / "magrpo"), divided.row_figures(final / "magrpo-seed1")
    one, ten = (d.to_json() for d in divided.pair_rows(warm, seed_0, (1, 10)))
    assert round(100 * one["diff_mean"], 2) == 10.80
    assert [round(100 * one[k], 2) for k in ("diff_low", "diff_high")] == [6.32, 15.27]
    assert (one["gained"], one["lost"]) == (38, 8)
    assert [round(100 * ten[k], 2) for k in ("diff_mean", "diff_low", "diff_high")] == [6.82, -3.24, 16.87]
    assert [round(100 * f.profile.helper_contract.rate, 1) for f in (warm, seed_0)] == [34.4, 53.5]
    assert [round(100 * f.profile.main_with_reference.rate, 1) for f in (warm, seed_0)] == [35.3, 38.0]
    text = _benchmarks_text()
    assert "both halves right 83, only aux right 220, only main's half right 228, neither 349" in text
    assert "**2 pass; 17 of the 20 have main write the inner function" in text
    assert "**+10.80 [+6.32, +15.27]** at pass@1, 38 problems gained and 8 lost" in text
    assert "**So the goal is met by 1 of the 2 seeds: not met for the recipe.**" in text


def _seed_1() -> Path:
    """Seed 1's record: carried in git while it trains, kept in checkpoints/ once it ends."""
    return next(f for f in (REPO / "docs" / "divided" / "carried" / "magrpo-seed1",
                            REPO / "checkpoints" / "compose-magrpo-0.5b-seed1")
                if (f / "metrics.jsonl").exists())


# A function whose whole body is an import (`def fizz_buzz(n): import fizz_buzz`).
BODY_IS_IMPORT = re.compile(r"def \w+\([^)]*\)[^:\n]*: import \w+")


def _main_shape(entry: str, code: str) -> str:
    """What main's completion of compose task `entry` (outer_of_inner) does with the inner
    function: writes it, writes it as a call to itself (no base case), calls it unwritten;
    or has no return, or does not parse."""
    import ast

    try:
        module = ast.parse(code)
    except SyntaxError:
        return "unparseable"
    outer = next((n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == entry), None)
    if outer is None:
        return "no entry point"
    if not any(isinstance(b, ast.Return) for b in outer.body):
        return "no return"
    inner = entry.split("_of_")[0]

    def called(node: Any) -> set[str]:
        return {c.func.id for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}

    written = [n for n in ast.walk(outer) if isinstance(n, ast.FunctionDef) and n.name == inner]
    if written:
        return "inner calls itself" if inner in called(written[0]) else "writes inner"
    return "calls inner unwritten" if inner in called(outer) else "other"


@MODEL_CODE_WARNINGS
def test_seed_1s_turn_is_counted_from_its_record() -> None:
    """BENCHMARKS, "Seed 1, turned": steps 25-91 and the evaluations at 45 and 90, from the
    committed record: main's half stops being written while the helper's stays right."""
    import statistics
    from collections import Counter

    run = _seed_1()
    by_step = _metrics_by_step(run)
    assert [by_step[s]["val/pass@1"] for s in (45, 90)] == [0.0, 0.0]
    assert [round(100 * by_step[s]["val/acc@1"], 1) for s in (45, 90)] == [1.8, 4.3]
    steps = [by_step[s] for s in range(25, 92)]
    seconds = [r["step_seconds"] for r in steps]
    assert round(sum(seconds) / 60) == 133 and round(statistics.mean(seconds)) == 119
    early, late = steps[:21], steps[21:]  # steps 25-45, 46-91
    assert round(100 * statistics.mean(r["pass_rate"] for r in early)) == 19
    assert sum(r["pass_rate"] > 0 for r in late) == 2 and len(late) == 46
    assert sum(r["main/adv_abs"] == 0 for r in late) == 18
    assert [round(statistics.mean(r["reward/helper_tests"] for r in part), 2)
            for part in (early, late)] == [0.80, 0.81]
    assert [round(statistics.mean(r["reward/main_tests"] for r in part), 2)
            for part in (early, late)] == [0.33, 0.02]
    assert [round(statistics.mean(r["main/completion_tokens"] for r in part))
            for part in (early, late)] == [108, 42]
    main_norms = [r["main/grad_norm"] for r in steps]
    assert sum(g > 200 for g in main_norms) == 9 and round(max(main_norms)) == 558
    assert 25 + main_norms.index(max(main_norms)) == 68
    assert round(max(r["helper/grad_norm"] for r in steps)) == 107
    shapes: dict[int, Counter[str]] = {}
    for line in gzip.open(run / "samples.jsonl.gz", "rt"):
        r = json.loads(line)
        entry = r["task_id"].split("/", 1)[1]
        shapes.setdefault((r["step"] - 1) // 15, Counter()).update(
            _main_shape(entry, a["main"] or "") for a in r["actions"])
    assert [shapes[b]["writes inner"] for b in (0, 2, 5)] == [206, 110, 1]
    assert [shapes[b]["inner calls itself"] for b in (0, 2, 5)] == [5, 94, 1]
    assert [shapes[b]["no return"] for b in (0, 2, 5)] == [9, 21, 219]
    late = [a for r in map(json.loads, gzip.open(run / "samples.jsonl.gz", "rt"))
            if 76 <= r["step"] <= 90 for a in r["actions"]]
    assert sum(bool(BODY_IS_IMPORT.search(a["main"] or "")) for a in late) == 122
    read = random.Random(11).sample(late, 20)
    assert sum(bool(BODY_IS_IMPORT.search(a["main"] or "")) for a in read) == 10
    assert not any(a["passed"] for a in read)
    text = _benchmarks_text()
    assert "in 10 of the 20 a function's whole body is an import" in text
    assert "**0.0% at step 45 and 0.0% at step 90**" in text
    assert "writes the inner function in 206 of 240 in steps 1-15, 110 in steps 31-45, 1 in steps 76-90" in text


@MODEL_CODE_WARNINGS
def test_seed_1s_end_and_the_step_the_rule_picks_are_counted_from_its_record() -> None:
    """BENCHMARKS, "Seed 1's end": steps 92-135 and the evaluation at 135 from the kept run,
    and the rule's step: 0, so the kept adapters are the warm start's, byte for byte."""
    import statistics
    from collections import Counter

    run = REPO / "checkpoints" / "compose-magrpo-0.5b-seed1"
    by_step = _metrics_by_step(run)
    assert sorted(by_step) == list(range(136))
    vals = [by_step[s]["val/pass@1"] for s in (0, 45, 90, 135)]
    assert [round(100 * v, 1) for v in vals] == [11.2, 0.0, 0.0, 0.0]
    assert round(100 * by_step[135]["val/acc@1"], 1) == 4.3
    assert json.loads((run / "chosen_step.json").read_text())["step"] == 0
    assert json.loads((run / "manifest.json").read_text())["step"] == 0
    warm = REPO / "checkpoints" / "compose-sft-pair-0.5b"
    for role in ("helper", "main"):
        assert ((run / role / "adapter_model.safetensors").read_bytes()
                == (warm / role / "adapter_model.safetensors").read_bytes())
    steps = [by_step[s] for s in range(92, 136)]
    seconds = [r["step_seconds"] for r in steps]
    assert round(sum(seconds) / 60) == 27 and round(statistics.mean(seconds)) == 37
    assert (round(min(seconds)), round(max(seconds))) == (11, 81)
    assert round(by_step[135]["val/seconds"]) == 158
    assert not any(r["pass_rate"] > 0 for r in steps)
    assert sum(r["main/adv_abs"] == 0 for r in steps) == 34
    assert round(statistics.mean(r["reward/helper_tests"] for r in steps), 2) == 0.81
    assert round(statistics.mean(r["reward/main_tests"] for r in steps), 2) == 0.01
    assert round(statistics.mean(r["main/completion_tokens"] for r in steps)) == 23
    main_norms = [r["main/grad_norm"] for r in steps]
    assert sum(g > 200 for g in main_norms) == 1 and 92 + main_norms.index(max(main_norms)) == 94
    assert round(max(r["helper/grad_norm"] for r in steps)) == 49
    last = [(r["task_id"].split("/", 1)[1], a)
            for r in map(json.loads, gzip.open(run / "samples.jsonl.gz", "rt"))
            if 121 <= r["step"] <= 135 for a in r["actions"]]
    assert len(last) == 240
    shapes = Counter(_main_shape(entry, a["main"] or "") for entry, a in last)
    mains = [a for _, a in last]
    assert shapes["no return"] == 232 and not any(a["passed"] for a in mains)
    assert sum(bool(BODY_IS_IMPORT.search(a["main"] or "")) for a in mains) == 204
    text = _benchmarks_text()
    assert "**11.2 / 0.0 / 0.0 / 0.0** at steps 0 / 45 / 90 / 135" in text
    assert "232 of main's 240 completions have no return at the outer level" in text


def test_seed_1s_first_steps_are_counted_from_its_record() -> None:
    """BENCHMARKS, "Seed 1, begun": its step-0 validation and steps 1-24, from the committed
    record (carried while it trains; kept in checkpoints/ once it ends)."""
    import statistics

    by_step = _metrics_by_step(_seed_1())
    assert by_step[0]["val/pass@1"] == pytest.approx(0.1125)
    steps = [by_step[s] for s in range(1, 25)]
    seconds = [r["step_seconds"] for r in steps]
    assert round(sum(seconds) / 60) == 82 and round(statistics.mean(seconds)) == 205
    assert (round(min(seconds)), round(max(seconds))) == (129, 350)
    assert round(statistics.mean(r["gen_seconds"] for r in steps)) == 92
    assert round(statistics.mean(r["update_seconds"] for r in steps)) == 110
    rates = [r["tokens_per_s"] for r in steps]
    assert (round(min(rates)), round(max(rates))) == (20, 37)
    grads = [max(r["main/grad_norm"], r["helper/grad_norm"]) for r in steps]
    assert round(max(grads)) == 107 and grads.index(max(grads)) + 1 == 23
    assert round(max(r["step_peak_rss_mb"] for r in steps) / 1000, 1) == 20.4  # "peak 20382 MB"
    passes = [r["pass_rate"] for r in steps]
    assert (min(passes), max(passes), round(statistics.mean(passes), 2)) == (0.0, 0.5, 0.25)
    text = _benchmarks_text()
    assert "**11.2% ±3.8**" in text and "Steps 1-24 took 82 minutes: 129-350 s a step, 205 s" in text
    assert "peak memory 20.4 GB of 24 at step 6" in text
