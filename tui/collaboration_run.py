"""The Collaborate screen's run as state: where it is, what it runs on, what it produced.

`CollaborationRun` holds no widget. The screen starts a generation (Ctrl+R) or a test of
the program (Ctrl+G) through it, runs the returned `RunOrder` on a worker thread
(`generate`, `judge`: they only post messages), hands it the events that come back, and
draws what it says. Each start takes a new run id; a message carrying an older one is a
straggler of a run that was cancelled or replaced, and is dropped.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from textual.message import Message

from coopcode import (
    DEFAULT_SCHEME,
    AttemptReady,
    Cooperation,
    Event,
    Failed,
    Problem,
    SandboxUnavailable,
    TokenDelta,
    VerdictReady,
    analyse_cooperation,
)
from tui.messages import Cancelled, CoopEvent, SandboxDown
from tui.session_sandbox import one_line

Post = Callable[[Message], object]


class RunState(StrEnum):
    """Where the latest run is."""

    IDLE = "idle"  # nothing run since the screen opened
    GENERATING = "generating"  # the agents write (Esc cancels)
    TESTING = "testing"  # the sandbox judges the program
    JUDGED = "judged"  # the verdict is in
    CANCELLED = "cancelled"  # the generation was stopped before a verdict
    FAILED = "failed"  # an error stopped it
    SANDBOX_DOWN = "sandbox down"  # the program was not judged (Ctrl+G tries again)


@dataclasses.dataclass(frozen=True)
class RunOrder:
    """What one worker runs, fixed when it starts: a worker still finishing after the user
    started another run reads nothing the new one changed."""

    run_id: int
    problem: Problem
    scheme: str
    reward: str | None  # None: the scheme's default
    cancel: threading.Event


@dataclasses.dataclass(frozen=True)
class Stream:
    """An agent's consecutive token deltas, drawn as one insert."""

    agent: str  # "helper", "main", or "planner" (main writing aux's contract first)
    turn: int
    text: str
    tokens: int


class CollaborationRun:
    """The latest run's state and results, and the transitions between them."""

    def __init__(self) -> None:
        self.state = RunState.IDLE
        self.run_id = 0
        self.problem: Problem | None = None  # the problem the latest generation solved
        self.scheme = ""  # the scheme it ran under
        self.reward: str | None = None  # the reward the latest verdict is scored with
        self.reward_name = ""  # as shown: the scheme's default named when `reward` is None
        self.attempt: AttemptReady | None = None  # the latest generated attempt
        self.reruns = 0  # programs the sandbox ran again in this run (a worker was lost)
        self.cancel_event = threading.Event()
        self.started = 0.0  # time.monotonic() when the generation started
        self._deltas: list[tuple[int, TokenDelta]] = []  # (run id, delta) not yet drawn
        self._deltas_lock = threading.Lock()

    @property
    def generating(self) -> bool:
        return self.state == RunState.GENERATING

    @property
    def testing(self) -> bool:
        return self.state == RunState.TESTING

    @property
    def busy(self) -> bool:
        return self.state in (RunState.GENERATING, RunState.TESTING)

    @property
    def judged_scheme(self) -> str:
        """The scheme the program is judged under: the attempt's, else the default."""
        return self.attempt.scheme if self.attempt else DEFAULT_SCHEME

    def is_current(self, run_id: int) -> bool:
        return run_id == self.run_id

    # -- transitions --------------------------------------------------------------------

    def start_generation(self, problem: Problem, scheme: str, reward: str | None,
                         reward_name: str) -> RunOrder:
        """A new run: the agents write `problem` under `scheme`; the last one's results go."""
        self.run_id += 1
        self.reruns = 0
        self.cancel_event = threading.Event()
        self.state, self.attempt, self.problem = RunState.GENERATING, None, problem
        self.scheme = scheme
        self.reward, self.reward_name = reward, reward_name
        self.started = time.monotonic()
        return RunOrder(self.run_id, problem, scheme, reward, self.cancel_event)

    def start_tests(self, reward: str | None, reward_name: str) -> RunOrder:
        """The program (edited or not) judged again: a new run id, the same problem."""
        if self.problem is None:
            raise ValueError("no problem was run yet")
        self.run_id += 1
        self.reruns = 0
        self.reward, self.reward_name = reward, reward_name
        self.state = RunState.TESTING
        return RunOrder(self.run_id, self.problem, self.judged_scheme, reward, self.cancel_event)

    def cancel(self) -> bool:
        """Ask the generation to stop; False when there is none to stop (or it was asked)."""
        if not self.generating or self.cancel_event.is_set():
            return False
        self.cancel_event.set()
        return True

    def attempt_ready(self, attempt: AttemptReady) -> float | None:
        """The agents' code is in and goes to the sandbox; the seconds the generation took
        (None when none was under way)."""
        seconds = time.monotonic() - self.started if self.generating else None
        self.state, self.attempt = RunState.TESTING, attempt
        return seconds

    def verdict_ready(self) -> None:
        self.state = RunState.JUDGED

    def failed(self) -> None:
        self.state = RunState.FAILED

    def sandbox_down(self) -> None:
        self.state = RunState.SANDBOX_DOWN

    def cancelled(self) -> None:
        self.state = RunState.CANCELLED

    def sandbox_reran(self, reruns: int) -> None:
        self.reruns = reruns

    # -- what the run produced ------------------------------------------------------------

    def add_delta(self, run_id: int, delta: TokenDelta) -> None:
        """Buffer a token delta (from the worker thread) for the next frame."""
        with self._deltas_lock:
            self._deltas.append((run_id, delta))

    def take_streams(self) -> list[Stream]:
        """The current run's deltas buffered since the last call, an agent's consecutive
        ones joined (one insert each, not one per token)."""
        with self._deltas_lock:
            if not self._deltas:
                return []  # the usual case: nothing streamed since the last frame
            batch, self._deltas = self._deltas, []
        streams: list[Stream] = []
        for run_id, d in batch:
            if not self.is_current(run_id):
                continue
            last = streams[-1] if streams else None
            if last is not None and (last.agent, last.turn) == (d.agent, d.turn):
                streams[-1] = dataclasses.replace(last, text=last.text + d.text,
                                                  tokens=last.tokens + d.tokens)
            else:
                streams.append(Stream(d.agent, d.turn, d.text, d.tokens))
        return streams

    def cooperation(self, verdict: VerdictReady) -> Cooperation:
        """How the agents cooperated: their code read, and what the sandbox found by running
        each agent's code alone."""
        helper = self.attempt.helper_code if self.attempt else ""
        main = self.attempt.main_code if self.attempt else ""
        entry = self.problem.entry_point if self.problem else ""
        found = verdict.cooperation or {}
        solves, needed = found.get("helper_solves"), found.get("both_needed")
        return dataclasses.replace(analyse_cooperation(helper, main, entry, solves),
                                   both_needed=needed if isinstance(needed, bool) else None)

    # -- worker bodies: run on a thread, they only post messages --------------------------

    def generate(self, order: RunOrder, agents: Any, turns: int, sandbox: Any,
                 post: Post) -> None:
        """`coopcode.solve` with `coopcode solve`'s settings (greedy, its token budget,
        top-p, seed), the scheme, turns and reward chosen on the screen."""
        from coopcode import SolveConfig, solve

        def emit(event: Event) -> None:
            if isinstance(event, TokenDelta):
                # Buffered, not posted: a message per token would keep the event loop busy
                # redrawing and make keys lag while a fast model streams.
                self.add_delta(order.run_id, event)
            else:
                post(CoopEvent(order.run_id, event))

        try:
            result = solve(order.problem, agents.engine, sandbox,
                           SolveConfig(scheme=order.scheme, turns=turns, reward=order.reward),
                           helper_adapter=agents.helper_name, main_adapter=agents.main_name,
                           emit=emit, cancel=order.cancel)
            if order.cancel.is_set() and not any(a.verdict for a in result.attempts):
                post(Cancelled(order.run_id))
        except SandboxUnavailable as e:  # an outage, not a verdict: a status line and a retry
            post(SandboxDown(order.run_id, one_line(e)))
        except Exception as e:  # noqa: BLE001 - shown as one line; the UI must survive it
            emit(Failed(message=one_line(e)))

    def judge(self, order: RunOrder, program: str, attempt: AttemptReady | None,
              sandbox: Any, post: Post) -> None:
        """Judge the (edited) program as the run judged the agents' one. A worker lost
        meanwhile is replaced and the program run again by the sandbox (said on the screen);
        a sandbox down for good is a status line, and the next run opens a new one."""
        from coopcode import SolveConfig, judge

        def emit(event: Event) -> None:
            post(CoopEvent(order.run_id, event))

        try:
            judge(order.problem, program, sandbox,
                  SolveConfig(scheme=order.scheme, reward=order.reward),
                  helper_code=attempt.helper_code if attempt else "",
                  main_code=attempt.main_code if attempt else program, emit=emit)
        except SandboxUnavailable as e:
            post(SandboxDown(order.run_id, one_line(e)))
        except Exception as e:  # noqa: BLE001 - shown as one line; the UI must survive it
            emit(Failed(message=one_line(e)))
