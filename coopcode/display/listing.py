"""Listings (`models list`, `checkpoints list`) that read well in a terminal and pipe cleanly.

On a terminal: a rich table. Anywhere else: a header line and one tab-separated line per
row, every value in full, so `coopcode checkpoints list | grep my-run` and `cut -f2` work.
A rich table on a pipe would be laid out for 80 columns and cut names with an ellipsis.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text


def writes_to_terminal(console: Console) -> bool:
    """Whether the console's file is a terminal (rich's own test honours FORCE_COLOR; we don't:
    a pipe stays a pipe, whatever colours are forced)."""
    isatty = getattr(console.file, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed file
        return False


def _cell(value: str) -> str:
    # A tab or newline inside a value would shift every column after it.
    return " ".join(value.split("\t")).replace("\r", " ").replace("\n", " ")


def print_listing(console: Console, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """`rows` under `columns`: a table on a terminal, tab-separated lines otherwise."""
    if writes_to_terminal(console):
        table = Table()
        for i, column in enumerate(columns):
            # The first column names the row: kept whole; the others fold to fit the width.
            table.add_column(column, no_wrap=i == 0, overflow="fold")
        for row in rows:
            table.add_row(*(Text(value) for value in row))  # Text: no markup in names and paths
        console.print(table)
        return
    lines = ["\t".join(_cell(v) for v in row) for row in (columns, *rows)]
    console.file.write("\n".join(lines) + "\n")
    console.file.flush()
