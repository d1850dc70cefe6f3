"""Collaborate's problem list: every built-in set, each under its name, searchable.

HumanEval's 164 problems, then the `compose` splits (problems with a contract for aux, the
`contract` scheme's). A search matches a problem's id, entry point or prompt, or a set's
name (`compose:test` lists that split); each set's heading stays above its matches.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import events
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option, OptionDoesNotExist

from coopcode import Problem
from tui.widgets.fitted_table import wrap_name

# The sets the list shows, in order (`coopcode.problems.BUILT_IN_SETS` names them all; the
# HumanEval splits and compose:all would list the same problems again).
LISTED_SETS = ("humaneval:all", "compose:test", "compose:val", "compose:train")


def load_listed_sets() -> list[tuple[str, list[Problem]]]:
    """(set name, its problems) for each of `LISTED_SETS`."""
    from coopcode import load_problems

    return [(name, load_problems(name)) for name in LISTED_SETS]


def problem_label(problem: Problem, width: int = 0) -> str:
    """`  0 has_close_elements` for HumanEval; the entry point alone elsewhere. Wider than
    `width`: over lines broken at `_` (compose names reach 47 characters), never cut."""
    number = problem.task_id.removeprefix("HumanEval/")
    if number.isdigit():
        return "\n".join(wrap_name(f"{number:>3} {problem.entry_point}", width, indent=4))
    return "\n".join(wrap_name(problem.entry_point, width, indent=2))


def set_heading(name: str, shown: int, total: int) -> Text:
    counted = f"{total}" if shown == total else f"{shown} of {total}"
    title = "HumanEval" if name == "humaneval:all" else name
    return Text.assemble((f"{title} ", "bold"), (counted, "dim"))


class ProblemList(OptionList):
    """The problems of every listed set under its heading (a disabled option); a letter
    typed here goes to the search box (type to search)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.sets: list[tuple[str, list[Problem]]] = []
        self.query_shown = ""
        self.wrap_width = 0  # the names' lines are this wide (0: not laid out yet)

    def set_problems(self, sets: Sequence[tuple[str, list[Problem]]]) -> None:
        self.sets = list(sets)
        self.show_matching("")

    def problem(self, task_id: str) -> Problem | None:
        return next((p for _, problems in self.sets for p in problems if p.task_id == task_id),
                    None)

    def show_matching(self, query: str) -> None:
        """The problems matching `query` (all for ''), the first one highlighted."""
        self.query_shown = query
        q = query.strip().lower()
        options: list[Option] = []
        for name, problems in self.sets:
            whole_set = bool(q) and q in name.lower()
            found = [p for p in problems if not q or whole_set or q in p.task_id.lower()
                     or q in p.entry_point.lower() or q in p.prompt.lower()]
            if not found:
                continue
            options.append(Option(set_heading(name, len(found), len(problems)), disabled=True))
            options += [Option(problem_label(p, self.wrap_width), id=p.task_id) for p in found]
        self.clear_options()
        self.add_options(options)
        first = next((i for i, o in enumerate(options) if not o.disabled), None)
        self.highlighted = first

    def on_resize(self) -> None:
        # Each option's padding takes a column on either side; a scrollbar's width is left
        # out whether one shows or not (else its coming and going would re-wrap the names).
        width = max(0, self.size.width - self.styles.scrollbar_size_vertical - 2)
        if width != self.wrap_width and self.sets:
            self.wrap_width = width
            current = self.highlighted_option.id if self.highlighted_option else None
            self.show_matching(self.query_shown)
            if current:
                self.highlight_problem(current)
        self.wrap_width = width

    @property
    def problem_count(self) -> int:
        """The problems shown (the headings left out)."""
        return sum(1 for i in range(self.option_count) if not self.get_option_at_index(i).disabled)

    def highlight_problem(self, task_id: str) -> None:
        """Highlight `task_id` (scrolled into view), the search cleared if it hid it."""
        for attempt in range(2):
            try:
                self.highlighted = self.get_option_index(task_id)
                return
            except OptionDoesNotExist:
                if attempt == 0:
                    self.screen.query_one("#search", Input).value = ""
                    self.show_matching("")

    def action_cursor_down(self) -> None:
        """Down stops at the last problem (OptionList wraps to the first: 20 Downs in a list
        of 14 landed on the 6th)."""
        following = [i for i in range((self.highlighted or 0) + 1, self.option_count)
                     if not self.get_option_at_index(i).disabled]
        if self.highlighted is None or following:
            super().action_cursor_down()

    def action_cursor_up(self) -> None:
        """Up stops at the first problem; from there it goes up to the search box."""
        earlier = [i for i in range(0, self.highlighted or 0)
                   if not self.get_option_at_index(i).disabled]
        if self.highlighted is not None and not earlier:
            self.screen.query_one("#search", Input).focus()
            return
        super().action_cursor_up()

    def on_key(self, event: events.Key) -> None:
        search = self.screen.query_one("#search", Input)
        if event.key == "backspace":
            text = search.value[:-1]
        elif event.is_printable and event.character and event.character not in "?/":
            text = search.value + event.character  # `?` the keys overlay, `/` the search box
        else:
            return
        event.stop()
        event.prevent_default()
        search.value = text
        search.cursor_position = len(text)
        search.focus()
