"""The Dask engine's column questions without a funnel (issue 20): exact order statistics
selected on the workers (engines/dask_order.py), the exponential mechanism and the trimmed mean
reading them, no temporary file on the client, and files read by the workers."""

import json
import tempfile

import numpy as np
import pytest

import dpmean
from dpmean.cli import main
from dpmean.engines import base as base_module
from dpmean.engines import dask_order
from dpmean.mechanisms import exponential as exponential_module
from dpmean.mechanisms.exponential import exponential_draws
from dpmean.mechanisms.smooth_sensitivity import trimmed_means

da = pytest.importorskip("dask.array")


@pytest.fixture(scope="module")
def awkward():
    """Columns that make histograms work: Gaussian, heavy ties (rounded), constant, values
    packed within 1e-300 (below any grid on the box), and a lopsided column outside the box."""
    rng = np.random.default_rng(1)
    x = rng.normal(2.0, 1.5, size=(6000, 6))
    x[:, 1] = np.round(x[:, 1])
    x[:, 2] = 0.0
    x[:2000, 3] = 1e-300 * rng.normal(size=2000)
    x[:, 4] = np.exp(rng.normal(size=6000) * 3)
    return x


@pytest.mark.parametrize("ranges", [[(2900, 3100)], [(0, 31), (5969, 6000)], [(0, 6000)],
                                    [(17, 18)], [(0, 3001), (2999, 6000)]])
def test_selected_order_statistics_are_exact(awkward, ranges, monkeypatch):
    # Few buckets and little spare room: every range needs several levels of the grid (ties
    # and the packed column up to MAX_LEVELS), and must still give the sorted values exactly.
    monkeypatch.setattr(dask_order, "BUCKETS", 16)
    monkeypatch.setattr(dask_order, "SPARE_VALUES", 50)
    x = da.from_array(awkward, chunks=(1100, 6))
    lo, hi = np.full(6, -10.0), np.full(6, 10.0)
    selections, _ = dask_order.select(x, ranges, lo, hi)
    expected = np.sort(awkward, axis=0)
    for (start, stop), per_column in zip(ranges, selections, strict=True):
        got = np.stack([c.at(np.arange(start, stop)) for c in per_column], axis=1)
        np.testing.assert_array_equal(got, expected[start:stop])


@pytest.mark.parametrize("m", [0, 40, 2999])
def test_tails_and_middle_sum_match_sorting(awkward, m, monkeypatch):
    monkeypatch.setattr(dask_order, "BUCKETS", 64)
    order = dask_order.DaskColumnOrder(da.from_array(awkward, chunks=(1100, 6)),
                                       np.full(6, -np.inf), np.full(6, np.inf))
    scale = 8.0
    lowest, highest, middle = order.tails(m, scale)
    s = np.sort(awkward, axis=0)
    np.testing.assert_array_equal(lowest, s[:m + 1])
    np.testing.assert_array_equal(highest, s[6000 - m - 1:])
    # The middle is summed in another order than ``trimmed_means`` sums it: n u B apart at
    # most (n = 6000 values of size B <= e^15 / 8, u = 2^-53), far below 1e-6 relative.
    np.testing.assert_allclose(middle / (6000 - 2 * m) * scale, trimmed_means(s, m),
                               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("few", [0, 4096], ids=["selected", "few-values-counted"])
def test_exponential_draws_from_order_statistics_equal_whole_columns(awkward, monkeypatch,
                                                                     few):
    # A window of 2 ranks: most draws weigh the outside, which the order statistics fetch one
    # column side at a time (selected, or, for the columns of few distinct values, the rounded
    # and the constant one, from one pass counting them); the draws must be those of the whole
    # columns.
    monkeypatch.setattr(exponential_module, "window_half_width", lambda n, decay: 2)
    monkeypatch.setattr(dask_order, "FEW_VALUES", few)
    x = np.clip(awkward, -10.0, 10.0)
    lo, hi = np.full(6, -10.0), np.full(6, 10.0)
    order = dask_order.DaskColumnOrder(da.from_array(x, chunks=(1100, 6)), lo, hi)
    for q in (0.5, 0.1):
        expected = exponential_draws(x, lo, hi, q, rho=0.01, rng=np.random.default_rng(5))
        got = exponential_draws(order, lo, hi, q, rho=0.01, rng=np.random.default_rng(5))
        np.testing.assert_array_equal(got, expected)


def test_a_side_of_a_column_of_few_values_needs_no_selection(monkeypatch):
    # MNIST's pair differences: tied columns send most draws outside the window, and one
    # selection per column side took PLAN 407 s on the Dask engine (1 s in memory).
    rng = np.random.default_rng(2)
    x = np.where(rng.random((5000, 5)) < 0.9, 0.0, rng.integers(1, 256, (5000, 5)))
    order = dask_order.DaskColumnOrder(da.from_array(x, chunks=(1100, 5)), np.zeros(5),
                                       np.full(5, 255.0))
    monkeypatch.setattr(dask_order, "select", None)  # any selection fails
    s = np.sort(x, axis=0)
    for col in range(5):
        for start, stop in ((0, 4000), (4500, 5000), (17, 18)):
            values, firsts = order.runs(start, stop, col)
            lengths = np.diff(np.append(firsts, stop))
            np.testing.assert_array_equal(np.repeat(values, lengths), s[start:stop, col])


@pytest.mark.parametrize("method,options", [
    ("plan", {}), ("plan", {"centre": "median"}), ("plan", {"pairings": 2, "group_size": 3}),
    ("trimmed", {}), ("trimmed", {"truncation": "output"})])
def test_column_questions_write_no_temporary_file(method, options, monkeypatch):
    # Answers above 24 KiB would spill to a temporary file on the client (the old path); the
    # Dask engine must answer without one, and as the in-memory engine does.
    monkeypatch.setattr(base_module, "COLUMN_BLOCK_BYTES", 8 * 3000)

    original = tempfile.TemporaryFile

    def refuse(*args, dir=None, **kwargs):
        # (numba probes its own cache folder with one: not the temporary directory)
        assert dir is not None, "a temporary file on the client"
        return original(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)
    rng = np.random.default_rng(8)
    x = rng.normal(2.0, 1.5, size=(3000, 12)) * np.linspace(0.5, 2.0, 12)
    options = {"rho": 1.0, "method": method, "bounds": (-20.0, 20.0), "random_state": 11,
               **options}
    expected = dpmean.mean(x, **options).mean
    got = dpmean.mean(da.from_array(x, chunks=(700, 12)), **options).mean
    # Same decisions and draws; only the trimmed mean's middle sum changes order (u B).
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_workers_read_tables(tmp_path, suffix, monkeypatch, capsys):
    pd = pytest.importorskip("pandas")
    from dpmean.engines import chunked
    from dpmean.engines.dask import dask_array_from_file

    x = np.random.default_rng(4).normal(2.0, 1.0, size=(2000, 5))
    frame = pd.DataFrame(x, columns=list("abcde"))
    path = tmp_path / f"x{suffix}"
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    got = dask_array_from_file(str(path), columns=["d", "a"])
    np.testing.assert_array_equal(got.compute(), x[:, [3, 0]])
    # The CLI on the Dask engine: the client never opens the rows (no RowSource).
    monkeypatch.setattr(chunked.TableSource, "chunks", lambda *a: pytest.fail("client read"))
    out = tmp_path / "r.json"
    args = ["estimate", str(path), "--rho", "1", "--bounds", "-10", "10", "--seed", "3",
            "--method", "trimmed", "--output", str(out)]
    assert main([*args, "--engine", "dask"]) == 0
    on_dask = json.loads(out.read_text())["mean"]
    assert main([*args, "--force"]) == 0  # the same --output, replaced
    np.testing.assert_allclose(on_dask, json.loads(out.read_text())["mean"], atol=1e-9)


@pytest.mark.parametrize("rows,gather_bytes,merged", [
    (50, 1 << 30, True), (50, 8 * 12 * 120, True), (700, 1 << 30, False)])
def test_pairs_gathered_from_merged_blocks_are_the_same(rows, gather_bytes, merged,
                                                        monkeypatch):
    # Many small blocks: the pairs' rows are gathered from at most 16 merged blocks (fewer
    # pieces: a random pairing takes a piece of every source block for every block of pairs),
    # each at most ``_GATHER_BLOCK_BYTES`` (here also 120 rows); blocks larger than that are
    # gathered from as they are. The same distances and the same release as in memory.
    from dpmean.engines import dask as dask_module
    from dpmean.engines.dask import DaskEngine
    from dpmean.engines.memory import InMemoryEngine

    monkeypatch.setattr(dask_module, "_GATHER_BLOCK_BYTES", gather_bytes)
    sources = []
    gather_source = dask_module._gather_source
    monkeypatch.setattr(dask_module, "_gather_source",
                        lambda rows: sources.append(gather_source(rows)) or sources[-1])
    rng = np.random.default_rng(3)
    x = rng.normal(2.0, 1.5, size=(3001, 12))
    lo, hi = np.full(12, -20.0), np.full(12, 20.0)
    order = rng.permutation(3001)
    engine = DaskEngine(da.from_array(x, chunks=(rows, 12)), lo, hi)
    for got, want in zip(engine.pair_distances(order),
                         InMemoryEngine(x, lo, hi).pair_distances(order), strict=True):
        np.testing.assert_array_equal(got, want)
    blocks = sources[0].chunks[0]
    assert blocks == ((700,) * 4 + (201,) if not merged
                      else (188,) * 15 + (181,) if gather_bytes == 1 << 30
                      else (120,) * 25 + (1,))
    options = {"rho": 1.0, "method": "plan", "bounds": (-20.0, 20.0), "random_state": 11}
    # Same decisions and draws; the final sum adds its blocks in another order (a few ulps).
    np.testing.assert_allclose(dpmean.mean(da.from_array(x, chunks=(rows, 12)), **options).mean,
                               dpmean.mean(x, **options).mean, rtol=0, atol=1e-12)


def test_distinct_runs_and_their_merge_equal_each_querys_unique_values():
    """The collecting pass's runs (compiled: each query's sorted distinct values and counts,
    and two blocks' runs merged) against ``np.unique`` per query, on ties, empty queries and
    zeros of both signs."""
    from dpmean.engines import order_kernels as kernels

    rng = np.random.default_rng(3)

    def runs(segments):
        ends = np.cumsum([len(s) for s in segments])
        flat = np.concatenate(segments) if ends.size and ends[-1] else np.empty(0)
        return kernels.distinct_runs(flat, ends)

    def by_query(found, queries):
        query, values, counts = found
        assert np.all(np.diff(query) >= 0) and np.all(counts > 0)
        return [(values[query == q], counts[query == q]) for q in range(queries)]

    for _ in range(20):
        queries = int(rng.integers(0, 6))
        a = [rng.choice([-1.5, -0.0, 0.0, 2.0, 7.25], int(rng.integers(0, 30))) for _ in
             range(queries)]
        b = [np.round(rng.normal(0, 2, int(rng.integers(0, 30))), 1) for _ in range(queries)]
        merged = by_query(kernels.merged_runs(*runs(a), *runs(b)), queries)
        for q in range(queries):
            for got, segment in ((by_query(runs(a), queries)[q], a[q]),
                                 (merged[q], np.concatenate([a[q], b[q]]))):
                values, counts = np.unique(segment, return_counts=True)
                np.testing.assert_array_equal(got[0], values)
                np.testing.assert_array_equal(got[1], counts)


def test_pair_gather_in_both_layouts_and_of_no_pairs(dask_client):
    # The same pairs gathered with either layout are other tasks (a review: one token for
    # both, and the second graph read the first's persisted tasks on a cluster), and no
    # pairs is an empty array.
    from dpmean.engines import dask as dask_module

    rows = da.from_array(np.arange(8.0)[:, None], chunks=(2, 1))
    pairs = np.array([[0, 5], [1, 7], [2, 6], [3, 4]])
    want = (np.arange(8.0)[pairs[:, 0]] - np.arange(8.0)[pairs[:, 1]])[:, None]
    kept = dask_module._pair_gather(rows, pairs, first_sorted=True).persist()
    other = dask_module._pair_gather(rows, pairs, first_sorted=False).persist()
    np.testing.assert_array_equal(kept.compute(), want)
    np.testing.assert_array_equal(other.compute(), want)
    none = dask_module._pair_gather(rows, np.empty((0, 2), dtype=np.intp), first_sorted=True)
    assert none.compute().shape == (0, 1)


@pytest.mark.parametrize("bounds", [(0.0, 1.0), None])
@pytest.mark.parametrize("values, message", [
    (np.array([["a", "b"]] * 10), "must be numeric"),
    (np.ones((10, 2)) + 1j, "must be real-valued"),
])
def test_a_dask_array_is_refused_by_its_dtype_before_anything_else(bounds, values, message):
    # Too few rows for cm at rho = 1: a dask array of text released the fallback's zero vector
    # where the same array in memory was refused (a review). Its dtype is metadata.
    with pytest.raises(dpmean.InvalidDataError, match=message):
        dpmean.mean(da.from_array(values, chunks=5), rho=1.0, method="cm", bounds=bounds)
