"""Engines turn prompts into completions. See `coopcode.engines.base.Engine`."""

from __future__ import annotations

from typing import Any

from coopcode.engines.base import (
    Completion,
    DeltaCallback,
    Engine,
    GenerationRequest,
    SamplingParams,
    derive_seed,
)
from coopcode.engines.options import ENGINES, EngineConfig
from coopcode.engines.scripted import ScriptedEngine

__all__ = [
    "Completion",
    "DeltaCallback",
    "Engine",
    "EngineConfig",
    "GenerationRequest",
    "SamplingParams",
    "ScriptedEngine",
    "derive_seed",
    "load_engine",
]

def load_engine(model: str | None = None, engine: str = "transformers", **kw: Any) -> Engine:
    """An engine for `model` (catalog name, folder or HF id); heavy imports happen here."""
    from coopcode.errors import UserError

    if engine == "transformers":
        from coopcode.engines.transformers_engine import TransformersEngine

        return TransformersEngine(model, **kw)
    if engine == "vllm":
        from coopcode.engines.vllm_engine import VLLMEngine

        return VLLMEngine(model, **kw)
    if engine == "openai":
        from coopcode.engines.openai_engine import OpenAIEngine

        return OpenAIEngine(model, **kw)
    raise UserError(f"unknown engine {engine!r}: use one of {', '.join(ENGINES)}")
