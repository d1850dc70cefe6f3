"""Rich renderings of coopcode's events and results for the terminal."""

from __future__ import annotations

import time
from typing import Any

from rich.columns import Columns
from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from coopcode.core import events as ev
from coopcode.evaluation.report import format_ci, format_se
from coopcode.records.vocabulary import Role
from coopcode.rewards import format_terms
from coopcode.schemes import has_helper

STATUS_STYLE = {
    "passed": "bold green",
    "failed": "bold red",
    "error": "bold magenta",
    "timeout": "bold yellow",
    "syntax_error": "bold red",
    "no_tests": "yellow",
    "sandbox_error": "bold red",
}


def code_panel(title: str, code: str, style: str = "cyan") -> Panel:
    body: Any = Syntax(code.rstrip() or "# (nothing)", "python", theme="monokai",
                       line_numbers=False, word_wrap=True)
    return Panel(body, title=title, title_align="left", border_style=style)


class LogPrinter:
    """Prints Log events (and errors) to a console, usually stderr."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.Log):
            style = "yellow" if event.level == "warning" else "dim"
            self.console.print(Text(event.message, style=style))
        elif isinstance(event, ev.Failed):
            self.console.print(Text(f"error: {event.message}", style="bold red"))


class LiveAgents:
    """Streams sample 0 of each agent side by side while the agents write."""

    TAIL = 18  # lines of each agent shown while streaming

    def __init__(self, console: Console) -> None:
        self.console = console
        self.text: dict[str, str] = {}
        self.tokens: dict[str, int] = {}
        self.started = time.time()
        self.live: Live | None = None
        self.logs = LogPrinter(console)

    def _view(self) -> Columns:
        panels = []
        order: dict[str, int] = {Role.HELPER: 0, Role.MAIN: 1}
        for role in sorted(self.text, key=lambda r: order.get(r, 2)):
            lines = self.text[role].splitlines()[-self.TAIL:]
            rate = self.tokens[role] / max(time.time() - self.started, 1e-6)
            panels.append(Panel(Syntax("\n".join(lines), "python", theme="monokai", word_wrap=True),
                                title=f"{role} ({rate:.1f} tok/s)", title_align="left",
                                border_style="blue" if role == Role.HELPER else "green"))
        return Columns(panels, expand=True, equal=True)

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.TokenDelta):
            if event.sample != 0:
                return
            key = event.agent if event.turn == 1 else f"{event.agent} (turn {event.turn})"
            self.text[key] = self.text.get(key, "") + event.text
            self.tokens[key] = self.tokens.get(key, 0) + event.tokens
            if self.live is None:
                self.live = Live(self._view(), console=self.console, refresh_per_second=8,
                                 transient=True)
                self.live.start()
            else:
                self.live.update(self._view())
        elif isinstance(event, ev.AttemptReady):
            self.stop()
        else:
            self.logs(event)

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


def tests_table(verdict: dict[str, Any]) -> Table:
    table = Table(title="tests", title_justify="left", expand=True, show_lines=False)
    table.add_column("#", justify="right", width=3)
    table.add_column("result", width=8)
    table.add_column("test", ratio=3, overflow="fold")
    table.add_column("message", ratio=2, overflow="fold")
    for t in verdict.get("tests", []):
        msg = f"{t['error_type']}: {t['message']}" if t.get("error_type") else t.get("message", "")
        table.add_row(str(t["index"] + 1), Text(t["status"], style=STATUS_STYLE.get(t["status"], "")),
                      t["source"].strip(), msg)
    return table


def print_solve(console: Console, result: dict[str, Any]) -> None:
    """The best attempt: both agents' code, the program, its tests and the reward. On a
    terminal in panels and a table; on a pipe or a file as plain lines (`print_solve_plain`)."""
    if not console.is_terminal:
        print_solve_plain(console, result)
        return
    verdict = result.get("verdict") or {}
    scheme = result["scheme"]
    parts: list[Any] = []
    if has_helper(scheme):
        parts.append(code_panel("helper", result["helper_code"], "blue"))
    parts.append(code_panel("main" if has_helper(scheme) else "single agent", result["main_code"], "green"))
    parts.append(code_panel("combined program", result["program"], "white"))
    console.print(Group(*parts))
    if verdict.get("detail"):
        console.print(Text(verdict["detail"], style="red"))
    console.print(tests_table(verdict))
    reward = result.get("reward") or {}
    status = verdict.get("status", "?")
    console.print(
        Text.assemble(
            (f"{status.upper()}", STATUS_STYLE.get(status, "")),
            f"  {verdict.get('n_passed', 0)}/{verdict.get('n_tests', 0)} tests  ",
            ("reward ", "dim"),
            f"{reward.get('total', 0):.2f} ({result.get('reward_name') or 'reward'}: "
            f"{format_terms(reward)})  ",
            ("scheme ", "dim"), scheme,
            ("  sample ", "dim"), f"{result['best_sample'] + 1}/{len(result['attempts'])}",
            ("  time ", "dim"), f"{result['seconds']:.1f}s",
        )
    )
    coop = result.get("cooperation")
    if has_helper(scheme) and isinstance(coop, dict):
        solves = coop.get("helper_solves")
        alone = "not run" if solves is None else "solves it" if solves else "does not solve it"
        console.print(Text.assemble(
            ("cooperation ", "dim"), "main does " + ("" if coop.get("own_work") else "no ")
            + "work of its own with the helper's answer", ("  helper alone ", "dim"), alone,
            *_both_needed(coop), ("  patterns ", "dim"), ", ".join(coop.get("patterns") or []) or "none"))


def _both_needed(coop: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The words "both needed" where a passing pair needed both (the helper's code alone
    fails, main with a stub helper fails: run, not read); none where it was not judged."""
    needed = coop.get("both_needed")
    if needed is None:
        return ()
    return (("  both needed", "bold green"),) if needed else (("  not both needed", "yellow"),)


def print_solve_plain(console: Console, result: dict[str, Any]) -> None:
    """`coopcode solve | less`: each part under a `# title` line, the code as written, one
    line per test, the verdict. No box, no padding: panels laid out at the pipe's width
    came out as 200-column lines of spaces."""
    verdict = result.get("verdict") or {}
    scheme = result["scheme"]
    lines: list[str] = []
    parts = [("helper", result["helper_code"])] if has_helper(scheme) else []
    parts += [("main" if has_helper(scheme) else "single agent", result["main_code"]),
              ("combined program", result["program"])]
    for title, code in parts:
        lines += [f"# {title}", code.rstrip() or "# (nothing)", ""]
    if verdict.get("detail"):
        lines.append(str(verdict["detail"]))
    lines.append("# tests")
    for t in verdict.get("tests", []):
        msg = f"{t['error_type']}: {t['message']}" if t.get("error_type") else t.get("message", "")
        source = " ".join(str(t["source"]).split())
        lines.append(f"{t['index'] + 1:>3} {t['status']:<7} {source}" + (f"  # {' '.join(msg.split())}" if msg else ""))
    reward = result.get("reward") or {}
    status = str(verdict.get("status", "?"))
    lines += ["", f"{status.upper()}  {verdict.get('n_passed', 0)}/{verdict.get('n_tests', 0)} "
              f"tests  reward {reward.get('total', 0):.2f} ({result.get('reward_name') or 'reward'}"
              f": {format_terms(reward)})  scheme {scheme}  sample {result['best_sample'] + 1}/"
              f"{len(result['attempts'])}  time {result['seconds']:.1f}s"]
    coop = result.get("cooperation")
    if has_helper(scheme) and isinstance(coop, dict):
        solves = coop.get("helper_solves")
        alone = "not run" if solves is None else "solves it" if solves else "does not solve it"
        lines.append("cooperation: main does " + ("" if coop.get("own_work") else "no ")
                     + f"work of its own with the helper's answer; helper alone {alone}; "
                     + "".join(f"{words.strip()}; " for words, _ in _both_needed(coop))
                     + f"patterns {', '.join(coop.get('patterns') or []) or 'none'}")
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


class BenchProgress:
    """A progress bar for bench events: samples done, problems done, samples/s, ETA."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.logs = LogPrinter(console)
        self.bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("samples"),
            TextColumn("{task.fields[problems]}"),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self.task: Any = None

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.Started):
            self.bar.start()
            self.task = self.bar.add_task("bench", total=event.total, completed=event.meta.get("resumed", 0),
                                          problems="", rate="")
        elif isinstance(event, ev.Progress) and self.task is not None:
            self.bar.update(self.task, completed=event.done,
                            problems=f"{event.problems_done}/{event.problems_total} problems",
                            rate=f"{event.samples_per_s:.2f} samples/s", description=event.label or "bench")
        elif isinstance(event, ev.Finished):
            self.stop()
        else:
            self.logs(event)

    def stop(self) -> None:
        if self.task is not None:
            self.bar.stop()
            self.task = None


def bench_table(summary: dict[str, Any]) -> Table:
    """One line per method and k: pass@k and acc@k, each with its standard error and 95% interval.

    Long rather than the paper's wide layout: with an interval per number, four k values
    side by side do not fit a terminal (report.md keeps the paper's table too)."""
    from rich import box

    ks = summary["ks"]
    table = Table(title="pass@k / acc@k", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, padding=(0, 1), caption="SE in percentage points; 95% CI: Student t over problems "
                          "(the n samples of a problem are one unit; where all problems score alike, an "
                          "exact bound, never a point)", caption_justify="left")
    table.add_column("Method", overflow="fold")
    for name in ("k", "Pass@k", "SE", "95% CI", "Acc@k", "SE", "95% CI"):
        table.add_column(name, justify="right", no_wrap=True,
                         style="dim" if name in ("SE", "95% CI") else None)
    for r in summary["rows"]:
        for i, k in enumerate(ks):
            p, a = f"pass@{k}", f"acc@{k}"
            # The method's name on its first line, its problem count under it.
            label = r["method"] if i == 0 else (Text(f"{r['problems']} problems", style="dim")
                                                if i == 1 else "")
            table.add_row(label, str(k), f"{100 * r[p]:.2f}%", format_se(r, p),
                          format_ci(r, p, 1, compact=True), f"{100 * r[a]:.2f}%", format_se(r, a),
                          format_ci(r, a, 1, compact=True), end_section=i == len(ks) - 1)
        if len(ks) == 1:
            table.add_row(Text(f"{r['problems']} problems", style="dim"), end_section=True)
    return table


def pattern_line(row: dict[str, Any]) -> str:
    """`own work 12% · helper alone solves 40% · patterns: decorator 80% · ...`: who did the
    work (the headline rates, `coopcode.code_analysis.cooperation`), then the cooperation
    patterns, most common first."""
    head = []
    if row.get("own_work_rate") is not None:
        head.append(f"own work {100 * row['own_work_rate']:.0f}%")
    if row.get("helper_solves_rate") is not None:
        head.append(f"helper alone solves {100 * row['helper_solves_rate']:.0f}%")
    if row.get("both_needed_rate") is not None:
        head.append(f"both needed {100 * row['both_needed_rate']:.0f}% of passing")
    rates = row.get("cooperation") or {}
    shown = sorted(((v, k) for k, v in rates.items() if v), reverse=True)
    patterns = " · ".join(f"{k} {100 * v:.0f}%" for v, k in shown) or "no helper calls to classify"
    return " · ".join([*head, f"patterns: {patterns}"]) if head else patterns


# The cooperation rates a bench summary row carries (coopcode.code_analysis.cooperation), as read.
COOPERATION_RATES = (
    ("main_calls_helper_rate", "main calls the helper"),
    ("uses_helper_rate", "uses its answer"),
    ("own_work_rate", "does own work with it"),
    ("shell_rate", "only wraps it"),
    ("helper_solves_rate", "the helper alone solves the task"),
    ("both_needed_rate", "both needed (of passing samples)"),
)


def cooperation_rates(row: dict[str, Any]) -> str:
    """`main calls the helper 83% · uses its answer 80% · does own work with it 3% · ...`:
    every rate summary.json has for a pair (empty for one agent)."""
    if row.get("own_work_rate") is None and not row.get("cooperation"):
        return ""
    return " · ".join(f"{label} {100 * row[key]:.1f}%" for key, label in COOPERATION_RATES
                      if isinstance(row.get(key), int | float))
