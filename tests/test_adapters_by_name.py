"""Trained adapters by name from any folder, and the defaults that follow them (issue 55).

Every command runs from an empty folder outside the repository, as a user's would: the runs
are found through COOPCODE_CHECKPOINTS (the committed ones in the repository's checkpoints/).
The agents are the `canned` plugin engine (tests/plugins): adapters are loaded by name, no
model is, so what is checked is which folders and which recipe a command took.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_helpers import REPO, assert_one_line_error, coopcode

PLUGIN = Path(__file__).resolve().parent / "plugins" / "my_extensions.py"
PAIR, SINGLE = "compose-magrpo-0.5b", "compose-grpo-0.5b"  # contract + own; one agent
COMPOSE = "compose/all_prefixes_of_anti_shuffle"  # in compose:test


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    return folder


def env(tmp_path: Path, checkpoints: Path | None = REPO / "checkpoints") -> dict[str, str]:
    out = {**os.environ, "COOPCODE_CACHE": str(tmp_path / "cache"), "COOPCODE_PLUGINS": str(PLUGIN)}
    out.pop("COOPCODE_CHECKPOINTS", None)
    if checkpoints is not None:
        out["COOPCODE_CHECKPOINTS"] = str(checkpoints)
    return out


def run(outside: Path, tmp_path: Path, *args: str, **kw: object) -> subprocess.CompletedProcess:
    return coopcode(*args, cwd=outside, env=env(tmp_path, **kw))  # type: ignore[arg-type]


def test_checkpoints_list_says_where_it_looked_and_finds_runs_by_the_variable(outside: Path,
                                                                            tmp_path: Path):
    # Before: `no runs in checkpoints/`, exit 0, from any folder.
    done = run(outside, tmp_path, "checkpoints", "list", checkpoints=None)
    assert_one_line_error(done, "checkpoints (here)", "$COOPCODE_CHECKPOINTS (not set)",
                          str(tmp_path / "cache" / "checkpoints"), "COOPCODE_CHECKPOINTS")
    listed = run(outside, tmp_path, "checkpoints", "list")
    assert listed.returncode == 0, listed.stderr
    rows = {line.split("\t")[0]: line.split("\t") for line in listed.stdout.splitlines()[1:]}
    assert rows[PAIR][-1] == str(REPO / "checkpoints" / PAIR)
    # The cache is the last place looked: a run copied there is found by name too.
    cached = tmp_path / "cache" / "checkpoints" / "mine"
    shutil.copytree(REPO / "checkpoints" / SINGLE, cached,
                    ignore=shutil.ignore_patterns("samples.jsonl.gz", "validation"))
    shown = run(outside, tmp_path, "checkpoints", "show", "mine", "--json", checkpoints=None)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["path"] == str(cached)


def test_a_run_named_once_loads_its_pair_and_its_recipe(outside: Path, tmp_path: Path):
    done = run(outside, tmp_path, "solve", COMPOSE, "--adapters", PAIR, "--engine", "canned",
               "--sandbox", "process", "--json")
    assert done.returncode in (0, 1), done.stderr[-2000:]
    result = json.loads(done.stdout)
    # Before: the folder was not found outside the repository; inside it, the pair ran
    # under sequential and was scored with seed (0.60) though it was trained on own.
    assert (result["scheme"], result["reward_name"]) == ("contract", "own")
    assert result["adapter_folders"] == {role: str(REPO / "checkpoints" / PAIR / role)
                                         for role in ("helper", "main")}
    assert f"{PAIR} was trained with scheme contract, reward own" in done.stderr
    # What the user says wins, and the line says only what it still set.
    done = run(outside, tmp_path, "solve", COMPOSE, "--adapters", PAIR, "--engine", "canned",
               "--sandbox", "process", "--json", "--scheme", "plan", "--reward", "seed")
    result = json.loads(done.stdout)
    assert (result["scheme"], result["reward_name"]) == ("plan", "seed")
    assert "was trained with" not in done.stderr
    done = run(outside, tmp_path, "solve", COMPOSE, "--adapters", PAIR, "--engine", "canned",
               "--sandbox", "process", "--json", "--main-sees", "code")
    assert json.loads(done.stdout)["scheme"] == "contract+code"


def test_a_single_agents_run_and_run_names_for_each_agent(outside: Path, tmp_path: Path):
    done = run(outside, tmp_path, "solve", COMPOSE, "--adapters", SINGLE, "--engine", "canned",
               "--sandbox", "process", "--json")
    result = json.loads(done.stdout)
    assert result["scheme"] == "single"
    assert result["adapter_folders"] == {"main": str(REPO / "checkpoints" / SINGLE / "main")}
    # Run names for each agent's flag (before: `no such folder`).
    done = run(outside, tmp_path, "solve", COMPOSE, "--helper-adapter", PAIR, "--main-adapter",
               "compose-magrpo-0.5b-seed1", "--engine", "canned", "--sandbox", "process", "--json")
    folders = json.loads(done.stdout)["adapter_folders"]
    assert folders["helper"].endswith(f"{PAIR}/helper")
    assert folders["main"].endswith("compose-magrpo-0.5b-seed1/main")


def test_a_pairs_run_given_to_one_agent_is_refused_with_the_flag_to_use(outside: Path,
                                                                       tmp_path: Path):
    # Before: main quietly stayed the bare base model.
    done = run(outside, tmp_path, "solve", COMPOSE, "--helper-adapter", PAIR)
    assert_one_line_error(done, f"--helper-adapter {PAIR}", f"--adapters {PAIR} loads both",
                          str(REPO / "checkpoints" / PAIR / "helper"))
    done = run(outside, tmp_path, "bench", "--main-adapter", str(REPO / "checkpoints" / PAIR))
    assert_one_line_error(done, "--main-adapter", "--adapters")
    assert_one_line_error(run(outside, tmp_path, "solve", COMPOSE, "--adapters", "no-such-run"),
                          "--adapters no-such-run: no such run", "checkpoints (here)",
                          str(REPO / "checkpoints"))


def test_the_contract_error_names_flags_solve_has(outside: Path, tmp_path: Path):
    done = run(outside, tmp_path, "solve", "HumanEval/0", "--scheme", "contract")
    assert_one_line_error(done, "needs a contract for aux, and HumanEval/0 has none", "compose/NAME",
                          "--scheme plan")
    assert "--problems" not in done.stderr  # solve has no --problems
    # Where the scheme was the run's, the line says so.
    done = run(outside, tmp_path, "solve", "HumanEval/0", "--adapters", PAIR)
    assert_one_line_error(done, f"({PAIR} was trained with it)")


def test_bench_takes_the_runs_recipe_and_evaluate_reads_its_folder(outside: Path, tmp_path: Path):
    out = tmp_path / "bench"
    done = run(outside, tmp_path, "bench", "--adapters", PAIR, "--engine", "canned", "--n", "1",
               "--k", "1", "--limit", "2", "--sandbox", "process", "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    (row,) = json.loads(done.stdout)["rows"]
    # The scheme and reward it was trained with, on the split it never saw.
    assert (row["method"].split()[-1], row["reward"]) == ("contract", "own")
    meta = json.loads((out / "meta.json").read_text())
    assert meta["config"]["problems"] == "compose:test"
    assert "problems compose:test (trained on compose:train)" in done.stderr
    # evaluate takes the run's folder, and its problems from meta.json (before: "pass the
    # file inside it"; the file alone: compose task ids refused under humaneval:all).
    for given in (out, out / "samples.jsonl"):
        done = run(outside, tmp_path, "evaluate", str(given), "--k", "1", "--sandbox", "process",
                   "--json")
        assert done.returncode == 0, done.stderr[-2000:]
        scored = json.loads(done.stdout)
        assert (scored["problems"], scored["samples"]) == (2, 2)
        assert "problems: compose:test (the bench's meta.json)" in done.stderr


def test_solve_on_a_pipe_prints_plain_lines(outside: Path, tmp_path: Path):
    # Before: panels laid out 200 columns wide, 600-byte lines of box and padding.
    done = run(outside, tmp_path, "solve", COMPOSE, "--adapters", PAIR, "--engine", "canned",
               "--sandbox", "process")
    lines = done.stdout.splitlines()
    assert "# helper" in lines and "# main" in lines and "# combined program" in lines
    assert "# tests" in lines
    assert not any(ch in done.stdout for ch in "│╭╰─┃━"), done.stdout[:400]
    assert all(line == line.rstrip() for line in lines)
    program = lines[lines.index("# combined program") + 1:lines.index("# tests")]
    tests = lines[lines.index("# tests") + 1:]
    # A long line is the program's or a test's own text, never padding.
    assert all(len(line) < 120 or line in program or line in tests for line in lines)
    assert tests[0].split()[:2] == ["1", "error"]  # canned's aux(x, y) does not fit: NameError
    assert any(line.startswith(("FAILED", "ERROR")) and "reward" in line for line in lines)


def test_the_search_path_is_the_same_for_python_callers(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch):
    from coopcode.core.adapters import adapter_folder, choose_adapters, looked_in, trained_with

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COOPCODE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COOPCODE_CHECKPOINTS", os.pathsep.join([str(tmp_path / "none"),
                                                                str(REPO / "checkpoints")]))
    assert adapter_folder(PAIR, "main") == str(REPO / "checkpoints" / PAIR / "main")
    assert str(tmp_path / "none") in looked_in()
    chosen = choose_adapters(SINGLE, None, None)
    assert (chosen.helper, chosen.run and chosen.run.scheme) == (None, "single")
    trained = trained_with(None, PAIR)
    assert trained is not None and (trained.held_out, trained.reward) == ("compose:test", "own")
