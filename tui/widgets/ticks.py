"""A selection list and a checkbox whose unticked boxes are drawn empty.

Textual draws an `X` in every box and only dims the unticked ones: on many terminal themes
an unticked box reads as ticked. Here an unticked box holds a space."""

from __future__ import annotations

from typing import Any

from rich.segment import Segment
from textual.content import Content
from textual.strip import Strip
from textual.widgets import Checkbox, SelectionList
from textual.widgets.option_list import OptionDoesNotExist

EMPTY = " "


class TickList(SelectionList[Any]):
    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        try:
            selection = self.get_option_at_index(self.scroll_offset.y + y)
        except OptionDoesNotExist:
            return strip
        if selection.value in self.selected:
            return strip
        segments = list(strip)
        # [left side, inner mark, right side, space, *prompt] (SelectionList.render_line)
        if len(segments) > 1 and segments[1].text == Checkbox.BUTTON_INNER:
            segments[1] = Segment(EMPTY, segments[1].style)
        return Strip(segments, strip.cell_length)


class TickBox(Checkbox):
    def render(self) -> Content:
        self.BUTTON_INNER = Checkbox.BUTTON_INNER if self.value else EMPTY
        return super().render()
