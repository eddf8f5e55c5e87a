"""Embedding columns: a fixed-size list column (pyarrow ``fixed_size_list``, polars ``Array``,
the usual way vectors are stored in Parquet) is read as one column of the data per element,
named ``name[i]``; a range given for the list column serves each element. Its length comes from
the type (public); a list whose length is the row's is refused before any charge."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpmean
from dpmean import ledger_file
from dpmean.cli import main
from dpmean.errors import InvalidDataError
from dpmean.io import load_data
from dpmean.session import Session

K = 6
BOUNDS = {"weight": (0, 5), "emb": (-1, 1)}


def embeddings(n: int = 3000) -> tuple[pa.Table, np.ndarray]:
    rng = np.random.default_rng(4)
    values = rng.normal(0, 0.3, (n, K)).astype(np.float32)
    weight = rng.uniform(0, 5, n)
    table = pa.table({"weight": weight,
                      "emb": pa.FixedSizeListArray.from_arrays(pa.array(values.ravel()), K)})
    return table, np.column_stack([weight, values.astype(np.float64)])


@pytest.fixture
def parquet(tmp_path):
    table, x = embeddings()
    path = tmp_path / "emb.parquet"
    pq.write_table(table, path, row_group_size=700)  # row groups: the Dask engine's blocks
    return path, x


def as_arrays(names):
    lo = np.array([BOUNDS["emb" if name.startswith("emb[") else name][0] for name in names])
    hi = np.array([BOUNDS["emb" if name.startswith("emb[") else name][1] for name in names])
    return lo, hi


def test_a_list_column_reads_as_one_column_per_element(parquet):
    path, x = parquet
    np.testing.assert_array_equal(load_data(path), x)
    names = ("weight", *(f"emb[{i}]" for i in range(K)))
    want = dpmean.mean(x, rho=1, bounds=as_arrays(names), method="cm", random_state=2)
    for engine in ("memory", "chunked"):
        got = dpmean.mean(str(path), rho=1, bounds=BOUNDS, method="cm", random_state=2,
                          engine=engine)
        assert got.columns == names and got.d == K + 1
        np.testing.assert_array_equal(got.mean, want.mean)
    only = dpmean.mean(str(path), rho=1, bounds=BOUNDS, columns=["emb"], method="cm",
                       random_state=2)
    assert only.columns == names[1:]


def test_the_dask_engine_reads_list_columns_alike(parquet, dask_client):
    path, x = parquet
    want = dpmean.mean(str(path), rho=1, bounds=BOUNDS, method="cm", random_state=2)
    got = dpmean.mean(str(path), rho=1, bounds=BOUNDS, method="cm", random_state=2,
                      engine="dask")
    assert got.columns == want.columns
    np.testing.assert_array_equal(got.mean, want.mean)


def test_arrow_and_polars_frames_read_list_columns_alike(parquet):
    path, x = parquet
    table = pq.read_table(path)
    want = dpmean.mean(str(path), rho=1, bounds=BOUNDS, method="cm", random_state=2)
    frames = [table]
    polars = pytest.importorskip("polars")
    frames.append(polars.from_arrow(table))  # an Array column
    for frame in frames:
        got = dpmean.mean(frame, rho=1, bounds=BOUNDS, method="cm", random_state=2)
        assert got.columns == want.columns
        np.testing.assert_array_equal(got.mean, want.mean)


def test_a_missing_range_names_the_list_column(parquet):
    path, _ = parquet
    with pytest.raises(dpmean.errors.InvalidParameterError) as info:
        dpmean.mean(str(path), rho=1, bounds={"weight": (0, 5)}, method="cm")
    assert "'emb'" in str(info.value) and "emb[0]" not in str(info.value)
    with pytest.raises(dpmean.errors.InvalidParameterError) as info:
        dpmean.mean(str(path), rho=1, bounds={"emb": (-1, 1), "wieght": (0, 5)}, method="cm")
    assert "'weight'" in str(info.value) and "'wieght'" in str(info.value)
    assert "'emb' is not" not in str(info.value)


def test_the_cli_takes_a_range_for_the_list_column(parquet, tmp_path, capsys):
    path, _ = parquet
    out = tmp_path / "out.json"
    code = main(["estimate", str(path), "--rho", "1", "--range", "weight=0:5", "--range",
                 "emb=-1:1", "--method", "cm", "--seed", "1", "--output", str(out)])
    assert code == 0, capsys.readouterr().err
    written = json.loads(out.read_text())
    assert written["columns"][:2] == ["weight", "emb[0]"] and len(written["mean"]) == K + 1
    code = main(["estimate", str(path), "--rho", "1", "--range", "weight=0:5",
                 "--method", "cm"])
    err = capsys.readouterr().err
    assert code == 2 and "no range for 'emb'" in err


@pytest.mark.parametrize("column, words", [
    (pa.array([[0.1, 0.2], [0.3]], type=pa.list_(pa.float64())), "fixes the length"),
    (pa.array([["a", "b"], ["c", "d"]], type=pa.list_(pa.string(), 2)), "fixes the length"),
    (pa.array([None, None], type=pa.null()), "only empty cells"),
])
def test_a_list_of_unfixed_length_or_of_text_is_refused_before_the_charge(tmp_path, capsys,
                                                                         column, words):
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"x": [0.5, 0.25], "v": column}), path)
    assert_refused_free_of_charge(path, tmp_path, capsys, "column 'v'", words)


def assert_refused_free_of_charge(path, tmp_path, capsys, *words):
    """``path`` refused by the library and by the CLI, in ``words``, with nothing charged to
    the CLI's ledger."""
    with pytest.raises(InvalidDataError) as info:
        dpmean.mean(str(path), rho=1, bounds=(0, 1), method="cm")
    assert all(word in str(info.value) for word in words)
    ledger = tmp_path / "L.json"
    ledger_file.create(ledger, Session(rho=1))
    code = main(["estimate", str(path), "--rho", "0.5", "--bounds", "0", "1", "--method",
                 "cm", "--ledger", str(ledger)])
    err = capsys.readouterr().err
    assert code == 2 and all(word in err for word in words)
    assert ledger_file.read(ledger).ledger == []


def test_an_empty_list_or_element_is_refused_naming_the_column(tmp_path):
    full = [[0.1, 0.2]] * 500  # enough rows for a release to read them
    for rows, what in ((full + [None], "empty cell"), (full + [[0.1, float("nan")]], "NaN")):
        path = tmp_path / "holes.parquet"
        pq.write_table(pa.table({"v": pa.array(rows, type=pa.list_(pa.float64(), 2))}), path)
        for engine in ("memory", "chunked"):
            with pytest.raises(InvalidDataError) as info:
                dpmean.mean(str(path), rho=1, bounds=(0, 1), method="cm", engine=engine)
            assert "column 'v'" in str(info.value) and what in str(info.value)
            assert "0.1" not in str(info.value)


def test_an_element_name_that_is_another_column_is_refused(tmp_path):
    path = tmp_path / "clash.parquet"
    pq.write_table(pa.table({"v": pa.array([[0.1, 0.2]], type=pa.list_(pa.float64(), 2)),
                             "v[1]": [0.5]}), path)
    with pytest.raises(InvalidDataError) as info:
        dpmean.mean(str(path), rho=1, bounds=(0, 1), method="cm")
    assert "'v[1]'" in str(info.value) and "rename one" in str(info.value)


def test_lists_of_no_elements_are_refused_from_the_schema(tmp_path, capsys):
    """A review: fixed_size_list<double>[0] passed the schema check and failed in pyarrow's
    reader after the charge."""
    path = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"x": [0.5] * 300,
                             "v": pa.array([[]] * 300, type=pa.list_(pa.float64(), 0))}), path)
    assert_refused_free_of_charge(path, tmp_path, capsys, "column 'v'", "no elements")


def test_only_a_list_columns_elements_take_its_range(tmp_path):
    """A review: ranges were matched by text, so a plain column named "a[0]" took the range of
    column "a". Only the elements of a list column (validation.ElementName) do."""
    path = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"a": [0.5] * 400, "a[0]": [0.25] * 400}), path)
    with pytest.raises(dpmean.errors.InvalidParameterError, match=r"no range for .*'a\[0\]'"):
        dpmean.mean(str(path), rho=1, bounds={"a": (0, 1)}, method="cm")
    result = dpmean.mean(str(path), rho=1, bounds={"a": (0, 1), "a[0]": (0, 1)}, method="cm",
                         random_state=0)
    assert result.columns == ("a", "a[0]")


def test_a_bad_range_is_told_by_its_column_in_python_too(parquet):
    path, _ = parquet
    with pytest.raises(dpmean.errors.InvalidParameterError, match="column 'weight' has lo=5"):
        dpmean.mean(str(path), rho=1, bounds={"weight": (5, 0), "emb": (-1, 1)}, method="cm")
    with pytest.raises(dpmean.errors.InvalidParameterError,
                       match=r"hi must be finite \(column 'emb\[0\]' has hi=inf\)"):
        dpmean.mean(str(path), rho=1, bounds={"weight": (0, 5), "emb": (-1, np.inf)},
                    method="cm")


def test_a_typo_is_told_from_a_column_left_out(parquet, capsys):
    """A trial: a mistyped range name beside a missing range was called "not one of the chosen
    columns (--columns)", though it is no column of the file at all."""
    path, _ = parquet
    code = main(["estimate", str(path), "--rho", "1", "--range", "embb=-1:1", "--range",
                 "weight=0:5", "--columns", "emb,weight"])
    err = capsys.readouterr().err
    assert code == 2 and f"'embb', not one of the columns of {path}" in err
    code = main(["estimate", str(path), "--rho", "1", "--range", "weight=0:5",
                 "--columns", "emb"])
    err = capsys.readouterr().err
    assert code == 2 and "'weight', not one of the chosen columns (--columns)" in err


def test_an_embeddings_nan_is_told_by_its_list_column_from_a_frame_too():
    table = pa.table({"emb": pa.array([[0.1, 0.2]] * 300 + [[0.1, float("nan")]],
                                      type=pa.list_(pa.float64(), 2))})
    with pytest.raises(InvalidDataError, match=r"column 'emb' \(element 1\) holds NaN"):
        dpmean.mean(table, rho=1, bounds=(0, 1), method="cm")
