"""The engines coopcode knows, each declared once: its name, where its class lives, the
options only it takes, whether it is a server, and how it samples a training's rollouts.

`coopcode.engines.load_engine`, the engine options (`EngineConfig`: --engine's choices, which
flags belong to which engine), `engines.agents.open_agents` and training's `--rollout-engine` all
read this table, so a new engine is one `EngineKind` and its class:

    register_engine(EngineKind("llamacpp", "my_pkg.llamacpp_engine:LlamaCppEngine",
                               "llamacpp (GGUF weights, in-process)"))

Its class implements `coopcode.engines.base.Engine` and takes `(model, **kw)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any

from coopcode.core.errors import UserError


@dataclass(frozen=True)
class EngineKind:
    name: str
    load: str  # "module:Class", imported only when an engine of this kind loads
    help: str  # one line for --engine's help
    called: str = ""  # what messages call it ("the embedded engine"), else "--engine NAME"
    options: tuple[str, ...] = ()  # EngineConfig fields only this engine takes
    served: bool = False  # a server: it chose its dtype and serves adapters by name
    # How it samples a training's rollouts: "in place" (the model being trained samples
    # itself), "beside" (it samples; a separate copy of the model learns), "" (it cannot).
    rollouts: str = "beside"
    # The options of its own (a plugin's engine): a dataclass of `option` fields, given as
    # `--engine-option NAME=VALUE` and passed to its class as keyword arguments (its defaults
    # declared there, once). The shipped engines' options are EngineConfig fields (`options`).
    settings: type | None = None

    @property
    def title(self) -> str:
        """How a message names it: "the embedded engine (--engine transformers)"."""
        return f"{self.called} (--engine {self.name})" if self.called else f"--engine {self.name}"

    def engine_class(self) -> Any:
        module, _, name = self.load.partition(":")
        return getattr(import_module(module), name)


ENGINE_KINDS: dict[str, EngineKind] = {kind.name: kind for kind in (
    EngineKind("transformers", "coopcode.engines.embedded.engine:TransformersEngine",
               "transformers (default, CPU or GPU)", called="the embedded engine",
               options=("deterministic", "max_batch", "kv_cache_gb"), rollouts="in place"),
    EngineKind("vllm", "coopcode.engines.served.vllm_engine:VLLMEngine",
               "vllm (in-process, optional extra)"),
    EngineKind("openai", "coopcode.engines.served.openai_engine:OpenAIEngine",
               "openai (any OpenAI-compatible server: --base-url)",
               options=("base_url", "api_key_env", "helper_model", "main_model"), served=True),
)}

# "local" names the embedded engine's rollouts too (a manifest may say it).
ROLLOUT_ALIASES = {"local": "transformers"}


def engine_kind(name: str) -> EngineKind:
    """The engine named `name` (a rollout alias included); UserError naming the known ones."""
    kind = ENGINE_KINDS.get(ROLLOUT_ALIASES.get(name, name))
    if kind is None:
        raise UserError(f"unknown engine {name!r}: use one of {', '.join(ENGINE_KINDS)}")
    return kind


def register_engine(kind: EngineKind) -> None:
    """Add (or replace) an engine: `--engine NAME` and `load_engine(model, NAME)` then load it."""
    ENGINE_KINDS[kind.name] = kind


def rollout_engine_names() -> tuple[str, ...]:
    """The engines that can sample a training's rollouts, and the old names still accepted."""
    return (*(k.name for k in ENGINE_KINDS.values() if k.rollouts), *ROLLOUT_ALIASES)
