"""PLAN's variance search targets the upper quartile of the pair values where the budget places
it (``variance_level="auto"``), else the median; the choice is public and the estimate
consistent for Gaussian data at either level."""

import numpy as np
import pytest
from scipy.stats import chi2

import dpmean
from dpmean.accounting import PrivacyLedger
from dpmean.api import build_estimator
from dpmean.engines import make_engine
from dpmean.errors import InvalidParameterError
from dpmean.estimators.plan import UPPER_VARIANCE_LEVEL
from dpmean.estimators.variance import (
    chi2_quantile_factor,
    pair_median_resolves,
    pair_quantile_resolves,
    pair_std,
)


def test_the_level_is_a_public_function_of_the_budget():
    plan = build_estimator("plan", 1.0, bounds=(-10, 10))
    # Twice the median's budget at the upper quartile (the rank margin to the top halves).
    n, d = 10_000, 512
    kw = {"log_range": 46.0, "beta": 0.1}
    lo, hi = 1e-6, 10.0
    for _ in range(60):  # the smallest rho at which the median's guard passes
        mid = (lo * hi) ** 0.5
        lo, hi = (lo, mid) if pair_median_resolves(n, d, mid, **kw) else (mid, hi)
    assert not pair_quantile_resolves(n, d, hi * 3.9, 0.75, **kw)
    assert pair_quantile_resolves(n, d, hi * 4.1, 0.75, **kw)  # eps ~ sqrt(rho): 2x eps = 4x rho
    assert plan.variance_quantile(n, d, hi * 3.9) == 0.5
    assert plan.variance_quantile(n, d, hi * 4.1) == UPPER_VARIANCE_LEVEL
    assert build_estimator("plan", 1.0, bounds=(-10, 10), variance_level=0.5).variance_quantile(
        n, d, 100.0) == 0.5
    with pytest.raises(InvalidParameterError, match="variance_level"):
        build_estimator("plan", 1.0, bounds=(-10, 10), variance_level=1.5)


def test_the_chi2_factor_is_the_exact_quantile():
    assert chi2_quantile_factor(0.75, 1) == pytest.approx(1.3233, abs=1e-4)
    assert chi2_quantile_factor(0.5, 4) == pytest.approx(chi2.ppf(0.5, 4) / 4)


@pytest.mark.parametrize("q", [0.5, 0.75])
def test_pair_std_is_consistent_at_either_level(q):
    # sigma_j in {0.5, 1, 4}; n = 20000 rows, 10^4 pairs; rho = 50 makes the mechanism's error
    # negligible, so what is left is the sampling error of a quantile of 10^4 values: for the
    # log of the q-quantile of chi^2_1 its sd is sqrt(q (1 - q) / m) / (f(x_q) x_q) <= 0.016,
    # i.e. <= 0.8% on sigma; 5 sd = 4% (all 30 coordinates together: 5 sd leaves 1e-5 room).
    rng = np.random.default_rng(4)
    sigma = np.repeat([0.5, 1.0, 4.0], 10)
    x = rng.normal(0.0, sigma, size=(20_000, 30))
    engine = make_engine(x, np.full(30, -40.0), np.full(30, 40.0), None)
    ledger = PrivacyLedger(50.0)
    ledger.plan({"variance": 50.0})
    std = pair_std(engine, rho=50.0, ledger=ledger, rng=np.random.default_rng(1), q=q,
                   log_range=46.0)
    ratio = std / sigma
    # Wilson-Hilferty's median factor is 3.3% off the exact one (its bias: sigma^2 low by
    # 3.3%, sigma by 1.7%); the upper quartile's factor is exact.
    centre = np.sqrt(chi2.ppf(0.5, 1) / ((1 - 2 / 9) ** 3)) if q == 0.5 else 1.0
    assert np.all(np.abs(ratio / centre - 1.0) < 0.04)


def test_mostly_constant_coordinates_are_seen_at_the_upper_quartile():
    # Coordinates that are 0 in 75% of the rows and ~N(100, 30^2) otherwise: pair values are 0
    # with probability 0.75^2 = 0.5625 > 1/2, so the median is 0 (the search's floor); the
    # upper quartile lies among the pairs with one zero, |diff| ~ 87, sigma ~ 53 (true 46).
    rng = np.random.default_rng(2)
    n, d = 20_000, 8
    x = np.where(rng.random((n, d)) < 0.75, 0.0, rng.normal(100.0, 30.0, size=(n, d)))
    engine = make_engine(x, np.zeros(d), np.full(d, 255.0), None)
    found = {}
    for q in (0.5, 0.75):
        ledger = PrivacyLedger(50.0)
        ledger.plan({"variance": 50.0})
        found[q] = pair_std(engine, rho=50.0, ledger=ledger, rng=np.random.default_rng(1), q=q,
                            log_range=46.0)
    true = x.std(axis=0)
    assert np.all(found[0.5] < 0.01 * true)  # the median calls them (nearly) constant
    assert np.all(found[0.75] > 0.3 * true)


def test_plan_releases_with_either_level_and_spends_its_plan():
    x = np.random.default_rng(0).normal(size=(4000, 16))
    for level in ("auto", 0.5, 0.75):
        result = dpmean.mean(x, rho=1.0, bounds=(-10, 10), method="plan", random_state=0,
                             variance_level=level)
        assert sum(result.ledger.values()) == pytest.approx(1.0)
