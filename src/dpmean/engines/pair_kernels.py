"""Compiled loops of the in-memory engine over the pairs' integer magnitudes: the l1 norm and
squared l2 norm of each pair (``InMemoryEngine.pair_distances`` on small integers such as
MNIST's pixels), and each column's histogram of byte magnitudes and its sorted positions
(``counted_order.CountedOrder``).

numpy's form of the sums converted every block to float64 and made three passes over it (about
0.13 s on MNIST, a sixth of PLAN's time there); the sums of integers are exact in int64, so
their float64 values are the float path's bits whatever the order of the additions.
"""

from __future__ import annotations

from numba import njit


@njit(nogil=True, cache=True)
def integer_distances(magnitudes, l1, squared, first, stop):  # pragma: no cover - compiled
    """For rows first..stop-1 of ``magnitudes`` (pairs x coordinates, unsigned integers):
    the sum of the row into ``l1`` and the sum of its squares into ``squared`` (float64
    arrays, added to), each summed exactly in int64."""
    for i in range(first, stop):
        row = magnitudes[i]
        total = 0
        squares = 0
        for j in range(row.size):
            value = int(row[j])
            total += value
            squares += value * value
        l1[i] += total
        squared[i] += squares


@njit(nogil=True, cache=True)
def byte_histograms(magnitudes, first, stop, out):  # pragma: no cover - compiled
    """Add to ``out[j - first, v]`` (stop - first, 256) the number of rows of ``magnitudes``
    (pairs x coordinates, uint8) whose column j holds v, for columns first..stop-1."""
    for i in range(magnitudes.shape[0]):
        row = magnitudes[i]
        for j in range(first, stop):
            out[j - first, row[j]] += 1


@njit(nogil=True, cache=True)
def expand_positions(counts, table, first, stop, start, end, out):  # pragma: no cover
    """Sorted positions start..end-1 of columns first..stop-1, from each column's histogram:
    ``out[j - first, p - start]`` is ``table[v, j]`` for the value v whose run of
    ``counts[j, v]`` copies (values ascending) holds position p."""
    for j in range(first, stop):
        below = 0
        for v in range(counts.shape[1]):
            above = below + counts[j, v]
            if above > start and below < end:
                value = table[v, j]
                for p in range(max(below, start), min(above, end)):
                    out[j - first, p - start] = value
            if above >= end:
                break
            below = above
