"""A bench's summary.json and report.md carry intervals, per-problem estimates, pattern rates
and figures; the figures are real PNGs; results folders from before all this still summarize."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from coopcode.engines import ScriptedEngine
from coopcode.evaluation.bench import BenchConfig, run_bench
from coopcode.evaluation.compare import summarize_folder
from coopcode.evaluation.stats import mean_interval
from coopcode.problems import load_problems
from tests.test_compare import _script

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bench_out(tmp_path_factory: pytest.TempPathFactory, process_sandbox: object) -> Path:
    out = tmp_path_factory.mktemp("report") / "run"
    config = BenchConfig(problems="examples", schemes=("sequential", "single"), ks=(1, 2, 3), n=3)
    run_bench(config, load_problems(str(REPO / "examples")), ScriptedEngine(_script(True)),
              process_sandbox, out)
    return out


def test_summary_keeps_per_problem_estimates_and_their_interval(bench_out: Path) -> None:
    summary = json.loads((bench_out / "summary.json").read_text())
    assert summary["interval"]["level"] == 0.95
    row = next(r for r in summary["rows"] if r["scheme"] == "sequential")
    per_problem = row["per_problem"]
    assert sorted(per_problem) == ["below_zero", "is_palindrome", "word_stats"]
    assert all(p["n"] == 3 and 0 <= p["passed"] <= 3 for p in per_problem.values())
    # anyone can recompute the interval from what the summary keeps
    est = mean_interval([p["pass@1"] for p in per_problem.values()])
    assert row["pass@1"] == pytest.approx(est.mean, abs=1e-4)
    assert row["pass@1_se"] == pytest.approx(est.se, abs=1e-4)
    assert row["pass@1_ci"] == pytest.approx([est.low, est.high], abs=1e-4)
    assert set(row["cooperation"]) >= {"ignored", "wrapper", "decorator"}
    single = next(r for r in summary["rows"] if r["scheme"] == "single")
    assert single["cooperation"] == {}  # no helper, nothing to classify
    records = [json.loads(line) for line in (bench_out / "samples.jsonl").read_text().splitlines()]
    pair = next(r for r in records if r["scheme"] != "single")
    assert set(pair["cooperation"]) == {"patterns", "own_work", "helper_solves", "both_needed"}
    assert isinstance(pair["cooperation"]["helper_solves"], bool) and "main_calls_helper" in pair
    assert next(r for r in records if r["scheme"] == "single")["cooperation"] is None
    # the headline rates, recomputed from the records
    pairs = [r for r in records if r["scheme"] == pair["scheme"]]
    prow = next(r for r in summary["rows"] if r["scheme"] == pair["scheme"])
    assert prow["own_work_rate"] == round(sum(r["cooperation"]["own_work"] for r in pairs) / len(pairs), 4)
    assert prow["helper_solves_rate"] == round(
        sum(r["cooperation"]["helper_solves"] for r in pairs) / len(pairs), 4)
    assert single["own_work_rate"] is None and single["helper_solves_rate"] is None


def test_report_has_intervals_patterns_and_figures(bench_out: Path) -> None:
    report = (bench_out / "report.md").read_text()
    assert "| Method | Pass@1 | Pass@2 | Pass@3 | Acc@1 | Acc@2 | Acc@3 | Problems |" in report
    assert "| Method | k | Pass@k | SE | 95% CI | Acc@k | SE | 95% CI |" in report
    assert "| Method | ignored | wrapper | fallback | decorator | coordinator | strategy-filter |" \
        in report
    assert "![pass@k against k per method, with 95% intervals](pass_at_k.png)" in report
    assert "![cooperation pattern rates per method](patterns.png)" in report
    for name in ("pass_at_k.png", "patterns.png"):
        with Image.open(bench_out / name) as img:
            assert img.format == "PNG" and (img.width, img.height) == (1050, 672)
            grey = img.convert("L")
            lo, hi = grey.getextrema()
            assert hi - lo > 100  # ink on the canvas
            # more than a frame: a good share of the pixels are not background white
            inked = sum(grey.histogram()[:200])
            assert inked > 0.01 * img.width * img.height, name


def test_results_from_before_patterns_and_intervals_still_summarize(bench_out: Path,
                                                                    tmp_path: Path) -> None:
    old = tmp_path / "old"
    old.mkdir()
    (old / "meta.json").write_text((bench_out / "meta.json").read_text())
    with open(old / "samples.jsonl", "w") as f:
        for line in (bench_out / "samples.jsonl").read_text().splitlines():
            record = json.loads(line)
            for key in ("cooperation", "entry_point"):
                record.pop(key)
            f.write(json.dumps(record) + "\n")
    now = {r["scheme"]: r for r in json.loads((bench_out / "summary.json").read_text())["rows"]}
    for row in summarize_folder(old).rows:
        assert row["cooperation"] == now[row["scheme"]]["cooperation"]
        assert row["pass@1_ci"] == now[row["scheme"]]["pass@1_ci"]
