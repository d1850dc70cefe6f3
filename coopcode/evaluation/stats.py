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

Where problems share material the problem is not an independent unit: each `compose`
problem is built from two HumanEval problems (its `sources`), and compose:test's 88 problems
reuse 36 sources, so two problems that share a source share part of their difficulty. The
source-clustered interval (`clustered_mean_interval`, `paired_difference(clusters=...)`)
lets every two problems that share a cluster covary: the dyadic cluster-robust variance of
Fafchamps & Gubert (2007) and Aronow, Samii & Assenova (2015), which is Cameron, Gelbach &
Miller's two-way clustering where both ways are the same set of sources (`clustered_se` says
the formula and its small-sample factor), with a Student t of (clusters - 1) degrees of
freedom. A problem without sources is its own cluster, so on HumanEval the clustered
interval is the per-problem one exactly. It is never narrower than the per-problem interval:
with few sources its estimate is noisy, a within-source covariance below 0 is noise, and a
claim judged by it should never be easier to make than by the per-problem interval. On
3,000 simulated benches of compose:test's own source graph, with a normal source effect
from none to three times the problem's own noise, it covered the truth in 93.5-97.5% of them
(the per-problem interval: 58-96%); tests/test_stats.py keeps a smaller run of that simulation.

Where every per-problem estimate is the same (pass@1 0% or 100% over a few problems), the
standard error is 0 and the t interval would collapse to a point, `[0.00, 0.00]`: a certainty
3 problems cannot give. There the interval is the exact one for what was seen (`all_alike`):
with values in [lo, hi] all equal to c on m problems, the share q of problems whose value is
not c is at most 1 - (alpha/2)^(1/m) with 1 - alpha/2 confidence (Clopper-Pearson for 0 of m;
the "rule of three" is its one-sided cousin), so the mean lies in [c - (c - lo) * u,
c + (hi - c) * u]. pass@1 0% on 3 problems: [0, 70.8%]; on 40: [0, 8.8%]. It is conservative
(one bound stands for both sides) and never narrower than the data allows.

scipy would give the t quantile in one call; the closed forms below are ~40 lines and keep
a 100 MB dependency out of an evaluation tool (STYLE.md: "the closed forms are short").
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

LEVEL = 0.95  # every interval coopcode reports
METHOD = "Student t over per-problem estimates (the problem is the unit)"
CLUSTERED_METHOD = ("problems that share a HumanEval source covary (dyadic cluster-robust "
                    "variance, Aronow, Samii & Assenova 2015), Student t with sources - 1 degrees "
                    "of freedom, never narrower than the per-problem interval")


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


def all_alike(value: float, m: int, *, level: float = LEVEL,
              bounds: tuple[float, float] = (0.0, 1.0)) -> tuple[float, float]:
    """The interval for a mean when all m per-problem estimates equal `value` (the t
    interval's width is 0 there): exact, from the share of problems that could differ
    unseen (Clopper-Pearson's bound for 0 of m, at (1 - level) / 2), see the module doc."""
    lo, hi = bounds
    u = 1.0 - ((1.0 - level) / 2.0) ** (1.0 / m)
    return max(lo, value - (value - lo) * u), min(hi, value + (hi - value) * u)


def mean_interval(values: Sequence[float], *, level: float = LEVEL,
                  bounds: tuple[float, float] = (0.0, 1.0)) -> Estimate:
    """Mean, standard error and t interval of per-problem estimates, clipped to `bounds`
    (all alike: the exact interval of `all_alike`, never a point)."""
    m = len(values)
    if m == 0:
        raise ValueError("no problems to estimate over")
    mean = math.fsum(values) / m
    if m < 2:
        return Estimate(mean, None, None, None, m)
    var = math.fsum((v - mean) ** 2 for v in values) / (m - 1)
    se = math.sqrt(var / m)
    if se == 0.0:
        return Estimate(mean, se, *all_alike(mean, m, level=level, bounds=bounds), m)
    half = t_quantile(m - 1, level) * se
    low, high = max(bounds[0], mean - half), min(bounds[1], mean + half)
    return Estimate(mean, se, low, high, m)


@dataclass(frozen=True)
class ClusteredEstimate(Estimate):
    """A mean over problems whose interval lets problems that share a cluster covary."""

    clusters: int = 0  # distinct clusters (sources) among the problems

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "clusters": self.clusters}


def clustered_se(values: Sequence[float], clusters: Sequence[Sequence[Hashable]]
                 ) -> tuple[float, int] | None:
    """The standard error of the mean of `values` where problem i belongs to the clusters
    `clusters[i]` (one or more), and the number of distinct clusters G.

    With residuals e_i = v_i - mean and i ~ j when problems i and j share a cluster (i ~ i):
    Var(mean) = c * sum over i ~ j of e_i * e_j / m^2, the dyadic (multiway) cluster-robust
    variance. With one cluster per problem it is the one-way cluster-robust variance (up to
    the small-sample factor); with two (a compose problem's inner and outer source) it is
    Cameron-Gelbach-Miller's two-way V_inner + V_outer - V_both, widened to the pairs where
    one problem's inner source is another's outer one. The small-sample factor
    c = m / (m - #(i ~ j) / m) makes it unbiased when the problems are in fact independent,
    as m / (m - 1) does for the usual variance (which it is when every problem is its own
    cluster: #(i ~ j) = m). None when there are fewer than 2 problems or 2 clusters."""
    m = len(values)
    if len(clusters) != m:
        raise ValueError(f"each problem needs its clusters ({m} values, {len(clusters)} lists)")
    members: dict[Hashable, list[int]] = defaultdict(list)
    for i, own in enumerate(clusters):
        if not own:
            raise ValueError(f"problem {i} belongs to no cluster")
        for c in set(own):
            members[c].append(i)
    if m < 2 or len(members) < 2:
        return None
    mean = math.fsum(values) / m
    e = [v - mean for v in values]
    # Neighbours through the cluster index: O(sum of neighbourhoods), not O(m^2).
    cross, linked = [], 0
    for i, own in enumerate(clusters):
        near = {j for c in set(own) for j in members[c]}
        linked += len(near)
        cross.append(e[i] * math.fsum(e[j] for j in near))
    if linked >= m * m:  # one cluster holds every problem through links: nothing to compare
        return None
    factor = m / (m - linked / m)
    var = max(0.0, factor * math.fsum(cross)) / m ** 2
    return math.sqrt(var), len(members)


def clustered_mean_interval(values: Sequence[float], clusters: Sequence[Sequence[Hashable]], *,
                            level: float = LEVEL, bounds: tuple[float, float] = (0.0, 1.0)
                            ) -> ClusteredEstimate:
    """`mean_interval` with problems that share a cluster allowed to covary (`clustered_se`):
    mean ± t(G - 1) * se over G clusters, se never below the per-problem one."""
    plain = mean_interval(values, level=level, bounds=bounds)
    got = clustered_se(values, clusters)
    g = len({c for own in clusters for c in own})
    if got is None or plain.se is None:
        return ClusteredEstimate(plain.mean, None, None, None, plain.problems, g)
    if plain.se == 0.0:  # all alike: the per-problem interval is exact already (never wider)
        return ClusteredEstimate(plain.mean, 0.0, plain.low, plain.high, plain.problems, g)
    se = max(got[0], plain.se)
    half = t_quantile(g - 1, level) * se
    return ClusteredEstimate(plain.mean, se, max(bounds[0], plain.mean - half),
                             min(bounds[1], plain.mean + half), plain.problems, g)


def clusters_by_source(task_ids: Sequence[str], sources: Mapping[str, Sequence[str]]
                       ) -> list[tuple[str, ...]]:
    """Each problem's clusters: the HumanEval problems it was built from (`sources`), or its
    own id where it has none (a HumanEval problem is the source of itself)."""
    return [tuple(sources.get(t) or ()) or (t,) for t in task_ids]


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
    clustered: ClusteredEstimate | None = None  # the difference, source-clustered

    def to_dict(self) -> dict[str, Any]:
        out = {**{f"diff_{k}": v for k, v in self.difference.to_dict().items()},
               "gained": self.gained, "lost": self.lost, "tied": self.tied,
               "p_sign": self.p_sign}
        if self.clustered is not None:
            out["clustered"] = self.clustered.to_dict()
        return out


def paired_difference(a: Sequence[float], b: Sequence[float], *, level: float = LEVEL,
                      clusters: Sequence[Sequence[Hashable]] | None = None) -> PairedDifference:
    """The paired comparison of per-problem estimates `a[i]` and `b[i]` (same problem i);
    with `clusters` (problem i's clusters, `clusters_by_source`), the difference's
    source-clustered interval beside the per-problem one."""
    if len(a) != len(b):
        raise ValueError(f"paired estimates need the same problems ({len(a)} vs {len(b)})")
    # Estimates are sums of float products: a 1e-12 wobble is a tie, not a gain.
    diffs = [0.0 if abs(y - x) < 1e-12 else y - x for x, y in zip(a, b)]
    gained = sum(d > 0 for d in diffs)
    lost = sum(d < 0 for d in diffs)
    clustered = None if clusters is None else clustered_mean_interval(
        diffs, clusters, level=level, bounds=(-1.0, 1.0))
    return PairedDifference(mean_interval(diffs, level=level, bounds=(-1.0, 1.0)),
                            gained, lost, len(diffs) - gained - lost, sign_test(gained, lost),
                            clustered)


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
    if se == 0.0:  # every problem at the same share: not a certainty over m problems
        return Estimate(rate, se, *all_alike(rate, m, level=level), m)
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
