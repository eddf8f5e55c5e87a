"""Exact (epsilon, delta) accounting by privacy loss distributions (PLDs).

dpmean accounts every release in rho-zCDP. When the user's budget is (epsilon, delta), converting
it to rho with the Canonne-Kamath-Steinke bound (``accounting.approx_dp_to_zcdp``) is valid for
any rho-zCDP mechanism, but loose for the mechanisms dpmean actually runs: Gaussian noise, whose
(epsilon, delta) curve is known exactly, and pure-DP selections. This module computes that curve
exactly (Gaussian only) or as a certified upper bound (heterogeneous compositions).

The facts used
--------------
* **mu-GDP** (Dong, Roth & Su 2019, "Gaussian differential privacy", JRSS-B 2022). Adding
  N(0, sigma^2) to a query of L2 sensitivity Delta is mu-GDP with mu = Delta / sigma: telling the
  neighbours apart is no easier than telling N(0, 1) from N(mu, 1). Its privacy profile is
  (Balle & Wang 2018, "Improving the Gaussian mechanism ...", ICML, Thm. 8; Dong-Roth-Su Cor. 2.13)

      delta(epsilon) = Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2),

  and this is tight: no smaller delta holds.
* **Gaussian composition is Gaussian** (Dong-Roth-Su Cor. 3.3): the adaptive composition of
  mu_i-GDP mechanisms is exactly mu-GDP with mu^2 = sum mu_i^2. In dpmean's units a Gaussian stage
  of rho_i = Delta_i^2 / (2 sigma_i^2) is sqrt(2 rho_i)-GDP, so a release made only of Gaussian
  stages with total rho is sqrt(2 rho)-GDP, whatever the split.
* **Dominating pairs** (Kairouz, Oh & Viswanath 2015, "The composition theorem for differential
  privacy", ICML, Thm. 2.1/3.3). Every (epsilon, delta)-DP mechanism is a post-processing of the
  four-outcome pair whose privacy loss is +inf w.p. delta, +epsilon w.p.
  (1 - delta) / (1 + e^-epsilon) and -epsilon w.p. (1 - delta) / (1 + e^epsilon); delta = 0 is
  binary randomized response, the worst case of pure epsilon-DP. Composing these worst cases is
  the optimal composition theorem, and the k-fold composition of one pair is a binomial in closed
  form, which this module builds directly.
* **PLD composition** (Koskela, Jalko & Honkela 2020; Meiser & Mohammadi 2018 "privacy buckets";
  Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022). The privacy loss of a composition is the
  sum of independent privacy losses, so its distribution is a convolution, and
  delta(epsilon) = P[L = inf] + E[(1 - e^(epsilon - L))_+]. The PLDs are held and convolved by
  ``dp_accounting`` (``dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution``).

Pessimism: every bound here is an upper bound
---------------------------------------------
Losses live on a grid of spacing ``value_discretization_interval`` (Delta_v, default 1e-4).

* Gaussian stages and (epsilon, delta) / pure-DP groups are rounded **up** to the grid (privacy
  buckets), which can only raise E[(1 - e^(epsilon - L))_+]. Each such factor is rounded once
  (a k-fold group is built in closed form first), so with m factors the reported delta(epsilon)
  lies between the exact delta(epsilon) and the exact delta(epsilon - m Delta_v).
* Bounded-range groups (exponential mechanisms) use pessimistic connect-the-dots for one
  mechanism and are then self-composed; each factor dominates the true pair, so the composition
  is an upper bound. Its error is at most that of rounding up each factor (count Delta_v in
  epsilon, in the worst case) but is second order in practice: for 2048 mechanisms, grids 1e-3,
  1e-4 and 2e-5 gave deltas agreeing to 1e-4 relative.
* Probability mass cut from upper tails (at most 1e-20 per factor and per convolution) is moved
  to loss +inf, and mass cut from lower tails up to the lowest kept loss, so truncation only
  adds to delta (by ~1e-19 in all), besides the floating-point rounding of FFT convolutions
  (~1e-16 absolute per grid point, which is why deltas below ~1e-14 are not meaningful here).

A generic rho-zCDP mechanism that is not Gaussian has no single worst-case PLD, so it cannot be
put into the convolution. It is composed *separately*: the zCDP parts add their rho (zCDP
composition, Bun-Steinke 2016) and the total is converted with the tight CKS bound
delta_z(epsilon_2) = inf_alpha e^((alpha-1)(alpha rho - epsilon_2)) (1 - 1/alpha)^alpha / (alpha-1)
(Canonne-Kamath-Steinke 2020, Prop. 12/Cor. 13). The PLD part (epsilon_1, delta_1)-DP and the
zCDP part (epsilon_2, delta_2)-DP compose, by basic composition (Dwork & Roth 2014, "The
algorithmic foundations of DP", Thm. 3.16, which holds adaptively), to
(epsilon_1 + epsilon_2, delta_1 + delta_2)-DP; the split epsilon = epsilon_1 + epsilon_2 is
searched numerically, and since *every* split is valid the search's accuracy affects only
tightness, never validity.

Several such accountings are valid for the same release: a Gaussian stage is also rho-zCDP, and an
exponential mechanism (``PureDPEvent(..., bounded_range=True)``) is epsilon-DP and also
(epsilon^2/8)-zCDP (Cesar & Rogers 2021). The composition functions evaluate each of a few such
assignments and report the smallest delta (or epsilon); the minimum of valid bounds is valid.
One of the assignments is dpmean's current accounting (everything in zCDP, one CKS conversion), so
the result is never worse than today's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import special

from .accounting import _delta, _positive, approx_dp_to_zcdp
from .bisection import narrowed
from .budget import Budget
from .errors import InvalidParameterError
from .events import (
    _EVENT_TYPES,
    ApproxDPEvent,
    ChoiceEvent,
    Event,
    GaussianEvent,
    PureDPEvent,
    ZCDPEvent,
    zcdp_cost,
)

__all__ = [
    "ApproxDPEvent",
    "ChoiceEvent",
    "GaussianEvent",
    "PureDPEvent",
    "ZCDPEvent",
    "budget_events",
    "calibrate_scale",
    "compose_delta",
    "compose_epsilon",
    "gaussian_delta",
    "gaussian_rho_for_approx_dp",
]

#: Default grid spacing of privacy losses. The reported epsilon exceeds the exact one by less than
#: this times the number of discretised factors (see the module docstring).
DEFAULT_DISCRETIZATION = 1e-4
# The coarsest grid accepted (``_discretization``).
MAX_DISCRETIZATION = 100.0

# Mass cut from each tail of a discretised PLD or of a convolution; moved to +inf (upper tail) or
# up to the lowest kept loss (lower tail), so it can only raise delta, by at most this much.
_TAIL_MASS = 1e-20
# The least delta read from a discretised PLD. Below it the PLD does not tell: delta is a
# difference of two tail sums that cancel, its FFT convolutions' round-off is about 1e-18 at
# small deltas (up to 2e-12 near delta = 1), and losses beyond its tails (a Gaussian's cut 10
# standard deviations out, _TAIL_MASS) are not all counted. Without the floor, requests below
# about 1e-18 were met: PLAN without scaling at (10, 1e-20) was granted rho = 0.587 where its
# Gaussian stages alone need delta >= 1.4e-19, at (50, 1e-50) rho = 7.75 (its noise stage
# alone: delta 2.5e-40; a review). A request below the floor is met by the accountings
# without a PLD (each stage as zCDP, the Gaussian's exact curve).
_PLD_FLOOR = 1e-12
# Standard deviations kept either side of the mean of the Gaussian privacy loss:
# Phi(-10) = 7.6e-24 < _TAIL_MASS.
_GAUSSIAN_TAIL_SDS = 10.0
# Epsilon grid of the split epsilon = epsilon_1 (PLD part) + epsilon_2 (zCDP part).
_SPLIT_POINTS = 33


# --------------------------------------------------------------------------------------------
# The Gaussian mechanism, exactly
# --------------------------------------------------------------------------------------------


def _gaussian_log_terms(mu: float, epsilon: Any) -> tuple[Any, Any]:
    """The logs of delta(epsilon)'s two terms for mu-GDP: Phi(-x1) and e^epsilon Phi(-x2),
    x1 = eps/mu - mu/2, x2 = eps/mu + mu/2 (a number or an array of epsilon)."""
    return (special.log_ndtr(-epsilon / mu + mu / 2.0),
            epsilon + special.log_ndtr(-epsilon / mu - mu / 2.0))


def _gaussian_delta_array(mu: float, epsilon: np.ndarray) -> np.ndarray:
    """delta(epsilon) of mu-GDP for an array of epsilon >= 0, in log space."""
    log_a, log_b = _gaussian_log_terms(mu, np.asarray(epsilon, dtype=float))
    # delta = e^log_a (1 - e^(log_b - log_a)); log_b <= log_a because delta >= 0. Rounding can
    # make the difference a hair positive when delta underflows relative to Phi(-x1); clamp.
    diff = np.minimum(log_b - log_a, 0.0)
    with np.errstate(divide="ignore"):
        log_delta = log_a + np.log(-np.expm1(diff))
    return np.exp(log_delta)


# A bound on the relative rounding error of each log term in ``_gaussian_delta_array`` (the
# logs of Phi from ``log_ndtr``, epsilon added, their difference): 2^-45 is 256 units of
# float64's 2^-53, far above the few units each operation costs.
_LOG_TERM_ROUNDING = 2.0**-45


def _gaussian_delta_upper(mu: float, epsilon: float) -> float:
    """An upper bound on the exact delta(epsilon) of mu-GDP, not only its rounded value.

    log Phi(-x1) and epsilon + log Phi(-x2) are each within a relative ``_LOG_TERM_ROUNDING``
    of their exact values, so their difference errs by at most that times their magnitudes;
    where delta is tiny against Phi(-x1) (a small epsilon with a tiny delta) the difference is
    tiny too, and that absolute error is a large relative one in delta (3.5e-5 at epsilon =
    1e-6, delta = 1e-300). Taking each term at its unfavourable end keeps the result above
    the exact delta."""
    log_a, log_b = (float(term) for term in _gaussian_log_terms(mu, epsilon))
    slack = _LOG_TERM_ROUNDING * (abs(log_a) + abs(log_b))
    diff = min(log_b - log_a, 0.0) - slack
    with np.errstate(divide="ignore"):
        return math.exp(log_a + _LOG_TERM_ROUNDING * abs(log_a) + math.log(-math.expm1(diff)))


def gaussian_delta(mu: float, epsilon: float) -> float:
    """The exact delta(epsilon) of mu-GDP: of a Gaussian mechanism with sensitivity / sigma = mu.

    Parameters
    ----------
    mu : float
        The GDP parameter, mu = Delta / sigma > 0 (Delta the L2 sensitivity under replace-one
        neighbours, sigma the noise standard deviation). A release of Gaussian stages with total
        rho-zCDP (rho = sum Delta_i^2 / (2 sigma_i^2)) is mu-GDP with mu = sqrt(2 rho).
    epsilon : float
        epsilon > 0.

    Returns
    -------
    float
        The smallest delta for which the mechanism is (epsilon, delta)-DP:

            delta = Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)

        (Balle & Wang 2018, Thm. 8; Dong, Roth & Su 2019, Cor. 2.13). Computed as
        exp(log Phi(-x1) + log(1 - exp(epsilon + log Phi(-x2) - log Phi(-x1)))) with
        ``scipy.special.log_ndtr``, so it keeps its relative accuracy for large epsilon and tiny
        delta, where the textbook formula cancels to 0. Underflows to 0 only below ~1e-308.

    Raises
    ------
    InvalidParameterError
        If mu or epsilon is not a finite positive number.
    """
    mu = _positive("mu", mu)
    epsilon = _positive("epsilon", epsilon)
    return float(_gaussian_delta_array(mu, np.array([epsilon]))[0])


def gaussian_rho_for_approx_dp(epsilon: float, delta: float) -> float:
    """The largest total rho of Gaussian stages whose release is (epsilon, delta)-DP.

    A composition of Gaussian mechanisms with total rho = sum Delta_i^2 / (2 sigma_i^2) is exactly
    mu-GDP with mu^2 = sum mu_i^2 = 2 rho (Dong, Roth & Su 2019, Cor. 3.3), so the answer is
    rho = mu*^2 / 2, where mu* solves ``gaussian_delta(mu, epsilon) = delta`` (the analytic
    Gaussian mechanism of Balle & Wang 2018, applied to the whole release).

    This is valid only for releases whose every stage is a Gaussian mechanism; for anything else
    use ``compose_delta`` / ``calibrate_scale`` (or ``accounting.approx_dp_to_zcdp``, which is
    valid for any rho-zCDP mechanism and never larger than this).

    Parameters
    ----------
    epsilon : float
        epsilon > 0.
    delta : float
        delta in (0, 1).

    Returns
    -------
    float
        rho whose exact delta at epsilon is at most ``delta``: an upper bound on it that
        covers the rounding of its logs (``_gaussian_delta_upper``) is at most ``delta`` (the
        root is stepped down until that holds), and never below
        ``approx_dp_to_zcdp(epsilon, delta)``
        (the CKS rho is valid for Gaussian releases too, so taking the larger one is sound; the
        exact rho is strictly larger in every case we measured).
    """
    epsilon = _positive("epsilon", epsilon)
    delta = _delta(delta)
    rho_cks = approx_dp_to_zcdp(epsilon, delta)
    log_delta = math.log(delta)

    def excess_mu(mu: float) -> float:
        value = _gaussian_delta_upper(mu, epsilon)
        return (math.log(value) if value > 0.0 else -math.inf) - log_delta

    # The CKS rho meets (epsilon, delta) for any rho-zCDP release, so its mu is a lower end.
    lo = math.sqrt(2.0 * rho_cks)
    if excess_mu(lo) > 0.0:  # pragma: no cover - only by rounding at the very edge
        return rho_cks
    hi = 2.0 * lo
    for _ in range(200):
        if excess_mu(hi) > 0.0:
            break
        lo, hi = hi, 2.0 * hi
    else:  # pragma: no cover - delta(epsilon) -> 1 as mu -> inf
        raise InvalidParameterError(f"could not calibrate epsilon={epsilon:g}, delta={delta:g}")
    from scipy.optimize import brentq  # imported when used: 0.3 s
    mu = brentq(excess_mu, lo, hi, xtol=1e-300, rtol=4.0 * 2.0**-52, maxiter=500)
    rho = 0.5 * mu * mu
    for _ in range(10_000):
        if excess_mu(math.sqrt(2.0 * rho)) <= 0.0:
            break
        rho *= 1.0 - 1e-12
    else:  # pragma: no cover - excess is continuous and increasing
        raise InvalidParameterError("could not find a rho that meets the requested delta")
    return max(rho, rho_cks)


# --------------------------------------------------------------------------------------------
# The event vocabulary
# --------------------------------------------------------------------------------------------


def budget_events(budget: Budget) -> list[Event]:
    """The events a release granted ``budget`` is accounted as when nothing finer is known about
    its mechanisms: a ``ZCDPEvent`` for a zCDP budget (CKS conversion, valid for any rho-zCDP
    mechanism), a ``PureDPEvent`` (generic, not bounded-range) for pure DP and an
    ``ApproxDPEvent`` for (epsilon, delta)-DP. Estimators made only of continuous Gaussian
    stages declare the finer ``GaussianEvent`` instead (``MeanEstimator.privacy_events``).

    Raises InvalidParameterError for notions no central accountant composes (tCDP, local,
    shuffle)."""
    if budget.notion == "zCDP":
        assert budget.rho is not None
        return [ZCDPEvent(budget.rho)]
    if budget.notion == "pure-DP":
        assert budget.epsilon is not None
        return [PureDPEvent(budget.epsilon)]
    if budget.notion == "approx-DP":
        assert budget.epsilon is not None and budget.delta is not None
        return [ApproxDPEvent(budget.epsilon, budget.delta)]
    raise InvalidParameterError(f"a {budget.notion} release has no events for a central "
                                f"(epsilon, delta) accountant")


def _events(events: object) -> list[Event]:
    if isinstance(events, _EVENT_TYPES):
        return [events]
    if isinstance(events, str | bytes) or not isinstance(events, Sequence):
        raise InvalidParameterError(
            f"events must be a list of GaussianEvent, PureDPEvent, ApproxDPEvent or ZCDPEvent, "
            f"got {type(events).__name__}"
        )
    out = list(events)
    if not out:
        raise InvalidParameterError(
            "events is empty: give at least one GaussianEvent, PureDPEvent, ApproxDPEvent or "
            "ZCDPEvent"
        )
    for index, event in enumerate(out):
        if not isinstance(event, _EVENT_TYPES):
            raise InvalidParameterError(
                f"events[{index}] is a {type(event).__name__}, not one of GaussianEvent, "
                f"PureDPEvent, ApproxDPEvent, ZCDPEvent"
            )
    return out


def _discretization(value: object) -> float:
    value = _positive("value_discretization_interval", value)
    if value > MAX_DISCRETIZATION:
        # dp_accounting's connect-the-dots divides by expm1 of a grid step, which overflows
        # past about 709; a coarser grid than this buys nothing a zCDP conversion would not.
        raise InvalidParameterError(
            f"value_discretization_interval must be at most {MAX_DISCRETIZATION:g} (it is the "
            f"grid of privacy losses; 1e-4 is a good default), got {value:g}"
        )
    return value


# --------------------------------------------------------------------------------------------
# Discretised PLDs (pessimistic: losses rounded up)
# --------------------------------------------------------------------------------------------


def _dp_accounting():
    """dp_accounting's PLD modules, imported on first use: the event classes (which sessions
    record for every release) and the Gaussian-only paths do not need them."""
    from dp_accounting.pld import pld_pmf
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    return pld_pmf, PrivacyLossDistribution


def _dense_pld(lower: int, probs: np.ndarray, infinity_mass: float, grid: float):
    pld_pmf, PrivacyLossDistribution = _dp_accounting()
    pmf = pld_pmf.DensePLDPmf(grid, int(lower), probs, float(infinity_mass), True)
    return PrivacyLossDistribution(pmf)


def _gaussian_pld(mu: float, grid: float):
    """mu-GDP: the loss is N(mu^2/2, mu^2) under the first distribution; bucket (iD-D, iD] goes
    to iD (privacy buckets, pessimistic). Lower tail -> lowest bucket, upper tail -> +inf."""
    mean = 0.5 * mu * mu
    lo = math.floor((mean - _GAUSSIAN_TAIL_SDS * mu) / grid)
    hi = math.ceil((mean + _GAUSSIAN_TAIL_SDS * mu) / grid)
    # Bucket i in [lo, hi] holds (x_{i-1}, x_i]; the first also holds everything below.
    edges = (np.arange(lo - 1, hi + 1) * grid - mean) / mu
    # CDF differences below the mean, survival-function differences above, for accuracy.
    cdf = special.ndtr(edges)
    sf = special.ndtr(-edges)
    mid = 0.5 * (edges[1:] + edges[:-1])
    probs = np.where(mid < 0.0, np.diff(cdf), -np.diff(sf))
    probs = np.maximum(probs, 0.0)
    probs[0] += cdf[0]
    return _dense_pld(lo, probs, sf[-1], grid)


def _binomial_pld(epsilon: float, delta: float, count: int, grid: float):
    """The exact ``count``-fold composition of the Kairouz-Oh-Viswanath (epsilon, delta) pair:
    with prob. 1 - (1 - delta)^count some factor has loss +inf; otherwise the loss is
    (count - 2j) epsilon with j ~ Binomial(count, 1 / (1 + e^epsilon)). Rounded up once."""
    infinity = -math.expm1(count * math.log1p(-delta)) if delta > 0.0 else 0.0
    finite = 1.0 - infinity
    q = 1.0 / (1.0 + math.exp(epsilon))  # probability of loss -epsilon
    j = np.arange(count + 1)
    from scipy.stats import binom  # imported when used: 0.6 s
    pmf = np.exp(binom.logpmf(j, count, q))
    # j small = large loss. Cut the upper-loss tail to +inf and move the lower-loss tail up to
    # the lowest kept loss (both only raise delta).
    upper = np.cumsum(pmf)
    first = int(np.searchsorted(upper, _TAIL_MASS, side="right"))
    lower = np.cumsum(pmf[::-1])
    cut = int(np.searchsorted(lower, _TAIL_MASS, side="right"))
    last = max(count - cut, first)
    if first > 0:
        infinity += finite * float(upper[first - 1])
    kept = pmf[first : last + 1].copy()
    if last < count:
        kept[-1] += float(lower[count - last - 1])
    losses = (count - 2 * j[first : last + 1]) * epsilon
    index = np.ceil(losses / grid).astype(np.int64)
    offset = int(index.min())
    probs = np.bincount(index - offset, weights=kept * finite)
    return _dense_pld(offset, probs, infinity, grid)


def _bounded_range_delta(epsilon: float, x: np.ndarray) -> np.ndarray:
    """The privacy profile delta(x), x real, of the worst case of one epsilon-BR mechanism.

    An epsilon-bounded-range pair has privacy loss in [t - epsilon, t] for some t in
    [0, epsilon]. Since delta(x) = E_Q[(e^L - e^x)_+] is convex in e^L and E_Q[e^L] = 1, the
    binary pair with loss exactly t or t - epsilon dominates it:
    delta_t(x) = (1 - e^(t - epsilon)) (1 - e^(x - t)) / (1 - e^-epsilon) for x in
    [t - epsilon, t]. The supremum over t, at t = (x + epsilon) / 2, is

        delta(x) = (1 - e^((x - epsilon) / 2))^2 / (1 - e^-epsilon),   -epsilon <= x <= epsilon,

    with delta = 1 - e^x below -epsilon and 0 above epsilon. A supremum of privacy profiles is a
    privacy profile (of the pair whose trade-off function is the convex hull of the infimum of
    theirs, Dong-Roth-Su 2019, Prop. 2.12), and that pair dominates every epsilon-BR pair, so
    its PLD composes validly (Dong-Roth-Su Thm. 3.2, adaptive). It is tight for one mechanism
    (t = epsilon/2 is randomized response at epsilon/2, and delta(0) = tanh(epsilon/4)) but not
    in general for k of them (Dong, Durfee & Rogers 2020 give the exact k-fold bound)."""
    x = np.asarray(x, dtype=float)
    inner = np.clip(x, -epsilon, epsilon)
    middle = np.expm1((inner - epsilon) / 2.0) ** 2 / -math.expm1(-epsilon)
    # Only x <= -epsilon reads -expm1(x); np.where evaluates it everywhere, and at a large
    # epsilon's grid it overflows where it is not used.
    below = -np.expm1(np.minimum(x, 0.0))
    return np.where(x >= epsilon, 0.0, np.where(x <= -epsilon, below, middle))


def _bounded_range_pld(epsilon: float, count: int, grid: float):
    """``count`` epsilon-BR mechanisms: the envelope profile above, discretised by pessimistic
    connect-the-dots (Doroshenko et al. 2022, Alg. 1: its profile interpolates the given one
    linearly in e^x between grid points, which lies above the convex true profile), then
    self-composed by FFT."""
    m = math.ceil(epsilon / grid)
    index = np.arange(-m, m + 1)
    deltas = _bounded_range_delta(epsilon, index * grid)
    pld_pmf, PrivacyLossDistribution = _dp_accounting()
    pmf = pld_pmf.create_pmf_pessimistic_connect_dots(grid, index, deltas)
    single = PrivacyLossDistribution(pmf)
    if count == 1:
        return single
    return single.self_compose(count, tail_mass_truncation=_TAIL_MASS)


# --------------------------------------------------------------------------------------------
# zCDP part: the CKS delta for a given epsilon, on a grid of alpha
# --------------------------------------------------------------------------------------------


def _zcdp_delta(rho: float, epsilon: np.ndarray) -> np.ndarray:
    """CKS (Prop. 12): delta = inf_{alpha>1} exp((alpha-1)(alpha rho - eps) + (alpha-1)
    log(1 - 1/alpha) - log alpha), minimised over a dense grid of t = log(alpha - 1). Every alpha
    gives a valid delta, so a grid minimum is a valid (and, at this density, tight) bound."""
    epsilon = np.atleast_1d(np.asarray(epsilon, dtype=float))
    if rho == 0.0:
        return np.zeros_like(epsilon)
    top = max(float(epsilon.max()), rho)
    t = np.linspace(-20.0, min(math.log(top / rho) + 20.0, 300.0), 4001)
    a1 = np.exp(t)  # alpha - 1
    softplus_t = np.logaddexp(0.0, t)  # log alpha
    softplus_mt = np.logaddexp(0.0, -t)  # -log(1 - 1/alpha)
    log_delta = (
        a1[None, :] * ((1.0 + a1[None, :]) * rho - epsilon[:, None])
        - a1[None, :] * softplus_mt[None, :]
        - softplus_t[None, :]
    )
    # A second, 100x finer grid around each row's best t: the bound is then within ~1e-8
    # (relative) of the infimum, so it matches ``accounting.zcdp_to_approx_dp``.
    best_t = t[np.argmin(log_delta, axis=1)]
    step = t[1] - t[0]
    t = best_t[:, None] + np.linspace(-step, step, 201)[None, :]
    a1 = np.exp(t)
    fine = a1 * ((1.0 + a1) * rho - epsilon[:, None]) - a1 * np.logaddexp(0.0, -t)
    fine -= np.logaddexp(0.0, t)
    log_best = np.minimum(log_delta.min(axis=1), fine.min(axis=1))
    return np.minimum(np.exp(log_best), 1.0)


# --------------------------------------------------------------------------------------------
# Composition
# --------------------------------------------------------------------------------------------


def _suffix_sums(pld):
    """Losses of a symmetric dense PLD and the suffix sums sum_{j >= i} p_j and
    sum_{j >= i} p_j e^(-L_j), so delta(eps) is O(log n) per epsilon instead of O(n).

    Reads the arrays of dp_accounting's ``DensePLDPmf`` (private attributes); returns None if
    they are not there, and the caller falls back to ``get_delta_for_epsilon``."""
    try:
        pmf = pld._pmf_remove.to_dense_pmf()
        grid, lower = pmf._discretization, pmf._lower_loss
        probs, infinity = np.asarray(pmf._probs, dtype=float), float(pmf._infinity_mass)
    except AttributeError:  # pragma: no cover - depends on the dp_accounting version
        return None
    probs = np.maximum(probs, 0.0)  # FFT round-off can leave -1e-20 entries
    losses = (lower + np.arange(probs.size)) * grid
    # e^-L overflows for very negative L, but only losses above eps >= 0 are ever summed;
    # those below 0 get weight 0 in the second sum (the first sum still counts them).
    weights = np.where(losses > 0.0, np.exp(-np.maximum(losses, 0.0)), 0.0)
    mass_p = np.append(np.cumsum(probs[::-1])[::-1], 0.0)
    mass_q = np.append(np.cumsum((probs * weights)[::-1])[::-1], 0.0)
    return losses, mass_p, mass_q, infinity


class _Bound:
    """One valid accounting of a release: a PLD part (Gaussian rho, binomial groups) and a zCDP
    part (total rho), combined by basic composition over a searched split of epsilon."""

    def __init__(
        self,
        gaussian_rho: float,
        groups: dict[tuple[str, float, float], int],
        zcdp_rho: float,
        grid: float,
        choices: Sequence[Any] = (),
    ) -> None:
        self.mu = math.sqrt(2.0 * gaussian_rho)
        self.zcdp_rho = zcdp_rho
        self.pld = None
        self._tails = None
        factors = list(choices)  # the PLDs of choices (``_choice_pld``)
        for (kind, epsilon, delta), count in sorted(groups.items()):
            if epsilon == 0.0 and delta == 0.0:
                continue
            if kind == "br":
                factors.append(_bounded_range_pld(epsilon, count, grid))
            else:
                factors.append(_binomial_pld(epsilon, delta, count, grid))
        if factors and self.mu > 0.0:
            factors.append(_gaussian_pld(self.mu, grid))
        if factors:
            pld = factors[0]
            for factor in factors[1:]:
                pld = pld.compose(factor, tail_mass_truncation=_TAIL_MASS)
            self.pld = pld
            self._tails = _suffix_sums(pld)

    def _pld_delta(self, epsilon: np.ndarray) -> np.ndarray:
        if self.pld is not None:
            if self._tails is None:  # pragma: no cover - a dp_accounting without dense arrays
                return np.array([max(float(self.pld.get_delta_for_epsilon(e)), _PLD_FLOOR)
                                 for e in epsilon])
            losses, mass_p, mass_q, infinity = self._tails
            # delta(eps) = P[L = inf] + sum_{L > eps} p (1 - e^(eps - L))
            #            = P[L = inf] + sum_{L > eps} p - e^eps sum_{L > eps} p e^-L.
            start = np.searchsorted(losses, epsilon, side="right")
            # Capping e^eps only shrinks the subtracted term (conservative); a loss above 700
            # never occurs in practice, so the cap only avoids inf * 0 when nothing is above eps.
            scale = np.exp(np.minimum(epsilon, 700.0))
            value = infinity + mass_p[start] - scale * mass_q[start]
            return np.clip(np.maximum(value, _PLD_FLOOR), infinity, 1.0)
        if self.mu > 0.0:
            return _gaussian_delta_array(self.mu, epsilon)
        return np.zeros_like(epsilon)

    def top_loss(self) -> float:
        """A loss above which the PLD part has no finite mass (delta there is P[L = inf])."""
        if self._tails is not None:
            losses, mass_p = self._tails[0], self._tails[1]
            finite = np.flatnonzero(mass_p[:-1] > 0.0)
            return float(losses[finite[-1]]) if finite.size else 0.0
        if self.pld is not None:  # pragma: no cover - a dp_accounting without dense arrays
            return math.inf
        return 0.5 * self.mu**2 + _GAUSSIAN_TAIL_SDS * self.mu

    def _has_pld(self) -> bool:
        return self.pld is not None or self.mu > 0.0

    def delta(self, epsilon: float) -> float:
        if not self._has_pld():
            return float(_zcdp_delta(self.zcdp_rho, np.array([epsilon]))[0])
        if self.zcdp_rho == 0.0:
            return float(self._pld_delta(np.array([epsilon]))[0])
        # Any split is valid; a coarse grid, then a finer one around its best point.
        best = math.inf
        lo, hi = 0.0, epsilon
        for _ in range(2):
            eps1 = np.linspace(lo, hi, _SPLIT_POINTS)
            eps2 = np.maximum(epsilon - eps1, 0.0)
            total = self._pld_delta(eps1) + _zcdp_delta(self.zcdp_rho, eps2)
            i = int(np.argmin(total))
            best = min(best, float(total[i]))
            step = eps1[1] - eps1[0]
            lo, hi = max(0.0, eps1[i] - step), min(epsilon, eps1[i] + step)
        return min(best, 1.0)


def _option_bound(option: Sequence[Event], grid: float) -> _Bound | None:
    """Option of a choice as a PLD (accounting A below), or None when part of it has none (a
    ``ZCDPEvent`` of positive rho, or a choice within it that has none). A choice within it
    (``auto``'s candidates, within the plan a private box selects) is its own dominating
    pair's PLD (``_choice_pld``), composed with the option's other events: the stages before
    it chose it, as in the top-level accounting."""
    if any(isinstance(e, ZCDPEvent) and e.rho > 0.0 for e in option):
        return None
    nested = [_choice_pld(e, grid) for e in option if isinstance(e, ChoiceEvent)]
    if any(pld is None for pld in nested):
        return None
    gaussian = math.fsum(e.rho for e in option if isinstance(e, GaussianEvent))
    groups: dict[tuple[str, float, float], int] = {}
    for e in option:
        if isinstance(e, PureDPEvent | ApproxDPEvent):
            key = ((("br" if e.bounded_range else "kov"), e.epsilon, 0.0)
                   if isinstance(e, PureDPEvent) else ("kov", e.epsilon, e.delta))
            groups[key] = groups.get(key, 0) + e.count
    return _Bound(gaussian, groups, 0.0, grid, nested)


# The most support points of a choice's connect-the-dots PLD on each side of 0 (fewer, coarser
# points only make it more pessimistic).
_CHOICE_POINTS = 100_000


def _choice_pld(event: ChoiceEvent, grid: float):
    """The PLD of a choice's dominating pair (``ChoiceEvent``), or None when some option has no
    PLD (it is then accounted by its zCDP cost).

    The pair's profile is delta(x) = max_i delta_i(x) for x >= 0 (delta_i: option i's PLD) and,
    by the identity H_(e^x)(P || Q) = 1 - e^x + e^x H_(e^-x)(Q || P) of hockey-stick divergences
    (the options' PLDs are symmetric, as every PLD here), delta(x) = 1 - e^x + e^x delta(-x) for
    x < 0. Pessimistic connect-the-dots (Doroshenko et al. 2022, Alg. 1) on grid points from
    -top to top, top the largest finite loss of any option (delta(top) is then the mass at
    +inf, where the construction puts it; a Gaussian's losses are cut 10 standard deviations
    out, as in ``_gaussian_pld``), gives a PLD whose
    profile is the exact one at those points and above it between them (the profile is convex in
    e^x): it dominates the pair."""
    bounds = [_option_bound(option, grid) for option in event.options]
    if any(b is None for b in bounds):
        return None

    def profile(x: np.ndarray) -> np.ndarray:
        return np.max([b._pld_delta(x) for b in bounds if b is not None], axis=0)

    top = max(b.top_loss() for b in bounds if b is not None)
    if not math.isfinite(top):  # pragma: no cover - a dp_accounting without dense arrays
        return None
    last = max(1, math.ceil(top / grid))
    step = max(1, math.ceil(last / _CHOICE_POINTS))
    index = np.unique(np.append(np.arange(0, last, step), last))
    x = index * grid
    upper = profile(x)
    lower = -np.expm1(-x[1:]) + np.exp(-x[1:]) * upper[1:]
    deltas = np.concatenate([lower[::-1], upper])
    # Non-increasing as the construction requires; raising a value by round-off is pessimistic.
    deltas = np.minimum(np.maximum.accumulate(deltas[::-1])[::-1], 1.0)
    pld_pmf, PrivacyLossDistribution = _dp_accounting()
    pmf = pld_pmf.create_pmf_pessimistic_connect_dots(
        grid, np.concatenate([-index[1:][::-1], index]), deltas)
    return PrivacyLossDistribution(pmf)


def _bounds(events: list[Event], grid: float) -> list[_Bound]:
    """The valid accountings compared: (A) everything with a PLD in the PLD (bounded-range
    events by their envelope PLD, ``_bounded_range_pld``; choices by ``_choice_pld``); (B) as
    A, but bounded-range events as epsilon^2/8-zCDP; (C) everything zCDP-capable as zCDP
    (today's accounting, plus exact PLD for any (epsilon, delta) black boxes)."""
    gaussian = math.fsum(e.rho for e in events if isinstance(e, GaussianEvent))
    zcdp = math.fsum(e.rho for e in events if isinstance(e, ZCDPEvent))
    pure = [e for e in events if isinstance(e, PureDPEvent)]
    approx = [e for e in events if isinstance(e, ApproxDPEvent)]
    choices = [e for e in events if isinstance(e, ChoiceEvent)]
    choice_plds = [_choice_pld(c, grid) for c in choices]
    choice_costs = [zcdp_cost(c) for c in choices]
    # A choice with no PLD is accounted by its zCDP cost.
    if any(p is None and cost is None for p, cost in zip(choice_plds, choice_costs, strict=True)):
        raise InvalidParameterError(
            "a choice whose options mix zCDP events and approximate-DP events has neither a PLD "
            "nor a zCDP cost: it cannot be accounted")
    choice_zcdp = math.fsum(cost for p, cost in zip(choice_plds, choice_costs, strict=True)
                            if p is None and cost is not None)
    plds = [p for p in choice_plds if p is not None]

    def groups(included: list[PureDPEvent]) -> dict[tuple[str, float, float], int]:
        out: dict[tuple[str, float, float], int] = {}
        for e in included:
            key = ("br" if e.bounded_range else "kov", e.epsilon, 0.0)
            out[key] = out.get(key, 0) + e.count
        for a in approx:
            key = ("kov", a.epsilon, a.delta)
            out[key] = out.get(key, 0) + a.count
        return out

    def as_zcdp(e: PureDPEvent) -> float:
        # Bounded range: Cesar-Rogers 2021; generic pure DP: Bun-Steinke 2016, Prop. 1.4.
        per = e.epsilon**2 / 8.0 if e.bounded_range else e.epsilon**2 / 2.0
        return per * e.count

    bounded = [e for e in pure if e.bounded_range]
    generic = [e for e in pure if not e.bounded_range]
    base = zcdp + choice_zcdp
    plans = [(gaussian, groups(pure), base, plds)]
    if bounded:
        plans.append((gaussian, groups(generic), base + math.fsum(map(as_zcdp, bounded)), plds))
    if gaussian > 0.0 or pure or choices:
        # Choices in zCDP too, where every option has a zCDP cost; else as in A.
        all_zcdp = all(cost is not None for cost in choice_costs)
        plans.append((0.0, groups([]),
                      zcdp + gaussian + math.fsum(map(as_zcdp, pure))
                      + (math.fsum(choice_costs) if all_zcdp else choice_zcdp),  # type: ignore[arg-type]
                      [] if all_zcdp else plds))
    return [_Bound(g, grp, z, grid, p) for g, grp, z, p in plans]


def compose_delta(
    events: Sequence[Event],
    epsilon: float,
    *,
    value_discretization_interval: float = DEFAULT_DISCRETIZATION,
) -> float:
    """An upper bound on delta(epsilon) of the adaptive composition of ``events``.

    Parameters
    ----------
    events : sequence of GaussianEvent, PureDPEvent, ApproxDPEvent, ZCDPEvent
        The release, one event per stage or group of identical stages.
    epsilon : float
        epsilon > 0.
    value_discretization_interval : float, optional
        The grid of privacy losses (default 1e-4). The result is never below the exact delta;
        its discretisation error is described in the module docstring (at most the exact delta
        at epsilon - m * grid for m rounded-up factors). Releases of Gaussian stages only, with
        or without ZCDPEvents, need no grid and use ``gaussian_delta`` directly.

    Returns
    -------
    float
        delta such that the release is (epsilon, delta)-DP: the smallest of the valid
        accountings described in the module docstring.
    """
    epsilon = _positive("epsilon", epsilon)
    grid = _discretization(value_discretization_interval)
    return min(b.delta(epsilon) for b in _bounds(_events(events), grid))


def _epsilon_for(bounds: list[_Bound], delta: float) -> float:
    def ok(epsilon: float) -> bool:
        return min(b.delta(epsilon) for b in bounds) <= delta

    if ok(0.0):
        return 0.0
    hi = 1.0
    for _ in range(64):
        if ok(hi):
            break
        hi *= 2.0
    else:
        return math.inf  # e.g. an (epsilon, delta) black box with a larger delta
    lo = 0.0 if hi == 1.0 else hi / 2.0
    while hi - lo > 1e-9 * hi:
        mid = 0.5 * (lo + hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def compose_epsilon(
    events: Sequence[Event],
    delta: float,
    *,
    value_discretization_interval: float = DEFAULT_DISCRETIZATION,
) -> float:
    """An upper bound on the smallest epsilon at which the composition of ``events`` is
    (epsilon, delta)-DP.

    Bisection on epsilon of the bound of ``compose_delta``; the returned epsilon is on the side
    that meets delta (within a relative 1e-9 of the bisection's limit). Returns ``math.inf`` when
    no epsilon meets delta (an ``ApproxDPEvent`` with a larger delta, say). The discretisation adds
    less than m * ``value_discretization_interval`` to the exact epsilon (module docstring).
    """
    delta = _delta(delta)
    grid = _discretization(value_discretization_interval)
    return _epsilon_for(_bounds(_events(events), grid), delta)


# --------------------------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------------------------


def calibrate_scale(
    epsilon: float,
    delta: float,
    events_at: Callable[[float], Sequence[Event]],
    *,
    initial_scale: float = 1.0,
    rtol: float = 1e-6,
    value_discretization_interval: float = DEFAULT_DISCRETIZATION,
) -> float:
    """The largest scale s at which the release ``events_at(s)`` is (epsilon, delta)-DP.

    Parameters
    ----------
    epsilon : float
        epsilon > 0.
    delta : float
        delta in (0, 1).
    events_at : callable
        Maps a scale s > 0 to the release's events at that scale, e.g. for a plan that spends
        shares w_j of a total rho = s:
        ``lambda s: [GaussianEvent(0.75 * s), PureDPEvent(math.sqrt(8 * 0.25 * s / d), count=d,
        bounded_range=True)]``. Privacy must get no better as s grows (delta at epsilon
        non-decreasing in s), which holds whenever every event's rho / epsilon / delta is
        non-decreasing in s.
    initial_scale : float, optional
        Where the bracketing search starts (default 1). A good guess saves a few evaluations.
    rtol : float, optional
        Relative width of the final bracket (default 1e-6): the returned s meets (epsilon, delta)
        and s * (1 + rtol) did not (unless the discretisation makes delta non-monotone at that
        resolution).
    value_discretization_interval : float, optional
        As in ``compose_delta``.

    Returns
    -------
    float
        s with ``compose_delta(events_at(s), epsilon) <= delta``, found by bisection on log s
        between a scale that meets delta and one that does not; only a scale that was checked
        to meet delta is ever returned.

    Raises
    ------
    InvalidParameterError
        On invalid epsilon, delta, rtol or initial_scale, if ``events_at`` returns something
        that is not a non-empty list of events, or if no scale in [1e-300, 1e300] separates
        meeting delta from not (e.g. ``events_at`` ignores its argument).
    """
    epsilon = _positive("epsilon", epsilon)
    delta = _delta(delta)
    grid = _discretization(value_discretization_interval)
    scale = _positive("initial_scale", initial_scale)
    rtol = _positive("rtol", rtol)
    if rtol >= 1.0:
        raise InvalidParameterError(f"rtol must be in (0, 1), got {rtol:g}")
    if not callable(events_at):
        raise InvalidParameterError(
            f"events_at must be a function from a scale to a list of events, got "
            f"{type(events_at).__name__}"
        )

    def meets(s: float) -> bool:
        bounds = _bounds(_events(events_at(s)), grid)
        return min(b.delta(epsilon) for b in bounds) <= delta

    if meets(scale):
        lo = scale
        while True:
            hi = lo * 4.0
            if hi > 1e300:
                raise InvalidParameterError(
                    "events_at(s) meets (epsilon, delta) at every scale up to 1e300; it must "
                    "spend more privacy as s grows"
                )
            if not meets(hi):
                break
            lo = hi
    else:
        hi = scale
        while True:
            lo = hi / 4.0
            if lo < 1e-300:
                raise InvalidParameterError(
                    f"events_at(s) does not meet epsilon={epsilon:g}, delta={delta:g} at any "
                    f"scale down to 1e-300 (an (epsilon, delta) black box with a larger "
                    f"delta or epsilon?)"
                )
            if meets(lo):
                break
            hi = lo
    return narrowed(meets, lo, hi, rtol)
