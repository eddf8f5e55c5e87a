"""Secure releases' sums (``engines.grid_sums``): each row's term split on public grids into
whole numbers whose sums are exact in any order, so the statistic a secure release rounds to its
grid is one number however the rows are ordered, blocked or spread over engines, within a few
roundings of the exact sum of the split terms, and within n finest / 2 of the terms' own sum.

The bounds checked here are the module's arithmetic (docs/privacy.md, "Secure noise"): exact
rational arithmetic (``fractions``) is the reference, never the code under test."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse

import dpmean
from dpmean.engines import ChunkedEngine, InMemoryEngine, SparseEngine, grid_sums
from dpmean.engines.grid_sums import (
    combined,
    exact_clipped_sums,
    exact_outer_sum,
    grid_levels,
    split_sums,
)
from dpmean.errors import InvalidParameterError, SecureNoiseWarning
from dpmean.estimators import ClippedMean
from dpmean.transforms import IDENTITY, View

U = 2.0**-53


@pytest.mark.parametrize("n", [1, 7, 3000, 10**6, 2**40])
@pytest.mark.parametrize("bound,finest", [(1.0, 1e-9), (3e5, 2.0**-30), (1e-8, 1e-20),
                                          (1.0, 2.0)])
def test_every_level_sums_exactly(n, bound, finest):
    levels = grid_levels(n, bound, finest)
    assert all(math.frexp(g)[0] == 0.5 for g in levels)  # powers of two
    assert list(levels) == sorted(levels, reverse=True) and len(set(levels)) == len(levels)
    assert finest / 2 < levels[-1] <= finest
    reach = max(bound, finest)
    for g in levels:
        # n whole multiples of g of size at most reach + g / 2: every partial sum is a
        # multiple of g below 2^53 g, so exact in any order.
        assert n * (reach + g / 2) <= 2.0**53 * g
        reach = g / 2


def test_levels_refuse_what_float64_cannot_split():
    with pytest.raises(InvalidParameterError, match="2\\^40 rows"):
        grid_levels(2**41, 1.0, 1e-9)
    with pytest.raises(InvalidParameterError, match="rescale"):
        grid_levels(10, 1.0, 2.0**-1010)


def _hostile_terms(rng, n, k, bound):
    """Terms of every magnitude from bound down to 1e-12 bound, both signs, some at the bound
    and some beyond it (clamped): float sums of them depend on the order of addition."""
    magnitude = bound * 10.0 ** rng.uniform(-12, 0, size=(n, k))
    terms = np.where(rng.random((n, k)) < 0.5, -magnitude, magnitude)
    terms[rng.random((n, k)) < 0.05] = bound
    terms[0, 0] = 1.5 * bound  # clamped to the bound
    return terms


def test_split_sums_are_exact_and_close_to_the_terms_sum():
    rng = np.random.default_rng(1)
    n, k, bound, finest = 400, 3, 7.5, 2.0**-60
    terms = _hostile_terms(rng, n, k, bound)
    levels = grid_levels(n, bound, finest)
    assert len(levels) >= 2  # the test crosses levels
    sums = split_sums(terms, np.ones(n), bound, levels)
    assert np.array_equal(sums, np.rint(sums))  # whole numbers
    clamped = np.clip(terms, -bound, bound)
    for j in range(k):
        exact_terms = sum(Fraction(t) for t in clamped[:, j])
        split = sum(Fraction(s) * Fraction(g) for s, g in zip(sums[:, j], levels, strict=True))
        # Each term split to within half the finest grid.
        assert abs(split - exact_terms) <= Fraction(n) * Fraction(levels[-1]) / 2
        # The combination: L - 1 roundings of sums of size at most n (bound + g_1).
        total = Fraction(combined(sums, levels)[j])
        budget = (len(levels) - 1) * U * n * (bound + levels[0]) * (1 + 2.0**-50)
        assert abs(total - split) <= Fraction(budget)


def test_split_sums_are_the_same_bits_in_any_order_and_blocking():
    rng = np.random.default_rng(2)
    n, k, bound = 3000, 4, 3.0
    terms = _hostile_terms(rng, n, k, bound)
    weights = rng.uniform(0.0, 1.0, size=n)
    levels = grid_levels(n, bound, 2.0**-45)
    reference = combined(split_sums(terms, weights, bound, levels), levels)
    float_sums = set()
    for trial in range(5):
        order = rng.permutation(n)
        cuts = np.sort(rng.choice(np.arange(1, n), size=trial + 3, replace=False))
        parts = [split_sums(terms[rows], weights[rows], bound, levels)
                 for rows in np.split(order, cuts)]
        total = np.zeros_like(parts[0])
        for part in reversed(parts):
            total += part
        assert np.array_equal(combined(total, levels), reference)
        float_sums.add(tuple(np.sum(terms[order] * weights[order, None], axis=0)))
    # The data discriminate: plain float sums of the same terms changed with the order.
    assert len(float_sums) > 1


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(5)
    x = rng.normal(0.0, 1.0, size=(1200, 6)) * np.array([1e-6, 1.0, 30.0, 1.0, 5.0, 0.1])
    x[rng.random(x.shape) < 0.3] = 0.0  # zeros, for the sparse engine
    x[:5] *= 40.0  # rows far out, clipped
    return x


def _engines(x, lo, hi, dask_client):
    da = pytest.importorskip("dask.array")
    from dpmean.engines import make_engine

    yield InMemoryEngine(x, lo, hi)
    yield ChunkedEngine(x, lo, hi, chunk_rows=97)
    yield SparseEngine(scipy.sparse.csr_matrix(x), lo, hi)
    yield make_engine(da.from_array(x, chunks=(250, 6)), lo, hi, "dask")


def test_exact_clipped_sums_are_one_number_on_every_engine(rows, dask_client):
    lo, hi = np.full(6, -50.0), np.full(6, 50.0)
    view = View(shift=np.array([0.0, 0.1, -1.0, 0.0, 0.5, 0.0]), scale=np.full(6, 0.5))
    bands = [(0.0, 4.0), (4.0, 6.0), (0.0, np.inf)]
    finest = [2.0**-40, 2.0**-42, 2.0**-38]

    def sums(engine):
        return exact_clipped_sums(engine, view, bands, finest=finest, bound=60.0)

    reference = sums(InMemoryEngine(rows, lo, hi))
    reversed_rows = sums(InMemoryEngine(rows[::-1].copy(), lo, hi))
    for engine in _engines(rows, lo, hi, dask_client):
        for got, want in zip(sums(engine), reference, strict=True):
            assert np.array_equal(got, want), type(engine).__name__
    for got, want in zip(reversed_rows, reference, strict=True):
        assert np.array_equal(got, want)
    # Against the engines' float sums: the same values up to their rounding.
    engine = InMemoryEngine(rows, lo, hi)
    inner, outer = engine.clipped_sums(view, (4.0, 6.0))
    np.testing.assert_allclose(reference[0], inner, rtol=0, atol=1e-9)
    np.testing.assert_allclose(reference[1], outer - inner, rtol=0, atol=1e-9)
    np.testing.assert_allclose(reference[2], engine.clipped_sum(view, np.inf), rtol=0,
                               atol=1e-9)


def test_a_band_term_is_never_wider_than_the_band():
    # Rows just beyond a radius: the difference of two clips, recomputed, stays within the
    # band's width (up to its own rounding), however close the two radii.
    rng = np.random.default_rng(6)
    norms = rng.uniform(0.5, 3.0, size=2000)
    inner, outer = 1.0, 1.0 + 2.0**-30
    weights = grid_sums.band_weights(norms, inner, outer, len(norms))
    assert np.all(weights >= 0)
    assert np.all(weights * norms <= (outer - inner) * (1 + 2.0**-40))


def test_exact_outer_sum_is_the_exact_sum_of_the_rounded_rows(rows):
    lo, hi = np.full(6, -50.0), np.full(6, 50.0)
    radius, x = 7.0, np.clip(rows[:300], -50.0, 50.0)  # the engine clamps to its box
    engine = InMemoryEngine(x, lo, hi)
    got = exact_outer_sum(engine, IDENTITY, radius)
    # The reference: the same rounding of each clipped row, then exact products and sums.
    n = len(x)
    top = math.ldexp(1.0, math.frexp(radius * (1.0 + 2.0**-20))[1])
    bits = (53 - math.ceil(math.log2(n))) // 2
    coarse = math.ldexp(top, -bits)
    fine = math.ldexp(coarse, -(bits + 1))
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))
    clipped = np.clip(x * np.minimum(1.0, radius / np.maximum(norms, 1e-300))[:, None], -top,
                      top)
    whole = np.rint(clipped / coarse)
    rest = np.rint((clipped / coarse - whole) * 2.0 ** (bits + 1))
    rounded = [[Fraction(p) * Fraction(coarse) + Fraction(r) * Fraction(fine)
                for p, r in zip(prow, rrow, strict=True)]
               for prow, rrow in zip(whole, rest, strict=True)]
    for a in range(6):
        for b in range(6):
            exact = sum(row[a] * row[b] for row in rounded)
            assert abs(Fraction(got[a, b]) - exact) <= Fraction(3 * U * n * top * top)
    # Each row rounded by at most half the fine grid.
    assert np.max(np.abs(clipped - (whole * coarse + rest * fine))) <= fine / 2
    # And the same bits in any order of the rows.
    again = exact_outer_sum(InMemoryEngine(x[::-1].copy(), lo, hi), IDENTITY, radius)
    assert np.array_equal(got, again)


def _secure(x, method, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SecureNoiseWarning)
        return dpmean.mean(x, rho=1.0, method=method, random_state=7, secure_noise=True,
                           **options)


ORDER_FREE = [("cm", {"bounds": (-50, 50)}), ("iome", {"bounds": (-50, 50)}),
              ("gaussian", {"bounds": (-50, 50)}), ("plan-noscale", {"bounds": (-50, 50)}),
              ("coinpress", {"radius": 100.0}),
              ("cm", {"bounds": (-50, 50), "interval_share": 0.1})]


@pytest.mark.parametrize("method,options", ORDER_FREE,
                         ids=[m + ("-interval" if "interval_share" in o else "")
                              for m, o in ORDER_FREE])
def test_a_secure_release_is_the_same_bits_in_any_row_order(rows, method, options):
    # Estimators whose every step is a function of the rows as a multiset (counts, norms,
    # sums; no random pairing of rows, as auto's and PLAN's pair medians and variances
    # have): secure noise makes the release itself one number.
    expected = _secure(rows, method, **options)
    order = np.random.default_rng(9).permutation(len(rows))
    got = _secure(rows[order], method, **options)
    assert np.array_equal(got.mean, expected.mean)
    for key in ("clip_residual",):
        if key in expected.diagnostics:
            assert np.array_equal(got.diagnostics[key], expected.diagnostics[key])


def _pre_noise_statistics(monkeypatch, x, method, **options):
    """Every value a secure release hands to the discretised Gaussian (its statistics before
    noise), in order: the bits a release's rounding to its grid would otherwise hide."""
    from dpmean.mechanisms import gaussian as gaussian_module

    seen = []
    draw = gaussian_module._discretised_gaussian

    def recorded(value, sensitivity, rho, rng):
        seen.append(np.array(value, dtype=np.float64))
        return draw(value, sensitivity, rho, rng)

    monkeypatch.setattr(gaussian_module, "_discretised_gaussian", recorded)
    _secure(x, method, **options)
    monkeypatch.undo()
    return seen


@pytest.mark.parametrize("method,options", ORDER_FREE[:4] + ORDER_FREE[5:],
                         ids=["cm", "iome", "gaussian", "plan-noscale", "cm-interval"])
def test_the_statistics_behind_a_secure_release_are_the_same_bits_in_any_row_order(
        rows, monkeypatch, method, options):
    # The releases above are rounded to their grids, which hides an ulp: the statistics
    # themselves must be one number (the float sums of the code before differed under this
    # permutation for cm, gaussian and iome: a review).
    order = np.random.default_rng(9).permutation(len(rows))
    expected = _pre_noise_statistics(monkeypatch, rows, method, **options)
    got = _pre_noise_statistics(monkeypatch, rows[order], method, **options)
    assert len(got) == len(expected) > 0
    for a, b in zip(got, expected, strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("method,options", [("cm", {"bounds": (-50, 50)}),
                                            ("gaussian", {"bounds": (-50, 50)}),
                                            ("plan", {"bounds": (-50, 50)})])
def test_the_statistics_behind_a_secure_release_are_the_same_bits_on_every_engine(
        rows, method, options, dask_client, tmp_path, monkeypatch):
    # Views that shift and scale each coordinate: a row's term is the same whatever block
    # holds it. (A rotation of 8 coordinates or fewer, or a linear map, is a BLAS product
    # whose rounding may follow the block's size: its term is then a function of the row and
    # its position, which privacy needs, but engines that cut other blocks may differ.)
    da = pytest.importorskip("dask.array")
    expected = _pre_noise_statistics(monkeypatch, rows, method, **options)
    path = tmp_path / "x.npy"
    np.save(path, rows)
    for data, engine in ((rows, "chunked"), (str(path), "chunked"),
                         (da.from_array(rows, chunks=(300, 6)), None)):
        got = _pre_noise_statistics(monkeypatch, data, method, engine=engine, **options)
        assert len(got) == len(expected) > 0
        for a, b in zip(got, expected, strict=True):
            assert np.array_equal(a, b), engine


def test_secure_noise_on_the_sparse_engine_sums_as_the_dense_engine(monkeypatch):
    rng = np.random.default_rng(4)
    x = (rng.random((2000, 30)) < 0.1).astype(np.float64)
    # (PLAN's sparse default centre is the mean: the dense run is told the same.)
    for method, options in (("cm", {}), ("iome", {}), ("plan-noscale", {"centre": "mean"})):
        dense = _pre_noise_statistics(monkeypatch, x, method, bounds=(0, 1), **options)
        sparse = _pre_noise_statistics(monkeypatch, scipy.sparse.csr_matrix(x), method,
                                       bounds=(0, 1), engine="sparse", **options)
        assert len(dense) == len(sparse) > 0
        for a, b in zip(dense, sparse, strict=True):
            assert np.array_equal(a, b), method


def test_a_secure_box_that_misses_the_origin_runs_at_its_centre():
    x = np.random.default_rng(3).uniform(10.0, 11.0, size=(3000, 2))
    secure = _secure(x, "gaussian", bounds=(10.0, 11.0))
    np.testing.assert_array_equal(secure.diagnostics["box_offset"], [10.5, 10.5])
    plain = dpmean.mean(x, rho=1.0, method="gaussian", bounds=(10.0, 11.0), random_state=7)
    assert plain.diagnostics.get("box_offset") is None
    assert np.all(np.abs(secure.mean - 10.5) < 0.5)


def test_a_secure_release_too_large_to_sum_is_refused_before_any_charge():
    da = pytest.importorskip("dask.array")
    huge = da.zeros((10**9, 40), chunks=(10**7, 40))  # never computed
    session = dpmean.Session(rho=1.0)
    with pytest.raises(InvalidParameterError, match="secure noise on 1000000000 rows"):
        session.mean(huge, rho=0.5, method="cm", bounds=(-1, 1), secure_noise=True)
    assert session.spent == 0
    estimator = ClippedMean(rho=1.0, bounds=(-1, 1), secure_noise=True)
    with pytest.raises(InvalidParameterError, match="secure noise"):
        estimator.fallback_reason(10**9, 40)
    # Without secure noise, or at a size float64 sums hold, nothing is refused.
    assert ClippedMean(rho=1.0, bounds=(-1, 1)).fallback_reason(
        10**9, 40) is None
    assert estimator.fallback_reason(10**8, 40) is None


def test_an_exact_sum_refuses_a_span_beyond_float64():
    engine = InMemoryEngine(np.ones((10, 2)), np.zeros(2), np.ones(2))
    with pytest.raises(InvalidParameterError, match="2\\^48"):
        exact_clipped_sums(engine, IDENTITY, [(0.0, 1.0)], finest=[2.0**-60])
    with pytest.raises(InvalidParameterError, match="needs a bound"):
        exact_clipped_sums(engine, IDENTITY, [(0.0, np.inf)], finest=[2.0**-20])
