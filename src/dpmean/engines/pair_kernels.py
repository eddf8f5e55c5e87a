"""Compiled loops of the in-memory engine over the pairs' integer magnitudes: the magnitudes
themselves, gathered from the pairs' rows (``integer_magnitudes``; ``float_magnitudes`` for
rows inside the box of other types), the l1 norm and squared l2
norm of each pair (``InMemoryEngine.pair_distances`` on small integers such as
MNIST's pixels), and each column's histogram of byte magnitudes and its sorted positions
(``counted_order.CountedOrder``).

numpy's form of the sums converted every block to float64 and made three passes over it (about
0.13 s on MNIST, a sixth of PLAN's time there); the sums of integers are exact in int64, so
their float64 values are the float path's bits whatever the order of the additions.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def integer_magnitudes(x, lo, hi, clamps, pairs, first, stop,
                       out):  # pragma: no cover - compiled
    """For pairs first..stop-1 (rows a, b of ``pairs``): |clip(x_a) - clip(x_b)| of the
    integer rows ``x`` clamped to [lo, hi] (``clamps=False``: the box holds every value, no
    clamp), into ``out``'s rows (unsigned, as wide as x's type: the difference of two
    clamped values fits). One pass where numpy gathered both rows, clipped and took a
    maximum, a minimum and their difference."""
    for p in range(first, stop):
        a, b = x[pairs[p, 0]], x[pairs[p, 1]]
        row = out[p]
        for j in range(a.size):
            u, v = np.int64(a[j]), np.int64(b[j])
            if clamps:
                u = min(max(u, np.int64(lo[j])), np.int64(hi[j]))
                v = min(max(v, np.int64(lo[j])), np.int64(hi[j]))
            row[j] = u - v if u >= v else v - u


@njit(nogil=True, cache=True)
def float_magnitudes(x, scale, scales, pairs, first, stop, out):  # pragma: no cover - compiled
    """For pairs first..stop-1 (rows a, b of ``pairs``): |f(x_a) - f(x_b)| into ``out``'s
    rows (float64), f(v) = float64(v) * scale (``scales=False``: float64(v)), for rows the
    box holds (no clamp). The operations of converting both rows, rescaling them, then
    subtracting and taking the magnitude, value by value: the same bits (a product then a
    difference of products is never fused into a multiply-add without fast-math)."""
    for p in range(first, stop):
        a, b = x[pairs[p, 0]], x[pairs[p, 1]]
        row = out[p]
        for j in range(a.size):
            u, v = np.float64(a[j]), np.float64(b[j])
            if scales:
                u, v = u * scale[j], v * scale[j]
            row[j] = abs(u - v)


@njit(nogil=True, cache=True)
def integer_distances(magnitudes, l1, squared, first, stop):  # pragma: no cover - compiled
    """For rows first..stop-1 of ``magnitudes`` (pairs x coordinates, unsigned integers):
    the sum of the row into ``l1`` and the sum of its squares into ``squared`` (float64
    arrays, added to), each summed exactly in int64."""
    for i in range(first, stop):
        row = magnitudes[i]
        total = 0
        squares = 0
        for j in range(row.size):
            value = int(row[j])
            total += value
            squares += value * value
        l1[i] += total
        squared[i] += squares


@njit(nogil=True, cache=True)
def byte_histograms(magnitudes, first, stop, out):  # pragma: no cover - compiled
    """Add to ``out[j - first, v]`` (stop - first, 256) the number of rows of ``magnitudes``
    (pairs x coordinates, uint8) whose column j holds v, for columns first..stop-1."""
    for i in range(magnitudes.shape[0]):
        row = magnitudes[i]
        for j in range(first, stop):
            out[j - first, row[j]] += 1


@njit(nogil=True, cache=True)
def expand_positions(counts, table, first, stop, start, end, out):  # pragma: no cover
    """Sorted positions start..end-1 of columns first..stop-1, from each column's histogram:
    ``out[j - first, p - start]`` is ``table[v, j]`` for the value v whose run of
    ``counts[j, v]`` copies (values ascending) holds position p."""
    for j in range(first, stop):
        below = 0
        for v in range(counts.shape[1]):
            above = below + counts[j, v]
            if above > start and below < end:
                value = table[v, j]
                for p in range(max(below, start), min(above, end)):
                    out[j - first, p - start] = value
            if above >= end:
                break
            below = above
