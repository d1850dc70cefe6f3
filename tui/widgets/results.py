"""What the sandbox said: the tests table and the verdict/reward/cooperation summary."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from typing import Any

from rich.text import Text
from textual.markup import escape
from textual.widgets import DataTable, Static

from coopcode import STATUS_STYLE, Cooperation, format_terms, get_scheme, has_helper, scheme_names


class TestsTable(DataTable[Any]):
    """One row per test: number, result, the test source and the message (what the program
    returned, where the sandbox has it). Where a row is wider than the table (80 columns),
    the test and the message wrap within their columns rather than run off its edge."""

    __test__ = False  # not a pytest class, despite the name

    COLUMNS = ("#", "result", "test", "message")

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.verdict: dict[str, Any] = {}

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True
        self.add_columns(*self.COLUMNS)

    def on_resize(self) -> None:
        if self.verdict:  # after the layout settles: the new width is known then
            self.call_after_refresh(self._refit)

    def _refit(self) -> None:
        """Redraw the verdict shown *now*: a redraw scheduled before a newer verdict arrived
        (the screen's refresh can come after it under load) must not bring back older rows."""
        if self.verdict:
            self.show(self.verdict)

    def forget(self) -> None:
        """No verdict: an empty table that a later resize leaves empty."""
        self.verdict = {}
        self.clear()

    def show(self, verdict: dict[str, Any]) -> None:
        self.verdict = verdict
        rows = []
        for t in verdict.get("tests", []):
            msg = f"{t['error_type']}: {t['message']}" if t.get("error_type") else t.get("message", "")
            rows.append((str(t["index"] + 1), Text(t["status"], style=STATUS_STYLE.get(t["status"], "")),
                         " ".join(t["source"].split()), " ".join(msg.split())))
        widths = [max([len(label), *(c.cell_len if isinstance(c, Text) else len(c)
                                     for c in (r[i] for r in rows))])
                  for i, label in enumerate(self.COLUMNS)]
        said = any(r[3] for r in rows)  # no message at all (every test passed): no column
        if not said:
            widths[3] = -2  # with its padding, it takes no room
        # The width less a scrollbar's, whether one shows or not: a refit when the scrollbar
        # comes or goes would give another layout (and a snapshot taken between, a third).
        room = self.size.width - self.styles.scrollbar_size_vertical if self.size.width else 0
        test_w, msg_w = _fit_text_columns(widths, room)
        # Explicit widths measured here: auto widths were seen to keep the header's width
        # when the table is refilled while on screen.
        self.clear(columns=True)
        shown = zip(self.COLUMNS, (widths[0], widths[1], test_w, msg_w), strict=True)
        for label, width in list(shown)[:4 if said else 3]:
            self.add_column(label, width=width)
        for number, status, source, msg in rows:
            source_lines = _wrap(source, test_w)
            msg_lines = _wrap(msg, msg_w) if said else []
            cells = [number, status, "\n".join(source_lines)] + (["\n".join(msg_lines)] if said else [])
            self.add_row(*cells, height=max(len(source_lines), len(msg_lines)))


def _fit_text_columns(widths: list[int], room: int) -> tuple[int, int]:
    """The test's and the message's column widths: as wide as their text where the table
    has the room (`room` columns, a scrollbar's left out; 0: not laid out, no limit but
    120), else sharing what the number and the result leave, the message at least a third."""
    test, message = min(widths[2], 120), min(widths[3], 120)
    if room <= 0:
        return test, max(message, 0)
    # Each cell pads 1+1 (a message column of -2: none, no padding either).
    left = room - sum(w + 2 for w in widths[:2]) - 2 - (message + 2 if message < 0 else 2)
    if message < 0:
        return max(10, min(test, left)), 0
    if test + message <= left:
        return test, message
    message = min(message, max(left // 3, left - test, 10))
    return max(10, left - message), message


def _wrap(text: str, width: int) -> list[str]:
    """`text` over lines of `width` (at spaces where it can), at least one line."""
    if len(text) <= width:
        return [text]
    return textwrap.wrap(text, width, break_on_hyphens=False) or [""]


def _share(value: Any) -> str:
    return f"{100 * value:.0f}%" if isinstance(value, int | float) else "?"


def agent_lines(agents: dict[str, Any] | None, cooperation: Cooperation,
                agent_rewards: dict[str, float] | None = None) -> list[str]:
    """Each agent judged on its own (`coopcode.records.checks`), one line each, its own
    reward first where the reward pays each agent its own (`own`):
    `helper 1.10 · parses · aux's tests 100% · alone: fails`,
    `main 1.10 · parses · with the reference aux 100% · with a stub helper: fails`."""
    if not agents:
        return []
    rewards = agent_rewards or {}

    def head(role: str) -> str:
        earned = f" [b]{rewards[role]:.2f}[/]" if role in rewards else ""
        return f"[dim]{role}[/]{earned}:"

    def parses(flag: Any) -> str:
        return "parses" if flag is not False else "[red]does not parse[/]"

    helper = [head("helper"), parses(agents.get("helper_parses"))]
    if agents.get("helper_contract") is not None:
        helper.append(f"aux's tests {_share(agents['helper_contract'])}")
    solves = cooperation.helper_solves
    if solves is not None:
        helper.append("alone: [yellow]solves it[/]" if solves else "alone: fails")
    main = [head("main"), parses(agents.get("main_parses"))]
    if agents.get("main_with_reference") is not None:
        main.append(f"with the reference aux {_share(agents['main_with_reference'])}")
    stub = agents.get("main_with_stub")
    if stub is not None:
        main.append("with a stub helper: [yellow]passes[/]" if stub
                    else "with a stub helper: fails")
    return [f"{helper[0]} {' · '.join(helper[1:])}", f"{main[0]} {' · '.join(main[1:])}"]


def both_needed_text(cooperation: Cooperation) -> str:
    """`both needed` (the pair passes, neither agent's code alone does), or why not; '' where
    it was not measured (the pair failed)."""
    if cooperation.both_needed is None:
        return ""
    if cooperation.both_needed:
        return "[b green]both needed[/]"
    return "[yellow]not both needed[/] [dim](one agent's code alone passes)[/]"


def has_contract(scheme: str) -> bool:
    return scheme in scheme_names() and bool(get_scheme(scheme).contract_source)


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
             scheme: str, reruns: int = 0, reward_name: str = "",
             agents: dict[str, Any] | None = None,
             agent_rewards: dict[str, float] | None = None) -> None:
        """The verdict, and for a pair "both needed" beside it; the reward; each agent on its
        own where the scheme has a contract or the reward pays each its own; how main used
        the helper."""
        status = verdict.get("status", "?")
        style = STATUS_STYLE.get(status, "bold")
        parts = escape(format_terms(reward))
        needed = both_needed_text(coop) if has_helper(scheme) else ""
        lines = [
            f"[{style}]{status.upper().replace('_', ' ')}[/] "
            f"{verdict.get('n_passed', 0)}/{verdict.get('n_tests', 0)} tests"
            + (f" · {needed}" if needed else ""),
        ]
        if verdict.get("detail"):
            lines.append(f"[red]{escape(str(verdict['detail']))}[/]")
        if reruns:
            lines.append(f"[yellow]sandbox[/] lost a worker: ran the program again on a fresh "
                         f"one ({reruns} re-run{'s' if reruns > 1 else ''}; not the program's doing)")
        named = f" ({escape(reward_name)})" if reward_name else ""
        lines.append(f"[dim]reward{named}[/] [b]{reward.get('total', 0.0):.2f}[/] = {parts}")
        each = has_helper(scheme) and bool(agents) and (has_contract(scheme) or bool(agent_rewards))
        if each:
            lines += agent_lines(agents, coop, agent_rewards)
        if not has_helper(scheme):
            lines.append("[dim]cooperation[/] single agent (no helper)")
        else:
            # What the lines above say already (both needed; the helper alone) is not said again.
            said = replace(coop, both_needed=None, helper_solves=None if each else coop.helper_solves)
            colour = "green" if coop.calls_helper else "yellow"
            lines.append(f"[dim]cooperation[/] [{colour}]{escape(said.summary)}[/]")
            if coop.patterns:
                lines.append(f"[dim]pattern[/] [b]{escape(', '.join(coop.patterns))}[/]")
        self.update("\n".join(lines))
