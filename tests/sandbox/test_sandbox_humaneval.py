"""All 164 HumanEval canonical solutions pass and a wrong variant of each fails, through both
backends; and they still all pass while both cores are busy (timeouts are CPU time)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sandbox import Job
from sandbox.pool import WorkerPool
from tests.load_helpers import spinning

# Wrap the canonical solution so it returns a value of the same type that is off by a bit:
# a stronger check than `return None`, since the tests then compare against near misses.
WRONG = """

_coopcode_right = {entry}
def {entry}(*args, **kwargs):
    value = _coopcode_right(*args, **kwargs)
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return value + [None]
    if isinstance(value, tuple):
        return value + (None,)
    return "wrong"
"""


def canonical_jobs(problems: dict[str, dict[str, Any]]) -> list[Job]:
    return [Job(program=p["prompt"] + p["canonical_solution"], tests=p["test"],
                entry_point=p["entry_point"]) for p in problems.values()]


def wrong_jobs(problems: dict[str, dict[str, Any]]) -> list[Job]:
    return [Job(program=p["prompt"] + p["canonical_solution"] + WRONG.format(entry=p["entry_point"]),
                tests=p["test"], entry_point=p["entry_point"]) for p in problems.values()]


def failures(problems: dict[str, dict[str, Any]], verdicts: list[Any]) -> list[tuple[str, str, str]]:
    return [(task, v.status, v.detail or next((t.message for t in v.tests if not t.passed), ""))
            for task, v in zip(problems, verdicts) if not v.passed]


@pytest.mark.slow
def test_canonical_solutions_all_pass(sandbox2: WorkerPool, humaneval: dict[str, Any]) -> None:
    verdicts = sandbox2.run_many(canonical_jobs(humaneval))
    assert len(verdicts) == 164
    assert failures(humaneval, verdicts) == []


@pytest.mark.slow
def test_wrong_variants_all_fail(sandbox2: WorkerPool, humaneval: dict[str, Any]) -> None:
    verdicts = sandbox2.run_many(wrong_jobs(humaneval))
    passed = [task for task, v in zip(humaneval, verdicts) if v.passed]
    assert passed == []
    assert {v.status for v in verdicts} <= {"failed", "error"}


@pytest.fixture
def both_cores_busy() -> Iterator[None]:
    """Two busy loops, one per core, for the duration of a test."""
    with spinning(2):
        yield


@pytest.mark.slow
def test_canonical_solutions_pass_on_a_loaded_machine(
    sandbox2: WorkerPool, humaneval: dict[str, Any], both_cores_busy: None
) -> None:
    # A tight budget on purpose: wall-clock timeouts at this size would turn slow-but-correct
    # programs into timeouts once the cores are shared; CPU-time budgets do not.
    jobs = [Job(program=j.program, tests=j.tests, entry_point=j.entry_point, timeout=2.0)
            for j in canonical_jobs(humaneval)]
    verdicts = sandbox2.run_many(jobs)
    assert failures(humaneval, verdicts) == []


BURN = """
import time
def burn(x):
    start = time.process_time()
    while time.process_time() - start < 0.6:  # 0.6 s of CPU, however long that takes
        pass
    return x
"""


@pytest.mark.slow
def test_cpu_budget_not_wall_clock_decides(sandbox2: WorkerPool, both_cores_busy: None) -> None:
    # Each job needs 0.6 of its 1.0 CPU seconds (the rest is headroom for start-up on a
    # loaded machine). Two more spinners leave each of the two running jobs about a third
    # of a core, so a job takes well over 1 s of wall time, and must still pass.
    jobs = [Job(program=BURN, tests="assert burn(1) == 1\n", entry_point="burn", timeout=1.0)
            for _ in range(4)]
    with spinning(2):
        verdicts = sandbox2.run_many(jobs)
    assert [v.status for v in verdicts] == ["passed"] * 4
    assert max(v.duration for v in verdicts) > 1.0
