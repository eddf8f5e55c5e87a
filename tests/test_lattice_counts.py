"""The sparse engine's rotated coordinate counts (a table of lattice values built once per
rotation, engines/lattice_counts.py) against the plain comparison of densely rotated rows, and
IOME's sparse releases against the previous code's (commit e5db803, tests/data) for the same
seed."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st

import dpmean
from dpmean.engines import SparseEngine
from dpmean.engines import lattice_counts as lattice_module
from dpmean.engines.lattice_counts import _krawtchouk
from dpmean.experiments.data import basket_data
from dpmean.transforms import RandomRotation, View

# The previous code's releases, as SHA-256 digests of the little-endian float64 bytes (the
# arrays are 17,034 and 41,270 long) and the radius as a float.hex string.
BEFORE = json.loads((Path(__file__).parent / "data" / "iome-sparse-releases.json").read_text())


def _baskets(rng: np.random.Generator, n: int, d: int, longest: int) -> scipy.sparse.csr_matrix:
    """0/1 rows of geometric lengths, a few long ones, and some rows with other values: on the
    lattice (2, -1) and off it (0.3), and explicit zeros."""
    lengths = np.minimum(rng.geometric(0.3, size=n), d)
    lengths[: min(n, 3)] = np.minimum(longest, d)
    rows = np.repeat(np.arange(n), lengths)
    cols = np.concatenate([rng.choice(d, size=k, replace=False) for k in lengths])
    values = rng.choice([1.0, 1.0, 1.0, 1.0, 2.0, -1.0, 0.3, 0.0], size=len(rows))
    x = scipy.sparse.csr_matrix((values, (rows, cols)), shape=(n, d))
    x.data[rng.random(x.nnz) < 0.5] = 1.0  # about half the rows all ones
    return x


def _plain_counts(x: scipy.sparse.csr_matrix, lo: float, hi: float, rotation: RandomRotation,
                  limit: np.ndarray) -> np.ndarray:
    return (rotation.apply(np.clip(x.toarray(), lo, hi)) <= limit).sum(axis=0)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 120),
       d=st.sampled_from([1, 3, 4, 13, 16, 60, 64, 200, 256]),
       threads=st.sampled_from([1, 2]), small_table=st.booleans())
def test_counts_equal_the_plain_comparison(seed, n, d, threads, small_table):
    # d_pad a power of 4 (1, 4, 16, 64, 256): 1/sqrt(d_pad) is a power of two, every rotated
    # value of a lattice row is exact in floating point, and the counts must match the plain
    # comparison's even for thresholds exactly on a lattice value. Rows of 2s and 1s take the
    # product route up to 8 items and the fast transform above; blocks of a few rows; with
    # small_table a table too small for the long rows, which are then rotated at every
    # question, as the rows with 0.3 always are.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lattice_module, "_MOST_PRODUCT_ITEMS", 8)
        patch.setattr(lattice_module, "BLOCK_BYTES", 8 * 256 * 3)
        if small_table:
            patch.setattr(lattice_module, "TABLE_BYTES", 4 * 256 * 9)
        patch.setattr("dpmean.parallel.THREADS", threads)
        rng = np.random.default_rng(seed)
        x = _baskets(rng, n, d, longest=40)
        lo, hi = -1.0, 2.0
        engine = SparseEngine(x, np.full(d, lo), np.full(d, hi))
        rotation = RandomRotation.draw(d, rng)
        view = View(rotation=rotation)
        unit = rotation.scale
        for _ in range(6):
            lattice = rng.integers(-12, 13, size=rotation.padded_dim) * unit
            offsets = rng.choice([0.0, 0.5 * unit, 1e-12, -1e-12, 0.25], size=lattice.shape)
            limit = lattice + offsets
            np.testing.assert_array_equal(engine.coordinate_counts(view, limit),
                                          _plain_counts(x, lo, hi, rotation, limit))
        # Thresholds outside every value: none below, all below.
        top = np.full(rotation.padded_dim, 1e3)
        np.testing.assert_array_equal(engine.coordinate_counts(view, -top), 0)
        np.testing.assert_array_equal(engine.coordinate_counts(view, top), n)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.sampled_from([2, 9, 100, 128, 500]))
def test_counts_off_the_lattice_points_equal_the_plain_comparison(seed, d):
    # d_pad 2, 16, 128, 512: 1/sqrt(d_pad) is irrational, so the rotated values carry rounding
    # that depends on the transform's order of summation; away from the lattice's points (a
    # margin far above that rounding) both must count the same rows.
    rng = np.random.default_rng(seed)
    x = _baskets(rng, 150, d, longest=70)
    engine = SparseEngine(x, np.zeros(d), np.ones(d))
    rotation = RandomRotation.draw(d, rng)
    unit = rotation.scale
    for _ in range(4):
        limit = (rng.integers(-10, 11, size=rotation.padded_dim)
                 + rng.uniform(1e-6, 1.0 - 1e-6, size=rotation.padded_dim)) * unit
        np.testing.assert_array_equal(engine.coordinate_counts(View(rotation=rotation), limit),
                                      _plain_counts(x, 0.0, 1.0, rotation, limit))


def test_krawtchouk_matrix_is_its_own_inverse_up_to_two_to_the_k():
    # The subset route divides by 2^k after multiplying by K: exact only if K K = 2^k I.
    for k in range(19):
        matrix = _krawtchouk(k)
        np.testing.assert_array_equal(matrix @ matrix, (1 << k) * np.eye(k + 1, dtype=np.int64))


@pytest.mark.parametrize("label,d,rho", [("narrow", 17_034, 10.0), ("wide", 41_270, 100.0),
                                         ("narrowing", 17_034, 1.0)])
def test_sparse_iome_matches_previous_release(label, d, rho, old_target_rank):
    # 4000 Kosarak baskets: d_pad 32,768 (1/sqrt(d_pad) irrational) and 65,536 (exact), 19 and
    # 20 median halvings, and a budget small enough to narrow the median domains first. The
    # stored releases were bit-identical to e5db803's (the per-halving rotation) when the table
    # came in; they were stored again when IOME's centre began to be projected onto the box
    # (after checking, on 600 rows, that the table and the per-halving path still release the
    # same bits). Same counts, so every private decision and noise draw is the same. Stored
    # again for the radius search by octaves and the always-narrowed median domains
    # (scratch/restore_lattice.py on branch logsearch): with narrow_medians="when-short" the
    # centres kept their previous digests; the radius and the release moved. Stored again when
    # the reach began to be measured from the box's point nearest the origin too
    # (``_Geometry.reach_anchors``: the narrowed domains, the centre, the radius all moved;
    # the "narrowing" radius 28.1 -> 4.43, about the origin, where the baskets lie). Stored
    # again when each median became its last interval's point nearest the anchor where the
    # anchor lies within half an interval of it (``private_centre``'s ``toward``): "narrow"
    # and "wide" moved in the last bits (radius 6.84869341 -> 6.84869347), "narrowing"'s
    # centre came nearer the mean (1.71 -> 0.91; radius 4.43 -> 4.46, error 0.185 -> 0.180).
    x = basket_data("kosarak-first-36682.dat", 4000).x
    x = scipy.sparse.csr_matrix((x.data, x.indices, x.indptr), shape=(x.shape[0], d))
    result = dpmean.mean(x, rho=rho, method="iome", bounds=(0, 1), random_state=7,
                         engine="sparse", interval_share=0)  # stored before its default share
    before = BEFORE[label]
    assert result.diagnostics["threshold"] == float.fromhex(before["threshold"])
    assert _digest(result.diagnostics["centre"]) == before["centre_sha256"]
    assert _digest(result.mean) == before["mean_sha256"]


def _digest(values: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(values, dtype="<f8").tobytes()).hexdigest()
