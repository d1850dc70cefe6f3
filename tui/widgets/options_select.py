"""A drop-down that says which options it offers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import RenderableType
from textual.widgets import Select


class OptionsSelect(Select[Any]):
    """A `Select` whose `options` are readable: Textual's keeps them private, and a screen
    that refreshes a list (runs found on disk) or adds one (a folder typed) needs them."""

    def __init__(self, options: Iterable[tuple[RenderableType, Any]], **kwargs: Any) -> None:
        offered = list(options)
        super().__init__(offered, **kwargs)
        self._offered = offered

    @property
    def options(self) -> list[tuple[RenderableType, Any]]:
        """The (prompt, value) pairs offered, the blank choice left out."""
        return list(self._offered)

    def set_options(self, options: Iterable[tuple[RenderableType, Any]]) -> None:
        offered = list(options)
        super().set_options(offered)
        self._offered = offered
