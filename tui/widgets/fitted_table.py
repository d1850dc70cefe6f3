"""A table that keeps every figure in view: labels give way (optional ones drop, the name wraps)."""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable


class FittedTable(DataTable[Any]):
    """Rows of text where the label columns give way so the figures stay in view.

    Column `flexible` (a name) takes what the others leave; where it would not fit, the
    `optional` columns (labels a user can do without, like the algorithm) are dropped
    first, then the name wraps over two lines (`magrpo-credit-` / `  0.5b-seed1`): cut from
    the middle, two runs would read alike at 80 columns (`magrpo-c….5b-seed1`). The step
    and the reward beside it are never cut. Refit on resize."""

    def __init__(self, *, flexible: int = 0, optional: tuple[int, ...] = (), **kw: Any) -> None:
        super().__init__(**kw)
        self.flexible, self.optional = flexible, optional
        self.header: tuple[str, ...] = ()
        self.rows_shown: list[tuple[str, ...]] = []
        self.columns_shown: list[int] = []

    def fill(self, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
        self.header, self.rows_shown = header, rows
        widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
        room = self.scrollable_content_region.width - 1  # one column for a scrollbar
        keep = list(range(len(header)))

        def needed() -> int:  # each column pads its cells by one on both sides
            return sum(widths[i] + 2 for i in keep)

        for i in self.optional:
            if room > 0 and needed() > room:
                keep.remove(i)
        flex = widths[self.flexible]
        if room > 0 and needed() > room:
            flex = max(10, flex - (needed() - room))
        self.columns_shown = keep
        self.clear(columns=True)
        for i in keep:
            self.add_column(header[i], width=flex if i == self.flexible else widths[i])
        for row in rows:
            name = wrap_name(row[self.flexible], flex, indent=1)
            self.add_row(*("\n".join(name) if i == self.flexible else row[i] for i in keep),
                         height=len(name))

    def on_resize(self) -> None:
        if self.header:  # after the layout settles: its content region is the new one then
            self.call_after_refresh(self.fill, self.header, self.rows_shown)


def middle_cut(text: str, width: int) -> str:
    """`magrpo-credit-0.5b-seed1` in 15 columns: `magrpo-…b-seed1` (both ends tell runs apart)."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def wrap_name(text: str, width: int, indent: int = 2) -> list[str]:
    """A long identifier over lines of at most `width`, broken after `_`, `-`, `/` or a space
    (`all_prefixes_of_` / `  anti_shuffle`), the lines after the first indented; a piece
    longer than a line is split where it must. Whole: no part of the name is dropped."""
    if width <= indent + 4 or len(text) <= width:
        return [text]
    pieces: list[str] = []
    piece = ""
    for ch in text:
        piece += ch
        if ch in "_-/ ":
            pieces.append(piece)
            piece = ""
    if piece:
        pieces.append(piece)
    lines: list[str] = []
    line = ""
    for piece in pieces:
        room = width - (indent if lines else 0)
        if line and len(line) + len(piece) > room:
            lines.append(line)
            line = ""
            room = width - indent
        while len(piece) > room:  # a piece longer than a line: cut it where it must
            take = room - len(line)
            lines.append(line + piece[:take])
            line, piece = "", piece[take:]
            room = width - indent
        line += piece
    if line:
        lines.append(line)
    return [lines[0]] + [" " * indent + rest for rest in lines[1:]]
