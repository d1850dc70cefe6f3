"""One path from what a sample's agents wrote to its verdict, cooperation and reward.

`solve`, `bench`, `evaluate` and training's rollouts all judge a finished sample here:
1. `sample_jobs(written, timeout)`: the sandbox jobs: the combined program against the
   problem's hidden tests, then (for a scheme with a helper) the helper's code alone, each
   candidate function standing in for the entry point (`coopcode.collaboration.helper_alone`).
2. `judgement(written, verdicts, reward)`: the program's verdict, the pair's cooperation
   (`coopcode.written.analysis`: own work from the syntax tree, `helper_solves` from
   the helper-alone verdicts), and the reward of all that.
`judge_all` does both for many samples with one batch of sandbox jobs. So a sample gets the
same verdict, cooperation and reward whichever job produced it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from coopcode.collaboration.helper_alone import helper_alone_jobs, helper_solves
from coopcode.problems import Problem
from coopcode.rewards import Reward, RewardBreakdown, RewardInput, resolve_reward
from coopcode.schemes import has_helper
from coopcode.written.analysis import NO_HELPER, Cooperation, analyse_cooperation
from sandbox import Job, Sandbox, Verdict


@dataclass(frozen=True)
class Written:
    """What one sample's agents wrote, ready to be judged."""

    problem: Problem
    scheme: str
    main_code: str
    helper_code: str = ""
    program: str = ""  # the combined program the sandbox runs


@dataclass(frozen=True)
class Judgement:
    """A sample's verdict on the hidden tests, how the pair cooperated, and its reward."""

    verdict: Verdict
    cooperation: Cooperation
    reward: RewardBreakdown
    reward_name: str


def _pair(written: Written) -> bool:
    return has_helper(written.scheme) and bool(written.helper_code.strip())


def sample_jobs(written: Written, timeout: float) -> list[Job]:
    """The hidden-test job of the program, then the helper-alone jobs (pairs only)."""
    p = written.problem
    jobs = [Job(program=written.program, tests=p.tests, entry_point=p.entry_point, timeout=timeout)]
    if _pair(written):
        jobs += helper_alone_jobs(p, written.helper_code, timeout)
    return jobs


def reward_input(written: Written, verdict: Verdict, cooperation: Cooperation) -> RewardInput:
    p = written.problem
    return RewardInput(verdict=verdict, main_code=written.main_code,
                       helper_code=written.helper_code, program=written.program,
                       entry_point=p.entry_point, scheme=written.scheme, task_id=p.task_id,
                       analysis=cooperation)


def judgement(written: Written, verdicts: Sequence[Verdict],
              reward: Reward | str | None = None) -> Judgement:
    """The judgement of a sample from the verdicts of its `sample_jobs`, in order (`reward`
    None: the seed paper's reward for its scheme)."""
    fn = reward if isinstance(reward, Reward) else resolve_reward(reward, written.scheme)
    verdict = verdicts[0]
    if has_helper(written.scheme):
        cooperation = analyse_cooperation(
            written.helper_code, written.main_code, written.problem.entry_point,
            helper_solves(verdicts[1:]) if _pair(written) else False)
    else:
        cooperation = NO_HELPER
    return Judgement(verdict, cooperation, fn(reward_input(written, verdict, cooperation)), fn.name)


def judge_all(items: Sequence[Written], sandbox: Sandbox, reward: Reward | str | None = None,
              timeout: float = 5.0) -> list[Judgement]:
    """Judge many samples with one batch of sandbox jobs."""
    per_item = [sample_jobs(w, timeout) for w in items]
    flat = [job for jobs in per_item for job in jobs]
    verdicts = sandbox.run_many(flat)
    out, at = [], 0
    for w, jobs in zip(items, per_item):
        out.append(judgement(w, verdicts[at:at + len(jobs)], reward))
        at += len(jobs)
    return out
