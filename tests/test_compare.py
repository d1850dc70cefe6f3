"""`coopcode compare`: paired differences on constructed runs with known answers, on two real
small bench runs (scripted agents, the real sandbox), and the refusals, through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from coopcode.engines import ScriptedEngine
from coopcode.evaluation.bench import BenchConfig, run_bench
from coopcode.problems import load_problems
from tests.cli_helpers import assert_one_line_error, coopcode

REPO = Path(__file__).resolve().parent.parent


# Records written before patterns were recorded: classified from the code when read.
MAINS = ["def f(x):\n    return aux(x)\n", "def f(x):\n    return [aux(v) for v in x]\n"]


def make_run(folder: Path, counts: dict[str, int], n: int, *, scheme: str = "sequential",
             problems: str = "humaneval:test", **identity: Any) -> Path:
    """A results folder as `coopcode bench` leaves it, with `counts[task]` of n samples passing."""
    folder.mkdir(parents=True)
    ident = {"temperature": 0.8, "prompts": "p1", "model_fingerprint": "m1", "max_new_tokens": 384,
             "turns": 1, "top_p": 0.95, **identity}
    meta = {"config": {"problems": problems, "n": n, "ks": [1, n], "schemes": [scheme]},
            "model": "qwen", "identity": ident}
    (folder / "meta.json").write_text(json.dumps(meta))
    with open(folder / "samples.jsonl", "w") as f:
        for task, c in counts.items():
            for i in range(n):
                ok = i < c
                f.write(json.dumps({
                    "scheme": scheme, "task_id": task, "sample": i, "passed": ok,
                    "pass_fraction": 1.0 if ok else 0.0, "syntax_ok": True, "n_tokens": 20,
                    "verdict": {"runnable": True}, "reward": {"total": 1.0 if ok else 0.5},
                    "helper_code": "def aux(x):\n    return x\n",
                    "main_code": MAINS[i % len(MAINS)]}) + "\n")
    return folder


# Ten problems, n=4. Per-problem pass@1 differences B - A:
#   .50 .25 0 0 0 -.25 .25 .25 .50 0  -> mean 0.15; 5 gained, 1 lost, 4 tied
#   sample sd = sqrt(0.525 / 9) = 0.241523, se = 0.0763763, t(9) = 2.262157
#   95% CI = 0.15 ± 0.172775 = [-0.022775, 0.322775]
#   sign test p = 2 * (C(6,0) + C(6,1)) / 2^6 = 0.21875
A_COUNTS = [0, 0, 1, 2, 4, 4, 3, 0, 1, 2]
B_COUNTS = [2, 1, 1, 2, 4, 3, 4, 1, 3, 2]
TASKS = [f"HumanEval/{i}" for i in range(10)]


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    a = make_run(tmp_path / "untrained", dict(zip(TASKS, A_COUNTS)), 4)
    b = make_run(tmp_path / "trained", dict(zip(TASKS, B_COUNTS)), 4)
    return a, b


def test_known_difference_interval_and_sign_test(two_runs: tuple[Path, Path]) -> None:
    done = coopcode("compare", *map(str, two_runs), "--json")
    assert done.returncode == 0, done.stderr
    (c,) = json.loads(done.stdout)["comparisons"]
    assert c["shared_problems"] == 10 and c["notes"] == []
    k1 = next(row for row in c["per_k"] if row["k"] == 1)
    assert k1["diff_mean"] == pytest.approx(0.15)
    assert k1["diff_se"] == pytest.approx(0.0763763, abs=1e-6)
    assert (k1["diff_low"], k1["diff_high"]) == pytest.approx((-0.022775, 0.322775), abs=1e-5)
    assert (k1["gained"], k1["lost"], k1["tied"]) == (5, 1, 4)
    assert k1["p_sign"] == pytest.approx(0.21875)
    assert "clustered" not in k1 and "clustered_method" not in c  # HumanEval: no sources
    assert k1["a"]["mean"] == pytest.approx(sum(A_COUNTS) / 40)
    assert k1["b"]["mean"] == pytest.approx(sum(B_COUNTS) / 40)
    # the problems that moved most, largest first (ties by name)
    assert [p["task_id"] for p in c["changed_most"][:2]] == ["HumanEval/0", "HumanEval/8"]
    assert c["changed_most"][0] == {"task_id": "HumanEval/0", "a_passed": 0, "a_n": 4,
                                    "b_passed": 2, "b_n": 4, "diff": 0.5}


def test_human_and_markdown_output(two_runs: tuple[Path, Path]) -> None:
    done = coopcode("compare", *map(str, two_runs))
    assert done.returncode == 0, done.stderr
    assert "+15.00" in done.stdout and "5/1/4" in done.stdout and "0.219" in done.stdout
    assert "HumanEval/0 0/4→2/4" in done.stdout
    md = coopcode("compare", *map(str, two_runs), "--markdown")
    assert md.returncode == 0, md.stderr
    assert "| untrained | trained | 1 | 42.50% | 57.50% | +15.00 | [-2.28, +32.28] | 5 / 1 / 4 |" \
        in md.stdout


def test_compose_runs_get_the_source_clustered_interval_beside_the_per_problem_one(
        tmp_path: Path) -> None:
    """compose:test's 88 problems come from 36 HumanEval sources. B gains exactly on the
    problems whose inner step is one of six sources, so the gains cluster by source: the
    clustered interval (recomputed here from the dyadic formula) is much wider than the
    per-problem one, and every output says so."""
    import numpy as np

    from coopcode.evaluation.stats import t_quantile

    problems = load_problems("compose:test")
    inner = sorted({p.sources[0] for p in problems})[:6]
    a_counts = {p.task_id: 1 for p in problems}
    b_counts = {p.task_id: 4 if p.sources[0] in inner else 1 for p in problems}
    a = make_run(tmp_path / "a", a_counts, 4, scheme="contract", problems="compose:test")
    b = make_run(tmp_path / "b", b_counts, 4, scheme="contract", problems="compose:test")
    done = coopcode("compare", str(a), str(b), "--json")
    assert done.returncode == 0, done.stderr
    (c,) = json.loads(done.stdout)["comparisons"]
    assert c["sources"] == 36 and "dyadic cluster-robust" in c["clustered_method"]
    k1 = c["per_k"][0]
    # by hand: differences .75 where the inner source is one of the six, else 0
    tasks = sorted(a_counts)
    by_id = {p.task_id: p.sources for p in problems}
    d = np.array([b_counts[t] / 4 - a_counts[t] / 4 for t in tasks])
    share = np.array([[float(bool(set(by_id[s]) & set(by_id[t]))) for t in tasks] for s in tasks])
    e, m = d - d.mean(), len(d)
    se = float(np.sqrt(e @ share @ e * m / (m - share.sum() / m)) / m)
    assert k1["clustered"]["se"] == pytest.approx(se, rel=1e-9)
    assert se > 1.5 * k1["diff_se"]  # the per-problem interval is far too narrow here
    half = t_quantile(35) * se
    assert (k1["clustered"]["low"], k1["clustered"]["high"]) == pytest.approx(
        (d.mean() - half, d.mean() + half), rel=1e-9)
    assert k1["clustered"]["clusters"] == 36 and k1["clustered"]["mean"] == k1["diff_mean"]
    # the per-problem interval is still there, as it was
    assert k1["diff_low"] > k1["clustered"]["low"]
    md = coopcode("compare", str(a), str(b), "--markdown").stdout
    assert "| 95% CI | source-clustered 95% CI |" in md
    assert f"[{100 * k1['clustered']['low']:+.2f}, {100 * k1['clustered']['high']:+.2f}]" in md
    assert "the 88 problems come from 36 HumanEval sources; source-clustered 95% interval" in md
    human = coopcode("compare", str(a), str(b)).stdout
    assert "clustered 95% CI" in human and "36 HumanEval sources" in human
    assert f"{100 * k1['clustered']['low']:.2f}, {100 * k1['clustered']['high']:.2f}" in human


def test_differences_between_the_runs_are_said_plainly(tmp_path: Path) -> None:
    a = make_run(tmp_path / "a", dict(zip(TASKS, A_COUNTS)), 4)
    b = make_run(tmp_path / "b", dict(zip(TASKS[:6], [1, 2, 3, 4, 5, 6])), 8, temperature=0.2,
                 prompts="p2", model_fingerprint="m2", problems="humaneval:all")
    done = coopcode("compare", str(a), str(b))
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stdout.splitlines() if line.startswith("note:")]
    text = "\n".join(notes)
    assert "problem sets differ" in text and "paired over the 6 both hold" in text
    assert "n differs (4 vs 8" in text
    assert "temperatures differ (0.8 vs 0.2)" in text
    assert "prompt templates differ" in text and "model weights differ" in text
    # k defaults to what both runs were benched with, up to the smaller n
    data = json.loads(coopcode("compare", str(a), str(b), "--json").stdout)
    assert [row["k"] for row in data["comparisons"][0]["per_k"]] == [1]
    # --n 4: samples 0-3 of each (the same seeds): n agrees, and pass@4 can be asked for
    data = json.loads(coopcode("compare", str(a), str(b), "--n", "4", "--k", "1,4", "--json").stdout)
    (c,) = data["comparisons"]
    assert c["b"]["n"] == 4 and not any("n differs" in note for note in c["notes"])
    assert [row["k"] for row in c["per_k"]] == [1, 4]
    assert_one_line_error(coopcode("compare", str(a), str(b), "--n", "5"), "--n 5", "has 4 samples")


def test_refusals_are_one_line_and_exit_2(tmp_path: Path, two_runs: tuple[Path, Path]) -> None:
    a, b = two_runs
    other = make_run(tmp_path / "other", {"Mine/1": 2, "Mine/2": 1}, 4, problems="mine.jsonl")
    assert_one_line_error(coopcode("compare", str(a), str(other)), "share no problem")
    assert_one_line_error(coopcode("compare", str(a)), "at least two runs")
    assert_one_line_error(coopcode("compare", str(a), str(tmp_path / "nope")), "no such folder")
    (tmp_path / "empty").mkdir()
    assert_one_line_error(coopcode("compare", str(a), str(tmp_path / "empty")), "no samples.jsonl")
    assert_one_line_error(coopcode("compare", str(a), str(b), "--k", "9"), "k=9 is larger than n=4")
    assert_one_line_error(coopcode("compare", str(a), f"{b}:single"), "no 'single' samples")


def test_out_writes_markdown_json_and_a_readable_figure(tmp_path: Path,
                                                        two_runs: tuple[Path, Path]) -> None:
    out = tmp_path / "cmp"
    done = coopcode("compare", *map(str, two_runs), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "paired-1.png" in (out / "compare.md").read_text()
    assert json.loads((out / "compare.json").read_text())["comparisons"][0]["shared_problems"] == 10
    with Image.open(out / "paired-1.png") as img:
        assert img.format == "PNG" and img.width >= 600 and img.height >= 500
        lo, hi = img.convert("L").getextrema()
        assert hi - lo > 100  # drawn on, not a blank canvas


# Two real runs: scripted agents through the bench and the process sandbox. The "untrained"
# pair solves below_zero only; the "trained" one also solves is_palindrome and word_stats.
def _script(trained: bool) -> Any:
    def script(prompt: str, adapter: str | None, index: int) -> str:
        if prompt.endswith("def aux("):
            if "below_zero" in prompt:
                return ("ops):\n    out, total = [], 0\n    for o in ops:\n        total += o\n"
                        "        out.append(total)\n    return out\n```")
            return "s):\n    return s == s[::-1]\n```"
        if "def below_zero" in prompt:
            return "    return any(b < 0 for b in aux(operations))\n```"
        if "def is_palindrome" in prompt and trained:
            return "    return aux(text)\n```"
        if "def word_stats" in prompt and trained:
            return ("    words = re.findall(r'[a-z]+', text.lower())\n    if not words:\n"
                    "        return (0, 0, '')\n    counts = {}\n    for w in words:\n"
                    "        counts[w] = counts.get(w, 0) + 1\n"
                    "    best = max(counts.values())\n"
                    "    common = next(w for w in words if counts[w] == best)\n"
                    "    return (len(words), max(map(len, words)), common)\n```")
        return "    return None\n```"
    return script


def test_two_real_small_runs(tmp_path: Path, process_sandbox: object) -> None:
    problems = load_problems(str(REPO / "examples"))
    config = BenchConfig(problems="examples", schemes=("sequential",), ks=(1, 2), n=2)
    for name, trained in (("untrained", False), ("trained", True)):
        run_bench(config, problems, ScriptedEngine(_script(trained)), process_sandbox,
                  tmp_path / name)
    done = coopcode("compare", str(tmp_path / "untrained"), str(tmp_path / "trained"), "--json")
    assert done.returncode == 0, done.stderr
    (c,) = json.loads(done.stdout)["comparisons"]
    k1 = c["per_k"][0]
    assert c["shared_problems"] == 3 and c["notes"] == []
    # below_zero 1 -> 1, is_palindrome 0 -> 1, word_stats 0 -> 1
    assert k1["diff_mean"] == pytest.approx(2 / 3)
    assert (k1["gained"], k1["lost"], k1["tied"]) == (2, 0, 1)
    assert c["b"]["cooperation"]["wrapper"] > 0 and c["a"]["cooperation"]["decorator"] > 0
    # one run's two schemes against each other: FOLDER:SCHEME
    both = coopcode("compare", f"{tmp_path / 'trained'}:sequential",
                    f"{tmp_path / 'trained'}:sequential", "--json")
    assert json.loads(both.stdout)["comparisons"][0]["per_k"][0]["diff_mean"] == 0.0


def test_pattern_rates_script_prints_the_table(two_runs: tuple[Path, Path]) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "pattern_rates.py"),
                           *map(str, two_runs)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # make_run's records alternate a wrapper and a coordinator main, unclassified on disk
    assert "| untrained | sequential | 10 | 40 | 0.0% | 50.0% | 0.0% | 0.0% | 50.0% | 0.0% |" \
        in done.stdout
    assert "| trained | — | 70.0% of 20 | — | — | 45.0% of 20 | — | 57.5% of 40 |" in done.stdout
