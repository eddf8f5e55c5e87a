"""Exact PLD accounting (dpmean.pld) against dp_accounting, mpmath and the CKS conversion.

Tolerances are derived, not tuned:

* GRID = 1e-4 is the loss grid. A pessimistic PLD with m discretised factors reports a delta
  between the exact delta(eps) and the exact delta(eps - m * GRID); tail truncation adds at most
  ~1e-19; ROUND = 1e-9 (relative) covers floating-point rounding in log_ndtr / FFT sums.
* An optimistic PLD (dp_accounting, pessimistic_estimate=False) is a lower bound on the exact
  delta, so pessimistic >= optimistic must hold up to ROUND.
"""

import math
import warnings

import dp_accounting
import mpmath
import numpy as np
import pytest
from dp_accounting import NeighboringRelation
from dp_accounting.pld import PLDAccountant
from dp_accounting.pld import privacy_loss_distribution as dp_pld
from scipy.optimize import brentq

from dpmean import pld as pld_module
from dpmean.accounting import approx_dp_to_zcdp, zcdp_to_approx_dp
from dpmean.errors import InvalidParameterError
from dpmean.pld import (
    ApproxDPEvent,
    GaussianEvent,
    PureDPEvent,
    ZCDPEvent,
    _bounded_range_delta,
    calibrate_scale,
    compose_delta,
    compose_epsilon,
    gaussian_delta,
    gaussian_rho_for_approx_dp,
)

GRID = 1e-4
ROUND = 1e-9
TAIL = 1e-18  # dpmean.pld's truncated mass, over all factors and convolutions, with room to spare
# dp_accounting's PLDAccountant composes with its default tail_mass_truncation=1e-15, half of
# which may go to loss +inf, once per composed event.
DPACC_TAIL = 1e-15


def exact_gaussian_delta(mu: float, eps: float) -> float:
    """Balle-Wang's formula at 50 significant digits."""
    with mpmath.workdps(50):  # locally: other modules' tests set their own precision
        mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
        value = (mpmath.ncdf(-eps / mu + mu / 2)
                 - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2))
        return float(value)


def accountant_gaussian_delta(mu: float, eps: float, pieces: int = 1) -> float:
    """dp_accounting's pessimistic PLD of mu-GDP, optionally as `pieces` equal Gaussians."""
    accountant = PLDAccountant(NeighboringRelation.ADD_OR_REMOVE_ONE, GRID)
    for _ in range(pieces):
        # Sensitivity 1, sigma = sqrt(pieces) / mu: each piece is (mu / sqrt(pieces))-GDP.
        accountant.compose(dp_accounting.GaussianDpEvent(math.sqrt(pieces) / mu))
    return float(accountant.get_delta(eps))


# ------------------------------------------------------------------------------------------
# (a) gaussian_delta
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mu", [0.05, 0.3, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("eps", [0.01, 0.3, 1.0, 5.22, 20.0])
def test_gaussian_delta_matches_mpmath(mu, eps):
    exact = exact_gaussian_delta(mu, eps)
    got = gaussian_delta(mu, eps)
    if exact < 1e-300:
        assert got < 1e-290
    else:
        assert got == pytest.approx(exact, rel=ROUND, abs=0.0)


@pytest.mark.parametrize("mu, eps", [(1.0, 30.0), (0.5, 12.0), (2.0, 60.0), (0.02, 0.2)])
def test_gaussian_delta_is_accurate_for_tiny_delta(mu, eps):
    # The textbook difference of two Phi values cancels to 0 or noise here; log space does not.
    exact = exact_gaussian_delta(mu, eps)
    assert 0.0 < exact < 1e-20
    assert gaussian_delta(mu, eps) == pytest.approx(exact, rel=1e-8, abs=0.0)


@pytest.mark.parametrize("mu", [0.3, 1.0, 3.0])
@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0, 6.0])
def test_gaussian_delta_against_dp_accounting_pld(mu, eps):
    analytic = gaussian_delta(mu, eps)
    pessimistic = accountant_gaussian_delta(mu, eps)
    # Pessimistic: never below the exact value (up to rounding) ...
    assert analytic <= pessimistic * (1 + ROUND) + 1e-300
    # ... and within one grid step: no worse than the exact delta at eps - GRID (plus tails).
    assert pessimistic <= gaussian_delta(mu, eps - GRID) * (1 + ROUND) + DPACC_TAIL


def test_gaussian_delta_decreasing_in_eps_increasing_in_mu():
    eps = np.linspace(0.05, 10, 60)
    deltas = [gaussian_delta(1.0, e) for e in eps]
    assert all(a > b for a, b in zip(deltas, deltas[1:], strict=False))
    mus = np.linspace(0.1, 5, 50)
    deltas = [gaussian_delta(m, 1.0) for m in mus]
    assert all(a < b for a, b in zip(deltas, deltas[1:], strict=False))


# ------------------------------------------------------------------------------------------
# (b) gaussian_rho_for_approx_dp
# ------------------------------------------------------------------------------------------

TARGETS = [(1.0, 1e-6), (5.22, 1e-6), (0.1, 1e-9), (1.0, 1e-12), (10.0, 1e-10), (0.01, 1e-5)]


@pytest.mark.parametrize("eps, delta", TARGETS)
def test_gaussian_rho_round_trip(eps, delta):
    rho = gaussian_rho_for_approx_dp(eps, delta)
    mu = math.sqrt(2 * rho)
    got = gaussian_delta(mu, eps)
    assert got <= delta  # as computed, not just up to the root-finder
    assert got >= delta * (1 - 1e-9)  # and the largest such rho, to 1e-9 in delta
    assert gaussian_delta(math.sqrt(2 * rho * (1 + 1e-8)), eps) > delta


@pytest.mark.parametrize("eps, delta", TARGETS)
def test_gaussian_rho_beats_cks(eps, delta):
    rho = gaussian_rho_for_approx_dp(eps, delta)
    cks = approx_dp_to_zcdp(eps, delta)
    assert rho > cks
    # The CKS conversion is valid for the Gaussian, so the exact delta at the CKS rho is below it.
    assert gaussian_delta(math.sqrt(2 * cks), eps) <= delta


@pytest.mark.parametrize("eps, delta", [(1.0, 1e-6), (5.22, 1e-6), (0.1, 1e-9)])
def test_noise_std_improvement_over_cks(eps, delta):
    # sigma_CKS / sigma_exact = sqrt(rho_exact / rho_CKS), with rho_exact = mu*^2 / 2 for the
    # mu* at which Balle-Wang's delta (at 50 digits) equals delta, found here independently
    # of the library's root-finder: the gain is above 1 and is the exact one (5-8% here).
    cks_mu = math.sqrt(2 * approx_dp_to_zcdp(eps, delta))  # its delta is below the target
    mu = brentq(lambda m: exact_gaussian_delta(m, eps) - delta, cks_mu, 2 * cks_mu, xtol=1e-14)
    ratio = math.sqrt(gaussian_rho_for_approx_dp(eps, delta) / approx_dp_to_zcdp(eps, delta))
    assert ratio > 1
    assert ratio == pytest.approx(math.sqrt(mu**2 / 2 / approx_dp_to_zcdp(eps, delta)), rel=1e-6)


# ------------------------------------------------------------------------------------------
# (c) composition
# ------------------------------------------------------------------------------------------


def test_gaussian_events_merge_exactly():
    rhos = [0.01, 0.2, 0.05, 0.3, 0.002]
    total = math.fsum(rhos)
    for eps in [0.5, 1.0, 3.0]:
        split = compose_delta([GaussianEvent(r) for r in rhos], eps)
        whole = compose_delta([GaussianEvent(total)], eps)
        assert split == whole == gaussian_delta(math.sqrt(2 * total), eps)


@pytest.mark.parametrize("eps", [0.5, 2.0, 4.0])
def test_k_gaussians_equal_one_gaussian_in_dp_accounting(eps):
    # dp_accounting discretises and convolves k separate Gaussian PLDs; the result must agree
    # with one Gaussian of the summed rho within k grid steps (and never be below it).
    k, mu = 6, 1.3
    composed = accountant_gaussian_delta(mu, eps, pieces=k)
    exact = gaussian_delta(mu, eps)
    assert exact <= composed * (1 + ROUND)
    assert composed <= gaussian_delta(mu, eps - k * GRID) * (1 + ROUND) + k * DPACC_TAIL
    assert compose_delta([GaussianEvent(mu * mu / 2 / k)] * k, eps) == exact


def rr_noise(eps: float) -> float:
    """Randomized response on 2 buckets with noise p is log((2 - p) / p)-DP."""
    return 2.0 / (1.0 + math.exp(eps))


@pytest.mark.parametrize("eps", [0.5, 1.5, 3.0])
def test_pure_and_gaussian_sandwiched_by_dp_accounting(eps):
    eps_pure, k, rho = 0.05, 300, 0.2
    mu = math.sqrt(2 * rho)
    ours = compose_delta([PureDPEvent(eps_pure, count=k), GaussianEvent(rho)], eps)

    def reference(pessimistic: bool) -> dp_pld.PrivacyLossDistribution:
        rr = dp_pld.from_randomized_response(
            rr_noise(eps_pure),
            2,
            pessimistic_estimate=pessimistic,
            value_discretization_interval=GRID,
        ).self_compose(k)
        gauss = dp_pld.from_gaussian_mechanism(
            1 / mu, pessimistic_estimate=pessimistic, value_discretization_interval=GRID
        )
        return rr.compose(gauss)

    optimistic = float(reference(False).get_delta_for_epsilon(eps))
    pessimistic = reference(True)
    assert optimistic * (1 - ROUND) <= ours
    # Ours rounds the k-fold binomial once (dp_accounting rounds each of the k factors), so ours
    # is at most dp_accounting's pessimistic value, and no worse than it 2 grid steps earlier.
    assert ours <= float(pessimistic.get_delta_for_epsilon(eps)) * (1 + ROUND) + TAIL
    assert ours <= float(pessimistic.get_delta_for_epsilon(eps - 2 * GRID)) * (1 + ROUND) + TAIL


def exact_kov_delta(eps0: float, delta0: float, k: int, eps: float) -> float:
    """delta(eps) of the k-fold Kairouz-Oh-Viswanath pair, in closed form (mpmath)."""
    with mpmath.workdps(50):  # locally, as exact_gaussian_delta
        eps0, delta0, eps = mpmath.mpf(eps0), mpmath.mpf(delta0), mpmath.mpf(eps)
        q = 1 / (1 + mpmath.exp(eps0))  # probability of loss -eps0
        finite = (1 - delta0) ** k
        total = 1 - finite
        for j in range(k + 1):
            loss = (k - 2 * j) * eps0
            if loss > eps:
                total += (
                    finite
                    * mpmath.binomial(k, j)
                    * (1 - q) ** (k - j)
                    * q**j
                    * (1 - mpmath.exp(eps - loss))
                )
        return float(total)


@pytest.mark.parametrize("eps0, delta0, k", [(0.2, 1e-7, 40), (0.05, 0.0, 300), (1.0, 1e-9, 3)])
def test_pure_and_approx_events_match_exact_kov_composition(eps0, delta0, k):
    ref = dp_pld.from_privacy_parameters(
        dp_pld.common.DifferentialPrivacyParameters(eps0, delta0), GRID
    ).self_compose(k)
    event = ApproxDPEvent(eps0, delta0, count=k) if delta0 else PureDPEvent(eps0, count=k)
    for eps in [0.3, 1.0, 2.0, 2.5]:
        ours = compose_delta([event], eps)
        exact = exact_kov_delta(eps0, delta0, k, eps)
        # Pessimistic, and off by less than one grid step: the k-fold loss is rounded up once.
        assert exact * (1 - ROUND) <= ours
        assert ours <= exact_kov_delta(eps0, delta0, k, eps - GRID) * (1 + ROUND) + TAIL
        # dp_accounting's pessimistic PLD is an upper bound too, so at eps - GRID it is above ours.
        assert ours <= float(ref.get_delta_for_epsilon(eps - GRID)) * (1 + ROUND) + TAIL
        assert ours >= -math.expm1(k * math.log1p(-delta0))  # the infinite-loss mass


def binary_pair_delta(eps: float, t: float, x: float) -> float:
    """Hockey stick of the two-outcome pair with privacy loss t or t - eps, from its masses."""
    q_hi = -math.expm1(t - eps) / (math.exp(t) - math.exp(t - eps))
    q_lo = 1.0 - q_hi
    return q_hi * max(math.exp(t) - math.exp(x), 0.0) + q_lo * max(
        math.exp(t - eps) - math.exp(x), 0.0
    )


@pytest.mark.parametrize("eps", [0.05, 0.5, 2.0])
def test_bounded_range_envelope_is_the_sup_over_binary_pairs(eps):
    ts = np.linspace(0.0, eps, 2001)[1:]  # t = 0 is the degenerate pair with loss 0
    for x in np.linspace(-1.2 * eps, 1.2 * eps, 25):
        brute = max(binary_pair_delta(eps, t, x) for t in ts)
        closed = float(_bounded_range_delta(eps, np.array([x]))[0])
        assert brute <= closed * (1 + ROUND) + 1e-15  # an upper bound on every t ...
        assert closed <= brute + 1e-6 * eps  # ... and attained (to the t grid's resolution)


@pytest.mark.parametrize("eps", [0.5, 2.0, 4.0])
def test_bounded_range_events_between_rr_half_and_rr(eps):
    # An eps-BR mechanism is eps-DP, and randomized response at eps/2 is eps-BR: the envelope
    # composition lies between the two exact binomial compositions (one grid step each side).
    eps0, k = 0.06, 1000
    br = compose_delta([PureDPEvent(eps0, count=k, bounded_range=True)], eps)
    assert exact_kov_delta(eps0 / 2, 0.0, k, eps) * (1 - ROUND) <= br
    assert br <= exact_kov_delta(eps0, 0.0, k, eps - GRID) * (1 + ROUND) + TAIL
    # and it is no worse than today's eps0^2/8-zCDP accounting through CKS
    assert compose_delta([ZCDPEvent(k * eps0**2 / 8)], eps) >= br * (1 - 1e-6)


def test_single_approx_dp_event_round_trip():
    eps0, delta0 = 0.7, 1e-6
    assert compose_epsilon([ApproxDPEvent(eps0, delta0)], delta0 * (1 + 1e-6)) == pytest.approx(
        eps0, abs=GRID + 1e-9
    )
    assert compose_epsilon([ApproxDPEvent(eps0, delta0)], delta0 / 2) == math.inf


def test_pure_event_single():
    # A single eps0-DP event is (eps0, 0)-DP: delta vanishes from eps0 + GRID on, down to the
    # least delta a PLD is read as (its round-off and cut tails, pld._PLD_FLOOR).
    assert compose_delta([PureDPEvent(0.8)], 0.8 + GRID) == pld_module._PLD_FLOOR
    assert compose_delta([PureDPEvent(0.8)], 0.5) > 0.0


def test_never_worse_than_today_cks():
    # Strategy C is today's accounting; the minimum over strategies can only be smaller.
    events = [
        GaussianEvent(0.1),
        ZCDPEvent(0.05),
        PureDPEvent(0.02, count=100, bounded_range=True),
        PureDPEvent(0.1, count=3),
    ]
    total = 0.1 + 0.05 + 100 * 0.02**2 / 8 + 3 * 0.1**2 / 2
    for delta in [1e-6, 1e-9]:
        eps_today = zcdp_to_approx_dp(total, delta)
        assert compose_delta(events, eps_today) <= delta * (1 + 1e-6)
        assert compose_epsilon(events, delta) <= eps_today * (1 + 1e-6)


def test_zcdp_event_split_is_between_bounds():
    # A Gaussian part plus a generic zCDP part: no better than the Gaussian part alone, and no
    # worse than treating everything as zCDP.
    eps, r1, r2 = 1.0, 0.03, 0.01
    got = compose_delta([GaussianEvent(r1), ZCDPEvent(r2)], eps)
    assert got >= gaussian_delta(math.sqrt(2 * r1), eps)
    assert compose_epsilon([GaussianEvent(r1), ZCDPEvent(r2)], got) <= zcdp_to_approx_dp(
        r1 + r2, got
    ) * (1 + 1e-6)


def test_compose_epsilon_inverts_compose_delta():
    events = [GaussianEvent(0.3), PureDPEvent(0.01, count=500)]
    for delta in [1e-5, 1e-8]:
        eps = compose_epsilon(events, delta)
        assert compose_delta(events, eps) <= delta
        assert compose_delta(events, eps * (1 - 1e-6)) > delta


# ------------------------------------------------------------------------------------------
# (d) calibrate_scale
# ------------------------------------------------------------------------------------------


def mixed_release(d: int, share: float, bounded_range: bool):
    """A plan spending `share` of a total rho = s on d exponential mechanisms
    (eps_j = sqrt(8 rho_j)) and the rest on Gaussian stages."""

    def events_at(s: float):
        eps_j = math.sqrt(8 * share * s / d)
        return [
            GaussianEvent((1 - share) * s),
            PureDPEvent(eps_j, count=d, bounded_range=bounded_range),
        ]

    return events_at


@pytest.mark.parametrize("bounded_range", [False, True])
@pytest.mark.parametrize("eps, delta", [(1.0, 1e-6), (5.22, 1e-6)])
def test_calibrate_scale_meets_and_is_largest(eps, delta, bounded_range):
    events_at = mixed_release(64, 0.1, bounded_range)
    s = calibrate_scale(eps, delta, events_at)
    assert compose_delta(events_at(s), eps) <= delta
    assert compose_delta(events_at(1.01 * s), eps) > delta


@pytest.mark.parametrize("eps, delta", [(1.0, 1e-6), (0.1, 1e-9)])
def test_calibrate_gaussian_only_matches_closed_form(eps, delta):
    s = calibrate_scale(eps, delta, lambda s: [GaussianEvent(0.6 * s), GaussianEvent(0.4 * s)])
    assert s == pytest.approx(gaussian_rho_for_approx_dp(eps, delta), rel=2e-6)
    assert s <= gaussian_rho_for_approx_dp(eps, delta)


def test_calibrate_scale_2048_pure_events():
    # Its speed is a benchmark's business (tests assert no wall-clock times): here, that it is
    # the tightest scale to 1 %.
    events_at = mixed_release(2048, 0.25, bounded_range=False)
    s = calibrate_scale(1.0, 1e-6, events_at)
    assert compose_delta(events_at(s), 1.0) <= 1e-6
    assert compose_delta(events_at(1.01 * s), 1.0) > 1e-6


# ------------------------------------------------------------------------------------------
# (e) bad inputs
# ------------------------------------------------------------------------------------------

BAD_EPS = [0.0, -1.0, math.nan, math.inf, "1", None, True]
BAD_DELTA = [0.0, 1.0, -1e-6, 1.5, math.nan, math.inf, None]


@pytest.mark.parametrize("eps", BAD_EPS)
def test_bad_epsilon(eps):
    with pytest.raises(InvalidParameterError, match="epsilon"):
        gaussian_delta(1.0, eps)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        gaussian_rho_for_approx_dp(eps, 1e-6)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        compose_delta([GaussianEvent(0.1)], eps)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        calibrate_scale(eps, 1e-6, lambda s: [GaussianEvent(s)])


@pytest.mark.parametrize("delta", BAD_DELTA)
def test_bad_delta(delta):
    with pytest.raises(InvalidParameterError, match="delta"):
        gaussian_rho_for_approx_dp(1.0, delta)
    with pytest.raises(InvalidParameterError, match="delta"):
        compose_epsilon([GaussianEvent(0.1)], delta)
    with pytest.raises(InvalidParameterError, match="delta"):
        calibrate_scale(1.0, delta, lambda s: [GaussianEvent(s)])


@pytest.mark.parametrize("mu", [0.0, -1.0, math.nan, math.inf])
def test_bad_mu(mu):
    with pytest.raises(InvalidParameterError, match="mu"):
        gaussian_delta(mu, 1.0)


def test_empty_or_wrong_events():
    with pytest.raises(InvalidParameterError, match="empty"):
        compose_delta([], 1.0)
    with pytest.raises(InvalidParameterError, match="empty"):
        compose_epsilon([], 1e-6)
    with pytest.raises(InvalidParameterError, match="empty"):
        calibrate_scale(1.0, 1e-6, lambda s: [])
    with pytest.raises(InvalidParameterError, match=r"events\[1\] is a float"):
        compose_delta([GaussianEvent(0.1), 0.5], 1.0)
    with pytest.raises(InvalidParameterError, match="list"):
        compose_delta("gaussian", 1.0)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: GaussianEvent(-0.1), "rho of a Gaussian event"),
        (lambda: GaussianEvent(math.nan), "rho of a Gaussian event"),
        (lambda: ZCDPEvent(math.inf), "rho of a zCDP event"),
        (lambda: PureDPEvent(-1.0), "epsilon of a pure-DP event"),
        (lambda: PureDPEvent(0.1, count=0), "count"),
        (lambda: PureDPEvent(0.1, count=2.5), "count"),
        (lambda: PureDPEvent(0.1, bounded_range="yes"), "bounded_range"),
        (lambda: ApproxDPEvent(0.1, 1.0), "delta of an approximate-DP event"),
        (lambda: ApproxDPEvent(0.1, math.nan), "delta of an approximate-DP event"),
        (lambda: ApproxDPEvent(math.inf, 1e-6), "epsilon of an approximate-DP event"),
    ],
)
def test_bad_events(make, match):
    with pytest.raises(InvalidParameterError, match=match):
        make()


def test_bad_calibration_arguments():
    with pytest.raises(InvalidParameterError, match="every scale"):
        calibrate_scale(1.0, 1e-6, lambda s: [GaussianEvent(0.01)])
    with pytest.raises(InvalidParameterError, match="any scale"):
        calibrate_scale(1.0, 1e-6, lambda s: [ApproxDPEvent(0.1, 1e-3), GaussianEvent(s)])
    with pytest.raises(InvalidParameterError, match="events_at"):
        calibrate_scale(1.0, 1e-6, [GaussianEvent(0.1)])
    with pytest.raises(InvalidParameterError, match="rtol"):
        calibrate_scale(1.0, 1e-6, lambda s: [GaussianEvent(s)], rtol=2.0)
    with pytest.raises(InvalidParameterError, match="value_discretization_interval"):
        compose_delta([GaussianEvent(0.1)], 1.0, value_discretization_interval=0.0)
    with pytest.raises(InvalidParameterError, match="at most 100"):
        compose_delta([PureDPEvent(1e6, bounded_range=True)], 1e7,
                      value_discretization_interval=101.0)
    # The coarsest grid still composes without overflow and stays an upper bound: one
    # bounded-range mechanism of epsilon 10^6 is (10^6, 0)-DP.
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert compose_delta([PureDPEvent(1e6, bounded_range=True), GaussianEvent(1e5)], 1e7,
                             value_discretization_interval=100.0) <= pld_module._PLD_FLOOR


@pytest.mark.parametrize("eps, delta", [(1e-6, 1e-300), (1e-4, 1e-300), (1e-4, 1e-100),
                                        (1e-6, 1e-12), (0.01, 1e-100), (5.0, 1e-100),
                                        (0.1, 1e-12), (1.0, 1e-6)])
def test_gaussian_rho_meets_delta_exactly_not_only_as_computed(eps, delta):
    # A small epsilon with a tiny delta: delta is the difference of two nearly equal logs of
    # Phi, whose rounding alone put the exact delta 3.5e-5 (relative) above the request at
    # (1e-6, 1e-300) when the rho was checked against the rounded value.
    rho = gaussian_rho_for_approx_dp(eps, delta)
    assert exact_gaussian_delta(math.sqrt(2 * rho), eps) <= delta
