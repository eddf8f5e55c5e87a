"""IOME's rotated centre (IOME, and PLAN's default centre) at budgets where its medians can make
only one reliable halving: no centre stages, the box's point nearest the origin as the centre
(``public_centre``), and the centre's budget given to the radius and the noise
(``iome.centre_stages``, ``medians_halve_twice``)."""

import numpy as np
import pytest

import dpmean
from dpmean.estimators.iome import (
    ShiftedClippedMean,
    _Geometry,
    medians_halve_twice,
    plans_a_centre,
)
from dpmean.mechanisms.quantiles import rank_error_bound
from dpmean.registry import ESTIMATORS

N, D, RHO, BOX = 300, 64, 0.1, 10.0


def rows(seed=1):
    return np.random.default_rng(seed).normal(0.5, 1.0, size=(N, D))


def test_one_reliable_halving_is_what_the_rule_reads():
    # Exactly the search private_centre would run: two halvings of the d_pad medians' counts
    # are off by n/2 with more than beta's probability, one is not.
    d_pad, rho, beta = 64, 0.0232, 0.05
    assert rank_error_bound(1, rho / d_pad, beta / d_pad) < N / 2
    assert rank_error_bound(2, rho / d_pad, beta / d_pad) >= N / 2
    assert not medians_halve_twice(N, d_pad, rho, beta, 20)
    assert medians_halve_twice(N, d_pad, 4 * rho, beta, 20)
    assert medians_halve_twice(N, d_pad, rho, beta, 1)  # a one-halving search is all there is


@pytest.mark.parametrize("method", ["iome", "plan", "plan-noscale"])
def test_no_centre_stage_and_the_origin_as_centre(method):
    estimator = ESTIMATORS[method](RHO, bounds=(-BOX, BOX))
    plan = estimator.budget_plan(N, D)
    assert not plans_a_centre(plan)
    result = dpmean.mean(rows(), method=method, rho=RHO, bounds=(-BOX, BOX), random_state=3)
    assert sum(result.ledger.values()) == pytest.approx(RHO, rel=1e-12)
    assert not plans_a_centre(result.ledger)
    # the centre is the box's point nearest the origin, here its middle 0 (up to the
    # rotation's round-off)
    np.testing.assert_allclose(result.diagnostics["centre"], 0.0, atol=1e-12)
    # the rows' norms about 0 are sqrt(64 * 1.25) = 8.9 +- 0.8 (at most 12 here): the radius
    # follows them, where the one-halving medians put the centre 45 from the rows' mean and
    # the radius near 45
    assert np.linalg.norm(rows(), axis=1).max() < 12.0
    radius = result.diagnostics["threshold"]
    if method != "iome":  # PLAN's radius is in its scaled view: 1 / scale undoes it
        radius = radius / np.max(result.diagnostics.get("scale", np.ones(D)))
    assert radius < 15.0


def test_the_rule_keeps_the_centre_where_medians_halve_twice():
    # n = 1000 at the same d and rho: the medians halve reliably, the plan is as before.
    plan = ShiftedClippedMean(RHO, bounds=(-BOX, BOX)).budget_plan(1000, D)
    assert {"centre domain", "centre"} <= set(plan)
    geometry = _Geometry(None, np.full(D, -BOX), np.full(D, BOX))
    assert medians_halve_twice(1000, geometry.d_pad, plan["centre"], 0.05, 20)


def test_the_released_mean_is_near_the_clipped_mean_about_the_middle():
    # With the radius below 15 (above), the noise per coordinate is at most 2 * 15 / (n
    # sqrt(2 rho_noise)); over 64 coordinates the l2 noise is within 25% of sqrt(64) times that
    # (chi, 64 degrees of freedom, 5 sigma), and the few clipped rows move the mean by far
    # less. The one-halving medians' centre, 45 from the rows' mean, gave errors of 6.5-7.9.
    x = rows()
    for seed in range(5):
        result = dpmean.mean(x, method="iome", rho=RHO, bounds=(-BOX, BOX), random_state=seed)
        per_coordinate = 2 * 15.0 / (N * np.sqrt(2 * result.ledger["noise"]))
        assert np.linalg.norm(result.mean - x.mean(0)) < 1.25 * np.sqrt(D) * per_coordinate


@pytest.mark.parametrize("method", ["iome", "plan"])
def test_a_box_above_the_origin_centres_at_its_lower_corner(method):
    # Counts in [0, 50]: the point nearest the origin is the lower corner, where such rows lie
    # (the box's middle, 25 in every coordinate, is 184 from their mean: IOME's errors 12.8
    # with the one-halving medians, 19.2 about the middle, 2.7 now; docs/results.md).
    x = np.minimum(np.random.default_rng(0).poisson(2, (N, D)), 50).astype(float)
    result = dpmean.mean(x, method=method, rho=RHO, bounds=(0, 50), random_state=0)
    assert not plans_a_centre(result.ledger)
    np.testing.assert_allclose(result.diagnostics["centre"], 0.0, atol=1e-9)


def test_baskets_without_a_centre_stage_centre_at_zero():
    # Sparse input's centre is a noisy mean; without centre stages (n = 400, d = 3000: d_pad =
    # 4096 medians cannot halve twice at rho = 0.5) it is the value the format leaves
    # implicit, 0, not the box's middle 0.5 (which put every item half a unit from the rows).
    import scipy.sparse

    baskets = scipy.sparse.random(400, 3000, density=0.002, format="csr", random_state=1)
    baskets.data[:] = 1.0
    result = dpmean.mean(baskets, method="plan", rho=0.5, bounds=(0, 1), random_state=0)
    assert not plans_a_centre(result.ledger)
    assert sum(result.ledger.values()) == pytest.approx(0.5, rel=1e-12)
    np.testing.assert_array_equal(result.diagnostics["centre"], 0.0)


def test_medians_of_a_wide_last_interval_come_to_the_anchor_the_rows_sit_at():
    # Rows within 0.01 of 3.0 in each of 16 coordinates, medians searched on 3 +- 10^4 at a
    # budget that makes a few reliable halvings (not 20): every count is then exact up to its
    # noise, so each search's last interval holds its median and has the anchor 3 at its
    # edge (the first midpoint). Its middle is a quarter of the interval from the rows; the
    # point nearest the anchor is within 0.01 of them.
    from dpmean.accounting import PrivacyLedger
    from dpmean.engines.memory import InMemoryEngine
    from dpmean.estimators.clipped import private_centre, reliable_median_steps
    from dpmean.transforms import IDENTITY

    n, d, rho, anchor = 60, 16, 0.5, 3.0
    x = anchor + np.random.default_rng(0).uniform(-0.01, 0.01, size=(n, d))
    engine = InMemoryEngine(x, np.full(d, -1e5), np.full(d, 1e5))
    lo, hi = np.full(d, anchor - 1e4), np.full(d, anchor + 1e4)
    halvings = reliable_median_steps(n, d, rho, 0.05, 20)
    assert 2 <= halvings <= 8
    width = 2e4 / 2**halvings

    def centre(toward):
        ledger = PrivacyLedger(rho)
        ledger.plan({"centre": rho})
        return private_centre(engine, IDENTITY, lo, hi, steps=20, rho=rho, ledger=ledger,
                              rng=np.random.default_rng(1), toward=toward)

    np.testing.assert_allclose(centre(np.full(d, anchor)), x.mean(0), atol=0.02)
    # The same draws without it: the middles, a quarter of the interval from the rows.
    np.testing.assert_allclose(np.abs(centre(None) - anchor), width / 2, rtol=1e-9)


@pytest.mark.parametrize("method", ["iome", "plan"])
def test_a_small_table_in_a_loose_box_is_centred_near_its_rows(method):
    # A user trial: N(1, 1), n = 50, d = 10 in the box +-10^4 at rho = 2. The reach search
    # makes one reliable halving, the medians three: their last intervals are 4,600 wide,
    # and their middles put the centre 9,300 from the rows (IOME's error 673, PLAN's 285,
    # cm's 0.45). Each rotated median now lies between the anchor (0) and the rows' rotated
    # median, so the centre is no farther from 0 than sqrt(d_pad) times the largest norm.
    x = np.random.default_rng(0).normal(1.0, 1.0, size=(50, 10))
    result = dpmean.mean(x, method=method, rho=2.0, bounds=(-1e4, 1e4), random_state=0)
    assert plans_a_centre(result.ledger)
    assert np.linalg.norm(result.diagnostics["centre"]) <= 4 * np.linalg.norm(x, axis=1).max()
    assert np.linalg.norm(result.mean - x.mean(0)) < 10.0


def test_plan_needs_the_rows_its_bucketed_threshold_can_place():
    # A user trial: 30 Likert answers (mostly 5) in [1, 5], d = 10, rho = 2. PLAN's threshold
    # chooses among 47,104 log buckets, each empty one below the rows at the target rank's
    # utility; its share (1/10) left the target rank (n - k) within the rank error over them,
    # and its draws came out at 1e-6 to 1e-18 (error 11.7 against the Gaussian mechanism's
    # 0.58). Now the threshold takes the smallest share whose target rank clears that error
    # at beta (1/4 here: the target rank n - k = 14.2 above ln(47,104 / 0.1) /
    # sqrt(2 rho_t) = 13.1), and PLAN runs with a threshold among the rows.
    from dpmean.estimators.plan import PrivateLimitAdaptedNoise
    from dpmean.mechanisms.exponential import log_bucket_count

    assert log_bucket_count(46.0) == 47_104
    plan = PrivateLimitAdaptedNoise(2.0, bounds=(1, 5))
    budget = plan.budget_plan(30, 10)
    assert budget["threshold"] == pytest.approx(0.25 * (budget["threshold"] + budget["noise"]))
    assert plan.clears_buckets(30, budget["threshold"])
    for seed in range(10):
        x = np.random.default_rng(seed).choice([1, 2, 3, 4, 5], size=(30, 10),
                                               p=[.02, .02, .03, .08, .85]).astype(float)
        result = dpmean.mean(x, method="plan", rho=2.0, bounds=(1, 5), random_state=seed)
        assert not result.fallback
        # The collapse put it at 1e-6 to 1e-18 of the norms' bound; the rows' norms about
        # the centre are at least 1/4 of a unit (an answer away) where they are not 0.
        assert result.diagnostics["threshold"] > 1e-3 * result.diagnostics["view_norm_bound"]


def test_plans_threshold_share_clears_its_buckets_where_one_can():
    # The threshold's share is the smallest whose clip count is at most 3 sqrt(n) and whose
    # target rank clears the rank error over its buckets at beta (``clears_buckets``); with
    # none that clears, the old rule (a review: taking the smallest clearing share beyond the
    # clip count's limit cut 1/4 to 1/100 at n = 2000, rho = 0.01, and 0/1 flags erred 37x).
    from dpmean.estimators.plan import THRESHOLD_SHARES, PrivateLimitAdaptedNoise

    def shares(plan, n, d):
        budget = plan.budget_plan(n, d)
        rest = budget["threshold"] + budget["noise"]
        return budget["threshold"] / rest, rest

    plan = PrivateLimitAdaptedNoise(2.0, bounds=(-1e4, 1e4))
    share, rest = shares(plan, 50, 10)
    assert share == pytest.approx(0.25)
    assert plan.clears_buckets(50, 0.25 * rest) and not plan.clears_buckets(50, 0.1 * rest)
    assert plan.clip_count(50, 0.1 * rest, plan.beta) <= 3 * np.sqrt(50)  # the old rule's 1/10
    wide = PrivateLimitAdaptedNoise(0.01, bounds=(0, 1))
    share, rest = shares(wide, 2000, 1)
    assert share == pytest.approx(THRESHOLD_SHARES[-1])
    assert not any(wide.clears_buckets(2000, s * rest) and
                   wide.clip_count(2000, s * rest, wide.beta) <= 3 * np.sqrt(2000)
                   for s in THRESHOLD_SHARES)


def test_plans_threshold_cuts_fewer_buckets_where_its_target_cannot_clear_them():
    # ``threshold_buckets``: None where the target rank clears the rank error over the
    # default 47,104 buckets; else the most K whose error at beta it clears,
    # K exp(-sqrt(2 rho_t) (n - k)) <= beta, at least one a nat.
    from dpmean.estimators.plan import PrivateLimitAdaptedNoise
    from dpmean.mechanisms.exponential import log_bucket_count

    for rho, n, d in ((2.0, 50, 10), (1.0, 40, 5), (0.05, 150, 5), (0.5, 60, 1), (1.0, 5000, 8)):
        plan = PrivateLimitAdaptedNoise(rho, bounds=(0, 1))
        rho_t = plan.budget_plan(n, d)["threshold"]
        buckets = plan.threshold_buckets(n, rho_t)
        if plan.clears_buckets(n, rho_t):
            assert buckets is None
            continue
        # The empty buckets' mass against the target's: K exp(-sqrt(2 rho_t) (n - k)).
        weight = np.exp(-np.sqrt(2.0 * rho_t) * (n - plan.clip_count(n, rho_t)))
        assert np.ceil(plan.log_range) <= buckets < log_bucket_count(plan.log_range)
        assert buckets * weight <= plan.beta or buckets == np.ceil(plan.log_range)
        assert (buckets + 1) * weight > plan.beta


def test_plans_threshold_falls_below_the_rows_at_most_beta_over_one_plus_beta():
    # A user trial: a 40-row table (5 columns) at rho = 1, PLAN's centre at the box's middle,
    # its threshold below every row's norm about it in 14% of 200 releases (the release is
    # then the centre: errors up to 42% of the box). The exact probability that the draw
    # lands in a bucket below every row (``bucket_probabilities``, written apart from the
    # code) is at most beta / (1 + beta) with ``threshold_buckets``' count, and was above
    # beta with the default count (0.107 here; 0.047 now); the draws' frequency agrees with
    # it (3,000 draws at a fixed seed: within 4 standard deviations).
    from ledgers import stage
    from test_log_buckets import bucket_probabilities

    from dpmean.estimators.plan import PrivateLimitAdaptedNoise
    from dpmean.mechanisms.exponential import (
        exponential_epsilon,
        log_bucket_count,
        log_bucket_quantile,
    )

    n, d = 40, 5
    plan = PrivateLimitAdaptedNoise(1.0, bounds=(0, 1))
    rho_t = plan.budget_plan(n, d)["threshold"]
    q = 1.0 - plan.clip_count(n, rho_t) / n
    top = np.sqrt(d) / 2.0  # the norms' bound about the box's middle, in the unit box
    # The trial's table (ages, blood pressure, cholesterol, BMI, a count) in its boxes, and
    # its rows' norms about the box's middle in the unit box (PLAN's view there).
    rng = np.random.default_rng(5)
    rows = np.column_stack([rng.normal(60, 12, n), rng.normal(130, 15, n),
                            rng.normal(200, 40, n), rng.normal(27, 5, n), rng.poisson(5, n)])
    lo, hi = np.array([0, 50, 100, 10, 0.0]), np.array([120, 250, 400, 60, 60.0])
    norms = np.linalg.norm((np.clip(rows, lo, hi) - (lo + hi) / 2) / (hi - lo), axis=1)
    eps = exponential_epsilon(rho_t)

    def below(buckets):
        edges = np.log(top) - plan.log_range + (plan.log_range / buckets) * np.arange(
            buckets + 1)
        edges[-1] = np.log(top)
        probs = bucket_probabilities(norms, q, edges, eps)
        return probs[np.exp(edges[1:]) <= norms.min()].sum()

    buckets = plan.threshold_buckets(n, rho_t)
    exact = below(buckets)
    assert buckets is not None and below(log_bucket_count(plan.log_range)) > plan.beta
    assert exact <= plan.beta / (1.0 + plan.beta)
    rng = np.random.default_rng(11)
    draws = np.array([log_bucket_quantile(norms, q, top, plan.log_range, rho=rho_t, rng=rng,
                                          buckets=buckets, **stage()) for _ in range(3000)])
    frequency = np.mean(draws <= norms.min())
    assert abs(frequency - exact) <= 4.0 * np.sqrt(exact * (1.0 - exact) / 3000)


def test_plans_coarse_threshold_is_its_buckets_geometric_middle():
    # Where ``threshold_buckets`` cuts fewer buckets the release is the chosen bucket's
    # geometric middle (a review: the top lay up to e^(46 / K) above the norm it targets and
    # cost up to 2.7x where collapses had been harmless); with the default buckets, the top.
    from dpmean.estimators.plan import PrivateLimitAdaptedNoise

    n, d, rho = 150, 5, 0.05
    plan = PrivateLimitAdaptedNoise(rho, bounds=(-1e4, 1e4))
    rho_t = plan.budget_plan(n, d)["threshold"]
    buckets = plan.threshold_buckets(n, rho_t)
    assert buckets is not None
    for seed in range(5):
        x = np.random.default_rng(seed).normal(0.0, 1.0, size=(n, d))
        result = plan.with_params(random_state=seed).estimate(x)
        top = result.diagnostics["norm_bound"]
        # In buckets of the top's log: edges log(top) - 46 + (46 / K) b; the middle of bucket b
        # sits half a bucket above edge b.
        position = (np.log(result.diagnostics["threshold"]) - np.log(top) + plan.log_range) / (
            plan.log_range / buckets)
        assert position % 1.0 == pytest.approx(0.5, abs=1e-6)
