"""The `compose` problem set: two HumanEval steps composed, g then f, with a contract for g.

Read from the committed `data/compose.jsonl` (built by `python
scripts/compose_build.py`; docs/compose.md shows ten of them). Splits by source
problem: `train` from humaneval:fit, `val` from humaneval:val, `test` from humaneval:test,
so no HumanEval problem is a step on two sides. `compose` alone is the test split.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from coopcode.core.errors import ProblemError
from coopcode.core.inputs import read_jsonl
from coopcode.problems.humaneval import problem_from_record
from coopcode.problems.problem import Problem

DATA = Path(__file__).resolve().parent / "data" / "compose.jsonl"
SPLITS = ("train", "val", "test", "all")
# The HumanEval split each compose split draws its steps from: no source is on two sides.
SPLIT_SOURCES = {"train": "fit", "val": "val", "test": "test"}


@lru_cache(maxsize=1)
def _all_compose() -> tuple[tuple[str, Problem], ...]:
    return tuple((record.get("split", ""), problem_from_record(record, "compose", f"{DATA}:{line}"))
                 for line, record in read_jsonl(DATA, "problems file", ProblemError))


def load_compose(split: str = "test") -> list[Problem]:
    """The compose problems of one split ('train', 'val', 'test' or 'all'), by name."""
    if split not in SPLITS:
        raise ProblemError(f"unknown compose split {split!r}: use one of {', '.join(SPLITS)}")
    return [p for s, p in _all_compose() if split in ("all", s)]
