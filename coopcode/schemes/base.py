"""A scheme is the steps of one sample: which agent is asked what, after which answer.

A scheme's `first_turn` (and, with several turns, `revision_turn`) is a generator that
yields the asks of one step (one ask, or several that go to the engine at once) and reads
the answers off the sample's state when it resumes. `sample_steps` adds the turns around it
(public-example feedback between them), and `coopcode.collaboration.scheduler.Scheduler` drives the steps
of many samples at once, so the engine always has every ready request.

Roles: `helper` writes `aux`, `main` the entry point (free to call `aux`), `single` the
entry point alone, `planner` (main's adapter, under `plan`) aux's contract before either.
The helper's code goes to the `helper_code` of the attempt, the planner's contract to its
`contract`, every other role's to `main_code`; the program is the prompt's imports + helper
code + main code.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

from coopcode.code_analysis.program import combine
from coopcode.problems import Contract, Problem
from coopcode.records.attempts import AgentOutput, Attempt, feedback_text
from coopcode.records.vocabulary import ContractSource, Role
from coopcode.schemes import prompts
from coopcode.schemes.contracts import contract_stub, planned_contract
from coopcode.schemes.prompting import PromptBook
from sandbox import Job, Verdict

DISCUSS_NOTE = "Your teammate's code is shown above; make the two fit together."

# The adapter each role writes with: the helper's, or main's. The single agent is main
# writing alone, so GRPO trains (and `single` runs) main's adapter.
ROLE_ADAPTERS: Mapping[str, str] = MappingProxyType(
    {Role.HELPER: Role.HELPER, Role.MAIN: Role.MAIN, Role.SINGLE: Role.MAIN,
     Role.PLANNER: Role.MAIN})
# Roles whose output is not part of the program (the planner writes aux's contract).
CONTRACT_ROLES = (Role.PLANNER,)

T = TypeVar("T")


def adapter_of(role: str) -> str:
    """The adapter (`helper` or `main`) role `role` writes with."""
    return ROLE_ADAPTERS[role]


def main_role(roles: Iterable[str]) -> str:
    """Of a sample's roles, the one whose code is `main_code` (the entry point): every role
    but the helper's and the planner's writes there (`SampleState.record`)."""
    (role,) = [r for r in roles if r != Role.HELPER and r not in CONTRACT_ROLES]
    return role


def per_role(helper: T, main: T) -> dict[str, T]:
    """Each role's value, given the helper adapter's and main's (`single` gets main's)."""
    return {role: helper if adapter == Role.HELPER else main
            for role, adapter in ROLE_ADAPTERS.items()}


@dataclass(frozen=True)
class Ask:
    """One request of one sample to one agent."""

    role: str  # a `Role`
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
    contract: Contract | None = None  # what the helper implements (`contract`, `plan`)

    def ask_first(self, role: str, helper_code: str | None = None, *,
                  knows_helper: bool = False) -> Ask:
        prompt = self.book.first(self.problem, role, helper_code, knows_helper=knows_helper)
        return Ask(role, prompt, turn=1, first=True)

    def use_contract(self, contract: Contract) -> None:
        """The contract both agents work to from now on (shown as main sees it)."""
        self.contract = contract
        self.attempt.contract = contract_stub(contract)

    def ask_plan(self) -> Ask:
        """Main (as `planner`) writes aux's contract."""
        return Ask(Role.PLANNER, self.book.planner(self.problem), turn=1, first=True)

    def ask_contract_helper(self) -> Ask:
        assert self.contract is not None
        return Ask(Role.HELPER, self.book.contract_helper(self.problem, self.contract), turn=1,
                   first=True)

    def ask_contract_main(self, helper_code: str | None = None) -> Ask:
        assert self.contract is not None
        return Ask(Role.MAIN, self.book.contract_main(self.problem, self.contract, helper_code),
                   turn=1, first=True)

    def ask_revision(self, role: str, turn: int, note: str | None = None) -> Ask:
        """`role` revises its own code, seeing its teammate's and the feedback (or `note`)."""
        a = self.attempt
        own = a.helper_code if role == Role.HELPER else a.main_code
        peer = None if role == Role.SINGLE else (a.main_code if role == Role.HELPER else a.helper_code)
        first = self.first_prompts.get(role) or self.first_prompts[Role.SINGLE if role == Role.MAIN else role]
        prompt = self.book.revision(self.problem, role, first, own, peer,
                                    a.feedback if note is None else note)
        return Ask(role, prompt, turn)

    def record(self, ask: Ask, output: AgentOutput) -> None:
        """An agent answered: its code is now the sample's code for that role."""
        self.asked.append((ask, output))
        self.attempt.outputs.append(output)
        if ask.first:
            self.first_prompts.setdefault(ask.role, ask.prompt)
        if ask.role == Role.HELPER:
            self.attempt.helper_code = output.code
        elif ask.role in CONTRACT_ROLES:
            planned = planned_contract(output.code)
            if planned is not None:
                self.use_contract(planned)
            else:  # nothing parsable: the helper is shown what the planner wrote
                self.contract = Contract(signature=f"def {prompts.HELPER_NAME}(*args):",
                                         docstring=output.code.strip(), tests="")
                self.attempt.contract = output.code
        else:
            self.attempt.main_code = output.code


Steps = Generator[list[Ask], None, None]


class Scheme:
    """How helper and main produce one program. Subclasses write `first_turn` and say what
    they are as data; everything else (the bench, solve, training, the TUI, the rewards) asks
    these, never the scheme's name."""

    name: ClassVar[str]
    roles: ClassVar[tuple[str, ...]]  # the agents whose code makes the program
    revising_roles: ClassVar[tuple[str, ...]] = (Role.HELPER, Role.MAIN)  # who revises in later turns
    # Main's first prompt shows the helper's code (so main waits for it, and in a training
    # each helper sample gets mains of its own).
    main_sees_helper: ClassVar[bool] = False
    # MAGRPO can train it: its roles are a helper and a main, each asked once in turn 1 (a
    # planner's contract before them is sampled once per problem and step, and not trained).
    trainable: ClassVar[bool] = False
    # Where the contract the helper implements comes from (`ContractSource`: none, the
    # problem's, or main's plan). See coopcode.schemes.contracts.
    contract_source: ClassVar[str] = ContractSource.NONE
    # The scheme with main shown the helper's code instead of the contract alone (the
    # `--main-sees code` variant), where there is one.
    sees_code_variant: ClassVar[str] = ""

    @classmethod
    def has_helper(cls) -> bool:
        return Role.HELPER in cls.roles

    def first_turn(self, s: SampleState) -> Steps:
        raise NotImplementedError

    def revision_turn(self, s: SampleState, turn: int) -> Steps:
        """After feedback on the public examples, every agent revises at once."""
        yield [s.ask_revision(role, turn) for role in self.revising_roles]


def public_check(problem: Problem, program: str, timeout: float) -> Job:
    """The run on the problem's public examples whose verdict is the feedback of a revision
    (a sample's next turn here; a training's child node in `coopcode.training.rollout`)."""
    return Job(program=program, tests=problem.public_tests, entry_point=problem.entry_point,
               timeout=timeout)


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
            verdict: Verdict = yield Check(public_check(problem, a.program.text, feedback_timeout))
            a.feedback = feedback_text(verdict)
            if verdict.passed:
                break
    return a
