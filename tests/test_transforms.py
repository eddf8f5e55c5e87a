"""Transforms: the fast Walsh-Hadamard transform against the dense matrix, rotations, clipping,
quantization, views."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.linalg import hadamard

from dpmean.engines.rotation_kernels import rotate_into_columns, rotate_into_int16_columns
from dpmean.transforms import (
    Quantizer,
    RandomRotation,
    View,
    clamp,
    clip_rows,
    clip_weights,
    fwht,
    next_power_of_two,
)


@pytest.mark.parametrize("d", [1, 2, 4, 8, 16, 32, 64, 256, 512, 2048])
def test_fwht_matches_dense_hadamard(d):
    x = np.random.default_rng(d).normal(size=(5, d))
    np.testing.assert_allclose(fwht(x), x @ hadamard(d), rtol=1e-12, atol=1e-9)


def test_fwht_keeps_leading_shape_and_input():
    x = np.random.default_rng(0).normal(size=(2, 3, 64))
    before = x.copy()
    out = fwht(x)
    assert out.shape == x.shape
    np.testing.assert_array_equal(x, before)
    np.testing.assert_allclose(fwht(out) / 64, x, atol=1e-12)


@pytest.mark.parametrize("dtype,d,n,layout", [(np.uint8, 784, 300, "C"), (np.int16, 60, 5000, "C"),
                                              (np.uint8, 3, 70000, "C"), (np.int8, 1, 9, "C"),
                                              (np.uint8, 60, 500, "F"),
                                              (np.int16, 60, 500, "strided")])
@pytest.mark.parametrize("clamps", [False, True])
def test_rotation_into_columns_is_exact_in_float32_on_small_integers(dtype, d, n, layout,
                                                                     clamps):
    # d_pad a power of 4 (1024, 64, 4, 1): the scale is a power of two and every partial sum
    # a multiple of it below 2^24 of them, so float32 holds each value exactly: the same
    # numbers as the float64 rotation of the same clamped rows, whatever the blocks (n not a
    # multiple of the kernel's block rows) and the order of the butterflies.
    rng = np.random.default_rng(d)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=(n, d), endpoint=True).astype(dtype)
    if layout == "F":
        x = np.asfortranarray(x)
    elif layout == "strided":  # every other row of a larger array
        x = np.repeat(x, 2, axis=0)[::2]
    given = x.copy()
    rot = RandomRotation.draw(d, rng)
    lo, hi = np.full(d, info.min, dtype=dtype), np.full(d, info.max, dtype=dtype)
    if clamps:
        lo[::2], hi[1::3] = info.min // 2, info.max // 3
    factors = (rot.signs[:d] * rot.scale).astype(np.float32)
    columns = np.full((rot.padded_dim, n + 2), np.nan, dtype=np.float32)
    rotate_into_columns(x, lo, hi, factors, columns, slice(0, n // 3), clamps=clamps)
    rotate_into_columns(x, lo, hi, factors, columns, slice(n // 3, n), clamps=clamps)
    expected = rot.apply(np.clip(x, lo, hi).astype(np.float64)).T
    np.testing.assert_array_equal(columns[:, :n], expected)
    assert np.isnan(columns[:, n:]).all()  # nothing written beyond the rows asked
    np.testing.assert_array_equal(x, given)
    with pytest.raises(ValueError, match="power of 4"):
        rotate_into_columns(x, lo, hi, factors, np.empty((2 * rot.padded_dim, n), np.float32),
                            slice(0, n))


@pytest.mark.parametrize("dtype,d,n,clamps", [(np.uint8, 784, 3000, False),
                                               (np.uint8, 3, 70000, True),
                                               (np.int8, 1, 9, False),
                                               (np.int16, 10, 500, True)])
def test_int16_rotation_is_the_float32_rotation_over_its_factor(dtype, d, n, clamps):
    # The int16 copy holds each rotated value over the rotation's factor (a power of two):
    # the integers the lattice tables count in, exactly, where they fit int16 (these do:
    # |sum| <= max|x| d_pad only for the narrow types; int16 rows are clamped to +-2000).
    rng = np.random.default_rng(d)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=(n, d), endpoint=True).astype(dtype)
    lo, hi = np.full(d, info.min, dtype=dtype), np.full(d, info.max, dtype=dtype)
    if dtype == np.int16:
        lo[:], hi[:] = -2000, 2000
    rot = RandomRotation.draw(d, rng)
    floats = np.empty((rot.padded_dim, n), np.float32)
    units = np.full((rot.padded_dim, n + 2), 7, dtype=np.int16)
    rotate_into_columns(x, lo, hi, (rot.signs[:d] * rot.scale).astype(np.float32), floats,
                        slice(0, n), clamps=clamps or dtype == np.int16)
    signs = rot.signs[:d].astype(np.float32)
    for part in (slice(0, n // 3), slice(n // 3, n)):
        assert rotate_into_int16_columns(x, lo, hi, signs, units, part,
                                         clamps=clamps or dtype == np.int16)
    np.testing.assert_array_equal(units[:, :n].astype(np.float64) * rot.scale, floats)
    assert (units[:, n:] == 7).all()  # nothing written beyond the rows asked


def test_int16_rotation_says_where_a_value_does_not_fit():
    # Rows of 30,000 in 16 coordinates: sums up to 480,000 of the unscaled transform, far
    # beyond int16; one row of them among small rows is enough, in any block.
    x = np.ones((3000, 16), dtype=np.int16)
    x[2500] = 30000
    lo, hi = np.full(16, -30000, dtype=np.int16), np.full(16, 30000, dtype=np.int16)
    signs = np.ones(16, dtype=np.float32)
    units = np.empty((16, 3000), dtype=np.int16)
    assert rotate_into_int16_columns(x, lo, hi, signs, units, slice(0, 2000), clamps=False)
    assert not rotate_into_int16_columns(x, lo, hi, signs, units, slice(2000, 3000),
                                         clamps=False)
    x[2500] = 2047  # 2047 x 16 = 32,752: fits
    assert rotate_into_int16_columns(x, lo, hi, signs, units, slice(0, 3000), clamps=False)
    assert units[0, 2500] == 32752


@pytest.mark.parametrize("d", [0, 3, 12, 100])
def test_fwht_rejects_non_power_of_two(d):
    with pytest.raises(ValueError, match="power-of-two"):
        fwht(np.ones((2, d)))


@pytest.mark.parametrize("d,expected", [(1, 1), (2, 2), (3, 4), (784, 1024), (1024, 1024)])
def test_next_power_of_two(d, expected):
    assert next_power_of_two(d) == expected


@pytest.mark.parametrize("d", [1, 3, 10, 128, 784])
def test_rotation_is_orthogonal_and_invertible(d):
    rng = np.random.default_rng(1)
    rot = RandomRotation.draw(d, rng)
    x = rng.normal(size=(7, d))
    y = rot.apply(x)
    assert y.shape == (7, next_power_of_two(d))
    np.testing.assert_allclose(np.linalg.norm(y, axis=1), np.linalg.norm(x, axis=1), rtol=1e-12)
    np.testing.assert_allclose(rot.invert(y), x, atol=1e-10)
    # Against the dense (1/sqrt(d)) H D of the paper.
    dense = hadamard(rot.padded_dim) * rot.signs[None, :] / np.sqrt(rot.padded_dim)
    padded = np.zeros((7, rot.padded_dim))
    padded[:, :d] = x
    np.testing.assert_allclose(y, padded @ dense.T, atol=1e-10)
    # The square map on padded vectors: the same rotation, and inverted by invert_padded.
    np.testing.assert_array_equal(rot.apply_padded(padded), y)
    np.testing.assert_allclose(rot.invert_padded(rot.apply_padded(padded)), padded, atol=1e-10)


def test_unnormalised_rotation_keeps_integers():
    rng = np.random.default_rng(2)
    rot = RandomRotation.draw(12, rng, normalized=False)
    q = rng.integers(-50, 50, size=(4, 12)).astype(float)
    y = rot.apply(q)
    np.testing.assert_array_equal(y, np.rint(y))
    np.testing.assert_allclose(rot.invert(y), q, atol=1e-10)


def test_rotation_spreads_a_spike():
    # Lemma 3.7: a rotated basis vector has every coordinate of size 1/sqrt(d).
    rot = RandomRotation.draw(256, np.random.default_rng(3))
    e = np.zeros(256)
    e[17] = 1.0
    np.testing.assert_allclose(np.abs(rot.apply(e)), 1 / 16)


@given(arrays(np.float64, (6, 5), elements=st.floats(-1e6, 1e6)),
       st.floats(0.0, 1e6, allow_nan=False))
@settings(max_examples=60, deadline=None)
def test_clip_rows_bounds_norm_and_keeps_direction(x, radius):
    y = clip_rows(x, radius)
    norms = np.linalg.norm(y, axis=1)
    assert np.all(norms <= radius * (1 + 1e-9) + 1e-9)
    inside = np.linalg.norm(x, axis=1) <= radius
    np.testing.assert_array_equal(y[inside], x[inside])
    # Direction kept: y = w x with 0 <= w <= 1.
    w = clip_weights(np.linalg.norm(x, axis=1), radius)
    assert np.all((w >= 0) & (w <= 1))
    np.testing.assert_allclose(y, x * w[:, None])


def test_clip_weights_zero_rows_and_zero_radius():
    np.testing.assert_array_equal(clip_weights(np.array([0.0, 2.0]), 1.0), [1.0, 0.5])
    np.testing.assert_array_equal(clip_weights(np.array([0.0, 2.0]), 0.0), [1.0, 0.0])


def test_clamp_broadcasts_per_coordinate():
    x = np.array([[-5.0, 5.0], [0.5, 0.5]])
    np.testing.assert_array_equal(clamp(x, np.array([0.0, -1.0]), np.array([1.0, 1.0])),
                                  [[0.0, 1.0], [0.5, 0.5]])


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int64, np.float32, np.bool_])
def test_clamp_converts_other_types_first_to_the_same_values(dtype):
    # Non-float64 rows are converted, then clamped in place (faster than minimum()'s cast):
    # the values of clamping their float64 conversion, into a new array or into ``out``.
    x = (np.random.default_rng(1).normal(0.0, 300.0, size=(50, 4))).astype(dtype)
    lo, hi = np.array([-1.5, 0.0, 3.0, -200.0]), np.array([1.5, 250.0, 3.0, 100.0])
    expected = np.minimum(np.maximum(x.astype(np.float64), lo), hi)
    got = clamp(x, lo, hi)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, expected)
    out = np.full(x.shape, np.nan)
    assert clamp(x, lo, hi, out=out) is out
    np.testing.assert_array_equal(out, expected)


@given(arrays(np.float64, (4, 9), elements=st.floats(-100, 100)), st.floats(0.01, 10.0))
@settings(max_examples=60, deadline=None)
def test_quantization_error_is_at_most_half_alpha(x, alpha):
    q = Quantizer.for_error(alpha, 9)
    codes = q.quantize(x)
    np.testing.assert_array_equal(codes, np.rint(codes))
    err = np.linalg.norm(q.dequantize(codes) - x, axis=1)
    assert np.all(err <= alpha / 2 * (1 + 1e-9))


def test_view_restore_inverts_affine_steps():
    rng = np.random.default_rng(4)
    rot = RandomRotation.draw(20, rng)
    view = View(rotation=rot, shift=rng.normal(size=32), scale=rng.uniform(0.5, 2, size=32))
    x = rng.normal(size=(50, 20))
    v = view.apply(x)
    np.testing.assert_allclose(view.restore(v.mean(axis=0)), x.mean(axis=0), atol=1e-10)
    np.testing.assert_allclose(view.finish(view.base().apply(x)), v)


def test_view_preclip_applies_first():
    x = np.array([[3.0, 4.0]])
    np.testing.assert_allclose(View(preclip=1.0).apply(x), [[0.6, 0.8]])


def test_view_linear_applies_after_shift_and_before_scale_and_restores():
    rng = np.random.default_rng(5)
    linear = rng.normal(size=(6, 6)) + 3 * np.eye(6)
    shift, scale = rng.normal(size=6), rng.uniform(0.5, 2, size=6)
    view = View(shift=shift, scale=scale).with_linear(linear)
    x = rng.normal(size=(40, 6))
    np.testing.assert_allclose(view.apply(x), scale * ((x - shift) @ linear.T), atol=1e-12)
    # restore inverts the affine map for one point and for rows of points.
    np.testing.assert_allclose(view.restore(view.apply(x)), x, atol=1e-10)
    np.testing.assert_allclose(view.restore(view.apply(x).mean(axis=0)), x.mean(axis=0),
                               atol=1e-10)
    assert view.with_linear(None).linear is None


def test_view_linear_must_be_square():
    with pytest.raises(ValueError, match="square"):
        View().with_linear(np.ones((2, 3)))
