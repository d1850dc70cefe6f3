"""The combined program with each line marked by who wrote it: the helper, main, the
problem's prompt (imports, given code), or the user (an edit in the editor)."""

from __future__ import annotations

import difflib

from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text
from textual.widgets import Static

MARKS = {"helper": ("H", "bold blue"), "main": ("M", "bold green"), "prompt": ("·", "dim"),
         "edited": ("✎", "bold yellow"), "blank": (" ", "")}
LEGEND = "H helper · M main · · prompt · ✎ your edit"


def line_authors(program: str, helper_code: str, main_code: str,
                 original: str | None = None) -> list[str]:
    """For each line of `program`: "helper", "main", "prompt", "edited" or "blank".

    A line is the helper's or main's where it matches their code in order (difflib's
    matching blocks: the program is the prompt's context, then the helper's code, then
    main's, `coopcode.code_analysis.program.combine`); a line that is in neither is the prompt's
    when it was in the `original` program (or no original is given), else the user's edit."""
    lines = program.splitlines()
    authors = ["blank" if not line.strip() else "" for line in lines]
    for role, code in (("helper", helper_code), ("main", main_code)):
        theirs = code.splitlines()
        if not theirs:
            continue
        matcher = difflib.SequenceMatcher(a=lines, b=theirs, autojunk=False)
        for a, _b, size in matcher.get_matching_blocks():
            for i in range(a, a + size):
                if not authors[i]:
                    authors[i] = role
    before = set(original.splitlines()) if original is not None else None
    return [a or ("prompt" if before is None or line in before else "edited")
            for a, line in zip(authors, lines, strict=True)]


def marks_text(authors: list[str]) -> Text:
    """The gutter: one mark per line."""
    out = Text()
    for i, author in enumerate(authors):
        mark, style = MARKS[author]
        out.append(mark, style=style)
        if i < len(authors) - 1:
            out.append("\n")
    return out


class MarkedProgram(Static):
    """A read-only program with a gutter of who wrote each line (and the line numbers)."""

    def show(self, program: str, helper_code: str, main_code: str, theme: str = "monokai") -> None:
        """`H   4  def aux(...)`: the mark, the line number, the highlighted line."""
        authors = line_authors(program, helper_code, main_code)
        code = Syntax(program, "python", theme=theme, background_color="default")
        lines = code.highlight(program.rstrip("\n") or " ").split("\n")
        out = Text(no_wrap=True, overflow="ignore")
        width = len(str(len(lines)))
        for i, (author, line) in enumerate(zip(authors, lines, strict=False)):
            mark, style = MARKS[author]
            out.append(mark, style=style)
            out.append(f" {i + 1:>{width}}  ", style="dim")
            out.append_text(_without_background(line))
            out.append("\n")
        out.rstrip()
        self.update(out)


def _without_background(line: Text) -> Text:
    """A highlighted line without the theme's background (it boxed each token)."""
    plain = Text(line.plain, style=_fg(line.style))
    for span in line.spans:
        plain.stylize(_fg(span.style), span.start, span.end)
    return plain


def _fg(style: str | Style) -> Style:
    parsed = Style.parse(style) if isinstance(style, str) else style
    return Style(color=parsed.color, bold=parsed.bold, italic=parsed.italic)
