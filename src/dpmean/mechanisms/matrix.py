"""The Gaussian mechanism for symmetric matrices (CoinPress, Biswas et al. 2020, MVC step).

Noise on the upper triangle, mirrored below: the only place dpmean adds noise to a matrix.
"""

from __future__ import annotations

import numpy as np

from ..accounting import PrivacyLedger
from ..errors import InvalidParameterError
from ..events import gaussian_event
from .gaussian import check_secure_noise, gaussian_noise, gaussian_noise_std


def symmetric_gaussian_mechanism(
    value: np.ndarray, sensitivity: float, rho: float, rng: np.random.Generator, *,
    ledger: PrivacyLedger, stage: str, secure: bool = False,
) -> np.ndarray:
    """Release the symmetric (k, k) ``value`` + Y, Y symmetric with its entries on and above the
    diagonal i.i.d. N(0, Delta^2 / (2 rho)).

    Privacy: rho-zCDP (charged to ``stage`` before drawing) when the Frobenius sensitivity of
    ``value`` under replace-one neighbours is at most ``sensitivity`` = Delta (the caller states
    it). The release is a function of the upper triangle, whose l2 norm is at most the
    Frobenius norm of a symmetric matrix (each off-diagonal pair counted once instead of
    twice), so it is the Gaussian mechanism on a
    vector of l2 sensitivity at most Delta. For a second moment (1/n) sum c_i c_i^T of rows
    clipped to norm gamma, Delta = sqrt(2) gamma^2 / n (||c c^T - e e^T||_F^2 <= 2 gamma^4).

    ``secure=True`` releases the upper triangle (k = d (d + 1) / 2 entries) with the secure
    Gaussian mechanism of ``gaussian_noise`` (rounded to a grid, exact discrete Gaussian noise
    for the grid sensitivity; same rho) and mirrors it: every entry is a multiple of the grid.
    """
    value = np.asarray(value, dtype=np.float64)
    if value.ndim != 2 or value.shape[0] != value.shape[1]:
        raise InvalidParameterError(f"expected a square matrix, got shape {value.shape}")
    std = gaussian_noise_std(sensitivity, rho)
    upper = np.triu_indices(value.shape[0])
    if secure:
        # Refused before the charge, as ``gaussian_mechanism`` refuses (public values only).
        check_secure_noise(sensitivity, rho, len(upper[0]))
    # Delta^2 / (2 std^2): the Gaussian mechanism's cost.
    ledger.charge(stage, rho, gaussian_event(rho, secure))
    if secure:
        out = np.zeros_like(value)
        out[upper] = gaussian_noise(value[upper], sensitivity, rho, rng, secure=True)
        return out + np.triu(out, 1).T
    noise = np.triu(rng.normal(0.0, std, size=value.shape))
    return value + noise + np.triu(noise, 1).T
