"""A tiny, randomly initialised Qwen2 model for fast tests.

It shares the embedded model's real tokenizer, so prompts, chat templates, stop strings and
LoRA code paths are exercised exactly as with the real model, in seconds instead of minutes.
Its output is noise; tests that need sense use the embedded model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def make_tiny_model(dest: Path, *, seed: int = 0, hidden: int = 64, layers: int = 2) -> Path:
    """Write a tiny Qwen2ForCausalLM (random weights) with the default model's tokenizer."""
    from transformers import AutoTokenizer, Qwen2Config

    from coopcode.models.resolve import resolve_model

    if (dest / "config.json").exists():
        return dest
    tokenizer = AutoTokenizer.from_pretrained(resolve_model(None).path)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,  # halves the size: the vocab is 151k rows
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return _write(dest, config, tokenizer, seed)


def build_tiny_model(dest: Path, spec: Path, *, seed: int = 0) -> Path:
    """The tiny model from `spec`, a folder with its config.json and tokenizer files only
    (2 MB where the weights are 39): what scripts/gpu_check.sh carries to a machine that has
    no embedded model. Random weights made as make_tiny_model makes them."""
    from transformers import AutoTokenizer, Qwen2Config

    if (dest / "config.json").exists():
        return dest
    return _write(dest, Qwen2Config.from_pretrained(str(spec)),
                  AutoTokenizer.from_pretrained(str(spec)), seed)


def _write(dest: Path, config: Any, tokenizer: Any, seed: int) -> Path:
    import torch
    from transformers import Qwen2ForCausalLM

    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).to(torch.float32)  # type: ignore[arg-type]
    # Random weights give logits with almost no spread (std ~0.16): every draw is then a
    # nearly flat distribution over 151k tokens, which the sampler can only cut by sorting the
    # whole vocabulary (~10 ms a token a row; the tests spent most of their tiny-model time
    # there). A final norm of 12 spreads the logits like a trained model's (std ~1.9): the top
    # 256 tokens hold 95% of the mass in about half the steps, the top token ~84% on average,
    # so samples still differ (measured on 64 random prompts).
    with torch.no_grad():
        model.model.norm.weight.fill_(12.0)
    dest.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(dest))
    tokenizer.save_pretrained(str(dest))
    return dest
