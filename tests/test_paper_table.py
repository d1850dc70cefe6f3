"""`coopcode paper-table`: the committed table is what its committed summaries say, and the
command trains, benches, resumes and refuses through the real CLI (tiny model, real sandbox)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from coopcode.core.errors import UserError
from coopcode.paper import table as pt
from tests.cli_helpers import assert_one_line_error, assert_refused, coopcode

REPO = Path(__file__).resolve().parent.parent
COMMITTED = REPO / "docs" / "table1"
PAGE = REPO / "docs" / "results" / "table1.md"  # Table 1 as the docs show it
JOURNAL = REPO / "docs" / "benchmarks" / "table1.md"  # every run behind it (was BENCHMARKS.md's)


def _table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| ")]


def _comparisons_at_1_and_10(text: str) -> list[str]:
    """The rows of the table's paired comparisons at k=1 and k=10 (the page leaves 3 and 5 to
    the full table)."""
    rows = []
    for block in text.split("\n\n"):
        lines = _table_lines(block)
        if lines and lines[0].startswith("| Method | k |"):
            rows += [line for line in lines[2:] if line.split("|")[2].strip() in ("1", "10")]
        elif lines and lines[0].startswith("| Method | against | k |"):
            rows += [line for line in lines[2:] if line.split("|")[3].strip() in ("1", "10")]
    assert rows, "no paired comparison in the table"
    return rows


def test_the_committed_table_is_recomputed_from_the_committed_summaries() -> None:
    summaries = pt.read_summaries(COMMITTED / pt.SUMMARIES)
    assert summaries.keys() == set(pt.SEED_ROWS)  # the seed paper's four rows are in
    table = pt.build_table(summaries, (1, 3, 5, 10))
    assert [(c["row"], c["against"], len(c["per_k"])) for c in table["other_comparisons"]] \
        == [("magrpo", "pair", 4), ("magrpo", "grpo", 4)]
    for key, roles in (("grpo", ("main",)), ("magrpo", ("helper", "main"))):  # benched trained
        adapters = next(e for e in table["rows"] if e["row"] == key)["adapters"]
        assert adapters == {role: f"checkpoints/{key}-0.5b/{role}" for role in roles}
    recomputed = pt.render_markdown(table)
    committed = (COMMITTED / "table.md").read_text()
    assert committed.startswith(recomputed), "docs/table1/table.md is not what its summaries give"
    # The figures in the Table 1 runs' journal (all of the table) and on the Table 1 page (its
    # rows, and the comparisons at k=1 and 10) are that table, line for line; the README's
    # results table carries each row's pass@1 with its interval.
    main_table = recomputed.split("\n\n")[0]
    for doc, lines in ((JOURNAL, _table_lines(recomputed)),
                       (PAGE, _table_lines(main_table) + _comparisons_at_1_and_10(recomputed))):
        text = doc.read_text()
        for line in lines:
            assert line in text, (doc, line)
    readme = (REPO / "README.md").read_text()
    for line in _table_lines(main_table)[2:]:
        assert line.split("|")[2].strip() in readme, line
    for entry in table["rows"]:
        if not entry["run"]:
            continue
        # Recomputed from the per-problem estimates, they agree with what the bench printed.
        row = pt._method_row(summaries[entry["row"]], entry["row"])
        assert row is not None
        for k in table["ks"]:
            assert entry[f"pass@{k}"] == pytest.approx(row[f"pass@{k}"], abs=1e-4)
            assert entry[f"pass@{k}_ci"] == pytest.approx(row[f"pass@{k}_ci"], abs=1e-4)
        assert entry["n"] == 10 and entry["problems"] == 40  # the seed paper's setting
        assert entry["samples_profile"] == {key: row.get(key) for key in pt.PROFILE}
    single_line = next(line for line in recomputed.splitlines()
                       if line.startswith("| Single model (untrained) | 1") and "%" in line)
    assert single_line.endswith("| — |")  # no helper: "main calls the helper" does not apply


COOP = REPO / "docs" / "coop"


def test_the_coop_table_is_what_its_summaries_give(cli_env: dict[str, str]) -> None:
    """docs/coop: the seed paper's rows (the same summaries as docs/table1), our replicate of
    the MAGRPO row and the coop-reward rows, rebuilt by the CLI from its summaries alone."""
    summaries = pt.read_summaries(COOP / pt.SUMMARIES)
    assert set(pt.SEED_ROWS) | {"magrpo-seed1"} <= summaries.keys()
    for key in pt.SEED_ROWS:
        assert summaries[key] == json.loads((COMMITTED / pt.SUMMARIES / f"{key}.json").read_text())
    for key in summaries.keys() - set(pt.SEED_ROWS):  # each benched with its own adapters
        assert summaries[key]["meta"]["adapters"] == {  # a main alone: its pair's main
            role: f"{pt.default_adapter_run(key, None)}/{role}" for role in pt.row(key).adapter_roles}
    done = coopcode("paper-table", "--from-summaries", str(COOP / pt.SUMMARIES), env=cli_env)
    assert done.returncode == 0, done.stderr
    assert (COOP / "table.md").read_text().startswith(done.stdout)
    table = pt.build_table(summaries)
    assert done.stdout == pt.render_markdown(table)
    compared = {(c["row"], c["against"]) for c in table["other_comparisons"]}
    assert {("magrpo-seed1", "pair"), ("magrpo-seed1", "grpo")} <= compared
    for key in ("magrpo-coop", "magrpo-coop-seed1"):  # the coop runs, paired with all four
        assert {(key, against) for against in ("pair", "grpo", "magrpo", "magrpo-seed1")} \
            <= compared
    for key in ("magrpo-credit", "magrpo-credit-seed1"):  # the chosen recipe, with its main alone
        assert {(key, against) for against in ("pair", "grpo", "magrpo", "magrpo-seed1",
                                               "magrpo-coop", "magrpo-coop-seed1",
                                               f"{key}-main")} <= compared
    # The journal has every line of our rows (the table, the comparisons, what the samples
    # are, the patterns); the Table 1 page the coop and credit rows of the main table.
    ours = [line for line in _table_lines(done.stdout)
            if any(word in line.split("|")[1] for word in ("seed 1", "coop reward", "credit reward"))]
    assert {line.split("|")[1].strip() for line in ours} >= {
        pt.row(key).method for key in summaries.keys() - set(pt.SEED_ROWS)}
    journal = JOURNAL.read_text()
    for line in ours:
        assert line in journal, line
    main_rows = _table_lines(done.stdout.split("\n\n")[0])
    page = PAGE.read_text()
    for line in main_rows:
        if "coop reward" in line or "credit reward" in line:
            assert line in page, line


def test_paired_rows_agree_with_coopcode_compare(tmp_path: Path) -> None:
    """The table's paired comparison is the one `coopcode compare` computes from samples."""
    from tests.test_compare import make_run

    single = make_run(tmp_path / "single", {"T/0": 2, "T/1": 0, "T/2": 4, "T/3": 1}, 4,
                      scheme="single")
    pair = make_run(tmp_path / "pair", {"T/0": 4, "T/1": 1, "T/2": 0, "T/3": 1}, 4)
    summaries = {key: pt.summary_of_run(folder) for key, folder in
                 (("single", single), ("pair", pair))}
    table = pt.build_table(summaries, (1, 4))
    entry = next(e for e in table["rows"] if e["row"] == "pair")
    done = coopcode("compare", str(single), str(pair), "--k", "1,4", "--json")
    assert done.returncode == 0, done.stderr
    expected = json.loads(done.stdout)["comparisons"][0]["per_k"]
    for mine, theirs in zip(entry["vs_single"], expected, strict=True):
        assert mine["k"] == theirs["k"]
        for key in ("diff_mean", "diff_low", "diff_high", "gained", "lost", "tied", "p_sign"):
            assert mine[key] == pytest.approx(theirs[key], abs=1e-9), key
    assert not next(e for e in table["rows"] if e["row"] == "grpo")["run"]
    assert "not run" in pt.render_markdown(table)


def test_from_summaries_writes_the_table_files_even_in_place(tmp_path: Path,
                                                            cli_env: dict[str, str]) -> None:
    """`--from-summaries DIR --out OUT` writes what a run writes; OUT/summaries may be DIR."""
    out = tmp_path / "table"
    (out / pt.SUMMARIES).mkdir(parents=True)
    stale = out / pt.SUMMARIES / "grpo.json"  # a row of an older table, not in DIR
    stale.write_text((COMMITTED / pt.SUMMARIES / "single.json").read_text())
    expected = pt.build_table(pt.read_summaries(COMMITTED / pt.SUMMARIES), (1, 3, 5, 10))
    committed = {p.name: json.loads(p.read_text()) for p in (COMMITTED / pt.SUMMARIES).iterdir()}
    for source in (COMMITTED / pt.SUMMARIES, out / pt.SUMMARIES):  # then in place
        done = coopcode("paper-table", "--from-summaries", str(source), "--out", str(out),
                        "--json", env=cli_env)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == expected == json.loads((out / "table.json").read_text())
        assert (out / "table.md").read_text().startswith(pt.render_markdown(expected))
        assert (out / "table.png").stat().st_size > 1000
        written = {p.name: json.loads(p.read_text()) for p in (out / pt.SUMMARIES).iterdir()}
        assert written == committed  # the stale row is gone, the read ones are not lost


def test_a_stopped_run_with_nothing_to_resume_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "magrpo"
    for role in ("helper", "main"):
        (run / role).mkdir(parents=True)
        (run / role / "adapter_config.json").write_text("{}")
    (run / "manifest.json").write_text(json.dumps({"step": 20, "total_steps": 60}))
    plan = pt.TablePlan(rows=pt.parse_rows("magrpo"), out=tmp_path / "t",
                        adapter_runs={"grpo": tmp_path / "g", "magrpo": run})
    with pytest.raises(UserError, match="stopped at step 20/60 .* --no-train"):
        pt.check_plan(plan)
    plan.train = False  # benched as it is
    assert pt.check_plan(plan)["magrpo"][0] == "stuck"
    plan.adapter_runs["magrpo"] = tmp_path / "absent"
    with pytest.raises(UserError, match="not trained to the end"):
        pt.check_plan(plan)


@pytest.mark.slow
def test_the_whole_table_trains_benches_and_resumes(tiny_model_dir: Path, tmp_path: Path,
                                                     cli_env: dict[str, str]) -> None:
    out = tmp_path / "table"
    args = ["paper-table", "--model", str(tiny_model_dir), "--out", str(out), "--limit", "2",
            "--n", "2", "--k", "1,2", "--train-steps", "1", "--grpo-adapter", str(tmp_path / "grpo"),
            "--magrpo-adapter", str(tmp_path / "magrpo"), "--dtype", "float32",
            "--max-new-tokens", "24", "--train-max-new-tokens", "16"]
    done = coopcode(*args, env=cli_env, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    for algo, roles in (("grpo", ("main",)), ("magrpo", ("helper", "main"))):
        manifest = json.loads((tmp_path / algo / "manifest.json").read_text())
        assert (manifest["algorithm"], manifest["step"], manifest["total_steps"]) == (algo, 1, 1)
        assert (manifest["config"]["group_size"], manifest["config"]["learning_rate"],
                manifest["config"]["max_new_tokens"]) == (4, 1e-4, 16)
        meta = json.loads((out / algo / "meta.json").read_text())
        for role in roles:  # each trained row was benched with its own adapters
            assert meta["identity"][f"{role}_adapter"] == str(tmp_path / algo / role)
    for key in pt.SEED_ROWS:
        assert (out / key / "samples.jsonl").read_text().count("\n") == 4  # 2 problems x n=2
    table = json.loads((out / "table.json").read_text())
    assert [e["run"] for e in table["rows"]] == [True] * 4
    assert [len(e["vs_single"]) for e in table["rows"][1:]] == [2, 2, 2]
    assert [(c["row"], c["against"], len(c["per_k"])) for c in table["other_comparisons"]] \
        == [("magrpo", "pair", 2), ("magrpo", "grpo", 2)]
    assert (out / "table.png").stat().st_size > 1000
    for method in ("Single model (untrained)", "Pair trained with MAGRPO"):
        assert method in done.stdout
    # The committed-summaries path gives the same table.
    again = coopcode("paper-table", "--from-summaries", str(out / pt.SUMMARIES), "--k", "1,2",
                     "--json", env=cli_env)
    assert again.returncode == 0 and json.loads(again.stdout) == table, again.stderr

    # Rerun: nothing is trained or sampled twice.
    metrics = (tmp_path / "magrpo" / "metrics.jsonl").read_text()
    rerun = coopcode(*args, env=cli_env, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "trained, 1/1 steps" in rerun.stderr
    assert (tmp_path / "magrpo" / "metrics.jsonl").read_text() == metrics
    for key in pt.SEED_ROWS:
        assert (out / key / "samples.jsonl").read_text().count("\n") == 4
    # One row benched again: the rows benched before stay in the table with their adapters.
    adapters = {algo: json.loads((out / pt.SUMMARIES / f"{algo}.json").read_text())["meta"]["adapters"]
                for algo in ("grpo", "magrpo")}
    assert adapters == {algo: {role: str(tmp_path / algo / role) for role in roles}
                        for algo, roles in (("grpo", ("main",)), ("magrpo", ("helper", "main")))}
    one = coopcode(*args, "--rows", "single", env=cli_env, timeout=600)
    assert one.returncode == 0, one.stderr[-3000:]
    for algo in ("grpo", "magrpo"):
        summary = json.loads((out / pt.SUMMARIES / f"{algo}.json").read_text())
        assert summary["meta"]["adapters"] == adapters[algo]
    assert json.loads((out / "table.json").read_text())["rows"] == table["rows"]


def test_bad_input_is_one_line(tmp_path: Path, cli_env: dict[str, str]) -> None:
    assert_refused(coopcode("paper-table", "--rows", "single,nope", "--out", str(tmp_path / "t"),
                            env=cli_env), "unknown row 'nope'")
    assert_refused(coopcode("paper-table", "--n", "2", "--k", "1,5", env=cli_env), "k=5", "n=2")
    assert_refused(coopcode("paper-table", "--from-summaries", str(tmp_path / "none"), env=cli_env),
                   "no such folder")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "single.json").write_text("{not json")
    assert_one_line_error(coopcode("paper-table", "--from-summaries", str(tmp_path / "bad"),
                                   env=cli_env), "single.json", "not a bench summary")
    assert_refused(coopcode("paper-table", "--rows", "grpo", "--no-train", "--grpo-adapter",
                            str(tmp_path / "absent"), "--out", str(tmp_path / "t"), env=cli_env),
                   "not trained to the end")
    assert_refused(coopcode("paper-table", "--engine", "openai", env=cli_env), "--engine openai")
    assert_refused(coopcode("paper-table", "--rows", "magrpo-coop", "--adapter", "single=x",
                            env=cli_env), "row 'single' has no adapter")
    assert_refused(coopcode("paper-table", "--adapter", "magrpo-coop", env=cli_env),
                   "write ROW=FOLDER")
    assert_refused(coopcode("paper-table", "--rows", "magrpo-coop", "--no-train", "--adapter",
                            f"magrpo-coop={tmp_path / 'absent'}", "--out", str(tmp_path / "t"),
                            env=cli_env), "not trained to the end")


def test_every_committed_row_is_recomputed_from_its_committed_samples() -> None:
    """docs/coop/samples/<row>/: each row's bench samples (gzipped) and meta.json. Every
    figure of the row's summary (pass@k and intervals, per problem, what the samples are,
    the cooperation rates and patterns) comes back from them: a claim about the samples can
    be checked again from committed files."""
    from coopcode.evaluation.compare import summarize_folder

    summaries = pt.read_summaries(COOP / pt.SUMMARIES)
    for key, summary in summaries.items():
        folder = COOP / pt.SAMPLES / key
        assert (folder / "samples.jsonl.gz").exists(), f"{key}: no committed samples"
        row = pt._method_row(summary, key)
        again = pt._method_row(summarize_folder(folder).to_dict(), key)
        assert row is not None and again is not None
        for field in ("problems", "samples", "per_problem", "cooperation", "mean_tokens",
                      "runnable_rate", "main_calls_helper_rate", "own_work_rate",
                      "helper_solves_rate", "uses_helper_rate", "shell_rate",
                      *(f"{m}@{k}{tail}" for m in ("pass", "acc") for k in (1, 3, 5, 10)
                        for tail in ("", "_ci", "_se"))):
            assert again.get(field) == row.get(field), (key, field)


def test_where_the_passing_answers_came_from_is_what_the_committed_samples_give() -> None:
    """The journal's table of helper re-writes (docs/coop/transcribed.py) is what the committed
    samples give, and it says what the write-up says of the seed-1 credit pair."""
    printed = subprocess.run([sys.executable, str(COOP / "transcribed.py"), "--json"],
                             capture_output=True, text=True, check=True).stdout
    figures = {f["row"]: f for f in json.loads(printed)}
    seed1 = figures["magrpo-credit-seed1"]
    assert seed1["passed_solves"] == seed1["passed"] == 178  # every pass: the helper alone solves
    assert figures["magrpo-credit"]["broken_by_helper"] == 36  # seed 0: the helper's text breaks it
    # seed 1's one sample the syntax rule once called own work: main's body is the helper's
    # aux, copied; the rule mended in issue 40 no longer counts copied statements as main's
    sys.path.insert(0, str(COOP))
    try:
        import transcribed
    finally:
        sys.path.remove(str(COOP))
    with gzip.open(COOP / pt.SAMPLES / "magrpo-credit-seed1" / "samples.jsonl.gz", "rt") as f:
        records = [json.loads(line) for line in f]
    assert not [r for r in records if r["cooperation"]["own_work"]]
    (copy,) = [r for r in records if (r["task_id"], r["sample"]) == ("HumanEval/119", 6)]
    assert transcribed.bodies(copy["main_code"])[0] == transcribed.bodies(copy["helper_code"])[0]
    table = subprocess.run([sys.executable, str(COOP / "transcribed.py")], capture_output=True,
                           text=True, check=True).stdout
    journal = JOURNAL.read_text()
    for line in table.splitlines():
        assert line in journal, line


@pytest.mark.parametrize("run", ["magrpo-credit-0.5b", "magrpo-credit-0.5b-seed1"])
def test_the_credit_runs_figures_in_the_docs_are_their_metrics(run: str) -> None:
    """checkpoints/README.md's validation table and the journal's training figures for the
    chosen recipe's final runs, recomputed from their committed metrics.jsonl."""
    records = [json.loads(line) for line in
               (REPO / "checkpoints" / run / "metrics.jsonl").read_text().splitlines()]
    val = {r["step"]: r for r in records if "val/pass@1" in r}
    assert sorted(val) == list(range(0, 61, 10))
    steps = [r for r in records if r["step"] > 0]

    def calls(first: int, last: int) -> str:
        window = [r["main_calls_helper"] for r in steps if first <= r["step"] <= last]
        return f"{100 * sum(window) / len(window):.1f}%"

    line = (" | " + " / ".join(f"{100 * val[s]['val/pass@1']:.1f}" for s in sorted(val))
            + f" | {100 * val[0]['val/own_work']:.1f}% -> {100 * val[60]['val/own_work']:.1f}%"
            + f" | {100 * val[0]['val/helper_solves']:.1f}% -> {100 * val[60]['val/helper_solves']:.1f}%"
            + f" | {calls(1, 10)} -> {calls(51, 60)} |")
    readme = (REPO / "checkpoints" / "README.md").read_text()
    assert f"| `{run}`" in readme and line in readme, line
    # The journal: no training sample did own work in steps 1-20 of either run
    assert all(r["coop/own_work"] == 0 for r in steps if r["step"] <= 20)
