"""What the sandbox said: the tests table and the verdict/reward/cooperation summary."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.markup import escape
from textual.widgets import DataTable, Static

from coopcode import STATUS_STYLE, Cooperation, format_terms, has_helper


class TestsTable(DataTable[Any]):
    """One row per test: number, result, the test source and the message."""

    __test__ = False  # not a pytest class, despite the name

    COLUMNS = ("#", "result", "test", "message")

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True
        self.add_columns(*self.COLUMNS)

    def show(self, verdict: dict[str, Any]) -> None:
        rows = []
        for t in verdict.get("tests", []):
            msg = f"{t['error_type']}: {t['message']}" if t.get("error_type") else t.get("message", "")
            rows.append((str(t["index"] + 1), Text(t["status"], style=STATUS_STYLE.get(t["status"], "")),
                         " ".join(t["source"].split()), " ".join(msg.split())))
        # Explicit widths measured here: auto widths were seen to keep the header's width
        # when the table is refilled while on screen.
        self.clear(columns=True)
        for i, label in enumerate(self.COLUMNS):
            cells = [c.cell_len if isinstance(c, Text) else len(c) for c in (r[i] for r in rows)]
            self.add_column(label, width=min(max([len(label), *cells]), 120))
        for row in rows:
            self.add_row(*row)


class VerdictSummary(Static):
    """Status and tests passed, the reward breakdown, and the cooperation pattern."""

    def show_idle(self, text: str) -> None:
        self.update(f"[dim]{escape(text)}[/]")

    def show_outage(self, text: str) -> None:
        """The sandbox is down: the program was not judged (no verdict, no test failed)."""
        self.update(f"[b yellow]SANDBOX DOWN[/] the program was not judged\n"
                    f"[dim]{escape(text)}[/]\n"
                    "Ctrl+G runs the tests again (a new sandbox is opened)")

    def show(self, verdict: dict[str, Any], reward: dict[str, float], coop: Cooperation,
             scheme: str, reruns: int = 0, reward_name: str = "") -> None:
        status = verdict.get("status", "?")
        style = STATUS_STYLE.get(status, "bold")
        parts = escape(format_terms(reward))
        lines = [
            f"[{style}]{status.upper().replace('_', ' ')}[/] "
            f"{verdict.get('n_passed', 0)}/{verdict.get('n_tests', 0)} tests",
        ]
        if verdict.get("detail"):
            lines.append(f"[red]{escape(str(verdict['detail']))}[/]")
        if reruns:
            lines.append(f"[yellow]sandbox[/] lost a worker: ran the program again on a fresh "
                         f"one ({reruns} re-run{'s' if reruns > 1 else ''}; not the program's doing)")
        named = f" ({escape(reward_name)})" if reward_name else ""
        lines.append(f"[dim]reward{named}[/] [b]{reward.get('total', 0.0):.2f}[/] = {parts}")
        if not has_helper(scheme):
            lines.append("[dim]cooperation[/] single agent (no helper)")
        else:
            colour = "green" if coop.calls_helper else "yellow"
            lines.append(f"[dim]cooperation[/] [{colour}]{escape(coop.summary)}[/]")
            if coop.patterns:
                lines.append(f"[dim]pattern[/] [b]{escape(', '.join(coop.patterns))}[/]")
        self.update("\n".join(lines))
