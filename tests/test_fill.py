"""Public fill values for missing cells of CSV and Parquet files (``fill=``, ``--fill``): each
missing cell of a named column takes its column's value, row by row, on every engine, so a file
with a blank is released exactly as the same file with the value written in its place."""

from __future__ import annotations

import json

import numpy as np
import pytest

import dpmean
from dpmean.cli import main
from dpmean.engines import open_source
from dpmean.errors import InvalidDataError, InvalidParameterError
from dpmean.io import load_data, open_table

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

RNG = np.random.default_rng(31)
N = 900
AGE = RNG.integers(18, 90, N).astype(float)
INCOME = np.round(RNG.lognormal(10.0, 1.0, N), 2)
FLAG = (RNG.uniform(size=N) < 0.3).astype(float)
# Which rows miss which cell: the age unquoted-empty, the income quoted-empty (or NaN in
# Parquet), the flag (a column of True/False words) empty.
NO_AGE, NO_INCOME, NO_FLAG = np.arange(N) % 50 == 3, np.arange(N) % 70 == 5, np.arange(N) % 90 == 7
FILL = {"age": 50.0, "income": 30000.0, "flag": 0.0}
RANGES = {"age": (0.0, 120.0), "income": (0.0, 1e6), "flag": (0.0, 1.0)}


def filled() -> np.ndarray:
    """The rows as a reader with ``FILL`` gives them."""
    x = np.column_stack([AGE, INCOME, FLAG])
    for j, (missing, value) in enumerate(zip((NO_AGE, NO_INCOME, NO_FLAG), FILL.values(),
                                             strict=True)):
        x[missing, j] = value
    return x


def csv_text(written: bool = False) -> str:
    """The table as CSV with blank cells, or (``written``) with the fill values written in."""
    lines = ["age,income,flag,name"]
    for i in range(N):
        age = "50" if NO_AGE[i] and written else "" if NO_AGE[i] else f"{AGE[i]:.0f}"
        income = ("30000" if written else '""') if NO_INCOME[i] else f"{INCOME[i]:.2f}"
        flag = "False" if NO_FLAG[i] and written else "" if NO_FLAG[i] else str(bool(FLAG[i]))
        lines.append(f"{age},{income},{flag},person{i}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fill")
    (folder / "blanks.csv").write_text(csv_text())
    (folder / "written.csv").write_text(csv_text(written=True))
    table = pa.table({
        "age": pa.array([None if m else v for m, v in zip(NO_AGE, AGE, strict=True)]),
        "income": pa.array(np.where(NO_INCOME, np.nan, INCOME)),
        "flag": pa.array([None if m else bool(v) for m, v in zip(NO_FLAG, FLAG, strict=True)]),
        "emb": pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(2 * N)), 2),
    })
    pq.write_table(table, folder / "blanks.parquet", row_group_size=200)
    return folder


@pytest.mark.parametrize("name", ["blanks.csv", "blanks.parquet"])
def test_every_reader_fills_the_missing_cells_alone(files, name):
    path = files / name
    columns = ["age", "income", "flag"]
    expected = filled()
    np.testing.assert_array_equal(load_data(path, columns=columns, fill=FILL), expected)
    table = open_table(path, columns=columns, fill=FILL)
    np.testing.assert_array_equal(np.concatenate(list(table.batches())), expected)
    np.testing.assert_array_equal(open_source(path, columns=columns, fill=FILL).read_all(),
                                  expected)


@pytest.mark.parametrize("name", ["blanks.csv", "blanks.parquet"])
def test_a_column_without_a_fill_is_still_refused_and_told_how(files, name):
    # ``read`` gives an unfilled column's missing cells as NaN, which the estimators refuse.
    read = load_data(files / name, columns=["age", "income"], fill={"age": 50})
    np.testing.assert_array_equal(np.isnan(read), np.column_stack([NO_AGE & False, NO_INCOME]))
    with pytest.raises(InvalidDataError, match="'income'.*--fill NAME=VALUE"):
        open_table(files / name, columns=["age", "income"], fill={"age": 50}).table()
    with pytest.raises(InvalidDataError, match="--fill NAME=VALUE"):
        next(iter(open_table(files / name, columns=["age"]).batches()))


def release_json(capsys, path, *flags, engine="memory"):
    ranges = [arg for name, (lo, hi) in RANGES.items() for arg in ("--range", f"{name}={lo}:{hi}")]
    code = main(["estimate", str(path), "--columns", "age,income,flag", "--rho", "0.5",
                 "--seed", "4", "--engine", engine, "--json", *ranges, *flags])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out), err


def fill_flags(engine: str) -> list[str]:
    """The --fill flags of ``FILL``; skips a Dask engine where dask is not installed."""
    if engine == "dask":
        pytest.importorskip("dask")
    return [arg for name, value in FILL.items() for arg in ("--fill", f"{name}={value:g}")]


@pytest.mark.parametrize("engine", ["memory", "chunked", "dask"])
def test_a_blank_filled_is_released_as_the_value_written(capsys, files, engine):
    # The neighbouring-file view of a fill: a row's filled cell is that row's alone, so the
    # file with blanks and the file with the values written in give one release, bit for bit,
    # and no output says how many cells were filled.
    fills = fill_flags(engine)
    got, got_err = release_json(capsys, files / "blanks.csv", *fills, engine=engine)
    written, written_err = release_json(capsys, files / "written.csv", engine=engine)
    assert got == written
    assert got_err == written_err.replace("written.csv", "blanks.csv")
    assert got["n"] == N
    library = dpmean.mean(filled(), rho=0.5, random_state=4,
                          bounds=([lo for lo, _ in RANGES.values()],
                                  [hi for _, hi in RANGES.values()]))
    np.testing.assert_allclose(got["mean"], library.mean, rtol=1e-12)


@pytest.mark.parametrize("engine", ["memory", "chunked", "dask"])
def test_parquet_fill_on_every_engine(capsys, files, engine):
    fills = fill_flags(engine)
    got, _ = release_json(capsys, files / "blanks.parquet", *fills, engine=engine)
    memory, _ = release_json(capsys, files / "blanks.parquet", *fills)
    assert got["mean"] == memory["mean"]


@pytest.mark.parametrize("fill, message", [
    ({"agee": 1.0}, "fill names 'agee', not one of the file's columns"),
    ({"age": float("nan")}, "finite number"),
    ({"age": float("inf")}, "finite number"),
    ({"age": True}, "finite number"),
    ({"age": "50"}, "finite number"),
    ([("age", 50.0)], "must be a mapping"),
])
@pytest.mark.parametrize("name", ["blanks.csv", "blanks.parquet"])
def test_a_bad_fill_is_refused_before_any_row_is_read(files, fill, message, name):
    with pytest.raises(InvalidParameterError, match=message):
        open_table(files / name, columns=["age", "income"], fill=fill)


@pytest.mark.parametrize("name, other", [("blanks.csv", "name"), ("blanks.parquet", "flag")])
def test_a_fill_for_a_column_left_out_is_allowed_and_unused(files, name, other):
    # As a range for such a column is: a fill kept for a table was refused once columns=
    # left its column out (a user trial).
    table = open_table(files / name, columns=["age", "income"], fill={other: 1.0, "age": 2.0})
    assert table.fill == {"age": 2.0}


def test_fill_needs_a_named_column_of_numbers(files, tmp_path):
    with pytest.raises(InvalidParameterError, match="not to the list column 'emb'"):
        open_table(files / "blanks.parquet", fill={"emb": 0.0})
    headerless = tmp_path / "headerless.csv"
    headerless.write_text("1,2\n3,4\n")
    with pytest.raises(InvalidParameterError, match="without a header"):
        open_table(headerless, fill={"f0": 0.0})
    array = tmp_path / "x.npy"
    np.save(array, np.zeros((3, 2)))
    with pytest.raises(InvalidParameterError, match="fill .* only applies to .csv and .parquet"):
        load_data(array, fill={"a": 0.0})
    with pytest.raises(InvalidParameterError, match="fill applies to .csv and .parquet"):
        dpmean.mean(str(array), rho=1.0, bounds=(0, 1), fill={"a": 0.0})


@pytest.mark.parametrize("flags, message", [
    (["--fill", "age"], "expected NAME=VALUE"),
    (["--fill", "age=old"], "expected NAME=VALUE"),
    (["--fill", "=5"], "expected NAME=VALUE"),
    (["--fill", "age=1", "--fill", "age=2"], "names column 'age' twice"),
    (["--fill", "age=nan"], "finite number"),
])
def test_cli_refuses_a_malformed_fill_without_a_charge(capsys, files, tmp_path, flags, message):
    ledger = tmp_path / "ledger.json"
    assert main(["ledger", "init", str(ledger), "--rho", "1"]) == 0
    capsys.readouterr()
    code = main(["estimate", str(files / "blanks.csv"), "--columns", "age,income", "--rho",
                 "0.5", "--ledger", str(ledger), *flags])
    err = capsys.readouterr().err
    assert code != 0 and message in err
    assert main(["ledger", "show", str(ledger), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["releases"] == []


def test_fill_on_a_npy_input_is_a_usage_error(capsys, tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, np.zeros((10, 2)))
    assert main(["estimate", str(path), "--rho", "1", "--fill", "a=1"]) != 0
    assert "--fill applies to .csv and .parquet files" in capsys.readouterr().err


def test_the_missing_words_of_other_writers_are_filled_and_spaces_are_told(tmp_path):
    # R, spreadsheets and pandas write NA, N/A, NULL, None, #N/A or <NA> for a missing value:
    # with a fill they are missing, as an empty cell is (a user trial: NA cells were refused
    # with --fill given, and told to use --fill). A cell of spaces is text, said so.
    path = tmp_path / "words.csv"
    words = ["NA", "N/A", "n/a", "NULL", "null", "None", "#N/A", "<NA>", '""', ""]
    path.write_text("a,b\n" + "".join(f"{i},{word}\n" for i, word in enumerate(words)) + "9,2\n")
    got = load_data(path, fill={"b": 5.0})
    np.testing.assert_array_equal(got[:, 1], [5.0] * len(words) + [2.0])
    spaces = tmp_path / "spaces.csv"
    spaces.write_text("a,b\n1, \n2,3\n")
    with pytest.raises(InvalidDataError, match="its fill takes empty cells, NaN and NA"):
        load_data(spaces, fill={"b": 5.0})


def test_cli_says_when_a_fill_lies_outside_its_range(capsys, files):
    # A sentinel (-1 for a missing age in 0:120) is clamped to the range's end like any value
    # beyond it: said before anything is read (public values), and nothing said otherwise.
    fills = ["--fill", "age=-1", "--fill", "income=30000", "--fill", "flag=0"]
    _, err = release_json(capsys, files / "blanks.csv", *fills)
    assert "--fill age=-1 lies outside the column's range 0:120" in err
    assert "income" not in err.split("lies outside")[0].split("\n")[-1]
    _, err = release_json(capsys, files / "blanks.csv", *fill_flags("memory"))
    assert "lies outside" not in err


@pytest.mark.parametrize("name", ["blanks.csv", "blanks.parquet"])
def test_a_path_takes_its_readers_options_in_python(files, name):
    # dpmean.mean(path, fill=...) and Session.mean as the command's --fill: the same release
    # as the reader's rows (the message of a blank cell names fill=, which was refused as an
    # estimator's unknown option).
    # A range for a column left out is allowed, and unused.
    ranges = dict(RANGES, **{"name" if name.endswith(".csv") else "emb": (0.0, 1.0)})
    lo, hi = np.array(list(RANGES.values())).T
    expected = dpmean.mean(filled(), rho=0.5, bounds=(lo, hi), method="gaussian",
                           random_state=4).mean
    options = {"rho": 0.5, "bounds": ranges, "method": "gaussian", "random_state": 4,
               "columns": list(FILL), "fill": FILL}
    result = dpmean.mean(str(files / name), **options)
    np.testing.assert_array_equal(result.mean, expected)
    assert result.columns == tuple(FILL)
    session = dpmean.Session(rho=1.0)
    np.testing.assert_array_equal(session.mean(files / name, **options).mean, expected)
    assert session.spent == pytest.approx(0.5)
    # A reader's option with data that is not a path names where it goes.
    with pytest.raises(InvalidParameterError, match=r"fill: a file reader's option, taken "
                                                    r"with the file's path"):
        dpmean.mean(filled(), rho=0.5, bounds=(0, 1), method="gaussian", fill=FILL)
    # ... and one the format does not take is refused before a row is read, uncharged.
    with pytest.raises(InvalidParameterError, match="n_items"):
        session.mean(files / name, **dict(options, random_state=5), n_items=3)
    assert session.spent == pytest.approx(0.5)
