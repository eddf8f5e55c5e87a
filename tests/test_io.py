"""Reading data files and writing atomically: formats round-trip, each mistake is one line."""

from __future__ import annotations

import importlib.util
import io
import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dpmean.engines import open_source
from dpmean.errors import InvalidDataError, InvalidParameterError
from dpmean.io import load_data, write_bytes_atomic, write_text_atomic

DATA = Path(__file__).resolve().parent.parent / "data"


def write(path: Path, content: str | bytes) -> Path:
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def assert_refused(path: Path, content: str | bytes, pattern: str, key: str | None = None):
    """Write ``content`` to ``path``; reading it must fail with a message matching ``pattern``
    (a .dat file is read with n_items=10)."""
    write(path, content)
    items = {"n_items": 10} if path.suffix.lower() == ".dat" else {}
    with pytest.raises(InvalidDataError, match=pattern):
        load_data(path, key=key, **items)


def saved(save, *args, **kwargs) -> bytes:
    """The bytes ``np.save`` / ``np.savez`` write for these arguments."""
    buffer = io.BytesIO()
    save(buffer, *args, **kwargs)
    return buffer.getvalue()


def first_half(raw: bytes) -> bytes:
    return raw[: len(raw) // 2]


needs_pyarrow = pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None,
                                   reason="needs pyarrow")


# ---------------------------------------------------------------------------------- .npy / .npz


@pytest.mark.parametrize("arr", [
    np.arange(12, dtype=np.float64).reshape(4, 3),
    np.arange(6, dtype=np.uint8).reshape(3, 2),
    np.array([1.5, -2.0, 3.25]),
    np.array([[True, False], [False, True]]),
])
def test_npy_round_trip(tmp_path, arr):
    np.save(tmp_path / "x.npy", arr)
    out = load_data(tmp_path / "x.npy")
    assert out.dtype == arr.dtype
    np.testing.assert_array_equal(out, arr)


def test_npz_single_array_needs_no_key(tmp_path):
    arr = np.arange(6.0).reshape(3, 2)
    np.savez(tmp_path / "x.npz", arr)
    np.testing.assert_array_equal(load_data(tmp_path / "x.npz"), arr)
    np.testing.assert_array_equal(load_data(str(tmp_path / "x.npz"), key="arr_0"), arr)


def test_npz_key_selects_the_array(tmp_path):
    a, b = np.ones((2, 2)), np.arange(3)
    np.savez_compressed(tmp_path / "x.npz", first=a, second=b)
    np.testing.assert_array_equal(load_data(tmp_path / "x.npz", key="first"), a)
    np.testing.assert_array_equal(load_data(tmp_path / "x.npz", key="second"), b)


def test_npz_from_scipy_sparse(tmp_path):
    mat = scipy.sparse.random(20, 7, density=0.3, format="csc", random_state=0)
    scipy.sparse.save_npz(tmp_path / "x.npz", mat)
    out = load_data(tmp_path / "x.npz")
    assert isinstance(out, scipy.sparse.csr_matrix)
    np.testing.assert_array_equal(out.toarray(), mat.toarray())


TWO_ARRAYS = saved(np.savez, first=np.ones(2), second=np.zeros(2))


@pytest.mark.parametrize("name, content, key, pattern", [
    pytest.param("x.npz", TWO_ARRAYS, None, r"x\.npz.*several arrays \(first, second\).*key",
                 id="npz-several-arrays-without-key-lists-the-keys"),
    pytest.param("x.npz", TWO_ARRAYS, "third", r"no array named 'third'.*first, second",
                 id="npz-unknown-key"),
    pytest.param("x.npy", saved(np.save, np.ones(3)), "a", r"key .* only applies to \.npz",
                 id="key-only-applies-to-npz"),
    pytest.param("x.npy",
                 saved(np.save, np.array([{"a": 1}, None], dtype=object), allow_pickle=True),
                 None, r"x\.npy: not a valid \.npy file.*never unpickles",
                 id="npy-with-pickled-objects"),
    pytest.param("x.npy", saved(np.save, np.array(["a", "b"])), None,
                 r"x\.npy: holds non-numeric values", id="npy-of-strings"),
    pytest.param("a.npy", saved(np.savez, np.ones(2)), None, r"a\.npy: is an \.npz archive",
                 id="npz-named-npy"),
    pytest.param("b.npz", saved(np.save, np.ones(2)), None, r"b\.npz: is a \.npy array",
                 id="npy-named-npz"),
    pytest.param("x.npz", first_half(saved(np.savez, np.arange(1000.0))), None, r"x\.npz",
                 id="truncated-npz"),
])
def test_bad_npy_npz_is_refused(tmp_path, name, content, key, pattern):
    assert_refused(tmp_path / name, content, pattern, key=key)


def test_bundled_mnist():
    images = load_data(DATA / "mnist-70k.npz", key="images")
    digits = load_data(DATA / "mnist-70k.npz", key="digits")
    assert images.shape == (70000, 784) and images.dtype == np.uint8
    assert digits.shape == (70000,) and set(np.unique(digits)) == set(range(10))


# ------------------------------------------------------------------------------------------ .csv


def test_csv_without_header(tmp_path):
    out = load_data(write(tmp_path / "x.csv", "1,2,3\n4,5,6\n"))
    np.testing.assert_array_equal(out, [[1, 2, 3], [4, 5, 6]])
    assert out.dtype == np.float64


def test_csv_with_header_and_blank_lines_skipped(tmp_path):
    # Blank lines are skipped anywhere, as pandas and polars skip them.
    out = load_data(write(tmp_path / "x.csv", "a,b\r\n1.5,-2\r\n\n3e2, 4\r\n\r\n\n"))
    np.testing.assert_array_equal(out, [[1.5, -2.0], [300.0, 4.0]])


def test_csv_header_is_only_a_first_line_that_is_not_numbers(tmp_path):
    out = load_data(write(tmp_path / "x.csv", "10,20\n30,40\n"))
    assert out.shape == (2, 2)  # the first line is data, not a header


def test_csv_single_column_without_final_newline(tmp_path):
    out = load_data(write(tmp_path / "x.csv", "value\n1\n2\n3"))
    np.testing.assert_array_equal(out, [[1.0], [2.0], [3.0]])


def test_csv_quoted_numbers_and_utf8_bom(tmp_path):
    (tmp_path / "x.csv").write_bytes('\ufeff"x","y"\n"1","2"\n'.encode())
    np.testing.assert_array_equal(load_data(tmp_path / "x.csv"), [[1.0, 2.0]])


def test_csv_nan_and_inf_parse_as_floats(tmp_path):
    out = load_data(write(tmp_path / "x.csv", "1,nan\ninf,-inf\n"))
    assert np.isnan(out[0, 1]) and out[1, 0] == np.inf and out[1, 1] == -np.inf


@pytest.mark.parametrize("content, pattern", [
    pytest.param("a,b,c\n1,2,3\n4,5,6\n7,8\n",
                 r"x\.csv: a line does not have the 3 values the header \(line 1\) has",
                 id="ragged-row"),
    pytest.param("a,b\n1,2\n3,oops\n",
                 r"x\.csv: column 2 holds a cell that is not a number \(column 'b'; ",
                 id="non-numeric-cell-names-its-column"),
    pytest.param("1,2\n3,\n", r"column 2 holds a cell that is not a number", id="empty-cell"),
    pytest.param("1,2\n\n3,x\n", r"column 2 holds a cell that is not", id="blank-lines"),
    pytest.param("1,2\n3\n", r"a line does not have the 2 values line 1 has",
                 id="ragged-no-header"),
    pytest.param(",,\n0,1,2\n", r"x\.csv has two columns named ''", id="unnamed-twice"),
    pytest.param('""\n0\n1\n', r"x\.csv: .*index column but no data columns",
                 id="index-column-without-data"),
    pytest.param('a,"b\n1,2\n', r"x\.csv: line 1 is not a CSV record", id="unclosed-quote"),
    pytest.param("a,b\n", r"x\.csv: .*header line but no rows", id="header-only"),
    pytest.param("\n\n\r\n", r"x\.csv: the file holds no rows", id="only-blank-lines"),
    pytest.param("a,b,c\n1,2\n", r"a line does not have the 3 values the header \(line 1\) has",
                 id="header-with-wrong-number-of-names"),
    # (its first line ends with the byte sniffed as the delimiter: an unnamed last column)
    pytest.param(bytes(range(256)),
                 r"x\.csv: (a line does not have the \d+ values|its last column has no name)",
                 id="binary-garbage"),
])
def test_bad_csv_is_refused(tmp_path, content, pattern):
    assert_refused(tmp_path / "x.csv", content, pattern)


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, max_side=6),
                  elements=st.floats(allow_nan=False, allow_infinity=False)))
def test_csv_round_trips_any_finite_floats(tmp_path_factory, arr):
    path = tmp_path_factory.mktemp("csv") / "x.csv"
    lines = [",".join(repr(float(v)) for v in row) for row in arr]
    header = ",".join(f"c{j}" for j in range(arr.shape[1]))
    write(path, header + "\n" + "\n".join(lines) + "\n")
    np.testing.assert_array_equal(load_data(path), arr)


# -------------------------------------------------------------------------------------- .parquet


def test_parquet_round_trip(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"a": [1, 2, 3], "b": [0.5, 1.5, 2.5], "c": [True, False, True]})
    pq.write_table(table, tmp_path / "x.parquet")
    out = load_data(tmp_path / "x.parquet")
    np.testing.assert_array_equal(out, [[1, 0.5, 1], [2, 1.5, 0], [3, 2.5, 1]])


def test_parquet_nulls_become_nan(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"a": [1, None, 3]}), tmp_path / "x.parquet")
    out = load_data(tmp_path / "x.parquet")
    assert out.shape == (3, 1) and np.isnan(out[1, 0]) and out[2, 0] == 3


def test_parquet_non_numeric_column_is_named(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"a": [1, 2], "name": ["x", "y"]}), tmp_path / "x.parquet")
    with pytest.raises(InvalidDataError, match=r"x\.parquet: column 'name' has type string"):
        load_data(tmp_path / "x.parquet")


# ------------------------------------------------------------------------------------------ .dat


def test_dat_baskets(tmp_path):
    write(tmp_path / "x.dat", "0 2 5\n3 3 3\n\n5  1\t0 \r\n")
    out = load_data(tmp_path / "x.dat", n_items=7)
    assert isinstance(out, scipy.sparse.csr_matrix)
    assert out.dtype == np.float64 and out.shape == (4, 7)
    expected = np.zeros((4, 7))
    expected[0, [0, 2, 5]] = 1
    expected[1, 3] = 1  # a repeated item counts once
    expected[3, [0, 1, 5]] = 1  # line 3 is an empty basket
    np.testing.assert_array_equal(out.toarray(), expected)


def test_dat_trailing_blank_lines_are_empty_baskets(tmp_path):
    out = load_data(write(tmp_path / "x.dat", "1\n\n\n"), n_items=2)
    assert out.shape == (3, 2) and out.nnz == 1


def test_dat_last_line_without_newline(tmp_path):
    assert load_data(write(tmp_path / "x.dat", "1 2\n3"), n_items=4).shape == (2, 4)


def dat_readers():
    """The .dat readers as functions path, n_items -> dense (n, d) array: in memory and the
    chunked engine's row source (read in chunks of 2 rows)."""
    def in_memory(path, n_items):
        return load_data(path, n_items=n_items).toarray()

    def chunked(path, n_items):
        source = open_source(path, n_items=n_items)
        rows = np.concatenate(list(source.chunks(2)))
        assert rows.shape == source.shape
        return rows

    return [pytest.param(in_memory, id="load_data"), pytest.param(chunked, id="open_source")]


@pytest.mark.parametrize("read", dat_readers())
def test_dat_width_does_not_depend_on_a_neighbours_rare_item(tmp_path, read):
    # Neighbours under replace-one: the second file's last basket holds one extra, rare item
    # with a large id. The width d (the length of a release) was max id + 1, so it changed with
    # that one basket. Now it is the public n_items: the same d, or the file is refused.
    base = "1 2\n2 3\n0\n"
    write(tmp_path / "a.dat", base + "1 4\n")
    write(tmp_path / "b.dat", base + "1 4 9000\n")
    first = read(tmp_path / "a.dat", 10_000)
    second = read(tmp_path / "b.dat", 10_000)
    assert first.shape == second.shape == (4, 10_000)
    assert (first != second).sum() == 1
    assert read(tmp_path / "a.dat", 5).shape == (4, 5)
    with pytest.raises(InvalidDataError, match=r"b\.dat: an item id is not below n_items=5"):
        read(tmp_path / "b.dat", 5)


@pytest.mark.parametrize("read", dat_readers())
def test_baskets_may_all_be_empty(tmp_path, read):
    # n is public, how many items the baskets hold is not: a file whose every basket is empty
    # was refused where its neighbour with one item was released (review).
    write(tmp_path / "a.dat", "\n \n\n")
    write(tmp_path / "b.dat", "\n 3\n\n")
    assert (read(tmp_path / "a.dat", 5) == 0).all()
    assert read(tmp_path / "b.dat", 5).sum() == 1


@pytest.mark.parametrize("content", ["1 2\n3 x\n4\n", "1\n3 99\n4", "1\r\n2 \xff\n4\n"])
def test_counting_baskets_reads_no_id(tmp_path, content):
    # The count an (epsilon, delta) calibration reads before the charge judges no basket: the
    # release refuses a bad one after its charge.
    (tmp_path / "x.dat").write_bytes(content.encode("latin-1"))
    source = open_source(tmp_path / "x.dat", n_items=5)
    assert source.shape == (3, 5)
    with pytest.raises(InvalidDataError):
        list(source.chunks(2))


@pytest.mark.parametrize("read", dat_readers())
@settings(max_examples=40, deadline=None)
@given(st.integers(1, 300), st.lists(st.lists(st.integers(0, 299), max_size=6), min_size=1,
                                     max_size=12).filter(lambda b: any(b)))
def test_dat_shape_is_n_by_n_items_whatever_ids_occur(tmp_path_factory, read, n_items, baskets):
    baskets = [[i for i in b if i < n_items] for b in baskets]
    if not any(baskets):
        baskets[0] = [n_items - 1]
    path = tmp_path_factory.mktemp("dat") / "x.dat"
    write(path, "\n".join(" ".join(map(str, b)) for b in baskets) + "\n")
    out = read(path, n_items)
    assert out.shape == (len(baskets), n_items)
    for row, basket in zip(out, baskets, strict=True):
        assert set(np.flatnonzero(row)) == set(basket)


@pytest.mark.parametrize("n_items", [None, 0, -3, 2.5, True, "10", 2**31])
def test_dat_needs_a_public_number_of_items(tmp_path, n_items):
    path = write(tmp_path / "x.dat", "1 2\n3\n")
    for read in (load_data, open_source):
        with pytest.raises(InvalidParameterError,
                           match="n_items" if n_items is None else "n_items must be"):
            read(path, n_items=n_items)
    with pytest.raises(InvalidParameterError, match=r"n_items=D, given with the path to "
                       r"dpmean\.mean or Session\.mean, or to its reader, "
                       r"dpmean\.engines\.open_source\(path, n_items=D\).*on the command "
                       r"line, --items D\..*d must be public"):
        load_data(path)


def test_n_items_is_refused_for_other_formats(tmp_path):
    path = write(tmp_path / "x.csv", "1,2\n")
    for read in (load_data, open_source):
        with pytest.raises(InvalidParameterError, match="only applies to .dat files"):
            read(path, n_items=3)


BAD_ITEM_IDS = {"negative": "-1", "fraction": "2.5", "word": "x", "exponent": "1e3",
                "arabic-indic-digit": "٣", "plus-sign": "+5"}


@pytest.mark.parametrize("content, pattern", [
    # Neither the token nor where it is: "line 2, item 2" told which item one person bought.
    *(pytest.param(f"1 2\n3 {token}\n", r"x\.dat: an item is not an item id",
                   id=f"bad-item-id-{kind}")
      for kind, token in BAD_ITEM_IDS.items()),
    pytest.param("1\n99999999999999999999999\n", r"x\.dat: an item id is not below n_items",
                 id="huge-item-id"),
    pytest.param("1\n" + "7" * 5000 + "\n", r"x\.dat: an item id is not below n_items",
                 id="thousands-of-digits"),
    pytest.param("1\n3 10\n", r"x\.dat: an item id is not below n_items=10",
                 id="id-equal-to-n-items"),
])
def test_bad_dat_is_refused(tmp_path, content, pattern):
    assert_refused(tmp_path / "x.dat", content, pattern)


def test_bundled_retail_is_one_based():
    # The ids in retail.dat run from 1 to 16,470, every one used; column 0 stays empty.
    x = load_data(DATA / "retail.dat", n_items=16_471)
    assert x.shape == (88162, 16471)
    assert x.nnz == 908576
    counts = x.getnnz(axis=0)
    assert counts[0] == 0 and (counts[1:] > 0).all()
    assert set(np.unique(x.data)) == {1.0}


def test_bundled_kosarak_prefix():
    x = load_data(DATA / "kosarak-first-36682.dat", n_items=17_035)
    assert x.shape == (36682, 17035)
    assert x.nnz == 294008
    assert x.getnnz(axis=0)[0] == 0


def test_experiments_read_the_bundled_baskets_with_their_public_item_counts():
    # Every id 1..items occurs, so these are the matrices PLAN's relabelling loader gives.
    from dpmean.experiments.data import BASKET_ITEMS, baskets
    x = baskets("kosarak-first-36682.dat")
    assert x.shape == (36682, BASKET_ITEMS["kosarak-first-36682.dat"]) == (36682, 17034)
    assert (x.getnnz(axis=0) > 0).all()


# ------------------------------------------------------------------------ errors for any format


def test_missing_file(tmp_path):
    with pytest.raises(InvalidDataError, match=r"nope\.csv: no such file"):
        load_data(tmp_path / "nope.csv")


def test_directory(tmp_path):
    (tmp_path / "d.npy").mkdir()
    with pytest.raises(InvalidDataError, match=r"d\.npy: is a directory"):
        load_data(tmp_path / "d.npy")
    # Without a data file's extension too (it was "unknown file type": a user trial).
    (tmp_path / "d").mkdir()
    with pytest.raises(InvalidDataError, match=r"d: is a directory"):
        load_data(tmp_path / "d")


def test_a_tab_separated_file_is_told_to_be_read_as_csv(tmp_path):
    (tmp_path / "x.tsv").write_text("a\tb\n1\t2\n")
    with pytest.raises(InvalidDataError, match=r"tab-separated file is read as \.csv"):
        load_data(tmp_path / "x.tsv")


GARBAGE = b"\x00\x01garbage, not what the name says\xff" * 10


@pytest.mark.parametrize("name, content, pattern", [
    *(pytest.param(name, "1,2\n", r"unknown file type.*\.npy, \.npz, \.csv",
                   id=f"unknown-extension-{name}")
      for name in ["x.txt", "x.json", "x", "x.npy.gz"]),
    *(pytest.param(f"x{ext}", b"", rf"x\{ext}: the file is empty", id=f"empty-file-{ext}")
      for ext in [".npy", ".npz", ".csv", ".parquet", ".dat", ".CSV"]),
    *(pytest.param(f"x{ext}", GARBAGE, rf"x\{ext}: not a valid \{ext} file",
                   id=f"garbage-bytes-{ext}", marks=[needs_pyarrow] if ext == ".parquet" else [])
      for ext in [".npy", ".npz", ".parquet"]),
])
def test_bad_file_of_any_format_is_refused(tmp_path, name, content, pattern):
    assert_refused(tmp_path / name, content, pattern)


def test_errors_are_one_line(tmp_path):
    (tmp_path / "x.npz").write_bytes(b"PK\x03\x04 broken zip")
    with pytest.raises(InvalidDataError) as info:
        load_data(tmp_path / "x.npz")
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------------------------- atomic writes


def test_write_text_atomic(tmp_path):
    target = tmp_path / "out.json"
    write_text_atomic(target, "first ünïcode\n")
    write_text_atomic(str(target), "second\n")
    assert target.read_text(encoding="utf-8") == "second\n"
    assert os.listdir(tmp_path) == ["out.json"]


def test_write_bytes_atomic(tmp_path):
    target = tmp_path / "out.png"
    write_bytes_atomic(target, b"\x89PNG data")
    assert target.read_bytes() == b"\x89PNG data"
    assert os.listdir(tmp_path) == ["out.png"]


@pytest.mark.skipif(os.name != "posix", reason="umask is POSIX")
def test_atomic_write_respects_umask(tmp_path):
    old = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "out.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "out.txt").stat().st_mode & 0o777 == 0o644


def test_failed_serialisation_leaves_nothing(tmp_path):
    target = tmp_path / "out.json"
    with pytest.raises(UnicodeEncodeError):
        write_text_atomic(target, "half" + "\ud800")  # a lone surrogate cannot be encoded
    assert os.listdir(tmp_path) == []


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "out.json"
    target.write_text("old")

    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="No space left"):
        write_bytes_atomic(target, b"new")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.json"]


def test_failed_replace_removes_the_temporary_file(tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "inside").touch()
    with pytest.raises(OSError):
        write_text_atomic(tmp_path / "taken", "text")
    assert sorted(os.listdir(tmp_path)) == ["taken"]


def test_write_into_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_text_atomic(tmp_path / "missing" / "out.json", "x")
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_atomic_replacement_keeps_the_old_files_mode(tmp_path):
    # A file its owner made private stays private when it is replaced (a ledger became
    # world-readable under umask 022: a user trial); a new file still follows the umask.
    target = tmp_path / "out.txt"
    target.write_text("old")
    target.chmod(0o640)
    old = os.umask(0o022)
    try:
        write_text_atomic(target, "new")
    finally:
        os.umask(old)
    assert target.read_text() == "new" and target.stat().st_mode & 0o777 == 0o640
    assert os.listdir(tmp_path) == ["out.txt"]


def test_a_key_into_a_scipy_sparse_archive_is_refused_before_any_charge(tmp_path):
    # Its members (data, indices, indptr) are the matrix's internals: --key indptr released
    # a column of n + 1 offsets, each moved by many rows (a review).
    import dpmean
    from dpmean.cli import main

    path = tmp_path / "baskets.npz"
    rows = (np.random.default_rng(0).random((300, 20)) < 0.1) * 1.0
    scipy.sparse.save_npz(path, scipy.sparse.csr_matrix(rows))
    session = dpmean.Session(rho=1.0)
    for key in ("indptr", "data", "indices"):
        with pytest.raises(InvalidDataError, match="internal parts"):
            session.mean(path, key=key, rho=0.5, bounds=(0, 1), method="gaussian")
    assert session.spent == 0.0
    ledger = tmp_path / "ledger.json"
    assert main(["ledger", "init", str(ledger), "--rho", "1"]) == 0
    assert main(["estimate", str(path), "--key", "indptr", "--rho", "0.5", "--bounds", "0",
                 "5000", "--method", "gaussian", "--ledger", str(ledger)]) != 0
    assert "releases: none" in _ledger_text(ledger)


def _ledger_text(path: Path) -> str:
    from contextlib import redirect_stdout

    from dpmean.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        main(["ledger", "show", str(path)])
    return out.getvalue()


@pytest.mark.parametrize("engine", ["memory", "chunked"])
def test_a_truncated_npy_is_refused_by_the_command_line_before_any_charge(tmp_path, engine):
    # The length follows from the header's shape and dtype (public); the command line
    # charged the ledger and failed in the read, where the Python API refused it for free.
    from dpmean.cli import main

    whole = tmp_path / "whole.npy"
    np.save(whole, np.random.default_rng(0).normal(size=(1000, 5)))
    cut = write(tmp_path / "cut.npy", whole.read_bytes()[:-8])
    ledger = tmp_path / "ledger.json"
    assert main(["ledger", "init", str(ledger), "--rho", "1"]) == 0
    assert main(["estimate", str(cut), "--rho", "0.5", "--bounds", "-5", "5", "--method", "cm",
                 "--engine", engine, "--ledger", str(ledger)]) != 0
    assert "releases: none" in _ledger_text(ledger)
    assert main(["estimate", str(whole), "--rho", "0.5", "--bounds", "-5", "5", "--method",
                 "cm", "--engine", engine, "--ledger", str(ledger)]) == 0


def test_a_directory_and_a_dask_data_frame_are_told_as_such(tmp_path):
    # A review: a directory given to Session.mean was "no such file", and a dask data frame
    # was refused as if one of its columns could not be converted.
    import dpmean

    with pytest.raises(InvalidDataError, match="is a directory"):
        dpmean.Session(rho=1.0).mean(str(tmp_path), rho=0.5, bounds=(0, 1), method="cm")
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    frame = dd.from_pandas(pd.DataFrame(np.zeros((20, 2))), npartitions=2)
    with pytest.raises(InvalidDataError, match="to_dask_array"):
        dpmean.mean(frame, rho=0.5, bounds=(0, 1), method="cm")


def test_a_header_ending_with_the_delimiter_is_refused_before_any_charge(tmp_path):
    # A spreadsheet's export, each line ending with a comma: the unnamed last column's empty
    # cells were refused after the ledger's charge (a review). Its name is public.
    from dpmean.cli import main

    path = write(tmp_path / "sheet.csv", "a,b,\n1,2,\n3,4,\n5,6,\n")
    ledger = tmp_path / "ledger.json"
    assert main(["ledger", "init", str(ledger), "--rho", "1"]) == 0
    assert main(["estimate", str(path), "--rho", "0.5", "--bounds", "0", "10", "--method",
                 "gaussian", "--ledger", str(ledger)]) != 0
    assert "releases: none" in _ledger_text(ledger)
    assert main(["estimate", str(path), "--rho", "0.5", "--bounds", "0", "10", "--method",
                 "gaussian", "--columns", "a,b", "--ledger", str(ledger)]) == 0
