"""A scheme is the steps of one sample: which agent is asked what, after which answer.

A scheme's `first_turn` (and, with several turns, `revision_turn`) is a generator that
yields the asks of one step (one ask, or several that go to the engine at once) and reads
the answers off the sample's state when it resumes. `sample_steps` adds the turns around it
(public-example feedback between them), and `coopcode.collaboration.scheduler.Scheduler` drives the steps
of many samples at once, so the engine always has every ready request.

Roles: `helper` writes `aux`, `main` the entry point (free to call `aux`), `single` the
entry point alone. The helper's code goes to the `helper_code` of the attempt, every other
role's to `main_code`; the program is the prompt's imports + helper code + main code.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from coopcode.problems import Problem
from coopcode.schemes import prompts
from coopcode.schemes.prompting import PromptBook
from coopcode.written.attempts import AgentOutput, Attempt, feedback_text
from coopcode.written.code import combine
from sandbox import Job, Verdict

DISCUSS_NOTE = "Your teammate's code is shown above; make the two fit together."


@dataclass(frozen=True)
class Ask:
    """One request of one sample to one agent."""

    role: str  # helper, main or single
    prompt: prompts.Prompt
    turn: int
    first: bool = False  # the role's first prompt: revisions continue its conversation


@dataclass(frozen=True)
class Check:
    """Run the program on the problem's public examples (feedback before a revision)."""

    job: Job


# (role, turn) -> (seed, index): sample `index` of a request with this seed is drawn.
SeedFn = Callable[[str, int], tuple[int, int]]


@dataclass
class SampleState:
    """One sample as it is being written: its attempt, and what its prompts need."""

    problem: Problem
    sample: int
    book: PromptBook
    attempt: Attempt
    first_prompts: dict[str, prompts.Prompt] = field(default_factory=dict)
    asked: list[tuple[Ask, AgentOutput]] = field(default_factory=list)  # in answer order
    key: Any = None  # the caller's name for this sample

    def ask_first(self, role: str, helper_code: str | None = None, *,
                  knows_helper: bool = False) -> Ask:
        prompt = self.book.first(self.problem, role, helper_code, knows_helper=knows_helper)
        return Ask(role, prompt, turn=1, first=True)

    def ask_revision(self, role: str, turn: int, note: str | None = None) -> Ask:
        """`role` revises its own code, seeing its teammate's and the feedback (or `note`)."""
        a = self.attempt
        own = a.helper_code if role == "helper" else a.main_code
        peer = None if role == "single" else (a.main_code if role == "helper" else a.helper_code)
        first = self.first_prompts.get(role) or self.first_prompts["single" if role == "main" else role]
        prompt = self.book.revision(self.problem, role, first, own, peer,
                                    a.feedback if note is None else note)
        return Ask(role, prompt, turn)

    def record(self, ask: Ask, output: AgentOutput) -> None:
        """An agent answered: its code is now the sample's code for that role."""
        self.asked.append((ask, output))
        self.attempt.outputs.append(output)
        if ask.first:
            self.first_prompts.setdefault(ask.role, ask.prompt)
        if ask.role == "helper":
            self.attempt.helper_code = output.code
        else:
            self.attempt.main_code = output.code


Steps = Generator[list[Ask], None, None]


class Scheme:
    """How helper and main produce one program. Subclasses write `first_turn`."""

    name: ClassVar[str]
    roles: ClassVar[tuple[str, ...]]  # the agents whose code makes the program
    revising_roles: ClassVar[tuple[str, ...]] = ("helper", "main")  # who revises in later turns

    def first_turn(self, s: SampleState) -> Steps:
        raise NotImplementedError

    def revision_turn(self, s: SampleState, turn: int) -> Steps:
        """After feedback on the public examples, every agent revises at once."""
        yield [s.ask_revision(role, turn) for role in self.revising_roles]


def sample_steps(scheme: Scheme, s: SampleState, turns: int, *, feedback_timeout: float = 5.0,
                 first_turn: int = 1) -> Generator[list[Ask] | Check, Any, Attempt]:
    """Every step of one sample: its turns, with a run on the public examples between two
    turns; a sample that passes every public example stops early. Yields asks (answered by
    `SampleState.record` before it resumes) and checks (answered with their verdict)."""
    a, problem = s.attempt, s.problem
    for turn in range(first_turn, turns + 1):
        steps = scheme.first_turn(s) if turn == 1 else scheme.revision_turn(s, turn)
        yield from steps
        a.program = combine(problem.prompt, problem.entry_point, a.helper_code, a.main_code)
        a.turns_used = turn
        if turn < turns and problem.public_tests:
            verdict: Verdict = yield Check(Job(
                program=a.program.text, tests=problem.public_tests,
                entry_point=problem.entry_point, timeout=feedback_timeout))
            a.feedback = feedback_text(verdict)
            if verdict.passed:
                break
    return a
