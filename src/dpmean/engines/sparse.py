"""The sparse engine: aggregate questions about a scipy.sparse CSR matrix, never densified whole.

Serves PLAN on basket data (Aumuller et al., sec. 7.2.2) in O(nnz + d), using that the view's
shift and scale are affine, and IOME (section 3.3) through the rotation's identities
(docs/architecture.md): only rotated coordinate counts touch rotated rows, in bounded blocks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, NoReturn

import numpy as np
import scipy.sparse

from .. import parallel
from ..errors import InvalidParameterError
from ..transforms import BoxClamp, RandomRotation, View, clip_weights
from .base import Engine
from .blas import one_blas_thread

if TYPE_CHECKING:
    from .lattice_counts import LatticeCounts

# Rows of one block of rotated rows (float64 at the padded width) in rotated coordinate counts.
_BLOCK_BYTES = 32 << 20


class SparseEngine(Engine):
    """Answers aggregate questions about a CSR matrix ``x`` (n, d) clamped to [lo, hi] (and
    rescaled by ``scale``, if given: ``BoxClamp``).

    The box must contain 0 in every coordinate: clamping keeps the implicit zeros at zero, so
    only the stored values are clamped (once, into a private copy of ``x.data``). Views may
    shift and scale (v(x) = b * (x - s)), or rotate (normalised, orthogonal R) and shift
    (v(x) = R x - s, IOME): then ||R x - s||^2 = ||x||^2 - 2 <x, R^T s> + ||s||^2 and
    sum_i w_i (R x_i - s) = R (X^T w) - (sum_i w_i) s cost O(nnz + d log d). Rotated coordinate
    counts come from a table of the rows' rotated values, which lie on an integer lattice for
    basket data, built once per rotation (``LatticeCounts``: at most 256 MiB, plus 32 MiB
    blocks while building), then O(d_pad) per count. Rows the table does not hold (values off
    the lattice, or a larger l1 norm) are rotated at every count in blocks of _BLOCK_BYTES,
    except those whose l1 norm decides them (|(R x)_j| <= ||x||_1 / sqrt(d_pad)). Memory:
    O(nnz) plus those bounds. Clipping, quantizing and linear views have no sparse form and
    raise, as do the questions whose answer is itself dense (sorted columns, pair
    differences, the d x d outer sum).
    """

    baskets = True

    def __init__(self, x: scipy.sparse.csr_matrix, lo: np.ndarray, hi: np.ndarray,
                 scale: np.ndarray | None = None) -> None:
        box = BoxClamp.of(lo, hi, scale)
        self.lo, self.hi = box.out_lo, box.out_hi
        if not ((self.lo <= 0.0) & (self.hi >= 0.0)).all():
            raise InvalidParameterError(
                "sparse data needs bounds that contain 0 in every coordinate (the implicit "
                "zeros must stay zeros); pass e.g. bounds=(0, 1) for baskets, or a dense array"
            )
        x = scipy.sparse.csr_matrix(x)
        self.n, self.d = x.shape
        # Only the stored values: a rescaled zero stays zero (the box scales, never shifts).
        data = np.clip(x.data.astype(np.float64), box.lo[x.indices], box.hi[x.indices])
        if box.scale is not None:
            data *= box.scale[x.indices]
        self._x = scipy.sparse.csr_matrix((data, x.indices, x.indptr), shape=x.shape)
        self._squares = scipy.sparse.csr_matrix((data * data, x.indices, x.indptr),
                                                shape=x.shape)
        self._column_nnz = np.bincount(x.indices, minlength=self.d)
        self._row_l1 = np.asarray(abs(self._x).sum(axis=1)).ravel()
        self._lattice: tuple[RandomRotation, LatticeCounts] | None = None

    def _affine(self, view: View) -> tuple[np.ndarray, np.ndarray]:
        """(shift, scale) of a view the engine can answer, as vectors of the view's width."""
        if view.preclip is not None or view.quantizer is not None or view.linear is not None:
            raise InvalidParameterError(
                "the sparse engine answers only shifted, scaled or rotated views; clipping "
                "rows, quantizing or a linear map would densify the data (for IOME use the "
                "real-valued path, quantized=False; or pass a dense array)"
            )
        rotation = view.rotation
        if rotation is not None and (not rotation.normalized or view.scale is not None):
            raise InvalidParameterError(
                "the sparse engine answers rotated views only for the orthogonal rotation "
                "without scaling (IOME's real-valued path); pass a dense array")
        width = view.output_dim(self.d)
        shift = np.zeros(width) if view.shift is None else view.shift
        scale = np.ones(width) if view.scale is None else view.scale
        return shift, scale

    def row_norms(self, view: View) -> np.ndarray:
        # ||b(x - s)||^2 = sum_j b_j^2 x_j^2 - 2 sum_j b_j^2 s_j x_j + ||b s||^2: two sparse
        # matrix-vector products. A rotation R is orthogonal and is not scaled (checked), so
        # ||R x - s||^2 = ||x||^2 - 2 <x, R^T s> + ||s||^2: one rotation of s. Cancellation can
        # leave a tiny negative; a norm is >= 0.
        shift, scale = self._affine(view)
        b2 = scale * scale
        if view.rotation is not None:
            squared = (self._squares @ np.ones(self.d) - 2.0 * (self._x @ view.rotation.invert(
                shift)) + float(shift @ shift))
        else:
            squared = (self._squares @ b2 - 2.0 * (self._x @ (b2 * shift))
                       + float(b2 @ (shift**2)))
        return np.sqrt(np.maximum(squared, 0.0))

    def coordinate_counts(self, view: View, thresholds: np.ndarray) -> np.ndarray:
        shift, scale = self._affine(view)
        # b_j (x_j - s_j) <= t_j  <=>  x_j <= t_j / b_j + s_j for the positive scales views use.
        limit = np.asarray(thresholds, dtype=np.float64) / scale + shift
        if view.rotation is not None:
            return self._rotated_counts(view.rotation, limit)
        x = self._x
        stored_below = np.bincount(x.indices, weights=x.data <= limit[x.indices],
                                   minlength=self.d)
        zeros_below = np.where(limit >= 0.0, self.n - self._column_nnz, 0)
        return (stored_below + zeros_below).astype(np.int64)

    def _rotated_counts(self, rotation: RandomRotation, limit: np.ndarray) -> np.ndarray:
        """Per rotated coordinate j, #{i: (R x_i)_j <= limit_j}: rows on the integer lattice
        from a table of value counts built once per rotation (``LatticeCounts``), the rest
        rotated here."""
        from .lattice_counts import LatticeCounts  # numba: imported when first needed

        cached = self._lattice
        if cached is None or cached[0] is not rotation:
            cached = (rotation, LatticeCounts(self._x, rotation.signs, parallel.THREADS))
            self._lattice = cached
        lattice = cached[1]
        return (lattice.counts(limit, rotation.scale)
                + self._rotate_and_count(rotation, limit, lattice.apart))

    def _rotate_and_count(self, rotation: RandomRotation, limit: np.ndarray,
                          rows: np.ndarray) -> np.ndarray:
        """Per rotated coordinate j, #{i in rows: (R x_i)_j <= limit_j}, rotating the rows
        whose l1 norm leaves it open, a block at a time."""
        # Every rotated coordinate of row i lies in [-b_i, b_i], b_i = ||x_i||_1 / sqrt(d_pad)
        # (R's entries are +-1/sqrt(d_pad)). A row with b_i < min_j |limit_j| is below limit_j
        # exactly where limit_j > 0. The margin 1e-9 covers rounding in the rotated values.
        bound = self._row_l1[rows] * rotation.scale * (1.0 + 1e-9)
        undecided = rows[bound >= np.min(np.abs(limit))]
        counts = np.where(limit > 0.0, len(rows) - len(undecided), 0).astype(np.int64)
        step = max(1, _BLOCK_BYTES // (8 * rotation.padded_dim))
        # One BLAS thread: the transform's 16 x 16 products only pay for BLAS's threads (20x
        # slower with them on the in-memory engine's one-thread path, issue 20).
        with one_blas_thread():
            for start in range(0, len(undecided), step):
                block = self._x[undecided[start: start + step]].toarray()
                below = (rotation.apply(block) <= limit).view(np.uint8)
                counts += np.add.reduce(below, axis=0, dtype=np.int32)
        return counts

    def clipped_sum(self, view: View, radius: float) -> np.ndarray:
        # sum_i w_i b (x_i - s) = b (X^T w - (sum_i w_i) s), with w_i the clipping weights; with
        # a rotation, R (X^T w) - (sum_i w_i) s: the sum is rotated once.
        shift, scale = self._affine(view)
        weights = clip_weights(self.row_norms(view), radius)
        summed = self._x.T @ weights
        if view.rotation is not None:
            summed = view.rotation.apply(summed)
        return scale * (summed - weights.sum() * shift)

    def _dense_only(self, question: str) -> NoReturn:
        raise InvalidParameterError(
            f"the sparse engine cannot answer {question} without densifying the data; for "
            f"sparse input use an estimator option that avoids it (PLAN: variance='binary'), "
            f"or pass a dense array"
        )

    def clipped_outer_sum(self, view: View, radius: float) -> np.ndarray:
        self._dense_only("clipped_outer_sum (a d x d matrix)")

    def materialised(self, view: View) -> Engine:
        self._dense_only("a materialised view (n x k dense rows)")

    def column_blocks(self, view: View, width: int) -> Iterator[tuple[slice, np.ndarray]]:
        # Order statistics and pair differences of sparse columns are dense n-long columns;
        # on basket data they are also useless (a trimmed mean or median of a rare item is 0).
        raise InvalidParameterError(
            "the sparse engine cannot answer column questions (order statistics, pair "
            "differences: n x d values) without densifying the data: the trimmed mean and "
            "coordinate medians need a dense array or file (engine 'memory' or 'chunked'); "
            "PLAN runs on sparse input with centre='mean' and variance='binary' (its defaults "
            "there)")

    def sorted_columns(self, view: View) -> np.ndarray:
        self._dense_only("sorted_columns (an n x d array)")

    def pair_differences(self, view: View, order: np.ndarray) -> np.ndarray:
        self._dense_only("pair_differences (an n/2 x d array)")
