"""The CUDA path: the embedded engine and its adapters on a GPU (skipped without one).

scripts/gpu_check.sh runs these (`pytest -m cuda`) on a machine with a GPU."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from coopcode.engines.base import GenerationRequest, SamplingParams

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")]


def test_the_embedded_engine_samples_on_cuda_with_an_adapter(tiny_model_dir: Path,
                                                             tmp_path: Path) -> None:
    from peft import LoraConfig

    from coopcode.engines.embedded.engine import TransformersEngine
    from coopcode.training.policy import TransformersPolicy

    engine = TransformersEngine(str(tiny_model_dir), device="cuda")
    try:
        assert next(engine.base.parameters()).device.type == "cuda"
        policy = TransformersPolicy.sharing(engine)
        policy.add_adapter("helper", LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
        params = SamplingParams(n=4, max_new_tokens=16, temperature=0.8, seed=1)
        out = engine.generate([GenerationRequest("def add(a, b):", params),
                               GenerationRequest("def add(a, b):", params, adapter="helper")])
        assert [len(c) for c in out] == [4, 4]
        assert all(s.n_tokens > 0 for c in out for s in c)
        # The same seed gives the same text again on the GPU (batch of the same shape).
        again = engine.generate([GenerationRequest("def add(a, b):", params)])
        assert [s.text for s in again[0]] == [s.text for s in out[0]]
    finally:
        engine.close()
