"""The in-memory numpy engine: the default way estimators reach a dense array.

Caches the quantized/rotated copy of the data, the expensive part of a view (O(n d log d)).
"""

from __future__ import annotations

import numpy as np

from ..transforms import View, clamp, clip_weights
from .base import Engine

# Rows per block: keeps temporaries near a few MiB so blocks stay in cache.
_BLOCK_BYTES = 4 << 20


class InMemoryEngine(Engine):
    """Answers aggregate questions with numpy on a clamped float64 copy of ``x`` (n, d)."""

    def __init__(self, x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        self.lo = np.asarray(lo, dtype=np.float64)
        self.hi = np.asarray(hi, dtype=np.float64)
        self._data = clamp(x, self.lo, self.hi)
        self.n, self.d = self._data.shape
        self._base_key: tuple | None = None
        self._base: np.ndarray = self._data
        self._norms_key: View | None = None
        self._sorted_norms: np.ndarray | None = None

    def _blocks(self, width: int):
        step = max(1, _BLOCK_BYTES // (8 * max(width, 1)))
        for start in range(0, self.n, step):
            yield slice(start, min(start + step, self.n))

    def _based(self, view: View) -> np.ndarray:
        """The data after the view's quantize and rotate steps, computed once per rotation."""
        key = (view.preclip, view.quantizer, view.rotation)
        if key == (None, None, None):
            return self._data
        if self._base_key is None or key != self._base_key:
            self._base = np.empty((self.n, view.output_dim(self.d)))
            for rows in self._blocks(self._base.shape[1]):
                self._base[rows] = view.apply_base(self._data[rows])
            self._base_key = key
        return self._base

    def coordinate_counts(self, view: View, thresholds: np.ndarray) -> np.ndarray:
        based = self._based(view)
        # v_j <= t_j  <=>  based_j <= t_j / scale_j + shift_j, for the positive scales views use.
        limit = np.asarray(thresholds, dtype=np.float64)
        if view.scale is not None:
            limit = limit / view.scale
        if view.shift is not None:
            limit = limit + view.shift
        counts = np.zeros(based.shape[1], dtype=np.int64)
        for rows in self._blocks(based.shape[1]):
            counts += np.count_nonzero(based[rows] <= limit, axis=0)
        return counts

    def _norms(self, view: View) -> np.ndarray:
        based = self._based(view)
        norms = np.empty(self.n)
        for rows in self._blocks(based.shape[1]):
            block = view.finish(based[rows])
            norms[rows] = np.sqrt(np.einsum("ij,ij->i", block, block))
        return norms

    def norm_counts(self, view: View, thresholds: np.ndarray) -> np.ndarray:
        if self._norms_key is not view:
            self._sorted_norms = np.sort(self._norms(view))
            self._norms_key = view
        return np.searchsorted(self._sorted_norms, thresholds, side="right")

    def clipped_sum(self, view: View, radius: float) -> np.ndarray:
        based = self._based(view)
        total = np.zeros(based.shape[1])
        for rows in self._blocks(based.shape[1]):
            block = view.finish(based[rows])
            weights = clip_weights(np.sqrt(np.einsum("ij,ij->i", block, block)), radius)
            total += weights @ block
        return total
