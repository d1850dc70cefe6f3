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
from coopcode.engines.options import EngineConfig
from coopcode.engines.registry import ENGINE_KINDS, EngineKind, engine_kind, register_engine
from coopcode.engines.scripted import ScriptedEngine

__all__ = [
    "ENGINE_KINDS",
    "Completion",
    "DeltaCallback",
    "Engine",
    "EngineConfig",
    "EngineKind",
    "GenerationRequest",
    "SamplingParams",
    "ScriptedEngine",
    "derive_seed",
    "engine_kind",
    "load_engine",
    "register_engine",
]


def load_engine(model: str | None = None, engine: str = "transformers", **kw: Any) -> Engine:
    """An engine for `model` (catalog name, folder or HF id) of the kind registered as `engine`
    (`coopcode.engines.registry`); heavy imports happen here."""
    return engine_kind(engine).engine_class()(model, **kw)  # type: ignore[no-any-return]
