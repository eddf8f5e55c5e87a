"""Compiled per-block loops of the Dask engine's order statistics (``dask_order``): where each
value of a row block lies against its queries' grids, the next grid's histogram, the values
inside each query's range and the sums between two ranges, each in one sweep of the block,
read column by column (``columns`` is the block transposed: one column's values contiguous).

The numpy forms of these steps gathered a copy of the block per query (two per column for the
trimmed mean's two tails), read every column with a stride of a whole row for the inside
values, and made several temporaries per grid level: about 300 ns a value, against about 1 ns
for the non-private mean (issue 20). The bucket arithmetic is numpy's, operation for operation
(``bucket``), so every pass of a selection sorts values into the same buckets.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# The integer numpy gives a NaN bucket (cast to int64): never met for finite values and
# grids, kept so that a bucket is the same number whichever form computed it.
_NAN_BUCKET = np.iinfo(np.int64).min


@njit(nogil=True, cache=True)
def bucket(value, offset, factor, buckets):  # pragma: no cover - compiled
    """floor((value - offset) * factor) clipped to [0, buckets - 1]: the grid bucket of a
    value, non-decreasing in it (rounded subtraction and multiplication by a positive factor
    are monotone)."""
    scaled = math.floor((value - offset) * factor)
    if scaled != scaled:
        return _NAN_BUCKET
    if scaled < 0.0:
        return 0
    if scaled > buckets - 1:
        return buckets - 1
    return int(scaled)


@njit(nogil=True, cache=True)
def query_sides(columns, column, offset, factor, first, last, buckets):  # pragma: no cover
    """-1, 0 or +1 for each query and row (Q, rows), int8: below, inside or above the query's
    kept range; the first level where the value's bucket leaves [first, last] decides."""
    queries, depth = first.shape
    side = np.zeros((queries, columns.shape[1]), dtype=np.int8)
    for q in range(queries):
        values = columns[column[q]]
        for i in range(values.size):
            for level in range(depth):
                b = bucket(values[i], offset[q, level], factor[q, level], buckets)
                if b < first[q, level]:
                    side[q, i] = -1
                    break
                if b > last[q, level]:
                    side[q, i] = 1
                    break
    return side


@njit(nogil=True, cache=True)
def inside_histograms(columns, column, side, refine, offset, factor,
                      buckets):  # pragma: no cover - compiled
    """(R, buckets) int64: for each refined query r (a query index ``refine[r]``), the histogram
    on its next grid (``offset[r]``, ``factor[r]``) of the values inside its kept range. One
    query at a time, so its histogram stays in cache while its column goes by."""
    counts = np.zeros((refine.size, buckets), dtype=np.int64)
    for r in range(refine.size):
        q = refine[r]
        values = columns[column[q]]
        for i in range(values.size):
            if side[q, i] == 0:
                counts[r, bucket(values[i], offset[r], factor[r], buckets)] += 1
    return counts


@njit(nogil=True, cache=True)
def inside_values(columns, column, side):  # pragma: no cover - compiled
    """The values inside each query's kept range, query after query: (flat, ends), query q's
    values being flat[ends[q] - counts[q]:ends[q]], in row order."""
    queries = column.size
    counts = np.zeros(queries, dtype=np.int64)
    for q in range(queries):
        for i in range(side.shape[1]):
            counts[q] += side[q, i] == 0
    ends = np.cumsum(counts)
    flat = np.empty(ends[-1] if queries else 0)
    for q in range(queries):
        values = columns[column[q]]
        at = ends[q] - counts[q]
        for i in range(values.size):
            if side[q, i] == 0:
                flat[at] = values[i]
                at += 1
    return flat, ends


@njit(nogil=True, cache=True)
def between_sums(columns, column, side, low, high, divisor):  # pragma: no cover - compiled
    """(P,) for each pair p of queries on one column (``low[p]``, ``high[p]``): the sum of the
    values above low's kept range and below high's, each divided by ``divisor`` first."""
    sums = np.zeros(low.size)
    for p in range(low.size):
        values = columns[column[low[p]]]
        for i in range(values.size):
            if side[low[p], i] == 1 and side[high[p], i] == -1:
                sums[p] += values[i] / divisor
    return sums


@njit(nogil=True, cache=True)
def distinct_runs(flat, ends):  # pragma: no cover - compiled
    """Each query's inside values (``inside_values``: query q's are flat[ends[q - 1]:ends[q]])
    sorted, equal values counted: (query, value, count) runs in query then value order."""
    query = np.empty(flat.size, dtype=np.int64)
    values = np.empty(flat.size)
    counts = np.empty(flat.size, dtype=np.int64)
    m = 0
    start = 0
    for q in range(ends.size):
        run_start = m
        for value in np.sort(flat[start:ends[q]]):
            if m > run_start and value == values[m - 1]:
                counts[m - 1] += 1
            else:
                query[m], values[m], counts[m] = q, value, 1
                m += 1
        start = ends[q]
    return query[:m], values[:m], counts[:m]


@njit(nogil=True, cache=True)
def merged_runs(qa, va, ca, qb, vb, cb):  # pragma: no cover - compiled
    """Two blocks' ``distinct_runs`` as one, in one linear merge: runs of the same query and
    value added (the first block's value kept where two compare equal, as -0.0 and 0.0 do)."""
    size = qa.size + qb.size
    query = np.empty(size, dtype=np.int64)
    values = np.empty(size)
    counts = np.empty(size, dtype=np.int64)
    i = j = m = 0
    while i < qa.size or j < qb.size:
        take_a = j >= qb.size or (i < qa.size and (
            qa[i] < qb[j] or (qa[i] == qb[j] and va[i] <= vb[j])))
        if take_a:
            q, v, c = qa[i], va[i], ca[i]
            i += 1
        else:
            q, v, c = qb[j], vb[j], cb[j]
            j += 1
        if m > 0 and query[m - 1] == q and values[m - 1] == v:
            counts[m - 1] += c
        else:
            query[m], values[m], counts[m] = q, v, c
            m += 1
    return query[:m], values[:m], counts[:m]
