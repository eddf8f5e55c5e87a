"""Exact discrete Gaussian (and discrete Laplace) samplers with integer arithmetic.

Canonne, Kamath, Steinke 2020, "The discrete Gaussian for differential privacy", Algorithms 1-3.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..errors import InvalidParameterError

# sigma^2 is rounded UP to a multiple of 2^-SIGMA2_BITS, so the sampled noise is never narrower
# than the one the privacy analysis asked for.
SIGMA2_BITS = 30

# The largest variance the exact sampler draws at: sigma <= 2^46. The discrete Gaussian is
# sigma^2-subgaussian (Canonne-Kamath-Steinke 2020), so P[|X| >= 64 sigma = 2^52] <=
# 2 e^-2048: its draws stay below 2^52, where the callers add them exactly to float64 numbers
# (grid indices below 2^48 in ``gaussian._discretised_gaussian``, counts in the searches; a sum
# below 2^53 is exact). A larger noise would be rounded in that addition, which is what an
# exact sampler exists to avoid, and past 2^63 it overflowed the int64 output (rho = 1e-35 in
# the Gaussian mechanism: an OverflowError).
MAX_SIGMA2 = 2**92


class _RandomBits:
    """Uniform random bits from a numpy Generator, drawn in batches of 64-bit words (one numpy
    call per batch, not per draw; batches double from 16 to 4096 words, so small requests stay
    cheap). Each request takes fresh whole words: every returned bit is an independent fair
    coin."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._words: list[int] = []
        self._batch = 16

    def take(self, bits: int) -> int:
        value = 0
        for _ in range((bits + 63) // 64):
            if not self._words:
                batch = self._rng.integers(0, 2**64, size=self._batch, dtype=np.uint64)
                self._words = batch.tolist()
                self._batch = min(2 * self._batch, 4096)
            value = (value << 64) | self._words.pop()
        return value & ((1 << bits) - 1)

    def below(self, bound: int) -> int:
        """A uniform integer in [0, bound), exactly: rejection sampling on whole bit strings."""
        bits = max(bound - 1, 1).bit_length()
        while True:
            value = self.take(bits)
            if value < bound:
                return value


def _bernoulli(numerator: int, denominator: int, rng: _RandomBits) -> bool:
    """Bernoulli(numerator / denominator), exactly."""
    return rng.below(denominator) < numerator


def _bernoulli_exp(numerator: int, denominator: int, rng: _RandomBits) -> bool:
    """Bernoulli(exp(-gamma)) for rational gamma = numerator / denominator >= 0 (CKS
    Algorithm 1), with integer arithmetic only."""
    while numerator > denominator:
        # exp(-gamma) = exp(-1) * exp(-(gamma - 1)); stop at the first failed factor.
        if not _bernoulli_exp(1, 1, rng):
            return False
        numerator -= denominator
    k = 1
    while _bernoulli(numerator, denominator * k, rng):
        k += 1
    return k % 2 == 1


def discrete_laplace(scale: int, rng: _RandomBits) -> int:
    """One draw from the discrete Laplace: P(x) proportional to exp(-|x| / scale), for an integer
    scale >= 1 (CKS Algorithm 2 with s = 1)."""
    while True:
        u = rng.below(scale)
        if not _bernoulli_exp(u, scale, rng):
            continue
        v = 0
        while _bernoulli_exp(1, 1, rng):
            v += 1
        magnitude = u + scale * v
        negative = _bernoulli(1, 2, rng)
        if negative and magnitude == 0:
            continue
        return -magnitude if negative else magnitude


def discrete_gaussian(sigma2: float | Fraction, rng: np.random.Generator, size: int = 1
                      ) -> np.ndarray:
    """``size`` exact draws from N_Z(0, sigma2): P(x) proportional to exp(-x^2 / (2 sigma2)) on
    the integers (CKS Algorithm 3), as an int64 array.

    Privacy: adding it to an integer-valued query of l2 sensitivity Delta is
    (Delta^2 / (2 sigma2))-zCDP (CKS Theorem 4), the same cost as the continuous Gaussian.
    Float ``sigma2`` is rounded up to a multiple of 2^-30 first.

    Supports sigma2 up to ``MAX_SIGMA2`` = 2^92 (sigma = 2^46; every draw then stays below 2^52
    in magnitude but with probability below 2 e^-2048, so it adds exactly to float64 values);
    a larger one is refused (``check_variance``), before anything is drawn.

    Raises
    ------
    InvalidParameterError
        ``sigma2`` not positive, or above ``MAX_SIGMA2`` (or infinite).
    """
    sigma2 = check_variance(sigma2)
    t = math.floor(math.sqrt(sigma2)) + 1
    # Acceptance exponent (|y| - sigma2 / t)^2 / (2 sigma2) = (|y| t q - p)^2 / (2 t^2 q p) with
    # sigma2 = p / q: one common integer denominator for every y.
    p, q = sigma2.numerator, sigma2.denominator
    denominator = 2 * t * t * q * p
    bits = _RandomBits(rng)
    out = np.empty(size, dtype=np.int64)
    for i in range(size):
        while True:
            y = discrete_laplace(t, bits)
            if _bernoulli_exp((abs(y) * t * q - p) ** 2, denominator, bits):
                out[i] = y
                break
    return out


def check_variance(sigma2: float | Fraction) -> Fraction:
    """``sigma2`` as ``rational_variance`` rounds it, if ``discrete_gaussian`` supports it: at
    most ``MAX_SIGMA2`` (2^92). A caller may ask before it charges a budget: the variance is
    public (a sensitivity over 2 rho).

    Parameters
    ----------
    sigma2 : float or Fraction
        The variance (positive).

    Returns
    -------
    Fraction
        The variance, exact (a float rounded up to a multiple of 2^-30).

    Raises
    ------
    InvalidParameterError
        ``sigma2`` not positive, or above ``MAX_SIGMA2`` (or infinite: 1 / rho overflowed).
    """
    if not isinstance(sigma2, Fraction) and sigma2 == math.inf:
        value: Fraction | float = math.inf
    else:
        value = rational_variance(sigma2)
    if value > MAX_SIGMA2:
        raise InvalidParameterError(
            f"secure noise: the discrete Gaussian's variance {float(value):.3g} is above "
            f"2^92 = {float(MAX_SIGMA2):.3g} (sigma above 2^46), the most its exact sampler "
            f"supports (larger integer noise would not add exactly to float64 values); give a "
            f"larger rho or use secure_noise=False")
    assert isinstance(value, Fraction)
    return value


def rational_variance(sigma2: float | Fraction) -> Fraction:
    """sigma2 as an exact fraction, rounded up to a multiple of 2^-30 when it is a float."""
    if isinstance(sigma2, Fraction):
        value = sigma2
    else:
        if not (np.isfinite(sigma2) and sigma2 > 0):
            raise InvalidParameterError(f"the discrete Gaussian needs sigma^2 > 0, got {sigma2}")
        scale = 1 << SIGMA2_BITS
        value = Fraction(math.ceil(Fraction(sigma2) * scale), scale)
    if value <= 0:
        raise InvalidParameterError(f"the discrete Gaussian needs sigma^2 > 0, got {value}")
    return value


def discrete_gaussian_pmf(values: np.ndarray, sigma2: float) -> np.ndarray:
    """The exact probabilities of N_Z(0, sigma2) at integer ``values`` (normalised numerically
    over +-(12 sigma + 10), where the omitted mass is below 1e-30)."""
    sigma2 = float(rational_variance(sigma2))
    span = int(12 * math.sqrt(sigma2)) + 10
    support = np.arange(-span, span + 1)
    weights = np.exp(-(support.astype(float) ** 2) / (2 * sigma2))
    total = weights.sum()
    return np.exp(-(np.asarray(values, dtype=float) ** 2) / (2 * sigma2)) / total
