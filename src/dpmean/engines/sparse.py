"""The sparse engine: aggregate questions about a scipy.sparse CSR matrix, never densified.

Serves PLAN on basket data (Aumuller et al., sec. 7.2.2): every answer costs O(nnz + d) time and
memory, using that the view's shift and scale are affine (docs/architecture.md).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse

from ..errors import InvalidParameterError
from ..transforms import View, clip_weights
from .base import Engine


class SparseEngine(Engine):
    """Answers aggregate questions about a CSR matrix ``x`` (n, d) clamped to [lo, hi].

    The box must contain 0 in every coordinate: clamping keeps the implicit zeros at zero, so
    only the stored values are clamped (once, into a private copy of ``x.data``). Views may
    shift and scale (v(x) = b * (x - s)); clipping, quantizing, rotating and linear views have
    no sparse form and raise, as do the questions whose answer is itself dense (sorted columns,
    pair differences, the d x d outer sum).
    """

    def __init__(self, x: scipy.sparse.csr_matrix, lo: np.ndarray, hi: np.ndarray) -> None:
        self.lo = np.asarray(lo, dtype=np.float64)
        self.hi = np.asarray(hi, dtype=np.float64)
        if not ((self.lo <= 0.0) & (self.hi >= 0.0)).all():
            raise InvalidParameterError(
                "sparse data needs bounds that contain 0 in every coordinate (the implicit "
                "zeros must stay zeros); pass e.g. bounds=(0, 1) for baskets, or a dense array"
            )
        x = scipy.sparse.csr_matrix(x)
        self.n, self.d = x.shape
        data = np.clip(x.data.astype(np.float64), self.lo[x.indices], self.hi[x.indices])
        self._x = scipy.sparse.csr_matrix((data, x.indices, x.indptr), shape=x.shape)
        self._squares = scipy.sparse.csr_matrix((data * data, x.indices, x.indptr),
                                                shape=x.shape)
        self._column_nnz = np.bincount(x.indices, minlength=self.d)

    def _affine(self, view: View) -> tuple[np.ndarray, np.ndarray]:
        """(shift, scale) of a view the engine can answer, as length-d vectors."""
        dense_steps = (view.preclip, view.quantizer, view.rotation, view.linear)
        if any(step is not None for step in dense_steps):
            raise InvalidParameterError(
                "the sparse engine answers only shifted and scaled views; clipping rows, "
                "quantizing, rotating or a linear map would densify the data (pass a dense "
                "array instead)"
            )
        shift = np.zeros(self.d) if view.shift is None else view.shift
        scale = np.ones(self.d) if view.scale is None else view.scale
        return shift, scale

    def row_norms(self, view: View) -> np.ndarray:
        # ||b(x - s)||^2 = sum_j b_j^2 x_j^2 - 2 sum_j b_j^2 s_j x_j + ||b s||^2: two sparse
        # matrix-vector products. Cancellation can leave a tiny negative; a norm is >= 0.
        shift, scale = self._affine(view)
        b2 = scale * scale
        squared = self._squares @ b2 - 2.0 * (self._x @ (b2 * shift)) + float(b2 @ (shift**2))
        return np.sqrt(np.maximum(squared, 0.0))

    def coordinate_counts(self, view: View, thresholds: np.ndarray) -> np.ndarray:
        shift, scale = self._affine(view)
        # b_j (x_j - s_j) <= t_j  <=>  x_j <= t_j / b_j + s_j for the positive scales views use.
        limit = np.asarray(thresholds, dtype=np.float64) / scale + shift
        x = self._x
        stored_below = np.bincount(x.indices, weights=x.data <= limit[x.indices],
                                   minlength=self.d)
        zeros_below = np.where(limit >= 0.0, self.n - self._column_nnz, 0)
        return (stored_below + zeros_below).astype(np.int64)

    def clipped_sum(self, view: View, radius: float) -> np.ndarray:
        # sum_i w_i b (x_i - s) = b (X^T w - (sum_i w_i) s), with w_i the clipping weights.
        shift, scale = self._affine(view)
        weights = clip_weights(self.row_norms(view), radius)
        return scale * (self._x.T @ weights - weights.sum() * shift)

    def _dense_only(self, question: str) -> None:
        raise InvalidParameterError(
            f"the sparse engine cannot answer {question} without densifying the data; for "
            f"sparse input use an estimator option that avoids it (PLAN: variance='binary'), "
            f"or pass a dense array"
        )

    def clipped_outer_sum(self, view: View, radius: float) -> np.ndarray:
        self._dense_only("clipped_outer_sum (a d x d matrix)")

    def sorted_columns(self, view: View) -> np.ndarray:
        self._dense_only("sorted_columns (an n x d array)")

    def pair_differences(self, view: View, order: np.ndarray) -> np.ndarray:
        self._dense_only("pair_differences (an n/2 x d array)")
