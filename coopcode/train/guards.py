"""Collapse guards: a training run watches its own metrics and says when it goes wrong.

Four failures that a rising reward hides (each seen in a committed run):
- `helper-ignored`: main stopped calling the helper. Its call rate over the last window is
  at most a quarter of its first window's (and under 10%), from a start of at least 10%.
  ("Trivial cooperation": one agent does the work, the other's output is unused.)
- `length-collapse`: an agent's completions shrank to at most half their first window's
  mean length (from at least 32 tokens): usually a policy that found a short answer the
  reward pays as much as a real one.
- `reward-without-passes`: the mean reward rose (by at least 0.1 and 15% of where it
  started) while the pass rate did not (up by less than 5 points), or the `tests` term gave
  less than a quarter of the rise: a shaped term is being learned instead of the tests.
  Names the terms that rose.
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

WINDOW = 10
MIN_WINDOW = 3
AGENTS = ("helper", "main", "single")


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


def _length_collapse(history: Sequence[Mapping[str, Any]], w: int) -> list[CollapseWarning]:
    found = []
    for agent in AGENTS:
        ends = _ends(_values(history, f"{agent}/completion_tokens"), w)
        if ends is None:
            continue
        first, last = ends
        start, end = _mean(first), _mean(last)
        if start >= 32 and end <= start / 2:
            found.append(CollapseWarning(
                "length-collapse",
                f"{agent}'s completions collapsed in length: {start:.0f} tokens on average in "
                f"{_span(first)}, {end:.0f} in {_span(last)} ({end / start:.0%})",
                (first[0][0], last[-1][0]),
                {"agent": agent, "start": round(start, 1), "end": round(end, 1)}))
    return found


def _reward_without_passes(history: Sequence[Mapping[str, Any]], w: int) -> list[CollapseWarning]:
    from coopcode.rewards import term_keys

    rewards = _values(history, "reward/mean")
    passes = _values(history, "pass_rate")
    ends, pass_ends = _ends(rewards, w), _ends(passes, w)
    if ends is None or pass_ends is None:
        return []
    (first, last), (pfirst, plast) = ends, pass_ends
    start, end = _mean(first), _mean(last)
    rise, pass_rise = end - start, _mean(plast) - _mean(pfirst)
    if rise < max(0.1, 0.15 * abs(start)):
        return []
    terms = {}
    for key in term_keys(history):
        t_ends = _ends(_values(history, key), w)
        if t_ends is not None:
            terms[key.split("/", 1)[1]] = _mean(t_ends[1]) - _mean(t_ends[0])
    tests_share = terms["tests"] / rise if "tests" in terms else None
    if pass_rise >= 0.05 and (tests_share is None or tests_share >= 0.25):
        return []
    rose = ", ".join(f"{k} {v:+.2f}" for k, v in sorted(terms.items(), key=lambda kv: -kv[1])
                     if v > 0.01)
    share = (f" ({tests_share:.0%} of the rise from the tests)"
             if tests_share is not None else "")
    return [CollapseWarning(
        "reward-without-passes",
        f"the reward rose from {start:.2f} ({_span(first)}) to {end:.2f} ({_span(last)}) while "
        f"the pass rate went {_mean(pfirst):.0%} -> {_mean(plast):.0%}{share}"
        + (f"; the rise came from {rose}" if rose else ""),
        (first[0][0], last[-1][0]),
        {"reward_start": round(start, 4), "reward_end": round(end, 4),
         "pass_start": round(_mean(pfirst), 4), "pass_end": round(_mean(plast), 4),
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
    w = _window(len(rows))
    return [*_helper_ignored(rows, w), *_length_collapse(rows, w),
            *_reward_without_passes(rows, w), *_truncation(rows, w, budget)]


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
