"""Rewards where a user names them: `evaluate --reward` on pair lines and on a bench's own
samples.jsonl, `bench --reward` (recorded, and a finished run scored again without
sampling), `solve --reward`, and bad names refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import assert_refused, coopcode
from test_bench import good_script

from coopcode.engines import ScriptedEngine
from coopcode.evaluation.bench import BenchConfig, run_bench
from coopcode.problems import load_problems

REPO = Path(__file__).resolve().parent.parent
BELOW_ZERO = str(REPO / "examples" / "below_zero.py")

HELPER = ("def aux(ops):\n    out, total = [], 0\n    for o in ops:\n        total += o\n"
          "        out.append(total)\n    return out\n")
ALONE = ("def below_zero(operations):\n    total = 0\n    for o in operations:\n        total += o\n"
         "        if total < 0:\n            return True\n    return False\n")
PAIRS = [
    # main uses the helper's running balances and adds its own test: the full coop reward
    {"helper": HELPER, "main": "def below_zero(operations):\n    return any(b < 0 for b in aux(operations))\n"},
    # main works alone: correct, no cooperation term
    {"helper": HELPER, "main": ALONE},
    # the helper's call only in a comment: not a call
    {"helper": HELPER, "main": "# any(b < 0 for b in aux(operations))\n" + ALONE},
    # main only wraps a helper that does the whole job
    {"helper": "def aux(ops):\n    t = 0\n    for o in ops:\n        t += o\n        if t < 0:\n"
               "            return True\n    return False\n",
     "main": "def below_zero(operations):\n    return aux(operations)\n"},
]


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_evaluate_scores_pair_lines_under_each_reward(tmp_path: Path) -> None:
    samples = _write(tmp_path / "pairs.jsonl", [{"task_id": "below_zero", **p} for p in PAIRS])
    totals = {}
    for reward in ("seed", "coop"):
        out = tmp_path / f"{reward}.jsonl"
        done = coopcode("evaluate", str(samples), "--problems", BELOW_ZERO, "--k", "1",
                        "--reward", reward, "--out", str(out), "--sandbox", "process", "--json")
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result["pass@1"] == 1.0 and result["reward"] == reward
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert [r["passed"] for r in rows] == [True] * 4
        assert all(r["reward_name"] == reward for r in rows)
        totals[reward] = [r["reward"]["total"] for r in rows]
        if reward == "coop":
            assert rows[0]["reward"] == {"helper": 0.4, "main": 0.6, "syntax": 0.5, "tests": 1.0,
                                         "uses": 0.5, "beyond_wrapper": 1.0, "discarded": 0.0,
                                         "total": 4.0}
            assert rows[3]["reward"]["uses"] == 0.5 and rows[3]["reward"]["beyond_wrapper"] == 0.0
        assert result["mean_reward"] == pytest.approx(sum(totals[reward]) / 4)
    # The seed reward cannot tell the four apart; coop ranks real use first, then the
    # wrapper, then the two mains that work alone (the comment earns nothing).
    assert len(set(totals["seed"])) == 1
    assert totals["coop"] == [4.0, 2.5, 2.5, 3.0]
    # Without --reward, a pair line gets the pair's default (seed) and the text says so.
    done = coopcode("evaluate", str(samples), "--problems", BELOW_ZERO, "--k", "1",
                    "--sandbox", "process")
    assert done.returncode == 0, done.stderr
    assert "mean reward (seed):" in done.stdout


def test_evaluate_scores_a_bench_samples_file_again(tmp_path: Path, process_sandbox: object) -> None:
    """A finished bench scored under another reward: its programs run again in the sandbox,
    each line keeps its scheme and sample, and the figures agree with the bench's own
    summary scored under that reward without running anything."""
    problems = load_problems(BELOW_ZERO)
    config = BenchConfig(problems=BELOW_ZERO, schemes=("sequential", "single"), ks=(1, 2), n=2,
                         temperature=0.8)
    summary = run_bench(config, problems, ScriptedEngine(good_script), process_sandbox,
                        tmp_path / "run")
    by_scheme = {r["scheme"]: r for r in summary.rows}
    assert by_scheme["sequential"]["reward"] == "seed"
    assert by_scheme["single"]["reward"] == "seed-grpo"
    samples = tmp_path / "run" / "samples.jsonl"
    out = tmp_path / "coop.jsonl"
    done = coopcode("evaluate", str(samples), "--problems", BELOW_ZERO, "--k", "1,2",
                    "--reward", "coop", "--out", str(out), "--sandbox", "process", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result["by_scheme"]) == {"sequential", "single"}
    seq = result["by_scheme"]["sequential"]
    assert seq["pass@1"] == 1.0 and seq["reward"] == "coop" and seq["mean_reward"] == 4.0
    assert result["by_scheme"]["single"]["pass@1"] == 0.0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted((r["scheme"], r["sample"]) for r in rows) == [
        ("sequential", 0), ("sequential", 1), ("single", 0), ("single", 1)]
    # The bench's own summary under coop, from the records alone, agrees.
    from dataclasses import replace

    from coopcode.evaluation.bench import summarize

    records = [json.loads(line) for line in samples.read_text().splitlines()]
    again = summarize(records, replace(config, reward="coop"), [p.task_id for p in problems], "")
    rescored = {r["scheme"]: r for r in again.rows}
    assert rescored["sequential"]["mean_reward"] == seq["mean_reward"]
    assert rescored["sequential"]["reward_terms"]["beyond_wrapper"] == 1.0


def test_bench_and_solve_record_the_named_reward(tmp_path: Path, tiny_model_dir: Path) -> None:
    out = tmp_path / "bench"
    done = coopcode("bench", "--model", str(tiny_model_dir), "--problems", BELOW_ZERO, "--n", "1",
                    "--k", "1", "--max-new-tokens", "8", "--reward", "coop", "--sandbox", "process",
                    "--dtype", "float32", "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)["rows"][0]
    assert row["reward"] == "coop" and set(row["reward_terms"]) == {
        "helper", "main", "syntax", "tests", "uses", "beyond_wrapper", "discarded"}
    record = json.loads((out / "samples.jsonl").read_text().splitlines()[0])
    assert record["reward_name"] == "coop" and "beyond_wrapper" in record["reward"]
    assert "(coop)" in (out / "report.md").read_text()
    done = coopcode("solve", BELOW_ZERO, "--model", str(tiny_model_dir), "--json", "--reward", "coop",
                    "--max-new-tokens", "8", "--sandbox", "process", "--dtype", "float32")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["reward_name"] == "coop" and data["meta"]["reward"] == "coop"
    assert "uses" in data["reward"] and data["attempts"][0]["reward_name"] == "coop"


@pytest.mark.parametrize("command", [
    ("train", "--reward", "nope", "--out", "/tmp/never"),
    ("bench", "--reward", "nope"),
    ("solve", "examples/below_zero.py", "--reward", "nope"),
    ("evaluate", "examples/below_zero.py", "--reward", "nope"),
])
def test_an_unknown_reward_is_refused_in_one_line(command: tuple[str, ...]) -> None:
    assert_refused(coopcode(*command), "unknown reward 'nope' for --reward: use one of seed, "
                                       "seed-grpo, coop")


def test_train_on_the_coop_reward_records_it_and_logs_its_terms(tmp_path: Path,
                                                                tiny_model_dir: Path) -> None:
    out = tmp_path / "coop-run"
    done = coopcode("train", "--model", str(tiny_model_dir), "--reward", "coop", "--steps", "1",
                    "-G", "2", "--max-new-tokens", "8", "--limit", "1", "--sandbox", "process",
                    "--out", str(out), "--events", "jsonl")
    assert done.returncode == 0, done.stderr[-2000:]
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    # what loading says comes first as log events (the TUI shows them); then the run starts
    started = next(e for e in events if e["type"] != "log")
    assert started["type"] == "started" and started["meta"]["reward"] == "coop"
    metric = next(e for e in events if e["type"] == "metric")["values"]
    assert {f"reward/{t}" for t in ("helper", "main", "syntax", "tests", "uses", "beyond_wrapper",
                                    "discarded")} <= set(metric)
    assert "reward/runs" not in metric  # the seed reward's terms are not this run's
    assert json.loads((out / "config.json").read_text())["reward"] == "coop"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["reward"] == "coop"
    samples = json.loads((out / "samples.jsonl").read_text().splitlines()[0])
    assert set(samples["actions"][0]["reward"]) >= {"uses", "beyond_wrapper", "total"}
    # Resuming with another reward would make another run: refused in one line.
    done = coopcode("train", "--resume", "--out", str(out), "--reward", "seed", "--steps", "2")
    assert done.returncode == 2 and "--reward was 'coop', not 'seed'" in done.stderr
