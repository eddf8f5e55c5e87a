"""The log-domain quantile in public buckets (``log_bucket_quantile``): its exact output
distribution, ties in the middle of the data, and PLAN's threshold on one-hot rows."""

import numpy as np
import pytest
from ledgers import stage
from scipy.stats import chisquare

import dpmean
from dpmean.errors import InvalidParameterError
from dpmean.mechanisms.exponential import (
    LOG_BUCKET,
    MAX_LOG_BUCKETS,
    bucket_draw,
    exponential_epsilon,
    log_bucket_quantile,
)


def bucket_probabilities(values, q, edges, eps):
    """The mechanism's probabilities from its definition, written apart from its code: bucket b
    of [e^edges_b, e^edges_b+1) holds ranks (L_b, U_b], L_b = #{v < e^edges_b} (0 for the
    first bucket, which also holds every smaller value) and U_b = #{v < e^edges_b+1} (every
    value for the last); weight exp(eps u_b / 2), u_b = -dist(q m, [L_b, U_b])."""
    values = np.asarray(values, dtype=np.float64)
    bounds = np.exp(np.asarray(edges, dtype=np.float64))
    k, m = len(edges) - 1, len(values)
    lower = np.array([0 if b == 0 else np.sum(values < bounds[b]) for b in range(k)])
    upper = np.array([m if b == k - 1 else np.sum(values < bounds[b + 1]) for b in range(k)])
    target = q * m
    utility = -np.maximum(0.0, np.maximum(lower - target, target - upper))
    weights = np.exp(eps * utility / 2.0)
    return weights / weights.sum()


@pytest.mark.parametrize("q", [0.5, 0.8])
def test_bucket_draws_follow_the_exact_probabilities(q):
    """Values with ties (a run of 2.0 inside one bucket), one below the first bucket and one
    above the last; eps = 1. A chi-square test of 40,000 draws at a fixed seed: under the exact
    probabilities p >= 1e-3 fails one time in 1000."""
    values = [0.01, 0.5, 1.0, 2.0, 2.0, 2.0, 2.5, 4.0, 9.0, 100.0]
    edges = np.log([0.1, 0.4, 1.5, 2.2, 3.0, 5.0, 20.0])
    probs = bucket_probabilities(values, q, edges, 1.0)
    rng = np.random.default_rng(7)
    draws = np.array([bucket_draw(values, q, edges, rho=0.125, rng=rng) for _ in range(40_000)])
    # Each draw is its bucket's top.
    chosen = np.searchsorted(np.exp(edges[1:]), draws * (1 - 1e-12))
    np.testing.assert_allclose(draws, np.exp(edges[1:])[chosen], rtol=1e-12)
    observed = np.bincount(chosen, minlength=len(probs))
    assert chisquare(observed, 40_000 * probs).pvalue >= 1e-3


def test_a_target_inside_a_tie_in_the_middle_is_found():
    """300 values at 1, 400 at 2, 300 at 3: the median lies inside the run at 2, a gap of width
    0 that the mechanism on the gaps between order statistics never chose (its draws fell in
    the gaps beside it, as far as 1 or 3, or tens of nats below, at any budget). A bucket holds
    the run: at rho = 50 every draw is the top of the bucket holding 2 (the next bucket's
    utility is -300, weight e^-3000)."""
    values = np.repeat([1.0, 2.0, 3.0], [300, 400, 300])
    rng = np.random.default_rng(0)
    for _ in range(20):
        got = log_bucket_quantile(values, 0.5, 10.0, 46.0, rho=50.0, rng=rng, **stage())
        assert 2.0 <= got <= 2.0 * np.exp(LOG_BUCKET) * (1 + 1e-12)


def test_a_wide_log_range_keeps_its_buckets_bounded_and_bad_domains_are_refused():
    values = np.linspace(1.0, 2.0, 101)
    got = log_bucket_quantile(values, 0.5, 10.0, 1e9, rho=50.0, rng=np.random.default_rng(0),
                              **stage())
    # 2^16 buckets over 1e9 nats: each is 1e9 / 2^16 nats wide; the draw is the top of the one
    # that holds the values (or a neighbour's, at weight e^-10 each at most).
    assert np.isfinite(got) and got >= 1.5
    assert 1e9 / MAX_LOG_BUCKETS > LOG_BUCKET
    for top, log_range in ((0.0, 46.0), (np.inf, 46.0), (10.0, np.inf), (10.0, -1.0)):
        with pytest.raises(InvalidParameterError):
            log_bucket_quantile(values, 0.5, top, log_range, rho=1.0,
                                rng=np.random.default_rng(0), **stage())


def test_plan_thresholds_one_hot_rows_at_their_target_rank():
    """One-hot rows of 32 Zipf(1.5) categories: the view's row norms take 32 values, and PLAN's
    target rank q m lay inside a tie. The old mechanism drew its threshold in a gap beside the
    tie: mostly the one above it, up to 4.5 times the norm of rank q m + k (so 4.5 times the
    noise: errors 2.6x at rho = 0.5 and 3x at 10 over 20 releases), sometimes the one below
    (578 rows clipped for a target of 83 at rho = 100).

    Bucket b's utility u_b >= -k means U_b >= q m - k and L_b <= q m + k. Its top clips the
    m - U_b rows above it, at most m (1 - q) + k, and lies at most one bucket above
    e^edges_b, which is at most the norm of 0-based sorted position floor(q m + k) (that
    many values lie below it at most). With K <= 2^16 buckets, P(u_b < -k) <= K e^(-eps k / 2):
    k = 2 (ln 2^16 + ln 10^9) / eps keeps each release's failure below 10^-9 (k = 82 at rho =
    10, 26 at 100, both below m (1 - q), so the bound on the threshold bites)."""
    rng = np.random.default_rng(5)
    p = 1.0 / np.arange(1, 33) ** 1.5
    x = np.eye(32)[rng.choice(32, size=5000, p=p / p.sum())]
    for rho in (10.0, 100.0):
        for seed in range(5):
            result = dpmean.mean(x, method="plan", bounds=(0, 1), rho=rho, random_state=seed)
            d = result.diagnostics
            norms = np.sort(np.linalg.norm((x - d["centre"]) * d["scale"], axis=1))
            eps = exponential_epsilon(d["threshold_rho"])
            k = 2.0 * (np.log(MAX_LOG_BUCKETS) + np.log(1e9)) / eps
            target = 5000 * d["target_quantile"]
            assert np.sum(norms > d["threshold"]) <= 5000 - target + k, (rho, seed)
            assert target + k < 5000
            bound = norms[int(np.floor(target + k))] * np.exp(LOG_BUCKET) * (1 + 1e-12)
            assert d["threshold"] <= bound, (rho, seed)


def test_the_release_never_exceeds_the_top():
    # The edges log(top) - L + (L / K) j put the last one up to 1.7e-13 (relative) above top
    # in half of random cases (the second review): the last edge is log(top) now, and the
    # release at most top, so a threshold never reads above the norm universe's top.
    rng = np.random.default_rng(3)
    values = np.full(50, 1e300)  # every value at or above the top: the last bucket wins
    for _ in range(500):
        top, log_range = 10.0 ** rng.uniform(-30, 30), rng.uniform(0.01, 200.0)
        got = log_bucket_quantile(values, 0.5, top, log_range, rho=50.0, rng=rng, **stage())
        assert got <= top
