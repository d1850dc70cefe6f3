"""Intervals over problems: hand-computed values, the t quantile against its table, the exact
sign test, and a simulation that the 95% interval covers the true pass@1 about 95% of the time."""

from __future__ import annotations

import numpy as np
import pytest

from coopcode.evaluation.at_k import pass_at_k_by_problem
from coopcode.evaluation.stats import mean_interval, paired_difference, sign_test, t_quantile


@pytest.mark.parametrize(("df", "level", "table"), [
    (1, 0.95, 12.7062), (3, 0.95, 3.1824), (4, 0.95, 2.7764), (9, 0.95, 2.2622),
    (39, 0.95, 2.0227), (100, 0.95, 1.9840), (10, 0.99, 3.1693), (20, 0.90, 1.7247),
])
def test_t_quantile_matches_the_printed_table(df: int, level: float, table: float) -> None:
    assert t_quantile(df, level) == pytest.approx(table, abs=1e-4)


# Five problems, n=4 samples each, with 0, 1, 2, 3 and 4 correct.
COUNTS = {"p0": 0, "p1": 1, "p2": 2, "p3": 3, "p4": 4}
RESULTS = {t: [i < c for i in range(4)] for t, c in COUNTS.items()}


def test_pass_at_1_interval_by_hand() -> None:
    # per-problem pass@1 = 0, .25, .5, .75, 1: mean .5; sample variance .625 / 4 = .15625;
    # se = sqrt(.15625 / 5) = .1767767; t(4) = 2.7764451; half-width .4908108
    est = mean_interval(list(pass_at_k_by_problem(RESULTS, 1).values()))
    assert est.mean == pytest.approx(0.5)
    assert est.se == pytest.approx(0.1767767, abs=1e-7)
    assert (est.low, est.high) == pytest.approx((0.0091892, 0.9908108), abs=1e-6)
    assert est.problems == 5


def test_pass_at_2_interval_by_hand_and_clipped_to_the_range() -> None:
    # pass@2 with n=4: c=0 -> 0; c=1 -> 1 - C(3,2)/C(4,2) = .5; c=2 -> 1 - 1/6; c>=3 -> 1
    values = list(pass_at_k_by_problem(RESULTS, 2).values())
    assert values == pytest.approx([0.0, 0.5, 5 / 6, 1.0, 1.0])
    est = mean_interval(values)
    mean = (0 + 0.5 + 5 / 6 + 1 + 1) / 5
    sd = np.std(values, ddof=1)
    assert est.mean == pytest.approx(mean)
    assert est.se == pytest.approx(sd / np.sqrt(5))
    assert est.low == pytest.approx(mean - 2.7764451 * sd / np.sqrt(5))
    assert est.high == 1.0  # mean + half-width is 1.17: an interval never leaves [0, 1]


def test_one_problem_has_no_interval_and_none_is_an_error() -> None:
    est = mean_interval([0.3])
    assert (est.mean, est.se, est.low, est.high) == (0.3, None, None, None)
    with pytest.raises(ValueError):
        mean_interval([])


def test_paired_difference_by_hand() -> None:
    # A passes 0,1,2,3,4 of 4, B 1,1,4,3,2: differences .25, 0, .5, 0, -.5 -> mean .05;
    # sample variance .55 / 4 = .1375, se = .1658312, half-width 2.7764451 * se = .4604204;
    # 2 gained, 1 lost, 2 tied: sign test p = 2 * (1 + 3) / 8 = 1
    a = [0.0, 0.25, 0.5, 0.75, 1.0]
    b = [0.25, 0.25, 1.0, 0.75, 0.5]
    d = paired_difference(a, b)
    assert d.difference.mean == pytest.approx(0.05)
    assert d.difference.se == pytest.approx(0.1658312, abs=1e-7)
    assert (d.difference.low, d.difference.high) == pytest.approx((-0.4104204, 0.5104204), abs=1e-6)
    assert (d.gained, d.lost, d.tied, d.p_sign) == (2, 1, 2, 1.0)


def test_exact_sign_test() -> None:
    assert sign_test(9, 1) == pytest.approx(22 / 1024)  # 2 * (C(10,0) + C(10,1)) / 2^10
    assert sign_test(1, 9) == sign_test(9, 1)
    assert sign_test(10, 0) == pytest.approx(2 / 1024)
    assert sign_test(5, 5) == 1.0 and sign_test(0, 0) == 1.0
    assert sign_test(30, 10) == pytest.approx(0.0022, abs=1e-4)  # vs the normal approx 0.0016


def test_the_95_interval_covers_the_true_pass_at_1_95_percent_of_the_time() -> None:
    """2,000 benches of 40 problems, n=10, whose pass probabilities are drawn from a
    HumanEval-like U-shaped Beta(0.5, 0.8) (many problems always or never solved): the
    true pass@1 of the problem population is its mean, 0.5/1.3. The interval must cover it
    in 93-97% of the benches. Seeded: the same draws every run."""
    rng = np.random.default_rng(20240613)
    draws, problems, n = 2000, 40, 10
    truth = 0.5 / 1.3
    p = rng.beta(0.5, 0.8, size=(draws, problems))
    correct = rng.binomial(n, p)
    covered = 0
    for row in correct:
        est = mean_interval((row / n).tolist())
        assert est.low is not None and est.high is not None
        covered += est.low <= truth <= est.high
    assert 0.93 <= covered / draws <= 0.97, covered / draws


def test_a_pooled_rate_has_the_standard_error_of_its_problems() -> None:
    from coopcode.evaluation.stats import pooled_rate

    # Two samples per problem: the pooled rate's SE is that of the per-problem rates' mean.
    counts = [(2, 2), (1, 2), (0, 2), (0, 2), (1, 2)]
    pooled = pooled_rate(counts)
    assert pooled is not None and pooled.mean == pytest.approx(0.4)
    per_problem = mean_interval([h / n for h, n in counts])
    assert pooled.se == pytest.approx(per_problem.se)
    # Unequal counts (a rate measured on some samples only): the clustered ratio estimator,
    # by hand; problems where nothing was measured do not count.
    uneven = pooled_rate([(1, 1), (0, 2), (2, 3), (0, 0)])
    assert uneven is not None and uneven.mean == pytest.approx(0.5) and uneven.problems == 3
    by_hand = (3 / 2 * ((1 - 0.5) ** 2 + (0 - 1.0) ** 2 + (2 - 1.5) ** 2) / 6 ** 2) ** 0.5
    assert uneven.se == pytest.approx(by_hand)
    assert pooled_rate([(0, 0)]) is None


def test_a_candidate_is_preferred_only_when_ahead_by_more_than_two_standard_errors() -> None:
    from coopcode.evaluation.stats import PREFER_SE, choose, lead

    problems = [f"p{i}" for i in range(20)]
    base = {p: 0.0 for p in problems}
    # Ahead on 12 of 20 problems, behind on none: paired, the lead is many SE.
    clear = {p: 1.0 if i < 12 else 0.0 for i, p in enumerate(problems)}
    assert lead(clear, base).in_se is not None and lead(clear, base).in_se > PREFER_SE
    picked = choose({"base": base, "clear": clear})
    assert (picked.best, picked.preferred, picked.tied) == ("clear", "clear", [])
    # Ahead on 2 of 20: a lead of 0.1, 1.45 SE: the two are tied.
    small = {p: 1.0 if i < 2 else 0.0 for i, p in enumerate(problems)}
    tie = choose({"base": base, "small": small})
    assert (tie.best, tie.preferred, tie.tied) == ("small", None, ["base"])
    d = lead(small, base)
    assert d.paired and d.difference == pytest.approx(0.1) and not d.decisive
    # Three candidates: the best must lead every other one by more than 2 SE.
    three = choose({"base": base, "clear": clear, "close": {**clear, "p0": 0.0, "p1": 0.0}})
    assert three.best == "clear" and three.preferred is None and three.tied == ["close"]
    # Different problems: no pairing, the two standard errors combined.
    other = {f"q{i}": v for i, v in enumerate(clear.values())}
    assert not lead(other, base).paired


# Source-clustered intervals (issue 53): compose problems share HumanEval sources.
RING = [("A", "B"), ("B", "C"), ("C", "D"), ("D", "A")]  # each shares one source with two


def test_clustered_se_by_hand() -> None:
    """Four problems on a ring of four sources, passing 1, 1, 0, 0: residuals .5, .5, -.5,
    -.5. Each problem shares a source with itself and its two ring neighbours (12 linked
    pairs of 16), so the sum over linked pairs of e_i * e_j is 4 * (.5 * .5) = 1 and the
    factor is m / (m - 12/m) = 4 / (4 - 3) = 4: Var = 4 * 1 / 16 = .25, se = .5. The
    per-problem se is sqrt((4 * .25 / 3) / 4) = .2886751: the two problems that fail share
    source D, the two that pass share B. t(4 sources - 1 = 3) = 3.1824463."""
    from coopcode.evaluation.stats import clustered_mean_interval, clustered_se

    assert clustered_se([1.0, 1.0, 0.0, 0.0], RING) == (pytest.approx(0.5), 4)
    est = clustered_mean_interval([1.0, 1.0, 0.0, 0.0], RING, bounds=(-10.0, 10.0))
    assert (est.mean, est.se, est.problems, est.clusters) == (0.5, pytest.approx(0.5), 4, 4)
    assert (est.low, est.high) == pytest.approx((0.5 - 3.1824463 * 0.5, 0.5 + 3.1824463 * 0.5))
    assert mean_interval([1.0, 1.0, 0.0, 0.0]).se == pytest.approx(0.2886751, abs=1e-7)
    # clipped to the metric's range, as every interval is
    clipped = clustered_mean_interval([1.0, 1.0, 0.0, 0.0], RING)
    assert (clipped.low, clipped.high) == (0.0, 1.0)


def _dyadic_by_matrix(values: list[float], clusters: list[tuple[str, ...]]) -> float:
    """The same variance written as a matrix product: e' S e with S[i, j] = 1 where problems
    i and j share a cluster, times m / (m - sum(S) / m), over m^2."""
    m = len(values)
    e = np.asarray(values) - np.mean(values)
    share = np.array([[float(bool(set(a) & set(b))) for b in clusters] for a in clusters])
    return float(np.sqrt(e @ share @ e * m / (m - share.sum() / m)) / m)


def test_clustered_se_on_compose_test_is_the_matrix_formula_and_wider_than_per_problem() -> None:
    """compose:test's own 88 problems and 36 sources, with outcomes driven by the sources
    (each source a difficulty, shared by every problem built from it): the clustered standard
    error is the matrix formula's, and much wider than the per-problem one."""
    from coopcode.evaluation.stats import clustered_mean_interval, clustered_se
    from coopcode.problems import load_problems

    clusters = [tuple(p.sources) for p in load_problems("compose:test")]
    sources = sorted({s for own in clusters for s in own})
    assert (len(clusters), len(sources)) == (88, 36)
    rng = np.random.default_rng(53)
    effect = dict(zip(sources, rng.normal(0.0, 0.2, len(sources))))
    values = [float(np.clip(0.3 + effect[a] + effect[b] + rng.normal(0.0, 0.05), 0, 1))
              for a, b in clusters]
    got = clustered_se(values, clusters)
    assert got is not None and got[1] == 36
    assert got[0] == pytest.approx(_dyadic_by_matrix(values, clusters), rel=1e-12)
    plain, clustered = mean_interval(values), clustered_mean_interval(values, clusters)
    assert plain.se is not None and clustered.se is not None
    assert clustered.se > 1.5 * plain.se  # sources shared, outcomes shared: far from independent
    assert clustered.low is not None and plain.low is not None and clustered.low < plain.low
    assert clustered.mean == plain.mean and clustered.clusters == 36


def test_every_problem_its_own_cluster_is_the_per_problem_interval() -> None:
    """HumanEval's problems have no sources: each is its own cluster, and the clustered
    interval is the usual one, exactly (t(m - 1), se = sd / sqrt(m))."""
    from coopcode.evaluation.stats import clustered_mean_interval, clusters_by_source

    values = list(pass_at_k_by_problem(RESULTS, 1).values())
    own = clusters_by_source(list(RESULTS), {})
    assert own == [("p0",), ("p1",), ("p2",), ("p3",), ("p4",)]
    plain, clustered = mean_interval(values), clustered_mean_interval(values, own)
    assert (clustered.se, clustered.low, clustered.high) == pytest.approx(
        (plain.se, plain.low, plain.high), rel=1e-12)
    assert clustered.clusters == 5
    d = paired_difference([0.0, 0.25, 0.5, 0.75, 1.0], [0.25, 0.25, 1.0, 0.75, 0.5],
                          clusters=own)
    assert d.clustered is not None
    assert (d.clustered.low, d.clustered.high) == pytest.approx(
        (d.difference.low, d.difference.high), rel=1e-12)
    assert d.to_dict()["clustered"]["clusters"] == 5
    # without clusters the paired comparison is what it always was
    assert "clustered" not in paired_difference([0.0, 1.0], [1.0, 1.0]).to_dict()
    # a problem with sources takes them; a mix keeps the others as their own clusters
    assert clusters_by_source(["c/1", "HumanEval/3"], {"c/1": ["HumanEval/3", "HumanEval/7"]}) \
        == [("HumanEval/3", "HumanEval/7"), ("HumanEval/3",)]


def test_the_clustered_interval_is_never_narrower_than_the_per_problem_one() -> None:
    """Problems sharing a source that disagree (a negative within-source covariance, noise at
    this size) would make the dyadic variance smaller: the per-problem se is kept."""
    from coopcode.evaluation.stats import clustered_mean_interval, clustered_se

    pairs = [("A",), ("A",), ("B",), ("B",), ("C",), ("C",)]
    values = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]  # each source: one pass, one fail
    got = clustered_se(values, pairs)
    assert got is not None and got[0] == 0.0  # the source sums all cancel
    est = clustered_mean_interval(values, pairs, bounds=(-9.0, 9.0))
    se = (0.25 * 6 / 5 / 6) ** 0.5  # the per-problem one: sd / sqrt(m), .2236068
    assert est.se == pytest.approx(se) == mean_interval(values).se
    # but with t over the 3 sources, not the 6 problems: t(2) = 4.3026527, wider still
    assert (est.low, est.high) == pytest.approx((0.5 - 4.3026527 * se, 0.5 + 4.3026527 * se))


def test_clustered_refusals_and_too_few_clusters() -> None:
    from coopcode.evaluation.stats import clustered_mean_interval, clustered_se

    with pytest.raises(ValueError, match="each problem needs its clusters"):
        clustered_se([0.1, 0.2], [("A",)])
    with pytest.raises(ValueError, match="belongs to no cluster"):
        clustered_se([0.1, 0.2], [("A",), ()])
    one = clustered_mean_interval([0.1, 0.2, 0.3], [("A",), ("A",), ("A", "B")])
    assert one.mean == pytest.approx(0.2) and one.se is None and one.low is None


def test_the_clustered_interval_covers_on_compose_tests_source_graph() -> None:
    """800 simulated paired differences on compose:test's 88 problems, each the sum of its
    two sources' effects (sd 0.5) and its own noise (sd 1), true mean 0: the per-problem
    interval covers 0 far less than 95% of the time (problems sharing a source move
    together), the source-clustered one about 95% (3,000 draws of several effect sizes gave
    93.5-97.5%, `coopcode.evaluation.stats`). Seeded: the same draws every run."""
    from coopcode.evaluation.stats import clustered_mean_interval
    from coopcode.problems import load_problems

    clusters = [tuple(p.sources) for p in load_problems("compose:test")]
    sources = sorted({s for own in clusters for s in own})
    index = {s: i for i, s in enumerate(sources)}
    inner = np.array([index[a] for a, _ in clusters])
    outer = np.array([index[b] for _, b in clusters])
    rng = np.random.default_rng(20250530)
    draws = 800
    plain = clustered = 0
    for _ in range(draws):
        effect = rng.normal(0.0, 0.5, len(sources))
        d = (effect[inner] + effect[outer] + rng.normal(0.0, 1.0, len(clusters))).tolist()
        p, c = mean_interval(d, bounds=(-9, 9)), clustered_mean_interval(d, clusters, bounds=(-9, 9))
        assert p.low is not None and p.high is not None and c.low is not None and c.high is not None
        plain += p.low <= 0.0 <= p.high
        clustered += c.low <= 0.0 <= c.high
    assert plain / draws < 0.85, plain / draws
    assert 0.92 <= clustered / draws <= 0.98, clustered / draws
