"""A user's own reward, scheme and engine (with an option of its own), registered in one module
(tests/plugins/my_extensions.py, importing only from `coopcode`) and named in
COOPCODE_PLUGINS: benched, evaluated and trained with from the command line, and shown in the
TUI's lists. The engine's text still runs only in the sandbox."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_helpers import assert_refused, coopcode

from coopcode.problems import load_humaneval

PLUGIN = Path(__file__).resolve().parent / "plugins" / "my_extensions.py"
ADD = "HumanEval/53"  # add(x, y): what the canned engine answers with `+`


@pytest.fixture
def plugin_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "COOPCODE_PLUGINS": str(PLUGIN)}


@pytest.fixture
def add_problem(tmp_path: Path) -> Path:
    problem = next(p for p in load_humaneval("all") if p.task_id == ADD)
    path = tmp_path / "add.jsonl"
    path.write_text(json.dumps(problem.to_dict()) + "\n")
    return path


def test_a_plugin_scheme_reward_and_engine_bench_and_evaluate(tmp_path: Path, plugin_env: dict[str, str],
                                                              add_problem: Path) -> None:
    out = tmp_path / "bench"
    done = coopcode("bench", "--engine", "canned", "--engine-option", "op=+", "--scheme", "blind,sequential",
                    "--reward", "short", "--problems", str(add_problem), "--n", "2", "--k", "1",
                    "--sandbox", "process", "--out", str(out), "--json", env=plugin_env)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {r["method"].split()[-1]: r for r in json.loads(done.stdout)["rows"]}
    assert set(rows) == {"blind", "sequential"}
    assert rows["blind"]["pass@1"] == 1.0 and rows["blind"]["reward"] == "short"
    assert set(rows["blind"]["reward_terms"]) == {"tests", "brevity"}
    assert "- `short`: Passing tests, minus length." in (out / "report.md").read_text()
    # The engine's own option reached it: `-` makes every program fail add's tests.
    minus = tmp_path / "minus"
    done = coopcode("bench", "--engine", "canned", "--engine-option", "op=-", "--scheme", "blind",
                    "--reward", "short", "--problems", str(add_problem), "--n", "1", "--k", "1",
                    "--sandbox", "process", "--out", str(minus), "--json", env=plugin_env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["rows"][0]["pass@1"] == 0.0
    # evaluate: the bench's samples scored again under the plugin's reward and scheme.
    scored = tmp_path / "scored.jsonl"
    done = coopcode("evaluate", str(out / "samples.jsonl"), "--problems", str(add_problem), "--k", "1",
                    "--reward", "short", "--sandbox", "process", "--out", str(scored), "--json",
                    env=plugin_env)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["by_scheme"]["blind"]["pass@1"] == 1.0
    lines = [json.loads(line) for line in scored.read_text().splitlines()]
    assert {(x["scheme"], x["reward_name"]) for x in lines} == {("blind", "short"), ("sequential", "short")}


def test_a_plugin_scheme_and_reward_train_with_the_plugin_engine_sampling(
        tmp_path: Path, plugin_env: dict[str, str], add_problem: Path, tiny_model_dir: Path) -> None:
    out = tmp_path / "run"
    done = coopcode("train", "--model", str(tiny_model_dir), "--scheme", "blind", "--reward", "short",
                    "--rollout-engine", "canned", "--problems", str(add_problem), "--steps", "1",
                    "-G", "2", "--max-new-tokens", "16", "--sandbox", "process", "--out", str(out),
                    "--events", "jsonl", env=plugin_env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    metric = next(e for e in events if e["type"] == "metric")["values"]
    assert {"reward/tests", "reward/brevity"} <= set(metric) and metric["pass_rate"] == 1.0
    config = json.loads((out / "config.json").read_text())
    assert (config["scheme"], config["reward"], config["rollout_engine"]) == ("blind", "short", "canned")
    for role in ("helper", "main"):
        assert (out / role / "adapter_config.json").exists()


@pytest.mark.parametrize(("args", "needle"), [
    (("bench", "--engine", "canned", "--engine-option", "op=/"), "--engine-option op=/: unknown operator '/': use one of +, -, *"),
    (("bench", "--engine", "canned", "--engine-option", "colour=red"), "canned has no option 'colour'"),
    (("bench", "--engine-option", "op=+"), "--engine-option op=+: the embedded engine"),
    (("train", "--scheme", "concat", "--out", "/tmp/never"), "unknown training scheme 'concat'"),
])
def test_a_plugin_engine_option_or_scheme_used_wrong_is_one_line(args: tuple[str, ...], needle: str,
                                                                  plugin_env: dict[str, str]) -> None:
    assert_refused(coopcode(*args, env=plugin_env), needle)


def test_a_plugin_that_cannot_load_is_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "COOPCODE_PLUGINS": str(tmp_path / "missing.py")}
    assert_refused(coopcode("bench", env=env), "missing.py (COOPCODE_PLUGINS): no such file")
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('half written')\n")
    env["COOPCODE_PLUGINS"] = str(broken)
    assert_refused(coopcode("bench", env=env), "RuntimeError: half written")
