"""Amplification by shuffling (Feldman-McMillan-Talwar 2021): the closed form is never below the
published Theorem 3.1, the numerical bound is checked against a brute-force hockey-stick sum of
the clone pair, and the inverse is conservative as computed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from dpmean.errors import InvalidParameterError
from dpmean.protocols.composition import (
    clone_pair_delta,
    fmt_closed_form_epsilon,
    local_epsilon_for_shuffle,
    shuffle_amplified_epsilon,
)

# The eps0 the old code chose for central (1, 1e-6) at n = 4000, claiming amplified(eps0) = 1.
OLD_LOCAL = 2.7269802932472373


def theorem_3_1(eps0: float, n: int, delta: float) -> float:
    """FMT21 Theorem 3.1 as printed (range eps0 <= ln(n / (16 ln(2/delta))))."""
    assert eps0 <= math.log(n / (16 * math.log(2 / delta)))
    e = math.exp(eps0)
    return math.log(1 + (e - 1) / (e + 1) * (8 * math.sqrt(e * math.log(4 / delta)) / math.sqrt(n)
                                             + 8 * e / n))


def reference_closed_form(eps0: float, n: int, delta: float) -> float:
    """The authors' reference code's closed form, written from its formula: factor
    (e^eps0 - 1) / (e^eps0 + e^-eps1) with eps1 = ln(1 + a + b)."""
    e = math.exp(eps0)
    a = 8 * math.sqrt(e * math.log(4 / delta) / n)
    b = 8 * e / n
    return math.log(1 + (e - 1) / (e + math.exp(-math.log(1 + a + b))) * (a + b))


def brute_force_delta(eps: float, eps0: float, n: int) -> float:
    """sup_S P(S) - e^eps Q(S) for the clone pair, summing max(0, p - e^eps q) over every
    outcome (c, a); clone counts of mass below 1e-18 each are charged in full."""
    alpha = math.exp(eps0) / (math.exp(eps0) + 1)
    weights = binom.pmf(np.arange(n), n - 1, math.exp(-eps0))
    total = 0.0
    for c in range(n):
        if weights[c] < 1e-18:
            total += weights[c]
            continue
        b = np.concatenate([[0.0], binom.pmf(np.arange(c + 1), c, 0.5), [0.0]])
        p = alpha * b[:-1] + (1 - alpha) * b[1:]  # a = 0..c+1: b(a-1) and b(a)
        q = (1 - alpha) * b[:-1] + alpha * b[1:]
        total += weights[c] * np.maximum(p - math.exp(eps) * q, 0.0).sum()
    return total


def test_closed_form_at_least_the_published_theorem_at_n_4000():
    published = theorem_3_1(OLD_LOCAL, 4000, 1e-6)
    reference = reference_closed_form(OLD_LOCAL, 4000, 1e-6)
    ours = shuffle_amplified_epsilon(OLD_LOCAL, 4000, 1e-6, bound="closed-form")
    assert ours >= published and ours >= reference
    assert ours == pytest.approx(reference, rel=1e-12)
    assert ours > 1.02  # the old code claimed exactly 1 here


def test_closed_form_uses_the_stricter_range():
    n, delta = 4000, 1e-6
    strict = math.log(n / (16 * math.log(4 / delta)))
    loose = math.log(n / (16 * math.log(2 / delta)))
    assert fmt_closed_form_epsilon(strict * 0.999, n, delta) is not None
    eps0 = 0.5 * (strict + loose)
    assert fmt_closed_form_epsilon(eps0, n, delta) is None
    assert shuffle_amplified_epsilon(eps0, n, delta, bound="closed-form") == eps0


@pytest.mark.parametrize("eps0, n, delta", [
    (OLD_LOCAL, 4000, 1e-6), (1.0, 300, 1e-3), (3.0, 1000, 1e-6), (6.0, 2000, 1e-8),
    (0.2, 500, 1e-5),
])
def test_numerical_bound_against_brute_force(eps0, n, delta):
    eps = shuffle_amplified_epsilon(eps0, n, delta)
    assert brute_force_delta(eps, eps0, n) <= delta
    # tight: a little less epsilon is not enough (unless no amplification is claimed)
    if eps < eps0:
        assert brute_force_delta(eps * 0.999 - 1e-9, eps0, n) > delta
    closed = fmt_closed_form_epsilon(eps0, n, delta)
    if closed is not None:
        assert eps <= closed


def test_pair_delta_matches_brute_force_and_is_symmetric():
    for eps, eps0, n in ((0.3, 2.0, 400), (0.05, 0.5, 300), (1.0, 4.0, 800)):
        exact = brute_force_delta(eps, eps0, n)
        assert clone_pair_delta(eps, eps0, n) == pytest.approx(exact, rel=1e-8, abs=1e-15)
        assert clone_pair_delta(eps, eps0, n) >= exact
        # the other direction, sup_S Q(S) - e^eps P(S), by brute force: the same number
        alpha = math.exp(eps0) / (math.exp(eps0) + 1)
        weights = binom.pmf(np.arange(n), n - 1, math.exp(-eps0))
        other = 0.0
        for c in range(n):
            b = np.concatenate([[0.0], binom.pmf(np.arange(c + 1), c, 0.5), [0.0]])
            p = alpha * b[:-1] + (1 - alpha) * b[1:]
            q = (1 - alpha) * b[:-1] + alpha * b[1:]
            other += weights[c] * np.maximum(q - math.exp(eps) * p, 0.0).sum()
        assert other == pytest.approx(exact, rel=1e-9, abs=1e-15)


def test_monotone_in_n_and_in_local_epsilon():
    delta = 1e-6
    by_n = np.array([shuffle_amplified_epsilon(2.0, n, delta)
                     for n in (500, 1000, 4000, 20000, 10**5)])
    assert np.all(np.diff(by_n) < 0)
    eps0s = np.array([0.1, 0.5, 1, 2, 3, 4, 6, 9])
    by_eps0 = np.array([shuffle_amplified_epsilon(e, 4000, delta) for e in eps0s])
    assert np.all(np.diff(by_eps0) > 0)
    assert np.all(by_eps0 <= eps0s)


@pytest.mark.parametrize("bound", ["numerical", "closed-form"])
@pytest.mark.parametrize("epsilon, delta, n", [(1.0, 1e-6, 4000), (0.5, 1e-9, 100_000),
                                               (0.1, 1e-6, 2000)])
def test_inverse_round_trips_conservatively(bound, epsilon, delta, n):
    local = local_epsilon_for_shuffle(epsilon, delta, n, bound)
    assert local >= epsilon
    assert shuffle_amplified_epsilon(local, n, delta, bound) <= epsilon
    if local > epsilon:
        assert shuffle_amplified_epsilon(local * (1 + 1e-6), n, delta, bound) > epsilon


def test_inverse_regression_at_n_4000():
    # the old code returned 2.727 here, where the published closed form gives 1.026
    local = local_epsilon_for_shuffle(1.0, 1e-6, 4000, "closed-form")
    assert reference_closed_form(local, 4000, 1e-6) <= 1.0
    assert theorem_3_1(local, 4000, 1e-6) <= 1.0
    numerical = local_epsilon_for_shuffle(1.0, 1e-6, 4000)
    assert brute_force_delta(1.0, numerical, 4000) <= 1e-6


def test_invalid_arguments():
    with pytest.raises(InvalidParameterError):
        shuffle_amplified_epsilon(1.0, 100, 1e-6, bound="tight")
    with pytest.raises(InvalidParameterError):
        shuffle_amplified_epsilon(-1.0, 100, 1e-6)
    with pytest.raises(InvalidParameterError):
        local_epsilon_for_shuffle(1.0, 0.0, 100)
