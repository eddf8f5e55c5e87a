"""A private box when no bounds are given: noisy log-scale histograms over all float64 magnitudes.

The idea of Google's approximate bounds (as PyDP applies it when bounds are omitted): every
nonzero value falls in one bin of a public grid, its sign and its magnitude's power of two over
the whole float64 range, the bins' counts are released with Gaussian noise, and the box reaches
the highest bin whose noisy count clears a threshold that an empty bin passes with probability
at most ``beta`` (all bins together), on the sides whose sign the noisy counts show (0 on the
other). Nothing about the grid comes from the data.
"""

from __future__ import annotations

import numpy as np

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
# Deciding that one sign is absent (a one-sided box, edge 0): each column's sum of the
# SIGN_WINDOW bins up to its reach is tested, and a sign with no values is declared present
# with probability at most SIGN_BETA. A false "present" only gives the symmetric box (on MNIST
# 1.15-1.31x the pixel box [0, 255], where the one-sided box is 1.00-1.10x); a false "absent"
# clamps that sign's values, so SIGN_BETA is far above BOUNDS_BETA. Values below the window
# are less than 2^-SIGN_WINDOW of the box's edge: clamping them moves a column's mean by less.
SIGN_BETA = 0.01
# Powers of two a column's own reach may lie below the pooled reach and still be lifted to it
# (``private_box``): 2^10 = 1024 covers the spread of scales on every grid of docs/results.md
# below d = 1024 (Gaussian C's standard deviations d / i span a factor d, Gaussian B's at most d),
# where the shared reach was measured; beyond it the columns are apart (a table of ages, 0/1
# flags, incomes and timestamps) and each keeps its own.
OWN_SCALE_LEVELS = 10
# Powers of two by which wider columns may lift a column's box above its own values' reach
# before the release warns (``lifted``): 2^5 = 32 times the noise its own box would carry.
# Gaussian C's columns at d = 16 (standard deviations 16 to 1) are lifted by up to 4 and say
# nothing; an age column beside incomes at a small budget was lifted by 10 (a user trial).
LIFT_WARN_LEVELS = 5
SIGN_WINDOW = 8
# Binary exponents of float64 magnitudes: |v| in [2^(e-1), 2^e) for e = frexp(v)[1], from the
# smallest subnormal (e = -1073) to the largest finite value (e = 1024); 0 is in the lowest.
_E_MIN, _E_MAX = -1073, 1024
LEVELS = _E_MAX - _E_MIN + 1


def magnitude_levels(values: np.ndarray) -> np.ndarray:
    """The bin of each value's magnitude on the public grid, 0 .. LEVELS - 1, non-decreasing
    in |value| (0 and the smallest subnormals in bin 0)."""
    exponent = np.frexp(values)[1]
    return np.where(values == 0.0, 0, np.clip(exponent, _E_MIN, _E_MAX) - _E_MIN)


def signed_levels(values: np.ndarray) -> np.ndarray:
    """The signed bin of each value: a negative value's magnitude bin, LEVELS plus a positive
    value's, and 2 LEVELS for 0 (either sign of it), which is counted on neither side."""
    sign = np.where(values < 0.0, 0, np.where(values > 0.0, LEVELS, 2 * LEVELS))
    return np.where(values == 0.0, sign, magnitude_levels(values) + sign)


def signed_counts(values: np.ndarray) -> np.ndarray:
    """Each column's histogram of its nonzero values' signed magnitudes, shape (columns, 2,
    LEVELS), negative values first; zeros are not counted (a box's one-sided edge is 0, which
    holds them). One row moves at most one count down and one up in each column, so two data
    sets a row apart have counts at most sqrt(2 d) apart in l2.

    The bins are ``signed_levels``'; counted by a compiled loop over the rows
    (``engines.level_kernels``: numpy's frexp, two wheres and a bincount over a block's every
    value took 92% of a release without bounds, 2.2 of 2.4 s at n = 10^5, d = 1024)."""
    from ..engines.level_kernels import count_signed_levels  # numba: imported when used
    from ..parallel import over_row_ranges

    values = np.asarray(values)
    if values.dtype.kind != "f":
        values = values.astype(np.float64)  # integers and bools, as frexp reads them
    # A histogram per range of rows (one a thread), added: the same counts however split.
    parts: list[np.ndarray] = []

    def count(rows: slice) -> None:
        part = np.zeros((values.shape[1], 2, LEVELS), dtype=np.int64)
        count_signed_levels(values[rows], part, _E_MIN, _E_MAX)
        parts.append(part)

    over_row_ranges(values.shape[0], count, values=values.size)
    return np.sum(parts, axis=0).astype(np.float64)



def level_top(levels: np.ndarray) -> np.ndarray:
    """The upper end of each magnitude bin (the highest ends at the largest float64)."""
    with np.errstate(over="ignore"):
        top = np.ldexp(1.0, np.asarray(levels) + _E_MIN)
    return np.minimum(top, np.finfo(np.float64).max)


def private_box(engine: Engine, rho: float, rng: np.random.Generator, *,
                ledger: PrivacyLedger, stage: str = "bounds", beta: float = BOUNDS_BETA,
                secure: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A private box (lo, hi) for the d coordinates of ``engine`` (which must not clamp them),
    one-sided where the data show no values of one sign, which columns borrowed it, and by how
    many powers of two wider columns lifted each column's reach above its own.

    Each coordinate's histogram of signed magnitudes: the LEVELS public bins of negative
    values and the LEVELS of positive ones (zeros are counted on neither side: they make no
    sign present, and a one-sided edge, 0, holds them). Replacing one row moves at most one
    count down and one up in each coordinate, so the d x 2 LEVELS counts have l2 sensitivity
    sqrt(2 d), as with unsigned bins: one Gaussian mechanism of ``rho`` (charged to
    ``stage``), drawn a block of columns at a time, noise sigma a count. Post-processing then
    reads three histograms of each column, each sign's and the magnitudes' (both signs' counts
    summed, over sqrt(2) to keep noise sigma: the unsigned bins' reach at 1/sqrt(2) of their
    signal to noise, where a sign's own bins hold only its share of the values), and in each:

    - the pooled reach, the highest bin of the d histograms' sum (noise sigma sqrt(d) a bin)
      above sigma sqrt(d) z(beta / (3 LEVELS)): all n d values together, so it is found at
      every d where a column's own bins (at most n rows against noise sigma) would not be;
    - each column's own reach, its highest bin above tau = sigma z(beta / (3 d LEVELS)),
      which lifts the pooled one for a column of a larger scale than most.

    Column j's reach is the highest of these six, except where its own reach lies more than
    ``OWN_SCALE_LEVELS`` (10) powers of two below the pooled one: then its own three (mixed
    tables: without this an age column beside timestamps got the timestamps' [0, 2^32], and
    the age's mean came out 3,766). M_j is its top times 2^MARGIN_LEVELS. A sign
    is *present* when one of its own histograms' bins above is loud, or when
    ``_sign_present``'s tests over the sums of each column's SIGN_WINDOW bins up to the other
    sign's reach find it (neither, though a magnitude bin is loud: both). The box is [-M_j if
    negative values are present else 0, M_j if positive ones are else 0]; NaN where no bin is
    loud (too few rows for the budget, or only zeros).

    What a one-sided box clamps, and why it is bounded: the absent sign's values, which no
    test told from noise. Every one of its bins holds fewer than about tau rows in each column
    (sigma sqrt(d) z over all columns together), and each column's window sum fewer than about
    sigma sqrt(SIGN_WINDOW) z(SIGN_BETA / (2 d)) rows: the same order of rows as the tail past
    a loud bin that the far edge clamps, and less than M_j 2^-SIGN_WINDOW each below the window.
    Why the sign is decided for all columns at once, and why a present sign's edge is the
    reach of both: with each sign's own reach and a per-column decision (Gaussian B, Zipf
    variances (d/i)^alpha, d = 512, n = 10^4, 10% of rho = 1/4), alpha = 1's 23,000 negative
    values in 74 columns, most of them in columns whose own bins are under tau, were clamped
    (a bias of 2.4 in l2 against a sampling error of 0.6), and at alpha = 1.5 the pooled
    negative reach fell short of the wide columns' negative tails (a bias of 3.0). A false
    "present" costs only the symmetric box; a false "absent" clamps, hence SIGN_BETA > beta.

    Borrowed (the third array, bool): columns whose own histograms showed no loud bin, so that
    their box is the pooled reach's, in a table where some measured column lies more than
    ``OWN_SCALE_LEVELS`` below it (scales that differ that much): such a column may be of the
    small scale, with the large one's box and noise (a 3% fraud flag beside timestamps, n =
    5000, rho = 0.1: +-2^32 and a release of 10^5-10^6, found by a user trial). Post-processing
    of the same noisy counts.

    Lifted (the fourth array, int): for each column with an own reach, the powers of two by
    which wider columns lifted its reach (``_lifted_by_others``); 0 for the others. A column
    lifted far is of a smaller scale than the widest columns whose box it shares, and its
    release carries that box's noise (ages beside incomes at rho = 0.05: [0, 2^18], lifted by
    10, releases of 0 to 165 for a mean of 56). Post-processing of the same counts.
    """
    d = engine.d
    sensitivity = float(np.sqrt(2.0 * d))
    sigma = gaussian_noise_std(sensitivity, rho)
    bins = 2 * LEVELS
    # Three readings a magnitude (each sign, and both signs' sum scaled to noise sigma), all
    # in one union bound.
    from scipy.stats import norm  # imported when used: 0.6 s
    tau = sigma * float(norm.isf(beta / (3 * d * LEVELS)))
    tau_pooled = sigma * float(np.sqrt(d)) * float(norm.isf(beta / (3 * LEVELS)))
    ledger.charge(stage, rho, gaussian_event(rho, secure))
    # The noisy counts are kept for the sign tests, whose windows need the pooled reach (known
    # after the last block): in float32, 16 KiB a column (the reaches use float64 as drawn).
    kept = np.empty((d, 2, LEVELS), dtype=np.float32)  # (column, sign: negative first, bin)
    own = np.full((d, 3), -1)  # (column, reading: negative, positive, both)
    pooled = np.zeros((2, LEVELS))
    # Columns a block: the engine's own width, and at most 64 MiB of counts.
    width = min(engine.column_width(), max(1, (64 << 20) // (8 * bins)))
    for cols, values in engine.column_blocks(IDENTITY, width):
        k = values.shape[1]
        noisy = gaussian_noise(signed_counts(values), sensitivity, rho, rng, secure=secure)
        pooled += noisy.sum(axis=0)
        own[cols] = _highest_loud(_readings(noisy).reshape(3 * k, LEVELS), tau).reshape(k, 3)
        kept[cols] = noisy
    pooled_reach = _highest_loud(_readings(pooled[None])[0], tau_pooled)
    # A column whose own reach lies more than OWN_SCALE_LEVELS below the pooled one keeps its
    # own: the pooled reach is the largest columns' scale, and lifted to it a column of ages
    # beside timestamps near 1.7e9 got [0, 2^32] and its mean was noise.
    own_top = own.max(axis=1)
    apart = (own_top >= 0) & (own_top < pooled_reach.max() - OWN_SCALE_LEVELS)
    side_reach = np.where(apart[:, None], own, np.maximum(own, pooled_reach))
    reach = side_reach.max(axis=1)
    edge = np.minimum(reach + MARGIN_LEVELS, LEVELS - 1)
    top = level_top(edge)
    present = [bool((side_reach[:, sign] >= 0).any())
               or _sign_present(kept[:, sign], side_reach[:, 1 - sign], sigma)
               for sign in (0, 1)]
    if not any(present):  # only the magnitudes' bins are loud: no sign can be ruled out
        present = [True, True]
    lo = np.where(reach < 0, np.nan, -top if present[0] else 0.0)
    hi = np.where(reach < 0, np.nan, top if present[1] else 0.0)
    borrowed = (own_top < 0) & (reach >= 0) & bool(apart.any())
    return lo, hi, borrowed, _lifted_by_others(own_top, reach)


def _lifted_by_others(own_top: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """Per column with an own reach, the powers of two by which the other columns lifted it:
    its reach capped at the highest own reach among the others, less its own (0 elsewhere).
    Not its reach less its own: the pooled reach sees a tail that no column's bins show
    alone, so a wide table of alike heavy-tailed columns lies above every own reach (Pareto
    1.1, d = 1024: by 6, a review) with no wider column to blame."""
    order = np.argsort(own_top)
    highest = own_top[order[-1]] if own_top.size else -1
    second = own_top[order[-2]] if own_top.size > 1 else -1
    others = np.full(own_top.shape, highest)
    if own_top.size:
        others[order[-1]] = second
    return np.where(own_top >= 0, np.maximum(np.minimum(reach, others) - own_top, 0), 0)


def _readings(noisy: np.ndarray) -> np.ndarray:
    """Noisy signed counts (columns, 2, LEVELS) and, third, their magnitudes' counts (both
    signs' sum over sqrt(2): noise of the same sigma), shape (columns, 3, LEVELS)."""
    both = noisy.sum(axis=1, keepdims=True) / np.sqrt(2.0)
    return np.concatenate([noisy, both], axis=1)


def _sign_present(noisy: np.ndarray, reach: np.ndarray, sigma: float) -> bool:
    """Whether one sign's noisy counts (d columns x LEVELS) show values in the columns'
    windows, the SIGN_WINDOW bins up to each column's ``reach`` (the other sign's, read from
    its counts alone, so the windows are independent of these counts; columns without one are
    left out). A window's sum
    has noise sigma sqrt(bins), independent across columns. Two tests, SIGN_BETA / 2 each
    where the sign has no values: the largest standardised sum (a few columns of many values)
    and the sum of their squares (chi-square, a degree of freedom a column: values spread
    thinly over many columns)."""
    rows = np.flatnonzero(reach >= 0)
    if rows.size == 0:
        return False
    # Each window's SIGN_WINDOW bins added one offset at a time: a cumulative sum of every
    # chosen row took 8 bytes a bin (1.6 GB at d = 100,000, on top of the counts: a trial).
    top = reach[rows]
    window = np.zeros(rows.size)
    for offset in range(SIGN_WINDOW):
        inside = np.flatnonzero(top >= offset)
        window[inside] += noisy[rows[inside], top[inside] - offset]
    z = window / (sigma * np.sqrt(np.minimum(top + 1, SIGN_WINDOW)))
    half = SIGN_BETA / 2
    from scipy.stats import chi2, norm  # imported when used: 0.6 s
    return bool(z.max() > norm.isf(half / rows.size)
                or (z ** 2).sum() > chi2.isf(half, rows.size))


def _highest_loud(noisy: np.ndarray, tau: float) -> np.ndarray:
    """The highest bin above ``tau`` of each row of noisy counts, -1 where none is."""
    loud = noisy > tau
    return np.where(loud.any(axis=1), LEVELS - 1 - np.argmax(loud[:, ::-1], axis=1), -1)


__all__ = ["BOUNDS_BETA", "BOUNDS_SHARE", "LEVELS", "LIFT_WARN_LEVELS", "SIGN_BETA",
           "SIGN_WINDOW", "level_top", "magnitude_levels", "private_box", "signed_counts",
           "signed_levels"]
