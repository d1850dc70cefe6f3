"""Batched log-probs (shared prefix, right padding, chunked head) equal one forward per
completion, in value and in gradient, on the tiny model with a live LoRA adapter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from coopcode.training.logprobs import (
    _HeadLogprob,
    common_prefix_len,
    completion_logprobs,
    per_completion_logprobs,
)


def _engine_with_adapter(make_engine: Any, model_dir: Path) -> Any:
    from peft import LoraConfig

    from coopcode.training.policy import TransformersPolicy

    engine = make_engine(model_dir)
    policy = TransformersPolicy.sharing(engine)
    params = policy.add_adapter("main", LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():  # LoRA B starts at 0; give the adapter a real effect
        for p in params:
            p.copy_(torch.randn(p.shape, generator=gen) * 0.05)
    policy.select("main")
    return engine, params


def _batch(seed: int = 0) -> tuple[list[list[int]], list[list[int]]]:
    gen = torch.Generator().manual_seed(seed)
    shared = torch.randint(0, 5000, (40,), generator=gen).tolist()
    prompts = [shared + torch.randint(0, 5000, (n,), generator=gen).tolist() for n in (0, 6, 13, 2)]
    comps = [torch.randint(0, 5000, (n,), generator=gen).tolist() for n in (7, 1, 12, 4)]
    return prompts, comps


@pytest.mark.parametrize("share_prefix", [True, False])
def test_batched_logprobs_equal_one_forward_per_completion(make_engine: Any, tiny_model_dir: Path,
                                                           share_prefix: bool) -> None:
    engine, _ = _engine_with_adapter(make_engine, tiny_model_dir)
    prompts, comps = _batch()
    assert common_prefix_len(prompts) == 40  # the shared-prefix path is taken
    with torch.no_grad():
        batched = completion_logprobs(engine.base, prompts, comps, temperature=0.8,
                                      share_prefix=share_prefix)
        single = per_completion_logprobs(engine.base, prompts, comps, temperature=0.8)
    for i, ref in enumerate(single):
        got = batched.values[i][batched.mask[i]]
        assert got.shape == ref.shape == (len(comps[i]),)
        torch.testing.assert_close(got, ref, atol=2e-5, rtol=1e-5)
    assert batched.mask.sum().item() == sum(len(c) for c in comps)
    torch.testing.assert_close(batched.reduce("sum"), torch.stack([r.sum() for r in single]),
                               atol=1e-4, rtol=1e-5)
    measured = batched.entropy[batched.mask]
    measured = measured[~torch.isnan(measured)]
    assert measured.numel() == 3 and (measured > 0).all()  # every 8th of the 24 tokens


def test_batched_gradients_equal_per_completion_gradients(make_engine: Any, tiny_model_dir: Path) -> None:
    engine, params = _engine_with_adapter(make_engine, tiny_model_dir)
    prompts, comps = _batch(seed=1)
    weights = torch.tensor([1.0, -2.0, 0.5, 3.0])

    def grads(loss_fn: Any) -> list[Any]:
        for p in params:
            p.grad = None
        with torch.enable_grad():
            loss_fn().backward()
        return [p.grad.clone() for p in params]

    ours = grads(lambda: (weights * completion_logprobs(engine.base, prompts, comps).reduce()).sum())
    ref = grads(lambda: sum(w * lp.sum() for w, lp in
                            zip(weights, per_completion_logprobs(engine.base, prompts, comps))))
    assert any(g.abs().sum() > 0 for g in ours)
    for a, b in zip(ours, ref):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_head_logprob_backward_matches_finite_differences() -> None:
    gen = torch.Generator().manual_seed(0)
    hidden = torch.randn(5, 8, dtype=torch.double, generator=gen, requires_grad=True)
    weight = torch.randn(30, 8, dtype=torch.double, generator=gen)
    targets = torch.randint(0, 30, (5,), generator=gen)
    # chunk 2 < 5 rows: the chunked loop and its seams are exercised. enable_grad: a loaded
    # engine turns grad off for its thread (generation never needs it).
    with torch.enable_grad():
        assert torch.autograd.gradcheck(
            lambda h: _HeadLogprob.apply(h, weight, targets, 1 / 0.7, 2)[0], (hidden,))
