"""A compiled read of integer rows for the in-memory engine's norms and clipped sums: each value
converted to float64, multiplied by the box's factor, shifted and scaled in one pass
(``shifted_rows``), where numpy made a pass for each (MNIST's PLAN: 13 % of its samples in the
conversion and the in-place shift and scale of its three reads of every row).

The same operations in the same order on the same float64 values, so the same bits: a
conversion of an integer is exact, and a subtraction followed by a multiplication is never
contracted into a fused multiply-add (there is no multiply before the add to fuse).
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
