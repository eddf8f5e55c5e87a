"""A compiled sort of float64 columns: a pass of a most-significant-digit radix sort on the
values' bits, a second one inside each crowded bucket, then one insertion sort over the
whole column (``sort_float_columns``).

The columns the exponential mechanism and the trimmed mean read have thousands of values each
(PLAN's pair magnitudes: n / 2 a column). numpy's sort (a vectorised quicksort) took about
22 ns a value on them, and handing it the columns of a row-major block cost a strided copy
of 8 ns a value more; this one copies strips of columns through the cache and buckets each
column by the leading bits of its keys (the floats' bits mapped to integers in the same
order): about 13 ns a value on PLAN's magnitudes. Values of both signs fill only a few of
those buckets (the keys of negative and positive floats lie far apart): on Gaussian C's own
columns 94 % of the values sat in buckets that went to numba's quicksort (23 ns a value);
those buckets now get a second pass of their own (14 ns a value; issue 20).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# Columns transposed together: each row of a strip is read whole (cache lines used in full).
_STRIP = 16
# A bucket of more values than this is sorted by numba's quicksort instead of by insertion.
_INSERTION_MOST = 48


_SIGN = np.uint64(1) << np.uint64(63)


@njit(nogil=True, cache=True, inline="always")
def _key(bits):  # pragma: no cover - compiled
    """A float64's bits (uint64) as a key in the floats' order: positive floats get the sign
    bit set, negative ones every bit flipped (so -0.0 lies just below +0.0)."""
    return ~bits if bits & _SIGN else bits | _SIGN


@njit(nogil=True, cache=True, inline="always")
def _bits(key):  # pragma: no cover - compiled
    """Undo ``_key``."""
    return key & ~_SIGN if key & _SIGN else ~key


@njit(nogil=True, cache=True)
def _bucketed(keys, out, ends):  # pragma: no cover - compiled
    """One most-significant-digit pass: ``keys`` (uint64) into ``out`` (as long) grouped by
    bucket, ascending, the buckets being the keys' offsets from the least shifted right until
    fewer than len(keys) remain (on average one key a bucket). Returns the number of buckets,
    ``ends[b]`` being the end of bucket b in ``out`` (``ends`` one longer than ``keys``); 0
    when every key is the same (``out`` holds them)."""
    m = keys.size
    least = keys[0]
    most = keys[0]
    for i in range(m):
        if keys[i] < least:
            least = keys[i]
        if keys[i] > most:
            most = keys[i]
    if least == most:
        out[:] = keys
        return 0
    span = most - least
    shift = np.uint64(0)
    while (span >> shift) >= np.uint64(m):
        shift += np.uint64(1)
    buckets = np.int64(span >> shift) + 1
    ends[: buckets + 1] = 0
    for i in range(m):
        ends[np.int64((keys[i] - least) >> shift) + 1] += 1
    for b in range(buckets):
        ends[b + 1] += ends[b]
    for i in range(m):  # ends[place] is bucket place's next free slot, then its end
        place = np.int64((keys[i] - least) >> shift)
        out[ends[place]] = keys[i]
        ends[place] += 1
    return buckets


@njit(nogil=True, cache=True)
def _sort_keys(keys, scratch, ends):  # pragma: no cover - compiled
    """Sort ``keys`` (uint64) ascending into ``scratch`` (as long; ``keys`` is left in any
    order), ``ends`` (one more integer) being workspace.

    The keys are grouped by bucket (``_bucketed``); a bucket of more than _INSERTION_MOST keys
    is grouped again by a pass of its own (through the same place of ``keys``, free by then),
    as floats of both signs crowd a few buckets (94 % of Gaussian C's values sat in such
    buckets), and a group still that crowded is sorted by numba's quicksort. Every key is then
    at most a small group's length from its place: one insertion sort over the whole array
    finishes, its keys never moving past a group's end."""
    buckets = _bucketed(keys, scratch, ends)
    first = 0
    for b in range(buckets):
        stop = ends[b]
        if stop - first > _INSERTION_MOST:
            # Its own ends, as long as the bucket: only crowded columns pay for them.
            inner_ends = np.empty(stop - first + 1, dtype=np.int64)
            groups = _bucketed(scratch[first:stop], keys[first:stop], inner_ends)
            scratch[first:stop] = keys[first:stop]
            start = first
            for g in range(groups):
                end = first + inner_ends[g]
                if end - start > _INSERTION_MOST:
                    scratch[start:end].sort()
                start = end
        first = stop
    for i in range(1, keys.size):
        key = scratch[i]
        j = i - 1
        while j >= 0 and scratch[j] > key:
            scratch[j + 1] = scratch[j]
            j -= 1
        scratch[j + 1] = key


@njit(nogil=True, cache=True)
def sort_float_columns(columns, out, first, stop):  # pragma: no cover - compiled
    """Columns first..stop-1 of ``columns`` (m, k) float64, any layout, each sorted ascending
    into the rows of ``out`` (k, m) float64, C-ordered: the values of ``numpy.sort`` (equal
    values may trade places, e.g. -0.0 and 0.0, which compare equal)."""
    m = columns.shape[0]
    if m == 0:
        return
    scratch = np.empty(m, dtype=np.uint64)
    ends = np.empty(m + 1, dtype=np.int64)
    for strip in range(first, stop, _STRIP):
        last = min(strip + _STRIP, stop)
        for i in range(m):
            for c in range(strip, last):
                out[c, i] = columns[i, c]
        for c in range(strip, last):
            keys = out[c].view(np.uint64)
            for i in range(m):
                keys[i] = _key(keys[i])
            _sort_keys(keys, scratch, ends)
            for i in range(m):
                keys[i] = _bits(scratch[i])
