"""One bench run, sample by sample: what the helper and main wrote, the program (each line
marked by who wrote it) and the sandbox's verdict, as a user reads evalplus's saved files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from rich.syntax import Syntax
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Label, OptionList, Static, TabbedContent, TabPane
from textual.widgets.option_list import Option

from coopcode import STATUS_STYLE, cooperation_of, format_terms
from tui.widgets.fitted_table import wrap_name
from tui.widgets.marked_program import LEGEND, MarkedProgram
from tui.widgets.results import TestsTable, agent_lines, both_needed_text, has_contract
from tui.widgets.tabs import show_tab


def read_samples(run: Path) -> list[dict[str, Any]]:
    """The sample records of a bench run (samples.jsonl, or the committed .gz), in order;
    a line that does not parse (a torn last line) is skipped."""
    plain, packed = run / "samples.jsonl", run / "samples.jsonl.gz"
    try:
        if plain.exists():
            text = plain.read_text(encoding="utf-8")
        elif packed.exists():
            text = gzip.decompress(packed.read_bytes()).decode("utf-8")
        else:
            return []
    except (OSError, EOFError, UnicodeDecodeError):
        return []
    records = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and "task_id" in record:
            records.append(record)
    return sorted(records, key=lambda r: (str(r.get("scheme")), _task_order(r), r.get("sample", 0)))


def _task_order(record: dict[str, Any]) -> tuple[str, int]:
    prefix, _, number = str(record["task_id"]).rpartition("/")
    return (prefix, int(number)) if number.isdigit() else (str(record["task_id"]), 0)


def sample_label(record: dict[str, Any], width: int = 0) -> Text:
    """`✓ HumanEval/3 #0 sequential 7/7`; wider than `width`, the task's id wraps at `_` and
    `/` (compose ids reach 55 characters: folded, they were cut mid-word)."""
    verdict = record.get("verdict") or {}
    status = str(verdict.get("status", "?"))
    text = Text("✓ " if record.get("passed") else "✗ ", style=STATUS_STYLE.get(status, ""))
    rest = f" #{record.get('sample', 0)} {record.get('scheme', '')} "
    figures = f"{verdict.get('n_passed', 0)}/{verdict.get('n_tests', 0)}"
    task = str(record["task_id"])
    if width and 2 + len(task) + len(rest) + len(figures) > width:
        text.append("\n".join(wrap_name(task, width - 2, indent=2)) + "\n ")
    else:
        text.append(task)
    text.append(rest, style="dim")
    text.append(figures)
    return text


class SamplesScreen(ModalScreen[None]):
    """The samples of one run: the list, and the chosen one's helper, main, program, verdict."""

    BINDINGS = [
        Binding("escape", "dismiss", "Close", id="samples.close"),
        Binding("f7", "show_tab('sample-helper')", "Helper", id="samples.helper", show=False),
        Binding("f8", "show_tab('sample-main')", "Main", id="samples.main", show=False),
        Binding("f9", "show_tab('sample-program')", "Program", id="samples.program", show=False),
        Binding("f10", "show_tab('sample-verdict')", "Verdict", id="samples.verdict", show=False),
    ]
    ACTION_HELP = {"dismiss": "Back to the Bench screen"}
    EXTRA_KEYS = (("↑ ↓ / Enter", "choose a sample"),)

    def __init__(self, run: Path) -> None:
        super().__init__()
        self.run = run
        self.records = read_samples(run)
        self._label_width = 0  # the list's labels are laid out for this width

    def compose(self) -> ComposeResult:
        with Vertical(id="samples-dialog"):
            yield Label(f"{self.run.name}: {len(self.records)} samples · Esc closes",
                        id="samples-title")
            with Horizontal():
                yield OptionList(*[Option(sample_label(r), id=str(i))
                                   for i, r in enumerate(self.records)], id="sample-list")
                with TabbedContent(id="sample-tabs"):
                    for pane, title in (("sample-helper", "F7 Helper"), ("sample-main", "F8 Main")):
                        with TabPane(title, id=pane), VerticalScroll():
                            yield Static(id=f"{pane}-code")
                    # Scrolls both ways: program lines are not wrapped (marks stay line for line).
                    with TabPane("F9 Program", id="sample-program"), \
                            ScrollableContainer(id="sample-program-scroll"):
                        yield MarkedProgram(id="sample-marked")
                    with TabPane("F10 Verdict", id="sample-verdict"):
                        yield Static(id="sample-summary")
                        yield TestsTable(id="sample-tests")
        yield Footer(compact=True, show_command_palette=False)

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit_labels)

    def _fit_labels(self) -> None:
        """The list's labels laid out for its width (long task ids over two lines)."""
        listing = self.query_one("#sample-list", OptionList)
        width = listing.scrollable_content_region.width - 2  # each option's padding
        if width <= 0 or width == self._label_width:
            return
        self._label_width = width
        highlighted = listing.highlighted
        listing.clear_options()  # all at once: a bench has hundreds of samples
        listing.add_options([Option(sample_label(r, width), id=str(i))
                             for i, r in enumerate(self.records)])
        listing.highlighted = highlighted

    def on_mount(self) -> None:
        self.call_after_refresh(self._fit_labels)
        self.query_one("#sample-marked", MarkedProgram).border_subtitle = LEGEND
        if self.records:
            self.query_one("#sample-list", OptionList).highlighted = 0
            self.show_sample(0)
        self.query_one("#sample-list", OptionList).focus()

    @on(OptionList.OptionHighlighted, "#sample-list")
    @on(OptionList.OptionSelected, "#sample-list")
    def _chosen(self, event: OptionList.OptionHighlighted | OptionList.OptionSelected) -> None:
        if event.option.id is not None:
            self.show_sample(int(event.option.id))

    def show_sample(self, index: int) -> None:
        record = self.records[index]
        theme = "monokai" if self.app.current_theme.dark else "github-light"
        helper, main = str(record.get("helper_code") or ""), str(record.get("main_code") or "")
        for pane, code in (("sample-helper", helper), ("sample-main", main)):
            self.query_one(f"#{pane}-code", Static).update(
                Syntax(code or "# (no code: one agent)", "python", theme=theme,
                       line_numbers=True, background_color="default"))
        self.query_one("#sample-marked", MarkedProgram).show(
            str(record.get("program") or ""), helper, main, theme)
        verdict = record.get("verdict") or {}
        self.query_one("#sample-tests", TestsTable).show(verdict)
        self.query_one("#sample-summary", Static).update(verdict_text(record))

    def action_show_tab(self, pane: str) -> None:
        show_tab(self.query_one("#sample-tabs", TabbedContent), pane)


def verdict_text(record: dict[str, Any]) -> Text:
    """Status and tests (and "both needed", measured by running it), the reward with its name
    and terms, each agent on its own (under contract and plan, or `own`), the cooperation."""
    verdict = record.get("verdict") or {}
    status = str(verdict.get("status", "?"))
    text = Text(status.upper().replace("_", " "), style=STATUS_STYLE.get(status, "bold"))
    text.append(f" {verdict.get('n_passed', 0)}/{verdict.get('n_tests', 0)} tests")
    found = cooperation_of(record) if record.get("cooperation") else None
    needed = both_needed_text(found) if found is not None else ""
    if needed:
        text.append(" · ").append_text(Text.from_markup(needed))
    if verdict.get("detail"):
        text.append(f"\n{verdict['detail']}", style="red")
    reward = record.get("reward") or {}
    text.append(f"\nreward ({record.get('reward_name', '?')}) ", style="dim")
    text.append(f"{reward.get('total', 0.0):.2f}", style="bold")
    text.append(f" = {format_terms(reward)}")
    scheme = str(record.get("scheme", ""))
    if found is not None and (has_contract(scheme) or record.get("reward_name") == "own"):
        for line in agent_lines(record.get("agents"), found):
            text.append("\n").append_text(Text.from_markup(line))
    coop = record.get("cooperation") or {}
    if coop.get("patterns"):
        text.append("\npattern ", style="dim")
        text.append(", ".join(coop["patterns"]))
    text.append(f"\n{record.get('n_tokens', '?')} tokens · {record.get('gen_seconds', '?')} s",
                style="dim")
    return text
