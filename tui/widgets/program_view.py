"""The combined program, editable, with who wrote each line in a gutter beside it."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Static, TextArea

from coopcode import AttemptReady
from tui.widgets.agent_pane import style_code
from tui.widgets.marked_program import LEGEND, line_authors, marks_text


class ProgramView(Horizontal):
    """The program editor and its gutter: the helper, main, the prompt, or you (an edit)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.attempt: AttemptReady | None = None  # whose program the editor started from

    def compose(self) -> ComposeResult:
        yield Static("", id="program-marks")
        # No soft wrap: the gutter beside it marks who wrote each line, line for line.
        program = TextArea.code_editor("", id="program", soft_wrap=False)
        program.border_title = "combined program · editable"
        program.border_subtitle = f"{LEGEND} · Esc leaves the editor"
        yield program

    def on_mount(self) -> None:
        self.watch(self.editor, "scroll_y", lambda _y: self.show_marks(), init=False)

    def on_resize(self) -> None:
        # The marks fit the lines in view: a program shown while its tab was hidden (no
        # height yet) is marked once the tab is laid out.
        self.show_marks()

    @property
    def editor(self) -> TextArea:
        return self.query_one("#program", TextArea)

    def clear(self) -> None:
        """Nothing to show: a new run is writing."""
        self.attempt = None
        self.editor.load_text("")

    def show(self, attempt: AttemptReady) -> None:
        """The program the agents' attempt combined, its lines marked."""
        self.attempt = attempt
        style_code(self.editor)
        self.editor.load_text(attempt.program)
        self.show_marks()

    @on(TextArea.Changed, "#program")
    def show_marks(self) -> None:
        """Who wrote each line of the program in view, in the gutter, line for line with the
        editor's scroll."""
        editor, attempt = self.editor, self.attempt
        marks = self.query_one("#program-marks", Static)
        if attempt is None or not editor.text.strip():
            marks.update("")
            return
        authors = line_authors(editor.text, attempt.helper_code, attempt.main_code,
                               original=attempt.program)
        first = int(editor.scroll_y)
        marks.update(marks_text(authors[first:first + editor.scrollable_content_region.height]))

    def main_in_view(self) -> None:
        """Main's code in the editor's view: at 80x24 the editor shows a few lines, and the
        prompt's imports and the helper's code come first."""
        editor, attempt = self.editor, self.attempt
        if attempt is None:
            return
        authors = line_authors(editor.text, attempt.helper_code, attempt.main_code,
                               original=attempt.program)
        mains = [i for i, a in enumerate(authors) if a == "main"]
        height = editor.scrollable_content_region.height
        if mains and height and mains[-1] >= height:
            editor.scroll_to(y=max(0, min(mains[0], mains[-1] - height + 1)), animate=False)
