"""Data-parallel training with torchrun (gloo on this CPU): two ranks train the adapters one
rank trains, to floating-point tolerance, with the same global batch; a killed two-rank run
(`torchrun -m coopcode train`) resumes to the same steps without repeating data.

What the arithmetic promises: two ranks sum the gradients in another order than one rank, so
after an update the weights agree to rounding, not bit for bit. The first step's samples come
from identical weights (deterministic sampling), so they, their rewards and the update agree.
Later samples come from weights that differ by rounding: on some CPUs (an AVX2-only EPYC,
fp32) that flips a sampled token of the tiny model's nearly flat distribution, and from there
the runs are two fair runs, not one. So later steps are compared only while their samples
agree (the logged samples, every rank's, are the one-rank run's for the same problems, and
the step's mean reward is the same); every step's data order must agree regardless."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

STEPS = 3


def _argv(model: Path, out: Path, *extra: str) -> list[str]:
    # --deterministic: every completion sampled alone, so a rank's share of the problems is
    # sampled exactly as in the one-rank run; the rest differs only in summation order.
    return ["-m", "coopcode", "train", "--model", str(model), "--steps", str(STEPS),
            "--problems-per-step", "2", "--group-size", "2", "--max-new-tokens", "8", "--limit", "4",
            "--deterministic", "--save-every", "1", "--sandbox", "process", "--out", str(out),
            "--warmup-steps", "0", "--lr", "1e-3", *extra]


def _torchrun(nproc: int) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc_per_node={nproc}"]


def _adapters(out: Path) -> dict[str, object]:
    from safetensors.torch import load_file

    return {role: load_file(str(out / role / "adapter_model.safetensors")) for role in ("helper", "main")}


def _samples(out: Path) -> dict[tuple[int, str], list]:
    """(step, task) -> the logged joint actions (rank 0's share under torchrun)."""
    lines = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    return {(r["step"], r["task_id"]): r["actions"] for r in lines}


def _same_samples(ones: list[dict], twos: list[dict], mine: dict, theirs: dict, step: int) -> bool:
    """Did the two runs sample the same at this step (as far as the logs can tell)?"""
    if round(twos[step - 1]["reward/mean"], 6) != round(ones[step - 1]["reward/mean"], 6):
        return False
    logged = [key for key in theirs if key[0] == step]
    return bool(logged) and all(theirs[key] == mine.get(key) for key in logged)


def _assert_close(a: dict, b: dict, what: str) -> None:
    import torch

    for role in a:
        assert a[role].keys() == b[role].keys()
        for key in a[role]:
            assert torch.allclose(a[role][key], b[role][key], rtol=1e-4, atol=1e-6), (what, role, key)


def _metrics(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]


def test_two_ranks_train_what_one_rank_trains(tiny_model_dir: Path, tmp_path: Path,
                                              cli_env: dict[str, str]) -> None:

    script = str(Path(__file__).with_name("ddp_train_script.py"))
    env = {**cli_env, "OMP_NUM_THREADS": "1"}
    for runner, out in (([sys.executable], tmp_path / "one"), (_torchrun(2), tmp_path / "two")):
        done = subprocess.run([*runner, script, str(tiny_model_dir), str(out)], env=env,
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
    # Each rank freed its DDP wrappers before leaving the group (not at interpreter teardown).
    assert done.stdout.count("ddp-alive 0") == 2, done.stdout[-1000:]
    ones, twos = _metrics(tmp_path / "one"), _metrics(tmp_path / "two")
    assert [m["task_ids"] for m in twos] == [m["task_ids"] for m in ones]
    states = [f"trainer_state/step-{s:06d}" for s in range(1, STEPS + 1)]
    # Step 1: same weights, same samples, same rewards; the update agrees to rounding.
    assert round(twos[0]["reward/mean"], 6) == round(ones[0]["reward/mean"], 6)
    first = _adapters(tmp_path / "one" / states[0])
    _assert_close(first, _adapters(tmp_path / "two" / states[0]), "step 1")
    # The weights moved: the comparison is not between two untrained adapters.
    assert all(float(t.abs().max()) > 0 for role in first for k, t in first[role].items()
               if "lora_B" in k)
    mine, theirs = _samples(tmp_path / "one"), _samples(tmp_path / "two")
    assert list(theirs) == list(mine)  # every rank's samples logged, in the step's order
    assert _same_samples(ones, twos, mine, theirs, 1)
    # Later steps, while the samples agree: the updates agree too.
    compared = 1
    for step in range(2, STEPS + 1):
        if not _same_samples(ones, twos, mine, theirs, step):
            break  # a token flipped by rounding: from here on, two fair runs
        _assert_close(_adapters(tmp_path / "one" / states[step - 1]),
                      _adapters(tmp_path / "two" / states[step - 1]), f"step {step}")
        compared = step
    print(f"updates agree at steps 1-{compared} of {STEPS}")


def _tree(pid: int) -> list[int]:
    """`pid` and every process below it (from each process's parent: every kernel has it)."""
    from sandbox.confine import children_by_parent

    children = children_by_parent()
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo += children.get(p, [])
    return found


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except OSError:
        return True


def _kill_tree(pid: int) -> None:
    """SIGKILL torchrun and its ranks, and wait until none runs: the ranks are in sessions of
    their own (torch's elastic agent starts them so), so killing torchrun's group leaves them
    running until they notice, and a rank still holding the run's lock refuses the resume."""
    tree = _tree(pid)
    for p in tree:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 60
    while not all(_gone(p) for p in tree) and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_killed_two_rank_run_resumes_to_the_same_steps_without_repeating_data(
        tiny_model_dir: Path, tmp_path: Path, cli_env: dict[str, str]) -> None:
    env = {**cli_env, "OMP_NUM_THREADS": "1"}
    one = tmp_path / "one"
    done = subprocess.run([sys.executable, *_argv(tiny_model_dir, one)], env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    two = tmp_path / "two"
    first = subprocess.Popen([*_torchrun(2), *_argv(tiny_model_dir, two, "--events", "jsonl")],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             start_new_session=True)
    assert first.stdout is not None
    for line in first.stdout:  # rank 0's events; kill the whole group after step 1's metric
        if line.startswith("{") and json.loads(line).get("type") == "metric" and \
                json.loads(line)["step"] == 1:
            break
    _kill_tree(first.pid)  # at once: a tiny-model step takes well under a second
    first.wait()
    assert len(_metrics(two)) < STEPS  # it really was cut short
    again = subprocess.run([*_torchrun(2), *_argv(tiny_model_dir, two, "--resume")], env=env,
                           capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    ones, twos = _metrics(one), _metrics(two)
    assert [m["step"] for m in twos] == list(range(1, STEPS + 1))
    assert [m["task_ids"] for m in twos] == [m["task_ids"] for m in ones]  # no data repeated
    manifest = json.loads((two / "manifest.json").read_text())
    assert manifest["step"] == STEPS
