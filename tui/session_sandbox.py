"""The session's sandbox as one Collaborate run gives it to `solve` and `judge`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from textual.screen import Screen

from coopcode import Job, SandboxUnavailable, Verdict
from tui.messages import SandboxReran


class SessionSandbox:
    """The session's sandbox as one run of this screen gives it to `solve` and `judge`.

    Opened (or opened again after an outage) by the first program to run, so the agents
    start writing without waiting for it; one down for good is marked lost, and the next
    run opens a new one; the programs it ran again because a worker was lost are said on
    the screen (SandboxReran, before the verdict they belong to)."""

    def __init__(self, screen: Screen[Any], run_id: int) -> None:
        self.screen, self.run_id = screen, run_id
        self.session: Any = screen.app.session  # type: ignore[attr-defined]
        self.infra_retries = 0  # this run's

    @property
    def name(self) -> str:
        return str(getattr(self.session.sandbox, "name", self.session.spec.sandbox))

    def run(self, job: Job) -> Verdict:
        sandbox = self.session.wait_sandbox()
        before = getattr(sandbox, "infra_retries", 0)
        try:
            verdict: Verdict = sandbox.run(job)
        except SandboxUnavailable as e:
            self.session.sandbox_lost(sandbox, one_line(e))
            raise
        reruns = getattr(sandbox, "infra_retries", 0) - before
        if reruns > 0:
            self.infra_retries += reruns
            self.screen.post_message(SandboxReran(self.run_id, self.infra_retries))
        return verdict

    def run_many(self, jobs: Sequence[Job],
                 on_result: Callable[[int, Verdict], None] | None = None) -> list[Verdict]:
        verdicts = []
        for i, job in enumerate(jobs):
            verdicts.append(self.run(job))
            if on_result is not None:
                on_result(i, verdicts[-1])
        return verdicts

    def close(self) -> None:
        """Nothing: the session owns the sandbox."""

    def __enter__(self) -> SessionSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def one_line(e: BaseException) -> str:
    """An exception as the one line a status or notification shows."""
    text = str(e).strip()
    return text.splitlines()[0][:300] if text else type(e).__name__
