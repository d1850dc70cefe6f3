"""Typed events: what `solve`, `bench` and `train` report while they work.

The CLI renders them with rich, the TUI renders the same events, and `--events jsonl` writes
one JSON object per line (`{"type": ..., ...}`) for other programs; `parse_event` reads one
back. Long jobs started from the TUI run as child processes streaming these lines.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar, TextIO


@dataclass
class Event:
    type: ClassVar[str] = "event"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **asdict(self)}


@dataclass
class Started(Event):
    type: ClassVar[str] = "started"
    job: str = ""  # "solve", "bench", "train", "evaluate"
    total: int = 0  # units of work (samples, steps)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Log(Event):
    type: ClassVar[str] = "log"
    message: str = ""
    level: str = "info"  # "info" or "warning"


@dataclass
class TokenDelta(Event):
    type: ClassVar[str] = "token"
    task_id: str = ""
    agent: str = ""  # "helper", "main" or "single"
    sample: int = 0
    turn: int = 1
    text: str = ""
    tokens: int = 0  # sampled tokens this delta covers (0: code the prompt pre-filled)


@dataclass
class AttemptReady(Event):
    """An attempt's code is ready (before execution)."""

    type: ClassVar[str] = "attempt"
    task_id: str = ""
    sample: int = 0
    scheme: str = ""
    helper_code: str = ""
    main_code: str = ""
    program: str = ""
    syntax_ok: bool = False
    contract: str = ""  # aux's contract as main saw it (`contract`, `plan`); "" elsewhere


@dataclass
class VerdictReady(Event):
    type: ClassVar[str] = "verdict"
    task_id: str = ""
    sample: int = 0
    scheme: str = ""
    verdict: dict[str, Any] = field(default_factory=dict)
    reward: dict[str, float] = field(default_factory=dict)
    # a pair's {"patterns", "own_work", "helper_solves", "both_needed"}
    # (coopcode.code_analysis.cooperation); None: one agent
    cooperation: dict[str, Any] | None = None
    # each agent judged on its own (coopcode.records.checks: a record's "agents"); None: not judged
    agents: dict[str, Any] | None = None
    # each agent's own reward, for a reward that pays each its own (`own`); {} otherwise
    agent_rewards: dict[str, float] = field(default_factory=dict)


@dataclass
class Progress(Event):
    type: ClassVar[str] = "progress"
    done: int = 0
    total: int = 0
    problems_done: int = 0
    problems_total: int = 0
    samples_per_s: float = 0.0
    eta_s: float | None = None
    label: str = ""


@dataclass
class Metric(Event):
    type: ClassVar[str] = "metric"
    step: int = 0
    values: dict[str, float] = field(default_factory=dict)


@dataclass
class Finished(Event):
    type: ClassVar[str] = "finished"
    job: str = ""
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass
class Failed(Event):
    type: ClassVar[str] = "error"
    message: str = ""


EVENT_TYPES: dict[str, type[Event]] = {
    cls.type: cls
    for cls in (Started, Log, TokenDelta, AttemptReady, VerdictReady, Progress, Metric, Finished, Failed)
}

Emit = Callable[[Event], None]
Say = Callable[[str], None]  # a line for the user: loading progress, a warning


def ignore(_event: Event) -> None:
    """An Emit that drops everything."""


def parse_event(line: str) -> Event:
    """One JSONL line back into its Event (unknown fields are ignored)."""
    data = json.loads(line)
    cls = EVENT_TYPES[data.pop("type")]
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


class JsonlWriter:
    """An Emit that writes each event as one JSON line and flushes (for pipes)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout

    def __call__(self, event: Event) -> None:
        self.stream.write(json.dumps(event.to_dict(), default=str) + "\n")
        self.stream.flush()
