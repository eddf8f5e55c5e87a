"""The sparse engine clips rows about a centre far from the origin as the noise assumes.

Its norms expand ||x - s||^2 = ||x||^2 - 2 <x, s> + ||s||^2, which cancels when x and s lie close
together far from the origin: a row 27 from a centre at (2e9, 2e9) came out at norm 0, was not
clipped, and moved coinpress's release 3-4 times its claimed sensitivity (2,000 times about a
centre at 1e12). Neighbouring data sets here differ in one row, placed on either side of the
centre; every release and clipped sum must move by at most what its noise was sized for.
"""

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse

import dpmean
from dpmean.engines import InMemoryEngine, SparseEngine
from dpmean.transforms import RandomRotation, View

# A norm may fall short of the exact one by this much, relatively (rounding; the engine keeps
# them within 2^-36).
NORM_SLACK = 1e-9


def exact_norm(row: np.ndarray, shift: np.ndarray, scale: np.ndarray) -> float:
    """||scale * (row - shift)|| in exact rational arithmetic, then rounded."""
    squared = sum((Fraction(b) * (Fraction(v) - Fraction(s)))**2
                  for v, s, b in zip(row, shift, scale, strict=True))
    return float(squared) ** 0.5


def neighbours(centre: np.ndarray, offsets: np.ndarray, n: int = 10,
               seed: int = 0) -> tuple[np.ndarray, list[np.ndarray]]:
    """Rows scattered about ``centre``; D has row 0 far off on one side (clipped), each D' has
    it at ``centre`` plus one of ``offsets`` (along the first axis)."""
    rng = np.random.default_rng(seed)
    base = centre + rng.normal(0.0, 0.5, size=(n, len(centre)))
    base[0] = centre - np.r_[100.0, np.zeros(len(centre) - 1)]
    others = []
    for offset in offsets:
        other = base.copy()
        other[0] = centre + np.r_[offset, np.zeros(len(centre) - 1)]
        others.append(other)
    return base, others


@pytest.mark.parametrize("far, scaled", [(2e9, False), (2e9, True), (1e12, False)])
def test_a_row_just_off_a_far_centre_is_clipped(far, scaled):
    radius = 1.0
    d = 3
    centre = np.full(d, far)
    lo, hi = np.zeros(d), np.full(d, 4.0 * far)
    scale = np.array([1.0, 0.5, 3.0]) if scaled else np.ones(d)
    view = View(shift=centre, scale=scale if scaled else None)
    # Offsets where the expansion's error (about 2^-52 ||s||^2) swamps the distance.
    offsets = np.geomspace(2.0, 4e-8 * far, 25)
    base, others = neighbours(centre, offsets)
    first = SparseEngine(scipy.sparse.csr_matrix(base), lo, hi)
    total = first.clipped_sum(view, radius)
    for offset, other in zip(offsets, others, strict=True):
        engine = SparseEngine(scipy.sparse.csr_matrix(other), lo, hi)
        norm = engine.row_norms(view)[0]
        true = exact_norm(other[0], centre, scale)
        assert norm >= true * (1.0 - NORM_SLACK), (offset, norm, true)
        moved = np.linalg.norm(engine.clipped_sum(view, radius) - total)
        assert moved <= 2.0 * radius * (1.0 + NORM_SLACK), (offset, moved)


def test_a_row_just_off_a_far_rotated_centre_is_clipped():
    # IOME's real-valued path on sparse input: R x - s, the norm expanded about R^T s.
    radius, d = 1.0, 5
    rotation = RandomRotation.draw(d, np.random.default_rng(5))
    point = np.full(d, 2e9)
    centre = rotation.apply(point)
    view = View(rotation=rotation, shift=centre)
    lo, hi = np.zeros(d), np.full(d, 2.0**33)
    offsets = np.geomspace(2.0, 200.0, 15)
    base, others = neighbours(point, offsets)
    dense = InMemoryEngine(base, lo, hi)
    total = SparseEngine(scipy.sparse.csr_matrix(base), lo, hi).clipped_sum(view, radius)
    # The dense engine rotates the shift back the same way: the sums agree up to the rounding
    # of a rotation of s, about u ||s|| per row.
    np.testing.assert_allclose(total, dense.clipped_sum(view, radius),
                               atol=1e-14 * len(base) * np.linalg.norm(centre))
    for offset, other in zip(offsets, others, strict=True):
        engine = SparseEngine(scipy.sparse.csr_matrix(other), lo, hi)
        # R is orthogonal: the view row's norm is the offset's, up to the rounding of R^T s
        # (about 1e-14 ||s||).
        tolerance = NORM_SLACK * offset + 1e-13 * np.linalg.norm(centre)
        assert engine.row_norms(view)[0] >= offset - tolerance, offset
        moved = np.linalg.norm(engine.clipped_sum(view, radius) - total)
        assert moved <= 2.0 * radius * (1.0 + NORM_SLACK) + 1e-13 * np.linalg.norm(centre)


def test_norms_and_sums_about_far_centres_match_exact_arithmetic():
    # Random small matrices: centres from 1 to 1e15 from the origin, rows near them (some of
    # their entries absent, one stored explicitly as 0) or far off, scaled views or not.
    rng = np.random.default_rng(11)
    for _ in range(60):
        n, d = int(rng.integers(1, 8)), int(rng.integers(1, 6))
        size = 10.0 ** rng.uniform(0, 15)
        centre = size * rng.uniform(0.5, 2.0, size=d) * (rng.random(d) < 0.8)
        scale = rng.uniform(0.1, 3.0, size=d) if rng.random() < 0.5 else None
        near = centre + rng.normal(size=(n, d)) * 10.0 ** rng.uniform(-3, 3, size=(n, 1))
        rows = np.where(rng.random((n, d)) < 0.7, near, 0.0)
        x = scipy.sparse.csr_matrix(rows)
        if x.nnz:
            x.data[0] = 0.0
        engine = SparseEngine(x, np.full(d, -4 * size - 1e5), np.full(d, 4 * size + 1e5))
        view = View(shift=centre, scale=scale)
        factor = np.ones(d) if scale is None else scale
        norms = engine.row_norms(view)
        dense = x.toarray()
        for i in range(n):
            true = exact_norm(dense[i], centre, factor)
            assert true * (1.0 - NORM_SLACK) <= norms[i] <= true * (1.0 + NORM_SLACK)
        # The clipped sum with these weights, exactly: within a few u n C.
        radius = 0.5
        weights = np.minimum(1.0, radius / np.maximum(norms, 1e-300))
        exact = [sum(Fraction(w) * Fraction(b) * (Fraction(v) - Fraction(c))
                     for w, v in zip(weights, dense[:, j], strict=True))
                 for j, (b, c) in enumerate(zip(factor, centre, strict=True))]
        got = engine.clipped_sum(view, radius)
        errors = [abs(float(Fraction(g) - e)) for g, e in zip(got, exact, strict=True)]
        assert max(errors) <= 1e-12 * n * radius


def test_rotated_norms_and_sums_about_far_centres_match_exact_arithmetic():
    # Padded widths 4 and 16, where R's entries +-1/2, +-1/4 are exact rationals.
    rng = np.random.default_rng(5)
    for _ in range(30):
        d = int(rng.choice([3, 4, 9, 13, 16]))
        n = int(rng.integers(1, 8))
        rotation = RandomRotation.draw(d, rng)
        width = rotation.padded_dim
        hadamard = View(rotation=rotation).apply_base(np.eye(d))  # R's first d columns, rows
        exact_r = [[Fraction(float(v)) for v in row] for row in hadamard]
        assert all(abs(v) * {4: 2, 16: 4}[width] == 1 for row in exact_r for v in row)
        size = 10.0 ** rng.uniform(0, 14)
        point = rng.normal(size=d) * size
        centre = rotation.apply(point)
        rows = np.where(rng.random((n, d)) < 0.8,
                        point + rng.normal(size=(n, d)) * 10.0 ** rng.uniform(-2, 3), 0.0)
        engine = SparseEngine(scipy.sparse.csr_matrix(rows), np.full(d, -10 * size - 1e4),
                              np.full(d, 10 * size + 1e4))
        view = View(rotation=rotation, shift=centre)
        norms = engine.row_norms(view)
        radius = 0.5
        weights = np.minimum(1.0, radius / np.maximum(norms, 1e-300))
        exact_sum = [Fraction(0)] * width
        for i in range(n):
            moved = [sum((exact_r[j][a] * Fraction(v) for j, v in enumerate(rows[i])),
                         Fraction(0)) - Fraction(c) for a, c in enumerate(centre)]
            true = float(sum(v * v for v in moved)) ** 0.5
            assert norms[i] >= true * (1.0 - NORM_SLACK) - 1e-13 * np.linalg.norm(centre)
            exact_sum = [t + Fraction(weights[i]) * v for t, v in zip(exact_sum, moved,
                                                                      strict=True)]
        got = engine.clipped_sum(view, radius)
        error = max(abs(float(Fraction(g) - e)) for g, e in zip(got, exact_sum, strict=True))
        assert error <= 1e-12 * n * radius + 1e-13 * np.linalg.norm(centre)


def test_clipped_sums_about_a_far_centre_keep_the_dense_engines_accuracy():
    # X^T w - (sum w) s loses about u n ||s|| (tens of thousands here, against a radius of 1);
    # the sum over differences keeps the dense engine's few units of u n C.
    rng = np.random.default_rng(1)
    n, d = 20_000, 3
    centre = np.full(d, 1e12)
    rows = centre + rng.normal(0.0, 3.0, size=(n, d))
    rows[:, 2] = np.where(rng.random(n) < 0.5, 0.0, rows[:, 2])
    lo, hi = np.zeros(d), np.full(d, 4e12)
    view = View(shift=centre)
    sparse, dense = SparseEngine(scipy.sparse.csr_matrix(rows), lo, hi), InMemoryEngine(rows,
                                                                                        lo, hi)
    for radius in (1.0, 4.0):
        inner, outer = sparse.clipped_sums(view, (radius, 2 * radius))
        np.testing.assert_allclose(inner, dense.clipped_sum(view, radius), atol=1e-6)
        np.testing.assert_allclose(outer, dense.clipped_sum(view, 2 * radius), atol=1e-6)


@pytest.mark.parametrize("far", [2e9, 1e12])
def test_coinpress_on_sparse_input_moves_at_most_its_sensitivity(far):
    # The same seed on both neighbours draws the same noise: the releases differ by exactly the
    # statistic's change, which the noise was sized for (2 kappa / n in l2).
    n, d = 50, 2
    centre = np.array([far, far])
    rng = np.random.default_rng(0)
    base = centre + rng.normal(0.0, 0.5, size=(n, d))
    base[0] = centre - np.array([100.0, 0.0])
    options = dict(rho=1.0, method="coinpress", t=1, radius=1.0, centre=centre, sigma=1.0,
                   bounds=(0.0, 2.0 ** np.ceil(np.log2(4 * far))), random_state=7)
    first = dpmean.mean(scipy.sparse.csr_matrix(base), **options)
    sensitivity = (float(np.max(first.diagnostics["noise_std"]))
                   * np.sqrt(2.0 * first.ledger["mean-step-1"]))
    # Up to the rounding of the release itself (its coordinates are near ``far``).
    slack = sensitivity * 1e-9 + 4.0 * np.spacing(far)
    for offset in np.geomspace(1.0, 4e-8 * far, 30):
        other = base.copy()
        other[0] = centre + np.array([offset, 0.0])
        second = dpmean.mean(scipy.sparse.csr_matrix(other), **options)
        moved = float(np.linalg.norm(first.mean - second.mean))
        assert moved <= sensitivity + slack, (offset, moved / sensitivity)


def test_baskets_about_their_mean_keep_the_expanded_norms(monkeypatch):
    # Centres in [0, 1] never come near the cancellation: no row is recomputed and no sum is
    # taken the far way, so basket releases keep their bits.
    def refuse(*args, **kwargs):
        raise AssertionError("recomputed")

    monkeypatch.setattr(SparseEngine, "_distances", refuse)
    monkeypatch.setattr(SparseEngine, "_far_sum", refuse)
    rng = np.random.default_rng(2)
    x = scipy.sparse.random(3000, 200, density=0.04, format="csr", random_state=rng,
                            data_rvs=np.ones)
    for method in ("iome", "plan", "cm", "auto"):
        dpmean.mean(x, rho=0.5, method=method, bounds=(0.0, 1.0), random_state=0)
