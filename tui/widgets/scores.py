"""The Bench screen's figures: pass@k / acc@k as the verdicts come in, the table that keeps
every figure in view, and the texts of the Runs tab (a run's line, the paired comparison)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from coopcode import UserError, VerdictReady
from tui.runs import BenchRun


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


class LiveScores:
    """pass@k / acc@k from the verdicts seen so far (problems with all n samples only).

    With the core's estimators and intervals; not the bench's own summary (`run_bench`'s
    Finished event, shown when the run ends), which reads whole sample records the live
    VerdictReady events do not carry (syntax, tokens, rewards, cooperation) and lists a
    scheme only once a problem is complete."""

    def __init__(self, ks: list[int], n: int) -> None:
        self.ks, self.n = ks, n
        self.samples: dict[str, dict[str, dict[int, tuple[bool, float]]]] = defaultdict(dict)

    def add(self, event: VerdictReady) -> None:
        v = event.verdict
        total = v.get("n_tests") or 0
        result = (v.get("status") == "passed", (v.get("n_passed", 0) / total) if total else 0.0)
        self.samples[event.scheme].setdefault(event.task_id, {})[event.sample] = result

    def rows(self) -> list[dict[str, Any]]:
        """Rows like the summary's: means, and their standard error and 95% interval."""
        from coopcode import acc_at_k_by_problem, mean_interval, pass_at_k_by_problem

        rows = []
        for scheme, tasks in self.samples.items():
            done = {t: [s[i] for i in range(self.n)] for t, s in tasks.items()
                    if all(i in s for i in range(self.n))}
            row: dict[str, Any] = {"method": scheme, "problems": len(done)}
            for k in self.ks:
                for metric, by_problem in (
                        (f"pass@{k}", pass_at_k_by_problem({t: [p for p, _ in r] for t, r in done.items()}, k)),
                        (f"acc@{k}", acc_at_k_by_problem({t: [f for _, f in r] for t, r in done.items()}, k))):
                    if not by_problem:
                        row[metric] = 0.0
                        continue
                    est = mean_interval(list(by_problem.values()))
                    row[metric], row[f"{metric}_se"] = est.mean, est.se
                    row[f"{metric}_ci"] = None if est.low is None else [est.low, est.high]
            rows.append(row)
        return rows


def score_cell(r: dict[str, Any], metric: str) -> str:
    """`25.0% ±3.1` over `18.8–31.2%` (the standard error, then the 95% interval), or the
    bare percentage for live rows and summaries that hold no interval."""
    if metric not in r:
        return "—"
    value = _pct(r[metric])
    se, ci = r.get(f"{metric}_se"), r.get(f"{metric}_ci")
    if not isinstance(se, int | float) or not isinstance(ci, list) or len(ci) != 2:
        return value
    return f"{value} ±{100 * se:.1f}\n{100 * ci[0]:.1f}–{100 * ci[1]:.1f}%"


class ScoresTable(DataTable[Any]):
    """A pass@k / acc@k table that keeps every figure in view: one row per method, or, where
    that is wider than the table (80 columns, a few methods), one row per metric with a
    column per method. Refilled as it is resized."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(zebra_stripes=True, **kw)
        self.shown: tuple[list[int], list[tuple[str, dict[str, Any]]]] = ([1], [])
        self.transposed = False

    def on_resize(self) -> None:
        self.call_after_refresh(self.fill, *self.shown)  # after the layout settles

    def fill(self, ks: list[int], rows: list[tuple[str, dict[str, Any]]]) -> None:
        self.shown = (ks, rows)
        metrics = [*[f"pass@{k}" for k in ks], *[f"acc@{k}" for k in ks]]
        header = ["method", *metrics, "problems"]
        body = [[label, *[score_cell(r, m) for m in metrics], str(r.get("problems", "?"))]
                for label, r in rows]
        wide = _widths(header, body)
        available = self.scrollable_content_region.width
        if not body and available and sum(w + 2 for w in wide) > available:
            self.transposed = True  # nothing yet: the metrics to come, one per row
            self._put([""], [[name] for name in header[1:]], cap=None)
            return
        if body and available and sum(w + 2 for w in wide) > available:
            # Too wide: a row per metric, a column per method.
            flipped = [[name, *(row[i] for row in body)] for i, name in enumerate(header) if i]
            flipped_header = ["", *(row[0] for row in body)]
            room = available - (_widths(flipped_header, flipped)[0] + 2)
            per_method = max(10, room // len(body) - 2)
            # Labels may be cut to fit, never the figures (at least 10 columns each).
            self.transposed = True
            self._put(flipped_header, flipped, cap=per_method)
            return
        self.transposed = False
        self._put(header, body, cap=None)

    def _put(self, header: list[str], body: list[list[str]], cap: int | None) -> None:
        # Explicit widths: auto widths were seen to stay at the header's when refilled on screen.
        self.clear(columns=True)
        for i, (name, width) in enumerate(zip(header, _widths(header, body), strict=True)):
            keep = max((len(line) for row in body for line in row[i].split("\n")), default=0)
            if cap is not None and i:
                width = max(keep, min(width, cap))  # the column's figures always fit
            self.add_column(name[:width] if cap is not None else name, width=width)
        for row in body:
            self.add_row(*row, height=max(cell.count("\n") + 1 for cell in row))


def _widths(header: list[str], body: list[list[str]]) -> list[int]:
    return [max([len(name), *(len(line) for row in body for line in row[i].split("\n"))])
            for i, name in enumerate(header)]


def fill_scores(table: ScoresTable, ks: list[int], rows: list[tuple[str, dict[str, Any]]]) -> None:
    """A pass@k / acc@k table: one row per (label, summary row), two lines where intervals are known."""
    table.fill(ks, rows)


def paired_text(paths: list[str]) -> Text:
    """The paired comparison of the chosen runs, each against the first (`coopcode compare`)."""
    from coopcode import compare_runs, pair_up

    if len(paths) < 2:
        return Text("choose two or more runs: each is paired with the first over the problems "
                    "they share", style="dim")
    try:
        comparisons = [compare_runs(a, b) for a, b in pair_up(paths)]
    except UserError as e:
        return Text(f"cannot pair: {e}", style="yellow")
    out = Text()
    for c in comparisons:
        out.append(f"{c['b']['label']} − {c['a']['label']}", style="bold")
        out.append(f"  {c['shared_problems']} shared problems\n", style="dim")
        for row in c["per_k"]:
            low, high = row["diff_low"], row["diff_high"]
            style = "green" if low is not None and low > 0 else (
                "red" if high is not None and high < 0 else "")
            ci = "" if low is None or high is None else f" [{100 * low:+.1f}, {100 * high:+.1f}]"
            out.append(f"  pass@{row['k']} ")
            out.append(f"{100 * row['diff_mean']:+.1f} pts{ci}", style=style)
            out.append(f"  {row['gained']} gained / {row['lost']} lost, sign p "
                       f"{row['p_sign']:.3g}\n", style="dim")
        for note in c["notes"]:
            out.append(f"  note: {note}\n", style="yellow")
    return out


def run_prompt(run: BenchRun) -> Text:
    """A run in the list: each method's pass@k for the run's smallest k, then its name and
    methods (`25.0% 30.0% pass@1 tiny · sequential, single`). The figures come first: a
    narrow list cuts the end of the line, and names are what may go."""
    k = min(run.ks) if run.ks else 1
    figures = [r.get(f"pass@{k}") for r in run.rows]
    text = Text(" ".join(_pct(f) if isinstance(f, int | float) else "?" for f in figures),
                style="bold")
    if figures:
        text.append(f" pass@{k}  ", style="dim")
    text.append(run.name)
    if run.rows:
        text.append(" · " + ", ".join(str(r.get("method", "?")) for r in run.rows), style="dim")
    return text
