"""`BenchConfig`: what a bench run measures and how it samples, each setting declared once.

Apart from `coopcode.evaluation.bench` so that the CLI can build `coopcode bench`'s options from it
without importing the bench machinery.
"""

from __future__ import annotations

from dataclasses import dataclass

from coopcode.core.inputs import MAX_TEMPERATURE, MAX_TIMEOUT
from coopcode.evaluation.at_k import check_k
from coopcode.rewards import reward_names
from coopcode.schemes import DEFAULT_SCHEME, SCHEMES, scheme_names
from coopcode.settings.options import check_options, option

DEFAULT_KS = (1, 3, 5, 10)


@dataclass(frozen=True)
class BenchConfig:
    """A bench run. Defaults follow the seed paper: n=10, temperature 0.8, HumanEval test split.

    Each field is declared once, here (`coopcode.settings.options.option`): `coopcode bench`'s options,
    the TUI's Bench form, validation and meta.json's config derive from it.
    """

    ks: tuple[int, ...] = option(DEFAULT_KS, "Comma-separated k values for pass@k and acc@k.",
                                 flags=("--k",), label="k", form=1)
    n: int = option(10, "Samples per problem.", at_least=1, form=2)
    temperature: float = option(0.8, "Sampling temperature; 0 is greedy.",
                                within=f"[0, {MAX_TEMPERATURE:g}]", label="temp", form=3)
    top_p: float = option(0.95, "Nucleus sampling.", within="(0, 1]")
    problems: str = option("humaneval:test", "humaneval[:train|test|val|fit|all], a .jsonl, a .py or a folder.")
    schemes: tuple[str, ...] = option((DEFAULT_SCHEME,), f"Comma-separated schemes: {', '.join(SCHEMES)}.",
                                      flags=("--scheme",), choices=scheme_names, noun="scheme")
    limit: int | None = option(None, "Only the first N problems.", at_least=1, form=4)
    # 384: bodies are short once the signature is given
    max_new_tokens: int = option(384, "Token budget per agent turn.", at_least=1, label="max tokens",
                                 form=5)
    seed: int = option(0, "Base seed: each sample's seed derives from it, the problem and the sample's index.")
    turns: int = option(1, "Turns; later turns revise from feedback on the public examples.", at_least=1)
    timeout: float = option(5.0, "CPU seconds per program in the sandbox.", within=f"(0, {MAX_TIMEOUT:g}]")
    label: str = option("", "Method name in the table, before the scheme [default: the adapters' run].")
    reward: str | None = option(
        None, f"The reward recorded with each sample and averaged in the table: "
        f"{', '.join(reward_names())} [default: seed-grpo for single, seed for the pairs]; "
        "a finished run is scored again under another reward without sampling.",
        choices=reward_names, noun="reward")

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
