"""Fixtures for the training tests: tiny random models, fresh engines to train on."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def sharp_model_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model with an untied, 40x sharper random LM head.

    The tiny model's tied head gives a near-uniform next-token distribution over 151k tokens
    (entropy ~ln 151k), and its hidden state cannot move far from the input embedding: no
    token starts with a rate a few CPU steps could raise. An untied head scaled so the top
    first tokens have 10-40% probability gives a policy gradient something to work with.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dest = tmp_path_factory.mktemp("models") / "tiny-sharp"
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir), dtype=torch.float32)
    model.config.tie_word_embeddings = False
    with torch.no_grad():  # the tiny model's final norm spreads its tied head's logits: not here
        model.model.norm.weight.fill_(1.0)
    gen = torch.Generator().manual_seed(1)
    weight = torch.randn(model.lm_head.weight.shape, generator=gen) * 0.02 * 40
    model.lm_head.weight = torch.nn.Parameter(weight)
    model.save_pretrained(str(dest))
    AutoTokenizer.from_pretrained(str(tiny_model_dir)).save_pretrained(str(dest))
    return dest


@pytest.fixture
def make_engine() -> Iterator[Callable[[Path], object]]:
    """A fresh fp32 engine per call: trainable adapters stay attached to the engine they
    were added to, so each training test gets its own (the tiny model loads in ~1 s)."""
    from coopcode.engines.embedded.engine import TransformersEngine

    made: list[TransformersEngine] = []

    def make(path: Path) -> TransformersEngine:
        # fp32: gradient and log-prob comparisons are exact-ish; bf16 would blur them.
        engine = TransformersEngine(str(path), dtype="float32", max_batch=16)
        made.append(engine)
        return engine

    yield make
    for engine in made:
        engine.close()
