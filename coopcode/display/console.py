"""The consoles the commands print to: laid out for a terminal, plain on a pipe or a file.

On a terminal rich wraps to the window and pads tables and panels to their width. Written
to a pipe it would do the same at 80 columns: a report path split over two lines, lines
ending in spaces (`coopcode bench | tee log`, `... | grep`). There, a line is never wrapped
(soft wrap), tables and panels are laid out wide enough not to fold, and the spaces that pad
a line's end are dropped as it is written.
"""

from __future__ import annotations

import sys
from typing import IO, Any

from rich.console import Console

# Tables and panels on a pipe are laid out this wide (text lines are never wrapped): wide
# enough that nothing folds, and their padding is stripped from each line's end.
PIPE_WIDTH = 200


class TrailingSpaceStripper:
    """A text stream that writes each line without the spaces at its end."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.pending = ""

    def write(self, text: str) -> int:
        self.pending += text
        if "\n" in self.pending:
            *lines, self.pending = self.pending.split("\n")
            self.stream.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self.pending:
            self.stream.write(self.pending.rstrip(" "))
            self.pending = ""
        self.stream.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.stream.fileno()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def is_terminal(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def make_console(*, stderr: bool = False) -> Console:
    """A console for stdout (or stderr): rich's own on a terminal, plain on anything else."""
    stream = sys.stderr if stderr else sys.stdout
    if is_terminal(stream):
        return Console(stderr=stderr)
    return Console(file=TrailingSpaceStripper(stream), soft_wrap=True,  # type: ignore[arg-type]
                   width=PIPE_WIDTH)
