"""Absurdly small (and large) budgets: every estimator either releases a finite, correctly
accounted (very noisy) mean, or refuses with a clear InvalidParameterError before anything is
charged. Found by a stress trial: divisions by zero after the charge (iome-local at rho = 1e-20,
GRS and iome-shuffle at tiny epsilon), an int64 overflow in the exact discrete Gaussian (secure
noise at rho = 1e-35), the (epsilon, delta) conversion failing below epsilon = 1e-162, the
Hadamard response's zCDP computed to only 1e-14 absolute, and randomised response realising a
little more than its epsilon.

References are computed in high precision (mpmath) or exactly (fractions)."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

import dpmean
from dpmean.accounting import PrivacyLedger, approx_dp_to_zcdp, zcdp_to_approx_dp
from dpmean.errors import InvalidParameterError
from dpmean.mechanisms.discrete_gaussian import discrete_gaussian
from dpmean.protocols.randomisers import (
    RoundBudget,
    hadamard_epsilon_for_zcdp,
    hadamard_response_zcdp,
    randomised_response,
    unary_encoding,
)
from dpmean.protocols.range_counting import HierarchicalHistogram, HistogramMessages
from dpmean.registry import ESTIMATORS

# Names this suite introduced (``flip_probability``, ``response_bias``, ``MAX_SIGMA2``) are
# imported inside the tests that need them, so that every other test runs, and fails for its
# own reason, against the code before the fixes.

mp.mp.dps = 60

N, BOX = 2000, (-1.0, 1.0)


def data(d: int) -> np.ndarray:
    return np.random.default_rng(0).uniform(-1.0, 1.0, size=(N, d))


@pytest.fixture
def charges(monkeypatch):
    """Every ledger charge made during the test, as (stage, amount)."""
    made: list[tuple[str, float]] = []
    real = PrivacyLedger.charge

    def charge(self, stage, amount, event=None):
        made.append((stage, amount))
        return real(self, stage, amount, event)

    monkeypatch.setattr(PrivacyLedger, "charge", charge)
    return made


def quiet_mean(x, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small-budget and large-delta warnings
        return dpmean.mean(x, bounds=BOX, random_state=0, **options)


# 1. iome-local / iome-shuffle: the range counts' analyser at tiny report epsilons.

@pytest.mark.parametrize("rho", [1e-20, 1e-25, 1e-28])
def test_iome_local_at_a_tiny_rho_releases_a_finite_mean_charged_as_planned(rho, charges):
    """rho = 1e-20 divided by zero after the charge (the analyser's 2 e^eps / (1 + e^eps) - 1
    cancelled to 0, and the Hadamard epsilon itself came out 0), then was refused from the
    plan; its reports are now drawn at eps = 1.4e-10 and debiased with the draw's exact bias."""
    result = quiet_mean(data(3), method="iome-local", rho=rho)
    assert np.all(np.isfinite(result.mean)) and np.all(np.abs(result.mean) <= 1.0)
    assert math.isfinite(result.diagnostics["threshold"])
    assert np.all(np.isfinite(result.diagnostics["centre"]))
    assert result.rho_spent <= rho * (1 + 1e-9)
    assert {stage for stage, _ in charges} == {"centre", "threshold", "noise"}


def test_iome_local_below_what_its_reports_resolve_is_refused_from_its_plan(charges):
    """At rho = 1e-40 a report's epsilon (1.4e-20; anything below about 2e-15) leaves the flip
    probability at 1/2 on the uniform's grid: nothing to debias, so refused before any
    charge."""
    with pytest.raises(InvalidParameterError, match="reports would carry nothing"):
        quiet_mean(data(3), method="iome-local", rho=1e-40)
    assert charges == []


def test_the_range_count_analyser_debiases_with_the_drawn_bias():
    """The bias of a +-1 Hadamard answer is 1 - 2 (the drawn flip probability): exact, and about
    tanh(eps / 2) (the nominal 2 e^eps / (1 + e^eps) - 1 was 0 at eps = 1e-17: a division by
    zero). A report without bias is refused rather than divided by."""
    from dpmean.protocols.randomisers import flip_probability, response_bias

    tree = HierarchicalHistogram(branching=2, height=1)
    # Two users of bucket 0 at level 1, indices 0 and 1, both sending +1: the index sums are
    # (1, 1), their transform (2, 0); per user and debiased, node 0 has 1 / bias, node 1 has 0,
    # and consistency with the root (1) shifts both by (1 - 1 / bias) / 2.
    messages = HistogramMessages(np.zeros(2, np.int64), np.ones(2, np.int64),
                                 np.array([0, 1]), np.array([1, 1], np.int8))
    for epsilon in (1e-10, 1e-3, 1.0):
        bias = response_bias(epsilon)
        assert bias == 1.0 - 2.0 * flip_probability(epsilon)
        # Below tanh(eps / 2) (more flipping), by at most the rounding up of the flip
        # probability: eight ulps and the uniform's grid, twice.
        assert 0.0 <= math.tanh(epsilon / 2) - bias <= 2.0**-49
        fractions = tree.leaf_fractions(messages, 1, epsilon)
        assert fractions[0, 0] == pytest.approx((1 + 1 / bias) / 2, rel=1e-12, abs=0.0)
    with pytest.raises(InvalidParameterError, match="carry nothing"):
        tree.leaf_fractions(messages, 1, 1e-17)
    with pytest.raises(InvalidParameterError, match="carry nothing"):
        tree.rank_error(100, 1e-17, 0.05)


@pytest.mark.parametrize("epsilon, d", [(1e-100, 4), (1e-18, 1), (1e-15, 3)])
def test_iome_shuffle_at_a_tiny_epsilon_is_refused_from_its_plan(epsilon, d, charges):
    """epsilon = 1e-100: the shuffled reports' epsilon is 1e-16, drawn with flip probability 1/2
    (nothing to debias). epsilon = 1e-18 at d = 1: the summation round's discrete Laplace noise
    (scale 8e19) made numpy's negative binomial raise after rounds 1 and 2 were charged.
    epsilon = 1e-15 at d = 3: each rotated coordinate's epsilon, 1.4e-16, gives that noise a
    scale above 2^56. (At 1e-14 the split was 0, a ZeroDivisionError; it is 5.6e-15 since the
    split is found to a relative tolerance, and the release runs: below.)"""
    options = {"epsilon": epsilon, "delta": 1e-6}
    with pytest.raises(InvalidParameterError, match="budget is too small"):
        ESTIMATORS["iome-shuffle"](bounds=BOX, **options).budget_plan(N, d)
    with pytest.raises(InvalidParameterError, match="budget is too small"):
        quiet_mean(data(d), method="iome-shuffle", **options)
    assert charges == []


# 2. GRS at tiny epsilon.

@pytest.mark.parametrize("method", ["grs-knownvar", "grs-unkvar"])
@pytest.mark.parametrize("epsilon, d", [(1e-100, 3), (1e-100, 1), (1e-15, 3)])
def test_grs_at_a_tiny_epsilon_is_refused_from_its_plan(method, epsilon, d, charges):
    """epsilon = 1e-100 divided by zero after the charge (its per-coordinate split was 0, and
    at d = 1 the debiasing divided by 1 - 2 flip = 0). Refused before any charge, saying why."""
    options = {"epsilon": epsilon, "delta": 1e-6}
    with pytest.raises(InvalidParameterError, match="reports would carry nothing"):
        ESTIMATORS[method](bounds=BOX, **options).budget_plan(N, d)
    with pytest.raises(InvalidParameterError, match="reports would carry nothing"):
        quiet_mean(data(d), method=method, **options)
    assert charges == []


def test_iome_shuffle_at_epsilon_1e_14_releases_charged_as_planned():
    result = quiet_mean(data(3), method="iome-shuffle", epsilon=1e-14, delta=1e-6)
    assert np.isfinite(result.mean).all()
    planned = ESTIMATORS["iome-shuffle"](bounds=BOX, epsilon=1e-14, delta=1e-6).budget_plan(N, 3)
    assert result.ledger == pytest.approx(planned, rel=1e-12, abs=0.0)


@pytest.mark.parametrize("method", ["grs-knownvar", "grs-unkvar"])
def test_grs_at_a_small_epsilon_still_releases(method):
    result = quiet_mean(data(1), method=method, epsilon=1e-12, delta=1e-6)
    assert np.all(np.isfinite(result.mean)) and np.all(np.abs(result.mean) <= 1.0)


# 3. Secure noise beyond the exact sampler's range.

@pytest.mark.parametrize("rho", [1e-35, 1e-25])
def test_secure_noise_beyond_the_sampler_is_refused_clearly(rho):
    """rho = 1e-35 overflowed the int64 output (OverflowError); variances past 2^92 are
    refused, by the Gaussian mechanism and the searches before they charge their stage."""
    with pytest.raises(InvalidParameterError, match=r"above 2\^92"):
        quiet_mean(data(3), method="gaussian", rho=rho, secure_noise=True)
    from dpmean.mechanisms.gaussian import gaussian_mechanism
    from dpmean.mechanisms.quantiles import private_quantile_octaves

    ledger = PrivacyLedger(1.0)
    with pytest.raises(InvalidParameterError, match=r"above 2\^92"):
        gaussian_mechanism(np.zeros(3), 1.0, rho, np.random.default_rng(0), ledger=ledger,
                           stage="noise", secure=True)
    if 20 / (2 * rho) > 2.0**92:  # 20 counts of sensitivity 1: variance 20 / (2 rho) each
        with pytest.raises(InvalidParameterError, match=r"above 2\^92"):
            private_quantile_octaves(lambda t: np.zeros(1), 1.0, 1.0, steps=20, rho=rho,
                                     rng=np.random.default_rng(0), ledger=ledger,
                                     stage="search", secure=True)
    assert ledger.spent == {}


def test_the_discrete_gaussian_draws_up_to_its_limit_and_refuses_beyond():
    from dpmean.mechanisms.discrete_gaussian import MAX_SIGMA2

    draws = discrete_gaussian(Fraction(MAX_SIGMA2), np.random.default_rng(0), size=50)
    assert draws.dtype == np.int64 and np.all(np.abs(draws) < 2**52)
    assert 2.0**40 < np.std(draws.astype(float)) < 2.0**52
    for too_large in (2.0**93, math.inf, Fraction(MAX_SIGMA2) + Fraction(1, 2**30)):
        with pytest.raises(InvalidParameterError, match=r"above 2\^92"):
            discrete_gaussian(too_large, np.random.default_rng(0))


# 4. (epsilon, delta) -> rho at tiny epsilon, and conservative everywhere.

def reference_rho(epsilon: float, delta: float) -> mp.mpf:
    """sup over alpha > 1 of (eps (alpha - 1) - N(alpha)) / (alpha (alpha - 1)), in 60 digits,
    with alpha - 1 = e^t (golden-section search around the best of a grid in t)."""
    eps, log_inv = mp.mpf(epsilon), -mp.log(mp.mpf(delta))

    def h(t):
        g = mp.e**t
        n = log_inv - g * mp.log1p(1 / g) - mp.log1p(g)
        return (eps * g - n) / ((1 + g) * g)

    grid = [mp.mpf(t) for t in range(-700, 710)]
    values = [h(t) for t in grid]
    i = max(range(len(grid)), key=values.__getitem__)
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    ratio = (mp.sqrt(5) - 1) / 2
    for _ in range(200):
        c, d = b - ratio * (b - a), a + ratio * (b - a)
        a, b = (a, d) if h(c) > h(d) else (c, b)
    return max(h((a + b) / 2), values[i])


@pytest.mark.parametrize("epsilon, delta", [
    (1e-170, 1e-6), (5e-324, 1e-6), (1e-100, 1e-9), (1e-8, 1e-6), (1e-3, 1e-6), (1.0, 1e-6),
    (10.0, 1e-12), (0.1, 0.3), (1e-300, 1e-150)])
def test_approx_dp_to_zcdp_never_exceeds_the_true_rho(epsilon, delta):
    """Below epsilon = 1e-162 the conversion failed ("could not convert"); where it worked it
    returned up to 1e-13 (relative) more than the largest rho, 2.4e-15 at (1e-100, 1e-6)."""
    rho = approx_dp_to_zcdp(epsilon, delta)
    reference = reference_rho(epsilon, delta)
    assert rho <= reference
    assert rho >= reference * (1 - 1e-10)
    assert zcdp_to_approx_dp(rho, delta) <= epsilon


def test_a_tiny_epsilon_converts_to_the_zero_epsilon_limit_end_to_end():
    """As epsilon -> 0 the rho tends to the one that is (0, delta)-DP, e delta^2 / 2."""
    rho = approx_dp_to_zcdp(1e-170, 1e-6)
    assert rho == pytest.approx(math.e * 1e-12 / 2, rel=1e-9, abs=0.0)
    for method in ("gaussian", "cm", "iome-local", "plan"):
        result = quiet_mean(data(3), method=method, epsilon=1e-170, delta=1e-6)
        assert np.all(np.isfinite(result.mean))
        assert result.budget.epsilon == 1e-170


def test_a_conversion_below_the_smallest_rho_is_refused_clearly():
    with pytest.raises(InvalidParameterError, match="smallest normal float64"):
        approx_dp_to_zcdp(1e-170, 1e-300)
    with pytest.raises(InvalidParameterError, match="1/delta overflows"):
        approx_dp_to_zcdp(1.0, 5e-324)
    for method in ("gaussian", "trimmed", "cm"):
        # trimmed released zeros at rho = 5.7e-214, gaussian said "could not calibrate".
        with pytest.raises(InvalidParameterError, match="below the smallest rho a release"):
            quiet_mean(data(3), method=method, epsilon=1e-105, delta=1e-300)


# 5. The Hadamard response's zCDP, to a relative 1e-15.

def reference_zcdp(epsilon: float) -> mp.mpf:
    """The exact sup_a D_a / a up to eps = 3 (its a -> 1 limit, 1/2 eps tanh(eps/2)); above, the
    function's own grid bound evaluated in 60 digits."""
    eps = mp.mpf(epsilon)
    if epsilon <= 3.0:
        return eps / 2 * mp.tanh(eps / 2)
    alphas = 1.0 + np.logspace(-8, 4, 2000)  # the function's grid
    best = eps / mp.mpf(float(alphas[-1]))
    previous = None
    for alpha in alphas:
        a = mp.mpf(float(alpha))
        s = mp.sinh(a * eps / 2) * mp.sinh((a - 1) * eps / 2) / mp.cosh(eps / 2)
        divergence = mp.log1p(s) / (a - 1)
        if previous is not None:
            best = max(best, divergence / previous)
        previous = a
    return best


def renyi_over_alpha(epsilon: float, alpha: mp.mpf) -> mp.mpf:
    """D_a / a of Hadamard response straight from its definition, in 60 digits."""
    eps = mp.mpf(epsilon)
    p = mp.e**eps / (1 + mp.e**eps)
    q = 1 - p
    mixture = (1 + p**alpha * q ** (1 - alpha) + q**alpha * p ** (1 - alpha)) / 2
    return mp.log(mixture) / (alpha - 1) / alpha


@pytest.mark.parametrize("epsilon", [1e-150, 1e-100, 1e-20, 1e-10, 1e-5, 0.01, 0.5, 1.0, 2.0,
                                     3.0, 4.0, 10.0, 20.0])
def test_hadamard_zcdp_is_conservative_to_a_relative_1e15(epsilon):
    """At eps = 1e-10 it carried 1.5e-14 of absolute round-off (six million times its value),
    and a tail term eps / 10^4 dominated below eps = 4e-4 (1e-12 at eps = 1e-8: 40,000 times
    the true 2.5e-17)."""
    rho = hadamard_response_zcdp(epsilon)
    reference = reference_zcdp(epsilon)
    assert rho >= reference
    assert rho <= reference * (1 + 2e-15)


@pytest.mark.parametrize("epsilon", [1e-8, 0.5, 2.0, 3.0])
def test_the_kl_limit_is_the_supremum_up_to_3(epsilon):
    """The closed form below eps = 3 is the supremum (proof in the docstring): no order does
    better, checked in 60 digits from a = 1 + 1e-12 to 1 + 1e4."""
    kl = mp.mpf(epsilon) / 2 * mp.tanh(mp.mpf(epsilon) / 2)
    for exponent in np.linspace(-12, 4, 97):
        assert renyi_over_alpha(epsilon, 1 + mp.mpf(10) ** exponent) <= kl


def test_subnormal_hadamard_costs_round_up():
    # eps^2 / 4 underflows: the smallest floats above it, never 0.
    assert 0.0 < hadamard_response_zcdp(1e-300) <= 1e-322
    assert hadamard_response_zcdp(0.0) == 0.0


@pytest.mark.parametrize("rho", [1e-200, 1e-100, 1e-30, 1e-20, 1e-12, 1e-3, 0.5])
def test_hadamard_epsilon_inverts_to_a_relative_1e15(rho):
    """At rho = 1e-20 the inverse was 0 (the zCDP's round-off exceeded rho); at 1e-12 it was
    1e-8 instead of 2e-6."""
    epsilon = hadamard_epsilon_for_zcdp(rho)
    assert hadamard_response_zcdp(epsilon) <= rho
    scale = 2 * mp.sqrt(mp.mpf(rho))  # eps = scale u, u near 1: a root-finder's relative task
    exact = scale * mp.findroot(lambda u: scale * u / 2 * mp.tanh(scale * u / 2) / rho - 1, 1)
    assert epsilon <= exact
    assert epsilon >= exact * (1 - 4e-15)


# 6. Randomised response realises at most its epsilon.

class FixedUniform:
    """A stand-in generator whose every uniform is the given multiple of 2^-53 (numpy's
    ``random()`` returns k 2^-53)."""

    def __init__(self, k: int) -> None:
        self.value = k / 2**53

    def random(self, shape):
        return np.full(shape, self.value)


def realised_flip(epsilon: float, randomiser) -> Fraction:
    """The flip probability the randomiser realises: the fraction of the 2^53 uniforms that
    flip a 0 bit, found by bisection on the threshold (flipping is monotone in the uniform)."""

    def flips(k: int) -> bool:
        return bool(randomiser(epsilon, FixedUniform(k)))

    top = 2**53 - 1
    low_flips = flips(0)
    assert low_flips != flips(top)  # the response flips some bits and keeps others
    lo, hi = 0, top  # flips(lo) == low_flips != flips(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if flips(mid) == low_flips else (lo, mid)
    count = hi if low_flips else 2**53 - hi
    return Fraction(count, 2**53)


def by_randomised_response(epsilon, rng):
    ledger = PrivacyLedger.for_stages({"test": 1e3}, "epsilon")
    return randomised_response(np.zeros((1, 1), bool), RoundBudget(epsilon, "epsilon"), rng,
                               ledger=ledger, stage="test")[0, 0]


def by_unary_encoding(epsilon, rng):
    # unary encoding flips each bit at eps / 2: the ratio is checked against e^(eps / 2).
    ledger = PrivacyLedger.for_stages({"test": 1e3}, "epsilon")
    return unary_encoding(np.array([1]), 2, RoundBudget(2 * epsilon, "epsilon"), rng,
                          ledger=ledger, stage="test")[0, 0]


@pytest.mark.parametrize("randomiser", [by_randomised_response, by_unary_encoding])
@pytest.mark.parametrize("epsilon", [1.0, 10.0, 20.0])
def test_randomised_response_realises_at_most_its_epsilon(epsilon, randomiser):
    """Keeping when U < fl(e^eps / (1 + e^eps)) realised P[kept] / P[flipped] above e^eps
    whenever the float rounded up: by 8.5e-17 at eps = 1 and 9.7e-13 at eps = 10 (relative).
    The flip probability is now drawn as at least 1 / (1 + e^eps)."""
    flip = realised_flip(epsilon, randomiser)
    keep = 1 - flip
    assert flip <= Fraction(1, 2)
    assert mp.mpf(keep.numerator) / keep.denominator <= (
        mp.exp(epsilon) * mp.mpf(flip.numerator) / flip.denominator)
    # And it costs nearly nothing: the realised ratio is within 1e-6 of e^eps.
    ratio = (mp.mpf(keep.numerator) / keep.denominator) / (
        mp.mpf(flip.numerator) / flip.denominator)
    assert ratio >= mp.exp(epsilon) * (1 - mp.mpf(1e-6))


def test_flip_probability_is_the_drawn_one_and_an_upper_bound_on_the_grid():
    from dpmean.protocols.randomisers import flip_probability

    for epsilon in (1.0, 10.0, 20.0):
        assert realised_flip(epsilon, by_randomised_response) == Fraction(
            flip_probability(epsilon))
    for epsilon in [*np.logspace(-20, math.log10(40.0), 200), 0.0]:
        q = flip_probability(float(epsilon))
        exact = 1 / (1 + mp.exp(min(float(epsilon), 20.0)))
        assert exact <= q <= 0.5
        assert (Fraction(q) * 2**53).denominator == 1  # on the uniform's grid


@pytest.mark.parametrize("epsilon, delta, k", [
    (1e-14, 1e-6, 3), (1e-12, 1e-6, 1024), (1e-7, 1e-6, 784), (1e-7, 1e-6, 1024),
    (1e-100, 1e-6, 3), (1.0, 1e-6, 64), (5.0, 1e-9, 1000)])
def test_split_budget_composes_to_at_most_its_epsilon(epsilon, delta, k):
    """The per-step epsilon's k-fold composition stays within epsilon as computed. The root was
    found to an absolute 1e-14: 50% over at epsilon = 1e-14 (k = 3), 4.7% at 1e-12 (k = 1024),
    about 1e-6 relative at 1e-7, and 0 below about 1e-14 k."""
    from dpmean.protocols.composition import advanced_composition, split_budget

    step, step_delta = split_budget(epsilon, delta, k)
    assert advanced_composition(step, k, delta / 2.0) <= epsilon
    assert step_delta == delta / (2.0 * k)
    # no worse than basic composition's epsilon / k (up to the 1e-12 margin kept below the root)
    assert step >= epsilon / k * (1.0 - 1e-11)


@pytest.mark.parametrize("epsilon", [1e-320, 1e-300, 1e-200])
def test_an_epsilon_too_small_to_split_is_refused_clearly(epsilon):
    # scipy's "Failed to converge" (a RuntimeError) and "xtol too small" reached the user of
    # grs-unkvar, before any charge (a review).
    from dpmean.protocols.composition import split_budget

    with pytest.raises(InvalidParameterError, match="too small to split over 3 steps"):
        split_budget(epsilon, 1e-6, 3)
    with pytest.raises(InvalidParameterError, match="too small to split"):
        dpmean.mean(np.zeros((200, 3)), epsilon=epsilon, delta=1e-6, method="grs-unkvar",
                    bounds=(-3, 3))


@pytest.mark.parametrize("local_epsilon", [1e-12, 1e-10, 1e-6, 1e-3, 1.0])
def test_fmt_closed_form_is_accurate_at_small_local_epsilon(local_epsilon):
    """e^eps0 - 1 was a float subtraction: at eps0 = 1e-10 off by a relative 8e-9 (either way,
    so the amplified epsilon could be understated); expm1 keeps it to rounding."""
    from dpmean.protocols.composition import fmt_closed_form_epsilon

    n, delta = 10**6, 1e-6
    e0 = mp.exp(mp.mpf(local_epsilon))
    log4 = mp.log(4 / mp.mpf(delta))
    a = 8 * mp.sqrt(e0 * log4 / n)
    b = 8 * e0 / n
    reference = mp.log1p((e0 - 1) / (e0 + mp.exp(-mp.log1p(a + b))) * (a + b))
    assert fmt_closed_form_epsilon(local_epsilon, n, delta) == pytest.approx(
        float(reference), rel=1e-13, abs=0.0)


@pytest.mark.parametrize("method", ["grs-unkvar", "iome-shuffle"])
def test_a_large_delta_to_convert_a_rho_at_is_warned_as_a_pair_is(method):
    # rho with delta=0.5 was accepted silently where (epsilon, 0.5) warns (a review).
    from dpmean import LargeDeltaWarning

    x = np.random.default_rng(0).normal(0.0, 1.0, size=(500, 3))
    with pytest.warns(LargeDeltaWarning, match="delta=0.5 is large"):
        dpmean.mean(x, rho=1.0, delta=0.5, method=method, bounds=(-3, 3), random_state=0)
