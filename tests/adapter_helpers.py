"""Random LoRA adapters on the tiny model, for engine tests."""

from __future__ import annotations

from pathlib import Path


def make_adapter(base_dir: Path, dest: Path, seed: int,
                 targets: tuple[str, ...] = ("q_proj", "v_proj"), **config: object) -> Path:
    """A PEFT folder with random (non-zero) LoRA weights on `targets` (more LoraConfig
    fields in `config`): it visibly changes greedy output."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(str(base_dir), dtype=torch.float32)
    peft = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=list(targets),
                                            init_lora_weights=False, **config))
    peft.save_pretrained(str(dest))
    return dest
