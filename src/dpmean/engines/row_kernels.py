"""A compiled read of integer rows for the in-memory engine's norms and clipped sums: each value
converted to float64, multiplied by the box's factor, shifted and scaled in one pass
(``shifted_rows``), where numpy made a pass for each (MNIST's PLAN: 13 % of its samples in the
conversion and the in-place shift and scale of its three reads of every row).

The same operations in the same order on the same float64 values, so the same bits: a
conversion of an integer is exact, and a subtraction followed by a multiplication is never
contracted into a fused multiply-add (there is no multiply before the add to fuse).

The rows' squared norms are taken in one pass of their own (``shifted_squared_norms``), each
row's values written to a scratch row in the cache and summed there, never to a block: the
norms' pass over MNIST took 0.037 s of a core (the shifted block, then numpy's einsum over it),
it takes 0.014 s. Their additions are in another order than einsum's (the sum of squares is
vectorised, ``_sum_of_squares``): each norm may differ from einsum's in its last bits (a few
units of 1e-16 relative). The in-memory engine takes every squared norm of integer rows read
this way from here, and every other block's by the same sum (``squared_norms``), so a norm
kept from ``row_norms`` is still the one its clipped sums would compute, and integer rows give
the bits of the same values as floats.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def _shifted_rows(x, factor, shift, scale, out):  # pragma: no cover - compiled
    rows, d = x.shape
    for i in range(rows):
        for j in range(d):
            out[i, j] = (np.float64(x[i, j]) * factor[j] - shift[j]) * scale[j]


def shifted_rows(x: np.ndarray, factor: np.ndarray, shift: np.ndarray,
                 scale: np.ndarray) -> np.ndarray:
    """(float64(x) * factor - shift) * scale for integer rows ``x`` (rows, d), each vector (d,)
    broadcast over the rows, as a new float64 array: the values of converting, then
    ``x *= factor``, ``x -= shift``, ``x *= scale`` (a factor of 1 and a shift of 0 change no
    value, so absent steps are passed as those)."""
    out = np.empty(x.shape)
    _shifted_rows(x, factor, shift, scale, out)
    return out


@njit(nogil=True, cache=True, fastmath={"reassoc"})
def _sum_of_squares(row):  # pragma: no cover - compiled
    """sum_j row_j^2 of a contiguous float64 row, its additions reassociated (vectorised; no
    other licence, so no fused multiply-add). Indexed: iterating over the row's values was
    not vectorised (4x slower)."""
    total = 0.0
    for j in range(row.shape[0]):
        total += row[j] * row[j]
    return total


@njit(nogil=True, cache=True)
def _shifted_squared_norms(x, factor, shift, scale, out):  # pragma: no cover - compiled
    rows, d = x.shape
    row = np.empty(d)
    for i in range(rows):
        for j in range(d):
            row[j] = (np.float64(x[i, j]) * factor[j] - shift[j]) * scale[j]
        out[i] = _sum_of_squares(row)


@njit(nogil=True, cache=True)
def _squared_norms(block, out):  # pragma: no cover - compiled
    rows, d = block.shape
    row = np.empty(d)
    for i in range(rows):
        for j in range(d):
            row[j] = block[i, j]
        out[i] = _sum_of_squares(row)


def squared_norms(block: np.ndarray) -> np.ndarray:
    """The squared l2 norm of each row of a float64 ``block`` (rows, d), any layout: each row
    copied to a contiguous scratch row and summed by ``_sum_of_squares``, as
    ``shifted_squared_norms`` sums the rows it makes (the same values give the same bits)."""
    out = np.empty(block.shape[0])
    _squared_norms(block, out)
    return out


def shifted_squared_norms(x: np.ndarray, factor: np.ndarray, shift: np.ndarray,
                          scale: np.ndarray) -> np.ndarray:
    """The squared l2 norm of each row of ``shifted_rows(x, factor, shift, scale)``, (rows,),
    without writing the rows: each one's values are those ``shifted_rows`` writes, summed in
    ``_sum_of_squares``'s order."""
    out = np.empty(x.shape[0])
    _shifted_squared_norms(x, factor, shift, scale, out)
    return out
