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
from textual.widgets.option_list import Option

from coopcode import Problem

# The sets the list shows, in order (`coopcode.problems.BUILT_IN_SETS` names them all; the
# HumanEval splits and compose:all would list the same problems again).
LISTED_SETS = ("humaneval:all", "compose:test", "compose:val", "compose:train")


def load_listed_sets() -> list[tuple[str, list[Problem]]]:
    """(set name, its problems) for each of `LISTED_SETS`."""
    from coopcode import load_problems

    return [(name, load_problems(name)) for name in LISTED_SETS]


def problem_label(problem: Problem) -> str:
    """`  0 has_close_elements` for HumanEval; the entry point alone elsewhere."""
    number = problem.task_id.removeprefix("HumanEval/")
    if number.isdigit():
        return f"{number:>3} {problem.entry_point}"
    return problem.entry_point


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

    def set_problems(self, sets: Sequence[tuple[str, list[Problem]]]) -> None:
        self.sets = list(sets)
        self.show_matching("")

    def problem(self, task_id: str) -> Problem | None:
        return next((p for _, problems in self.sets for p in problems if p.task_id == task_id),
                    None)

    def show_matching(self, query: str) -> None:
        """The problems matching `query` (all for ''), the first one highlighted."""
        q = query.strip().lower()
        options: list[Option] = []
        for name, problems in self.sets:
            whole_set = bool(q) and q in name.lower()
            found = [p for p in problems if not q or whole_set or q in p.task_id.lower()
                     or q in p.entry_point.lower() or q in p.prompt.lower()]
            if not found:
                continue
            options.append(Option(set_heading(name, len(found), len(problems)), disabled=True))
            options += [Option(problem_label(p), id=p.task_id) for p in found]
        self.clear_options()
        self.add_options(options)
        first = next((i for i, o in enumerate(options) if not o.disabled), None)
        self.highlighted = first

    @property
    def problem_count(self) -> int:
        """The problems shown (the headings left out)."""
        return sum(1 for i in range(self.option_count) if not self.get_option_at_index(i).disabled)

    def on_key(self, event: events.Key) -> None:
        search = self.screen.query_one("#search", Input)
        if event.key == "backspace":
            text = search.value[:-1]
        elif event.is_printable and event.character and event.character != "?":
            text = search.value + event.character  # `?` stays the keys overlay
        else:
            return
        event.stop()
        event.prevent_default()
        search.value = text
        search.cursor_position = len(text)
        search.focus()
