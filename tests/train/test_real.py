"""A short real run: `coopcode train` on the embedded 0.5B model for two CPU steps, then
`coopcode solve` loads the two adapters it wrote. Also the CUDA path, where there is a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch


def _coopcode(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, "-m", "coopcode", *args], capture_output=True,
                          text=True, env=env, timeout=1500)


@pytest.mark.slow
@pytest.mark.model
def test_train_on_the_embedded_model_then_solve_with_the_adapters(tmp_path: Path) -> None:
    out = tmp_path / "real"
    # Small on purpose (G=2, 48 tokens, 2 problems): this checks the real path end to end,
    # not learning; BENCHMARKS.md has the full-size step time.
    trained = _coopcode("train", "--algo", "magrpo", "--steps", "2", "--group-size", "2",
                        "--max-new-tokens", "48", "--limit", "2", "--sandbox", "process",
                        "--out", str(out), "--events", "jsonl")
    assert trained.returncode == 0, trained.stderr[-2000:]
    metrics = [json.loads(x) for x in trained.stdout.splitlines() if '"type": "metric"' in x]
    assert [m["step"] for m in metrics] == [1, 2]
    assert all(m["values"]["helper/completion_tokens"] > 0 for m in metrics)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["step"] == 2 and manifest["base"]["name"] == "qwen2.5-coder-0.5b-instruct"
    for role in ("helper", "main"):
        size = (out / role / "adapter_model.safetensors").stat().st_size
        assert 1e6 < size < 20e6  # r=8 on every linear layer of 0.5B: ~17.6 MB in fp32

    solved = _coopcode("solve", "HumanEval/0", "--helper-adapter", str(out), "--main-adapter",
                       str(out), "--max-new-tokens", "96", "--sandbox", "process", "--json")
    assert solved.returncode in (0, 1), solved.stderr[-2000:]  # 1: it ran, tests failed
    result = json.loads(solved.stdout)
    assert result["meta"]["helper_adapter"] == "helper" and result["meta"]["main_adapter"] == "main"
    assert result["attempts"][0]["outputs"][0]["adapter"] == "helper"


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_a_training_step_runs_on_cuda(tiny_model_dir: Path) -> None:
    from coopcode.engines.embedded.engine import TransformersEngine
    from coopcode.problems import load_problems
    from coopcode.training.config import TrainConfig
    from coopcode.training.magrpo import MAGRPOTrainer
    from coopcode.training.rollout import output_scorer

    engine = TransformersEngine(str(tiny_model_dir), device="cuda")
    config = TrainConfig(group_size=2, max_new_tokens=4, steps=1, learning_rate=1e-2, warmup_steps=0)
    trainer = MAGRPOTrainer(engine, config, load_problems("humaneval:train")[:1],
                            scorer=output_scorer(lambda p, a, n: float(a.members["main"])))
    metrics = trainer.train_step()
    assert metrics["main/grad_norm"] > 0
    assert all(p.device.type == "cuda" for p in trainer.params["main"])
