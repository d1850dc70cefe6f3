"""pass@k and acc@k.

pass@k is the unbiased estimator of Chen et al. (2021): for a problem with n samples of which
c are correct, 1 - C(n-c, k) / C(n, k), computed as a running product so it stays exact for
large n; averaged over problems. acc@k is the mean over problems of the expected best
fraction of tests passed among k of the n samples (drawn without replacement), so it reduces
to pass@k when every problem has a single test.

The per-problem estimates (`pass_at_k_by_problem`, `acc_at_k_by_problem`) are what
intervals and paired comparisons are computed from (`coopcode.evaluation.stats`): the problem, not
the sample, is the unit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from math import comb

from coopcode.core.errors import UserError


def check_k(ks: Iterable[int], n: int) -> list[int]:
    """Validate k values against n samples per problem; raise UserError with one line."""
    ks = sorted(set(ks))
    if not ks:
        raise UserError("no k given: pass e.g. --k 1,3,5,10")
    bad = [k for k in ks if k < 1]
    if bad:
        raise UserError(f"k must be at least 1 (got {bad[0]})")
    if ks[-1] > n:
        raise UserError(f"k={ks[-1]} is larger than n={n} samples per problem: raise --n or lower --k")
    return ks


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased, numerically stable pass@k for one problem."""
    if k > n:
        raise UserError(f"k={k} is larger than n={n} samples")
    if not 0 <= c <= n:
        raise ValueError(f"c={c} must be between 0 and n={n}")
    if n - c < k:
        return 1.0
    # 1 - prod_{i=n-c+1}^{n} (1 - k/i): no huge binomials, no cancellation for big n.
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def acc_at_k(fractions: Sequence[float], k: int) -> float:
    """Expected max test-pass fraction among k of the samples drawn without replacement."""
    n = len(fractions)
    if k > n:
        raise UserError(f"k={k} is larger than n={n} samples")
    ordered = sorted(fractions)
    total = comb(n, k)
    # The i-th smallest (0-based) is the max of a k-subset in C(i, k-1) subsets.
    return sum(ordered[i] * comb(i, k - 1) for i in range(k - 1, n)) / total


def mean_pass_at_k(results: Mapping[str, Sequence[bool]], k: int) -> float:
    """Mean pass@k over problems; `results` maps task id -> per-sample correctness."""
    if not results:
        return 0.0
    return sum(pass_at_k(len(v), sum(map(bool, v)), k) for v in results.values()) / len(results)


def mean_acc_at_k(results: Mapping[str, Sequence[float]], k: int) -> float:
    if not results:
        return 0.0
    return sum(acc_at_k(v, k) for v in results.values()) / len(results)


def pass_at_k_by_problem(results: Mapping[str, Sequence[bool]], k: int) -> dict[str, float]:
    """The unbiased pass@k of each problem (task id -> estimate)."""
    return {t: pass_at_k(len(v), sum(map(bool, v)), k) for t, v in results.items()}


def acc_at_k_by_problem(results: Mapping[str, Sequence[float]], k: int) -> dict[str, float]:
    """The acc@k of each problem (task id -> estimate)."""
    return {t: acc_at_k(v, k) for t, v in results.items()}
