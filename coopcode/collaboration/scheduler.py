"""The runner of every job: many samples in flight, the engine kept full, the sandbox overlapped.

Each sample is a generator of steps (`coopcode.schemes.sample_steps`): the asks of a step go
to the engine together with every other sample's ready asks (a helper's first turn, a main
turn whose helper has answered, a revision whose feedback is back), and whatever each sample
asks next goes in as soon as its answers are back, so a continuously batching engine never
waits for a round to end. Public-example checks and each finished sample's final job (the
hidden tests, in a bench) run on the sandbox's workers meanwhile.

Samples start in the order given, at most `concurrency` generating at once. Identical asks
(same prompt, adapter, settings and seed) in one run are generated once: that is how a
training step's cross-joint samples share their helper's completion.

Vocabulary as vLLM's scheduler has it: samples *waiting* to start, *running* (generating),
*finishing* (their final job in the sandbox), done.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from coopcode.engines import Completion, Engine, GenerationRequest, SamplingParams
from coopcode.problems import Problem
from coopcode.records.attempts import AgentOutput, Attempt, sample_seed
from coopcode.records.vocabulary import FinishReason
from coopcode.schemes import (
    Ask,
    Check,
    PromptBook,
    SampleState,
    Scheme,
    SeedFn,
    per_role,
    sample_steps,
)
from sandbox import Job, Sandbox, Verdict

# (sample state, role, turn, text delta, tokens): code as it streams
SampleDelta = Callable[[SampleState, str, int, str, int], None]


@dataclass
class SampleSpec:
    """One sample to run: its problem, scheme, seeds and adapters."""

    problem: Problem
    sample: int
    scheme: Scheme
    params: SamplingParams
    seeds: SeedFn  # (role, turn) -> (seed, index)
    adapters: Mapping[str, str | None]  # role -> adapter name in the engine (None: the base)
    turns: int = 1
    first_turn: int = 1  # > 1: a revision of `state` (training's child nodes)
    state: SampleState | None = None  # a prepared state to continue (with first_turn > 1)
    key: Any = None  # the caller's name for it, handed back on the state


def standard_seeds(seed: int, task_id: str, scheme: str, sample: int) -> SeedFn:
    """Solve's and bench's seeds: one per (task, scheme, role, turn, sample), whatever the
    batch or the order the samples ran in."""
    return lambda role, turn: (sample_seed(seed, task_id, scheme, role, turn, sample), 0)


def sample_specs(problem: Problem, scheme: Scheme, samples: Iterable[int], params: SamplingParams,
                 *, helper_adapter: str | None = None, main_adapter: str | None = None,
                 turns: int = 1) -> list[SampleSpec]:
    """Specs for some samples of one problem, as solve, bench and the TUI run them (the main
    adapter serves the `single` agent too)."""
    adapters = per_role(helper_adapter, main_adapter)
    return [SampleSpec(problem, i, scheme, params, standard_seeds(params.seed, problem.task_id,
                                                                   scheme.name, i),
                       adapters, turns=turns, key=(problem.task_id, scheme.name, i))
            for i in samples]


@dataclass
class RunStats:
    """What one `Scheduler.run` did, for progress lines and benchmarks."""

    samples: int = 0
    requests: int = 0  # sent to the engine (after merging identical asks)
    merged: int = 0  # asks answered by an identical ask's completion
    tokens: int = 0
    wall: float = 0.0
    engine_idle_on_sandbox: float = 0.0  # no generation outstanding, sandbox work outstanding
    cancelled: bool = False


@dataclass
class _Live:
    spec: SampleSpec
    state: SampleState
    steps: Any  # the sample's generator
    started: float
    asks: list[Ask] = field(default_factory=list)  # the current step's
    answers: list[Completion | None] = field(default_factory=list)
    waiting_for: int = 0  # answers of the current step not back yet


class Scheduler:
    """Drives the steps of many samples through one engine and one sandbox."""

    def __init__(self, engine: Engine, sandbox: Sandbox | None = None, *,
                 concurrency: int | None = None, feedback_timeout: float = 5.0,
                 on_delta: SampleDelta | None = None,
                 cancel: threading.Event | None = None) -> None:
        self.engine, self.sandbox = engine, sandbox
        self.concurrency = max(1, concurrency or engine.preferred_concurrency)
        self.feedback_timeout = feedback_timeout
        self.on_delta = on_delta
        self.cancel = cancel or threading.Event()
        self.book = PromptBook(engine)

    def run(
        self,
        specs: Iterable[SampleSpec],
        on_done: Callable[[SampleState, list[Verdict]], None],
        *,
        final_jobs: Callable[[SampleState], Sequence[Job]] | None = None,
    ) -> RunStats:
        """Run every spec; `on_done(state, verdicts)` is called (on this thread) as each
        sample finishes, with the verdicts of its `final_jobs(state)` in order (none when no
        jobs are given: `coopcode.collaboration.judging.sample_jobs` makes a sample's). On
        cancel: stops generating, lets submitted final jobs finish (their samples are
        complete), returns."""
        return _Run(self, iter(specs), on_done, final_jobs).go()


class _Run:
    def __init__(self, sched: Scheduler, specs: Iterator[SampleSpec],
                 on_done: Callable[[SampleState, list[Verdict]], None],
                 final_jobs: Callable[[SampleState], Sequence[Job]] | None) -> None:
        self.s, self.specs, self.on_done, self.final_jobs = sched, specs, on_done, final_jobs
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.running: list[_Live] = []
        self.inflight: dict[tuple[Any, ...], tuple[Any, list[tuple[_Live, int]]]] = {}
        self.answered: dict[tuple[Any, ...], Completion] = {}
        self.sandbox_jobs = 0
        self.stats = RunStats()
        self.exhausted = False
        workers = max(1, int(getattr(sched.sandbox, "size", 2) or 2))
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="coopcode-sandbox")

    def go(self) -> RunStats:
        started = time.time()
        try:
            self._loop()
        except BaseException:
            self._stop_generating()
            # Leave now (Ctrl-C, a sandbox gone for good): a job still waiting for a sandbox
            # worker ends when the sandbox is closed on the way out.
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.stats.wall = time.time() - started
            raise
        self.pool.shutdown(wait=True)
        self.stats.wall = time.time() - started
        return self.stats

    # -- the loop ---------------------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            if self.s.cancel.is_set():
                self.stats.cancelled = True
                self._stop_generating()
                self.exhausted = True
            self._start_more()
            if not self.running and not self.sandbox_jobs and not self.inflight:
                return
            idle_on_sandbox = not self.inflight and self.sandbox_jobs > 0
            t0 = time.time()
            try:
                kind, payload = self.events.get(timeout=0.1)
            except queue.Empty:
                if idle_on_sandbox:
                    self.stats.engine_idle_on_sandbox += time.time() - t0
                continue
            if idle_on_sandbox:
                self.stats.engine_idle_on_sandbox += time.time() - t0
            if kind == "gen":
                self._answered(*payload)
            elif kind == "check":
                live, future = payload
                self.sandbox_jobs -= 1
                if not self.s.cancel.is_set():
                    self._advance(live, future.result()[0])
            elif kind == "final":
                state, future = payload
                self.sandbox_jobs -= 1
                self.on_done(state, future.result())

    def _start_more(self) -> None:
        while not self.exhausted and len(self.running) < self.s.concurrency:
            spec = next(self.specs, None)
            if spec is None:
                self.exhausted = True
                return
            state = spec.state or SampleState(spec.problem, spec.sample, self.s.book,
                                              Attempt(spec.problem.task_id, spec.sample, spec.scheme.name))
            state.key = spec.key
            steps = sample_steps(spec.scheme, state, spec.turns,
                                 feedback_timeout=self.s.feedback_timeout, first_turn=spec.first_turn)
            live = _Live(spec, state, steps, time.time())
            self.running.append(live)
            self.stats.samples += 1
            self._advance(live, None)

    def _advance(self, live: _Live, value: Any) -> None:
        """Resume a sample with `value` and act on what it asks next."""
        try:
            step = live.steps.send(value)
        except StopIteration as stop:
            self._generated(live, stop.value)
            return
        if isinstance(step, Check):
            self._to_sandbox("check", live, [step.job])
        else:
            self._ask(live, step)

    def _ask(self, live: _Live, asks: list[Ask]) -> None:
        live.asks, live.answers = asks, [None] * len(asks)
        live.waiting_for = len(asks)
        new: list[tuple[GenerationRequest, Any]] = []
        keys = []
        for slot, ask in enumerate(asks):
            request = self._request(live.spec, ask)
            key = (request.prompt, request.adapter, request.params)
            if key in self.answered:
                self.stats.merged += 1
                live.answers[slot] = self.answered[key]
                live.waiting_for -= 1
                continue
            if key in self.inflight:
                self.stats.merged += 1
                self.inflight[key][1].append((live, slot))
                continue
            self.inflight[key] = (None, [(live, slot)])
            keys.append((key, ask))
            new.append((request, self._relay(live, ask)))
        if new:
            subs = self.s.engine.submit_all(new)
            self.stats.requests += len(subs)
            for (key, _ask), sub in zip(keys, subs):
                self.inflight[key] = (sub, self.inflight[key][1])
                sub.future.add_done_callback(self._post("gen", key))
        if live.waiting_for == 0:
            self._step_answered(live)

    def _request(self, spec: SampleSpec, ask: Ask) -> GenerationRequest:
        seed, index = spec.seeds(ask.role, ask.turn)
        params = spec.params.with_(n=1, stop=ask.prompt.stop, seed=seed, index=index)
        return GenerationRequest(prompt=ask.prompt.text, params=params,
                                 adapter=spec.adapters.get(ask.role))

    def _relay(self, live: _Live, ask: Ask) -> Callable[[int, str, int], None] | None:
        on_delta = self.s.on_delta
        if on_delta is None:
            return None
        # The pre-filled code is part of the agent's code: stream it first.
        if ask.prompt.prefix:
            on_delta(live.state, ask.role, ask.turn, ask.prompt.prefix, 0)
        return lambda _si, text, tokens: on_delta(live.state, ask.role, ask.turn, text, tokens)

    def _answered(self, key: tuple[Any, ...], future: Future[list[Completion]]) -> None:
        _sub, waiters = self.inflight.pop(key)
        (completion,) = future.result()  # an engine error ends the run here
        if completion.finish_reason != FinishReason.CANCELLED:
            self.answered[key] = completion
            self.stats.tokens += completion.n_tokens
        for live, slot in waiters:
            live.answers[slot] = completion
            live.waiting_for -= 1
            if live.waiting_for == 0 and live in self.running:
                self._step_answered(live)

    def _step_answered(self, live: _Live) -> None:
        if self.s.cancel.is_set():
            return  # never record a step cut short
        for ask, c in zip(live.asks, live.answers):
            assert c is not None
            code = self.s.book.extract(live.state.problem, ask.role, ask.prompt, c.text)
            seed, _index = live.spec.seeds(ask.role, ask.turn)
            live.state.record(ask, AgentOutput(
                ask.role, ask.turn, c.text, code, c.n_tokens, c.finish_reason,
                live.spec.adapters.get(ask.role), ask.prompt.text, c.seconds, seed, c.token_ids))
        self._advance(live, None)

    def _generated(self, live: _Live, attempt: Attempt) -> None:
        """A sample has written its program: it leaves the running set (room for the next)."""
        self.running.remove(live)
        attempt.gen_seconds = time.time() - live.started
        jobs = list(self.final_jobs(live.state)) if self.final_jobs is not None else []
        if not jobs:
            self.on_done(live.state, [])
        else:
            self._to_sandbox("final", live.state, jobs)

    def _to_sandbox(self, kind: str, owner: Any, jobs: list[Job]) -> None:
        """Run jobs on one sandbox worker thread, one after another (a sample's few jobs)."""
        sandbox = self.s.sandbox
        if sandbox is None:
            raise ValueError("this run needs a sandbox (multi-turn feedback or final tests)")
        self.sandbox_jobs += 1
        future = self.pool.submit(lambda: [sandbox.run(job) for job in jobs])
        future.add_done_callback(self._post(kind, owner))

    def _post(self, kind: str, owner: Any) -> Callable[[Future[Any]], None]:
        """A done-callback (it runs on the engine's or a sandbox thread) that hands the
        finished future to the driver thread."""
        def post(future: Future[Any]) -> None:
            self.events.put((kind, (owner, future)))

        return post

    def _stop_generating(self) -> None:
        for sub, _waiters in self.inflight.values():
            if sub is not None:
                sub.cancel()
        self.running.clear()
