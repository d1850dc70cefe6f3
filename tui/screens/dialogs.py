"""Small modal dialogs: ask for a path, confirm, and what to do with running jobs on quit."""

from __future__ import annotations

from typing import TypeVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

ResultT = TypeVar("ResultT")


def event_clock() -> float:
    """Now, on the clock Textual stamps every message with (`Message.time`): the one a key's
    time was read on."""
    return Message().time


class PathDialog(ModalScreen[str | None]):
    """One line of input (a file path); Enter accepts, Esc cancels."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="dialog.cancel")]

    def __init__(self, title: str, value: str = "", placeholder: str = "") -> None:
        super().__init__(classes="dialog-screen")
        self.title_text, self.value, self.placeholder = title, value, placeholder

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="dialog-title")
            yield Input(self.value, placeholder=self.placeholder, id="path")
            yield Label("Enter to accept · Esc to cancel", classes="dim")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)


class DecisionDialog(ModalScreen[ResultT]):
    """A dialog a key answers: keys typed before it was on screen do not.

    On a machine busy loading a model, the interface can lag the keyboard by seconds; a
    second Esc, typed because the first seemed to do nothing, would reach the dialog the
    first one opened and close it unseen. A key carries the time it was read from the
    terminal: one read before the dialog was mounted was meant for the screen below, and is
    dropped (by the app: a key's bindings are looked up when it reaches the app, on whatever
    screen is on top by then).
    """

    def __init__(self, *, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self.shown_at = event_clock()

    def on_mount(self) -> None:
        self.shown_at = event_clock()

    def drops_key(self, event: events.Key) -> bool:
        """Whether `event` was typed before this dialog was on screen (the app drops it)."""
        return event.time < self.shown_at


class ConfirmDialog(DecisionDialog[bool]):
    """A yes/no question (y / n keys or the buttons)."""

    BINDINGS = [
        Binding("y", "dismiss(True)", "Yes", id="dialog.yes"),
        Binding("n,escape", "dismiss(False)", "No", id="dialog.no"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__(classes="dialog-screen")
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.question, classes="dialog-title")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Yes (y)", id="yes", variant="error")
                yield Button("No (n)", id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class QuitDialog(DecisionDialog[str]):
    """Quitting while child jobs run: stop them, detach (they go on), or stay."""

    BINDINGS = [
        Binding("s", "dismiss('stop')", "Stop", id="quit.stop"),
        Binding("d", "dismiss('detach')", "Detach", id="quit.detach"),
        Binding("escape,c", "dismiss('cancel')", "Cancel", id="quit.cancel"),
    ]

    def __init__(self, running: list[str]) -> None:
        super().__init__(classes="dialog-screen")
        self.running = running

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"Still running: {', '.join(self.running)}.", classes="dialog-title")
            yield Label("Stop saves and ends the run (rerun resumes it). Detach quits and "
                        "leaves it running; its events keep going to its log file.")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Stop (s)", id="stop", variant="error")
                yield Button("Detach (d)", id="detach", variant="primary")
                yield Button("Cancel (esc)", id="cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id or "cancel")
