"""An interval where every problem scores alike (issue 55, item 8): pass@1 of 0% on 3
problems printed `95% CI [0.00, 0.00]`, a certainty 3 problems cannot give."""

from __future__ import annotations

import math

import pytest

from coopcode.display.render import bench_table
from coopcode.evaluation.report import format_ci
from coopcode.evaluation.stats import (
    all_alike,
    clustered_mean_interval,
    mean_interval,
    paired_difference,
    pooled_rate,
)


def exact_upper(m: int) -> float:
    """Clopper-Pearson's two-sided 95% upper bound for 0 successes in m trials."""
    return 1 - 0.025 ** (1 / m)


@pytest.mark.parametrize("m", [3, 10, 40])
def test_none_and_all_passing_are_intervals_not_points(m: int):
    none, every = mean_interval([0.0] * m), mean_interval([1.0] * m)
    assert (none.mean, none.se, none.low) == (0.0, 0.0, 0.0)
    assert none.high == pytest.approx(exact_upper(m))
    assert every.low == pytest.approx(1 - exact_upper(m)) and every.high == 1.0
    # 0% on 3 problems: up to 70.8%; on 40: up to 8.8% (the rule of three says ~7.5%).
    assert {3: 0.708, 40: 0.088}.get(m, round(none.high, 3)) == round(none.high, 3)


def test_as_a_bench_and_a_comparison_print_them():
    row = {"pass@1": 0.0, "pass@1_ci": [mean_interval([0.0] * 3).low, mean_interval([0.0] * 3).high]}
    assert format_ci(row, "pass@1") == "[0.00, 70.76]"
    tied = paired_difference([0.0, 1.0, 0.0], [0.0, 1.0, 0.0])  # nothing moved
    assert (tied.difference.low, tied.difference.high) == pytest.approx((-exact_upper(3), exact_upper(3)))
    assert tied.p_sign == 1.0
    summary = {"ks": [1], "rows": [{"method": "pair", "problems": 3, "pass@1": 0.0, "acc@1": 0.0,
                                    **{f"{m}@1_{s}": v for m in ("pass", "acc")
                                       for s, v in (("se", 0.0), ("ci", row["pass@1_ci"]))}}]}
    from rich.console import Console

    console = Console(width=120, record=True)
    console.print(bench_table(summary))
    text = console.export_text()
    assert "0.0–70.8" in text and "never a point" in " ".join(text.split())


def test_an_interior_value_and_the_bounds_of_a_difference():
    low, high = all_alike(0.5, 3)
    assert low == pytest.approx(0.5 - 0.5 * exact_upper(3))
    assert high == pytest.approx(0.5 + 0.5 * exact_upper(3))
    assert all_alike(0.0, 3, bounds=(-1.0, 1.0)) == pytest.approx((-exact_upper(3), exact_upper(3)))
    # A level of 99% widens it, as it should.
    assert all_alike(0.0, 3, level=0.99)[1] > all_alike(0.0, 3)[1]


def test_clustered_and_pooled_intervals_do_not_collapse_either():
    est = clustered_mean_interval([0.0] * 4, [("a",), ("a",), ("b",), ("c",)])
    assert (est.low, est.high) == pytest.approx((0.0, exact_upper(4))) and est.clusters == 3
    rate = pooled_rate([(0, 5), (0, 5), (0, 5)])
    assert rate is not None and rate.high == pytest.approx(exact_upper(3))
    # Where problems differ, nothing changes: the t interval as before.
    spread = mean_interval([0.0, 1.0, 0.0, 1.0])
    assert spread.high - spread.low > 0 and not math.isclose(spread.high, exact_upper(4))
