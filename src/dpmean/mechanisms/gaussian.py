"""The Gaussian mechanism for vectors (Bun-Steinke 2016, Lemma 2.1 of IOME).

The only place in dpmean that adds Gaussian noise to a released statistic.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidParameterError


def gaussian_noise_std(sensitivity: float, rho: float) -> float:
    """Noise standard deviation Delta / sqrt(2 rho) that makes a query of l2 sensitivity
    ``Delta`` rho-zCDP."""
    if not (np.isfinite(rho) and rho > 0):
        raise InvalidParameterError(f"the Gaussian mechanism needs rho > 0, got {rho}")
    if not (np.isfinite(sensitivity) and sensitivity >= 0):
        raise InvalidParameterError(f"sensitivity must be finite and >= 0, got {sensitivity}")
    return float(sensitivity) / np.sqrt(2.0 * rho)


def gaussian_mechanism(
    value: np.ndarray, sensitivity: float, rho: float, rng: np.random.Generator
) -> np.ndarray:
    """Release ``value + N(0, Delta^2 / (2 rho) I)``.

    Privacy: rho-zCDP for any query whose l2 sensitivity under replace-one neighbours is at
    most ``sensitivity`` (the caller states it). Works for scalars and arrays alike.
    """
    std = gaussian_noise_std(sensitivity, rho)
    value = np.asarray(value, dtype=np.float64)
    return value + rng.normal(0.0, std, size=value.shape)
