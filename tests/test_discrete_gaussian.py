"""The exact discrete Gaussian sampler against its exact probabilities (CKS 2020)."""

from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpmean.errors import InvalidParameterError
from dpmean.mechanisms.discrete_gaussian import (
    _bernoulli_exp,
    _RandomBits,
    discrete_gaussian,
    discrete_gaussian_pmf,
    discrete_laplace,
    rational_variance,
)


def chi_square_pvalue(samples: np.ndarray, probabilities) -> float:
    """Goodness of fit over the values -k..k plus the two tails, expected counts >= 5."""
    k = 1
    while probabilities(np.array([k + 1]))[0] * len(samples) >= 5:
        k += 1
    support = np.arange(-k, k + 1)
    p_inner = probabilities(support)
    p_tails = (1 - p_inner.sum()) / 2
    observed = [np.count_nonzero(samples < -k), *[np.count_nonzero(samples == v) for v in support],
                np.count_nonzero(samples > k)]
    expected = np.array([p_tails, *p_inner, p_tails]) * len(samples)
    # scipy wants equal totals; they differ only by the pmf's rounding.
    expected *= len(samples) / expected.sum()
    return stats.chisquare(observed, expected).pvalue


@pytest.mark.parametrize("sigma2", [0.25, 2.5, 40.0])
def test_discrete_gaussian_matches_its_exact_pmf(sigma2):
    samples = discrete_gaussian(sigma2, np.random.default_rng(1), size=8000)
    assert chi_square_pvalue(samples, lambda v: discrete_gaussian_pmf(v, sigma2)) > 1e-3


def test_the_goodness_of_fit_test_can_fail():
    # A test of the test: the same samples against a 40% wider pmf are rejected.
    samples = discrete_gaussian(2.5, np.random.default_rng(1), size=8000)
    assert chi_square_pvalue(samples, lambda v: discrete_gaussian_pmf(v, 3.5)) < 1e-6


def test_discrete_laplace_matches_its_pmf():
    scale = 3
    bits = _RandomBits(np.random.default_rng(2))
    samples = np.array([discrete_laplace(scale, bits) for _ in range(8000)])
    q = np.exp(-1 / scale)

    def pmf(v):
        return (1 - q) / (1 + q) * q ** np.abs(v)

    assert chi_square_pvalue(samples, pmf) > 1e-3


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(7, 2)])
def test_bernoulli_exp_probability(gamma):
    bits = _RandomBits(np.random.default_rng(5))
    draws = np.array([_bernoulli_exp(gamma.numerator, gamma.denominator, bits)
                      for _ in range(6000)])
    p = np.exp(-float(gamma))
    # Binomial test at the 0.1% level.
    assert stats.binomtest(int(draws.sum()), len(draws), p).pvalue > 1e-3


def test_variance_is_rounded_up_and_validated():
    assert rational_variance(0.1) >= Fraction(0.1)
    assert rational_variance(0.1) - Fraction(0.1) < Fraction(1, 2**30)
    for bad in (0.0, -1.0, np.inf, np.nan):
        with pytest.raises(InvalidParameterError):
            rational_variance(bad)


def test_samples_are_integers_and_symmetric():
    samples = discrete_gaussian(10.0, np.random.default_rng(3), size=6000)
    assert samples.dtype == np.int64
    # Mean 0 with standard error sqrt(10 / 6000) = 0.041: within 4.5 standard errors.
    assert abs(samples.mean()) < 4.5 * np.sqrt(10 / 6000)


def test_random_bits_are_uniform():
    bits = _RandomBits(np.random.default_rng(6))
    draws = np.array([bits.below(6) for _ in range(12000)])
    assert stats.chisquare(np.bincount(draws, minlength=6)).pvalue > 1e-3
    assert bits.take(70).bit_length() <= 70
