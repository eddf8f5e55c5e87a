"""The chunked, Dask and rotated-sparse engines question by question, their file readers, memory
bound and errors, and the CLI's engine selection."""

import json
import tracemalloc

import numpy as np
import pytest
import scipy.sparse

from dpmean.cli import main
from dpmean.engines import (
    ChunkedEngine,
    InMemoryEngine,
    SparseEngine,
    make_engine,
    open_source,
)
from dpmean.engines import chunked as chunked_module
from dpmean.engines import sparse as sparse_module
from dpmean.errors import InvalidDataError, InvalidParameterError
from dpmean.io import load_data
from dpmean.transforms import Quantizer, RandomRotation, View

# Engines differ only in the order of float sums (see test_engines_equal.py): n * u * B with
# n = 1000 rows, B <= 1e3 (outer sums of rows of norm <= 30) gives ~1e-10; counts are exact.
RTOL = 1e-9


def _views(rng, d):
    rotation = RandomRotation.draw(d, rng)
    return [
        View(),
        View(rotation=rotation, shift=rng.normal(size=rotation.padded_dim)),
        View(shift=rng.normal(size=d), scale=rng.uniform(0.5, 2.0, size=d)),
        View(preclip=5.0, quantizer=Quantizer(0.25), rotation=rotation),
        View(shift=rng.normal(size=d), linear=rng.normal(size=(d, d)) + 3.0 * np.eye(d)),
    ]


def _same_answers(engine, reference, rng):
    for view in _views(rng, reference.d):
        k = view.output_dim(reference.d)
        t = rng.normal(size=k)
        np.testing.assert_array_equal(engine.coordinate_counts(view, t),
                                      reference.coordinate_counts(view, t))
        np.testing.assert_allclose(engine.row_norms(view), reference.row_norms(view), rtol=RTOL)
        for radius in (2.0, np.inf):
            np.testing.assert_allclose(engine.clipped_sum(view, radius),
                                       reference.clipped_sum(view, radius), rtol=RTOL, atol=1e-9)
        np.testing.assert_allclose(engine.clipped_outer_sum(view, 3.0),
                                   reference.clipped_outer_sum(view, 3.0), rtol=RTOL, atol=1e-9)
        np.testing.assert_allclose(engine.sorted_columns(view), reference.sorted_columns(view),
                                   rtol=RTOL, atol=1e-12)
        order = rng.permutation(reference.n)[:-3]
        np.testing.assert_allclose(engine.pair_differences(view, order),
                                   reference.pair_differences(view, order), rtol=RTOL,
                                   atol=1e-12)
        np.testing.assert_allclose(np.concatenate(list(engine.user_rows(view))),
                                   np.concatenate(list(reference.user_rows(view))), rtol=RTOL,
                                   atol=1e-12)
        rows = engine.materialised(view)
        np.testing.assert_allclose(rows.clipped_sum(View(), np.inf),
                                   reference.clipped_sum(view, np.inf), rtol=RTOL, atol=1e-9)
        np.testing.assert_allclose(rows.row_norms(View()), reference.row_norms(view), rtol=RTOL)


@pytest.fixture
def data():
    rng = np.random.default_rng(5)
    return rng.normal(1.0, 3.0, size=(1000, 6)), np.full(6, -4.0), np.full(6, 7.0), rng


def test_chunked_answers_equal_memory(data):
    x, lo, hi, rng = data
    _same_answers(ChunkedEngine(x, lo, hi, chunk_rows=77), InMemoryEngine(x, lo, hi), rng)


def test_dask_answers_equal_memory(data, dask_client):
    da = pytest.importorskip("dask.array")
    x, lo, hi, rng = data
    engine = make_engine(da.from_array(x, chunks=(130, 6)), lo, hi)
    assert type(engine).__name__ == "DaskEngine"
    _same_answers(engine, InMemoryEngine(x, lo, hi), rng)


def test_dask_reports_bad_values(data, dask_client):
    da = pytest.importorskip("dask.array")
    x, lo, hi, _ = data
    x = x.copy()
    x[917, 2] = np.nan
    engine = make_engine(da.from_array(x, chunks=(100, 6)), lo, hi)
    with pytest.raises(InvalidDataError, match="NaN"):
        engine.clipped_sum(View(), np.inf)


def test_chunked_reads_every_format_like_load_data(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rng = np.random.default_rng(2)
    x = np.round(rng.normal(size=(53, 3)), 3)
    (tmp_path / "h.csv").write_text("a,b,c\n" + "\n".join(",".join(map(str, r)) for r in x))
    (tmp_path / "n.csv").write_text("\n".join(",".join(map(str, r)) for r in x) + "\n")
    pq.write_table(pa.table({"a": x[:, 0], "b": x[:, 1], "c": x[:, 2]}), tmp_path / "t.parquet",
                   row_group_size=10)
    (tmp_path / "b.dat").write_text("1 3\n\n0 4 4\n2\n")
    np.save(tmp_path / "v.npy", x[:, 0])
    for name in ("h.csv", "n.csv", "t.parquet", "b.dat", "v.npy"):
        items = {"n_items": 7} if name.endswith(".dat") else {}
        source = open_source(tmp_path / name, **items)
        expected = load_data(tmp_path / name, **items)
        expected = expected.toarray() if scipy.sparse.issparse(expected) else expected
        expected = expected.reshape(len(expected), -1)
        assert source.shape == expected.shape, name
        # Chunks of 4 rows: many chunks, a short last one.
        np.testing.assert_array_equal(np.concatenate(list(source.chunks(4))), expected)


def test_chunked_memory_is_bounded_by_the_chunk(tmp_path, monkeypatch):
    # 40,000 x 32 float64 = 10 MiB on disk, memory-mapped; chunks of 64 KiB (128 rows at the
    # padded width 64). A question's working set is a few chunks (the chunk, its clamped copy,
    # the rotated copy and temporaries) plus n-long answers (row norms: 0.3 MiB): well under
    # 2 MiB, while reading the file whole would take 10 MiB.
    monkeypatch.setattr(chunked_module, "CHUNK_BYTES", 1 << 16)
    x = np.random.default_rng(0).normal(size=(40_000, 32))
    np.save(tmp_path / "big.npy", x)
    engine = ChunkedEngine(open_source(tmp_path / "big.npy"), np.full(32, -3.0), np.full(32, 3.0))
    view = View(rotation=RandomRotation.draw(32, np.random.default_rng(1)))
    tracemalloc.start()
    engine.clipped_sum(view, 4.0)
    engine.coordinate_counts(view, np.zeros(32))
    engine.row_norms(view)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # tracemalloc counts every thread (a Dask client left by an earlier test allocates too):
    # 3 MiB still tells a few chunks from the 10 MiB file.
    assert peak < 3 * 2**20


def test_chunked_reports_bad_rows(tmp_path):
    (tmp_path / "bad.csv").write_text("1,2\n3,nan\n")
    with pytest.raises(InvalidDataError, match="NaN"):  # found opening a CSV file, as a cell
        engine = ChunkedEngine(open_source(tmp_path / "bad.csv"), np.zeros(2), np.ones(2))
        engine.clipped_sum(View(), np.inf)
    (tmp_path / "ragged.csv").write_text("1,2\n3\n")
    with pytest.raises(InvalidDataError, match="ragged|parse|values"):
        ChunkedEngine(open_source(tmp_path / "ragged.csv"), np.zeros(2), np.ones(2)).row_norms(
            View())
    (tmp_path / "x.npz").write_bytes(b"x")
    with pytest.raises(InvalidDataError, match="read whole, by the name of its array"):
        open_source(tmp_path / "x.npz")


def _baskets(n, d, rng):
    x = scipy.sparse.random(n - 5, d, density=0.05, random_state=rng, format="csr")
    x.data[:] = 1.0
    # A few long baskets, whose l1 bound does not decide their rotated coordinates.
    return scipy.sparse.vstack([scipy.sparse.csr_matrix(np.ones((5, d))), x], format="csr")


@pytest.mark.parametrize("block_rows", [1, 7, 10_000])
def test_sparse_rotated_answers_equal_memory(block_rows, monkeypatch):
    rng = np.random.default_rng(9)
    x = _baskets(600, 45, rng)
    monkeypatch.setattr(sparse_module, "_BLOCK_BYTES", 8 * 64 * block_rows)
    lo, hi = np.zeros(45), np.ones(45)
    engine, reference = SparseEngine(x, lo, hi), InMemoryEngine(x.toarray(), lo, hi)
    rotation = RandomRotation.draw(45, rng)
    for shift in (None, rng.normal(scale=0.1, size=64)):
        view = View(rotation=rotation).with_shift(shift)
        # Thresholds at all scales: far out (every row decided by its l1 bound), near 0 (most
        # rows rotated), and exactly at a rotated value of a one-item basket (1/8).
        for t in (np.full(64, 3.0), rng.normal(scale=0.05, size=64), np.full(64, 0.125),
                  np.linspace(-2.0, 2.0, 64)):
            np.testing.assert_array_equal(engine.coordinate_counts(view, t),
                                          reference.coordinate_counts(view, t))
        np.testing.assert_allclose(engine.row_norms(view), reference.row_norms(view), rtol=RTOL)
        np.testing.assert_allclose(engine.clipped_sum(view, 1.5),
                                   reference.clipped_sum(view, 1.5), rtol=RTOL, atol=1e-9)


def test_sparse_rotation_never_rotates_decided_rows(monkeypatch):
    # With thresholds beyond every row's l1 bound, no row is rotated at all.
    x = _baskets(300, 45, np.random.default_rng(1))
    engine = SparseEngine(x, np.zeros(45), np.ones(45))
    rotation = RandomRotation.draw(45, np.random.default_rng(2))
    monkeypatch.setattr(RandomRotation, "apply", lambda *_: pytest.fail("rotated a row"))
    counts = engine.coordinate_counts(View(rotation=rotation), np.full(64, 45.0 / 8 + 0.1))
    np.testing.assert_array_equal(counts, np.full(64, 300))


def test_sparse_refuses_views_without_sparse_form():
    x = _baskets(50, 10, np.random.default_rng(1))
    engine = SparseEngine(x, np.zeros(10), np.ones(10))
    rng = np.random.default_rng(0)
    for view in (View(rotation=RandomRotation.draw(10, rng, normalized=False)),
                 View(rotation=RandomRotation.draw(10, rng), scale=np.ones(16)),
                 View(quantizer=Quantizer(0.5))):
        with pytest.raises(InvalidParameterError, match="sparse engine"):
            engine.row_norms(view)


def test_make_engine_by_type_and_by_name(data):
    x, lo, hi, _ = data
    assert isinstance(make_engine(x, lo, hi), InMemoryEngine)
    assert isinstance(make_engine(x, lo, hi, "chunked"), ChunkedEngine)
    sparse = scipy.sparse.csr_matrix(np.abs(x))
    assert isinstance(make_engine(sparse, np.zeros(6), hi), SparseEngine)
    with pytest.raises(InvalidParameterError, match="engine must be one of"):
        make_engine(x, lo, hi, "gpu")
    with pytest.raises(InvalidParameterError, match="needs scipy.sparse"):
        make_engine(x, lo, hi, "sparse")
    with pytest.raises(InvalidParameterError, match="needs dense input"):
        make_engine(sparse, np.zeros(6), hi, "chunked")


def _cli(tmp_path, *flags):
    out = tmp_path / f"r{len(list(tmp_path.iterdir()))}.json"
    code = main(["estimate", str(tmp_path / "x.npy"), "--rho", "1", "--bounds", "-10", "10",
                 "--seed", "3", "--method", "cm", "--output", str(out), *flags])
    return code, (json.loads(out.read_text())["mean"] if code == 0 else None)


def test_cli_engines_agree(tmp_path, monkeypatch, capsys, dask_client):
    pytest.importorskip("dask.array")
    np.save(tmp_path / "x.npy", np.random.default_rng(4).normal(2.0, 1.0, size=(2000, 5)))
    _, expected = _cli(tmp_path)
    for flags in (["--engine", "chunked"], ["--engine", "memory"], ["--engine", "dask"],
                  ["--scheduler", dask_client.scheduler.address]):
        code, got = _cli(tmp_path, *flags)
        assert code == 0, flags
        np.testing.assert_allclose(got, expected, atol=1e-9)
    # Above the size threshold the chunked engine is chosen without asking.
    import dpmean.cli.estimate as cli
    import dpmean.engines as engines

    chosen = []
    monkeypatch.setattr(cli, "CHUNKED_ABOVE_BYTES", 1000)
    # (estimate imports open_source when it runs: the CLI's start-up imports no engine)
    monkeypatch.setattr(engines, "open_source",
                        lambda p, **kw: chosen.append(p) or open_source(p, **kw))
    code, got = _cli(tmp_path)
    assert code == 0 and chosen
    np.testing.assert_allclose(got, expected, atol=1e-9)
    capsys.readouterr()
    assert _cli(tmp_path, "--engine", "chunked", "--scheduler", "tcp://x:1")[0] == 2
    assert "--scheduler runs on the dask engine" in capsys.readouterr().err


def test_the_cli_sizes_a_parquet_file_by_its_data_not_its_compressed_bytes(tmp_path,
                                                                           monkeypatch):
    # A user trial: 28 million x 6 Parquet rows in a 486 MB file ran on the memory engine (the
    # threshold read the file's size) and took 6.9 GB. 20,000 x 5 repeated values: 800 kB as
    # float64, a few kB on disk.
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    import dpmean.cli.estimate as cli
    from dpmean.cli import build_parser

    table = pa.table({f"c{j}": np.full(20_000, float(j)) for j in range(5)})
    path = tmp_path / "x.parquet"
    pq.write_table(table, path)
    assert path.stat().st_size < 100_000
    args = build_parser().parse_args(["estimate", str(path), "--rho", "1"])
    layout = cli._input_layout(args)
    assert (layout.n, layout.d) == (20_000, 5)
    monkeypatch.setattr(cli, "CHUNKED_ABOVE_BYTES", 500_000)
    assert cli._choose_engine(args, layout) == "chunked"
    monkeypatch.setattr(cli, "CHUNKED_ABOVE_BYTES", 900_000)
    assert cli._choose_engine(args, layout) is None


def test_the_cli_sizes_a_csv_file_by_its_rows_where_its_cells_could_outgrow_it(tmp_path,
                                                                              monkeypatch):
    # One-digit cells: 4 bytes a row of two ("1,0\n"), 16 as float64 (the review of the
    # Parquet change: CSV was still sized by its bytes). Counted only where the cells could
    # outgrow the threshold; the values are never read.
    import dpmean.cli.estimate as cli
    from dpmean.cli import build_parser

    path = tmp_path / "x.csv"
    path.write_text("a,b\n" + "1,0\n" * 50_000)
    args = build_parser().parse_args(["estimate", str(path), "--rho", "1"])
    layout = cli._input_layout(args)
    size = path.stat().st_size
    monkeypatch.setattr(cli, "CHUNKED_ABOVE_BYTES", 2 * size)  # 16 x 50,000 = 4 x size
    assert cli._choose_engine(args, layout) == "chunked"
    monkeypatch.setattr(cli, "CHUNKED_ABOVE_BYTES", 5 * size)
    counted = []
    monkeypatch.setattr(cli, "_counted_rows", lambda a: counted.append(1) or 50_000)
    assert cli._choose_engine(args, layout) is None
    assert not counted  # 4 x size cannot pass 5 x size: no count


def test_the_cli_chooses_the_engine_by_rows_and_columns_never_by_the_values_bytes(tmp_path,
                                                                                 monkeypatch):
    # A review: the threshold read max(bytes, rows x columns x 8), so one cell written with
    # more digits could move a file across it, and the engines' clip residuals differ by
    # rounding. Two files of the same 2,000 x 2 rows, one of long cells (about 4x the bytes).
    import dpmean.cli.estimate as cli
    from dpmean.cli import build_parser

    short, long = tmp_path / "short.csv", tmp_path / "long.csv"
    short.write_text("a,b\n" + "1,0\n" * 2000)
    long.write_text("a,b\n" + "1.000000000000001,0.000000000000001\n" * 2000)
    monkeypatch.setattr(cli, "CHUNKED_ABOVE_BYTES", 2000 * 2 * 8 + 1)  # just above the rows
    for path in (short, long):
        args = build_parser().parse_args(["estimate", str(path), "--rho", "1"])
        assert path.stat().st_size * cli._CSV_EXPANSION > cli.CHUNKED_ABOVE_BYTES
        assert cli._choose_engine(args, cli._input_layout(args)) is None, path.name
    monkeypatch.setattr(cli, "CHUNKED_ABOVE_BYTES", 2000 * 2 * 8 - 1)  # just below
    for path in (short, long):
        args = build_parser().parse_args(["estimate", str(path), "--rho", "1"])
        assert cli._choose_engine(args, cli._input_layout(args)) == "chunked", path.name


def test_an_npz_path_is_refused_with_the_way_to_load_it(tmp_path):
    # A user trial: the refusal named the formats the chunked engine reads, not how to read
    # an archive of several arrays.
    import dpmean

    path = tmp_path / "a.npz"
    np.savez(path, x=np.ones((10, 2)))
    with pytest.raises(dpmean.InvalidDataError, match=r"load_data\(path, key=NAME\)"):
        dpmean.mean(str(path), rho=1.0, bounds=(0, 1))


def test_the_cli_reads_in_chunks_where_the_memory_engine_would_not_fit(tmp_path, monkeypatch):
    # A review: an 800 MB .npy file, below the size threshold, ran PLAN on the memory engine
    # with 2.5 GB to give (its rotated copy and pair differences beside the rows) and failed
    # for memory after the ledger's charge. The machine's memory is not the data's.
    import dpmean.cli.estimate as cli
    import dpmean.engines as engines
    from dpmean.cli import build_parser

    path = tmp_path / "x.npy"
    np.save(path, np.zeros((2000, 5)))
    args = build_parser().parse_args(["estimate", str(path), "--rho", "1"])
    layout = cli._input_layout(args)
    data = 2000 * 5 * 8  # as float64
    monkeypatch.setattr(engines, "available_memory", lambda: cli.MEMORY_ENGINE_PEAK * data - 1)
    assert cli._choose_engine(args, layout) == "chunked"
    monkeypatch.setattr(engines, "available_memory", lambda: cli.MEMORY_ENGINE_PEAK * data + 1)
    assert cli._choose_engine(args, layout) is None
    monkeypatch.setattr(engines, "available_memory", lambda: None)
    assert cli._choose_engine(args, layout) is None
    # A CSV file's rows are counted for it where they could take that much.
    table = tmp_path / "x.csv"
    table.write_text("a,b\n" + "1,0\n" * 2000)
    args = build_parser().parse_args(["estimate", str(table), "--rho", "1"])
    layout = cli._input_layout(args)
    data = 2000 * 2 * 8
    monkeypatch.setattr(engines, "available_memory", lambda: cli.MEMORY_ENGINE_PEAK * data - 1)
    assert cli._choose_engine(args, layout) == "chunked"
    monkeypatch.setattr(engines, "available_memory", lambda: cli.MEMORY_ENGINE_PEAK * data + 1)
    assert cli._choose_engine(args, layout) is None


def test_available_memory_counts_what_the_process_holds_against_its_address_limit(monkeypatch):
    # Under ``ulimit -v`` the libraries' and threads' reservations count against the limit.
    import resource

    import dpmean.engines as engines

    monkeypatch.setattr(resource, "getrlimit", lambda which: (3 << 30, 3 << 30))
    kilobytes = {"MemAvailable:": 20 << 30, "VmSize:": 1 << 30}
    monkeypatch.setattr(engines, "_proc_kilobytes", lambda path, field: kilobytes[field])
    assert engines.available_memory() == 2 << 30
    kilobytes["VmSize:"] = 4 << 30
    assert engines.available_memory() == 0
