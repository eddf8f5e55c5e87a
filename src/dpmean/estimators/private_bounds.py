"""A private box when no bounds are given: noisy log-scale histograms over all float64 magnitudes.

The idea of Google's approximate bounds (as PyDP applies it when bounds are omitted): every value
falls in one bin of a public grid of signed powers of two covering the whole float64 range, the
bins' counts are released with Gaussian noise, and each coordinate's box runs from the lowest to
the highest bin whose noisy count clears a threshold that an empty bin passes with probability
at most ``beta`` (all bins together). Nothing about the grid comes from the data.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from ..accounting import PrivacyLedger
from ..engines import Engine
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
# At 1e-4 (tau = 448 there) neither happened in 500 boxes each at d = 8, 32 and 128.
BOUNDS_BETA = 1e-4
# Levels (powers of two) below the data's lowest loud level, and above its highest, that the
# other sign's window also sums (``_mirror_one_sided``): that sign's mass may sit a little
# nearer zero, or a little farther out, than the loud sign's.
MIRROR_BELOW = 2
MIRROR_ABOVE = 1
# Bins added beyond the outermost loud bin on each side: up to tau rows may lie past it, and
# clamping them would bias the release; one more power of two holds all but a sliver of a
# tail that decays at all (a Gaussian's past 2 sigma: from 2.3 % to 0.003 % of the rows).
MARGIN_BINS = 1
# Binary exponents of float64 magnitudes: |v| in [2^(e-1), 2^e) for e = frexp(v)[1], from the
# smallest subnormal (e = -1073) to the largest finite value (e = 1024). Level e of the positive
# side also holds 0 at its lowest level.
_E_MIN, _E_MAX = -1073, 1024
_LEVELS = _E_MAX - _E_MIN + 1
BINS = 2 * _LEVELS  # negative levels (mirrored) then positive levels, in increasing value


def signed_bins(values: np.ndarray) -> np.ndarray:
    """The bin of each value on the public grid, 0 .. BINS - 1, non-decreasing in the value:
    negative values by decreasing magnitude, then 0 and positive values by increasing one."""
    exponent = np.frexp(values)[1]
    level = np.where(values == 0.0, 0, np.clip(exponent, _E_MIN, _E_MAX) - _E_MIN)
    return np.where(values < 0.0, _LEVELS - 1 - level, _LEVELS + level)


def bin_edges(bins: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lower and upper ends of each bin (the largest bin ends at the largest float64)."""
    bins = np.asarray(bins)
    positive = bins >= _LEVELS
    level = np.where(positive, bins - _LEVELS, _LEVELS - 1 - bins)
    small = np.where(level == 0, 0.0, np.ldexp(1.0, level + _E_MIN - 1))
    with np.errstate(over="ignore"):
        large = np.minimum(np.ldexp(1.0, level + _E_MIN), np.finfo(np.float64).max)
    return np.where(positive, small, -large), np.where(positive, large, -small)


def private_box(engine: Engine, rho: float, rng: np.random.Generator, *,
                ledger: PrivacyLedger, stage: str = "bounds", beta: float = BOUNDS_BETA,
                secure: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """A private box (lo, hi) for the d coordinates of ``engine`` (which must not clamp them).

    Each coordinate's histogram over the BINS public bins; replacing one row moves one count
    down and one up in each coordinate, so the d x BINS counts have l2 sensitivity sqrt(2 d):
    one Gaussian mechanism of ``rho`` (charged to ``stage``), drawn a block of columns at a
    time. Two spans of loud bins are read from the noisy counts (post-processing):

    - the pooled span, of the column histograms' sum (noise sigma sqrt(d) a bin, threshold
      sigma sqrt(d) z(beta / BINS)): all n d values together, so its bins clear their noise at
      every d where one column's (noise sigma, against at most n rows a bin) would not;
    - each column's own span, its bins above tau = sigma z(beta / (d BINS)), which widens the
      pooled span for a column that reaches beyond it (a column of a larger scale).

    Column j's box is the union of the two spans (the pooled one alone where its own has no
    loud bin), widened by MARGIN_BINS bins on each side; NaN where neither has a loud bin (too
    few rows for the budget). Columns alike in scale so share one box: powers of two are
    coarse, and boxes that differ by a bin as the noise falls would make the box-normalised
    release anisotropic (cm's error 1.22x at d = 8). An empty bin clears its threshold with
    probability at most beta for each of the two readings.
    """
    d = engine.d
    sensitivity = float(np.sqrt(2.0 * d))
    sigma = gaussian_noise_std(sensitivity, rho)
    tau = sigma * float(norm.isf(beta / (d * BINS)))
    ledger.charge(stage, rho)
    first, last = np.zeros(d, dtype=np.int64), np.zeros(d, dtype=np.int64)
    found = np.zeros(d, dtype=bool)
    pooled = np.zeros(BINS)
    # Columns a block: the engine's own width, and at most 64 MiB of counts.
    width = min(engine.column_width(), max(1, (64 << 20) // (8 * BINS)))
    for cols, values in engine.column_blocks(IDENTITY, width):
        k = values.shape[1]
        flat = signed_bins(values) + BINS * np.arange(k)
        counts = np.bincount(flat.ravel(), minlength=k * BINS).reshape(k, BINS)
        noisy = gaussian_noise(counts.astype(np.float64), sensitivity, rho, rng, secure=secure)
        pooled += noisy.sum(axis=0)
        found[cols], first[cols], last[cols] = _loud_spans(noisy, tau, sigma, beta / (2 * d))
    sigma_pooled = sigma * float(np.sqrt(d))
    any_loud, pooled_first, pooled_last = _loud_spans(
        pooled[None, :], sigma_pooled * float(norm.isf(beta / BINS)), sigma_pooled, beta / 2)
    if any_loud[0]:
        first = np.where(found, np.minimum(first, pooled_first[0]), pooled_first[0])
        last = np.where(found, np.maximum(last, pooled_last[0]), pooled_last[0])
        found[:] = True
    lo = np.where(found, bin_edges(np.maximum(first - MARGIN_BINS, 0))[0], np.nan)
    hi = np.where(found, bin_edges(np.minimum(last + MARGIN_BINS, BINS - 1))[1], np.nan)
    return lo, hi


def _loud_spans(noisy: np.ndarray, tau: float, sigma: float,
                beta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(found, first, last) of each row of noisy counts (noise sd ``sigma``): the lowest and
    highest bin above ``tau``, reaching to the other sign as ``_mirror_one_sided`` finds."""
    loud = noisy > tau
    first = np.argmax(loud, axis=1)
    last = BINS - 1 - np.argmax(loud[:, ::-1], axis=1)
    found = np.asarray(loud.any(axis=1))
    for j in np.flatnonzero(found):
        first[j], last[j] = _mirror_one_sided(noisy[j], int(first[j]), int(last[j]), sigma,
                                              beta)
    return found, first, last


def _mirror_one_sided(noisy: np.ndarray, first: int, last: int, sigma: float,
                      beta: float) -> tuple[int, int]:
    """(first, last) loud bins of one column, widened to the other sign when all loud bins
    are of one sign but the other sign holds significant mass at the same magnitudes.

    Data around zero split over both signs and several powers of two: each bin holds a fraction
    of the rows, and the bins of one sign may all fall under tau, leaving a box that clamps
    away half the data (measured: N(0, 1), n = 4000, d = 128, rho = 1/4, a fifth of releases
    with beta = 1e-4). The other sign's bins from MIRROR_BELOW levels below the lowest loud
    level to MIRROR_ABOVE above the highest are summed instead (W bins: noise sd
    sigma sqrt(W)); if that sum
    clears sigma sqrt(W) z(beta) (an empty window passes with probability at most beta), the
    box reaches the same magnitude on the other sign. Post-processing of the noisy counts."""
    if first < _LEVELS <= last:  # already both signs
        return first, last
    positive = first >= _LEVELS
    top = (last if positive else _LEVELS - 1 - first) - (_LEVELS if positive else 0)
    low = (first - _LEVELS) if positive else _LEVELS - 1 - last
    levels = np.arange(max(0, low - MIRROR_BELOW), min(_LEVELS - 1, top + MIRROR_ABOVE) + 1)
    other = _LEVELS - 1 - levels if positive else _LEVELS + levels
    total = float(np.sum(noisy[other]))
    if total <= sigma * np.sqrt(levels.size) * float(norm.isf(beta)):
        return first, last
    return (_LEVELS - 1 - top, last) if positive else (first, _LEVELS + top)


__all__ = ["BINS", "BOUNDS_BETA", "BOUNDS_SHARE", "bin_edges", "private_box", "signed_bins"]
