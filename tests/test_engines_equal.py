"""Same seed and data => same estimate on every engine (memory, chunked, sparse, dask), for every
estimator that reads data through the engine.

Every central-model estimator reads its data through an engine (``MeanEstimator.estimate``) and
is listed in DENSE; the local and shuffle protocol simulations (iome-local, iome-shuffle,
grs-*), which hand rows to simulated users in blocks of a public size, are in PROTOCOLS. Not
here: ``trimmed`` and PLAN's default dense options on the sparse engine, which need order
statistics (refused, tested below).
"""

import numpy as np
import pytest
import scipy.sparse

import dpmean
from dpmean.engines import base as base_module
from dpmean.engines import chunked as chunked_module
from dpmean.engines import open_source
from dpmean.engines import sparse as sparse_module
from dpmean.errors import InvalidParameterError
from dpmean.mechanisms import exponential as exponential_module
from dpmean.protocols import base as protocols_base

# Tolerance. Every private decision (binary-search steps, exponential-mechanism draws) depends
# on integer counts or on row norms computed row by row the same way on every engine, so the
# same seed makes the same decisions and draws the same noise. Only sums over rows change order
# (per chunk, per block, per Dask partition, or through the sparse identities); summing n terms
# of size at most B in any order errs by at most n * u * B (u = 2^-53), i.e. u * B on a mean:
# ~1e-15 here (B <= 20). 1e-9 leaves room for the restore step (rotation, scaling) and for the
# sparse identity ||x||^2 - 2 <x, s> + ||s||^2 (cancellation of terms of size d).
ATOL = 1e-9

# IOME with a centring budget small enough that it narrows its median domains first (one more
# norm search, on the rotated rows shifted to the box's centre).
NARROWING_IOME = ("iome", {"centre_share": 1e-4})

DENSE = [
    ("cm", {}),
    ("iome", {}),
    NARROWING_IOME,
    ("gaussian", {}),
    ("cm-fixed", {}),
    ("plan", {}),
    ("plan-noscale", {}),
    ("iome-gaussian", {"mean_radius": 10.0, "sigma_min": 0.5, "sigma_max": 2.0}),
    # the integer path's narrowing
    ("iome-gaussian", {"mean_radius": 10.0, "sigma_min": 0.5, "sigma_max": 2.0,
                       "centre_share": 1e-4}),
    ("coinpress", {"radius": 50.0}),
    ("iome", {"interval_share": 0.05}),  # the clip profile's counts
    ("coinpress-cov", {"radius": 50.0}),
    ("trimmed", {}),
    ("trimmed", {"truncation": "output", "noise": "student-t"}),
    # Several pairings and the binary-search quantiles of the variances (PLAN's options that
    # read pair differences and order statistics differently).
    ("plan", {"pairings": 2, "group_size": 3, "quantile": "binary-search"}),
]
NEEDS_BOUNDS = {"cm", "iome", "gaussian", "cm-fixed", "plan", "plan-noscale", "trimmed"}
IDS = [m + "".join(f"-{v}" for v in o.values() if isinstance(v, str | int) and v != 50.0)
       + ("-narrowing" if "centre_share" in o else "") for m, o in DENSE]



@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    rng = np.random.default_rng(8)
    x = rng.normal(2.0, 1.5, size=(3000, 12)) * np.linspace(0.5, 2.0, 12)
    path = tmp_path_factory.mktemp("engines") / "x.npy"
    np.save(path, x)
    return x, path


def _estimate(x, method, options, **extra):
    extra.setdefault("bounds", (-20.0, 20.0) if method in NEEDS_BOUNDS else None)
    return dpmean.mean(x, rho=1.0, method=method, random_state=11, **options, **extra).mean


@pytest.mark.parametrize("method,options", DENSE, ids=IDS)
def test_chunked_equals_memory(dense, method, options, monkeypatch):
    x, path = dense
    # Chunks of 97 rows: 31 chunks, the last one short.
    monkeypatch.setattr(chunked_module, "CHUNK_BYTES", 8 * 2 * x.shape[1] * 97)
    expected = _estimate(x, method, options)
    got = _estimate(open_source(path), method, options)
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)
    # An array forced onto the chunked engine gives the same answer.
    forced = _estimate(x, method, options, engine="chunked")
    np.testing.assert_allclose(forced, expected, rtol=0, atol=ATOL)


@pytest.mark.parametrize("method,options", DENSE, ids=IDS)
def test_column_blocks_and_spilled_answers_agree(dense, method, options, monkeypatch,
                                                 dask_client):
    # Column questions in blocks of 5 of the 12 coordinates (the last block short), the
    # exponential mechanism drawing for 2 columns at a time, and answers above 117 KiB (all
    # n x k answers here) spilled to temporary files: the bounded-memory path on every engine.
    da = pytest.importorskip("dask.array")
    x, path = dense
    monkeypatch.setattr(chunked_module, "CHUNK_BYTES", 8 * 2 * x.shape[1] * 97)
    monkeypatch.setattr(base_module, "COLUMN_BLOCK_BYTES", 8 * 3000 * 5)
    monkeypatch.setattr(exponential_module, "_BLOCK_VALUES", 2 * 3002)
    expected = _estimate(x, method, options)
    for data in (open_source(path), da.from_array(x, chunks=(700, 12))):
        got = _estimate(data, method, options)
        np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)


@pytest.mark.parametrize("method,options", DENSE, ids=IDS)
def test_dask_equals_memory(dense, method, options, dask_client):
    da = pytest.importorskip("dask.array")
    x, _ = dense
    expected = _estimate(x, method, options)
    got = _estimate(da.from_array(x, chunks=(700, 4)), method, options)
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)


PROTOCOLS = ["iome-local", "iome-shuffle", "grs-knownvar", "grs-unkvar"]


@pytest.mark.parametrize("method", PROTOCOLS)
def test_protocols_give_one_release_on_every_engine(dense, method, monkeypatch, dask_client):
    # The users' randomisers draw block by block; blocks followed the engine (the memory
    # engine's cache blocks, a file's chunks, a dask array's chunks) and so did the release
    # (iome-local moved by 1.5 on chunks of 700 rows). Blocks of 250 users here (k = 16
    # padded coordinates: 12 blocks, the last short), neither the files' 97-row chunks nor
    # the dask array's 700: the same draws, so the same release up to the sums' order.
    da = pytest.importorskip("dask.array")
    x, path = dense
    monkeypatch.setattr(chunked_module, "CHUNK_BYTES", 8 * 2 * x.shape[1] * 97)
    monkeypatch.setattr(protocols_base, "USER_BLOCK_BYTES", 8 * 16 * 250)
    expected = _estimate(x, method, {}, bounds=(-20.0, 20.0))
    for data in (open_source(path), da.from_array(x, chunks=(700, 12))):
        got = _estimate(data, method, {}, bounds=(-20.0, 20.0))
        np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)


SPARSE = [
    ("cm", {}),
    ("iome", {}),
    NARROWING_IOME,
    ("gaussian", {}),
    ("cm-fixed", {}),
    # The sparse defaults ("auto") pick the mean centre and binary variances by input type;
    # the dense run is told the same.
    ("plan", {"centre": "mean", "variance": "binary"}),
    ("plan-noscale", {"centre": "mean"}),
]


@pytest.mark.parametrize("method,options", SPARSE,
                         ids=[m + ("-narrowing" if (m, o) == NARROWING_IOME else "")
                              for m, o in SPARSE])
def test_sparse_equals_memory(method, options, monkeypatch):
    rng = np.random.default_rng(3)
    # Baskets over 70 items with Zipf popularity: rotated rows have mixed l1 norms, so the
    # sparse engine both decides rows from their l1 bound and rotates others.
    items = np.minimum(rng.zipf(1.6, size=(4000, 5)) - 1, 69)
    keep = rng.random((4000, 5)) < 0.6
    rows = np.repeat(np.arange(4000), 5)[keep.ravel()]
    x = scipy.sparse.csr_matrix((np.ones(len(rows)), (rows, items.ravel()[keep.ravel()])),
                                shape=(4000, 70))
    x.data[:] = 1.0
    # Rotated blocks of 50 rows.
    monkeypatch.setattr(sparse_module, "_BLOCK_BYTES", 8 * 128 * 50)
    expected = dpmean.mean(x.toarray(), rho=1.0, method=method, bounds=(0.0, 1.0),
                           random_state=4, **options).mean
    got = dpmean.mean(x, rho=1.0, method=method, bounds=(0.0, 1.0), random_state=4,
                      engine="sparse", **options).mean
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)


@pytest.mark.parametrize("method", ["plan", "auto", "cm"])
def test_a_basket_file_gives_one_release_on_every_engine(method, tmp_path, dask_client):
    """A .dat basket file is baskets by its format, whichever engine reads it: PLAN's mean
    centre and binary variances and auto's basket choice ran on the sparse engine only, so the
    same file and seed gave a 4x larger error read in dense chunks (``Engine.baskets``)."""
    pytest.importorskip("dask.array")
    from dpmean.io import load_data

    rng = np.random.default_rng(5)
    items = np.minimum(rng.zipf(1.6, size=(3000, 6)) - 1, 59)
    path = tmp_path / "baskets.dat"
    path.write_text("".join(" ".join(map(str, sorted(set(row)))) + "\n" for row in items))
    releases = {}
    for engine in ("sparse", "memory", "chunked", "dask"):
        data = (load_data(path, n_items=60) if engine == "sparse"
                else open_source(path, n_items=60))
        result = dpmean.mean(data, rho=1.0, method=method, bounds=(0.0, 1.0), random_state=6,
                             engine=engine)
        releases[engine] = (result.mean, result.diagnostics.get("chosen"))
    for engine in ("memory", "chunked", "dask"):
        np.testing.assert_allclose(releases[engine][0], releases["sparse"][0], rtol=0,
                                   atol=ATOL)
        assert releases[engine][1] == releases["sparse"][1]


@pytest.mark.parametrize("method,options", [("trimmed", {}), ("plan", {"centre": "median"}),
                                            ("plan", {"variance": "gaussian", "log_range": None})])
def test_sparse_refuses_order_statistics_clearly(method, options):
    # Order statistics of sparse columns are dense n-long columns (and of baskets, all zero):
    # the sparse engine refuses them rather than densify.
    x = scipy.sparse.random(200, 30, density=0.1, format="csr", random_state=1)
    with pytest.raises(InvalidParameterError, match="order statistics.*dense array"):
        dpmean.mean(x, rho=1.0, method=method, bounds=(0.0, 1.0), random_state=1,
                    engine="sparse", **options)


def _rotated_engines(dense, monkeypatch, seed):
    """A rotated and shifted view of ``dense`` (drawn from ``seed``; the generator is returned
    for more draws), its rows on the memory engine, and on the chunked engine (a rotation per
    chunk of 97 rows) and Dask (per block of 700 rows, on the workers)."""
    da = pytest.importorskip("dask.array")
    from dpmean.engines import ChunkedEngine, InMemoryEngine
    from dpmean.engines.dask import DaskEngine
    from dpmean.transforms import RandomRotation, View

    x, path = dense
    monkeypatch.setattr(chunked_module, "CHUNK_BYTES", 8 * 2 * x.shape[1] * 97)
    rng = np.random.default_rng(seed)
    rotation = RandomRotation.draw(x.shape[1], rng)
    view = View(rotation=rotation, shift=rng.normal(size=rotation.padded_dim))
    lo, hi = np.full(x.shape[1], -20.0), np.full(x.shape[1], 20.0)
    others = (ChunkedEngine(open_source(path), lo, hi),
              DaskEngine(da.from_array(x, chunks=(700, 12)), lo, hi))
    return view, rng, InMemoryEngine(x, lo, hi), others


def test_count_tables_agree_on_every_engine(dense, monkeypatch, dask_client):
    # The table of counts a search reads several halvings from (``coordinate_count_table``):
    # the same integers from the chunked engine and from Dask as from memory.
    view, rng, memory, others = _rotated_engines(dense, monkeypatch, 2)
    edges = np.sort(rng.normal(0.0, 4.0, size=(view.rotation.padded_dim, 9)), axis=1)
    expected = memory.coordinate_count_table(view, edges)
    assert expected.min() < 100 and expected.max() > 2900  # the edges span the columns
    for engine in others:
        assert engine.counts_by_table
        np.testing.assert_array_equal(engine.coordinate_count_table(view, edges), expected)


def test_one_pass_clipped_sums_agree_on_every_engine(dense, monkeypatch, dask_client):
    # The clipped mean's sum and its clip residual's, asked together (``clipped_sums``): Dask
    # answers both in one reduction, within ATOL of memory's (a different order of sums).
    view, _, memory, others = _rotated_engines(dense, monkeypatch, 6)
    radii = (5.0, 7.5)
    expected = memory.clipped_sums(view, radii)
    n = memory.n
    for engine in others:
        for got, want in zip(engine.clipped_sums(view, radii), expected, strict=True):
            np.testing.assert_allclose(got / n, want / n, rtol=0, atol=ATOL)


def test_the_clip_residual_agrees_on_every_engine(dense, dask_client):
    da = pytest.importorskip("dask.array")
    x, path = dense
    options = {"interval_share": 0.2}
    expected = dpmean.mean(x, rho=1.0, method="iome", bounds=(-20.0, 20.0), random_state=11,
                           **options).diagnostics["clip_residual"]
    for data in (open_source(path), da.from_array(x, chunks=(700, 4))):
        got = dpmean.mean(data, rho=1.0, method="iome", bounds=(-20.0, 20.0), random_state=11,
                          **options).diagnostics["clip_residual"]
        np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)
