"""The settings of `coopcode evaluate` and `compare`, declared once.

Settings these commands share with `bench` are `option_like` BenchConfig's (one declaration;
a different default says so); the groups every command shares (the model, the sandbox,
`--json`) are in `coopcode.settings.common`. Cheap to import: the CLI builds its options here.
"""

from __future__ import annotations

from dataclasses import dataclass

from coopcode.collaboration.solve_config import SolveConfig
from coopcode.evaluation.bench_config import BenchConfig
from coopcode.settings.options import check_options, option, option_like


@dataclass(frozen=True)
class EvaluateConfig:
    """Score a samples file under a reward."""

    ks: tuple[int, ...] = option_like(BenchConfig, "ks", default=(1, 10))
    problems: str = option_like(BenchConfig, "problems", default="humaneval:all",
                                help="The problems the samples answer: humaneval[:train|test|val|fit|all], "
                                "a .jsonl, a .py or a folder.")
    out: str | None = option(None, "Write one JSONL line per sample: its verdict and reward.")
    rescore: bool = option(False, "SAMPLES is a bench run (its folder or samples file): write the "
                           "new verdicts, rewards and cooperation back into it (summary.json and "
                           "report.md too) and list every sample whose verdict changed.")
    reward: str | None = option_like(SolveConfig, "reward")
    timeout: float = option_like(BenchConfig, "timeout")

    def validate(self) -> None:
        check_options(self)


@dataclass(frozen=True)
class CompareConfig:
    """Paired comparison of bench runs."""

    ks: tuple[int, ...] | None = option_like(BenchConfig, "ks", default=None, help=(
        "Comma-separated k values [default: the k both runs were benched with]."))
    n: int | None = option(None, "Use samples 0..N-1 of each problem only (runs benched with the "
                           "same --seed then share their seeds).", at_least=1)
    markdown: bool = option(False, "Print a markdown table (for a paper or an issue).")
    out: str | None = option(None, "Also write compare.md, compare.json and a per-problem pass@1 "
                             "figure per pair here.")

    def validate(self) -> None:
        check_options(self)
