"""`SolveConfig`: how `coopcode solve` (and the TUI's Collaborate screen) solves one problem,
each setting declared once.

Apart from `coopcode.collaboration.solve` so that the CLI can build `coopcode solve`'s options from it
without importing the generation machinery.
"""

from __future__ import annotations

from dataclasses import dataclass

from coopcode.collaboration.sampling import SampleSettings, sampling_params
from coopcode.engines.base import SamplingParams
from coopcode.schemes import DEFAULT_SCHEME, scheme_names
from coopcode.settings.options import check_options, option, option_like


@dataclass(frozen=True)
class SolveConfig:
    """How to solve one problem: greedy by default, `solve` shows the model's best guess."""

    scheme: str = option(DEFAULT_SCHEME, f"{', '.join(scheme_names())}.", choices=scheme_names, noun="scheme")
    n: int = option_like(SampleSettings, "n", default=1, help="Attempts; the best is shown.")
    # Where solve's defaults differ from bench's, on purpose: greedy (the model's best guess)
    # and a generous budget (one problem, watched).
    temperature: float = option_like(SampleSettings, "temperature", default=0.0)
    top_p: float = option_like(SampleSettings, "top_p")
    max_new_tokens: int = option_like(SampleSettings, "max_new_tokens", default=512)
    seed: int = option_like(SampleSettings, "seed", help="Base seed: each attempt's seed derives "
                            "from it and the attempt's index.")
    turns: int = option_like(SampleSettings, "turns")
    timeout: float = option_like(SampleSettings, "timeout")
    reward: str | None = option_like(SampleSettings, "reward")

    def validate(self) -> None:
        """Raise UserError (one line naming the flag) for a value a user can get wrong."""
        check_options(self)

    def sampling(self) -> SamplingParams:
        return sampling_params(self)
