"""The scheduler: many problems in flight, a concurrency bound, the sandbox overlapped with
generation, merged identical asks, cancellation and engine errors."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from coopcode.collaboration import solve
from coopcode.collaboration.scheduler import SampleSpec, Scheduler, sample_specs
from coopcode.engines import SamplingParams, ScriptedEngine
from coopcode.problems import load_humaneval, load_problem_file
from coopcode.schemes import SampleState, get_scheme
from sandbox import Verdict

PROBLEMS = load_humaneval("test")[:8]
PARAMS = SamplingParams(temperature=0.8, seed=1)


def answer(prompt: str, adapter: str | None, index: int) -> str:
    """A chat answer that closes the fence at once (the program is the bare signature)."""
    return "    return None\n```"


def specs_for(problems: list, scheme: str = "sequential", n: int = 1) -> list[SampleSpec]:
    return [s for p in problems for s in sample_specs(p, get_scheme(scheme), range(n), PARAMS)]


def test_asks_of_many_problems_reach_the_engine_together() -> None:
    engine = ScriptedEngine(answer, delay=0.05)
    done: list[SampleState] = []
    stats = Scheduler(engine, concurrency=8).run(specs_for(PROBLEMS), lambda s, _v: done.append(s))
    assert len(done) == 8 and stats.samples == 8 and stats.requests == 16
    tasks_per_call = [{r.prompt.split("def ")[1][:20] for r in call} for call in engine.calls]
    # While a batch generates, every ask that gets ready queues for the next: the 7 helpers
    # that arrive during the first batch go in as one (a batch engine; the embedded engine
    # lets them join between decode steps instead: tests/test_engine_batching.py).
    assert max(len(t) for t in tasks_per_call) >= 4


def test_concurrency_one_runs_one_sample_at_a_time() -> None:
    engine = ScriptedEngine(answer, delay=0.001)
    order: list[str] = []
    Scheduler(engine, concurrency=1).run(specs_for(PROBLEMS[:3], n=2),
                                          lambda s, _v: order.append(s.problem.task_id))
    assert all(len(call) == 1 for call in engine.calls)
    assert len(engine.calls) == 12  # 3 problems x 2 samples x (helper, main), one by one
    assert order == [p.task_id for p in PROBLEMS[:3] for _ in range(2)]


def test_final_jobs_run_while_generation_goes_on(process_sandbox: object) -> None:
    generated: list[float] = []

    def slow(prompt: str, adapter: str | None, index: int) -> str:
        generated.append(time.monotonic())
        return "    return None\n```"

    engine = ScriptedEngine(slow, delay=0.02)
    sent: list[float] = []
    verdicts: list[Verdict] = []

    def final_jobs(s: SampleState) -> object:
        sent.append(time.monotonic())
        return solve.final_jobs(s.problem, s.attempt, 5.0)

    specs = specs_for(PROBLEMS[:6], scheme="single")
    Scheduler(engine, process_sandbox, concurrency=2).run(  # type: ignore[arg-type]
        specs, lambda s, v: verdicts.extend(v), final_jobs=final_jobs)  # type: ignore[arg-type]
    assert len(verdicts) == 6 and all(v.status == "failed" for v in verdicts)
    # The first program went to the sandbox before the last sample began to generate.
    assert sent[0] < generated[-1]


def test_identical_asks_are_generated_once() -> None:
    engine = ScriptedEngine(answer)
    scheme = get_scheme("single")
    adapters = {"single": None}
    specs = [SampleSpec(PROBLEMS[0], i, scheme, PARAMS, lambda role, turn: (42, 0), adapters)
             for i in range(4)]
    done: list[SampleState] = []
    stats = Scheduler(engine).run(specs, lambda s, _v: done.append(s))
    assert stats.requests == 1 and stats.merged == 3
    assert len({s.attempt.main_code for s in done}) == 1 and len(done) == 4


def test_cancel_stops_generation_and_records_nothing_unfinished() -> None:
    cancel = threading.Event()
    engine = ScriptedEngine(answer, delay=0.05, chunk=1)
    done: list[SampleState] = []
    timer = threading.Timer(0.3, cancel.set)
    timer.start()
    started = time.monotonic()
    stats = Scheduler(engine, concurrency=4, cancel=cancel).run(
        specs_for(PROBLEMS, n=4), lambda s, _v: done.append(s))
    assert stats.cancelled and time.monotonic() - started < 10
    assert len(done) < 32
    assert all(o.finish_reason != "cancelled" for s in done for o in s.attempt.outputs)


def test_an_engine_error_ends_the_run_with_that_error() -> None:
    def broken(prompt: str, adapter: str | None, index: int) -> str:
        raise RuntimeError("the model fell over")

    with pytest.raises(RuntimeError, match="fell over"):
        Scheduler(ScriptedEngine(broken)).run(specs_for(PROBLEMS[:2]), lambda s, _v: None)


def test_multi_turn_revises_after_public_feedback(process_sandbox: object) -> None:
    problem = load_problem_file(Path(__file__).resolve().parent.parent / "examples" / "below_zero.py")

    def wrong_then_right(prompt: str, adapter: str | None, index: int) -> str:
        if "Revise your function" in prompt:
            return "    return any(sum(operations[:i + 1]) < 0 for i in range(len(operations)))\n```"
        return "    return True\n```"

    done: list[SampleState] = []
    specs = sample_specs(problem, get_scheme("single"), range(2), PARAMS, turns=2)
    Scheduler(ScriptedEngine(wrong_then_right), process_sandbox).run(  # type: ignore[arg-type]
        specs, lambda s, _v: done.append(s))
    for s in done:
        assert s.attempt.turns_used == 2 and "FAILED" in s.attempt.feedback
        assert [o.turn for o in s.attempt.outputs] == [1, 2]
        assert "sum(operations" in s.attempt.main_code
