"""The command line as a user meets it: bad input gets one line and exit 2; evaluate; solve."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import REPO, assert_one_line_error, coopcode

from coopcode.problems import load_humaneval


def test_bad_input_before_any_model_loads(tmp_path: Path) -> None:
    """These fail in a second, before any model is loaded: the error is the only output."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f(x):\n    return (\n")
    no_entry = tmp_path / "no_entry.py"
    no_entry.write_text("def f(x):\n    return x\n")
    cases = [
        (("solve", str(tmp_path / "missing.py")), "no such file"),
        (("solve", str(bad)), "syntax error"),
        (("solve", str(no_entry)), "no entry point"),
        (("solve", "HumanEval/999"), "no such HumanEval task"),
        (("solve", "examples/below_zero.py", "--scheme", "trio"), "unknown scheme"),
        (("bench", "--k", "0"), "at least 1"),
        (("bench", "--k", "1,20", "--n", "10"), "k=20 is larger than n=10"),
        (("bench", "--k", "a,b"), "comma-separated"),
        (("bench", "--problems", str(tmp_path / "nothing.jsonl")), "no such file"),
        (("models", "pull", "gpt-17"), "unknown model"),
    ]
    for args, needle in cases:
        done = coopcode(*args)
        assert_one_line_error(done, needle)
        assert len(done.stderr.strip().splitlines()) == 1


def test_model_and_adapter_errors(tmp_path: Path, tiny_model_dir: Path) -> None:
    (tmp_path / "not-an-adapter").mkdir()
    cases = [
        (("solve", "examples/below_zero.py", "--model", "no-such-model"), "unknown model"),
        (("solve", "examples/below_zero.py", "--model", str(tmp_path)), "not a model folder"),
        (("solve", "examples/below_zero.py", "--model", str(tiny_model_dir), "--main-adapter",
          str(tmp_path / "not-an-adapter")), "not a PEFT adapter"),
        (("solve", "examples/below_zero.py", "--model", str(tiny_model_dir), "--helper-adapter",
          str(tmp_path / "nope")), "no such folder"),
    ]
    for args, needle in cases:
        assert_one_line_error(coopcode(*args), needle)


def test_unwritable_bench_out(tmp_path: Path, tiny_model_dir: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    done = coopcode("bench", "--model", str(tiny_model_dir), "--problems", "examples/is_palindrome.py",
                    "--n", "1", "--k", "1", "--sandbox", "process", "--out", str(blocker / "run"))
    assert_one_line_error(done, "choose another --out")


def test_evaluate_human_eval_samples(tmp_path: Path) -> None:
    problems = load_humaneval("all")[:4]
    samples = tmp_path / "samples.jsonl"
    with open(samples, "w") as f:
        for p in problems:
            f.write(json.dumps({"task_id": p.task_id, "completion": p.canonical_solution}) + "\n")
            f.write(json.dumps({"task_id": p.task_id, "completion": "    return None\n"}) + "\n")
    out = tmp_path / "results.jsonl"
    done = coopcode("evaluate", str(samples), "--k", "1,2", "--json", "--out", str(out),
                    "--sandbox", "process")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["pass@1"] == pytest.approx(0.5)
    assert result["pass@2"] == pytest.approx(1.0)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["passed"] for r in rows] == [True, False] * 4
    assert all(r["task_id"] and r["verdict"]["tests"] for r in rows)
    assert_one_line_error(coopcode("evaluate", str(samples), "--k", "3", "--sandbox", "process"),
                          "larger than n=2")


def test_solve_json_with_the_tiny_model(tiny_model_dir: Path) -> None:
    """The tiny model writes noise: solve still runs it safely and reports exit 1 with a verdict."""
    done = coopcode("solve", "examples/below_zero.py", "--model", str(tiny_model_dir), "--json",
                    "--max-new-tokens", "16", "--sandbox", "process", "--dtype", "float32")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["passed"] is False
    assert data["verdict"]["status"] in ("syntax_error", "error", "failed")
    assert data["reward"]["total"] <= 0.5
    assert [o["role"] for o in data["attempts"][0]["outputs"]] == ["helper", "main"]


def test_events_jsonl_stream(tiny_model_dir: Path) -> None:
    done = coopcode("solve", "examples/is_palindrome.py", "--model", str(tiny_model_dir), "--events",
                    "jsonl", "--max-new-tokens", "8", "--sandbox", "process", "--dtype", "float32")
    types = [json.loads(line)["type"] for line in done.stdout.splitlines()]
    assert types[0] == "started" and types[-1] == "finished"
    assert {"token", "attempt", "verdict"} <= set(types)


# -- listings that pipe: stdout here is a pipe, never a terminal --------------------------

def test_checkpoints_list_pipes_into_grep() -> None:
    """`coopcode checkpoints list | grep magrpo-0.5b-demo` finds the run, name and path whole."""
    piped = subprocess.run(f"{shlex.quote(sys.executable)} -m coopcode checkpoints list "
                           "| grep magrpo-0.5b-demo", shell=True, capture_output=True, text=True,
                           cwd=REPO, timeout=60)
    assert piped.returncode == 0, piped.stderr
    (row,) = piped.stdout.splitlines()
    fields = row.split("\t")
    assert fields[0] == "magrpo-0.5b-demo" and fields[1] == "magrpo"
    assert fields[-1] == str(Path("checkpoints") / "magrpo-0.5b-demo")
    assert "…" not in piped.stdout
    # The reward with the name of the reward it is measured in (issue 42: credit and coop
    # runs' figures sat side by side, unnamed, on different scales).
    value, name = fields[4].split(" ")
    assert float(value) > 0 and name == "seed"

    listed = coopcode("checkpoints", "list")
    header, *rows = listed.stdout.splitlines()
    assert header.split("\t") == ["run", "algo", "base", "step", "reward", "adapters", "size", "path"]
    assert all(len(r.split("\t")) == 8 for r in rows)


def test_checkpoints_list_json_has_stable_keys() -> None:
    done = coopcode("checkpoints", "list", "--json")
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout)
    demo = next(r for r in runs if r["name"] == "magrpo-0.5b-demo")
    assert set(demo) == {"name", "path", "algorithm", "base", "step", "kept_step", "total_steps",
                         "reward_mean", "reward_name", "adapters", "resumable_step", "manifest"}
    assert set(demo["adapters"]) == {"helper", "main"}


def test_models_list_pipes_whole_rows_and_json() -> None:
    from coopcode.models import CATALOG, DEFAULT_MODEL, model_dir

    piped = coopcode("models", "list")
    assert piped.returncode == 0, piped.stderr
    header, *rows = piped.stdout.splitlines()
    assert header.split("\t") == ["name", "default", "ready", "size", "source", "path"]
    table = {r.split("\t")[0]: r.split("\t") for r in rows}
    assert set(table) == set(CATALOG)
    for name, fields in table.items():
        assert fields[1] == ("yes" if name == DEFAULT_MODEL else "no")
        assert fields[-1] == str(model_dir(CATALOG[name]))  # the full path, not an ellipsis

    done = coopcode("models", "list", "--json")
    assert done.returncode == 0, done.stderr
    models = json.loads(done.stdout)
    assert [m["name"] for m in models] == list(CATALOG)
    for m in models:
        assert set(m) == {"name", "default", "ready", "size_bytes", "source", "path", "description"}
        assert isinstance(m["ready"], bool) and isinstance(m["size_bytes"], int)
    assert [m["name"] for m in models if m["default"]] == [DEFAULT_MODEL]


def test_sandbox_status_json_and_plain_lines() -> None:
    """With or without a Docker daemon: one JSON object; the plain lines carry whole values."""
    done = coopcode("sandbox", "status", "--json", "--no-probe")
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert {"docker", "process", "auto_backend"} <= set(info)
    assert isinstance(info["docker"]["daemon"], bool) and info["docker"]["image"]
    assert ("server_version" in info["docker"]) == info["docker"]["daemon"]
    assert info["auto_backend"] in ("docker", "process")
    assert info["process"]["isolation"] and info["process"]["python"]

    plain = coopcode("sandbox", "status", "--no-probe")
    assert plain.returncode == 0, plain.stderr
    assert f"image         : {info['docker']['image']}" in plain.stdout or not info["docker"]["daemon"]
    assert f"process       : {info['process']['isolation']} (python {info['process']['python']})" \
        in plain.stdout
