"""A compiled sort of float64 columns: one pass of a most-significant-digit radix sort on the
values' bits, then a short insertion sort inside each bucket (``sort_float_columns``).

The columns the exponential mechanism and the trimmed mean read have thousands of values each
(PLAN's pair magnitudes: n / 2 a column). numpy's sort (a vectorised quicksort) took about
22 ns a value on them, and handing it the columns of a row-major block cost a strided copy
of 8 ns a value more; this one copies strips of columns through the cache and buckets each
column by the leading bits of its keys (the floats' bits mapped to integers in the same
order): about 14 ns a value, whatever the values' scale or skew (issue 20).
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
def _sort_keys(keys, scratch, ends):  # pragma: no cover - compiled
    """Sort ``keys`` (uint64) ascending into ``scratch`` (as long; ``keys`` is left in any
    order), ``ends`` (one more integer) being workspace. The buckets are the keys' offsets
    from the least, shifted right until fewer than len(keys) remain: on average one value a
    bucket."""
    m = keys.size
    least = keys[0]
    most = keys[0]
    for i in range(m):
        if keys[i] < least:
            least = keys[i]
        if keys[i] > most:
            most = keys[i]
    if least == most:
        scratch[:] = keys
        return
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
        scratch[ends[place]] = keys[i]
        ends[place] += 1
    first = 0
    for b in range(buckets):
        stop = ends[b]
        if stop - first > _INSERTION_MOST:
            scratch[first:stop].sort()
        else:
            for i in range(first + 1, stop):
                key = scratch[i]
                j = i - 1
                while j >= first and scratch[j] > key:
                    scratch[j + 1] = scratch[j]
                    j -= 1
                scratch[j + 1] = key
        first = stop


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
