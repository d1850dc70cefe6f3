"""How samples are drawn and judged, each setting declared once: `SampleSettings` is what
`bench`, `solve` and training's options are declared like (`option_like`), its defaults are
the engine's (`SamplingParams`), and `sampling_params` is the one place a command's settings
become the engine's sampling parameters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coopcode.core.inputs import MAX_TEMPERATURE, MAX_TIMEOUT
from coopcode.engines.base import SamplingParams
from coopcode.rewards import reward_names
from coopcode.settings.options import option

ENGINE_DEFAULTS = SamplingParams()


@dataclass(frozen=True)
class SampleSettings:
    """The sampling and judging settings bench, solve and training share (bench's defaults:
    the seed paper's n=10, temperature 0.8)."""

    n: int = option(10, "Samples per problem.", at_least=1)
    temperature: float = option(ENGINE_DEFAULTS.temperature, "Sampling temperature; 0 is greedy.",
                                within=f"[0, {MAX_TEMPERATURE:g}]")
    top_p: float = option(ENGINE_DEFAULTS.top_p, "Nucleus sampling.", within="(0, 1]")
    max_new_tokens: int = option(ENGINE_DEFAULTS.max_new_tokens, "Token budget per agent turn.",
                                 at_least=1)
    seed: int = option(ENGINE_DEFAULTS.seed, "Base seed: each sample's seed derives from it, the "
                       "problem and the sample's index.")
    turns: int = option(1, "Turns; later turns revise from feedback on the public examples.", at_least=1)
    timeout: float = option(5.0, "CPU seconds per program in the sandbox.", within=f"(0, {MAX_TIMEOUT:g}]")
    reward: str | None = option(
        None, f"The reward to score with: {', '.join(reward_names())} (docs/guide/rewards.md) "
        "[default: seed-grpo for one agent, seed for a pair].", choices=reward_names, noun="reward")


def sampling_params(settings: Any) -> SamplingParams:
    """The engine's sampling parameters for a command's settings (anything with
    `max_new_tokens`, `temperature`, `top_p` and, where it has one, `seed`): one completion per
    request, each sample's own seed derived from `seed` by the scheduler."""
    return SamplingParams(n=1, max_new_tokens=settings.max_new_tokens,
                          temperature=settings.temperature, top_p=settings.top_p,
                          seed=getattr(settings, "seed", ENGINE_DEFAULTS.seed))
