"""Exact rotated coordinate counts of sparse rows whose values lie on one integer lattice, from
a per-coordinate table of value counts built once per rotation: IOME's medians (sec. 3.3) on
basket data without rotating every row in every halving.

A row whose stored values are integer multiples w_i c of one unit c > 0 rotates to
(R x)_j = u sum_i w_i s_i H[a_i, j] = u v_j, u = c / sqrt(d_pad), with v_j an integer and
|v_j| <= sum_i |w_i| (the row's lattice l1 norm). So a table of how many rows take each integer
value at each rotated coordinate answers every threshold of every halving exactly. It holds
the rows whose lattice l1 norm is at most the table's half width V:

- 0/1-like rows (|w_i| = 1) of few items (k below about log2 d_pad) are never rotated. With
  e_i(j) = sign(w_i) s_i H[a_i, j] = +-1 and H[a, j] H[b, j] = H[a xor b, j], the elementary
  symmetric sums e_m(e(j)) = sum over m-subsets S of prod_S sign(w_i) s_i H[xor of S, j]
  are, summed over the rows of length k, one Walsh-Hadamard transform A_m of the subsets'
  signed xor counts (2^k subsets a row, Gray-code order). e_m depends only on the number q of
  -1 among the e_i (a Krawtchouk polynomial, matrix K[m, q]; K K = 2^k I), so the rows of
  length k with q minus signs at j, value k - 2q, number (K A)[q, j] / 2^k: exact integers.
- The other rows are rotated once each, unnormalised (exact integers in float64), in blocks,
  and their values tallied.

Rows beyond the table (lattice l1 norm above V, or values off the lattice) are left to the
caller (``apart``). Which rows take which route depends on the data, but only the time does:
the counts are exact either way.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, partial

import numpy as np
import scipy.sparse
from numba import njit

from ..parallel import map_on_threads
from ..transforms import fwht, hadamard_matrix
from .blas import one_blas_thread

# Bytes of the table of value counts ((2V + 1) x d_pad integers): V is the largest half width
# that fits, or the largest lattice l1 norm of a row if smaller.
TABLE_BYTES = 256 << 20
# Bytes of one block of rotated rows (float64 at the padded width) while the table is built.
BLOCK_BYTES = 32 << 20
# Coordinates a tally sweeps over all rows of a block before moving on.
_STRIP = 512
# Rows of at most this many items are rotated as a product of two half-width Hadamard
# matrices' rows (2 k d_pad flops), longer ones by the fast transform (about 128 d_pad).
_MOST_PRODUCT_ITEMS = 64
# The subset route's cost per 0/1 row of k items, 2^k scattered additions, against the
# product route's, about 20 us + 5 ns x d_pad (measured, CPU time, d_pad = 65,536: 10-20 ns a
# subset, 0.35 ms a product-route row of 12-20 items): rows of at most
# log2((20 us + 5 ns x d_pad) / 15 ns) items take the subset route (14 at d_pad = 65,536).
_SUBSET_COST, _ROW_COST, _COORDINATE_COST = 15e-9, 20e-6, 5e-9


@njit(nogil=True, cache=True)
def _subset_sums(indptr, indices, entry_signs, rows, out):  # pragma: no cover - compiled
    # out[m, x] += prod of the entries' signs over every m-subset of a row whose items xor to
    # x; consecutive Gray codes differ in one item, so each subset costs O(1).
    for r in rows:
        start = indptr[r]
        k = indptr[r + 1] - start
        x = 0
        sign = 1.0
        size = 0
        out[0, 0] += 1.0
        for g in range(1, 1 << k):
            b = 0
            while not (g >> b) & 1:
                b += 1
            x ^= indices[start + b]
            sign *= entry_signs[start + b]
            if ((g ^ (g >> 1)) >> b) & 1:
                size += 1
            else:
                size -= 1
            out[size, x] += sign


@njit(nogil=True, cache=True)
def _tally(values, table, offset, first, stop):  # pragma: no cover - compiled
    # table[v + offset, j] += 1 for every row's exact integer value v at coordinates j in
    # [first, stop), a strip of coordinates at a time: values crowd near 0, so the strip's
    # few busy table rows stay in cache (a coordinate-major table missed cache on every add).
    for strip in range(first, stop, _STRIP):
        end = min(strip + _STRIP, stop)
        for r in range(values.shape[0]):
            for j in range(strip, end):
                table[np.int64(values[r, j]) + offset, j] += 1


@cache
def _krawtchouk(k: int) -> np.ndarray:
    """K[m, q] = e_m of k signs of which q are -1: the coefficients of (1 + z)^(k-q) (1 - z)^q."""
    matrix = np.zeros((k + 1, k + 1), dtype=np.int64)
    for q in range(k + 1):
        column = np.ones(1, dtype=np.int64)
        for factor in [(1, 1)] * (k - q) + [(1, -1)] * q:
            column = np.convolve(column, factor)
        matrix[:, q] = column
    return matrix


def _spans(size: int, parts: int) -> list[tuple[int, int]]:
    return [(size * t // parts, size * (t + 1) // parts) for t in range(parts)]


class LatticeCounts:
    """Per rotated coordinate j, #{i: (R x_i)_j <= limit_j} over the rows of the CSR matrix
    ``x`` (n, d) that lie on one lattice, for R = (1/sqrt(d_pad)) H D with D = diag(``signs``).

    Rows in ``apart`` (values off the lattice, or a lattice l1 norm above the table's reach)
    are not counted: the caller counts them. Memory: the table, at most ``TABLE_BYTES``
    (256 MiB), plus per thread one block of ``BLOCK_BYTES`` (32 MiB) of rotated rows and the
    transform's copies of it while building, and O(nnz) index arrays. Time: one rotation of
    each row not taking the subset route, 2^k additions for each of k items that does, then
    O(d_pad) per ``counts``.
    """

    def __init__(self, x: scipy.sparse.csr_matrix, signs: np.ndarray, threads: int = 1) -> None:
        d_pad = signs.shape[0]
        self.threads = threads
        if (x.data == 0).any():  # stored zeros are no items
            x = scipy.sparse.csr_matrix(x, copy=True)
            x.eliminate_zeros()
        self.unit = _commonest(np.abs(x.data))
        steps = np.rint(x.data / self.unit)
        row_of = np.repeat(np.arange(x.shape[0]), np.diff(x.indptr))
        off_lattice = np.bincount(row_of, weights=(steps * self.unit != x.data).astype(float),
                                  minlength=x.shape[0]) > 0
        l1 = np.bincount(row_of, weights=np.abs(steps), minlength=x.shape[0])
        lengths = np.diff(x.indptr)
        itemsize = 4 if x.shape[0] < 2**31 else 8
        reach = (TABLE_BYTES // (itemsize * d_pad) - 1) // 2
        on = ~off_lattice
        self.half_width = int(max(0, min(reach, l1[on].max(initial=0))))
        held = on & (l1 <= self.half_width)
        most = int(np.log2((_ROW_COST + _COORDINATE_COST * d_pad) / _SUBSET_COST))
        short = held & (l1 == lengths) & (lengths <= min(most, self.half_width))
        self.apart = np.flatnonzero(~held)
        # Row v + V: how many rows take the value v at each coordinate (cumulated at the end).
        self.table = np.zeros((2 * self.half_width + 1, d_pad),
                              dtype=np.int32 if itemsize == 4 else np.int64)
        # Each entry's integer multiple of the unit with its rotation sign: a row rotates,
        # unnormalised, to the Walsh-Hadamard transform of these at its items.
        signed = steps * signs[x.indices]
        rotated = held & ~short
        with one_blas_thread():
            self._add_subset_rows(x, signed, lengths, short)
            product = lengths <= _MOST_PRODUCT_ITEMS
            self._add_rotated_rows(partial(_rotate_by_product, x, signed, d_pad),
                                   np.flatnonzero(rotated & product), d_pad)
            self._add_rotated_rows(partial(_rotate_by_transform, x, signed, d_pad),
                                   np.flatnonzero(rotated & ~product), d_pad)
        np.add.accumulate(self.table, axis=0, out=self.table)  # cumsum would upcast

    def _add_subset_rows(self, x: scipy.sparse.csr_matrix, signed: np.ndarray,
                         lengths: np.ndarray, short: np.ndarray) -> None:
        """The short 0/1 rows' value counts, one length k at a time (module notes)."""
        d_pad = self.table.shape[1]

        def counts_of_length(k: int) -> np.ndarray:
            sums = np.zeros((k + 1, d_pad))
            _subset_sums(x.indptr, x.indices, signed, np.flatnonzero(short & (lengths == k)),
                         sums)
            # Integers below 2^53 (at most n 2^k in all), so the transform is exact.
            transformed = np.rint(fwht(sums)).astype(np.int64)
            return (_krawtchouk(k) @ transformed) >> k  # exact: K K = 2^k I

        present = [int(k) for k in np.unique(lengths[short])]
        for k, by_minus in zip(present, map_on_threads(counts_of_length, present), strict=True):
            # q minus signs: the value k - 2q, table rows V + k, V + k - 2, ..., V - k.
            top = self.half_width + k
            self.table[top - 2 * k: top + 1: 2] += by_minus[::-1].astype(self.table.dtype)

    def _add_rotated_rows(self, rotate: Callable[[np.ndarray], np.ndarray], rows: np.ndarray,
                          d_pad: int) -> None:
        """The value counts of ``rows``, rotated once (unnormalised: exact integers) a block
        at a time: each thread rotates a share of a block's rows, then tallies a share of the
        coordinates of all of them."""
        step = max(1, BLOCK_BYTES // (8 * d_pad))

        def tally(parts: list[np.ndarray], span: tuple[int, int]) -> None:
            for values in parts:
                _tally(values, self.table, self.half_width, *span)

        for start in range(0, len(rows), step):
            block = rows[start:start + step]
            parts = map_on_threads(rotate, [block[a:b] for a, b in
                                            _spans(len(block), self.threads)])
            map_on_threads(partial(tally, parts), _spans(d_pad, self.threads))

    def counts(self, limit: np.ndarray, scale: float) -> np.ndarray:
        """#{held rows i: (R x_i)_j <= limit_j} for every rotated coordinate j: (d_pad,) int64.

        ``scale`` is R's 1/sqrt(d_pad). A row's value counts when fl(v u) <= limit_j, with
        u = fl(c * scale); fl(v u) is non-decreasing in v, so the rows counted are those with
        v <= the largest such integer, which the rounded quotient limit_j / u finds to within
        one."""
        u = self.unit * scale
        top = float(self.half_width)
        with np.errstate(invalid="ignore", over="ignore"):
            below = np.clip(np.floor(np.asarray(limit, dtype=np.float64) / u), -top - 1.0, top)
            below -= below * u > limit
            below += (below < top) & ((below + 1.0) * u <= limit)
        index = below.astype(np.int64) + self.half_width
        found = self.table[np.maximum(index, 0), np.arange(self.table.shape[1])]
        return np.where(index >= 0, found, 0).astype(np.int64)


def _rotate_by_transform(x: scipy.sparse.csr_matrix, signed: np.ndarray, d_pad: int,
                         rows: np.ndarray) -> np.ndarray:
    """The unnormalised rotations of ``rows``: the fast transform of their dense copies."""
    starts, stops = x.indptr[rows], x.indptr[rows + 1]
    dense = np.zeros((len(rows), d_pad))
    entries = _ranges(starts, stops)
    dense[np.repeat(np.arange(len(rows)), stops - starts), x.indices[entries]] = signed[entries]
    return fwht(dense)


def _rotate_by_product(x: scipy.sparse.csr_matrix, signed: np.ndarray, d_pad: int,
                       rows: np.ndarray) -> np.ndarray:
    """The unnormalised rotations of ``rows`` of few items: with j = (j_hi, j_lo) and
    H[a, j] = H_hi[a_hi, j_hi] H_lo[a_lo, j_lo], a row sum_i w_i H[a_i, :] is the product
    (w H_hi[a_hi])^T H_lo[a_lo], a k x sqrt(d_pad) by k x sqrt(d_pad) product (exact integers)."""
    low_bits = d_pad.bit_length() // 2  # half of log2(d_pad), rounded up
    high, low = hadamard_matrix(d_pad >> low_bits), hadamard_matrix(1 << low_bits)
    out = np.empty((len(rows), d_pad))
    for r, row in enumerate(rows):
        entries = slice(x.indptr[row], x.indptr[row + 1])
        items = x.indices[entries]
        np.matmul((signed[entries, None] * high[items >> low_bits]).T,
                  low[items & ((1 << low_bits) - 1)],
                  out=out[r].reshape(high.shape[0], low.shape[0]))
    return out


def _commonest(values: np.ndarray) -> float:
    """The most frequent of the positive ``values`` (1 if there are none): the lattice's unit,
    which a few rows off it (stored apart) do not move."""
    if not len(values):
        return 1.0
    if (values == values[0]).all():  # 0/1 baskets: no sort
        return float(values[0])
    distinct, counts = np.unique(values, return_counts=True)
    return float(distinct[np.argmax(counts)])


def _ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """The concatenation of range(start, stop) for each pair."""
    lengths = stops - starts
    offsets = np.repeat(stops - np.cumsum(lengths), lengths)
    return offsets + np.arange(lengths.sum())
