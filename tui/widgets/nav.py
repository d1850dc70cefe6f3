"""The top bar: the four screens with their keys (clickable) and the agents/sandbox status."""

from __future__ import annotations

from rich.text import Text
from textual import events
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
    """Which screen this is, how to reach the others, and whether the agents are ready.

    One row where the status fits beside the screens' names; where it does not (an
    80-column terminal with adapters loaded), the status takes a second row rather than
    lose the adapters' names or the sandbox's state."""

    def __init__(self, mode: str) -> None:
        super().__init__(id="nav")
        self.mode = mode
        self.modes_markup = " ".join(
            f"[{'reverse bold' if m == mode else 'dim'} @click=app.switch_mode('{m}')] "
            f"{key.upper()} {label} [/]" for m, key, label in MODES)

    def compose(self) -> ComposeResult:
        yield Static(self.modes_markup, id="nav-modes", markup=True)
        yield Static("", id="nav-status")

    def on_mount(self) -> None:
        self.watch(self.app, "status_line", self._show_status)

    def on_resize(self, _event: events.Resize) -> None:
        self._fit()

    def _show_status(self, text: str) -> None:
        self.query_one("#nav-status", Static).update(text)
        self._fit()

    def _fit(self) -> None:
        modes = Text.from_markup(self.modes_markup).cell_len
        status = Text(str(getattr(self.app, "status_line", ""))).cell_len
        width = self.size.width or self.app.size.width
        self.set_class(modes + 1 + status > width, "-stacked")
