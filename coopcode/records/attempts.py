"""What a sample is made of: each agent's outputs, the final code and program, its verdict.

`Attempt` is one sample of one problem under one scheme; `AgentOutput` is what one agent
wrote in one turn. Both serialise to the records of `samples.jsonl`.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

from coopcode.records.checks import AgentChecks
from coopcode.records.cooperation import NO_HELPER, Cooperation
from coopcode.records.reward_terms import RewardBreakdown
from sandbox import Verdict


@dataclass(frozen=True)
class Program:
    """The combined program and how it was built."""

    text: str
    context: str  # what came from the problem prompt (imports, given functions)
    helper_code: str
    main_code: str
    syntax_ok: bool
    syntax_error: str = ""


@dataclass(frozen=True)
class AgentOutput:
    """What one agent wrote in one turn (as it came back: nothing changes it afterwards)."""

    role: str  # a `Role` (coopcode.records.vocabulary)
    turn: int
    raw: str  # the model's text
    code: str  # the code extracted from it
    n_tokens: int
    finish_reason: str
    adapter: str | None
    prompt: str  # the rendered prompt (kept for the record)
    seconds: float = 0.0
    seed: int = 0  # the sampling seed of this output (sample_seed of task, scheme, role, turn, sample)
    token_ids: list[int] = field(default_factory=list, repr=False)  # sampled ids (training)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("token_ids")  # the text is the record; ids matter only to a live trainer
        return d


@dataclass
class Attempt:
    """One sample's collaboration: every agent output, the final code and program."""

    task_id: str
    sample: int
    scheme: str
    outputs: list[AgentOutput] = field(default_factory=list)
    helper_code: str = ""
    main_code: str = ""
    program: Program | None = None
    verdict: Verdict | None = None  # hidden tests, filled in by the caller
    reward: RewardBreakdown | None = None
    reward_name: str = ""  # the registered reward that scored it
    cooperation: Cooperation | None = None  # how the pair cooperated (None: one agent, or not judged)
    turns_used: int = 1
    gen_seconds: float = 0.0
    feedback: str = ""  # what the agents were last told about the public examples
    contract: str = ""  # aux's contract as main saw it (`contract` and `plan` schemes)
    checks: AgentChecks | None = None  # each agent judged on its own, filled in by the caller

    @property
    def n_tokens(self) -> int:
        return sum(o.n_tokens for o in self.outputs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "sample": self.sample,
            "scheme": self.scheme,
            "outputs": [o.to_dict() for o in self.outputs],
            "helper_code": self.helper_code,
            "main_code": self.main_code,
            "program": self.program.text if self.program else "",
            "syntax_ok": self.program.syntax_ok if self.program else False,
            "verdict": self.verdict.to_dict() if self.verdict else None,
            "reward": self.reward.to_dict() if self.reward else None,
            "reward_name": self.reward_name,
            "cooperation": self.cooperation.to_record() if self.cooperation is not None
            and self.cooperation is not NO_HELPER else None,
            "turns_used": self.turns_used,
            "feedback": self.feedback,
            "contract": self.contract,
            "agents": self.checks.to_record() if self.checks is not None else None,
            "n_tokens": self.n_tokens,
            "gen_seconds": round(self.gen_seconds, 3),
        }


def sample_seed(seed: int, *parts: object) -> int:
    """A stable seed for one (task, role, turn, sample): independent of batching and order."""
    key = ":".join(str(p) for p in (seed, *parts)).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") >> 1


def feedback_text(verdict: Verdict, limit: int = 6) -> str:
    """What an agent is told about a run on the public examples."""
    if not verdict.syntax_ok:
        return f"SyntaxError: {verdict.detail or 'the program does not parse'}"
    if not verdict.runnable:
        return f"The program failed before any test ran: {verdict.detail or verdict.status}"
    lines = []
    for t in verdict.tests[:limit]:
        mark = "PASS" if t.passed else t.status.upper()
        msg = f" ({t.error_type}: {t.message})" if t.error_type else (f" ({t.message})" if t.message else "")
        lines.append(f"{mark}: {t.source.strip()}{msg if not t.passed else ''}")
    if verdict.n_tests > limit:
        lines.append(f"... {verdict.n_tests - limit} more; {verdict.n_passed}/{verdict.n_tests} passed")
    return "\n".join(lines)
