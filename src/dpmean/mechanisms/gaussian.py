"""The Gaussian mechanism for vectors (Bun-Steinke 2016, Lemma 2.1 of IOME), in floating point
or discretised onto a grid with exact discrete Gaussian noise (Canonne-Kamath-Steinke 2020)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import ndtri

from ..accounting import PrivacyLedger
from ..errors import InvalidParameterError
from ..events import gaussian_event
from .discrete_gaussian import check_variance, discrete_gaussian

# The secure grid's spacing gamma keeps the rounding slack, 2 gamma sqrt(k), at most this
# fraction of the sensitivity: the discretised release costs at most 0.1% more noise.
GRID_SLACK = 1e-3
# A secure release's sum is split down to this fraction of its grid step over the rows of one
# unit of the release (``estimators.clipped.release_sums``, ``engines.grid_sums``): the split
# moves a mean by at most half of it, the combination's roundings by a fifth of it more, so
# the computed statistic lies within FINEST_FRACTION gamma of the exact one (what intervals
# add to the grid's rounding).
FINEST_FRACTION = 1.0 / 8.0


def normal_isf(p: float | np.ndarray) -> Any:
    """The standard normal's upper quantile z, P(Z > z) = p (a number or an array):
    scipy.stats.norm.isf's own formula, -ndtri(p), the same values without scipy.stats (0.6 s
    of a command's start, and a per-call overhead that searches and intervals paid often)."""
    return -ndtri(p)


def gaussian_noise_std(sensitivity: float, rho: float) -> float:
    """Noise standard deviation Delta / sqrt(2 rho) that makes a query of l2 sensitivity
    ``Delta`` rho-zCDP."""
    if not (np.isfinite(rho) and rho > 0):
        raise InvalidParameterError(f"the Gaussian mechanism needs rho > 0, got {rho}")
    if not (np.isfinite(sensitivity) and sensitivity >= 0):
        raise InvalidParameterError(f"sensitivity must be finite and >= 0, got {sensitivity}")
    return float(sensitivity) / np.sqrt(2.0 * rho)


def gaussian_mechanism(
    value: np.ndarray, sensitivity: float, rho: float, rng: np.random.Generator, *,
    ledger: PrivacyLedger, stage: str, secure: bool = False,
) -> np.ndarray:
    """Release ``value + N(0, Delta^2 / (2 rho) I)``, charging ``rho`` to ``stage`` first.

    Privacy: rho-zCDP for any query whose l2 sensitivity under replace-one neighbours is at
    most ``sensitivity`` (the caller states it): noise std sigma = Delta / sqrt(2 rho) costs
    Delta^2 / (2 sigma^2) = rho (Bun-Steinke 2016, Prop. 1.6), which is what the ledger is
    charged, before anything is drawn. Works for scalars and arrays alike.

    ``secure=False`` draws floating-point Gaussians: the guarantee is for the ideal real-valued
    mechanism; the low bits of a float sample can leak (Mironov 2012). ``secure=True`` releases
    on a grid instead, with exact integer sampling.
    """
    gaussian_noise_std(sensitivity, rho)  # validates both before anything is charged
    if secure:
        check_secure_noise(sensitivity, rho, int(np.size(value)))
    # sigma = Delta / sqrt(2 rho) costs Delta^2 / (2 sigma^2) = rho exactly (charged as rho, not
    # recomputed through sigma, which would only add rounding).
    ledger.charge(stage, rho, gaussian_event(rho, secure))
    return gaussian_noise(value, sensitivity, rho, rng, secure=secure)


def gaussian_noise(
    value: np.ndarray, sensitivity: float, rho: float, rng: np.random.Generator, *,
    secure: bool = False,
) -> np.ndarray:
    """The Gaussian mechanism's draw without its charge: for mechanisms that charge their whole
    stage once and then draw in parts (a search's counts, a local protocol's users).

    Same distribution and guarantee as ``gaussian_mechanism``; the caller charges."""
    if secure:
        return _discretised_gaussian(value, sensitivity, rho, rng)
    std = gaussian_noise_std(sensitivity, rho)
    value = np.asarray(value, dtype=np.float64)
    return value + rng.normal(0.0, std, size=value.shape)


def _discretised_gaussian(
    value: np.ndarray, sensitivity: float, rho: float, rng: np.random.Generator
) -> np.ndarray:
    """Release ``gamma (round(value / gamma) + Z)`` with Z exact discrete Gaussian on Z^k.

    gamma is a power of two with 2 gamma sqrt(k) <= 1e-3 Delta. The statistic is computed in
    floating point, within gamma / 2 of its exact value in each coordinate (assumed: float64
    errs by about 2^-52 |value| times a few, so |value| below ~2^48 gamma; boxes far from the
    origin are moved to it first, ``MeanEstimator.far_box_offset``), and rounding to the grid
    moves it by at most gamma / 2 more. So each coordinate of the rounded query lies within one
    grid step of the exact one, and its l2 sensitivity is at most Delta / gamma + 2 sqrt(k) in
    grid units; Z ~ N_Z(0, s^2) with s = that / sqrt(2 rho) makes it rho-zCDP (CKS 2020,
    Theorem 4), and gamma s <= (1 + 1e-3) Delta / sqrt(2 rho). Every released number is an
    exact multiple of gamma, sampled with integer arithmetic: no floating-point noise to
    attack.
    """
    value = np.asarray(value, dtype=np.float64)
    gaussian_noise_std(sensitivity, rho)  # validates both
    if sensitivity == 0:
        return value.copy()
    gamma, variance = _grid(sensitivity, rho, value.size)
    noise = discrete_gaussian(variance, rng, size=value.size)
    return gamma * (np.rint(value / gamma) + noise.reshape(value.shape))


def _grid(sensitivity: float, rho: float, size: int) -> tuple[float, float]:
    """The secure release's grid step gamma for ``size`` coordinates, and its discrete
    Gaussian's variance in grid units, (l2 sensitivity in grid units)^2 / (2 rho)
    (``_discretised_gaussian``): public, from the sensitivity, rho and the shape. One
    expression for the draw and the pre-charge check (``check_secure_noise``)."""
    k = max(size, 1)
    gamma = 2.0 ** math.floor(math.log2(GRID_SLACK * sensitivity / (2.0 * math.sqrt(k))))
    grid_sensitivity = sensitivity / gamma + 2.0 * math.sqrt(k)
    return gamma, grid_sensitivity**2 / (2.0 * rho)


def secure_grid(sensitivity: float, rho: float, size: int) -> float:
    """The grid step gamma of a secure release of ``size`` coordinates (``_discretised_gaussian``):
    public, from the sensitivity (> 0), rho and the shape. Sums behind such a release are split
    on grids finer than it (``engines.grid_sums``)."""
    return _grid(sensitivity, rho, size)[0]


def check_secure_noise(sensitivity: float, rho: float, size: int) -> None:
    """Refuse, before a charge, a secure Gaussian release whose discrete Gaussian on the grid
    is beyond what the exact sampler draws (``discrete_gaussian.check_variance``: its variance,
    about 8e6 size / rho in grid units, above 2^92; rho below about 1e-21 for a few
    coordinates). Public: the sensitivity, rho and the number of coordinates.

    Parameters
    ----------
    sensitivity : float
        The release's l2 sensitivity (non-negative).
    rho : float
        Its zCDP cost (positive).
    size : int
        How many coordinates it releases.

    Raises
    ------
    InvalidParameterError
        The variance is above the sampler's limit.
    """
    if sensitivity > 0:
        check_variance(_grid(sensitivity, rho, size)[1])
