"""The Engine interface: turn prompts into sampled completions, streaming deltas as they come.

Implementations: `TransformersEngine` (default: one base model in memory, helper and main as
named LoRA adapters switched per request), `ScriptedEngine` (deterministic, for tests and
UI work), `VLLMEngine` (GPU machines, lazy import). An OpenAI-compatible HTTP engine can
implement the same few methods.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

# (request index, sample index, text delta, tokens): `tokens` is how many newly sampled tokens
# the delta covers. Text that could begin a stop string is held back, so a delta may cover
# several tokens, and a finished sample's last delta may carry tokens with no text (EOS, the
# stop string itself); a sample's deltas add up to its text and to its n_tokens. Called from
# the generating thread.
DeltaCallback = Callable[[int, int, str, int], None]


@dataclass(frozen=True)
class SamplingParams:
    n: int = 1  # completions per prompt
    max_new_tokens: int = 384
    temperature: float = 0.8  # 0 means greedy
    top_p: float = 0.95
    seed: int = 0  # sample i of a request uses seed derive_seed(seed, i): batch-independent
    stop: tuple[str, ...] = ()  # generation of a sample ends at the first of these (excluded)

    def with_(self, **changes: object) -> SamplingParams:
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class GenerationRequest:
    prompt: str  # fully rendered text: chat template (if any) already applied
    params: SamplingParams = field(default_factory=SamplingParams)
    adapter: str | None = None  # a loaded adapter's name; None is the bare base model


@dataclass
class Completion:
    text: str  # generated text, cut before the stop string
    n_tokens: int
    finish_reason: str  # "stop" (EOS or stop string), "length", "cancelled"
    token_ids: list[int] = field(default_factory=list)  # sampled ids (through the stop)
    seconds: float = 0.0  # wall time of the batch this sample was generated in


def derive_seed(seed: int, index: int) -> int:
    """A per-sample seed, so sample i is the same whatever batch it was generated in."""
    return (seed * 1_000_003 + index * 7919 + 0x9E3779B9) % (2**63 - 1)


class Engine(ABC):
    """Generates completions for a base model with optional named adapters."""

    name: str = "engine"
    model_name: str = ""
    model_fingerprint: str = ""
    instruct: bool = True  # prompts use the chat template (else plain completion)
    # True when a sample's text depends only on its prompt, params and seed, never on what
    # it was batched with (see TransformersEngine's `deterministic`).
    deterministic: bool = False

    @abstractmethod
    def generate(
        self,
        requests: Sequence[GenerationRequest],
        on_delta: DeltaCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> list[list[Completion]]:
        """`params.n` completions for each request, in request order."""

    @abstractmethod
    def render_chat(self, messages: list[dict[str, str]]) -> str:
        """The prompt text for a chat, ending where the assistant's answer begins."""

    def load_adapter(self, name: str, path: str) -> None:
        """Make adapter `path` available as `name` (raise ModelError when unusable)."""
        raise NotImplementedError(f"{self.name} engine does not support adapters")

    def adapters(self) -> dict[str, str]:
        """Loaded adapters: name -> path."""
        return {}

    def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 4)

    def close(self) -> None:  # noqa: B027 - an optional hook, not abstract
        """Release the model (engines may hold GBs)."""
