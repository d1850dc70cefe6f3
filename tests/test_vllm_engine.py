"""The vLLM engine runs only where vLLM and a GPU are present; here it must skip cleanly."""

from __future__ import annotations

import importlib.util

import pytest

from coopcode.errors import ModelError

HAS_VLLM = importlib.util.find_spec("vllm") is not None


@pytest.mark.skipif(HAS_VLLM, reason="vLLM is installed: the real test below runs instead")
def test_without_vllm_the_engine_says_how_to_get_it() -> None:
    from coopcode.engines import load_engine

    with pytest.raises(ModelError, match=r"pip install 'coopcode\[vllm\]'"):
        load_engine(None, "vllm")


@pytest.mark.skipif(not HAS_VLLM, reason="vLLM is not installed (CUDA-only wheels; optional extra)")
def test_vllm_generates_with_per_sample_seeds(tiny_model_dir) -> None:  # pragma: no cover - GPU only
    import torch

    if not torch.cuda.is_available():
        pytest.skip("vLLM needs a CUDA device")
    from coopcode.engines import GenerationRequest, SamplingParams, load_engine

    engine = load_engine(str(tiny_model_dir), "vllm")
    prompt = engine.render_chat([{"role": "user", "content": "hi"}])
    params = SamplingParams(n=3, max_new_tokens=8, temperature=1.0, seed=1)
    a = engine.generate([GenerationRequest(prompt, params)])[0]
    b = engine.generate([GenerationRequest(prompt, params)])[0]
    assert [c.text for c in a] == [c.text for c in b]
