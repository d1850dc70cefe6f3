"""`SolveConfig`: how `coopcode solve` (and the TUI's Collaborate screen) solves one problem,
each setting declared once.

Apart from `coopcode.solve` so that the CLI can build `coopcode solve`'s options from it
without importing the generation machinery.
"""

from __future__ import annotations

from dataclasses import dataclass

from coopcode.engines.base import SamplingParams
from coopcode.inputs import MAX_TEMPERATURE, MAX_TIMEOUT
from coopcode.options import check_options, option
from coopcode.rewards import reward_names
from coopcode.schemes import DEFAULT_SCHEME, SCHEMES


@dataclass(frozen=True)
class SolveConfig:
    """How to solve one problem: greedy by default, `solve` shows the model's best guess."""

    scheme: str = option(DEFAULT_SCHEME, f"{', '.join(SCHEMES)}.", choices=SCHEMES, noun="scheme")
    n: int = option(1, "Attempts; the best is shown.", at_least=1)
    temperature: float = option(0.0, "Sampling temperature; 0 is greedy.",
                                within=f"[0, {MAX_TEMPERATURE:g}]")
    top_p: float = option(0.95, "Nucleus sampling.", within="(0, 1]")
    max_new_tokens: int = option(512, "Token budget per agent turn.", at_least=1)
    seed: int = option(0, "Base seed: each attempt's seed derives from it and the attempt's index.")
    turns: int = option(1, "Turns; later turns revise from feedback on the public examples.",
                        at_least=1)
    timeout: float = option(5.0, "CPU seconds per program in the sandbox.",
                            within=f"(0, {MAX_TIMEOUT:g}]")
    reward: str | None = option(
        None, f"The reward to score with: {', '.join(reward_names())} (the README's Rewards) "
        "[default: seed-grpo for one agent, seed for a pair].", choices=reward_names(),
        noun="reward")

    def validate(self) -> None:
        """Raise UserError (one line naming the flag) for a value a user can get wrong."""
        check_options(self)

    def sampling(self) -> SamplingParams:
        return SamplingParams(n=1, max_new_tokens=self.max_new_tokens,
                              temperature=self.temperature, top_p=self.top_p, seed=self.seed)
