"""Exact per-column counts #{i: y_ij <= t_j} for a sequence of threshold vectors, each column
partitioned lazily (a quicksort that stops where the questions stop): IOME's medians (sec. 3.3).

A binary search asks every column once per halving. Comparing all n values each time reads the
whole n x k matrix per halving; here each column keeps the pivots it was asked about, values
left of a pivot's position being exactly those <= it, so a question only partitions the values
between the two pivots around its threshold. Under a bisection that segment shrinks with every
halving. While the search interval is still wider than the data, most questions fall beyond
the values of their segment; each segment remembers its smallest and largest value (found
while it was partitioned), so those are answered without a pass: IOME's medians visit 2.1 n
values a column instead of 10.5 n on Gaussian C (a search interval far wider than the data),
3.9 n instead of 4.7 n on MNIST. Exact: answers equal the plain comparison's
for any thresholds, in any order (NaN-free values).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

from ..parallel import over_row_ranges

# Pivots a column remembers (two are the sentinels -inf and +inf): a bisection of 64 halvings
# fits; further questions are still answered exactly, by partitioning without remembering.
_PIVOTS = 66


@njit(nogil=True, cache=True)
def _count_columns(values, pivot_values, pivot_positions, pivot_counts, extremes, thresholds,
                   out, first, stop):  # pragma: no cover - compiled
    n = values.shape[1]
    for j in range(first, stop):
        t = thresholds[j]
        m = pivot_counts[j]
        # The last pivot i with pivot_values[j, i] <= t (pivot 0 is -inf, so i >= 0).
        lo, hi = 0, m - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if pivot_values[j, mid] <= t:
                lo = mid
            else:
                hi = mid - 1
        i = lo
        if i == m - 1 or pivot_values[j, i] == t:
            out[j] = n if i == m - 1 else pivot_positions[j, i]
            continue
        # A threshold below the segment's smallest value or at least its largest needs no
        # pass: a bisection asks many while its interval is wider than the data.
        if t < extremes[j, i, 0]:
            out[j] = pivot_positions[j, i]
            continue
        if t >= extremes[j, i, 1]:
            out[j] = pivot_positions[j, i + 1]
            continue
        # Values in [start, end) lie in (pivot i, pivot i+1]: move those <= t to the front,
        # row[start:a] <= t < row[a:q] at every q. Branch-free (Lomuto with an unconditional
        # swap): a comparison that goes either way at random costs no misprediction. The
        # segment's smallest and largest values ride along: the left part's smallest and the
        # right part's largest from now on.
        row = values[j]
        a = pivot_positions[j, i]
        smallest, largest = np.inf, -np.inf
        for q in range(a, pivot_positions[j, i + 1]):
            x = row[q]
            row[q] = row[a]
            row[a] = x
            a += x <= t
            smallest = min(smallest, x)
            largest = max(largest, x)
        out[j] = a
        if m < pivot_values.shape[1]:
            for q in range(m, i + 1, -1):
                pivot_values[j, q] = pivot_values[j, q - 1]
                pivot_positions[j, q] = pivot_positions[j, q - 1]
                # Segment q - 1 lies between pivots q - 1 and q.
                extremes[j, q - 1, 0] = extremes[j, q - 2, 0]
                extremes[j, q - 1, 1] = extremes[j, q - 2, 1]
            pivot_values[j, i + 1] = t
            pivot_positions[j, i + 1] = a
            pivot_counts[j] = m + 1
            # Unknown bounds are -inf below and +inf above: they answer nothing.
            extremes[j, i, 0], extremes[j, i, 1] = smallest, np.inf
            extremes[j, i + 1, 0], extremes[j, i + 1, 1] = -np.inf, largest


@njit(nogil=True, cache=True)
def _write_columns(block, values, first):  # pragma: no cover - compiled
    rows, k = block.shape
    for c0 in range(0, k, _STRIP):
        stop = min(c0 + _STRIP, k)
        for i in range(rows):
            for c in range(c0, stop):
                values[c, first + i] = block[i, c]


# Columns a strip of ``write_columns`` copies together: each of the strip's destination rows
# gets a whole cache line per pass over the block's rows (4 and 16 measured slower).
_STRIP = 8


def write_columns(block: np.ndarray, values: np.ndarray, first: int) -> None:
    """``values[:, first:first + rows] = block.T`` for a row block (rows, k) of the layout a
    ``ColumnCounter`` takes (k, n), the same values: numpy's transposing copy took as long as
    rotating the block (0.059 against 0.021 s for Gaussian C's 10^4 x 2048, one core).
    ``engines.base.block_columns`` is its twin for whole 64 MiB blocks into a new array, kept
    apart because each is the faster one where it is used: for cache-sized blocks this loop
    (0.022 against 0.046 s for numpy's tiles over Gaussian C's blocks), for 64 MiB blocks
    numpy's tiles (0.026 against 0.033 s)."""
    _write_columns(block, values, first)


# The fewest values a thread of ``ColumnCounter.counts`` is given (a few milliseconds of work).
_VALUES_PER_THREAD = 1 << 18


class ColumnCounter:
    """Counts #{i: values[j, i] <= t_j} for each row j of ``values`` (k, n), which it owns
    and reorders within each row (one coordinate's n values per row, so each is contiguous).

    Memory: the values plus O(k) pivots. Each call reorders rows; calls must not overlap.
    """

    def __init__(self, values: np.ndarray, threads: int = 1) -> None:
        k, n = values.shape
        self.values = values
        self.threads = threads
        self._pivot_values = np.empty((k, _PIVOTS))
        self._pivot_positions = np.empty((k, _PIVOTS), dtype=np.int64)
        # The sentinels -inf (position 0) and +inf (position n). No column minima and maxima
        # up front (two more reads of every column): each segment's are found as it is
        # partitioned, the whole column's by the first question.
        self._pivot_values[:, :2] = [-np.inf, np.inf]
        self._pivot_positions[:, :2] = [0, n]
        self._pivot_counts = np.full(k, 2, dtype=np.int64)
        # extremes[j, i] bounds segment i (between pivots i and i + 1) below and above.
        self._extremes = np.empty((k, _PIVOTS, 2))
        self._extremes[:, 0] = [-np.inf, np.inf]

    def counts(self, thresholds: np.ndarray) -> np.ndarray:
        """#{i: values[j, i] <= thresholds[j]} for every j: (k,) int64."""
        thresholds = np.ascontiguousarray(thresholds, dtype=np.float64)
        k = self.values.shape[0]
        out = np.empty(k, dtype=np.int64)
        _over_columns(self.values, self.threads, lambda first, stop: _count_columns(
            self.values, self._pivot_values, self._pivot_positions, self._pivot_counts,
            self._extremes, thresholds, out, first, stop))
        return out


def _over_columns(values: np.ndarray, threads: int, run: Callable[[int, int], None]) -> None:
    """``run(first, stop)`` over consecutive spans of the rows of ``values`` (k, n), one span a
    thread. A thread per core only when each gets enough values to outweigh starting it: small
    inputs (tests, audits, many small releases) were dominated by thread start-up."""
    over_row_ranges(values.shape[0], lambda part: run(part.start, part.stop),
                    values=values.size,
                    threads=max(1, min(threads, values.size // _VALUES_PER_THREAD)))


@njit(nogil=True, cache=True)
def _lattice_tally(values, step, lows, offsets, table, first,
                   stop):  # pragma: no cover - compiled
    for j in range(first, stop):
        row = values[j]
        base = offsets[j] - lows[j]
        for x in row:
            table[base + int(x * step)] += 1
        total = 0
        for q in range(offsets[j], offsets[j + 1]):
            total += table[q]
            table[q] = total


@njit(nogil=True, cache=True)
def _lattice_counts(table, offsets, lows, per_unit, n, thresholds,
                    out):  # pragma: no cover - compiled
    for j in range(thresholds.size):
        at = thresholds[j] * per_unit
        high = lows[j] + offsets[j + 1] - offsets[j] - 1
        if at >= high:
            out[j] = n
        elif at >= lows[j]:
            out[j] = table[offsets[j] + int(np.floor(at)) - lows[j]]
        else:  # below every value (or NaN, which no value is <=: never an index)
            out[j] = 0


class LatticeCounter:
    """``ColumnCounter``'s counts for columns whose values are all integer multiples of one
    ``unit`` (a power of two, so value / unit is exact): each column's cumulative counts of
    its integers, from the smallest to the largest, built in one read, then any threshold
    answered by one lookup. The rotated copy of small-integer data (MNIST's, ``_rotated_type``)
    is such: 20 halvings' lazy partitions visited 3.9 n values a column there (0.155 s), the
    tables read 2 n (the ranges, then the tally: 0.06 s).

    ``of`` builds one only when its tables hold at most as many entries as ``values`` (int32
    counts: no more memory than a float32 copy), else returns None. The counter keeps only the
    tables: the values may be dropped. ``values`` of an integer type are counts of ``unit``
    already (the int16 rotated copy, ``rotation_kernels.rotate_into_int16_columns``: half the
    bytes of float32 to read, and no conversion in the tally).
    """

    def __init__(self, n: int, per_unit: float, lows: np.ndarray, offsets: np.ndarray,
                 table: np.ndarray) -> None:
        self.n, self._per_unit, self._lows, self._offsets, self._table = (
            n, per_unit, lows, offsets, table)

    @classmethod
    def of(cls, values: np.ndarray, unit: float, threads: int = 1) -> LatticeCounter | None:
        k, n = values.shape
        per_unit = 1.0 / unit
        # Integers count units already; floats are converted (exact: a power-of-two unit).
        step = 1 if values.dtype.kind in "iu" else per_unit
        smallest, largest = np.empty(k, dtype=values.dtype), np.empty(k, dtype=values.dtype)

        def ranges(first: int, stop: int) -> None:
            np.min(values[first:stop], axis=1, out=smallest[first:stop])
            np.max(values[first:stop], axis=1, out=largest[first:stop])

        _over_columns(values, threads, ranges)
        lows = (smallest.astype(np.float64) * step).astype(np.int64)
        offsets = np.zeros(k + 1, dtype=np.int64)
        np.cumsum((largest.astype(np.float64) * step).astype(np.int64) - lows + 1,
                  out=offsets[1:])
        if offsets[-1] > values.size or n >= 2**31:
            return None
        # int32 counts (n < 2^31): half the cache a column's table takes, 20 % faster tallies.
        table = np.zeros(offsets[-1], dtype=np.int32)
        _over_columns(values, threads, lambda first, stop: _lattice_tally(
            values, step, lows, offsets, table, first, stop))
        return cls(n, per_unit, lows, offsets, table)

    def counts(self, thresholds: np.ndarray) -> np.ndarray:
        """#{i: values[j, i] <= thresholds[j]} for every j: (k,) int64."""
        thresholds = np.ascontiguousarray(thresholds, dtype=np.float64)
        out = np.empty(thresholds.size, dtype=np.int64)
        _lattice_counts(self._table, self._offsets, self._lows, self._per_unit, self.n,
                        thresholds, out)
        return out


@njit(nogil=True, cache=True)
def _add_bucket_counts(values, edges, out):  # pragma: no cover - compiled
    rows, k = values.shape
    m = edges.shape[1]
    for j in range(k):
        e = edges[j]
        first, last = e[0], e[m - 1]
        # Where x falls among evenly spaced edges, corrected below: exact for any ascending
        # edges, and one or two comparisons a value for the dyadic grids searches ask about.
        step = (m - 1) / (last - first) if m > 1 and last > first else 0.0
        for i in range(rows):
            x = values[i, j]
            if x <= first:
                below = 0
            elif x > last:
                below = m
            else:
                below = min(m, 1 + int((x - first) * step))
                while below > 0 and e[below - 1] >= x:
                    below -= 1
                while below < m and e[below] < x:
                    below += 1
            out[j, below] += 1


def add_bucket_counts(values: np.ndarray, edges: np.ndarray, out: np.ndarray) -> None:
    """Add to ``out[j, b]`` (k, m + 1) the number of rows i of ``values`` (rows, k) with exactly
    b of ``edges[j]`` (k, m; each row ascending) below values[i, j]. The cumulative sums along
    a row of ``out`` are then the counts #{i: values[i, j] <= edges[j, l]} (NaN-free values)."""
    _add_bucket_counts(values, np.ascontiguousarray(edges, dtype=np.float64), out)
