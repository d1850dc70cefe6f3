"""`?`: every key of the screen under it, in one overlay (its bindings, then the app's)."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

# Keys every screen has that are no binding of ours.
COMMON_KEYS: tuple[tuple[str, str], ...] = (
    ("Esc", "in an editor: leave it; in a dialog: No / Cancel"),
)
_NAMES = {"escape": "Esc", "question_mark": "?", "slash": "/", "enter": "Enter", "tab": "Tab",
          "space": "Space", "delete": "Del", "pageup": "PgUp", "pagedown": "PgDn"}


def key_label(keys: str) -> str:
    """`ctrl+r,ctrl+b` -> `Ctrl+R / Ctrl+B`, `escape` -> `Esc`, `f2` -> `F2`."""
    shown = []
    for key in keys.split(","):
        *mods, name = key.strip().split("+")
        name = _NAMES.get(name, name.upper() if len(name) <= 3 else name.capitalize())
        shown.append("+".join([*(m.capitalize() for m in mods), name]))
    return " / ".join(shown)


def screen_keys(screen: Screen[Any]) -> list[tuple[str, str, str]]:
    """(keys, what they do, where) for `screen`: its bindings with their help, its other keys
    (EXTRA_KEYS: typing in a list, keys of a widget), then the app's, then the common ones."""
    rows: list[tuple[str, str, str]] = []
    helps: dict[str, str] = getattr(screen, "ACTION_HELP", {})
    for binding in getattr(screen, "BINDINGS", []):
        if isinstance(binding, Binding):
            rows.append((key_label(binding.key), helps.get(binding.action, binding.description),
                         "this screen"))
    for keys, what in getattr(screen, "EXTRA_KEYS", ()):
        rows.append((keys, what, "this screen"))
    app_helps: dict[str, str] = getattr(screen.app, "ACTION_HELP", {})
    for binding in getattr(screen.app, "BINDINGS", []):
        if isinstance(binding, Binding) and binding.action != "help_quit":
            rows.append((key_label(binding.key), app_helps.get(binding.action, binding.description),
                         "everywhere"))
    rows.extend((keys, what, "everywhere") for keys, what in COMMON_KEYS)
    return rows


class KeysScreen(ModalScreen[None]):
    """The keys of the screen it was opened over; Esc, ? or q closes it."""

    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close", id="keys.close")]

    def __init__(self, under: Screen[Any]) -> None:
        super().__init__()
        self.rows = screen_keys(under)
        self.title_text = f"Keys · {type(under).__name__.removesuffix('Screen')}"

    def compose(self) -> ComposeResult:
        table = Table(title=self.title_text, title_style="bold", expand=True, box=None,
                      show_edge=False, pad_edge=False)
        table.add_column("key", style="bold", no_wrap=True)
        table.add_column("what it does", ratio=1)
        table.add_column("where", style="dim", no_wrap=True)
        for row in self.rows:
            table.add_row(*row)
        table.caption = "Esc, ? or q closes · F1: what each screen is for"
        with VerticalScroll(id="keys"):
            yield Static(table, id="keys-table")
