"""``dpmean estimate`` on real tables and baskets (issue 18, items 3-5): pandas-written CSV files
with named outputs, baskets with the default method, one clear line for each new bad input,
and a progress bar only where it belongs."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

import dpmean
from dpmean.cli import main
from dpmean.engines import open_source
from dpmean.progress import shown_passes
from dpmean.registry import DEFAULT_METHOD

pd = pytest.importorskip("pandas")

RNG = np.random.default_rng(5)
VALUES = RNG.uniform(0.0, 1.0, size=(2000, 3))
GOOD = ["--rho", "1", "--bounds", "0", "1", "--seed", "3"]


@pytest.fixture
def folder(tmp_path):
    df = pd.DataFrame(VALUES, columns=["x", "y", "z"])
    df["label"] = "secret-label"
    df.to_csv(tmp_path / "frame.csv")  # index column, empty first header cell
    pd.DataFrame(VALUES).to_csv(tmp_path / "numbers.csv", index=False)  # header "0,1,2"
    pd.DataFrame(index=range(5)).to_csv(tmp_path / "index-only.csv")
    baskets = ["0 3 4", "1", "", "2 3", "4 0"] * 200
    (tmp_path / "b.dat").write_text("\n".join(baskets) + "\n")
    return tmp_path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_pandas_csv_gives_the_right_d_and_named_json(capsys, folder):
    code, out, err = run(capsys, "estimate", folder / "frame.csv", *GOOD, "--columns", "z,x",
                         "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["d"] == 2 and payload["n"] == len(VALUES)
    assert payload["columns"] == ["z", "x"]
    assert "columns (first 2 of 2): z, x" in err


@pytest.mark.parametrize("engine", ["memory", "chunked"])
def test_every_engine_reads_the_same_columns(capsys, folder, engine):
    code, out, _ = run(capsys, "estimate", folder / "frame.csv", *GOOD, "--columns", "x,y,z",
                       "--engine", engine, "--json", "--method", "gaussian")
    assert code == 0
    payload = json.loads(out)
    expected = dpmean.mean(VALUES, rho=1, bounds=(0, 1), random_state=3, method="gaussian")
    assert payload["columns"] == ["x", "y", "z"]
    # The CSV holds the values to 17 significant digits; the sums differ in order only.
    np.testing.assert_allclose(payload["mean"], expected.mean, rtol=1e-12)


@pytest.mark.parametrize("engine", ["memory", "chunked"])
def test_named_bounds_file_is_matched_by_name(capsys, folder, engine):
    """A bounds CSV whose header names the columns in another order gives each column its own
    range (it was read by position: x clamped to z's range); columns the data does not use are
    ignored, a missing one is an error, and a bounds file without names stays positional."""
    scaled = pd.DataFrame({"small": VALUES[:, 0], "large": 1000.0 * VALUES[:, 1]})
    scaled.to_csv(folder / "scaled.csv", index=False)
    (folder / "named.csv").write_text("large,unused,small\n0,0,0\n1000,1,1\n")
    (folder / "positional.csv").write_text("0,0\n1,1000\n")
    (folder / "short.csv").write_text("large\n0\n1000\n")
    expected = dpmean.mean(scaled.to_numpy(), rho=1, bounds=([0, 0], [1, 1000]),
                           random_state=3, method="gaussian")
    for bounds in ("named.csv", "positional.csv"):
        code, out, _ = run(capsys, "estimate", folder / "scaled.csv", "--rho", "1", "--seed",
                           "3", "--bounds-file", folder / bounds, "--method", "gaussian",
                           "--engine", engine, "--json")
        payload = json.loads(out)
        assert code == 0 and payload["diagnostics"]["bounds_hi"] == [1.0, 1000.0], bounds
        np.testing.assert_allclose(payload["mean"], expected.mean, rtol=1e-12)
    code, out, err = run(capsys, "estimate", folder / "scaled.csv", "--rho", "1",
                         "--bounds-file", folder / "short.csv", "--engine", engine)
    assert code == 2 and out == "" and "no range for 'small'" in err


def test_a_bounds_file_of_one_line_per_column_says_what_a_bounds_file_is(capsys, folder):
    """A bounds CSV written one line per column (name,lo,hi), a user's natural first guess, is
    refused with the layout a bounds file has, not only the data reader's complaint about a
    text cell (whose advice, to fix the cell, is for data files); so is a single line."""
    pd.DataFrame(VALUES[:, :2], columns=["x", "y"]).to_csv(folder / "two.csv", index=False)
    (folder / "long.csv").write_text("column,lo,hi\nx,0,1\ny,0,1\n")
    (folder / "one-line.csv").write_text("0,1\n")
    for bounds in ("long.csv", "one-line.csv"):
        code, out, err = run(capsys, "estimate", folder / "two.csv", "--rho", "1",
                             "--bounds-file", folder / bounds)
        assert code == 2 and out == "", bounds
        assert "a header of column names and two lines" in err and "--range" in err, err


def test_a_headerless_bounds_file_is_counted_against_the_selected_columns(capsys, folder):
    """With --columns, a headerless bounds file must give one range per selected column, and
    the message says so (a user trial: it said the file had as many columns as were
    selected)."""
    pd.DataFrame(VALUES[:, :3], columns=["x", "y", "z"]).to_csv(folder / "three.csv",
                                                                index=False)
    np.savetxt(folder / "bounds3.csv", [[0, 0, 0], [1, 1, 1]], delimiter=",")
    code, out, err = run(capsys, "estimate", folder / "three.csv", "--rho", "1", "--columns",
                         "x,y", "--bounds-file", folder / "bounds3.csv")
    assert code == 2 and out == ""
    assert "gives 3 columns' ranges but --columns selects 2 columns" in err, err
    np.savetxt(folder / "bounds2.csv", [[0, 0], [1, 1]], delimiter=",")
    code, out, _ = run(capsys, "estimate", folder / "three.csv", "--rho", "1", "--columns",
                       "x,y", "--bounds-file", folder / "bounds2.csv", "--json", "--seed", "1")
    assert code == 0 and json.loads(out)["columns"] == ["x", "y"]


def test_ranges_by_name_skip_a_parquet_text_column_left_out(capsys, folder):
    """A Parquet table with a text column: ranges by name for the columns --columns (columns=)
    chooses are matched, as on the same table as a CSV file (a user trial: the name check
    opened every column and refused the text one)."""
    frame = pd.DataFrame({"height": 100 + 100 * VALUES[:, 0], "city": ["a"] * len(VALUES)})
    frame.to_parquet(folder / "people.parquet")
    frame.to_csv(folder / "people.csv", index=False)
    means = []
    for name in ("people.parquet", "people.csv"):
        code, out, err = run(capsys, "estimate", folder / name, "--rho", "1", "--columns",
                             "height", "--range", "height=100:220", "--seed", "1", "--json")
        assert code == 0, err
        means.append(json.loads(out)["mean"])
        result = dpmean.mean(str(folder / name), rho=1, bounds={"height": (100, 220)},
                             columns=["height"], random_state=1)
        assert result.mean.tolist() == means[-1]
    assert means[0] == means[1]
    # A typo is still refused, and so is the text column when it is chosen.
    code, _, err = run(capsys, "estimate", folder / "people.parquet", "--rho", "1", "--columns",
                       "height", "--range", "heigth=100:220")
    assert code == 2 and "'heigth'" in err
    code, _, err = run(capsys, "estimate", folder / "people.parquet", "--rho", "1", "--range",
                       "height=100:220")
    assert code == 2 and "column 'city' has type" in err


def test_ranges_by_name_on_the_command_line(capsys, folder):
    """--range NAME=LO:HI per column, in any order, matched to the header like a named bounds
    file; a missing column, a malformed range, a repeated name or an INPUT without names is
    one error line."""
    scaled = pd.DataFrame({"small": VALUES[:, 0], "large": 1000.0 * VALUES[:, 1]})
    scaled.to_csv(folder / "scaled.csv", index=False)
    base = ["estimate", folder / "scaled.csv", "--rho", "1", "--seed", "3", "--method",
            "gaussian"]
    code, out, _ = run(capsys, *base, "--range", "large=0:1000", "--range", "small=-0:1",
                       "--json")
    assert code == 0 and json.loads(out)["diagnostics"]["bounds_hi"] == [1.0, 1000.0]
    np.save(folder / "scaled.npy", scaled.to_numpy())
    for argv, message in [
        ((*base, "--range", "large=0:1000"), "no range for 'small'"),
        ((*base, "--range", "large0:1000"), "expected NAME=LO:HI"),
        ((*base, "--range", "large=0:1", "--range", "large=0:2"), "more than once: 'large'"),
        (("estimate", folder / "scaled.npy", "--rho", "1", "--range", "a=0:1"), "has none. Use"),
        # pandas' default names 0, 1 make a first line of numbers: a row, said why (a trial).
        (("estimate", folder / "numbers.csv", "--rho", "1", "--range", "0=0:1"),
         "has none; its first line is all numbers, so it is read as a row (a header of numbers, "
         "such as pandas' 0,1,2, cannot be told from a person's values: give the columns names "
         "with letters). Use --bounds-file"),
    ]:
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == "" and message in err, (argv, err)


def test_a_header_of_numbers_is_refused_even_with_header_flag(capsys, folder):
    # Names are published: with --header, a headerless file's first row (a person's values)
    # became the release's column names (review).
    code, out, err = run(capsys, "estimate", folder / "numbers.csv", *GOOD, "--header", "--json")
    assert code != 0 and out == "" and "a name that reads as a number" in err


def test_baskets_run_with_the_default_method(capsys, folder):
    code, out, _ = run(capsys, "estimate", folder / "b.dat", "--rho", 1, "--items", 5,
                       "--seed", 1, "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["method"] == DEFAULT_METHOD and payload["d"] == 5 and payload["n"] == 1000


@pytest.mark.parametrize("argv, message", [
    (["frame.csv", "--columns", "x,nope"], "frame.csv has no column named 'nope'"),
    (["frame.csv"], "column 5 holds a cell that is not a number (column 'label'; "),
    (["index-only.csv"], "index column but no data columns"),
    (["b.dat", "--items", "4"], "an item id is not below n_items=4"),
    (["b.dat", "--items", "5", "--method", "trimmed"],
     "method 'trimmed' does not run on .dat baskets as sparse rows (their default, the sparse "
     "engine): add --engine chunked"),
    (["frame.csv", "--items", "3"], "--items applies to .dat files"),
    (["b.dat", "--items", "5", "--columns", "a"], "--columns applies to .csv and .parquet"),
    (["frame.csv", "--columns", "x,,y"], "expected comma-separated column names"),
])
def test_new_bad_inputs_give_one_line_and_write_nothing(capsys, folder, argv, message):
    target = folder / "out.json"
    code, out, err = run(capsys, "estimate", folder / argv[0], *argv[1:], *GOOD,
                         "--output", target)
    assert code == 2 and out == ""
    assert err.startswith("dpmean: error:") and err.count("\n") == 1 and message in err
    assert "secret-label" not in err
    assert not target.exists()


# ------------------------------------------------------------------------------------ progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("source", ["memory", "chunked"])
def test_each_question_is_one_pass_on_every_engine(folder, source):
    # The Gaussian baseline asks one question (the sum): one pass, whether the chunked engine
    # answers it chunk by chunk or not.
    x = VALUES if source == "memory" else open_source(folder / "frame.csv",
                                                      columns=["x", "y", "z"])
    with shown_passes("test", file=Terminal(), delay=0) as bar:
        dpmean.mean(x, rho=1, bounds=(0, 1), method="gaussian", random_state=0)
        assert bar.n == 1
        # CM: the row norms once (sorted and kept for its 20 search steps), the clipped sum.
        dpmean.mean(x, rho=1, bounds=(0, 1), method="cm", random_state=0)
        assert bar.n == 3


@pytest.mark.parametrize("source", ["memory", "chunked"])
def test_the_clipped_sums_at_several_radii_are_one_pass(folder, source):
    # The mean's sum and the clip residual's come from one pass (Engine.clipped_sums), which
    # the bar counted as none before it was listed among the passes.
    from dpmean.engines import ChunkedEngine, InMemoryEngine
    from dpmean.transforms import IDENTITY

    engine = (InMemoryEngine(VALUES, 0.0, 1.0) if source == "memory" else
              ChunkedEngine(open_source(folder / "frame.csv", columns=["x", "y", "z"]),
                            0.0, 1.0))
    with shown_passes("test", file=Terminal(), delay=0) as bar:
        engine.clipped_sums(IDENTITY, [0.5, 0.75])
        assert bar.n == 1


def test_no_bar_when_quiet_or_not_a_terminal():
    for screen, quiet in ((Terminal(), True), (io.StringIO(), False)):
        with shown_passes("test", file=screen, delay=0, quiet=quiet):
            dpmean.mean(VALUES, rho=1, bounds=(0, 1), method="cm", random_state=0)
        assert screen.getvalue() == ""


def test_a_far_box_is_printed_with_the_digits_its_interval_needs(capsys, tmp_path):
    """Millisecond timestamps (1.7e12) in a one-day box: six significant digits printed the
    release and both ends of its interval as 1.70004e+12."""
    times = 1.7e12 + np.random.default_rng(0).uniform(0, 8.64e7, 5000)
    path = tmp_path / "ts.csv"
    path.write_text("ts_ms\n" + "".join(f"{t:.0f}\n" for t in times))
    # (level 0.9999: the seeded interval misses the mean once in 10^4 draws, not 1 in 20)
    code, out, _ = run(capsys, "estimate", path, "--rho", "0.5", "--bounds", "1.7e12",
                       "1.7000864e12", "--seed", "1", "--level", "0.9999", "--quiet")
    assert code == 0
    interval = next(line for line in out.splitlines() if "interval per coordinate" in line)
    lo = interval.split(" lo ")[1].split(";")[0]
    hi = interval.split("; hi ")[1]
    assert lo != hi and float(lo) < times.mean() < float(hi), interval
