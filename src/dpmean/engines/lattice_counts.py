"""Exact rotated coordinate counts of sparse rows whose values lie on one integer lattice, from
a per-coordinate table of value counts built once per rotation: IOME's medians (sec. 3.3) on
basket data without rotating every row in every halving.

A row whose stored values are integer multiples w_i c of one unit c > 0 rotates to
(R x)_j = u sum_i w_i s_i H[a_i, j] = u v_j, u = c / sqrt(d_pad), with v_j an integer and
|v_j| <= sum_i |w_i| (the row's lattice l1 norm). So a table of how many rows take each integer
value at each rotated coordinate answers every threshold of every halving exactly. It holds
the rows whose lattice l1 norm is at most the table's half width V:

- 0/1-like rows (|w_i| = 1) of k <= K items are never rotated. With e_i(j) = sign(w_i) s_i
  H[a_i, j] = +-1 and H[a, j] H[b, j] = H[a xor b, j], the elementary symmetric sums
  e_m(e(j)) = sum over m-subsets S of prod_S sign(w_i) s_i H[xor of S, j] are, summed over the
  rows of length k, one Walsh-Hadamard transform A_m of the subsets' signed xor counts
  (2^k subsets a row, Gray-code order). e_m depends only on the number q of -1 among the
  e_i (a Krawtchouk polynomial, matrix K[m, q]; K K = 2^k I), so the rows of length k with
  q minus signs at j, value k - 2q, number (K A)[q, j] / 2^k: integers throughout.
- The other rows are rotated once each, unnormalised (exact integers in float64), in blocks,
  and their values tallied.

Rows beyond the table (lattice l1 norm above V, or values off the lattice) are left to the
caller (``apart``). Which rows take which route depends on the data, but only the time does:
the counts are exact either way.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import cache, partial

import numpy as np
import scipy.sparse
from numba import njit
from threadpoolctl import threadpool_limits

from ..transforms import fwht

# Bytes of the table of value counts (d_pad x (2V + 1) integers): V is the largest half width
# that fits, or the largest lattice l1 norm of a row if smaller.
TABLE_BYTES = 256 << 20
# Bytes of one block of rotated rows (float64 at the padded width) while the table is built.
BLOCK_BYTES = 32 << 20
# Longest 0/1 row that takes the subset route: its 2^k scattered additions cost about what
# rotating it (d_pad log d_pad) does when 2^k is about 2 d_pad; the cap bounds the subset
# sums' (k + 1) x d_pad floats.
_MOST_SUBSET_ITEMS = 18


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
    # table[j, v + offset] += 1 for every row's exact integer value v at coordinates j in
    # [first, stop); rows are read in order, so one row's writes run along the table.
    for r in range(values.shape[0]):
        for j in range(first, stop):
            table[j, np.int64(values[r, j]) + offset] += 1


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
        most = min(_MOST_SUBSET_ITEMS, d_pad.bit_length(), self.half_width)
        held = on & (l1 <= self.half_width)
        short = held & (l1 == lengths) & (lengths <= most)
        self.apart = np.flatnonzero(~held)
        self.table = np.zeros((d_pad, 2 * self.half_width + 1),
                              dtype=np.int32 if itemsize == 4 else np.int64)
        # Each entry's integer multiple of the unit with its rotation sign: row x rotates,
        # unnormalised, to fwht of these at the row's items.
        signed = steps * signs[x.indices]
        with threadpool_limits(limits=1, user_api="blas"), \
                ThreadPoolExecutor(threads) as pool:
            self._add_subset_rows(pool, x, signed, lengths, short, most)
            self._add_rotated_rows(pool, x, signed, np.flatnonzero(held & ~short), d_pad)
        np.cumsum(self.table, axis=1, out=self.table)

    def _add_subset_rows(self, pool: ThreadPoolExecutor, x: scipy.sparse.csr_matrix,
                         signed: np.ndarray, lengths: np.ndarray, short: np.ndarray,
                         most: int) -> None:
        """The short 0/1 rows' value counts, one length k at a time (module notes)."""
        d_pad, centre = self.table.shape[0], self.half_width

        def counts_of_length(k: int) -> np.ndarray:
            sums = np.zeros((k + 1, d_pad))
            _subset_sums(x.indptr, x.indices, signed, np.flatnonzero(short & (lengths == k)),
                         sums)
            # Integers below 2^53 (at most n 2^k in all), so the transform is exact.
            transformed = np.rint(fwht(sums)).astype(np.int64)
            return (_krawtchouk(k) @ transformed) >> k  # exact: K K = 2^k I

        lengths_present = np.unique(lengths[short])
        for k, by_minus in zip(lengths_present,
                               pool.map(counts_of_length, (int(k) for k in lengths_present)),
                               strict=True):
            for q in range(k + 1):  # value k - 2q
                self.table[:, centre + k - 2 * q] += by_minus[q].astype(self.table.dtype)

    def _add_rotated_rows(self, pool: ThreadPoolExecutor, x: scipy.sparse.csr_matrix,
                          signed: np.ndarray, rows: np.ndarray, d_pad: int) -> None:
        """The value counts of ``rows``, rotated once, a block at a time: each thread rotates
        a share of the block's rows, then tallies a share of the coordinates of all of them."""
        step = max(1, BLOCK_BYTES // (8 * d_pad))

        def rotate(block_rows: np.ndarray) -> np.ndarray:
            starts, stops = x.indptr[block_rows], x.indptr[block_rows + 1]
            dense = np.zeros((len(block_rows), d_pad))
            entries = _ranges(starts, stops)
            dense[np.repeat(np.arange(len(block_rows)), stops - starts),
                  x.indices[entries]] = signed[entries]
            return fwht(dense)

        def tally(parts: list[np.ndarray], span: tuple[int, int]) -> None:
            for values in parts:
                _tally(values, self.table, self.half_width, *span)

        for start in range(0, len(rows), step):
            block = rows[start:start + step]
            parts = list(pool.map(rotate, [block[a:b] for a, b in
                                           _spans(len(block), self.threads)]))
            list(pool.map(partial(tally, parts), _spans(d_pad, self.threads)))

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
        found = self.table[np.arange(self.table.shape[0]), np.maximum(index, 0)]
        return np.where(index >= 0, found, 0).astype(np.int64)


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
