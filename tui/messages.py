"""Messages that carry coopcode's events from worker threads to the screens.

Workers never touch widgets: they post these (thread-safe) and the screen renders them on
the event loop, in order. Each carries the id of the run it belongs to, so stragglers of a
cancelled run are dropped instead of drawn over the next one.
"""

from __future__ import annotations

from textual.message import Message

from coopcode import Event


class CoopEvent(Message):
    """An event from an in-process job (a collaboration, a sandbox run)."""

    def __init__(self, run_id: int, event: Event) -> None:
        super().__init__()
        self.run_id, self.event = run_id, event


class JobEvent(Message):
    """An event from a child-process job (train, bench)."""

    def __init__(self, run_id: int, event: Event) -> None:
        super().__init__()
        self.run_id, self.event = run_id, event


class JobEnded(Message):
    """A child-process job exited (or was detached)."""

    def __init__(self, run_id: int, returncode: int | None, text: str) -> None:
        super().__init__()
        self.run_id, self.returncode, self.text = run_id, returncode, text


class Cancelled(Message):
    """A generation stopped because the user cancelled it."""

    def __init__(self, run_id: int) -> None:
        super().__init__()
        self.run_id = run_id


class SandboxDown(Message):
    """The sandbox could not judge the program (its backend is down): not a verdict."""

    def __init__(self, run_id: int, text: str) -> None:
        super().__init__()
        self.run_id, self.text = run_id, text


class SandboxReran(Message):
    """The sandbox lost a worker while judging and ran the program again (`reruns` times)."""

    def __init__(self, run_id: int, reruns: int) -> None:
        super().__init__()
        self.run_id, self.reruns = run_id, reruns
