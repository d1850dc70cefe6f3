"""Collapse guards: a training run watches its own metrics and says when it goes wrong.

Six failures that a rising reward hides (all but `truncation` seen in committed runs):
- `helper-ignored`: main stopped calling the helper. Its call rate over the last window is
  at most a quarter of its first window's (and under 10%), from a start of at least 10%.
  (One agent does the work, the other's output is unused.)
- `trivial-main`: the mirror: main became a shell around the helper. The share of joint
  actions where main uses the helper but does no work of its own with its answer
  (`coop/shell`, `coopcode.code_analysis.own_work`) reached half in the last window, at
  least twice its first window's; the message adds how often the helper alone solved the
  task there (`coop/helper_solves`).
- `length-collapse`: an agent's code shrank to at most half its first window's size: lines
  of code without docstrings and comments (`<agent>/code_lines`, from at least 4 lines), so
  a docstring main copies from the prompt does not count as code; a run whose metrics lack
  it is judged on completion tokens (from at least 32). Usually a policy that found a
  short answer the reward pays as much as a real one.
- `reward-without-passes`: the mean reward rose (by at least 0.1 and 15% of where it
  started) while the pass rate did not (up by less than 5 points), or while the reward's
  terms other than the tests gave more of the rise than the tests did: a shaped term is
  being learned instead of the tests. The pass rate is the validation split's
  (`val/pass@1`, first evaluation against the last: `coopcode train --eval-every`) where
  the run has one, else the training problems' (each step is another problem: noisy, and
  the message says so). Names the terms that rose.
- `constant-answers`: the task's function (main's, or the single agent's) answers every input
  with one literal (`return 2`; `<agent>/constant_answers`, `coopcode.code_analysis.program.
  answers_a_constant`) in at least a quarter of the last window's completions, at least
  twice the first window's share: the tests pay partial credit and a fixed guess passes
  some of them, so a run can move from none of main's answers to nearly all of them in a
  few dozen steps.
- `truncation`: at least 20% of a window's completions stopped at the token budget: the
  reward then scores code that was cut off, and the budget (`--max-new-tokens`) is too
  small for what the agents write.

Windows are 10 steps (a third of the run when it is shorter, at least 3 steps; the guards
wait for two windows). Steps are the metrics' own numbers, so the warnings name them. Tested
on metric streams (tests/train/test_guards.py) and on the committed runs: `magrpo-0.5b`
warns, `grpo-0.5b` does not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from coopcode.records.vocabulary import Role

WINDOW = 10
MIN_WINDOW = 3
AGENTS = (Role.HELPER, Role.MAIN, Role.SINGLE)


@dataclass(frozen=True)
class CollapseWarning:
    """One guard's finding: what, over which steps, with the figures behind it."""

    kind: str
    message: str  # one line, naming the steps and the figures
    steps: tuple[int, int]  # the first and last step of the evidence
    figures: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["steps"] = list(self.steps)
        return d


def _window(n: int) -> int:
    return max(MIN_WINDOW, min(WINDOW, n // 3))


def _values(history: Sequence[Mapping[str, Any]], key: str) -> list[tuple[int, float]]:
    return [(int(r["step"]), float(r[key])) for r in history
            if isinstance(r.get(key), int | float) and isinstance(r.get("step"), int)]


def _mean(points: Sequence[tuple[int, float]]) -> float:
    return sum(v for _, v in points) / len(points)


def _span(points: Sequence[tuple[int, float]]) -> str:
    return f"steps {points[0][0]}-{points[-1][0]}"


def _ends(points: list[tuple[int, float]], w: int) -> tuple[list[tuple[int, float]], list[tuple[int, float]]] | None:
    if len(points) < 2 * w:
        return None
    return points[:w], points[-w:]


def _helper_ignored(history: Sequence[Mapping[str, Any]], w: int) -> list[CollapseWarning]:
    points = _values(history, "main_calls_helper")
    ends = _ends(points, w)
    if ends is None:
        return []
    first, last = ends
    start, end = _mean(first), _mean(last)
    low = min(0.1, start / 4)
    if start < 0.1 or end > low:
        return []
    # The first step from which every window stays low: where the collapse began.
    since = last[0][0]
    for i in range(len(points) - w, -1, -1):
        if _mean(points[i:i + w]) > low:
            break
        since = points[i][0]
    return [CollapseWarning(
        "helper-ignored",
        f"main stopped calling the helper: {start:.0%} of joint actions in {_span(first)}, "
        f"{end:.0%} in {_span(last)} (at most {low:.0%} in every {w}-step window from step "
        f"{since} on)",
        (since, last[-1][0]), {"start": round(start, 4), "end": round(end, 4), "since": since})]


def _trivial_main(history: Sequence[Mapping[str, Any]], w: int) -> list[CollapseWarning]:
    ends = _ends(_values(history, "coop/shell"), w)
    if ends is None:
        return []
    first, last = ends
    start, end = _mean(first), _mean(last)
    if end < 0.5 or end < 2 * start:
        return []
    solves = [p for p in _values(history, "coop/helper_solves") if p[0] >= last[0][0]]
    alone = (f"; the helper alone solved the task in {_mean(solves):.0%} of them"
             if solves else "")
    return [CollapseWarning(
        "trivial-main",
        f"main became a shell around the helper: it used the helper's answer without work of "
        f"its own in {start:.0%} of joint actions in {_span(first)}, {end:.0%} in "
        f"{_span(last)}{alone}",
        (first[0][0], last[-1][0]),
        {"start": round(start, 4), "end": round(end, 4),
         **({"helper_solves": round(_mean(solves), 4)} if solves else {})})]


def _length_collapse(history: Sequence[Mapping[str, Any]], w: int) -> list[CollapseWarning]:
    found = []
    for agent in AGENTS:
        # Lines of code without docstrings where the run measured them, else tokens.
        measures = [(unit, least, got) for key, unit, least in (
            (f"{agent}/code_lines", "lines", 4), (f"{agent}/completion_tokens", "tokens", 32))
            if (got := _ends(_values(history, key), w)) is not None]
        if not measures:
            continue
        unit, least, ends = measures[0]
        first, last = ends
        start, end = _mean(first), _mean(last)
        if start >= least and end <= start / 2:
            what = "code" if unit == "lines" else "completions"
            found.append(CollapseWarning(
                "length-collapse",
                f"{agent}'s {what} collapsed in length: {start:.0f} {unit} on average in "
                f"{_span(first)}, {end:.0f} in {_span(last)} ({end / start:.0%})",
                (first[0][0], last[-1][0]),
                {"agent": agent, "unit": unit, "start": round(start, 1), "end": round(end, 1)}))
    return found


def _constant_answers(history: Sequence[Mapping[str, Any]], w: int) -> list[CollapseWarning]:
    found = []
    for agent in (Role.MAIN, Role.SINGLE):
        ends = _ends(_values(history, f"{agent}/constant_answers"), w)
        if ends is None:
            continue
        first, last = ends
        start, end = _mean(first), _mean(last)
        if end >= 0.25 and end >= 2 * start:
            found.append(CollapseWarning(
                "constant-answers",
                f"{agent} answers with a constant: its function returns one literal whatever "
                f"the input in {end:.0%} of completions in {_span(last)} ({start:.0%} in "
                f"{_span(first)}): the tests' partial credit pays a guess",
                (first[0][0], last[-1][0]),
                {"agent": agent, "start": round(start, 4), "end": round(end, 4)}))
    return found


def _pass_rates(history: Sequence[Mapping[str, Any]], w: int) -> tuple[float, float, str] | None:
    """(where the pass rate started, where it ended, what it is): the validation split's
    first and last evaluation when the run has two, else the training windows'."""
    val = _values(history, "val/pass@1")
    if len(val) >= 2:
        return val[0][1], val[-1][1], (f"the validation pass@1 went {val[0][1]:.0%} (step "
                                       f"{val[0][0]}) -> {val[-1][1]:.0%} (step {val[-1][0]})")
    ends = _ends(_values(history, "pass_rate"), w)
    if ends is None:
        return None
    start, end = _mean(ends[0]), _mean(ends[1])
    return start, end, (f"the training pass rate went {start:.0%} -> {end:.0%} (one problem a "
                        "step: noisy; --eval-every measures it on fixed problems)")


def _reward_without_passes(history: Sequence[Mapping[str, Any]], w: int) -> list[CollapseWarning]:
    from coopcode.rewards import term_keys

    ends = _ends(_values(history, "reward/mean"), w)
    passes = _pass_rates(history, w)
    if ends is None or passes is None:
        return []
    first, last = ends
    start, end = _mean(first), _mean(last)
    rise = end - start
    if rise < max(0.1, 0.15 * abs(start)):
        return []
    pass_start, pass_end, said = passes
    terms = {}
    for key in term_keys(history):
        t_ends = _ends(_values(history, key), w)
        if t_ends is not None:
            terms[key.split("/", 1)[1]] = _mean(t_ends[1]) - _mean(t_ends[0])
    from_tests = terms.get("tests")
    shaped = rise - from_tests if from_tests is not None else None
    if pass_end - pass_start >= 0.05 and (shaped is None or shaped <= (from_tests or 0.0)):
        return []
    rose = ", ".join(f"{k} {v:+.2f}" for k, v in sorted(terms.items(), key=lambda kv: -kv[1])
                     if v > 0.01)
    share = (f" ({from_tests / rise:.0%} of the rise from the tests)"
             if from_tests is not None else "")
    return [CollapseWarning(
        "reward-without-passes",
        f"the reward rose from {start:.2f} ({_span(first)}) to {end:.2f} ({_span(last)}) while "
        f"{said}{share}" + (f"; the rise came from {rose}" if rose else ""),
        (first[0][0], last[-1][0]),
        {"reward_start": round(start, 4), "reward_end": round(end, 4),
         "pass_start": round(pass_start, 4), "pass_end": round(pass_end, 4),
         "terms": {k: round(v, 4) for k, v in terms.items()}})]


def _truncation(history: Sequence[Mapping[str, Any]], w: int, budget: int | None) -> list[CollapseWarning]:
    points = _values(history, "truncated_rate")
    if len(points) < w:
        return []
    worst_i = max(range(len(points) - w + 1), key=lambda i: _mean(points[i:i + w]))
    worst = points[worst_i:worst_i + w]
    rate = _mean(worst)
    if rate < 0.2:
        return []
    limit = f"the {budget}-token budget" if budget else "the token budget"
    return [CollapseWarning(
        "truncation",
        f"{rate:.0%} of completions stopped at {limit} in {_span(worst)} (last {w} steps: "
        f"{_mean(points[-w:]):.0%}): the reward scored cut-off code; raise --max-new-tokens",
        (worst[0][0], worst[-1][0]), {"rate": round(rate, 4), "last": round(_mean(points[-w:]), 4),
                                      "budget": budget})]


def collapse_warnings(history: Sequence[Mapping[str, Any]],
                      budget: int | None = None) -> list[CollapseWarning]:
    """Every guard's warnings for a run's metrics (one record per step, as metrics.jsonl)."""
    rows = [r for r in history if isinstance(r.get("step"), int)]
    w = _window(sum(r["step"] > 0 for r in rows))  # step 0: the validation before training
    return [*_helper_ignored(rows, w), *_trivial_main(rows, w), *_length_collapse(rows, w),
            *_constant_answers(rows, w), *_reward_without_passes(rows, w),
            *_truncation(rows, w, budget)]


class CollapseWatch:
    """Says each kind of warning once while a run goes on (per agent for lengths)."""

    def __init__(self, budget: int | None = None) -> None:
        self.budget = budget
        self.said: set[tuple[str, str]] = set()

    def new(self, history: Sequence[Mapping[str, Any]]) -> list[CollapseWarning]:
        out = []
        for w in collapse_warnings(history, self.budget):
            key = (w.kind, str(w.figures.get("agent", "")))
            if key not in self.said:
                self.said.add(key)
                out.append(w)
        return out
