"""The top bar: the four screens with their keys (clickable) and the agents/sandbox status."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Static

MODES: tuple[tuple[str, str, str], ...] = (
    ("agents", "f2", "Agents"),
    ("collaborate", "f3", "Collaborate"),
    ("train", "f4", "Train"),
    ("bench", "f5", "Bench"),
)


class NavBar(Horizontal):
    """Which screen this is, how to reach the others, and whether the agents are ready."""

    def __init__(self, mode: str) -> None:
        super().__init__(id="nav")
        self.mode = mode

    def compose(self) -> ComposeResult:
        parts = []
        for mode, key, label in MODES:
            style = "reverse bold" if mode == self.mode else "dim"
            parts.append(f"[{style} @click=app.switch_mode('{mode}')] {key.upper()} {label} [/]")
        yield Static(" ".join(parts), id="nav-modes", markup=True)
        yield Static("", id="nav-status")

    def on_mount(self) -> None:
        self.watch(self.app, "status_line", self._show_status)

    def _show_status(self, text: str) -> None:
        self.query_one("#nav-status", Static).update(text)
