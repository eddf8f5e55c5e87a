"""IOME's releases against previous releases (commit 59c63aa; the box-projected centre) for the
same seed, and the column counter behind its medians against the plain comparison it replaces."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpmean
from dpmean.engines.column_counts import ColumnCounter, LatticeCounter, write_columns

DATA = Path(__file__).resolve().parents[1] / "data" / "mnist-70k.npz"
BEFORE = np.load(Path(__file__).parent / "data" / "iome-release-59c63aa.npz")
PROJECTED = np.load(Path(__file__).parent / "data" / "iome-release-projected.npz")
# The quantized release since the median domains are narrowed about the nearer of the box's
# middle and its point nearest the origin (``_Geometry.reach_anchors``; stored at the commit
# that made it): that path narrows here, and the second search moved every later draw.
ANCHORS = np.load(Path(__file__).parent / "data" / "iome-release-anchors.npz")


def _mnist(n: int) -> np.ndarray:
    with np.load(DATA) as archive:
        return archive["images"][:n]


def test_real_path_matches_previous_release(old_target_rank):
    # The medians' counts are exact, so the medians are the same numbers as at 59c63aa; since
    # then the centre is projected onto the box (``_Geometry.settle_centre``), so the released
    # centre is the old one clamped to [0, 255], up to the rounding of one rotation there and
    # back (each fwht adds at most log2(d_pad) u relative to the entries' l2 norm).
    # Since the octave search, the domains are narrowed by default, and narrowing with a
    # reach found by octaves would move the medians: "when-short" does not narrow here.
    x = _mnist(3000)
    result = dpmean.mean(x, rho=0.5, method="iome", bounds=(0, 255), random_state=7,
                         interval_share=0,  # stored before the interval's default share
                         narrow_medians="when-short")
    centre = result.diagnostics["centre"]
    d_pad = result.diagnostics["padded_dim"]
    u = np.finfo(np.float64).eps / 2.0
    previous = BEFORE["real_centre"]
    rounding = 4.0 * (np.log2(d_pad) + 1) * u * float(np.linalg.norm(previous))
    np.testing.assert_allclose(centre, np.clip(previous, 0, 255), rtol=0.0, atol=rounding)
    # And the release after the projection, stored when it was introduced: the clipped sum is
    # formed on the unrotated rows, so a later change of summation order may change rounding
    # only. Each way of summing n clipped rows (norm <= C) errs by at most n u C per coordinate
    # of the mean (recursive summation, gamma_n), the norms behind the clipping weights by
    # (d_pad + 2) u relative, and the rotation back by log2(d_pad) u: twice that bounds the
    # difference of two releases.
    # The radius search by octaves asks the linear search's thresholds while the rows lie in
    # the top two octaves below the bound B (MNIST's radius: 2133 of 6266), and returns the top
    # of the same last interval where the linear search returned its middle: the stored radius
    # plus B / 2^21, up to rounding.
    radius = result.diagnostics["threshold"]
    bound = result.diagnostics["norm_bound"]
    moved = bound / 2.0**21
    assert radius == pytest.approx(PROJECTED["real_threshold"] + moved, rel=0.0, abs=1e-9)
    tolerance = 2.0 * (x.shape[0] + d_pad + 2 + np.log2(d_pad)) * u * radius
    # The release moves with the radius: the clipped mean by at most the radius's move, the
    # same noise draw (its std is proportional to the radius) by moved / radius of itself.
    noise = 8.0 * float(np.max(result.diagnostics["noise_std"]))
    tolerance += moved + noise * moved / radius
    # (Releases are projected onto the box since issue 18: the stored one is clamped too.)
    np.testing.assert_allclose(result.mean, np.clip(PROJECTED["real"], 0, 255), rtol=0.0,
                               atol=tolerance)


def test_integer_paths_match_previous_release_exactly(old_target_rank):
    # The quantized paths rotate integers without normalising: every value is an exact
    # integer, so no order of summation can change a bit.
    x = _mnist(3000)
    quantized = dpmean.mean(x, rho=0.5, method="iome", bounds=(0, 255), random_state=7,
                            quantized=True, interval_share=0)
    np.testing.assert_array_equal(quantized.mean, ANCHORS["quantized"])
    g = np.random.default_rng(3).normal(2.0, 1.0, size=(2000, 50))
    gaussian = dpmean.mean(g, rho=1.0, method="iome-gaussian", random_state=7,
                           mean_radius=50.0, sigma_min=0.5, sigma_max=2.0, interval_share=0)
    np.testing.assert_array_equal(gaussian.mean, BEFORE["gaussian"])


@settings(max_examples=60, deadline=None)
@given(
    columns=st.integers(1, 5), rows=st.integers(1, 40), seed=st.integers(0, 2**32 - 1),
    questions=st.integers(1, 80), threads=st.sampled_from([1, 2]),
)
def test_column_counter_equals_plain_comparison(columns, rows, seed, questions, threads):
    # Small integers make ties with the thresholds common; questions come in any order, on
    # the columns' extremes and outside them (infinite ones too), more of them than a column
    # keeps pivots for.
    rng = np.random.default_rng(seed)
    values = rng.integers(-4, 5, size=(columns, rows)).astype(np.float64)
    counter = ColumnCounter(values.copy(), threads)
    for _ in range(questions):
        thresholds = rng.integers(-6, 7, size=columns) + rng.choice([0.0, 0.5], size=columns)
        thresholds[rng.random(columns) < 0.05] = rng.choice([-np.inf, np.inf])
        expected = (values <= thresholds[:, None]).sum(axis=1)
        np.testing.assert_array_equal(counter.counts(thresholds), expected)
    # The counter only reorders each column.
    np.testing.assert_array_equal(np.sort(counter.values, axis=1), np.sort(values, axis=1))


@pytest.mark.parametrize("rows,k,first", [(1, 1, 0), (5, 13, 3), (64, 2048, 40), (7, 8, 0)])
def test_write_columns_is_the_transposing_copy(rows, k, first):
    block = np.random.default_rng(rows + k).normal(size=(rows, k))
    values = np.full((k, first + rows + 2), np.nan)
    expected = values.copy()
    expected[:, first:first + rows] = block.T
    write_columns(block, values, first)
    np.testing.assert_array_equal(values, expected)


@settings(max_examples=60, deadline=None)
@given(columns=st.integers(1, 5), rows=st.integers(1, 40), seed=st.integers(0, 2**32 - 1),
       threads=st.sampled_from([1, 2]), form=st.sampled_from(["float32", "int16"]))
def test_lattice_counter_equals_plain_comparison(columns, rows, seed, threads, form):
    # Values on the lattice of 1/32 (the float32 rotated copy of small integers), or given as
    # int16 counts of 1/32 (the int16 copy: integers are counts of the unit), thresholds on
    # it, between its points, beyond the values and infinite.
    # At most ``rows`` lattice points a column: tables no larger than the values.
    rng = np.random.default_rng(seed)
    half = (rows - 1) // 2
    units = rng.integers(-half, half + 1, size=(columns, rows)).astype(np.int16)
    values = (units / 32).astype(np.float32)
    counter = LatticeCounter.of(values if form == "float32" else units, 1 / 32, threads)
    assert counter is not None
    for _ in range(30):
        thresholds = rng.integers(-half - 3, half + 3, size=columns) / 32 + rng.choice(
            [0.0, 1 / 64, -1 / 64, 1e-9], size=columns)
        thresholds[rng.random(columns) < 0.05] = rng.choice([-np.inf, np.inf])
        expected = (values <= thresholds[:, None]).sum(axis=1)
        np.testing.assert_array_equal(counter.counts(thresholds), expected)


def test_counters_count_nothing_below_a_nan_threshold():
    # No value is <= NaN: both counters say 0 (the lattice one never turns NaN into an index).
    values = (np.arange(-40, 40).reshape(2, 40) / 32).astype(np.float32)
    thresholds = np.array([np.nan, 0.5])
    expected = (values <= thresholds[:, None]).sum(axis=1)
    lattice = LatticeCounter.of(values, 1 / 32)
    assert lattice is not None
    np.testing.assert_array_equal(lattice.counts(thresholds), expected)
    np.testing.assert_array_equal(ColumnCounter(values.astype(np.float64)).counts(thresholds),
                                  expected)


def test_lattice_counter_declines_tables_larger_than_the_values():
    # Two values a column, 2^20 lattice points apart: the tables would outgrow the copy.
    values = np.array([[0.0, 2.0**15]], dtype=np.float32)
    assert LatticeCounter.of(values, 1 / 32) is None
