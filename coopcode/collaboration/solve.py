"""`solve`: one problem, both agents, the combined program run against the hidden tests.

Its settings: `coopcode.collaboration.solve_config.SolveConfig` (importable from here too).
`judge` is solve's last step on its own: one program (such as one edited by hand after a
solve, the TUI's Ctrl+B) run against the hidden tests, scored and reported the same way."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from coopcode.code_analysis.program import syntax_check
from coopcode.collaboration.judging import Judgement, Written, cut_roles, judgement, sample_jobs
from coopcode.collaboration.scheduler import Scheduler, sample_specs
from coopcode.collaboration.solve_config import SolveConfig
from coopcode.core.events import (
    AttemptReady,
    Emit,
    Finished,
    Started,
    TokenDelta,
    VerdictReady,
    ignore,
)
from coopcode.engines import Engine
from coopcode.problems import Problem
from coopcode.records.attempts import Attempt, Program
from coopcode.rewards import Reward, resolve_reward
from coopcode.schemes import PromptBook, SampleState, get_scheme, scheme_contract
from sandbox import Job, Sandbox, Verdict


@dataclass
class SolveResult:
    problem: Problem
    attempts: list[Attempt]
    seconds: float
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def best(self) -> Attempt:
        """The attempt that passed the most tests (the first one on ties)."""
        return max(self.attempts, key=lambda a: (a.verdict.n_passed if a.verdict else -1,
                                                 -a.sample))

    @property
    def passed(self) -> bool:
        return any(a.verdict is not None and a.verdict.passed for a in self.attempts)

    def to_dict(self) -> dict[str, Any]:
        best = self.best
        return {
            "task_id": self.problem.task_id,
            "entry_point": self.problem.entry_point,
            "scheme": best.scheme,
            "passed": self.passed,
            "best_sample": best.sample,
            "helper_code": best.helper_code,
            "main_code": best.main_code,
            "program": best.program.text if best.program else "",
            "verdict": best.verdict.to_dict() if best.verdict else None,
            "reward": best.reward.to_dict() if best.reward else None,
            "reward_name": best.reward_name,
            "cooperation": best.to_dict()["cooperation"],
            "attempts": [a.to_dict() for a in self.attempts],
            "seconds": round(self.seconds, 2),
            "meta": self.meta,
        }


def written(problem: Problem, attempt: Attempt) -> Written:
    """What an attempt's agents wrote, for the judging path."""
    return Written(problem, attempt.scheme, attempt.main_code, attempt.helper_code,
                   attempt.program.text if attempt.program else "",
                   scheme_contract(problem, attempt.scheme, attempt.contract),
                   cut_roles((o.role, o.finish_reason) for o in attempt.outputs))


def final_jobs(problem: Problem, attempt: Attempt, timeout: float) -> list[Job]:
    """A finished sample's sandbox jobs: the hidden tests, then the helper alone."""
    return sample_jobs(written(problem, attempt), timeout)


def score(attempt: Attempt, verdicts: list[Verdict], problem: Problem,
          reward: Reward | str | None = None) -> Judgement:
    """Attach the verdict, cooperation and reward from the verdicts of `final_jobs`
    (`reward` None: the seed paper's for the attempt's scheme); the judgement is returned
    for what an attempt does not keep (each agent's own reward)."""
    found = judgement(written(problem, attempt), verdicts, reward)
    attempt.verdict, attempt.cooperation = found.verdict, found.cooperation
    attempt.reward, attempt.reward_name = found.reward, found.reward_name
    attempt.checks = found.checks
    return found


def _judged(problem: Problem, attempt: Attempt, verdicts: list[Verdict], reward: str | None,
            emit: Emit) -> None:
    """Score an attempt the sandbox has judged and report its VerdictReady."""
    found = score(attempt, verdicts, problem, reward)
    assert attempt.verdict is not None
    record = attempt.to_dict()
    emit(VerdictReady(task_id=problem.task_id, sample=attempt.sample, scheme=attempt.scheme,
                      verdict=attempt.verdict.to_dict(),
                      reward=attempt.reward.to_dict() if attempt.reward else {},
                      cooperation=record["cooperation"], agents=record["agents"],
                      agent_rewards=dict(found.agent_rewards)))


def judge(
    problem: Problem,
    program: str,
    sandbox: Sandbox,
    config: SolveConfig = SolveConfig(),
    *,
    helper_code: str = "",
    main_code: str | None = None,
    emit: Emit = ignore,
) -> Attempt:
    """Judge `program` as `solve` judges each attempt it writes: run against the problem's
    hidden tests (`config.timeout`), scored with `config.reward` for `config.scheme`, reported
    as a VerdictReady. `program` runs as given (not combined from the agents' code); the
    reward reads `helper_code` and `main_code`, the agents' code (main's: `program` when not
    given). The attempt returned carries the verdict and reward; SandboxUnavailable when the
    sandbox could not judge it."""
    main = program if main_code is None else main_code
    ok, err = syntax_check(program)
    attempt = Attempt(problem.task_id, 0, config.scheme, helper_code=helper_code, main_code=main,
                      program=Program(text=program, context="", helper_code=helper_code,
                                      main_code=main, syntax_ok=ok, syntax_error=err))
    verdicts = sandbox.run_many(final_jobs(problem, attempt, config.timeout))
    _judged(problem, attempt, verdicts, config.reward, emit)
    return attempt


def solve(
    problem: Problem,
    engine: Engine,
    sandbox: Sandbox,
    config: SolveConfig = SolveConfig(),
    *,
    helper_adapter: str | None = None,
    main_adapter: str | None = None,
    emit: Emit = ignore,
    cancel: threading.Event | None = None,
    concurrency: int | None = None,
) -> SolveResult:
    """Run the scheme on `problem`, execute every attempt in the sandbox, report events."""
    started = time.time()
    meta = {
        "task_id": problem.task_id,
        "scheme": config.scheme,
        "model": engine.model_name,
        "model_fingerprint": engine.model_fingerprint,
        "helper_adapter": helper_adapter,
        "main_adapter": main_adapter,
        "sandbox": sandbox.name,
        "n": config.n,
        "temperature": config.temperature,
        "seed": config.seed,
        "turns": config.turns,
        "reward": resolve_reward(config.reward, config.scheme).name,
    }
    emit(Started(job="solve", total=config.n, meta=meta))
    retries_before = int(getattr(sandbox, "infra_retries", 0))

    def on_delta(state: SampleState, role: str, turn: int, text: str, tokens: int) -> None:
        emit(TokenDelta(task_id=problem.task_id, agent=role, sample=state.sample, turn=turn,
                        text=text, tokens=tokens))

    def jobs(state: SampleState) -> list[Job]:
        a = state.attempt
        emit(AttemptReady(task_id=problem.task_id, sample=a.sample, scheme=a.scheme,
                          helper_code=a.helper_code, main_code=a.main_code,
                          program=a.program.text if a.program else "",
                          syntax_ok=bool(a.program and a.program.syntax_ok),
                          contract=a.contract))
        return final_jobs(problem, a, config.timeout)

    def on_done(state: SampleState, verdicts: list[Verdict]) -> None:
        _judged(problem, state.attempt, verdicts, config.reward, emit)

    scheme = get_scheme(config.scheme)
    specs = sample_specs(problem, scheme, range(config.n), config.sampling(),
                         helper_adapter=helper_adapter, main_adapter=main_adapter, turns=config.turns)
    book = PromptBook(engine)
    for spec in specs:  # states made here, so a cancelled run still shows what was written
        spec.state = SampleState(problem, spec.sample, book,
                                 Attempt(problem.task_id, spec.sample, scheme.name))
    Scheduler(engine, sandbox, concurrency=concurrency, feedback_timeout=config.timeout,
              on_delta=on_delta, cancel=cancel).run(specs, on_done, final_jobs=jobs)
    attempts = [spec.state.attempt for spec in specs if spec.state is not None]
    if cancel is not None and cancel.is_set():
        # A cancelled generation is unfinished code: report it, do not score it.
        result = SolveResult(problem, attempts, time.time() - started, {**meta, "cancelled": True})
        emit(Finished(job="solve", summary={"passed": False, "cancelled": True,
                                            "seconds": round(result.seconds, 2)}))
        return result
    meta["infra_retries"] = int(getattr(sandbox, "infra_retries", 0)) - retries_before
    result = SolveResult(problem, attempts, time.time() - started, meta)
    emit(Finished(job="solve", summary={"passed": result.passed, "best_sample": result.best.sample,
                                        "seconds": round(result.seconds, 2)}))
    return result
