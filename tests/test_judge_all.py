"""`judge_all`: many samples judged with one batch of sandbox jobs, each sample as soon as its
last verdict lands, while the sandbox still runs the rest; the same judgements as judging
each sample after the whole batch. Real process sandbox, real HumanEval problems."""

from __future__ import annotations

import time
from typing import Any

import pytest

from coopcode.collaboration.judging import Written, judge_all, judgement, sample_jobs
from coopcode.problems import load_problems
from coopcode.rewards import Reward, RewardBreakdown, RewardInput, resolve_reward


def _written(scheme: str = "single") -> list[Written]:
    problems = load_problems("humaneval")[:6]
    out = []
    for i, p in enumerate(problems):
        body = p.canonical_solution if i % 2 == 0 else "    return None\n"
        program = p.prompt + body
        out.append(Written(p, scheme, program, program=program))
    return out


def test_the_batch_gives_what_judging_each_sample_after_it_gives(process_sandbox: Any) -> None:
    items = _written()
    judged = judge_all(items, process_sandbox, timeout=10.0)
    for w, j in zip(items, judged, strict=True):
        alone = judgement(w, process_sandbox.run_many(sample_jobs(w, 10.0)))
        assert (j.verdict.passed, j.verdict.pass_fraction) == (alone.verdict.passed,
                                                             alone.verdict.pass_fraction)
        assert j.reward == alone.reward and j.checks == alone.checks
    assert [j.verdict.passed for j in judged] == [True, False, True, False, True, False]


def test_a_sample_is_judged_while_the_sandbox_runs_the_rest(process_sandbox: Any) -> None:
    """The last sample sleeps 3 s: the first ones are judged (their reward called) before it
    ends, not after the batch."""
    items = _written()
    slow = items[-1].problem
    sleeper = slow.prompt + "    import time\n    time.sleep(3)\n    return None\n"
    items[-1] = Written(slow, "single", sleeper, program=sleeper)
    seen: list[float] = []
    paper = resolve_reward(None, "single")

    def timed(inp: RewardInput) -> RewardBreakdown:
        seen.append(time.monotonic())
        return paper(inp)

    reward = Reward("timed", timed, paper.terms, "the paper's, timed")
    finished: list[float] = []
    judge_all(items, process_sandbox, reward, timeout=10.0,
              on_result=lambda _k, _v: finished.append(time.monotonic()))
    assert len(seen) == len(items)
    assert min(seen) < max(finished) - 1.0  # judged while the sleeper still ran


def test_a_sample_that_cannot_be_judged_fails_the_batch(process_sandbox: Any) -> None:
    def broken(inp: RewardInput) -> RewardBreakdown:
        return RewardBreakdown(stray=1.0)

    reward = Reward("broken", broken, ("syntax",), "returns a term it did not declare")
    with pytest.raises(ValueError, match="stray"):
        judge_all(_written(), process_sandbox, reward, timeout=10.0)
