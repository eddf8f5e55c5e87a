"""The sparse engine answers as the in-memory engine does on the dense copy, without densifying."""

import json
import math

import numpy as np
import pytest
import scipy.sparse

import dpmean
from dpmean.engines import InMemoryEngine, SparseEngine
from dpmean.errors import InvalidDataError, InvalidParameterError
from dpmean.transforms import Quantizer, RandomRotation, View
from dpmean.validation import check_sparse_data


@pytest.fixture
def setting():
    rng = np.random.default_rng(5)
    n, d = 2000, 40
    x = scipy.sparse.random(n, d, density=0.1, format="csr", random_state=rng,
                            data_rvs=lambda k: rng.normal(0.5, 1.5, size=k))
    lo, hi = np.full(d, -1.0), rng.uniform(0.5, 2.0, size=d)
    views = [View(), View(shift=rng.uniform(-0.5, 0.5, size=d),
                          scale=rng.uniform(0.2, 3.0, size=d))]
    return x, lo, hi, views, rng


def test_answers_match_the_in_memory_engine_on_the_dense_copy(setting):
    x, lo, hi, views, rng = setting
    sparse, dense = SparseEngine(x, lo, hi), InMemoryEngine(x.toarray(), lo, hi)
    for view in views:
        # Thresholds on both sides of 0, so both the implicit zeros and stored values count.
        thresholds = rng.normal(0.0, 1.0, size=x.shape[1])
        np.testing.assert_array_equal(sparse.coordinate_counts(view, thresholds),
                                      dense.coordinate_counts(view, thresholds))
        norms = dense.sorted_norms(view)
        # The sparse norms expand ||b(x - s)||^2; agreement to rounding of the squares' size.
        np.testing.assert_allclose(sparse.sorted_norms(view), norms, rtol=1e-9, atol=1e-7)
        radii = (norms[[500, 1500]] + norms[[501, 1501]]) / 2
        np.testing.assert_array_equal(sparse.norm_counts(view, radii),
                                      dense.norm_counts(view, radii))
        for radius in (radii[0], np.inf):
            np.testing.assert_allclose(sparse.clipped_sum(view, radius),
                                       dense.clipped_sum(view, radius), rtol=1e-9, atol=1e-8)


def test_questions_and_views_without_a_sparse_form_raise_clearly(setting):
    x, lo, hi, _, rng = setting
    engine = SparseEngine(x, lo, hi)
    for ask in (lambda: engine.sorted_columns(View()),
                lambda: engine.pair_differences(View(), np.arange(10)),
                lambda: engine.clipped_outer_sum(View(), 1.0)):
        with pytest.raises(InvalidParameterError, match="without densifying"):
            ask()
    # Rotations have a sparse form (tests/test_scale_engines.py); rounding does not.
    rounded = View(quantizer=Quantizer(0.5), rotation=RandomRotation.draw(x.shape[1], rng))
    with pytest.raises(InvalidParameterError, match="densify"):
        engine.clipped_sum(rounded, 1.0)
    with pytest.raises(InvalidParameterError, match="contain 0"):
        SparseEngine(x, np.full(x.shape[1], 0.1), hi)


def test_huge_sparse_matrix_is_never_densified():
    # Dense, this would be 8 TB; every answer must come from the 200,000 stored values.
    rng = np.random.default_rng(0)
    n = d = 1_000_000
    rows, cols = rng.integers(0, n, 200_000), rng.integers(0, d, 200_000)
    x = scipy.sparse.csr_matrix((np.ones(200_000), (rows, cols)), shape=(n, d))
    x.data[:] = 1.0  # duplicates were summed; baskets are 0/1
    engine = SparseEngine(x, np.zeros(d), np.ones(d))
    view = View(shift=np.full(d, 1e-4), scale=np.full(d, 2.0))
    assert engine.clipped_sum(view, 1.0).shape == (d,)
    assert engine.coordinate_counts(view, np.zeros(d)).sum() > 0
    result = dpmean.mean(x, rho=1.0, method="plan", p=1, bounds=(0, 1), random_state=0)
    assert result.mean.shape == (d,)


def test_estimators_validate_sparse_input():
    x = scipy.sparse.csr_matrix(np.array([[1.0, 0.0], [np.nan, 1.0], [0.0, 1.0]]))
    with pytest.raises(InvalidDataError, match="NaN"):
        dpmean.mean(x, rho=1.0, method="plan", bounds=(0, 1))
    with pytest.raises(InvalidDataError, match="sparse input is not supported"):
        dpmean.mean(scipy.sparse.csr_matrix(np.eye(3)), rho=1.0, method="trimmed",
                    bounds=(0, 1))
    # An infinity is a number beyond the box, clamped like one (as the largest float, then to
    # the box): the release of the matrix with the largest float in its place.
    largest = np.finfo(np.float64).max
    for stored in ([np.inf, 1.0], [largest, 1.0]):
        # (The second: two entries of one cell whose sum overflows.)
        x = scipy.sparse.csr_matrix((np.array([*stored, 1.0]), np.array([0, 0, 1]),
                                     np.array([0, 2, 3])), shape=(2, 2))
        same = scipy.sparse.csr_matrix(np.array([[largest, 0.0], [0.0, 1.0]]))
        for method in ("plan-noscale", "cm"):
            got = dpmean.mean(x, rho=1.0, method=method, bounds=(0, 1), random_state=3)
            expected = dpmean.mean(same, rho=1.0, method=method, bounds=(0, 1), random_state=3)
            np.testing.assert_array_equal(got.mean, expected.mean)


def test_repeated_entries_are_summed_before_clamping():
    # Two stored entries for cell (0, 1): the cell's value is 0.75 + 0.5 = 1.25, clamped to 1.
    x = scipy.sparse.csr_matrix((np.array([0.75, 0.5, 1.0]), np.array([1, 1, 0]),
                                 np.array([0, 2, 3])), shape=(2, 2))
    assert not x.has_canonical_format
    engine = SparseEngine(check_sparse_data(x), np.zeros(2), np.ones(2))
    np.testing.assert_allclose(engine.clipped_sum(View(), np.inf), [1.0, 1.0])
    np.testing.assert_allclose(engine.sorted_norms(View()), [1.0, 1.0])
    assert not x.has_canonical_format  # the caller's matrix is untouched


def test_a_table_of_rotated_counts_is_its_columns_counts_from_one_rotation(setting,
                                                                         monkeypatch):
    # A trial: IOME's medians on 16,000 real-valued sparse rows (d = 16,471) rotated the rows
    # off the integer lattice at each of 40 halvings (104 s). The sparse engine now answers a
    # table of several halvings' thresholds from one rotation of them: the same counts as one
    # question per column, with rows on and off the lattice.
    from dpmean.transforms import hadamard

    x, lo, hi, _, rng = setting
    x = x.copy()
    x.data[: x.nnz // 2] = np.rint(x.data[: x.nnz // 2])  # half the rows' values integers
    engine = SparseEngine(x, lo, hi)
    assert engine.counts_by_table
    view = View(rotation=RandomRotation.draw(x.shape[1], rng))
    k = view.output_dim(x.shape[1])
    edges = np.sort(rng.normal(0.0, 0.5, size=(k, 7)), axis=1)
    per_column = np.column_stack([engine.coordinate_counts(view, edges[:, col])
                                  for col in range(edges.shape[1])])
    rotations = []
    original = hadamard.RandomRotation.apply
    monkeypatch.setattr(hadamard.RandomRotation, "apply",
                        lambda self, rows: rotations.append(1) or original(self, rows))
    np.testing.assert_array_equal(engine.coordinate_count_table(view, edges), per_column)
    blocks = len(rotations)
    rotations.clear()
    engine.coordinate_counts(view, edges[:, 0])
    assert 0 < blocks == len(rotations)  # the table's pass rotates as one column's does


def _baskets_file(tmp_path, lines):
    path = tmp_path / "baskets.dat"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("method", ["cm", "plan", "auto"])
def test_a_dat_path_from_python_is_baskets_in_their_box_on_the_sparse_engine(tmp_path, method):
    # dpmean.mean on a .dat path spent 10% of rho on a private box (4 times too wide on the
    # Retail baskets) and read dense chunks, 40 times slower, where the command line takes
    # (0, 1) by the format and reads sparse rows (a review). Now the same release.
    from dpmean.cli import main

    rng = np.random.default_rng(0)
    lines = [" ".join(str(i) for i in sorted(set(rng.integers(0, 30, size=4).tolist())))
             for _ in range(3000)]
    path = _baskets_file(tmp_path, lines)
    result = dpmean.mean(str(path), n_items=30, rho=1.0, method=method, random_state=1)
    assert "bounds" not in result.ledger and math.fsum(result.ledger.values()) <= 1.0
    out = tmp_path / "out.json"
    assert main(["estimate", str(path), "--items", "30", "--rho", "1", "--method", method,
                 "--seed", "1", "--output", str(out)]) == 0
    np.testing.assert_array_equal(result.mean, json.loads(out.read_text())["mean"])


def test_a_bad_basket_id_is_still_refused_after_a_sessions_charge(tmp_path):
    # The sparse read judges the ids: it happens where the release reads its rows, after the
    # session's charge, as the chunked read did (a refusal before it would say for free that
    # some basket holds an id beyond n_items).
    path = _baskets_file(tmp_path, ["0 1", "2 3", "1 29"] * 200)
    session = dpmean.Session(rho=1.0)
    with pytest.raises(dpmean.InvalidDataError, match="n_items"):
        session.mean(str(path), n_items=20, rho=0.5, method="cm", random_state=2)
    assert session.spent == pytest.approx(0.5)


def test_a_session_takes_a_dat_path_with_the_sparse_engine_named(tmp_path):
    # dpmean.mean and the command line took engine="sparse" for a .dat path; a session
    # refused it before its charge, seeing a row source where the release reads sparse rows
    # (a diff review). The same release as dpmean.mean.
    path = _baskets_file(tmp_path, ["0 1", "2 3", "1 4"] * 128)
    expected = dpmean.mean(str(path), n_items=7, rho=1.0, method="cm", random_state=1).mean
    for engine in ("sparse", None):
        got = dpmean.Session(rho=1.0).mean(str(path), n_items=7, rho=1.0, method="cm",
                                           engine=engine, random_state=1)
        np.testing.assert_array_equal(got.mean, expected)


@pytest.mark.parametrize("method, options", [
    ("iome", {"quantized": True}), ("iome", {"quantized": True, "engine": "sparse"}),
    ("coinpress-cov", {"radius": 3, "engine": "sparse"}),
    ("iome-gaussian", {"mean_radius": 2, "sigma_min": 0.1, "sigma_max": 1,
                       "engine": "sparse"})])
def test_releases_the_sparse_engine_cannot_answer_are_refused_before_the_charge(method,
                                                                                options):
    # Each was charged to a session, then refused by the sparse engine (a review): what the
    # release asks of the engine follows from public options.
    rows = scipy.sparse.csr_matrix(
        (np.random.default_rng(0).random((3000, 8)) < 0.3).astype(float))
    session = dpmean.Session(rho=10.0)
    with pytest.raises(dpmean.InvalidParameterError, match="sparse engine does not answer"):
        session.mean(rows, rho=1.0, method=method, bounds=(0, 1), random_state=1, **options)
    assert session.spent == 0.0 and session.ledger == []
