"""Columns of byte values read by sorted position from their histograms (``CountedOrder``): the
in-memory engine's answer to PLAN's pair values on 8-bit data (MNIST's pixels), and to the
column questions about 8-bit data itself (the trimmed mean's tails, PLAN's medians).

A column of m values from 256 possible ones is its 256 counts. The values a mechanism reads are
a monotone map of the bytes (pair values v = |a - b|^2 / 2 on the log scale), so the map is
applied once per byte value and the sorted column is never written out: the exponential
mechanism reads only its window of ranks (a fifth of each column on MNIST), and a column's
outside when a draw lands there. Before, every pair magnitude was sorted, converted to float64
and mapped (a log each: 27 million on MNIST).
"""

from __future__ import annotations

import numpy as np

from ..parallel import over_row_ranges


class CountedOrder:
    """``engines.base.ColumnOrder`` of k columns of m values each, column j holding
    ``counts[j, b]`` copies of ``table[b, j]`` for each byte b (``table`` non-decreasing in
    b, so the copies in byte order are the column sorted).

    Parameters
    ----------
    counts : numpy.ndarray
        (k, 256) integers, each row summing to m.
    table : numpy.ndarray
        (256, k) float64: the value each byte stands for in each column.
    """

    def __init__(self, counts: np.ndarray, table: np.ndarray) -> None:
        self._counts = np.ascontiguousarray(counts, dtype=np.int64)
        self._table = np.ascontiguousarray(table, dtype=np.float64)
        self.shape = (int(self._counts[0].sum()) if len(self._counts) else 0,
                      int(self._counts.shape[0]))

    def positions(self, start: int, stop: int, cols: slice) -> np.ndarray:
        from .pair_kernels import expand_positions

        first, last, _ = cols.indices(self.shape[1])
        out = np.empty((last - first, stop - start))
        over_row_ranges(last - first, lambda part: expand_positions(
            self._counts, self._table, first + part.start, first + part.stop, start, stop,
            out[part]), values=out.size)
        return out

    def runs(self, start: int, stop: int, col: int) -> tuple[np.ndarray, np.ndarray]:
        """Positions start..stop-1 of column ``col`` as one run per byte held there: at most
        256 values where ``positions`` writes stop - start (the sampler's outside regions)."""
        counts = self._counts[col]
        ends = np.cumsum(counts)
        begins = ends - counts
        held = (counts > 0) & (ends > start) & (begins < stop)
        return self._table[held, col], np.maximum(begins[held], start)

    def tails(self, m: int, divisor: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``ColumnOrder.tails``, the middle sum as sum over bytes of (copies in the middle) x
        value: exact, so the bits of any order of the positions' sum, when the values are
        integers whose sums stay below 2^53 (clamped bytes, ``InMemoryEngine.column_order``);
        otherwise rounded once per byte value rather than once per position."""
        n, k = self.shape
        every = slice(0, k)
        ends = np.cumsum(self._counts, axis=1)
        inside = np.clip(ends, m, n - m) - np.clip(ends - self._counts, m, n - m)
        middle = np.einsum("jb,bj->j", inside.astype(np.float64), self._table) / divisor
        return (self.positions(0, m + 1, every).T, self.positions(n - m - 1, n, every).T,
                middle)
