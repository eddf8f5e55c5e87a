"""The sparse engine: aggregate questions about a scipy.sparse CSR matrix, never densified whole.

Serves PLAN on basket data (Aumuller et al., sec. 7.2.2) in O(nnz + d), using that the view's
shift and scale are affine, and IOME (section 3.3) through the rotation's identities
(docs/architecture.md): only rotated coordinate counts touch rotated rows, in bounded blocks.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
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
# Unit roundoff of float64.
_UNIT = 2.0**-53
# A squared norm from the expanded formula is kept when its rounding error bound is at most this
# share of it (the norm is then at most 2^-37 low, relatively); else it is recomputed.
_KEPT_ERROR = 2.0**-36
# Clipped sums about a centre farther than this many (smallest) radii from the origin are taken
# over the rows' differences from the centre (``SparseEngine._far_sum``).
_FAR_RADII = 64.0


def _gamma(m: np.ndarray | int) -> np.ndarray | float:
    """Higham's gamma_m = m u / (1 - m u): a sum of m + 1 terms, or a product of m + 1
    factors, rounded at each step is within gamma_m sum |terms| (relatively) of the exact one."""
    return m * _UNIT / (1.0 - m * _UNIT)


def _rotation_error(rotation: RandomRotation) -> float:
    """A bound, relative to ||y||, on the rounding error of ``rotation.invert_padded(y)``: its
    fast transform's stages each apply Hadamard blocks of size m <= 16, every output a sum of m
    signed inputs rounded at most m - 1 times, so a stage errs by at most gamma_{m-1}
    || |H| |y| || <= gamma_{m-1} m ||y|| against ||H y|| = sqrt(m) ||y||; then one division by
    a rounded factor (sqrt, reciprocal) and exact sign flips."""
    relative, low, size = 1.0, 1, rotation.padded_dim
    while low < size:
        block = min(16, size // low)
        relative *= 1.0 + float(_gamma(block - 1)) * math.sqrt(block)
        low *= block
    return (relative * (1.0 + float(_gamma(4))) - 1.0) * 1.01


def check_sparse_box(lo: np.ndarray, hi: np.ndarray) -> None:
    """Refuse a box that misses 0 in some coordinate for sparse rows: clamping must keep the
    implicit zeros at zero. The engine's own check, and ``MeanEstimator.check_sparse_box``'s
    before any charge (public: the box)."""
    if not ((lo <= 0.0) & (hi >= 0.0)).all():
        raise InvalidParameterError(
            "sparse data needs bounds that contain 0 in every coordinate (the implicit zeros "
            "must stay zeros); pass e.g. bounds=(0, 1) for baskets, or a dense array")


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

    Distances to a far centre: the expanded ||x - s||^2 cancels when x and s lie close together
    far from the origin (an error of about 2^-52 ||s||^2: a row 27 from a centre at 2e9 came out
    at 0, was not clipped, and moved coinpress's release 3-4 times the sensitivity its noise
    assumed). Each row's expansion carries a rigorous rounding error bound (``_squared_norms``);
    the rows whose bound is not within 2^-36 of the value (none on basket data about a centre
    in [0, 1]) are recomputed as sum over the stored entries of (b_j (x_ij - t_j))^2 plus the
    absent columns' (b_j t_j)^2, the latter exactly as the total less the stored columns'
    (``exact_sums``): every term >= 0, so the norm is relatively accurate (gamma_{k+6}), as the
    dense engines' are, and a clipped row's contribution has norm at most the radius (up to
    that). With a rotation, t = R^T s is computed, within a bound e of a few 1e-14 ||s||
    (``_rotation_error``) of the exact one; a norm recomputed about it has e added. The
    clipped sum likewise: X^T w - (sum_i w_i) s cancels to an error of about u n ||s|| (0.5
    about a centre at 1e9 with 200,000 rows, against replace-one changes of 2 radii); about a
    centre beyond _FAR_RADII radii it is taken as each column's sum_i w_i (x_ij - t_j) over
    its stored rows less t_j times the exact sum of the other rows' weights (``_far_sum``),
    every term a clipped row's coordinate. Nearer centres (every basket release measured) keep
    the expansions' bits.
    """

    baskets = True

    def __init__(self, x: scipy.sparse.csr_matrix, lo: np.ndarray, hi: np.ndarray,
                 scale: np.ndarray | None = None) -> None:
        box = BoxClamp.of(lo, hi, scale)
        self.lo, self.hi = box.out_lo, box.out_hi
        check_sparse_box(self.lo, self.hi)
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
        # Per row, gamma_{k+4} (k its stored entries) with a 1 % margin, over 2^-36
        # (``_squared_norms``); float32 (4 bytes a row), rounded within the margin.
        self._rounding = np.asarray(_gamma(np.diff(x.indptr) + 4) * (1.01 / _KEPT_ERROR),
                                    dtype=np.float32)
        self._lattice: tuple[RandomRotation, LatticeCounts] | None = None
        # The last view's row norms (``row_norms``), and the columns (CSC, ``_far_sum``).
        self._norms: tuple[View, np.ndarray] | None = None
        self._columns: scipy.sparse.csc_matrix | None = None

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
        # Kept for the clipped sums about the same view, which every clipped mean asks next.
        cached = self._norms
        if cached is None or cached[0] is not view:
            cached = (view, np.sqrt(self._squared_norms(view)))
            self._norms = cached
        return cached[1].copy()

    def _squared_norms(self, view: View) -> np.ndarray:
        """||v(x_i)||^2 for every row, none below the truth by more than a relative
        max(2^-36, 2 gamma_{k+6}) (k the row's stored entries: the class's "Distances to a far
        centre")."""
        shift, scale = self._affine(view)
        rotation = view.rotation
        # ||b (x - s)||^2 = sum_j b_j^2 x_j^2 - 2 sum_j b_j^2 s_j x_j + ||b s||^2: two sparse
        # matrix-vector products. A rotation R is orthogonal and is not scaled (checked), so
        # ||R x - s||^2 = ||x||^2 - 2 <x, R^T s> + ||s||^2: one rotation of s.
        if rotation is not None:
            centre, factor = rotation.invert_padded(shift), np.ones(rotation.padded_dim)
            present = self._squares @ np.ones(self.d)
            cross = self._x @ centre[: self.d]
            total = float(shift @ shift)
            terms, centre_error = shift * shift, _rotation_error(rotation)
        else:
            centre, factor = shift, scale
            b2 = scale * scale
            present = self._squares @ b2
            cross = self._x @ (b2 * shift)
            total = float(b2 @ (shift**2))
            terms, centre_error = b2 * shift**2, 0.0
        squared = present - 2.0 * cross + total
        # The expansion cancels: a row near a far centre (||x - s|| << ||s||) can come out at
        # 0. Its rounding error is at most (Higham's gamma_m = m u / (1 - m u), u = 2^-53, k the
        # row's stored entries): gamma_{k+2} (P + 2 Q) for the two products (P = sum b^2 x^2,
        # Q = sum |b^2 s x| <= sqrt(P T) by Cauchy-Schwarz), the error of the total T
        # (measured: against its exact sum, math.fsum, plus the products' roundings), gamma_2
        # (P + 2 Q + T) for the last two operations, and with a rotation 2 sqrt(P) e for the
        # rounding e of R^T s (``_rotation_error``): in all at most gamma_{k+4}
        # (sqrt(P) + sqrt(T) + e)^2 + |T~ - T| + 2 sqrt(P) e. Rows whose bound exceeds
        # 2^-36 of their value (never on baskets about a centre in [0, 1], whose rows stay far
        # from it against its norm) are recomputed without cancellation (``_distances``).
        if self.n == 0:
            return squared
        exact_total = math.fsum(terms.tolist())
        total_error = abs(total - exact_total) + 8.0 * _UNIT * exact_total
        upper_total = exact_total + total_error
        norm_error = centre_error * math.sqrt(upper_total)
        # In place, one pass a step (990,000 rows: a few ms): sqrt(P) (up to 1e-6 above, which
        # covers gamma_{k+2} for any k < 1e9), then the bound in units of 2^-36 (``_rounding``:
        # gamma_{k+4} 1.01 2^36 per row), against the value.
        root = np.sqrt(present)
        root *= 1.0 + 1e-6
        bound = root + (math.sqrt(upper_total) + norm_error)
        bound *= bound
        bound *= self._rounding
        bound += total_error * (1.01 / _KEPT_ERROR)
        if norm_error:
            bound += root * (2.02 * norm_error / _KEPT_ERROR)
        rows = np.flatnonzero(~(bound <= squared))
        # A row of k entries is never known better than gamma_{k+6}, the recomputation's bound
        # too: rows beyond 2^-36 by less than that (k > 65,000) are not recomputed for no gain.
        entries = self._x.indptr[rows + 1] - self._x.indptr[rows]
        rows = rows[~(bound[rows] * _KEPT_ERROR <= 2.0 * _gamma(entries + 6) * squared[rows])]
        if len(rows):
            # With a rotation, measured about the computed R^T s: within e of the view's norm,
            # so e is added (the norm is then an upper bound, up to its relative rounding).
            squared[rows] = (np.sqrt(self._distances(centre, factor, rows)) + norm_error)**2
        # A norm is >= 0 (a kept value is > 0, or 0 with a zero bound).
        return np.maximum(squared, 0.0)

    def _distances(self, centre: np.ndarray, factor: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """||factor * (x_i - centre)||^2 for the rows ``rows``, without cancellation: over the
        stored entries (b_j (x_ij - t_j))^2, plus the sum over the absent columns of
        (b_j t_j)^2 as the exact total less the stored columns' terms, rounded once
        (``exact_sums``): every term >= 0, a relative error of at most gamma_{k+6}. ``centre``
        and ``factor`` may be a rotation's padded width (columns no row stores). An overflow
        reads as infinitely far (a weight of 0 clips more, never less)."""
        from .exact_sums import expansion, squared_distances  # numba: imported when needed

        squares = (factor * centre)**2
        with np.errstate(invalid="ignore", over="ignore"):
            out = squared_distances(self._x, factor, centre, squares, expansion(squares), rows)
        return np.where(np.isnan(out), np.inf, out)

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

    # IOME's real-valued medians on rows off the integer lattice rotate them at every pass: its
    # searches ask for several halvings' counts at once (``coordinate_count_table``).
    counts_by_table = True

    def coordinate_count_table(self, view: View, edges: np.ndarray) -> np.ndarray:
        if view.rotation is None:
            return super().coordinate_count_table(view, edges)  # O(nnz) a column of edges
        shift, scale = self._affine(view)
        limits = np.asarray(edges, dtype=np.float64) / scale[:, None] + shift[:, None]
        return self._rotated_counts(view.rotation, limits)

    def _rotated_counts(self, rotation: RandomRotation, limit: np.ndarray) -> np.ndarray:
        """Per rotated coordinate j, #{i: (R x_i)_j <= limit_j}: rows on the integer lattice
        from a table of value counts built once per rotation (``LatticeCounts``), the rest
        rotated here. With ``limit`` (k, m) (each row ascending), the (k, m) counts of every
        column of limits, from one rotation of those rows (a trial: 16,000 real-valued rows
        of d = 16,471 rotated at each of 40 halvings took 104 s); (k,) gives (k,)."""
        from .lattice_counts import LatticeCounts  # numba: imported when first needed

        cached = self._lattice
        if cached is None or cached[0] is not rotation:
            cached = (rotation, LatticeCounts(self._x, rotation.signs, parallel.THREADS))
            self._lattice = cached
        lattice = cached[1]
        limits = limit.reshape(limit.shape[0], -1)  # (k, m): a column of limits per question
        on_lattice = np.column_stack([lattice.counts(column, rotation.scale)
                                      for column in limits.T])
        counts = on_lattice + self._rotate_and_count(rotation, limits, lattice.apart)
        return counts.reshape(limit.shape)

    def _rotate_and_count(self, rotation: RandomRotation, limits: np.ndarray,
                          rows: np.ndarray) -> np.ndarray:
        """Per rotated coordinate j and column l of ``limits`` (k, m; each row ascending),
        #{i in rows: (R x_i)_j <= limits[j, l]}, rotating the rows whose l1 norm leaves it
        open a block at a time, once for every column."""
        from .column_counts import add_bucket_counts  # numba: imported when first needed

        # Every rotated coordinate of row i lies in [-b_i, b_i], b_i = ||x_i||_1 / sqrt(d_pad)
        # (R's entries are +-1/sqrt(d_pad)). A row with b_i < min |limit| is below a limit
        # exactly where it is > 0. The margin 1e-9 covers rounding in the rotated values.
        bound = self._row_l1[rows] * rotation.scale * (1.0 + 1e-9)
        undecided = rows[bound >= np.min(np.abs(limits))]
        counts = np.where(limits > 0.0, len(rows) - len(undecided), 0).astype(np.int64)
        buckets = np.zeros((limits.shape[0], limits.shape[1] + 1), dtype=np.int64)
        step = max(1, _BLOCK_BYTES // (8 * rotation.padded_dim))
        # One BLAS thread: the transform's 16 x 16 products only pay for BLAS's threads (20x
        # slower with them on the in-memory engine's one-thread path, issue 20).
        with one_blas_thread():
            for start in range(0, len(undecided), step):
                rotated = rotation.apply(self._x[undecided[start: start + step]].toarray())
                add_bucket_counts(rotated, limits, buckets)
        return counts + np.cumsum(buckets, axis=1)[:, :-1]

    def clipped_sum(self, view: View, radius: float) -> np.ndarray:
        return self.clipped_sums(view, (radius,))[0]

    def clipped_sums(self, view: View, radii: Sequence[float]) -> list[np.ndarray]:
        # sum_i w_i b (x_i - s) = b (X^T w - (sum_i w_i) s), with w_i the clipping weights; with
        # a rotation, R (X^T w) - (sum_i w_i) s: the sum is rotated once. Rounding leaves an
        # error of about u n (C + ||b s||) in it, against replace-one changes of 2 C: about a
        # centre more than _FAR_RADII radii from the origin, the sum is taken over the rows'
        # differences from the centre instead (``_far_sum``), whose error is about u n C as on
        # the dense engines. One choice for all the radii: their sums' differences (the clip
        # residual) then cancel alike.
        shift, scale = self._affine(view)
        norms = self.row_norms(view)
        smallest = min(radii, default=np.inf)
        reach = float(np.linalg.norm(shift if view.rotation is not None else scale * shift))
        far = bool(np.isfinite(smallest) and reach > _FAR_RADII * smallest)
        out = []
        for radius in radii:
            weights = clip_weights(norms, radius)
            if far:
                out.append(self._far_sum(view, shift, scale, weights))
                continue
            summed = self._x.T @ weights
            if view.rotation is not None:
                summed = view.rotation.apply(summed)
            out.append(scale * (summed - weights.sum() * shift))
        return out

    def _far_sum(self, view: View, shift: np.ndarray, scale: np.ndarray,
                 weights: np.ndarray) -> np.ndarray:
        """sum_i w_i v(x_i) as sum_i w_i b (x_i - t), t the centre the norms measure from
        (``_squared_norms``): per column j, the stored rows' w_i (x_ij - t_j), then
        -t_j z_j with z_j the sum of the weights of the rows that store nothing there, exact
        (``exact_sums``). Every term is a coordinate of a clipped row, at most the radius, so
        the rounding error is about u n C, not u n ||t||. With a rotation, t = R^T s padded:
        R (sum_i w_i (x_i - t)) + (sum_i w_i) (R t - s), the last a rounding of s's size."""
        from .exact_sums import absent_sums, expansion, rounded  # numba: imported when needed

        rotation = view.rotation
        centre = shift if rotation is None else rotation.invert_padded(shift)
        if self._columns is None:
            self._columns = self._x.tocsc()
        x = self._x
        moved = scipy.sparse.csr_matrix((x.data - centre[x.indices], x.indices, x.indptr),
                                        shape=x.shape)
        partials = expansion(weights)
        summed = moved.T @ weights - centre[: self.d] * absent_sums(self._columns, weights,
                                                                    partials)
        if rotation is None:
            return scale * summed
        total = rounded(partials)
        # The padding: no row stores those columns, every weight is absent.
        summed = np.concatenate([summed, -total * centre[self.d:]])
        return (rotation.apply_padded(summed)
                + total * (rotation.apply_padded(centre) - shift))

    def user_rows(self, view: View) -> Iterator[np.ndarray]:
        # Dense blocks of the finished rows, _BLOCK_BYTES at a time (a secure release's sums,
        # ``grid_sums``, and protocol simulations): O(n k) time, memory one block.
        self._affine(view)  # only the views this engine answers
        step = max(1, _BLOCK_BYTES // (8 * view.output_dim(self.d)))
        for start in range(0, self.n, step):
            yield view.apply(self._x[start:start + step].toarray())

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

    def pair_distances(self, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``Engine.pair_distances`` in O(nnz): the differences of the paired clamped rows as
        one sparse matrix (n / 2 rows), their absolute values and squares summed by row. Each
        row's sums run over its stored entries, not the dense engines' column blocks, so the
        last bits may differ from theirs (``auto``'s count of close pairs reads them against
        a threshold: a pair within a rounding of it may count on one engine and not another,
        as rows within a rounding of a radius may be clipped on one)."""
        pairs = len(order) // 2
        first, second = np.asarray(order[0:2 * pairs:2]), np.asarray(order[1:2 * pairs:2])
        diffs = self._x[first] - self._x[second]
        l1 = np.asarray(abs(diffs).sum(axis=1), dtype=np.float64).ravel()
        squared = np.asarray(diffs.multiply(diffs).sum(axis=1), dtype=np.float64).ravel()
        return l1, squared

    def pair_differences(self, view: View, order: np.ndarray) -> np.ndarray:
        self._dense_only("pair_differences (an n/2 x d array)")
