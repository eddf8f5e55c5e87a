"""Exact sums of float64 values for the sparse engine's distances to a far centre: the sum over
a row's absent columns of the centre's squares, and the sum over a column's absent rows of the
clipping weights, each as a total minus the present terms, computed exactly and rounded once.

A float sum is kept as Shewchuk's nonoverlapping partials (his "grow expansion", the algorithm
behind Python's ``math.fsum``): adding a value to the partials is exact, so the partials of
sum_all - sum_present are those of the absent terms' sum, with no cancellation however large the
total; rounding them from the top (``math.fsum``'s last step) gives that sum correctly rounded.
The number of partials never exceeds the number of values added, and is a few in practice (they
cover disjoint bit ranges), so adding a value costs O(1).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def _grow(partials, m, x):  # pragma: no cover - compiled
    # Adds x to the m nonoverlapping partials (increasing magnitude) in place; returns their new
    # number. Each step is Knuth's exact two-sum: hi + lo == x + y exactly.
    i = 0
    for k in range(m):
        y = partials[k]
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo != 0.0:
            partials[i] = lo
            i += 1
        x = hi
    partials[i] = x
    return i + 1


@njit(nogil=True, cache=True)
def _rounded(partials, m):  # pragma: no cover - compiled
    # The sum of the partials correctly rounded (math.fsum's final step): added from the top
    # until an addition is inexact, then half-way cases rounded to even.
    if m == 0:
        return 0.0
    m -= 1
    hi = partials[m]
    lo = 0.0
    while m > 0:
        x = hi
        m -= 1
        y = partials[m]
        hi = x + y
        lo = y - (hi - x)
        if lo != 0.0:
            break
    if m > 0 and ((lo < 0.0 and partials[m - 1] < 0.0) or (lo > 0.0 and partials[m - 1] > 0.0)):
        y = lo * 2.0
        x = hi + y
        if y == x - hi:
            hi = x
    return hi


@njit(nogil=True, cache=True)
def _expansion(values):  # pragma: no cover - compiled
    partials = np.empty(len(values) + 1)
    m = 0
    for value in values:
        m = _grow(partials, m, value)
    return partials[:m].copy()


def expansion(values: np.ndarray) -> np.ndarray:
    """The nonoverlapping partials of sum(values), exactly (finite float64 values)."""
    return _expansion(np.ascontiguousarray(values, dtype=np.float64))


@njit(nogil=True, cache=True)
def _distances(indptr, indices, data, scale, centre, squares, total, rows,
               out):  # pragma: no cover - compiled
    longest = 0
    for i in rows:
        longest = max(longest, indptr[i + 1] - indptr[i])
    partials = np.empty(len(total) + longest + 1)
    for r in range(len(rows)):
        i = rows[r]
        m = len(total)
        partials[:m] = total
        near = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            v = scale[j] * (data[p] - centre[j])
            near += v * v
            if squares[j] != 0.0:
                m = _grow(partials, m, -squares[j])
        out[r] = near + _rounded(partials, m)


def squared_distances(x, scale: np.ndarray, centre: np.ndarray, squares: np.ndarray,
                      total: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For each row i of the CSR matrix ``x`` in ``rows``, ||scale * (x_i - centre)||^2 as
    sum over the stored j of (scale_j (x_ij - centre_j))^2 plus sum over the other columns of
    ``squares`` (squares_j = (scale_j centre_j)^2 rounded), the latter from ``total`` (the
    partials of sum(squares), ``expansion``) minus the row's stored columns' squares, exactly,
    then rounded once. ``centre``, ``scale`` and ``squares`` may be longer than x's width (a
    rotation's padding: columns no row stores). Every term is >= 0 and carries at most a few
    roundings, so the result has a relative error of at most gamma_{k+6} (k the row's stored
    entries): no cancellation."""
    out = np.empty(len(rows))
    _distances(x.indptr, x.indices, x.data, scale, centre, squares, total,
               np.asarray(rows, dtype=np.int64), out)
    return out


@njit(nogil=True, cache=True)
def _absent_sums(indptr, indices, weights, total, out):  # pragma: no cover - compiled
    longest = 0
    for j in range(len(indptr) - 1):
        longest = max(longest, indptr[j + 1] - indptr[j])
    partials = np.empty(len(total) + longest + 1)
    for j in range(len(indptr) - 1):
        m = len(total)
        partials[:m] = total
        for p in range(indptr[j], indptr[j + 1]):
            if weights[indices[p]] != 0.0:
                m = _grow(partials, m, -weights[indices[p]])
        out[j] = _rounded(partials, m)


def absent_sums(columns, weights: np.ndarray, total: np.ndarray) -> np.ndarray:
    """For each column j of the CSC matrix ``columns``, the sum of ``weights`` over the rows
    that store nothing in column j: ``total`` (the partials of sum(weights)) minus the column's
    rows' weights, exactly, then rounded once (a relative error of at most 2^-53)."""
    out = np.empty(columns.shape[1])
    _absent_sums(columns.indptr, columns.indices, np.ascontiguousarray(weights, dtype=np.float64),
                 total, out)
    return out


def rounded(partials: np.ndarray) -> float:
    """The sum of nonoverlapping partials (``expansion``), correctly rounded."""
    return float(_rounded(partials, len(partials)))
