"""Data frames, Arrow tables and CSV files in (issue 18, item 3): one adapter, columns by name,
the names carried into the result; pandas-written CSV files read with the right d."""

import numpy as np
import pytest

import dpmean
from dpmean.engines import open_source
from dpmean.errors import InvalidDataError, InvalidParameterError
from dpmean.io import load_data, open_table

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")

SECRET = "Alice-Smith-1970"
RNG = np.random.default_rng(18)
VALUES = RNG.uniform(0.0, 1.0, size=(600, 3))


def frame() -> "pd.DataFrame":
    """Three numeric columns, a text column holding a 'secret', a named string index."""
    df = pd.DataFrame(VALUES, columns=["height", "weight", "age"],
                      index=[f"row{i}" for i in range(len(VALUES))])
    df["name"] = SECRET
    return df


def release(x, **kw):
    return dpmean.mean(x, rho=1.0, method="gaussian", bounds=(0, 1), random_state=7, **kw)


@pytest.mark.parametrize("convert", [
    pytest.param(lambda df: df, id="pandas"),
    pytest.param(lambda df: pl.from_pandas(df), id="polars"),
    pytest.param(lambda df: pa.table(df), id="pyarrow"),
])
def test_frames_give_the_chosen_columns_by_name(convert):
    result = release(convert(frame()), columns=["age", "height"])
    expected = release(VALUES[:, [2, 0]])  # same seed, same data: the same release
    assert result.columns == ("age", "height") and result.d == 2 and result.n == len(VALUES)
    # Same noise; the sums may differ in summation order only: n * eps relative at most.
    np.testing.assert_allclose(result.mean, expected.mean, rtol=len(VALUES) * 2.3e-16)
    assert result.to_dict()["columns"] == ["age", "height"]
    assert expected.columns is None and expected.to_dict()["columns"] is None


def test_all_columns_by_default_and_the_pandas_index_is_not_one():
    result = release(frame().drop(columns="name"))
    assert result.columns == ("height", "weight", "age")


@pytest.mark.parametrize("columns, error, pattern", [
    (["height", "shoe size"], InvalidDataError, r"no column named 'shoe size'; it has columns "
     r"'height', 'weight', 'age', 'name'"),
    (None, InvalidDataError, r"column 'name' has type .*str.*only numeric"),
    (["name"], InvalidDataError, r"column 'name' has type"),
    (["age", "age"], InvalidParameterError, r"column 'age' is chosen twice"),
    ([], InvalidParameterError, r"non-empty list"),
])
def test_bad_column_choices_are_refused_without_showing_values(columns, error, pattern):
    with pytest.raises(error, match=pattern) as info:
        release(frame(), columns=columns)
    assert SECRET not in str(info.value)


def test_columns_apply_only_to_tables():
    with pytest.raises(InvalidParameterError, match=r"columns= chooses columns of a data frame"):
        release(VALUES, columns=["a"])


def test_null_cells_are_refused_as_nan():
    df = pl.DataFrame({"a": [0.5, None, 0.2]})
    with pytest.raises(InvalidDataError, match=r"NaN values"):
        release(df)


# ---------------------------------------------------------------------- CSV written by pandas


def test_pandas_to_csv_with_its_index_column(tmp_path):
    path = tmp_path / "x.csv"
    frame().drop(columns="name").to_csv(path)  # first header cell empty: the index
    table = open_table(path)
    assert table.names == ("height", "weight", "age")
    np.testing.assert_allclose(table.read(), VALUES, rtol=1e-15)


def test_pandas_default_names_with_index_are_a_header(tmp_path):
    path = tmp_path / "x.csv"
    pd.DataFrame(VALUES).to_csv(path)  # ",0,1,2": numbers and an empty cell
    # A headerless first row with a missing value looks the same: neither is guessed.
    with pytest.raises(InvalidDataError, match=r"mixes numbers with text or empty cells"):
        open_table(path)
    # Told it is a header, it is still refused: names that are numbers cannot be told from a
    # person's row, which header=True published as the column names (review).
    with pytest.raises(InvalidDataError, match=r"a name that reads as a number"):
        open_table(path, header=True)


def test_a_header_of_numbers_is_data_or_refused(tmp_path):
    path = tmp_path / "x.csv"
    pd.DataFrame(VALUES).to_csv(path, index=False)  # "0,1,2" then the rows
    # A line of numbers is data unless told otherwise: guessing from values would make n
    # depend on one row.
    assert load_data(path).shape == (len(VALUES) + 1, 3)
    with pytest.raises(InvalidDataError, match=r"a name that reads as a number"):
        open_table(path, header=True)
    pd.DataFrame(VALUES, columns=["a", "b", "c"]).to_csv(path, index=False)
    table = open_table(path, header=True)
    assert table.names == ("a", "b", "c") and table.read().shape == VALUES.shape


@pytest.mark.parametrize("delimiter", ["3", "a", "e", ".", "-", "+", "§"])
def test_a_delimiter_no_number_holds(tmp_path, delimiter):
    # A digit as the delimiter split the values: which rows were then refused told which
    # digits a person's value held (review). A character beyond ASCII met pyarrow's ValueError.
    path = tmp_path / "x.csv"
    path.write_text("a\n35\n")
    with pytest.raises(InvalidParameterError, match="no number holds"):
        open_table(path, delimiter=delimiter)


def test_index_col_drops_a_named_first_column(tmp_path):
    path = tmp_path / "x.csv"
    frame().drop(columns="name").rename_axis("id").to_csv(path)
    assert open_table(path).names == ("id", "height", "weight", "age")
    with pytest.raises(InvalidDataError,
                       match=r"column 1 holds a cell that is not a number \(column 'id'; "):
        load_data(path)
    assert open_table(path, index_col=True).names == ("height", "weight", "age")


def test_columns_by_name_skip_text_and_quoted_delimiters(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text('name;v;w\n"Smith; Alice";1.5;2\n"Doe, J";"3";4\n')
    table = open_table(path, columns=["w", "v"])
    assert table.delimiter == ";" and table.names == ("w", "v")
    np.testing.assert_array_equal(table.read(), [[2.0, 1.5], [4.0, 3.0]])


@pytest.mark.parametrize("text, delimiter", [("1\t2\n3\t4\n", "\t"), ("1|2\n3|4\n", "|"),
                                             ("1;2\n3;4\n", ";"), ("1\n3\n", ",")])
def test_delimiter_is_sniffed_from_the_first_line(tmp_path, text, delimiter):
    path = tmp_path / "x.csv"
    path.write_text(text)
    table = open_table(path)
    assert table.delimiter == delimiter and table.read().shape[0] == 2


def test_a_given_delimiter_wins(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("a;b,c\n1;2,3\n")
    assert open_table(path, delimiter=",").names == ("a;b", "c")


def test_a_wrong_delimiter_is_suspected_from_the_header(tmp_path):
    # A user trial: a comma file read with --delimiter ';' said only that column 'a,b' held a
    # cell that is not a number. The header (layout, public) holds the other delimiter: since
    # a later trial, refused as the file is opened, before any row is read.
    path = tmp_path / "x.csv"
    path.write_text("a,b\n1,2\n3,4\n")
    with pytest.raises(InvalidParameterError, match="whose name holds ',': is that the file's"):
        load_data(path, delimiter=";")


def test_chunked_source_reads_what_load_data_reads(tmp_path):
    path = tmp_path / "x.csv"
    frame().to_csv(path)
    source = open_source(path, columns=["weight", "age"])
    assert source.shape == (len(VALUES), 2) and source.column_names == ("weight", "age")
    np.testing.assert_array_equal(np.concatenate(list(source.chunks(64))),
                                  load_data(path, columns=["weight", "age"]))
    result = release(source)
    assert result.columns == ("weight", "age")


def test_parquet_columns_by_name(tmp_path):
    path = tmp_path / "x.parquet"
    frame().to_parquet(path)
    assert open_table(path, columns=["weight", "height"]).names == ("weight", "height")
    np.testing.assert_array_equal(load_data(path, columns=["age"]), VALUES[:, [2]])
    with pytest.raises(InvalidDataError, match=r"column 'name' has type") as info:
        load_data(path)
    assert SECRET not in str(info.value)


@pytest.mark.parametrize("index", [None, [10, 11, 12, 13, 14]])
def test_pandas_parquet_with_its_default_or_a_stored_index(tmp_path, index):
    # pandas describes a RangeIndex in the metadata (a dict, no column) and stores any other
    # index as a column: neither is data (the first crashed the reader).
    pd = pytest.importorskip("pandas")
    values = np.arange(15.0).reshape(5, 3)
    path = tmp_path / "x.parquet"
    pd.DataFrame(values, columns=["a", "b", "c"], index=index).to_parquet(path)
    assert open_table(path).names == ("a", "b", "c")
    np.testing.assert_array_equal(load_data(path), values)
    source = open_source(path)
    assert source.shape == (5, 3)


def test_csv_options_only_for_their_formats(tmp_path):
    np.save(tmp_path / "x.npy", VALUES)
    with pytest.raises(InvalidParameterError, match=r"columns .* only applies to \.csv and "):
        load_data(tmp_path / "x.npy", columns=["a"])
    (tmp_path / "x.parquet").write_bytes(b"")
    with pytest.raises(InvalidParameterError, match=r"delimiter .* only applies to \.csv"):
        load_data(tmp_path / "x.parquet", delimiter=";")


def test_bounds_by_column_name():
    """A mapping of column name to (lo, hi) is the box in the data's column order (any order
    in the mapping): the same release as the arrays; a missing name, a name that is no column
    (a typo, dropped silently before), a malformed range or data without names is refused with
    the reason."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"age": rng.integers(18, 90, 500), "income": rng.lognormal(10, 1, 500)})
    by_name = {"income": (0.0, 1e6), "age": (0.0, 120.0)}
    with pytest.raises(dpmean.InvalidParameterError, match="'incmoe', which is not a column"):
        dpmean.mean(frame, rho=1.0, bounds={**by_name, "incmoe": (0.0, 1.0)})
    named = dpmean.mean(frame, rho=1.0, bounds=by_name, random_state=4)
    arrays = dpmean.mean(frame, rho=1.0, bounds=([0.0, 0.0], [120.0, 1e6]), random_state=4)
    np.testing.assert_array_equal(named.mean, arrays.mean)
    assert named.columns == ("age", "income")
    picked = dpmean.mean(frame, rho=1.0, bounds=by_name, random_state=4, columns=["income"])
    assert picked.diagnostics["bounds_hi"].tolist() == [1e6]
    with pytest.raises(dpmean.InvalidParameterError, match="no range for column"):
        dpmean.mean(frame, rho=1.0, bounds={"age": (0, 120)})
    with pytest.raises(dpmean.InvalidParameterError, match=r"bounds\['age'\] must be a pair"):
        dpmean.mean(frame, rho=1.0, bounds={"age": 5, "income": (0, 1)})
    with pytest.raises(dpmean.InvalidParameterError, match="named columns"):
        dpmean.mean(frame.to_numpy(dtype=float), rho=1.0, bounds=by_name)
    session = dpmean.Session(rho=2.0)
    with pytest.raises(dpmean.InvalidParameterError, match="'incmoe', which is not a column"):
        session.mean(frame, rho=1.0, bounds={**by_name, "incmoe": (0.0, 1.0)})
    assert session.spent == 0.0


def test_a_path_is_read_as_a_file(tmp_path):
    # dpmean.mean(path): the file through open_source (chunked), the same release as the
    # row source itself; a table file's columns by name; a missing file said so (it was a 0-d
    # array of text, refused as "got shape ()").
    from pathlib import Path

    x = np.random.default_rng(1).normal(2.0, 1.0, size=(400, 3))
    np.save(tmp_path / "x.npy", x)
    options = {"bounds": (-5, 5), "rho": 1.0, "method": "cm", "random_state": 0}
    expected = dpmean.mean(open_source(tmp_path / "x.npy"), **options).mean
    for path in (str(tmp_path / "x.npy"), Path(tmp_path / "x.npy")):
        np.testing.assert_array_equal(dpmean.mean(path, **options).mean, expected)
    (tmp_path / "x.csv").write_text("a,b,c\n" + "\n".join(",".join(map(str, r)) for r in x))
    result = dpmean.mean(tmp_path / "x.csv", columns=["c", "a"], **options)
    assert result.columns == ("c", "a")
    reference = dpmean.mean(x[:, [2, 0]], **options).mean
    np.testing.assert_allclose(result.mean, reference, rtol=0, atol=1e-12)
    with pytest.raises(InvalidDataError, match="no such file"):
        dpmean.mean(tmp_path / "missing.npy", **options)
    with pytest.raises(InvalidParameterError, match="columns applies to .csv and .parquet"):
        dpmean.mean(tmp_path / "x.npy", columns=["a"], **options)
    # Each option with its own formats (key= was told it applies to .csv and .parquet).
    with pytest.raises(InvalidParameterError, match="key applies to .npz files"):
        open_source(tmp_path / "x.npy", key="a")


@pytest.mark.parametrize("bad", [b"3,x\n", b"3,4,5\n", b"3\n", b"3,\xff\xfe\n", b"3,nan\n"])
def test_counting_a_csv_judges_no_value(tmp_path, bad):
    # The count an (epsilon, delta) calibration reads before a charge: a failure there was
    # free and repeatable (review: a --delimiter swept over the digits read a person's age).
    path = tmp_path / "x.csv"
    path.write_bytes(b"a,b\n1,2\n" + bad + b"5,6\n")
    source = open_source(path)
    assert source.shape == (3, 2)
    with pytest.raises(InvalidDataError):
        list(source.chunks(10))


@pytest.mark.parametrize("budget", [{"epsilon": 2.0, "delta": 1e-7}, {"rho": 0.1}])
@pytest.mark.parametrize("bad", [b"3,x\n", b"3,4,5\n"])
def test_a_session_charges_a_release_that_fails_on_a_value(tmp_path, bad, budget):
    # The rows are counted before the charge (n for the plan's public checks, and for an
    # (epsilon, delta) budget's calibration), judging no value: a bad one is the release's.
    path = tmp_path / "x.csv"
    path.write_bytes(b"a,b\n" + b"0.5,0.5\n" * 1000 + bad + b"0.5,0.5\n" * 1000)
    session = dpmean.Session(epsilon=4.0, delta=1e-6)
    with pytest.raises(InvalidDataError):
        session.mean(str(path), method="plan", bounds=(0, 1), **budget)
    assert [r.status for r in session.ledger] == ["failed"]


@pytest.mark.parametrize("engine", ["memory", "chunked", "dask"])
def test_a_blank_line_in_a_file_of_one_column_is_an_empty_cell(tmp_path, engine):
    # Skipped as a blank line, it silently took its row from n (review): neighbours with and
    # without an empty cell released different n. Now it is a row, refused by the release.
    path = tmp_path / "x.csv"
    path.write_text("a\n1\n\n3\n4\n")
    assert open_source(path).shape == (4, 1)
    with pytest.raises(InvalidDataError, match="column 1 holds a cell that is not a number"):
        dpmean.mean(path, rho=1.0, method="gaussian", bounds=(0, 10), engine=engine)
    path.write_text("a,b\n1,2\n\n3,4\n")  # more columns: a blank line is layout, skipped
    assert open_source(path).shape == (2, 2)


def test_counting_survives_a_ragged_row_that_is_not_utf8(tmp_path):
    # pyarrow decodes a ragged row for its handler: bytes that are not UTF-8 failed the count
    # before the charge, where the same row in UTF-8 was charged (review).
    path = tmp_path / "x.csv"
    path.write_bytes(b"a,b\n1,2\n3,4\n5\xff\n7,8\n")
    assert open_source(path).shape == (4, 2)


@pytest.mark.parametrize("row", [b"500,x", b"500,", b"500,5\xff", b"500,501,7"])
def test_a_file_of_cr_line_ends_is_not_judged_before_the_charge(tmp_path, row):
    # The first line was read up to the first LF: in a file of CR line ends, every row, and
    # a bad one was refused before the charge, for free (review).
    rows = [b"%d,%d" % (i, i + 1) for i in range(1000)]
    rows[500] = row
    path = tmp_path / "cr.csv"
    path.write_bytes(b"a,b\r" + b"\r".join(rows) + b"\r")
    assert open_source(path).shape == (1000, 2)
    with pytest.raises(InvalidDataError):
        load_data(path)


@pytest.mark.parametrize("first", [b"\n", b"\xff\n"])
def test_a_headerless_first_row_is_the_release_s_to_judge(tmp_path, first):
    # With header=False line 1 is a person's row: an empty cell or bytes that are not UTF-8
    # were refused when the file was opened (before a charge); now by the release.
    path = tmp_path / "x.csv"
    path.write_bytes(first + b"1\n2\n")
    source = open_source(path, header=False)
    assert source.shape == (3, 1)
    with pytest.raises(InvalidDataError, match="column 1 holds a cell that is not"):
        list(source.chunks(10))


def test_a_parquet_file_without_rows_says_so_on_every_path(tmp_path, capsys):
    """A Parquet file with columns and no rows: the same message from ``load_data``,
    ``dpmean.mean`` and the CLI (a user trial: the CLI called it too few rows for the budget,
    ``load_data`` returned an array of shape (0, 1))."""
    import pandas as pd

    from dpmean.cli import main
    from dpmean.io import load_data

    path = tmp_path / "empty.parquet"
    pd.DataFrame({"a": pd.Series([], dtype=float)}).to_parquet(path)
    for attempt in (lambda: load_data(path), lambda: dpmean.mean(path, rho=1, bounds=(0, 1))):
        with pytest.raises(InvalidDataError, match="the file holds columns but no rows"):
            attempt()
    assert main(["estimate", str(path), "--rho", "1", "--bounds", "0", "1"]) == 2
    assert "the file holds columns but no rows" in capsys.readouterr().err


@pytest.mark.parametrize("word", ["True", "True ", " true", "tRuE", "FALSE\t"])
def test_a_first_line_of_boolean_words_reads_as_data_as_the_reader_reads_them(tmp_path, word):
    """A review: the header guess took "True" for a number but not "True " or "tRuE", which the
    reader reads as 1 in any other row; such a first line was refused before the charge."""
    path = tmp_path / "x.csv"
    path.write_text(f"{word},5\n1,2\n")
    np.testing.assert_array_equal(open_table(path).read(),
                                  [[float(word.strip().lower() == "true"), 5.0], [1.0, 2.0]])


def test_a_named_series_is_the_frame_of_its_column():
    # A user trial: dpmean.mean(frame.age) released without the column's name, and a range
    # given by that name was refused. The release is the one-column frame's, bit for bit.
    ages = np.random.default_rng(3).uniform(18, 90, 400)
    frame = pd.DataFrame({"age": ages})
    expected = dpmean.mean(frame, rho=1.0, bounds=(18, 90), method="gaussian", random_state=0)
    for series in (frame["age"], pl.Series("age", ages)):
        for bounds in ((18, 90), {"age": (18, 90)}):
            result = dpmean.mean(series, rho=1.0, bounds=bounds, method="gaussian",
                                 random_state=0)
            assert result.columns == ("age",)
            np.testing.assert_array_equal(result.mean, expected.mean)
            session = dpmean.Session(rho=1.0)
            assert session.mean(series, rho=1.0, bounds=bounds, method="gaussian",
                                random_state=0).columns == ("age",)
    # Unnamed, a Series is an array, as before.
    assert dpmean.mean(pd.Series(ages), rho=1.0, bounds=(18, 90), method="gaussian",
                       random_state=0).columns is None


def test_a_named_series_has_its_bounds_names_checked():
    # A review: a typo'd extra range name was refused for the frame and not for its Series.
    series = pd.Series(np.linspace(20, 80, 300), name="age")
    with pytest.raises(InvalidParameterError, match="'agee'"):
        dpmean.mean(series, rho=1.0, bounds={"age": (18, 90), "agee": (0, 1)},
                    method="gaussian", random_state=0)


@pytest.mark.parametrize("option", ["header", "index_col"])
def test_header_and_index_col_take_booleans_only(tmp_path, option):
    # A trial: header="no" read the first line as a header, as any truthy value did.
    path = tmp_path / "x.csv"
    path.write_text("a,b\n1,2\n")
    for value in ("no", "False", 0, 1):
        with pytest.raises(InvalidParameterError, match=f"{option} must be True, False or None"):
            open_table(path, **{option: value})
    assert open_table(path, **{option: True}).width in (1, 2)


@pytest.mark.parametrize("engine", ["memory", "chunked", "dask"])
def test_a_headerless_file_of_one_line_without_a_line_break_is_read(tmp_path, engine):
    # A trial: "5" alone (no final line break) was refused after the charge as "not a valid
    # CSV file" (pyarrow cannot infer the columns of such a file); "5\n" was read. Without a
    # header the columns are named from the first line, which the layout reads already.
    one, two = tmp_path / "one.csv", tmp_path / "two.csv"
    one.write_bytes(b"5")
    two.write_bytes(b"5,6")
    for path, width in ((one, 1), (two, 2)):
        result = dpmean.mean(str(path), header=False, rho=1.0, bounds=(0, 10),
                             method="gaussian", engine=engine, random_state=1)
        assert result.n == 1 and result.mean.shape == (width,)


def test_a_series_named_by_a_number_takes_ranges_by_that_name():
    # A trial: frame[0] of a frame with integer column names is a Series named 0, and
    # bounds={0: ...} was told it needs named columns, where the frame itself took them.
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(np.random.default_rng(0).uniform(0, 2, (50, 2)))
    result = dpmean.mean(frame[0], rho=1.0, bounds={0: (0, 2)}, method="gaussian",
                         random_state=3)
    whole = dpmean.mean(frame[[0]], rho=1.0, bounds={0: (0, 2)}, method="gaussian",
                        random_state=3)
    assert result.columns == whole.columns == ("0",)
    np.testing.assert_array_equal(result.mean, whole.mean)


def test_a_groupby_is_refused_with_what_to_do():
    # numpy read a pandas GroupBy as rows of different lengths and a polars one as a 0-d
    # object (a user trial).
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"g": [0, 1, 0, 1] * 50, "a": np.linspace(0.0, 1.0, 200)})
    session = dpmean.Session(rho=2.0)
    for grouped in (frame.groupby("g"), frame.groupby("g")["a"]):
        with pytest.raises(InvalidDataError, match="a GroupBy is not data"):
            session.mean(grouped, rho=1.0, bounds=(0, 1))
    assert session.spent == 0.0


def test_a_mapping_of_columns_is_refused_before_anything_is_read():
    # Read as a table (5df3507), its columns' types were guessed from their values: one row's
    # text in a category or object column was quoted in pyarrow's error after a session's
    # charge, one 2**64 refused it, a column left out by columns= was converted (a review).
    # The caller makes the frame whose types it declares.
    pd = pytest.importorskip("pandas")
    rows = list(np.linspace(0.0, 1.0, 200))
    for columns in ({"a": rows}, {"a": pd.Series(rows[:-1] + ["secret"], dtype="category")},
                    {"a": np.array(rows), "t": ["0.5"] * 199 + ["x"]}):
        session = dpmean.Session(rho=1.0)
        with pytest.raises(InvalidDataError, match="mapping of columns is not read") as refused:
            session.mean(columns, rho=0.5, bounds=(0, 1), columns=["a"])
        assert "secret" not in str(refused.value) and session.spent == 0.0
    result = dpmean.mean(pd.DataFrame({"a": rows}), rho=0.5, bounds=(0, 1), random_state=0)
    assert result.columns == ("a",)
