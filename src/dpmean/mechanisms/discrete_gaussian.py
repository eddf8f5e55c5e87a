"""Exact discrete Gaussian (and discrete Laplace) samplers with integer arithmetic.

Canonne, Kamath, Steinke 2020, "The discrete Gaussian for differential privacy", Algorithms 1-3.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..errors import InvalidParameterError

# sigma^2 is rounded UP to a multiple of 2^-_SIGMA2_BITS, so the sampled noise is never narrower
# than the one the privacy analysis asked for.
_SIGMA2_BITS = 30


def _uniform_below(bound: int, rng: np.random.Generator) -> int:
    """A uniform integer in [0, bound), exactly: rejection sampling on whole random bytes."""
    bits = max(bound - 1, 1).bit_length()
    nbytes = (bits + 7) // 8
    mask = (1 << bits) - 1
    while True:
        value = int.from_bytes(rng.bytes(nbytes), "little") & mask
        if value < bound:
            return value


def _bernoulli(p: Fraction, rng: np.random.Generator) -> bool:
    return _uniform_below(p.denominator, rng) < p.numerator


def _bernoulli_exp(gamma: Fraction, rng: np.random.Generator) -> bool:
    """A Bernoulli(exp(-gamma)) draw for rational gamma >= 0 (CKS Algorithm 1)."""
    while gamma > 1:
        # exp(-gamma) = exp(-1)^floor(gamma) * exp(-(gamma - floor(gamma))).
        if not _bernoulli_exp(Fraction(1), rng):
            return False
        gamma -= 1
    k = 1
    while _bernoulli(gamma / k, rng):
        k += 1
    return k % 2 == 1


def discrete_laplace(scale: int, rng: np.random.Generator) -> int:
    """One draw from the discrete Laplace: P(x) proportional to exp(-|x| / scale), for an integer
    scale >= 1 (CKS Algorithm 2 with s = 1)."""
    while True:
        u = _uniform_below(scale, rng)
        if not _bernoulli_exp(Fraction(u, scale), rng):
            continue
        v = 0
        while _bernoulli_exp(Fraction(1), rng):
            v += 1
        magnitude = u + scale * v
        negative = _bernoulli(Fraction(1, 2), rng)
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
    """
    sigma2 = rational_variance(sigma2)
    t = math.floor(math.sqrt(sigma2)) + 1
    out = np.empty(size, dtype=np.int64)
    for i in range(size):
        while True:
            y = discrete_laplace(t, rng)
            gamma = (abs(y) - sigma2 / t) ** 2 / (2 * sigma2)
            if _bernoulli_exp(gamma, rng):
                out[i] = y
                break
    return out


def rational_variance(sigma2: float | Fraction) -> Fraction:
    """sigma2 as an exact fraction, rounded up to a multiple of 2^-30 when it is a float."""
    if isinstance(sigma2, Fraction):
        value = sigma2
    else:
        if not (np.isfinite(sigma2) and sigma2 > 0):
            raise InvalidParameterError(f"the discrete Gaussian needs sigma^2 > 0, got {sigma2}")
        scale = 1 << _SIGMA2_BITS
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
