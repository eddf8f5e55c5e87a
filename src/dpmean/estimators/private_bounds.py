"""A private box when no bounds are given: noisy log-scale histograms over all float64 magnitudes.

The idea of Google's approximate bounds (as PyDP applies it when bounds are omitted): every value
falls in one bin of a public grid of powers of two covering the whole float64 range of
magnitudes, the bins' counts are released with Gaussian noise, and the box reaches the highest
bin whose noisy count clears a threshold that an empty bin passes with probability at most
``beta`` (all bins together). Nothing about the grid comes from the data.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from ..accounting import PrivacyLedger
from ..engines import Engine
from ..events import gaussian_event
from ..mechanisms import gaussian_noise, gaussian_noise_std
from ..transforms import IDENTITY

# The share of the budget a release without bounds spends on its private box (public).
BOUNDS_SHARE = 0.1
# The probability that some empty bin's noise clears the threshold (union bound over all bins).
# Both ways of being wrong were measured (N(0, 1) rows, n = 4000, 10% of rho = 1/4):
# - too large a beta lets a spurious bin stretch a column's box up to 1.8e308, and the release
#   is garbage: at 0.01, 1 release in 60 got a box to 2e62 (d = 32; cm's error 4 where 0.03 is
#   usual, iome's 1e56);
# - too small a beta raises the threshold above the data's own bins: at 1e-9 every release at
#   d = 128 found no box and fell back to the zero vector (its largest bins hold about 600
#   rows; tau = 566).
# At 1e-4 (tau = 448 there) neither happened in 500 boxes each at d = 8, 32 and 128. (Measured
# on the earlier grid of signed bins with per-column boxes; the pooled reach now finds a box
# where a column's own bins fall short.)
BOUNDS_BETA = 1e-4
# Powers of two added above the highest loud bin: up to tau rows may lie past it, and clamping
# them would bias the release; one more power of two holds all but a sliver of a tail that
# decays at all (a Gaussian's past 2 sigma: from 2.3 % to 0.003 % of the rows).
MARGIN_LEVELS = 1
# Binary exponents of float64 magnitudes: |v| in [2^(e-1), 2^e) for e = frexp(v)[1], from the
# smallest subnormal (e = -1073) to the largest finite value (e = 1024); 0 is in the lowest.
_E_MIN, _E_MAX = -1073, 1024
LEVELS = _E_MAX - _E_MIN + 1


def magnitude_levels(values: np.ndarray) -> np.ndarray:
    """The bin of each value's magnitude on the public grid, 0 .. LEVELS - 1, non-decreasing
    in |value| (0 and the smallest subnormals in bin 0)."""
    exponent = np.frexp(values)[1]
    return np.where(values == 0.0, 0, np.clip(exponent, _E_MIN, _E_MAX) - _E_MIN)


def level_top(levels: np.ndarray) -> np.ndarray:
    """The upper end of each magnitude bin (the highest ends at the largest float64)."""
    with np.errstate(over="ignore"):
        top = np.ldexp(1.0, np.asarray(levels) + _E_MIN)
    return np.minimum(top, np.finfo(np.float64).max)


def private_box(engine: Engine, rho: float, rng: np.random.Generator, *,
                ledger: PrivacyLedger, stage: str = "bounds", beta: float = BOUNDS_BETA,
                secure: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """A private box (lo, hi) = (-M, M) for the d coordinates of ``engine`` (which must not
    clamp them).

    Each coordinate's histogram of magnitudes over the LEVELS public bins; replacing one row
    moves one count down and one up in each coordinate, so the d x LEVELS counts have l2
    sensitivity sqrt(2 d): one Gaussian mechanism of ``rho`` (charged to ``stage``), drawn a
    block of columns at a time, noise sigma a count. Post-processing then reads two reaches:

    - the pooled reach, the highest bin of the histograms' sum (noise sigma sqrt(d) a bin)
      above sigma sqrt(d) z(beta / LEVELS): all n d values together, so it is found at every
      d where a column's own bins (at most n rows against noise sigma) would not be;
    - each column's own reach, its highest bin above tau = sigma z(beta / (d LEVELS)), which
      lifts the pooled one for a column of a larger scale than most.

    M_j is the top of the higher of the two (the pooled one where the column's own has no loud
    bin) times 2^MARGIN_LEVELS; NaN where neither has a loud bin (too few rows for the
    budget). The box is symmetric: a one-sided box would put its inner edge where the bins
    near zero fall under the threshold, and clamp whatever lies past it, up to a few tau rows
    of each column; and columns alike share one width, where reaches a bin apart as the noise
    falls would make the box-normalised release anisotropic. An empty bin clears its
    threshold with probability at most beta for each of the two readings.
    """
    d = engine.d
    sensitivity = float(np.sqrt(2.0 * d))
    sigma = gaussian_noise_std(sensitivity, rho)
    tau = sigma * float(norm.isf(beta / (d * LEVELS)))
    ledger.charge(stage, rho, gaussian_event(rho, secure))
    reach = np.full(d, -1)
    pooled = np.zeros(LEVELS)
    # Columns a block: the engine's own width, and at most 64 MiB of counts.
    width = min(engine.column_width(), max(1, (64 << 20) // (8 * LEVELS)))
    for cols, values in engine.column_blocks(IDENTITY, width):
        k = values.shape[1]
        flat = magnitude_levels(values) + LEVELS * np.arange(k)
        counts = np.bincount(flat.ravel(), minlength=k * LEVELS).reshape(k, LEVELS)
        noisy = gaussian_noise(counts.astype(np.float64), sensitivity, rho, rng, secure=secure)
        pooled += noisy.sum(axis=0)
        reach[cols] = _highest_loud(noisy, tau)
    tau_pooled = sigma * float(np.sqrt(d)) * float(norm.isf(beta / LEVELS))
    reach = np.maximum(reach, _highest_loud(pooled[None, :], tau_pooled)[0])
    top = np.where(reach >= 0, level_top(np.minimum(reach + MARGIN_LEVELS, LEVELS - 1)), np.nan)
    return -top, top


def _highest_loud(noisy: np.ndarray, tau: float) -> np.ndarray:
    """The highest bin above ``tau`` of each row of noisy counts, -1 where none is."""
    loud = noisy > tau
    return np.where(loud.any(axis=1), LEVELS - 1 - np.argmax(loud[:, ::-1], axis=1), -1)


__all__ = ["BOUNDS_BETA", "BOUNDS_SHARE", "LEVELS", "level_top", "magnitude_levels",
           "private_box"]
