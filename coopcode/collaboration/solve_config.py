"""`SolveConfig`: how `coopcode solve` (and the TUI's Collaborate screen) solves one problem,
each setting declared once.

Apart from `coopcode.collaboration.solve` so that the CLI can build `coopcode solve`'s options from it
without importing the generation machinery.
"""

from __future__ import annotations

from dataclasses import dataclass

from coopcode.engines.base import SamplingParams
from coopcode.evaluation.bench_config import BenchConfig
from coopcode.rewards import reward_names
from coopcode.schemes import DEFAULT_SCHEME, SCHEMES, scheme_names
from coopcode.settings.options import check_options, option, option_like


@dataclass(frozen=True)
class SolveConfig:
    """How to solve one problem: greedy by default, `solve` shows the model's best guess."""

    scheme: str = option(DEFAULT_SCHEME, f"{', '.join(SCHEMES)}.", choices=scheme_names, noun="scheme")
    n: int = option_like(BenchConfig, "n", default=1, help="Attempts; the best is shown.")
    # Where solve's defaults differ from bench's, on purpose: greedy (the model's best guess)
    # and a generous budget (one problem, watched).
    temperature: float = option_like(BenchConfig, "temperature", default=0.0)
    top_p: float = option_like(BenchConfig, "top_p")
    max_new_tokens: int = option_like(BenchConfig, "max_new_tokens", default=512)
    seed: int = option_like(BenchConfig, "seed", help="Base seed: each attempt's seed derives "
                            "from it and the attempt's index.")
    turns: int = option_like(BenchConfig, "turns")
    timeout: float = option_like(BenchConfig, "timeout")
    reward: str | None = option_like(
        BenchConfig, "reward", help=f"The reward to score with: {', '.join(reward_names())} (the "
        "README's Rewards) [default: seed-grpo for one agent, seed for a pair].")

    def validate(self) -> None:
        """Raise UserError (one line naming the flag) for a value a user can get wrong."""
        check_options(self)

    def sampling(self) -> SamplingParams:
        return SamplingParams(n=1, max_new_tokens=self.max_new_tokens,
                              temperature=self.temperature, top_p=self.top_p, seed=self.seed)
