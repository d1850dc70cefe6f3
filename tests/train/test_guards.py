"""The collapse guards on metric streams (each failure made on purpose, and its healthy twin)
and on the committed runs: `magrpo-0.5b` collapsed and warns, `grpo-0.5b` did not and does not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from coopcode.training.guards import CollapseWatch, collapse_warnings

REPO = Path(__file__).resolve().parents[2]


def stream(steps: int = 40, **series: Any) -> list[dict[str, Any]]:
    """Metrics records: each series is a constant, or a function of the step (1-based)."""
    out = []
    for step in range(1, steps + 1):
        record: dict[str, Any] = {"step": step}
        for key, value in series.items():
            record[key.replace("__", "/")] = value(step) if callable(value) else value
        out.append(record)
    return out


def kinds(history: list[dict[str, Any]], budget: int | None = 192) -> list[str]:
    return [w.kind for w in collapse_warnings(history, budget)]


HEALTHY = dict(main_calls_helper=0.5, main__completion_tokens=110.0, helper__completion_tokens=90.0,
               reward__mean=lambda s: 1.0 + 0.01 * s, pass_rate=lambda s: 0.2 + 0.01 * s,
               truncated_rate=0.05)


def test_a_healthy_run_does_not_warn() -> None:
    assert kinds(stream(**HEALTHY)) == []


def test_main_that_stops_calling_the_helper_warns_naming_the_steps() -> None:
    history = stream(**{**HEALTHY, "main_calls_helper": lambda s: 0.4 if s <= 12 else 0.0})
    (warning,) = collapse_warnings(history)
    assert warning.kind == "helper-ignored"
    assert "40% of joint actions in steps 1-10, 0% in steps 31-40" in warning.message
    # every 10-step window from step 11 on averages at most 10% (11-20: 8%)
    assert warning.figures["since"] == 11 and warning.steps == (11, 40)
    # A dip that recovers, or a main that never called the helper, is not a collapse.
    assert kinds(stream(**{**HEALTHY, "main_calls_helper": lambda s: 0.0 if 10 < s < 25 else 0.4})) == []
    assert kinds(stream(**{**HEALTHY, "main_calls_helper": 0.02})) == []


def test_completions_collapsing_in_length_warn_per_agent() -> None:
    history = stream(**{**HEALTHY, "main__completion_tokens": lambda s: 120.0 if s <= 10 else 25.0})
    (warning,) = collapse_warnings(history)
    assert warning.kind == "length-collapse" and warning.figures["agent"] == "main"
    assert "120 tokens on average in steps 1-10, 25 in steps 31-40 (21%)" in warning.message
    # Shrinking by a third is a policy tightening its code, not a collapse.
    assert kinds(stream(**{**HEALTHY, "main__completion_tokens": lambda s: 120.0 if s <= 10 else 80.0})) == []


def test_a_reward_that_rises_without_the_pass_rate_warns_with_the_terms_that_rose() -> None:
    history = stream(**{**HEALTHY, "pass_rate": 0.3, "reward__mean": lambda s: 2.0 + 0.03 * s,
                        "reward__tests": 0.3, "reward__uses": lambda s: 0.03 * s})
    (warning,) = collapse_warnings(history)
    assert warning.kind == "reward-without-passes"
    assert "the training pass rate went 30% -> 30%" in warning.message
    assert "the rise came from uses +0.90" in warning.message
    # The same rise with the pass rate climbing is learning.
    assert kinds(stream(**{**HEALTHY, "reward__mean": lambda s: 2.0 + 0.03 * s,
                           "pass_rate": lambda s: 0.1 + 0.01 * s})) == []


def test_a_rise_the_tests_term_hardly_explains_warns_even_if_the_pass_rate_moved() -> None:
    """The coop seed-0 run's shape: the pass rate up a few points, the reward up far more,
    nearly all of it from the cooperation terms."""
    series = {**HEALTHY, "pass_rate": lambda s: 0.15 + 0.002 * s,
              "reward__mean": lambda s: 1.6 + 0.03 * s, "reward__tests": lambda s: 0.3 + 0.003 * s,
              "reward__beyond_wrapper": lambda s: 0.027 * s}
    (warning,) = collapse_warnings(stream(**series))
    assert warning.kind == "reward-without-passes"
    assert "(10% of the rise from the tests)" in warning.message
    assert "the rise came from beyond_wrapper +0.81, tests +0.09" in warning.message
    # When the tests term carries the rise (more than the shaped terms do), it is learning,
    # whatever the reward's weights.
    learning = {**series, "reward__tests": lambda s: 0.3 + 0.016 * s,
                "reward__beyond_wrapper": lambda s: 0.014 * s}
    assert kinds(stream(**learning)) == []


def test_the_pass_rate_comes_from_the_validation_split_where_the_run_has_one() -> None:
    rising = {**HEALTHY, "reward__mean": lambda s: 2.0 + 0.03 * s, "reward__tests": lambda s: 0.03 * s,
              "pass_rate": lambda s: 0.1 + 0.01 * s}
    assert kinds(stream(**rising)) == []  # the training pass rate rose
    history = stream(**rising)
    for record in history:  # ... but on fixed problems the agents did no better
        if record["step"] % 10 == 0:
            record["val/pass@1"] = 0.3
    history.insert(0, {"step": 0, "val/pass@1": 0.3})
    (warning,) = collapse_warnings(history)
    assert warning.kind == "reward-without-passes"
    assert "the validation pass@1 went 30% (step 0) -> 30% (step 40)" in warning.message
    without = stream(**{**rising, "pass_rate": 0.3})
    assert "(one problem a step: noisy" in collapse_warnings(without)[0].message


def test_main_becoming_a_shell_around_the_helper_warns() -> None:
    history = stream(**{**HEALTHY, "coop__shell": lambda s: 0.1 if s <= 10 else 0.7,
                        "coop__helper_solves": lambda s: 0.2 if s <= 10 else 0.6})
    (warning,) = collapse_warnings(history)
    assert warning.kind == "trivial-main"
    assert ("without work of its own in 10% of joint actions in steps 1-10, 70% in steps 31-40; "
            "the helper alone solved the task in 60% of them") in warning.message
    # a pair that started as shells and stayed is not a change; fewer than half is not one
    assert kinds(stream(**{**HEALTHY, "coop__shell": 0.4})) == []
    assert kinds(stream(**{**HEALTHY, "coop__shell": lambda s: 0.1 if s <= 10 else 0.45})) == []


def test_length_is_measured_in_lines_of_code_without_docstrings() -> None:
    # the tokens stay (a docstring copied from the prompt), the code collapsed
    history = stream(**{**HEALTHY, "main__code_lines": lambda s: 8.0 if s <= 10 else 2.0})
    (warning,) = collapse_warnings(history)
    assert warning.kind == "length-collapse" and warning.figures["unit"] == "lines"
    assert "main's code collapsed in length: 8 lines on average" in warning.message
    # the tokens fell but the code did not: a shorter docstring is not a collapse
    assert kinds(stream(**{**HEALTHY, "main__code_lines": 8.0,
                           "main__completion_tokens": lambda s: 120.0 if s <= 10 else 40.0})) == []


def test_truncation_at_the_budget_warns_once_where_it_was_worst() -> None:
    history = stream(**{**HEALTHY, "truncated_rate": lambda s: 0.5 if 20 < s <= 30 else 0.0})
    (warning,) = collapse_warnings(history, budget=192)
    assert warning.kind == "truncation" and warning.steps == (21, 30)
    assert "50% of completions stopped at the 192-token budget in steps 21-30" in warning.message
    assert kinds(stream(**{**HEALTHY, "truncated_rate": 0.1})) == []


def test_a_run_too_short_to_judge_does_not_warn_about_trends() -> None:
    short = stream(steps=4, **{**HEALTHY, "main_calls_helper": lambda s: 0.5 if s == 1 else 0.0})
    assert kinds(short) == []


def test_the_watch_says_each_warning_once_as_the_run_goes() -> None:
    history = stream(**{**HEALTHY, "truncated_rate": 0.6})
    watch = CollapseWatch(budget=64)
    said = [w.kind for n in range(1, len(history) + 1) for w in watch.new(history[:n])]
    assert said == ["truncation"]


def _committed(run: str) -> list[dict[str, Any]]:
    path = REPO / "checkpoints" / run / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_committed_magrpo_run_warns_about_its_collapse() -> None:
    warnings = {w.kind: w for w in collapse_warnings(_committed("magrpo-0.5b"), 192)}
    assert set(warnings) == {"helper-ignored", "length-collapse", "truncation"}
    assert warnings["helper-ignored"].figures["start"] == pytest.approx(0.175)
    assert warnings["helper-ignored"].figures["end"] == 0.0
    assert warnings["length-collapse"].figures["agent"] == "main"
    assert warnings["length-collapse"].figures["end"] < 25


def test_the_committed_grpo_run_does_not_warn() -> None:
    assert collapse_warnings(_committed("grpo-0.5b"), 192) == []


def test_checkpoints_show_lists_the_warnings() -> None:
    def show(run: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "coopcode", "checkpoints", "show", run, *extra],
                              capture_output=True, text=True, cwd=REPO, timeout=120)

    data = json.loads(show("magrpo-0.5b", "--json").stdout)
    assert [w["kind"] for w in data["warnings"]] == ["helper-ignored", "length-collapse", "truncation"]
    assert all(w["message"] and len(w["steps"]) == 2 for w in data["warnings"])
    text = show("magrpo-0.5b").stdout
    assert "warning (helper-ignored): main stopped calling the helper: 18% of joint actions" in text
    assert json.loads(show("grpo-0.5b", "--json").stdout)["warnings"] == []
    assert "collapse guards: no warnings" in show("grpo-0.5b").stdout


def test_main_answering_with_a_constant_warns_and_a_steady_share_does_not() -> None:
    history = stream(**{**HEALTHY, "main__constant_answers": lambda s: 0.0 if s <= 10 else 0.9})
    (warning,) = collapse_warnings(history)
    assert warning.kind == "constant-answers" and warning.figures["agent"] == "main"
    assert "in 90% of completions in steps 31-40 (0% in steps 1-10)" in warning.message
    assert warning.steps == (1, 40)
    # A few guesses, or a share that was already there from the start, are not a collapse.
    assert kinds(stream(**{**HEALTHY, "main__constant_answers": lambda s: 0.0 if s <= 10 else 0.2})) == []
    assert kinds(stream(**{**HEALTHY, "single__constant_answers": 0.3})) == []
    assert kinds(stream(**{**HEALTHY, "single__constant_answers": lambda s: 0.1 if s <= 10 else 0.3})) \
        == ["constant-answers"]
