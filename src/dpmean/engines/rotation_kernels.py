"""A compiled fill of the in-memory engine's float32 rotated copy (``_rotated_type``): small
integer rows clamped to the box, multiplied by the rotation's signed factors and transformed by
radix-4 Walsh-Hadamard butterflies on a cache-sized block, the last stage writing straight into
the copy's column layout.

numpy's form (a transposing conversion, three radix-16 BLAS stages of 16 x 16 products, then a
copy into the copy) took 0.19 s of one core for MNIST's 70,000 rows; this takes 0.09 s. The
values are the same bits: every value on the way is a sum of some of the x_j f_j, and
f_j = +-2^-k (d_pad a power of 4), so each is an integer multiple of 2^-k of size at most
M d_pad 2^-k, which float32 holds exactly when M d_pad <= 2^24, the condition under which the
engine uses float32 at all: exact sums, in any order. (Only a zero's sign may differ from
another order's: the copy is read only through comparisons, where -0.0 == 0.0.)

Its int16 form (``rotate_into_int16_columns``) leaves the scale out: each value is then the
integer count of 2^-k it is, which the lattice tables (``column_counts.LatticeCounter``) count
in. Where every one fits int16 (MNIST's lie within +-14,601) the copy takes half the bytes to
write and to read back for the tables; where one does not, the float32 copy is made instead.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# Rows a block: its (d_pad, rows) float32 scratch about 512 KiB, inside a core's cache.
_SCRATCH_BYTES = 1 << 19


@njit(nogil=True, cache=True, inline="always")
def _butterfly(a0, a1, a2, a3, o0, o1, o2, o3, b):  # pragma: no cover - compiled
    """One radix-4 butterfly over b positions: (o0, o1, o2, o3) = H_4 (a0, a1, a2, a3) in
    Sylvester order; o may be a (each position is read before it is written)."""
    for i in range(b):
        p, q, r, t = a0[i], a1[i], a2[i], a3[i]
        u0, u1, u2, u3 = p + q, p - q, r + t, r - t
        o0[i] = u0 + u2
        o1[i] = u1 + u3
        o2[i] = u0 - u2
        o3[i] = u1 - u3


@njit(nogil=True, cache=True, inline="always")
def _load_block(x, lo, hi, clamps, factors, start, b, buf):  # pragma: no cover - compiled
    """buf[:, :b] = factors * clip(x[start:start + b], lo, hi) transposed, zero-padded."""
    d, size = x.shape[1], buf.shape[0]
    if clamps:
        for j in range(d):
            f, low, high = factors[j], lo[j], hi[j]
            for i in range(b):
                buf[j, i] = np.float32(min(max(x[start + i, j], low), high)) * f
    else:
        for j in range(d):
            f = factors[j]
            for i in range(b):
                buf[j, i] = np.float32(x[start + i, j]) * f
    for j in range(d, size):
        for i in range(b):
            buf[j, i] = 0.0


@njit(nogil=True, cache=True, inline="always")
def _stages(buf, b, until):  # pragma: no cover - compiled
    """The radix-4 butterflies (two radix-2 stages in one pass over the block; the block's
    size a power of 4) in place while their span h * 4 is below ``until``; returns the next h."""
    size = buf.shape[0]
    h = 1
    while h * 4 < until:
        for s in range(0, size, 4 * h):
            for j in range(s, s + h):
                _butterfly(buf[j], buf[j + h], buf[j + 2 * h], buf[j + 3 * h],
                           buf[j], buf[j + h], buf[j + 2 * h], buf[j + 3 * h], b)
        h *= 4
    return h


@njit(nogil=True, cache=True)
def _rotate_block(x, lo, hi, clamps, factors, start, b, buf, out):  # pragma: no cover - compiled
    _load_block(x, lo, hi, clamps, factors, start, b, buf)
    size = buf.shape[0]
    # Every stage but the last in the block; the last writes the copy.
    h = _stages(buf, b, size)
    stop = start + b
    if h * 4 == size:
        for j in range(h):
            _butterfly(buf[j], buf[j + h], buf[j + 2 * h], buf[j + 3 * h],
                       out[j, start:stop], out[j + h, start:stop],
                       out[j + 2 * h, start:stop], out[j + 3 * h, start:stop], b)
    else:  # d_pad = 1: no stage
        for i in range(b):
            out[0, start + i] = buf[0, i]


# int16's range, as float32 (float64 constants would widen the loops and stop them vectorising).
_INT16_LOW, _INT16_HIGH = np.float32(-32768.0), np.float32(32767.0)


@njit(nogil=True, cache=True, inline="always")
def _to_int16(v):  # pragma: no cover - compiled
    """v held to int16's range, as int16."""
    return np.int16(min(max(v, _INT16_LOW), _INT16_HIGH))


@njit(nogil=True, cache=True, inline="always")
def _outside_int16(v):  # pragma: no cover - compiled
    """1 where v lies outside int16's range, else 0 (a count, not a branch: it vectorises,
    where a running minimum and maximum made the loop 6x slower)."""
    return (v < _INT16_LOW) | (v > _INT16_HIGH)


@njit(nogil=True, cache=True, inline="always")
def _butterfly_to_int16(a0, a1, a2, a3, o0, o1, o2, o3, b):  # pragma: no cover - compiled
    """``_butterfly`` into int16 outputs, each value held to int16's range; returns how many
    lay outside it (their outputs are then wrong)."""
    outside = 0
    for i in range(b):
        p, q, r, t = a0[i], a1[i], a2[i], a3[i]
        u0, u1, u2, u3 = p + q, p - q, r + t, r - t
        v0, v1, v2, v3 = u0 + u2, u1 + u3, u0 - u2, u1 - u3
        outside += _outside_int16(v0) + _outside_int16(v1) + _outside_int16(
            v2) + _outside_int16(v3)
        o0[i], o1[i], o2[i], o3[i] = _to_int16(v0), _to_int16(v1), _to_int16(v2), _to_int16(v3)
    return outside


@njit(nogil=True, cache=True)
def _rotate_block_to_int16(x, lo, hi, clamps, signs, start, b, buf,
                           out):  # pragma: no cover - compiled
    """The block's unscaled transform (integers) into int16 ``out``, the last stage writing
    it; False where a value lies outside int16's range (then held to it: wrong)."""
    _load_block(x, lo, hi, clamps, signs, start, b, buf)
    size = buf.shape[0]
    h = _stages(buf, b, size)
    stop = start + b
    outside = 0
    if h * 4 == size:
        for j in range(h):
            outside += _butterfly_to_int16(
                buf[j], buf[j + h], buf[j + 2 * h], buf[j + 3 * h], out[j, start:stop],
                out[j + h, start:stop], out[j + 2 * h, start:stop],
                out[j + 3 * h, start:stop], b)
    else:  # d_pad = 1: no stage
        for i in range(b):
            outside += _outside_int16(buf[0, i])
            out[0, start + i] = _to_int16(buf[0, i])
    return outside == 0


@njit(nogil=True, cache=True)
def _rotate_rows(x, lo, hi, clamps, factors, out, first, stop,
                 buf):  # pragma: no cover - compiled
    for start in range(first, stop, buf.shape[1]):
        _rotate_block(x, lo, hi, clamps, factors, start, min(buf.shape[1], stop - start), buf,
                      out)


@njit(nogil=True, cache=True)
def _rotate_rows_to_int16(x, lo, hi, clamps, signs, out, first, stop,
                          buf):  # pragma: no cover - compiled
    for start in range(first, stop, buf.shape[1]):
        if not _rotate_block_to_int16(x, lo, hi, clamps, signs, start,
                                      min(buf.shape[1], stop - start), buf, out):
            return False
    return True


def _scratch(d_pad: int) -> np.ndarray:
    """A block's (d_pad, rows) float32 scratch of about ``_SCRATCH_BYTES``; d_pad checked."""
    if d_pad.bit_length() % 2 == 0 or d_pad & (d_pad - 1):
        raise ValueError(f"d_pad must be a power of 4, got {d_pad}")
    return np.empty((d_pad, max(1, _SCRATCH_BYTES // (4 * d_pad))), dtype=np.float32)


def rotate_into_columns(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, factors: np.ndarray,
                        out: np.ndarray, rows: slice, *, clamps: bool = True) -> None:
    """Write H_{d_pad} (factors * clip(x[rows], lo, hi)) for each row of ``rows`` into the
    columns ``rows`` of ``out`` (d_pad, n) float32, d_pad a power of 4: x (n, d) integers,
    lo and hi (d,) of x's type, ``factors`` (d,) float32, the rotation's signs times its
    scale. ``clamps=False`` when the box holds every value of ``x``: the clamp is skipped.
    Exact (the module's note) when the factors are powers of two and max|clip(x)| d_pad <=
    2^24."""
    _rotate_rows(x, lo, hi, clamps, factors, out, rows.start, rows.stop, _scratch(out.shape[0]))


def rotate_into_int16_columns(x: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                              signs: np.ndarray, out: np.ndarray, rows: slice, *,
                              clamps: bool = True) -> bool:
    """``rotate_into_columns`` without the scale, into int16 ``out`` (d_pad, n): H_{d_pad}
    (signs * clip(x[rows], lo, hi)), ``signs`` (d,) float32 of +-1, each value an integer (the
    rotated value over the rotation's scale, a power of two: the lattice ``LatticeCounter``
    counts in). Exact where max|clip(x)| d_pad <= 2^24. False, with the rows' columns
    partly written, where a value lies outside int16's range: the caller then uses float32."""
    return bool(_rotate_rows_to_int16(x, lo, hi, clamps, signs, out, rows.start, rows.stop,
                                      _scratch(out.shape[0])))
