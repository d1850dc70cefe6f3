"""How sure a number is: intervals and paired tests over problems, with `math` only.

The problem is the statistical unit. The n samples of one problem are not n independent
observations (they share the problem's difficulty), so every interval here is computed from
one unbiased estimate per problem (its pass@k or acc@k from its n samples): the mean of
those estimates, their standard error sd / sqrt(m) over the m problems, and a Student t
interval mean ± t(m-1) * se. The t quantile rather than the normal's 1.96 because a bench
has few problems (40 on the HumanEval test split): t(39) = 2.023, t(9) = 2.262, and the
normal interval covers too little when m is small. The t distribution is the exact answer
only for normal per-problem estimates; for bounded ones (pass@k in [0, 1]) it is the usual
approximation, and the simulation in tests/test_stats.py measures its coverage on
HumanEval-like problems. Intervals are clipped to the metric's range.

A paired comparison of two runs takes the per-problem differences over the problems both
ran: the same t interval on their mean, and an exact two-sided sign test on the problems
that gained against those that lost (ties dropped), with `math.comb`.

scipy would give the t quantile in one call; the closed forms below are ~40 lines and keep
a 100 MB dependency out of an evaluation tool (STYLE.md: "the closed forms are short").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

LEVEL = 0.95  # every interval coopcode reports
METHOD = "Student t over per-problem estimates (the problem is the unit)"


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                    -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    # The fraction converges fast on the side of the mean; use the symmetry on the other.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom."""
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


@lru_cache(maxsize=256)
def t_quantile(df: int, level: float = LEVEL) -> float:
    """The two-sided critical value: P(|T| <= q) = level (t(39) = 2.0227 at 95%)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1 (got {df})")
    target = 1.0 - (1.0 - level) / 2.0
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < target:  # t(1) at 99.9% is 636.6: doubling reaches it quickly
        hi *= 2.0
    for _ in range(200):  # bisection: the cdf is monotone, 200 halvings is machine precision
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2.0


@dataclass(frozen=True)
class Estimate:
    """A mean over problems with its standard error and interval (None: fewer than 2 problems)."""

    mean: float
    se: float | None
    low: float | None
    high: float | None
    problems: int

    def to_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "se": self.se, "low": self.low, "high": self.high,
                "problems": self.problems}


def mean_interval(values: Sequence[float], *, level: float = LEVEL,
                  bounds: tuple[float, float] = (0.0, 1.0)) -> Estimate:
    """Mean, standard error and t interval of per-problem estimates, clipped to `bounds`."""
    m = len(values)
    if m == 0:
        raise ValueError("no problems to estimate over")
    mean = math.fsum(values) / m
    if m < 2:
        return Estimate(mean, None, None, None, m)
    var = math.fsum((v - mean) ** 2 for v in values) / (m - 1)
    se = math.sqrt(var / m)
    half = t_quantile(m - 1, level) * se
    low, high = max(bounds[0], mean - half), min(bounds[1], mean + half)
    return Estimate(mean, se, low, high, m)


def sign_test(gained: int, lost: int) -> float:
    """Exact two-sided sign test: P(a split at least this uneven | no difference); ties dropped."""
    trials = gained + lost
    if trials == 0:
        return 1.0
    tail = sum(math.comb(trials, j) for j in range(min(gained, lost) + 1))
    return min(1.0, 2.0 * tail / 2 ** trials)


@dataclass(frozen=True)
class PairedDifference:
    """B - A over the problems both runs hold: mean difference, interval, sign test."""

    difference: Estimate
    gained: int  # problems where B's estimate is higher
    lost: int
    tied: int
    p_sign: float

    def to_dict(self) -> dict[str, Any]:
        return {**{f"diff_{k}": v for k, v in self.difference.to_dict().items()},
                "gained": self.gained, "lost": self.lost, "tied": self.tied,
                "p_sign": self.p_sign}


def paired_difference(a: Sequence[float], b: Sequence[float], *,
                      level: float = LEVEL) -> PairedDifference:
    """The paired comparison of per-problem estimates `a[i]` and `b[i]` (same problem i)."""
    if len(a) != len(b):
        raise ValueError(f"paired estimates need the same problems ({len(a)} vs {len(b)})")
    # Estimates are sums of float products: a 1e-12 wobble is a tie, not a gain.
    diffs = [0.0 if abs(y - x) < 1e-12 else y - x for x, y in zip(a, b)]
    gained = sum(d > 0 for d in diffs)
    lost = sum(d < 0 for d in diffs)
    return PairedDifference(mean_interval(diffs, level=level, bounds=(-1.0, 1.0)),
                            gained, lost, len(diffs) - gained - lost, sign_test(gained, lost))


def pooled_rate(counts: Sequence[tuple[int, int]], *, level: float = LEVEL) -> Estimate | None:
    """A share pooled over samples, sum(hits) / sum(measured), from each problem's
    (hits, measured), with its standard error over problems: the ratio estimator's, clustered
    by problem (m/(m-1) * sum((hits_i - r * measured_i)^2) / (sum measured)^2), since the
    samples of one problem are not independent. With the same number of samples per problem
    it is the standard error of the per-problem rates' mean. None when nothing was measured."""
    kept = [(h, n) for h, n in counts if n > 0]
    total = sum(n for _, n in kept)
    if not kept:
        return None
    rate = sum(h for h, _ in kept) / total
    m = len(kept)
    if m < 2:
        return Estimate(rate, None, None, None, m)
    var = m / (m - 1) * math.fsum((h - rate * n) ** 2 for h, n in kept) / total ** 2
    se = math.sqrt(var)
    half = t_quantile(m - 1, level) * se
    return Estimate(rate, se, max(0.0, rate - half), min(1.0, rate + half), m)


# A recipe (a run, a validation step) is preferred over another only when it is ahead by
# more than this many standard errors of their difference; closer, the validation split does
# not tell them apart (README, "Training": validation that can choose).
PREFER_SE = 2.0


@dataclass(frozen=True)
class Lead:
    """How far A is ahead of B: the difference of their means, its standard error (paired
    over the problems both hold, else from the two standard errors), in standard errors."""

    difference: float
    se: float | None
    paired: bool

    @property
    def in_se(self) -> float | None:
        if self.se is None:
            return None
        if self.se == 0.0:
            return math.inf if self.difference > 0 else (-math.inf if self.difference < 0 else 0.0)
        return self.difference / self.se

    @property
    def decisive(self) -> bool:
        """Ahead by more than PREFER_SE standard errors."""
        z = self.in_se
        return z is not None and z > PREFER_SE

    def to_dict(self) -> dict[str, Any]:
        return {"difference": self.difference, "se": self.se, "paired": self.paired,
                "in_se": self.in_se, "decisive": self.decisive}


def lead(a: dict[str, float], b: dict[str, float]) -> Lead:
    """A's lead over B from per-problem estimates (problem -> estimate): paired over the
    problems when both hold the same ones, else the difference of two independent means."""
    if a.keys() == b.keys() and a:
        keys = sorted(a)
        est = paired_difference([b[k] for k in keys], [a[k] for k in keys]).difference
        return Lead(est.mean, est.se, True)
    ea, eb = mean_interval(list(a.values())), mean_interval(list(b.values()))
    se = None if ea.se is None or eb.se is None else math.sqrt(ea.se ** 2 + eb.se ** 2)
    return Lead(ea.mean - eb.mean, se, False)


@dataclass(frozen=True)
class Choice:
    """Which of several candidates the figures prefer: the best by mean, `preferred` only
    when it leads every other by more than PREFER_SE standard errors; `tied` the others it
    does not lead that far (best first)."""

    best: str
    preferred: str | None
    tied: list[str]
    leads: dict[str, Lead]  # the best's lead over each other candidate

    def to_dict(self) -> dict[str, Any]:
        return {"best": self.best, "preferred": self.preferred, "tied": self.tied,
                "margin_se": PREFER_SE, "leads": {k: v.to_dict() for k, v in self.leads.items()}}


def choose(candidates: dict[str, dict[str, float]]) -> Choice:
    """The candidate (name -> per-problem estimates) the figures prefer, if any."""
    if not candidates:
        raise ValueError("nothing to choose from")
    means = {name: math.fsum(v.values()) / len(v) if v else 0.0 for name, v in candidates.items()}
    best = max(candidates, key=lambda name: means[name])  # the first of equals
    leads = {name: lead(candidates[best], est) for name, est in candidates.items() if name != best}
    tied = sorted((name for name, d in leads.items() if not d.decisive),
                  key=lambda name: -means[name])
    return Choice(best, None if tied else best, tied, leads)
