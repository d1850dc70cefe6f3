"""`BenchConfig`: what a bench run measures and how it samples, each setting declared once.

Apart from `coopcode.evaluation.bench` so that the CLI can build `coopcode bench`'s options from it
without importing the bench machinery.
"""

from __future__ import annotations

from dataclasses import dataclass

from coopcode.collaboration.sampling import SampleSettings
from coopcode.evaluation.at_k import check_k
from coopcode.rewards import reward_names
from coopcode.schemes import DEFAULT_SCHEME, scheme_names
from coopcode.settings.options import check_options, option, option_like

DEFAULT_KS = (1, 3, 5, 10)


@dataclass(frozen=True)
class BenchConfig:
    """A bench run. Defaults follow the seed paper: n=10, temperature 0.8, HumanEval test split.

    Each field is declared once, here (`coopcode.settings.options.option`): `coopcode bench`'s options,
    the TUI's Bench form, validation and meta.json's config derive from it.
    """

    ks: tuple[int, ...] = option(DEFAULT_KS, "Comma-separated k values for pass@k and acc@k.",
                                 flags=("--k",), label="k", form=1)
    n: int = option_like(SampleSettings, "n", form=2)
    temperature: float = option_like(SampleSettings, "temperature", label="temp", form=3)
    top_p: float = option_like(SampleSettings, "top_p")
    problems: str = option("humaneval:test", "humaneval[:train|test|val|fit|all], compose[:train|val|test|all] (problems with a contract for aux), a .jsonl, a .py or a folder.")
    schemes: tuple[str, ...] = option((DEFAULT_SCHEME,), f"Comma-separated schemes: {', '.join(scheme_names())}.",
                                      flags=("--scheme",), choices=scheme_names, noun="scheme")
    limit: int | None = option(None, "Only the first N problems.", at_least=1, form=4)
    # 384: bodies are short once the signature is given
    max_new_tokens: int = option_like(SampleSettings, "max_new_tokens", label="max tokens", form=5)
    seed: int = option_like(SampleSettings, "seed")
    turns: int = option_like(SampleSettings, "turns")
    timeout: float = option_like(SampleSettings, "timeout")
    label: str = option("", "Method name in the table, before the scheme [default: the adapters' run].")
    reward: str | None = option_like(
        SampleSettings, "reward", help=f"The reward recorded with each sample and averaged in the "
        f"table: {', '.join(reward_names())} [default: seed-grpo for single, seed for the pairs]; "
        "a finished run is scored again under another reward without sampling.", form=6)

    def validate(self) -> None:
        """Raise UserError (one line naming the flag) for a value a user can get wrong."""
        check_options(self)  # each field against its choices and bounds
        check_k(self.ks, self.n)


@dataclass(frozen=True)
class BenchRun:
    """Where a bench runs and how many samples it keeps in flight: not part of its results
    (a rerun with another --concurrency resumes the same run)."""

    out: str | None = option(None, "Results folder; rerunning with the same --out resumes "
                             "[default: runs/bench-<hash of the settings>].")
    concurrency: int | None = option(None, "Samples generating at once (1: one at a time) "
                                     "[default: what fills the engine].", at_least=1)

    def validate(self) -> None:
        check_options(self)
