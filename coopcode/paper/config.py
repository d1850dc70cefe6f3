"""`TableConfig`: the settings of `coopcode paper-table`, declared once (the benches' settings
are `option_like` BenchConfig's, the trainings' TrainConfig's). Cheap to import: the CLI builds
its options here."""

from __future__ import annotations

from dataclasses import dataclass

from coopcode.evaluation.bench_config import BenchConfig
from coopcode.settings.options import check_options, option, option_like
from coopcode.training.config import TrainConfig


@dataclass(frozen=True)
class TableConfig:
    """The seed paper's Table 1: its rows, the adapters' runs, the benches' and trainings'
    settings (the benches' defaults are the paper's: n=10, k up to 10, the test split)."""

    out: str | None = option(None, "Table folder: one bench folder per row (resumed when rerun), "
                             "table.md, table.json, table.png, summaries/ [default: runs/table1]. "
                             "With --from-summaries: where to write the table files (else it is "
                             "only printed).")
    rows: str = option("single,pair,grpo,magrpo", "Comma-separated rows: single, pair, grpo, magrpo "
                       "(the seed paper's) and magrpo-seed1, magrpo-coop, magrpo-coop-seed1 (ours: "
                       "a replicate, the cooperative reward).")
    grpo_adapter: str | None = option(None, "The GRPO run folder [default: checkpoints/grpo-0.5b, "
                                      "or checkpoints/grpo-<model>]; trained (or resumed) when "
                                      "not complete.")
    magrpo_adapter: str | None = option(None, "The MAGRPO run folder [default: "
                                        "checkpoints/magrpo-0.5b, or checkpoints/magrpo-<model>].")
    adapter: tuple[str, ...] = option((), "ROW=FOLDER: the run folder of any trained row (repeat), "
                                      "e.g. magrpo-coop=runs/my-coop [default: "
                                      "checkpoints/<algo>[-<reward>]-0.5b[-seed<N>]].", repeat=True)
    no_train: bool = option(False, "Bench the adapters as they are; refuse rows whose adapters "
                            "are not trained.")
    train_steps: int = option(60, "Steps of each training started here (both: the same budget).",
                              at_least=1)
    n: int = option_like(BenchConfig, "n")
    ks: tuple[int, ...] = option_like(BenchConfig, "ks", default=(1, 3, 5, 10))
    temperature: float = option_like(BenchConfig, "temperature",
                                     help="Sampling temperature of the benches.")
    problems: str = option_like(BenchConfig, "problems",
                                help="The benches' problems: humaneval[:split], a .jsonl, a .py "
                                "or a folder.")
    limit: int | None = option_like(BenchConfig, "limit")
    max_new_tokens: int = option_like(BenchConfig, "max_new_tokens",
                                      help="The benches' token budget per agent turn.")
    # 192: the seed paper's training budget, shorter than `coopcode train`'s own default
    train_max_new_tokens: int = option_like(TrainConfig, "max_new_tokens", default=192,
                                            flags=("--train-max-new-tokens",),
                                            help="The trainings' token budget per completion "
                                            "(both: the same).")
    from_summaries: tuple[str, ...] = option(
        (), "Build the table from these row summaries (<row>.json, as written to "
        "<out>/summaries/) and run nothing; repeat it to take rows from a later folder instead "
        "(a replicate run); with --out, also write table.md, table.json, table.png and "
        "summaries/ there.", repeat=True)

    def validate(self) -> None:
        check_options(self)

    def bench_config(self) -> BenchConfig:
        """The benches' settings (validated: k > n fails here, before anything loads)."""
        config = BenchConfig(ks=self.ks, n=self.n, temperature=self.temperature,
                             problems=self.problems, limit=self.limit,
                             max_new_tokens=self.max_new_tokens)
        config.validate()
        return config
