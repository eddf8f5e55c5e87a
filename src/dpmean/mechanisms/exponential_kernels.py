"""Compiled loops of the exponential mechanism's sampler (``exponential._draw``): the window's
running weights of each sorted row in one sweep, and every inverse-CDF lookup by bisection.

numpy's form made five passes over the b x w window (clip, concatenate, difference, scale,
running sum) and a comparison pass per attempt: about a sixth of PLAN's time on Gaussian C
(issue 20). These are the same operations in the same order, so the weights are the same bits.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def window_weights(inside, lo, hi, factors, first_is_lo, last_is_hi, out, edge_first,
                   edge_last, rows_first, rows_stop):  # pragma: no cover - compiled
    """For rows rows_first..rows_stop-1 of ``inside`` (sorted values of the window's
    positions): the gap edges lo (if ``first_is_lo``), clip(inside[r], lo, hi), hi (if
    ``last_is_hi``); each gap's width times its factor over the row's span (last edge minus
    first, 1 where that is 0), as running totals into ``out[r]``; the first and last edge
    into ``edge_first[r]``, ``edge_last[r]``."""
    w = out.shape[1]
    for r in range(rows_first, rows_stop):
        low = lo[r]
        high = hi[r]
        row = inside[r]
        first = low if first_is_lo else min(max(row[0], low), high)
        last = high if last_is_hi else min(max(row[row.size - 1], low), high)
        span = last - first
        if span == 0.0:
            span = 1.0  # a window of tied values: all its weights are 0 anyway
        edge_first[r] = first
        edge_last[r] = last
        offset = 1 if first_is_lo else 0  # inside[r, i - offset] is edge i
        previous = first
        total = 0.0
        for i in range(w):
            j = i + 1 - offset
            edge = high if j == row.size else min(max(row[j], low), high)
            weight = (edge - previous) * factors[i]
            total += weight / span
            out[r, i] = total
            previous = edge


@njit(nogil=True, cache=True)
def first_above(cumulative, rows, u):  # pragma: no cover - compiled
    """For each i, the number of running totals of row rows[i] of ``cumulative`` (the
    non-decreasing running totals of some weights) at most u[i] x the row's total, by
    bisection: the index of the first total above it, which is index l with probability
    weight_l / total for u uniform on [0, 1), never an index of weight 0. It is the row's
    length in the rare case that u x total rounds up to the total (the caller draws again)."""
    out = np.empty(rows.size, dtype=np.int64)
    for i in range(rows.size):
        row = cumulative[rows[i]]
        out[i] = np.searchsorted(row, u[i] * row[row.size - 1], side="right")
    return out


@njit(nogil=True, cache=True)
def outside_gaps(values, firsts, offsets, lefts, lo, hi, n, edges, widths,
                 ranks):  # pragma: no cover - compiled
    """The gaps of positive width of several sides of sorted rows, region after region.
    Region r is runs offsets[r]..offsets[r + 1]-1 of (``values``, ``firsts``): run q holds
    values[q] from sorted position firsts[q] on (``OrderStatistics.runs``). A left side
    (``lefts[r]``) has the edges lo, then each run's clipped value (clip to [lo[r], hi[r]]); a
    right side each run's clipped value, then hi. A gap ends at a run's first position (its
    rank) or, the right side's last, at hi (rank n); gaps inside a run have width 0. Writes
    each positive gap's left edge, width and rank into ``edges``, ``widths``, ``ranks`` (each
    at least len(values) + len(offsets) long) and returns how many each region has. The
    numbers of ``exponential._outside_regions``'s position-by-position form: the same clips
    and differences of the same values."""
    regions = offsets.size - 1
    counts = np.zeros(regions, dtype=np.int64)
    at = 0
    for r in range(regions):
        low, high = lo[r], hi[r]
        begin, end = offsets[r], offsets[r + 1]
        if begin == end:  # an empty side (never chosen: its weight is 0)
            continue
        left = lefts[r]
        previous = low if left else min(max(values[begin], low), high)
        # The edges after the first: every run (left side), or every run but the first,
        # then hi (right side); the rank of the gap before each.
        for q in range(begin if left else begin + 1, end + (0 if left else 1)):
            if q == end:
                edge, rank = high, n
            else:
                edge, rank = min(max(values[q], low), high), firsts[q]
            width = edge - previous
            if width > 0.0:
                edges[at] = previous
                widths[at] = width
                ranks[at] = rank
                at += 1
                counts[r] += 1
            previous = edge
    return counts


@njit(nogil=True, cache=True)
def running_totals(weights, offsets, out):  # pragma: no cover - compiled
    """Running totals of each segment weights[offsets[s]:offsets[s + 1]] into ``out``, one
    addition after another from the segment's start: numpy's cumsum of each segment alone."""
    for s in range(offsets.size - 1):
        total = 0.0
        for i in range(offsets[s], offsets[s + 1]):
            total = weights[i] if i == offsets[s] else total + weights[i]
            out[i] = total


@njit(nogil=True, cache=True)
def segment_first_above(cumulative, firsts, stops, u):  # pragma: no cover - compiled
    """``first_above`` for segments cumulative[firsts[i]:stops[i]]: the index (from the
    segment's start) of the first running total above u[i] x the segment's total."""
    out = np.empty(u.size, dtype=np.int64)
    for i in range(u.size):
        row = cumulative[firsts[i]:stops[i]]
        out[i] = np.searchsorted(row, u[i] * row[row.size - 1], side="right")
    return out
