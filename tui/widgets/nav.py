"""The top bar: the four screens with their keys (clickable) and the agents/sandbox status."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Static

from tui.widgets.fitted_table import middle_cut

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

    def _show_status(self, _text: str) -> None:
        self._fit()

    def _fit(self) -> None:
        text = str(getattr(self.app, "status_line", ""))
        modes = Text.from_markup(self.modes_markup).cell_len
        width = self.size.width or self.app.size.width
        stacked = modes + 1 + Text(text).cell_len > width
        self.set_class(stacked, "-stacked")
        if stacked:
            text = fit_status(text, width - 1)  # its row has a column of padding
        self.query_one("#nav-status", Static).update(text)


def fit_status(text: str, width: int) -> str:
    """The status in `width` columns: the sandbox's state whole, the agents' names
    shortened from the middle (`qwen2.5-co…-instruct + compose-magrpo-0.5b (helper+main)`)
    where the whole line does not fit (a cut state, `sandbox: doc…`, would say nothing)."""
    if len(text.rstrip()) <= width:
        return text
    who, sep, sandbox = text.rstrip().rpartition(" · ")
    if not sep:
        return middle_cut(text.rstrip(), width)
    room = width - len(sep) - len(sandbox)
    model, plus, adapters = who.partition(" + ")
    if plus and len(adapters) + len(plus) + 8 <= room:  # the adapters whole, the model cut
        return f"{middle_cut(model, room - len(plus) - len(adapters))}{plus}{adapters}{sep}{sandbox}"
    return f"{middle_cut(who, max(room, 8))}{sep}{sandbox}"


def adapters_name(helper: str | None, main: str | None) -> str:
    """`compose-magrpo-0.5b (helper+main)` for one run's pair, `main: compose-grpo-0.5b` for
    one agent's, `helper: X, main: Y` for two runs; '' for none. The run's name where an
    adapter is a run's `helper/` or `main/`, else the folder as given."""
    names = {}
    for role, path in (("helper", helper), ("main", main)):
        if path:
            parts = path.rstrip("/").split("/")
            names[role] = parts[-2] if len(parts) > 1 and parts[-1] == role else path
    if len(names) == 2 and len(set(names.values())) == 1:
        return f"{names['helper']} (helper+main)"
    return ", ".join(f"{role}: {name}" for role, name in names.items())
