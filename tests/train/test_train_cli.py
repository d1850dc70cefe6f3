"""`coopcode train` and `coopcode checkpoints` as a user runs them: bad input, kill and
resume, stop and resume, listing runs. The tiny model and the process sandbox keep it fast."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coopcode.problems import load_problems
from coopcode.training.data import ProblemOrder

STEPS, LIMIT = 6, 5


def _coopcode(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coopcode", *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def _one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = [x for x in result.stderr.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    for f in fragments:
        assert f in lines[0], lines[0]


@pytest.mark.parametrize(("args", "message"), [
    (["--algo", "ppo"], "unknown algorithm 'ppo'"),
    (["--group-size", "1"], "--group-size must be at least 2"),
    (["--joint", "diagonal"], "unknown joint mode"),
    (["--events", "xml"], "--events xml"),
    (["--resume"], "--resume needs the run"),
])
def test_bad_options_get_one_line_and_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    _one_line_error(_coopcode("train", "--out", str(tmp_path / "run"), *args)
                    if args != ["--resume"] else _coopcode("train", *args), message)


def test_empty_dataset_unwritable_output_and_nothing_to_resume(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    _one_line_error(_coopcode("train", "--problems", str(empty), "--out", str(tmp_path / "a")),
                    "no problems")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    _one_line_error(_coopcode("train", "--out", str(blocker / "run")), "cannot write to")
    _one_line_error(_coopcode("train", "--resume", "--out", str(tmp_path / "nothing")),
                    "no training run to resume")


def test_an_adapter_from_another_base_is_refused_before_loading(tmp_path: Path,
                                                               tiny_model_dir: Path) -> None:
    foreign = tmp_path / "foreign"
    (foreign / "helper").mkdir(parents=True)
    (foreign / "helper" / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA"}))
    (foreign / "helper" / "adapter_model.safetensors").write_bytes(b"")
    (foreign / "manifest.json").write_text(json.dumps(
        {"base": {"name": "some-other-model", "fingerprint": "f" * 64}}))
    result = _coopcode("train", "--model", str(tiny_model_dir), "--helper-adapter", str(foreign),
                       "--out", str(tmp_path / "run"))
    _one_line_error(result, "trained on some-other-model")


def _events_until(proc: subprocess.Popen[str], done: Any, limit: float = 600) -> list[dict[str, Any]]:
    """Read JSONL events from `proc` until `done(event)`; the events read."""
    seen = []
    deadline = time.time() + limit
    assert proc.stdout is not None
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        event = json.loads(line)
        seen.append(event)
        if done(event):
            return seen
    raise AssertionError(f"never saw the awaited event; got {[e['type'] for e in seen]}")


@pytest.fixture(scope="module")
def interrupted_run(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A 6-step run killed with SIGKILL after step 3 (checkpoint at 2), resumed and stopped
    with SIGINT after step 4, resumed again to the end."""
    out = tmp_path_factory.mktemp("runs") / "demo"
    argv = [sys.executable, "-m", "coopcode", "train", "--model", str(tiny_model_dir),
            "--steps", str(STEPS), "--save-every", "2", "--group-size", "2",
            "--max-new-tokens", "4", "--limit", str(LIMIT), "--sandbox", "process",
            "--out", str(out), "--events", "jsonl"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}

    first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        _events_until(first, lambda e: e["type"] == "metric" and e["step"] == 3)
    finally:
        first.kill()  # SIGKILL: no chance to save; step 3 is logged but not checkpointed
        first.wait()

    second = subprocess.Popen(argv[:-4] + ["--resume", "--out", str(out), "--events", "jsonl"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        seen = _events_until(second, lambda e: e["type"] == "metric" and e["step"] == 4)
        second.send_signal(signal.SIGINT)  # what the TUI's Stop sends: save, then exit 130
        rest = second.communicate(timeout=300)[0]
    finally:
        if second.poll() is None:
            second.kill()
    assert second.returncode == 130
    events = seen + [json.loads(x) for x in rest.splitlines() if x.strip()]
    assert any(e["type"] == "log" and "resuming" in e["message"] and "step 2" in e["message"]
               for e in events)
    assert any(e["type"] == "log" and "checkpoint step 4" in e["message"] for e in events)
    # A 4-token budget cuts every completion: the collapse guards say so while it runs.
    warned = [e for e in events if e["type"] == "log" and e.get("level") == "warning"]
    assert [e["message"].split(":")[0] for e in warned] == ["truncation"], warned
    assert "4-token budget" in warned[0]["message"]

    third = _coopcode("train", "--resume", "--out", str(out), "--sandbox", "process", env=env)
    assert third.returncode == 0, third.stderr
    assert third.stderr.count("warning: truncation: 100% of completions stopped at the 4-token "
                              "budget") == 1, third.stderr
    yield out


def test_killed_and_stopped_runs_resume_to_the_same_steps_without_repeating_data(
        interrupted_run: Path) -> None:
    lines = [json.loads(x) for x in (interrupted_run / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines] == list(range(1, STEPS + 1))
    problems = load_problems("humaneval:train")[:LIMIT]
    order = ProblemOrder(LIMIT, 1, seed=0)
    expected = [[problems[i].task_id for i in order.indices(s)] for s in range(STEPS)]
    assert [x["task_ids"] for x in lines] == expected
    samples = [json.loads(x) for x in (interrupted_run / "samples.jsonl").read_text().splitlines()]
    assert [(x["step"], x["task_id"]) for x in samples] == [(i + 1, t[0]) for i, t in enumerate(expected)]
    assert all(len(x["actions"]) == 2 and "helper" in x["actions"][0] for x in samples)
    # The first epoch (5 steps) saw every problem exactly once.
    assert sorted(t for x in lines[:LIMIT] for t in x["task_ids"]) == sorted(p.task_id for p in problems)
    manifest = json.loads((interrupted_run / "manifest.json").read_text())
    assert manifest["step"] == STEPS and manifest["algorithm"] == "magrpo"
    assert manifest["base"]["fingerprint"]
    for role in ("helper", "main"):
        assert (interrupted_run / role / "adapter_config.json").exists()
        assert (interrupted_run / role / "adapter_model.safetensors").stat().st_size > 0
    states = sorted(p.name for p in (interrupted_run / "trainer_state").iterdir())
    assert states == [f"step-{STEPS:06d}"]  # --keep 1: older states are pruned


def test_a_finished_run_cannot_be_restarted_by_accident(interrupted_run: Path,
                                                        tiny_model_dir: Path) -> None:
    _one_line_error(_coopcode("train", "--model", str(tiny_model_dir), "--out", str(interrupted_run)),
                    "already holds a training run")
    _one_line_error(_coopcode("train", "--resume", "--out", str(interrupted_run), "--lr", "0.1"),
                    "--lr was")


def test_checkpoints_list_and_show(interrupted_run: Path) -> None:
    root = interrupted_run.parent
    listed = _coopcode("checkpoints", "list", "--dir", str(root), "--json")
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)
    assert [r["name"] for r in runs] == ["demo"]
    assert runs[0]["step"] == STEPS and set(runs[0]["adapters"]) == {"helper", "main"}
    table = _coopcode("checkpoints", "list", "--dir", str(root))
    assert "demo" in table.stdout and "magrpo" in table.stdout
    shown = _coopcode("checkpoints", "show", "demo", "--dir", str(root))
    assert shown.returncode == 0, shown.stderr
    assert "training curve" in shown.stdout and "helper/" in shown.stdout
    assert "warning (truncation): 100% of completions stopped at the 4-token budget" in shown.stdout
    detail = json.loads(_coopcode("checkpoints", "show", str(interrupted_run), "--json").stdout)
    assert detail["curve"] and detail["manifest"]["config"]["group_size"] == 2
    assert [w["kind"] for w in detail["warnings"]] == ["truncation"]
    assert detail["warnings"][0]["figures"]["budget"] == 4 and detail["reward_name"] == "seed"
    assert detail["manifest"]["config"]["reward"] == "seed"  # the default, named in the run
    assert [w["kind"] for w in detail["manifest"]["metrics"]["warnings"]] == ["truncation"]
    _one_line_error(_coopcode("checkpoints", "show", "no-such-run", "--dir", str(root)),
                    "no checkpoint run")


def test_sft_examples_is_a_problems_command_whichever_part_mounts_first() -> None:
    import typer

    from coopcode.problem_sets import cli as problems_cli
    from coopcode.training import cli as training_cli

    app = typer.Typer()
    training_cli.register(app)  # training first: the problems group is not mounted yet
    problems_cli.register(app)
    problems = next(g.typer_instance for g in app.registered_groups if g.name == "problems")
    assert problems is not None
    assert "sft-examples" in [c.name for c in problems.registered_commands]
