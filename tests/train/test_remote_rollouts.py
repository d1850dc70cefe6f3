"""Rollouts sampled by a real `vllm serve` (vLLM's CPU build; the suite's one server,
`vllm_server` in tests/conftest.py), gradients by the transformers policy: after every
optimizer step the server gets the new adapters under new names
(/v1/load_lora_adapter), the old ones are unloaded, and the trained adapters load in solve."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

REPO = Path(__file__).resolve().parent.parent.parent


def test_a_run_sampled_by_vllm_serve_updates_its_adapters_and_they_load_in_solve(
        vllm_server: Any, tmp_path: Path, process_sandbox: Any, cli_env: dict[str, str]) -> None:
    import httpx2 as httpx

    from coopcode.engines.served.openai_engine import OpenAIEngine
    from coopcode.problems import load_problems
    from coopcode.training.config import TrainConfig
    from coopcode.training.magrpo import MAGRPOTrainer
    from coopcode.training.policy import TransformersPolicy

    engine = OpenAIEngine(None, base_urls=[vllm_server.url])
    assert engine.token_ids_from_server  # vLLM streams the sampled ids: the loss scores them
    policy = TransformersPolicy.load(None)
    config = TrainConfig(group_size=2, max_new_tokens=48, warmup_steps=0, lora_rank=8,
                         lora_alpha=16, learning_rate=1e-4)
    trainer = MAGRPOTrainer(engine, config, load_problems("humaneval:train")[:2], policy=policy,
                            sandbox=process_sandbox, sync_dir=tmp_path / "sync")
    metrics = [trainer.train_step() for _ in range(2)]
    assert all(m["helper/completion_tokens"] > 0 and m["main/completion_tokens"] > 0 for m in metrics)
    served = {m["id"] for m in httpx.get(f"{vllm_server.url}/models", timeout=10).json()["data"]}
    assert {"helper-v2", "main-v2"} <= served and not {"helper-v1", "main-v1"} & served
    # The sampled ids are what the policy scores: they decode to the rollout's text.
    sample = trainer.last_rollouts[0].root.samples["main"][0]
    assert policy.tokenizer.decode(sample.completion_ids, skip_special_tokens=True).startswith(sample.text)
    out = tmp_path / "run"
    for name in ("helper", "main"):
        policy.save(name, out / name)
    done = subprocess.run([sys.executable, "-m", "coopcode", "solve", str(REPO / "examples" / "below_zero.py"),
                           "--helper-adapter", str(out), "--main-adapter", str(out), "--sandbox", "process",
                           "--max-new-tokens", "64", "--json"],
                          capture_output=True, text=True, timeout=900, env=cli_env, cwd=REPO)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert json.loads(done.stdout)["meta"]["helper_adapter"] == "helper"
    engine.close()


def test_a_rollout_server_killed_mid_run_stops_at_a_step_boundary_and_resume_continues(
        vllm_server: Any, tmp_path: Path, cli_env: dict[str, str]) -> None:
    """The server sampling the rollouts dies mid-step: the step in progress is dropped (no
    half-step is saved), the run stops with one line naming the server, and `--resume` (the
    server back) continues to the end with every step once."""
    from vllm_env import FaultProxy

    proxy = FaultProxy(vllm_server.url.removesuffix("/v1"))
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "coopcode", "train", "--rollout-engine", "openai",
            "--rollout-base-url", proxy.url, "--steps", "3", "-G", "2", "--max-new-tokens", "32",
            "--lora-rank", "8", "--warmup-steps", "0", "--save-every", "1", "--limit", "3",
            "--sandbox", "process", "--out", str(out)]
    run = subprocess.Popen([*argv, "--events", "jsonl"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=cli_env, cwd=REPO)
    try:
        assert run.stdout is not None
        for line in run.stdout:
            event = json.loads(line)
            if event["type"] == "log" and "checkpoint step 1" in event["message"]:
                break
        proxy.kill()  # step 2 is sampling (or about to): its server is gone
        _rest, err = run.communicate(timeout=900)
    finally:
        if run.poll() is None:
            run.kill()
    errors = [x for x in err.splitlines() if x.startswith("error:")]
    assert run.returncode == 2 and len(errors) == 1, err[-3000:]
    assert str(proxy.port) in errors[0] and "Traceback" not in err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["step"] == 1  # the step in progress was dropped, not half-saved
    proxy.start()
    try:
        again = subprocess.run([*argv, "--resume"], capture_output=True, text=True, timeout=1800,
                               env=cli_env, cwd=REPO)
    finally:
        proxy.kill()
    assert again.returncode == 0, again.stderr[-3000:]
    steps = [json.loads(x)["step"] for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3]
