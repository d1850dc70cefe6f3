"""Table 2, "divided work": every figure is what the committed samples give
(docs/divided/divided_table.py and table.py), and the table pairs what it should."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from _experiments import load

from coopcode.evaluation import stats
from coopcode.evaluation.stats import t_quantile
from coopcode.problems.compose import DATA

divided = load("docs/divided/divided_table.py")  # beside its data, outside the package

REPO = Path(__file__).resolve().parent.parent
COMMITTED = REPO / "docs" / "divided"


def _records(folder: Path) -> list[dict]:
    with gzip.open(folder / "samples.jsonl.gz", "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def _compose_test_sources() -> dict[str, list[str]]:
    """Each compose:test problem's two HumanEval sources, read from the data file itself."""
    with open(DATA) as f:
        records = [json.loads(line) for line in f if line.strip()]
    return {r["task_id"]: r["sources"] for r in records if r["split"] == "test"}


def _clustered(values: dict[str, float], sources: dict[str, list[str]],
               bounds: tuple[float, float]) -> tuple[float, float]:
    """The source-clustered 95% interval, written out again: e' S e with S[i, j] = 1 where
    problems i and j share a source, times m / (m - sum(S) / m), over m^2; never below the
    per-problem variance; t over the sources - 1; clipped to the bounds."""
    tasks = sorted(values)
    v = np.array([values[t] for t in tasks])
    m = len(v)
    share = np.array([[float(bool(set(sources[a]) & set(sources[b]))) for b in tasks]
                      for a in tasks])
    e = v - v.mean()
    var = max(e @ share @ e * m / (m - share.sum() / m) / m ** 2, v.var(ddof=1) / m)
    half = t_quantile(len({s for t in tasks for s in sources[t]}) - 1) * float(np.sqrt(var))
    return max(bounds[0], v.mean() - half), min(bounds[1], v.mean() + half)


def test_the_committed_table_is_what_the_committed_samples_give() -> None:
    done = subprocess.run([sys.executable, str(COMMITTED / "table.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    table = json.loads((COMMITTED / "table.json").read_text())
    run = {e["row"]: e for e in table["rows"] if e["run"]}
    assert "contract" in run  # the first baseline is in
    carried = {e["row"]: e for e in table["humaneval"]["rows"] if e["run"]}
    assert "he-single" in carried  # the untrained single model on HumanEval's test split
    run.update(carried)
    pass1: dict[str, dict[str, float]] = {}
    for key, entry in run.items():
        folder = COMMITTED / entry["folder"]
        records = _records(folder)
        # the figures, counted again here straight from the records
        assert entry["samples"] == len(records)
        assert entry["problems"] * entry["n"] == len(records)
        by_task: dict[str, list[bool]] = {}
        for r in records:
            by_task.setdefault(r["task_id"], []).append(bool(r["passed"]))
        pass1[key] = {t: sum(v) / len(v) for t, v in by_task.items()}
        assert entry["pass@1"] == pytest.approx(sum(pass1[key].values()) / len(by_task),
                                                abs=1e-12), key
        low, high = entry["pass@1_ci"]
        assert low <= entry["pass@1"] <= high
        passed = [r for r in records if r["passed"]]
        both = entry["profile"]["both_needed"]
        assert (both["count"], both["of"]) == (
            sum((r.get("cooperation") or {}).get("both_needed") is True for r in passed), len(passed))
        calls = entry["profile"]["main_calls_aux"]
        assert calls["count"] == sum(bool(r.get("main_calls_helper")) for r in records)
        meta = json.loads((folder / "meta.json").read_text())
        assert entry["wall_seconds"] == meta["wall_seconds"]
        # the bench's own summary, written when it ran, says the same (Table 1's cooperation
        # samples, where the HumanEval baseline comes from, keep no summary)
        if not (folder / "summary.json").exists():
            assert key == "he-single"
            continue
        summary = json.loads((folder / "summary.json").read_text())
        (row,) = summary["rows"]
        for k in table["ks"]:  # the summary rounds to 4 places: at most half a unit off
            assert entry[f"pass@{k}"] == pytest.approx(row[f"pass@{k}"], abs=5e-5 + 1e-12), (key, k)
    # Issue 53: beside each per-problem interval on compose:test, the source-clustered one,
    # recomputed here from the records and the problems' sources (88 problems, 36 sources)
    sources = _compose_test_sources()
    assert len(sources) == 88 and len({s for v in sources.values() for s in v}) == 36
    assert table["interval"]["sources"] == 36
    for key, entry in run.items():
        if key.startswith("he-"):  # HumanEval's problems have no sources: nothing to cluster
            assert "pass@1_ci_clustered" not in entry
            continue
        assert set(pass1[key]) == set(sources)
        low, high = entry["pass@1_ci_clustered"]
        assert (low, high) == pytest.approx(_clustered(pass1[key], sources, (0, 1)), abs=1e-12)
        assert low <= entry["pass@1_ci"][0] and entry["pass@1_ci"][1] <= high, key
    for c in table["comparisons"]:
        (d,) = [d for d in c["per_k"] if d["k"] == 1]
        diff = {t: pass1[c["row"]][t] - pass1[c["against"]][t] for t in sources}
        assert (d["clustered"]["low"], d["clustered"]["high"]) == pytest.approx(
            _clustered(diff, sources, (-1, 1)), abs=1e-12), (c["row"], c["against"])
        assert d["clustered"]["clusters"] == 36
        assert d["clustered"]["low"] <= d["diff_low"] and d["diff_high"] <= d["clustered"]["high"]
    for c in table["humaneval"]["comparisons"]:
        assert all("clustered" not in d for d in c["per_k"])
    # the goal is judged by the clustered interval; the per-problem one is kept beside it
    for g in table["goal"]:
        for part in g["against"]:
            (c,) = [c for c in table["comparisons"]
                    if (c["row"], c["against"]) == (g["row"], part["against"])]
            (d,) = [d for d in c["per_k"] if d["k"] == 1]
            assert part["ci"] == [d["diff_low"], d["diff_high"]]
            assert part["ci_clustered"] == [d["clustered"]["low"], d["clustered"]["high"]]
            assert part["met"] == (d["clustered"]["low"] > 0)
            assert part["met_per_problem"] == (d["diff_low"] > 0)


def _pairwise_k(line: str, header: str) -> str | None:
    """The k of a row of a paired-comparison table (`| Method | against | k | ...`), else None."""
    return line.split("|")[3].strip() if header.startswith("| Method | against | k |") else None


def test_the_docs_show_the_table_as_the_samples_give_it() -> None:
    """The divided-work journal holds the committed table.md line for line; the Table 2 page
    holds every line of it but the paired comparisons at k=3 and 5 (those only in the full
    table it links to); the README's results table carries the headline rows' pass@1."""
    journal = (REPO / "docs" / "benchmarks" / "divided.md").read_text()
    page = (REPO / "docs" / "results" / "table2.md").read_text()
    readme = (REPO / "README.md").read_text()
    assert "(../divided/table.md)" in page
    header, left_to_the_file = "", 0
    for line in (COMMITTED / "table.md").read_text().splitlines():
        assert line in journal, line
        header = line if line.startswith("| Method") else header if line.startswith("|") else ""
        if _pairwise_k(line, header) in ("3", "5") and not line.startswith(("| Method", "|---")):
            assert line not in page, line
            left_to_the_file += 1
        else:
            assert line in page, line
    assert left_to_the_file > 0
    main_table = (COMMITTED / "table.md").read_text().split("\n\n")[0].splitlines()[2:]
    shown = [row for row in main_table if row.split("|")[1].strip().startswith(HEADLINE_ROWS)]
    assert len(shown) == len(HEADLINE_ROWS)
    for row in shown:
        assert row.split("|")[2].strip() in readme, row  # pass@1 [95% CI]


# The rows of Table 2 the README's results table shows (the rest are on its page), by method.
HEADLINE_ROWS = ("Single model (untrained)", "Prompted pair, contract (untrained)",
                 "Contract pair trained with MAGRPO (", "Contract pair trained with MAGRPO, seed 1",
                 "Single agent trained with GRPO")


def test_trained_rows_are_paired_with_every_baseline_grpo_and_their_own_main(tmp_path: Path) -> None:
    """A table over copies of one committed bench: each pairing is over the same problems, so
    every difference is 0 with every problem tied; the rows not there are not run."""
    source = COMMITTED / "baselines" / "contract"
    for key in ("single", "contract", "magrpo", "magrpo-main", "grpo"):
        spec = next(r for r in divided.ROWS if r.key == key)
        shutil.copytree(source, tmp_path / spec.folder)
    built = divided.build_table(tmp_path, ks=(1, 10))
    table = built.to_json()  # what table.json would hold
    pairs = [(c["row"], c["against"]) for c in table["comparisons"]]
    assert pairs == [("magrpo", "single"), ("magrpo", "contract"), ("magrpo", "grpo"),
                     ("magrpo", "magrpo-main"), ("magrpo-main", "single"),
                     ("magrpo-main", "contract"), ("magrpo-main", "grpo"),
                     ("grpo", "single"), ("grpo", "contract")]
    for c in table["comparisons"]:
        for d in c["per_k"]:
            assert d["diff_mean"] == 0.0 and d["lost"] == d["gained"] == 0 and d["tied"] == 88
            # compose:test's problems have sources: the clustered interval is there too
            assert d["clustered"]["clusters"] == 36
            # every problem tied: not a certainty over 88 problems, the exact all-alike bound
            assert (d["clustered"]["low"], d["clustered"]["high"]) == pytest.approx(
                stats.all_alike(0.0, 88, bounds=(-1.0, 1.0)))
            assert d["clustered"]["high"] > 0.0
    assert {e["row"] for e in table["rows"] if not e["run"]} == {
        "sequential", "plan", "magrpo-seed1", "magrpo-seed1-main"}
    # copies tie every comparison: the goal's interval does not exclude 0, so it is not met
    (goal,) = table["goal"]
    assert goal["row"] == "magrpo" and not goal["met"]
    assert [(p["against"], p["diff"], p["met"]) for p in goal["against"]] == [
        ("single", 0.0, False), ("contract", 0.0, False), ("grpo", 0.0, False)]
    text = divided.render_markdown(built)
    assert "Met by 0 of the 1 trained pairs benched." in text
    assert text.count("not run yet") == 4 * 2
    assert "| Method | Pass@1 [95% CI] | Pass@1 source-clustered 95% CI | Pass@10 [95% CI] |" in text
    assert "| 95% CI | source-clustered 95% CI | gained / lost / tied |" in text
    assert "| Contract pair trained with MAGRPO | Single agent trained with GRPO | 10 | +0.00 |" in text


def test_the_goal_is_met_only_when_every_interval_is_above_0_and_half_need_both() -> None:
    def paired(against: str, low: float | None,
               clustered: stats.ClusteredEstimate | None = None) -> divided.Pairing:
        diff = stats.PairedDifference(stats.Estimate(0.1, None, low, 0.2, 88), 0, 0, 88, 1.0,
                                      clustered)
        return divided.Pairing("magrpo", "pair", against, against, (divided.PairedAt(1, 88, diff),))

    def row(count: int, of: int) -> divided.RowEntry:
        nothing = divided.Share(0, 0)
        profile = divided.SampleProfile(nothing, nothing, nothing, nothing, nothing,
                                        divided.Share(count, of))
        figures = divided.RowFigures(problems=88, samples=880, n=10,
                                     time=divided.BenchTime(None, None, None), profile=profile,
                                     adapter_step=None, pass_at={}, per_problem={}, sources={})
        spec = divided.DividedRow("magrpo", "pair", "contract", "final/magrpo", trained=True)
        return divided.RowEntry(spec, figures)

    every = [paired(a, 0.01) for a in divided.GOAL_AGAINST]
    assert divided.goal_checks([row(5, 10)], every)[0].met
    assert not divided.goal_checks([row(4, 10)], every)[0].met  # under half need both
    assert not divided.goal_checks([row(0, 0)], every)[0].met  # nothing passes
    one_touches_0 = [*every[:2], paired("grpo", 0.0)]
    got = divided.goal_checks([row(10, 10)], one_touches_0)[0]
    assert [p.met for p in got.against] == [True, True, False] and not got.met
    missing = divided.goal_checks([row(10, 10)], every[:2])[0]  # no GRPO row benched
    assert missing.against[2].diff is None and not missing.met
    # with a source-clustered interval, the goal is judged by it: per problem above 0 is not
    # enough when the problems share sources
    def clustered(against: str, low: float) -> divided.Pairing:
        return paired(against, 0.01, stats.ClusteredEstimate(0.1, None, low, 0.3, 88, 36))

    wide = [clustered("single", 0.02), clustered("contract", 0.02), clustered("grpo", -0.01)]
    got = divided.goal_checks([row(10, 10)], wide)[0]
    assert [p.met for p in got.against] == [True, True, False] and not got.met
    assert [p.met_per_problem for p in got.against] == [True, True, True]
    part = got.to_json()["against"][2]  # as table.json holds it
    assert part["ci"] == [0.01, 0.2] and part["ci_clustered"] == [-0.01, 0.3]
    text = divided.render_markdown(divided.DividedTable(
        ks=(1,), rows=(), comparisons=(), goal=(got,), humaneval=divided.CarryOver((), ()),
        interval=divided.Intervals(0.95, "m", "", 0)))
    assert "+10.00 [+1.00, +20.00], clustered [-1.00, +30.00] not met" in text
    pair = row(10, 10)
    untrained = replace(pair, spec=replace(pair.spec, trained=False))
    single = replace(pair, spec=replace(pair.spec, scheme="single"))
    assert divided.goal_checks([untrained, single], every) == []


def test_the_sample_profile_counts_what_each_record_says() -> None:
    helper = "def aux(xs):\n    out = []\n    for x in xs:\n        out.append(x * 2)\n    return out\n"
    copied = helper.replace("aux", "target")
    records = [
        {"passed": True, "main_calls_helper": True, "helper_code": helper, "main_code": "",
         "agents": {"helper_contract": 1.0, "main_with_reference": 1.0},
         "cooperation": {"both_needed": True, "helper_solves": False}},
        {"passed": True, "main_calls_helper": False, "helper_code": helper, "main_code": copied,
         "agents": {"helper_contract": 0.5, "main_with_reference": 1.0},
         "cooperation": {"both_needed": False, "helper_solves": False}},
        {"passed": False, "main_calls_helper": False, "helper_code": helper,
         "main_code": "def target(xs):\n    return sorted(xs)\n",
         "agents": {"helper_contract": None, "main_with_reference": 0.0},
         "cooperation": {"both_needed": None, "helper_solves": True}},
    ]
    got = {k: (v["count"], v["of"]) for k, v in divided.sample_profile(records).to_json().items()}
    assert got == {"main_calls_aux": (1, 3), "helper_contract": (1, 3),
                   "main_with_reference": (2, 3), "helper_solves": (1, 3),
                   "main_copies_helper": (1, 3), "both_needed": (1, 2)}


def test_trained_main_agents_on_humaneval_are_paired_with_the_untrained_single_model(
        tmp_path: Path) -> None:
    """The carry-over rows: each trained main alone on HumanEval's test split against the
    untrained single model; a copy of that bench as a trained row ties it on every problem."""
    root = tmp_path / "divided"
    baseline = REPO / "docs" / "coop" / "samples" / "single"
    shutil.copytree(baseline, root / divided.HUMANEVAL_ROWS[0].folder)
    shutil.copytree(baseline, root / "humaneval" / "grpo")
    built = divided.build_table(root, ks=(1, 10))
    table = built.to_json()  # what table.json would hold
    he = table["humaneval"]
    assert [(c["row"], c["against"]) for c in he["comparisons"]] == [("he-grpo", "he-single")]
    for d in he["comparisons"][0]["per_k"]:
        assert d["diff_mean"] == 0.0 and d["tied"] == 40
        assert "clustered" not in d  # HumanEval's problems have no sources
    assert [e["row"] for e in he["rows"] if not e["run"]] == ["he-magrpo", "he-magrpo-seed1"]
    text = divided.render_markdown(built)
    assert "Carried over: each trained main agent alone" in text
    assert "| Single agent trained with GRPO | Single model (untrained) | 1 | +0.00 |" in text
    # with no trained row there yet, the section is left out
    shutil.rmtree(root / "humaneval" / "grpo")
    assert "Carried over" not in divided.render_markdown(divided.build_table(root, ks=(1,)))


def test_wall_time_is_a_lower_bound_where_a_session_left_no_time() -> None:
    def wall(meta: dict) -> str:  # the cell of a bench whose meta.json holds `meta`
        return divided.BenchTime.from_meta(meta).cell

    assert wall({"wall_seconds": 660, "sessions": 1}) == "11 min"
    assert wall({"wall_seconds": 660, "sessions": 3}) == "11 min (3 sessions)"  # not counted
    assert wall({"wall_seconds": 660, "sessions": 3, "timed_sessions": 3}) == "11 min (3 sessions)"
    assert wall({"wall_seconds": 660, "sessions": 2, "timed_sessions": 1}) == "≥ 11 min (2 sessions)"
    assert wall({"sessions": 1}) == "—"


def test_a_trained_row_names_the_step_its_adapters_are_at() -> None:
    """The GRPO row was benched with checkpoints/compose-grpo-0.5b, kept at step 0 of 135 by
    the rule: the table reads that from the checkpoint's manifest and says so in the row;
    untrained rows and an SFT warm start name no step."""
    table = json.loads((COMMITTED / "table.json").read_text())
    steps = {e["row"]: e.get("adapter_step") for e in table["rows"] if e["run"]}
    assert steps["grpo"][:2] == [0, 135] and steps["single"] is None
    manifest = json.loads((REPO / "checkpoints" / "compose-grpo-0.5b" / "manifest.json").read_text())
    assert [manifest["step"], manifest["total_steps"]] == [0, 135]
    assert divided.adapter_step("checkpoints/compose-grpo-0.5b/main") == divided.AdapterStep(
        0, 135, 135)
    assert divided.adapter_step("checkpoints/compose-sft-solo-0.5b/main") is None  # SFT
    assert divided.adapter_step("checkpoints/no-such-run") is None
    assert "| Single agent trained with GRPO (step 0 of 135) | 9.43 [5.72, 13.14] |" in (
        COMMITTED / "table.md").read_text()


def test_a_run_stopped_early_says_where_it_stopped(tmp_path: Path) -> None:
    """A final stopped by the stop rule keeps its planned length in the manifest; the last
    step its metrics record is where it stopped, and the row's label says both."""
    import shutil

    run = tmp_path / "stopped"
    shutil.copytree(REPO / "checkpoints" / "compose-grpo-0.5b", run)
    lines = (run / "metrics.jsonl").read_text().splitlines()
    (run / "metrics.jsonl").write_text("\n".join(line for line in lines if json.loads(line)["step"] <= 45) + "\n")
    assert divided.adapter_step(str(run / "main")) == divided.AdapterStep(0, 135, 45)
    assert divided.AdapterStep(0, 135, 45).label == " (step 0; stopped at 45 of 135)"
    assert divided.AdapterStep(0, 135, 135).label == " (step 0 of 135)"
