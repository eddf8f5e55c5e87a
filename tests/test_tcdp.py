"""(rho, omega)-tCDP and (epsilon, delta): the conversion uses only the orders alpha <= omega, the
Gaussian tCDP smooth noise given (epsilon, delta) meets it on worst-case pairs (hockey-stick
divergence integrated numerically), and pairs no rho can meet are refused."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpmean.accounting import (
    approx_dp_to_tcdp,
    approx_dp_to_zcdp,
    tcdp_to_approx_dp,
    zcdp_to_approx_dp,
)
from dpmean.budget import Budget
from dpmean.errors import InvalidParameterError
from dpmean.estimators.trimmed import TrimmedMean
from dpmean.mechanisms.smooth_noise import GaussianTCDP

OMEGA = 10.0


def grid_conversion(rho: float, omega: float, delta: float) -> float:
    """min over a fine grid of alpha in (1, omega] of the per-order CKS conversion."""
    alpha = 1.0 + np.geomspace(1e-7, omega - 1.0, 200_001)
    eps = (alpha * rho + (math.log(1 / delta) + (alpha - 1) * np.log(1 - 1 / alpha)
                          - np.log(alpha)) / (alpha - 1))
    return float(eps.min())


def mironov(rho: float, omega: float, delta: float) -> float:
    alpha = 1.0 + np.geomspace(1e-7, omega - 1.0, 200_001)
    return float((alpha * rho + math.log(1 / delta) / (alpha - 1)).min())


def hockey_stick(eps: float, mu: float, sigma: float) -> float:
    """sup_S P(S) - e^eps Q(S) for P = N(0, 1), Q = N(mu, sigma^2), by quadrature of
    max(0, p - e^eps q) split at the roots of log p - log q = eps (a quadratic in z)."""
    a = 0.5 * (1 / sigma**2 - 1)
    b = -mu / sigma**2
    c = mu**2 / (2 * sigma**2) + math.log(sigma) - eps
    roots = np.roots([a, b, c]) if abs(a) > 1e-300 else np.array([-c / b])
    reach = 40 * max(1.0, sigma) + abs(mu)
    cuts = sorted(r.real for r in roots if abs(r.imag) < 1e-12 and -reach < r.real < reach)
    points = [-reach, *cuts, reach]

    def excess(z: float) -> float:
        return max(0.0, stats.norm.pdf(z) - math.exp(eps) * stats.norm.pdf(z, mu, sigma))

    return sum(integrate.quad(excess, lo, hi, epsabs=1e-15, epsrel=1e-10, limit=200)[0]
               for lo, hi in zip(points[:-1], points[1:], strict=True))


def worst_case_delta(eps: float, s: float, t: float) -> float:
    """The largest hockey-stick divergence of Z against e^t' Z + s' over |s'| <= s, |t'| <= t
    (a grid; the normalised comparison of any two neighbours' releases is one of these, in each
    direction)."""
    return max(hockey_stick(eps, shift, math.exp(tp))
               for tp in np.linspace(-t, t, 21) for shift in (s, 0.5 * s))


@pytest.mark.parametrize("rho, delta", [(0.01, 1e-6), (0.08, 1e-6), (0.5, 1e-9), (2.0, 1e-3),
                                        (1e-4, 1e-2)])
@pytest.mark.parametrize("omega", [1.5, 10.0, 100.0])
def test_conversion_against_a_grid_over_orders(rho, delta, omega):
    ours = tcdp_to_approx_dp(rho, omega, delta)
    grid = max(0.0, grid_conversion(rho, omega, delta))
    # ours stops a relative 1e-12 short of alpha = omega, which costs up to ~1e-10 here
    assert ours <= grid + 1e-9 * max(1.0, grid)
    assert ours >= grid - 1e-6 * max(1.0, grid)
    assert ours <= mironov(rho, omega, delta) + 1e-9
    # fewer orders cannot give a smaller epsilon than zCDP's every order
    assert ours >= zcdp_to_approx_dp(rho, delta) - 1e-9


@pytest.mark.parametrize("epsilon, delta", [(2.0, 1e-6), (1.0, 1e-3), (3.0, 1e-9), (5.0, 1e-6)])
def test_inverse_round_trips_conservatively(epsilon, delta):
    rho = approx_dp_to_tcdp(epsilon, delta, OMEGA)
    assert rho > 0
    assert tcdp_to_approx_dp(rho, OMEGA, delta) <= epsilon
    assert tcdp_to_approx_dp(rho * (1 + 1e-9), OMEGA, delta) > epsilon
    assert rho <= approx_dp_to_zcdp(epsilon, delta) * (1 + 1e-12)


def test_regression_half_epsilon_at_1e6_is_refused():
    with pytest.raises(InvalidParameterError, match="omega"):
        approx_dp_to_tcdp(0.5, 1e-6, OMEGA)
    with pytest.raises(InvalidParameterError, match="omega"):
        TrimmedMean(epsilon=0.5, delta=1e-6, noise="gaussian-tcdp", bounds=(0.0, 1.0))
    # a larger omega can meet it
    rho = approx_dp_to_tcdp(0.5, 1e-6, 200.0)
    assert tcdp_to_approx_dp(rho, 200.0, 1e-6) <= 0.5


def test_old_zcdp_conversion_leaks_at_half_epsilon():
    # the test of the tester: the rho the zCDP conversion gave the tCDP noise at (0.5, 1e-6)
    # leaves delta far above 1e-6 on a worst-case pair at smoothing t = 0.04
    budget = Budget("tCDP", rho=approx_dp_to_zcdp(0.5, 1e-6), omega=OMEGA)
    calibration = GaussianTCDP.calibrate(budget, 0.04)
    assert worst_case_delta(0.5, calibration.s, 0.04) > 10 * 1e-6


@pytest.mark.parametrize("epsilon, delta", [(2.0, 1e-6), (1.0, 1e-3), (3.0, 1e-9)])
@pytest.mark.parametrize("t", [0.01, 0.04, 0.05])
def test_trimmed_gaussian_tcdp_meets_epsilon_delta_numerically(epsilon, delta, t):
    estimator = TrimmedMean(epsilon=epsilon, delta=delta, noise="gaussian-tcdp",
                            bounds=(0.0, 1.0), smoothing=t)
    assert estimator.rho == approx_dp_to_tcdp(epsilon, delta, OMEGA)
    calibration = GaussianTCDP.calibrate(Budget("tCDP", rho=estimator.rho, omega=OMEGA), t)
    assert worst_case_delta(epsilon, calibration.s, t) <= delta


def test_rho_given_directly_is_unchanged():
    assert TrimmedMean(0.3, noise="gaussian-tcdp", bounds=(0.0, 1.0)).rho == 0.3
    with pytest.raises(InvalidParameterError):
        TrimmedMean(epsilon=2.0, noise="gaussian-tcdp", bounds=(0.0, 1.0))
    with pytest.raises(InvalidParameterError):
        tcdp_to_approx_dp(0.1, 1.0, 1e-6)


def exact_order_epsilon(rho: float, delta: float, t: float) -> float:
    """``_cks_order_epsilon``'s formula at alpha = 1 + e^t, at 50 significant digits (mpmath)."""
    import mpmath as mp

    with mp.workdps(50):  # locally: other modules' tests set their own precision
        rho, alpha = mp.mpf(rho), 1 + mp.exp(mp.mpf(t))
        log_inv_delta = -mp.log(mp.mpf(delta))
        return float(alpha * rho + (log_inv_delta + (alpha - 1) * mp.log(1 - 1 / alpha)
                                    - mp.log(alpha)) / (alpha - 1))


@pytest.mark.parametrize("epsilon, delta", [(0.05, 1e-3), (0.1, 1e-6), (1.0, 1e-9), (3.0, 1e-6),
                                            (10.0, 1e-12), (1.0, 0.5)])
@pytest.mark.parametrize("omega", [3.0, 20.0, 1e4])
def test_inverse_meets_epsilon_exactly_not_only_as_computed(epsilon, delta, omega):
    # The order the conversion picks, evaluated exactly, must give at most the requested
    # epsilon: checked only as computed, the rho returned could give an epsilon an ulp or two
    # above it (20 ulps, relative 4.6e-15, at (0.05, 1e-3) before the terms' rounding bound).
    from scipy.optimize import minimize_scalar

    try:
        rho = approx_dp_to_tcdp(epsilon, delta, omega)
    except InvalidParameterError:
        return  # the orders up to omega cannot meet this request at any rho (tested above)
    top = math.log((omega - 1.0) * (1.0 - 1e-12))
    refined = minimize_scalar(lambda t: exact_order_epsilon(rho, delta, t),
                              bounds=(top - 40.0, top), method="bounded",
                              options={"xatol": 1e-12})
    grid = min(exact_order_epsilon(rho, delta, top - 40.0 * i / 400)
               for i in range(401))
    assert min(grid, float(refined.fun)) <= epsilon
