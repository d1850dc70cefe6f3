"""The sandbox contract: what goes in (a Job) and what comes out (a Verdict).

Everything in coopcode that executes model-written code goes through a `Sandbox`
(see `sandbox.open_sandbox`). Backends differ in isolation, never in this contract.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

# Status of one test case.
TEST_PASSED = "passed"
TEST_FAILED = "failed"  # an assertion failed
TEST_ERROR = "error"  # the test raised something other than AssertionError, or the program died
TEST_TIMEOUT = "timeout"  # the job's time budget ran out during (or before) this test
TEST_STATUSES = (TEST_PASSED, TEST_FAILED, TEST_ERROR, TEST_TIMEOUT)

# Status of a whole job, from best to worst.
PASSED = "passed"  # every test passed (and there was at least one)
FAILED = "failed"  # the program ran; at least one test failed or errored
ERROR = "error"  # the program itself raised / exited at import time
TIMEOUT = "timeout"  # the time budget ran out
SYNTAX_ERROR = "syntax_error"  # the program does not compile
NO_TESTS = "no_tests"  # the job had no test cases: nothing was proven
SANDBOX_ERROR = "sandbox_error"  # the sandbox itself failed (never blamed on the program)
JOB_STATUSES = (PASSED, FAILED, ERROR, TIMEOUT, SYNTAX_ERROR, NO_TESTS, SANDBOX_ERROR)


@dataclass(frozen=True)
class Job:
    """A program and the tests to run against it.

    `tests` is HumanEval-style test source: a `def check(candidate): ...` whose body holds
    the asserts (plus any module-level imports/constants it needs), and/or plain top-level
    `assert` statements. Inside the tests, `candidate` is the program's `entry_point`.
    """

    program: str
    tests: str
    entry_point: str | None = None
    timeout: float = 5.0  # CPU seconds for the whole job (wall clock gets a generous multiple)
    memory_mb: int = 512


@dataclass(frozen=True)
class TestRecord:
    """The trusted outcome of one test case."""

    __test__ = False  # not a pytest test class, despite the name

    __test__ = False  # not a pytest test class, despite the name

    index: int
    source: str  # the test statement(s), e.g. "assert candidate([1, 2]) == 3"
    status: str  # one of TEST_STATUSES
    message: str = ""  # assertion message or exception text, truncated
    error_type: str = ""  # exception class name for errors, e.g. "ZeroDivisionError"
    duration: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == TEST_PASSED


@dataclass(frozen=True)
class Verdict:
    """The trusted outcome of one job."""

    status: str  # one of JOB_STATUSES
    tests: tuple[TestRecord, ...] = ()
    syntax_ok: bool = False
    runnable: bool = False  # the program executed at module level without raising or exiting
    duration: float = 0.0  # wall seconds for the job inside the sandbox
    stdout: str = ""  # what the program printed (truncated); never used to decide anything
    stderr: str = ""
    backend: str = ""
    detail: str = ""  # one line of context for non-test failures (e.g. the SyntaxError)
    # Backend facts, for display and debugging only: cpu_seconds (the program's, all its
    # processes), calls (into the program), exit (how its process ended, if it ended on its own), stdout_bytes and
    # stderr_bytes (before truncation), worker, worker_replaced (why, when it was).
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    @property
    def n_passed(self) -> int:
        return sum(1 for t in self.tests if t.passed)

    @property
    def n_tests(self) -> int:
        return len(self.tests)

    @property
    def pass_fraction(self) -> float:
        return self.n_passed / self.n_tests if self.tests else 0.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["tests"] = [asdict(t) for t in self.tests]
        d["passed"] = self.passed
        d["n_passed"] = self.n_passed
        d["n_tests"] = self.n_tests
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        keys = {f for f in cls.__dataclass_fields__}
        kw = {k: v for k, v in d.items() if k in keys}
        kw["tests"] = tuple(
            TestRecord(**{k: v for k, v in t.items() if k in TestRecord.__dataclass_fields__})
            for t in d.get("tests", ())
        )
        return cls(**kw)


class SandboxUnavailable(RuntimeError):
    """The requested backend cannot run here; the message is one line a user can act on."""


class Sandbox(Protocol):
    """Runs jobs in isolation. Thread-safe; `run_many` spreads jobs over the backend's workers."""

    name: str

    def run(self, job: Job) -> Verdict: ...

    def run_many(
        self,
        jobs: Sequence[Job],
        on_result: Callable[[int, Verdict], None] | None = None,
    ) -> list[Verdict]: ...

    def close(self) -> None: ...

    def __enter__(self) -> Sandbox: ...

    def __exit__(self, *exc: object) -> None: ...
