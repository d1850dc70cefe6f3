"""Engines turn prompts into completions. See `coopcode.engines.base.Engine`.

The package is a wing of three parts:

    base.py, registry.py, engine_config.py, scripted.py, stops.py, agents.py
                  what every engine shares: the Engine protocol and its requests, the
                  table of engine kinds, the engine options, the scripted engine (tests, UI),
                  stop strings, the agents (helper and main) on an engine
    embedded/     the embedded engine (default): engine, batching, the flat step, kernel
                  choice, weight copies, the fused kernel (`coopcode.engines.embedded`)
    served/       engines another program serves: OpenAI-compatible servers, vLLM
                  (`coopcode.engines.served`)

Only the shared part is imported here; an engine's own modules (torch, vLLM, the OpenAI SDK)
load when `load_engine` asks for one.
"""

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
from coopcode.engines.engine_config import EngineConfig
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
