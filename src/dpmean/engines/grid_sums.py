"""Sums for secure releases whose rounding does not grow with the number of rows.

A secure Gaussian release rounds its statistic to a grid of step gamma and adds exact discrete
noise (``mechanisms.gaussian``); its privacy needs the computed statistic of each neighbouring
dataset within a fraction of gamma of a query whose sensitivity is known. A float sum of n terms
errs by up to about n u |terms| (u = 2^-53) in an order the engines choose, against a gamma that
shrinks as 1 / n: past a few 10^5 rows that was assumed, not proven. Here each row's term is
split on public grids g_1 > g_2 > ... > g_L (powers of two) into integer multiples of each,
q_1 g_1 + ... + q_L g_L, rounding only below g_L / 2. Each level's multiples are small enough
that any sum of n of them is exact (every partial sum a multiple of g_l below 2^53 g_l), so
blocks, cores and Dask workers may add them in any order and get the same bits; the levels are
then combined with L - 1 roundings. The query is the sum of the split terms: replacing one row
changes one term (its split is a function of the term alone), and the computed sum is within a
few roundings of that query's exact value, whatever n.

Privacy: nothing here is released; the grids are public (n, a public bound on each term's
coordinates, and the release's grid), and each row's term is computed from the row alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..errors import InvalidParameterError
from ..transforms import View, clip_weights

if TYPE_CHECKING:
    from .base import Engine

# The span from the terms' bound to the finest grid that the combination's L - 1 roundings (and
# a mean's division) keep within a sixth of that grid's release step (``exact_clipped_sums``).
MAX_SPAN = 2.0**48
# The most rows times the square root of the coordinates a secure release takes
# (``check_secure_scale``): its grid step gamma is at least 2.5e-4 Delta / sqrt(k), and Delta at
# least the term bound over n (a clipped mean: 2 C / n against terms below C; a box's mean in a
# box holding the origin, ``MeanEstimator.far_box_offset``: ||hi - lo|| / n against terms below
# it), so the bound is at most 3.2e4 n sqrt(k) times the finest grid, gamma / 8: within
# ``MAX_SPAN`` up to n sqrt(k) = 8.8e9.
SECURE_SCALE = 5e9
# The most rows ``exact_outer_sum`` splits into parts of at least 12 bits each (its rounding
# then at most a relative 2^-26).
OUTER_SUM_ROWS = 2**29
# A clipped term's coordinates are at most the radius up to the rounding of its norm and weight
# (a relative (d / 2 + 4) u): this margin covers d up to 10^9.
_ROUNDING_MARGIN = 1.0 + 2.0**-20
# A block of rows holds at most this many values while it is split (one block a time).
_BLOCK_VALUES = 1 << 22


def check_secure_scale(n: int, k: int) -> None:
    """Refuse, before any charge, a secure release of n rows of k coordinates beyond
    ``SECURE_SCALE`` (public: the shape). Such a release's grid is finer than float64 can sum
    to (10^9 rows of 25 coordinates; 5 x 10^7 rows of 10^4).

    Raises
    ------
    InvalidParameterError
        n sqrt(k) above ``SECURE_SCALE``.
    """
    if n * math.sqrt(k) > SECURE_SCALE:
        raise InvalidParameterError(
            f"secure noise on {n} rows of {k} coordinates: its grid would be finer than float64 "
            f"sums can hold (n sqrt(k) at most {SECURE_SCALE:.0e}); use secure_noise=False or "
            f"a sample of the rows")


def power_of_two_below(x: float) -> float:
    """The largest power of two at most ``x`` (> 0)."""
    mantissa, exponent = math.frexp(x)
    return math.ldexp(0.5, exponent) if mantissa != 0.5 else x


def grid_levels(n: int, bound: float, finest: float) -> tuple[float, ...]:
    """The grids g_1 > ... > g_L (powers of two, the last at most ``finest``) on which n terms
    whose coordinates are at most ``bound`` are split so that each level sums exactly.

    A level's parts are whole multiples of g_l of size at most reach + g_l / 2 (reach: the
    bound, then g_(l-1) / 2, what the level above left); g_l is the smallest power of two with
    n reach <= 2^52 g_l, so n parts sum to at most 2^53 g_l: exact in any order. Public."""
    if not (n >= 1 and bound > 0 and finest > 0):
        raise InvalidParameterError(f"grid levels need n >= 1, bound > 0, finest > 0; got "
                                    f"{n}, {bound}, {finest}")
    if n > 2**40 or not (2.0**-1000 <= finest and bound <= 2.0**1000):
        raise InvalidParameterError(
            f"secure noise sums at most 2^40 rows of terms between 2^-1000 and 2^1000; got "
            f"{n} rows, a bound {bound:.3g} and a grid {finest:.3g} (rescale the data)")
    last = power_of_two_below(finest)
    levels: list[float] = []
    reach = bound
    while True:
        # (log2 of each factor: n reach itself may overflow at the largest bounds.)
        step = math.ldexp(1.0, math.ceil(math.log2(n) + math.log2(reach)) - 52)
        if step <= last:
            return (*levels, last)
        levels.append(step)
        reach = step / 2


def split_sums(block: np.ndarray, weights: np.ndarray, bound: float,
               levels: Sequence[float]) -> np.ndarray:
    """The column sums of the terms t_ij = weights_i block_ij, each clamped to [-bound, bound]
    and split on ``levels`` (``grid_levels``): an (L, k) array whose row l is sum_i q_ijl in
    units of g_l (whole numbers, exact), where t_ij = sum_l q_ijl g_l up to g_L / 2. Compiled
    (``split_kernels``)."""
    from .split_kernels import add_split_sums  # numba: imported when first needed

    scales = np.array([1.0 / levels[0]] + [levels[i - 1] / levels[i]
                                            for i in range(1, len(levels))])
    out = np.zeros((len(levels), block.shape[1]))
    add_split_sums(np.ascontiguousarray(block, dtype=np.float64),
                   np.ascontiguousarray(weights, dtype=np.float64), float(bound), scales, out)
    return out


def combined(sums: np.ndarray, levels: Sequence[float]) -> np.ndarray:
    """sum_l sums[l] g_l, finest first: L - 1 roundings (each product is exact)."""
    total = sums[-1] * levels[-1]
    for level in range(len(levels) - 2, -1, -1):
        total = total + sums[level] * levels[level]
    return total


def exact_clipped_sums(
    engine: Engine, view: View, bands: Sequence[tuple[float, float]], *,
    finest: Sequence[float], bound: float | None = None,
) -> list[np.ndarray]:
    """``Engine.clipped_sums`` for a secure release: for each band (inner, outer) of radii, the
    sum over rows of the term t_i = (w_outer - w_inner) v(x_i), w_r = min(1, r / ||v(x_i)||)
    the clipping weight (inner 0: the clipped view row itself; outer inf: the row unclipped),
    each term split on public grids (``grid_levels``) down to the band's ``finest`` and summed
    exactly, then combined.

    Each row's term and its split are computed from that row alone (its view row, norm and
    weights, in whatever block holds it), so a neighbouring dataset changes one term. A
    band's term has norm at most outer - inner up to its rounding, a relative (d / 2 + 4) u:
    a difference of weights is clipped again to that width, so a narrow band's rounding is
    relative to its width, not its radii. The result is within (L - 1) u n bound (1 + 2^-50)
    per coordinate of the exact sum of the split terms, which differs from the sum of the
    terms by at most n finest / 2. ``bound``: a public bound on a coordinate of the view's
    rows, needed for an unclipped band (a finite width bounds its terms); each term's
    coordinates are clamped to the band's bound (a no-op but for rounding), so the levels are
    exact whatever the rows. Each engine adds its blocks' split sums (``Engine.split_sums``: the
    rows it hands over, or on Dask's workers).

    Raises
    ------
    InvalidParameterError
        A bound more than ``MAX_SPAN`` times its ``finest`` (callers refuse such shapes before
        any charge: ``check_secure_span``), or an unclipped band without a bound.
    """
    n = engine.n
    bounds = [_band_bound(inner, outer, bound) for inner, outer in bands]
    for b, step in zip(bounds, finest, strict=True):
        if not b <= MAX_SPAN * step:
            raise InvalidParameterError(
                f"secure noise: a term bound {b:.3g} is more than 2^48 times the grid "
                f"{step:.3g} its release needs")
    levels = [grid_levels(n, max(b, step), step)
              for b, step in zip(bounds, finest, strict=True)]
    sums = engine.split_sums(view, SplitBands(tuple(bands), tuple(bounds), tuple(levels)))
    return [combined(sums[i, :len(lv)], lv) for i, lv in enumerate(levels)]


class SplitBands(NamedTuple):
    """What ``Engine.split_sums`` splits (public): the bands (inner, outer) of radii, each
    band's bound on its terms' coordinates and its grids (``grid_levels``)."""

    bands: tuple[tuple[float, float], ...]
    bounds: tuple[float, ...]
    levels: tuple[tuple[float, ...], ...]

    def shape(self, k: int) -> tuple[int, int, int]:
        """The answer's shape: (bands, most levels, coordinates)."""
        return len(self.bands), max(len(lv) for lv in self.levels), k


def block_split_sums(block: np.ndarray, split: SplitBands) -> np.ndarray:
    """One block of finished view rows' split sums (``Engine.split_sums``): each band's level
    sums (``split_sums``), zero below a band's last level."""
    out = np.zeros(split.shape(block.shape[1]))
    clipped = any(np.isfinite(outer) for _, outer in split.bands)
    norms = np.sqrt(np.einsum("ij,ij->i", block, block)) if clipped else None
    for i, ((inner, outer), b, lv) in enumerate(zip(*split, strict=True)):
        out[i, :len(lv)] = split_sums(block, band_weights(norms, inner, outer, len(block)), b,
                                      lv)
    return out


def rows_split_sums(blocks: Iterator[np.ndarray], split: SplitBands, k: int) -> np.ndarray:
    """``block_split_sums`` of every block of rows, added (exactly), in blocks of at most
    ``_BLOCK_VALUES`` values."""
    total = np.zeros(split.shape(k))
    for block in _bounded(blocks, k):
        total += block_split_sums(block, split)
    return total


def exact_outer_sum(engine: Engine, view: View, radius: float) -> np.ndarray:
    """``Engine.clipped_outer_sum`` for a secure release: sum_i a_i a_i^T, a_i the clipped view
    row c_i rounded to a public grid h, with every product and partial sum exact.

    With T the power of two at or above the radius (so |c_ij| <= T) and b = floor((53 -
    ceil(log2 n)) / 2), each row is split as c = h_1 p + h_2 r + e with h_1 = T 2^-b, h_2 =
    h_1 2^-(b+1), p and r whole numbers of size at most 2^b and |e| <= h_2 / 2 (dropped: a
    relative 2^-(2b+2), 2^-34 at n = 10^6). The three products P^T P, P^T R and R^T R are
    whole numbers below 2^(2b) a row, so n of them sum below 2^53: the matrix products (any
    blocking, any order, fused or not) and their sums over blocks are exact; the combination
    rounds three times. Each row's a_i is computed from the row alone, so replacing a row
    changes one term, of Frobenius norm at most (radius + sqrt(k) h_2 / 2)^2.
    """
    n = engine.n
    top = math.ldexp(1.0, math.frexp(radius * _ROUNDING_MARGIN)[1])
    bits = (53 - math.ceil(math.log2(n))) // 2
    if n > OUTER_SUM_ROWS or not 2.0**-400 <= top <= 2.0**400:
        raise InvalidParameterError(
            f"secure noise: an exact outer sum of {n} rows at radius {radius:.3g} is out of "
            f"range (at most 2^29 rows, radii within 2^400 of 1)")
    coarse = math.ldexp(top, -bits)
    pp, pr, rr = engine.outer_splits(view, OuterSplit(radius, top, bits))
    fine = math.ldexp(coarse, -(bits + 1))
    cross = pr * (coarse * fine)
    return pp * (coarse * coarse) + (cross + cross.T) + rr * (fine * fine)


class OuterSplit(NamedTuple):
    """What ``Engine.outer_splits`` splits (public): the clip radius, the power of two T at or
    above it and the bits b of each part (``exact_outer_sum``)."""

    radius: float
    top: float
    bits: int


def block_outer_splits(block: np.ndarray, split: OuterSplit) -> np.ndarray:
    """One block of finished view rows' three whole-number products P^T P, P^T R, R^T R
    (``exact_outer_sum``), as a (3, k, k) array."""
    radius, top, bits = split
    units = block * clip_weights(np.sqrt(np.einsum("ij,ij->i", block, block)), radius)[:, None]
    np.clip(units, -top, top, out=units)
    units *= 1.0 / math.ldexp(top, -bits)  # a power of two: exact
    whole = np.rint(units)
    units -= whole  # exact, |units| <= 1/2
    units *= 2.0 ** (bits + 1)
    rest = np.rint(units)
    return np.stack([whole.T @ whole, whole.T @ rest, rest.T @ rest])


def rows_outer_splits(blocks: Iterator[np.ndarray], split: OuterSplit, k: int) -> np.ndarray:
    """``block_outer_splits`` of every block of rows, added (exactly)."""
    total = np.zeros((3, k, k))
    for block in _bounded(blocks, k):
        total += block_outer_splits(block, split)
    return total


def _band_bound(inner: float, outer: float, bound: float | None) -> float:
    """A public bound on a coordinate of a band's terms (``exact_clipped_sums``)."""
    if np.isfinite(outer):
        width = (outer - inner) * _ROUNDING_MARGIN
        return width if bound is None else min(width, bound)
    if bound is None or inner != 0:
        raise InvalidParameterError("an unclipped exact sum needs a bound and no inner radius")
    return bound


def band_weights(norms: np.ndarray | None, inner: float, outer: float,
                 rows: int) -> np.ndarray:
    """Each row's factor w_outer - w_inner of a band (``exact_clipped_sums``), from the rows'
    computed norms: 1 for an unclipped band; for a band between two radii, scaled down where
    the term's norm |w_outer - w_inner| ||v|| would exceed the band's width by rounding, so a
    narrow band's rounding is relative to its width."""
    if not np.isfinite(outer):
        return np.ones(rows)
    assert norms is not None
    weights = clip_weights(norms, outer)
    if inner == 0:
        return weights
    weights -= clip_weights(norms, inner)
    return weights * clip_weights(weights * norms, outer - inner)


def _bounded(blocks: Iterator[np.ndarray], k: int) -> Iterator[np.ndarray]:
    """``blocks`` of rows cut to at most ``_BLOCK_VALUES`` values each, as float64."""
    rows = max(1, _BLOCK_VALUES // max(k, 1))
    for block in blocks:
        for start in range(0, block.shape[0], rows):
            yield np.asarray(block[start:start + rows], dtype=np.float64)
