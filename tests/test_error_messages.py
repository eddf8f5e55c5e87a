"""Errors about bad data say what is wrong and where, never the data: no offending value or cell
text, no count of bad values. A service that forwards error messages would leak them.

Every bad input carries a distinctive marker (a count of 37 NaN, a cell or token
holding SECRETxyz or 987654321) and goes through every entry point: ``dpmean.mean`` on arrays
and sparse matrices, ``load_data``, ``open_source`` with the chunked engine, and the command
line (memory and chunked engines; the message is on stderr)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse

import dpmean
from dpmean.cli import main
from dpmean.engines import open_source
from dpmean.errors import InvalidDataError
from dpmean.io import load_data

N_NAN = 37
SECRET, NUMBER = "SECRETxyz", "987654321"


def with_non_finite(value: float, count: int) -> np.ndarray:
    """200 x 3 values in [0, 1] with ``count`` cells set to ``value``."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, size=(200, 3))
    x.flat[rng.choice(x.size, count, replace=False)] = value
    return x


# (An infinity is a number beyond the range, clamped like any other: tests/test_beyond_range.py.)
ARRAYS = {
    "nan": (with_non_finite(np.nan, N_NAN), [str(N_NAN)], "NaN values"),
}


def csv_text(x: np.ndarray) -> str:
    return "a,b,c\n" + "".join(",".join(repr(float(v)) for v in row) + "\n" for row in x)


GOOD_ROWS = "0.5,0.25,0.75\n" * 300  # enough rows that the estimators read the data
# name -> (file name, contents, number of items for .dat, markers that must not appear,
# what the message must say)
FILES = {
    # (A release of the file says "a cell that is not a number (... NaN ...)", as for an
    # empty cell; load_data's array, the estimators' "NaN values".)
    "nan-csv": ("nan.csv", csv_text(ARRAYS["nan"][0]), None, [str(N_NAN)], "NaN"),
    "csv-cell": ("cell.csv", "a,b,c\n0.5,0.5,0.5\n" + "1," + SECRET + NUMBER + ",3\n"
                 + GOOD_ROWS, None, [SECRET, NUMBER, "xyz", "line 3"],
                 "column 2 holds a cell that is not a number"),
    "dat-token": ("token.dat", "1 2\n0\n1 " + SECRET + " 3\n" + "2\n" * 300, 100,
                  [SECRET, "xyz", "line 3"], "an item is not an item id"),
    "dat-id": ("id.dat", "1 2\n0\n1 " + NUMBER + " 3\n" + "2\n" * 300, 100,
               [NUMBER, "98765", "line 3"], "an item id is not below n_items=100"),
}


def assert_clean(message: str, path: Path | None, markers: list[str], expected: str) -> None:
    text = message.replace(str(path), "<file>") if path is not None else message
    for marker in markers:
        assert marker not in text, text
    assert expected in text, text


@pytest.mark.parametrize("case", ARRAYS)
@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_mean_on_arrays_does_not_echo_the_data(case, kind):
    x, markers, expected = ARRAYS[case]
    data = scipy.sparse.csr_matrix(x) if kind == "sparse" else x
    method = "plan" if kind == "sparse" else "cm"
    with pytest.raises(InvalidDataError) as info:
        dpmean.mean(data, rho=1.0, method=method, bounds=(0, 1), random_state=0)
    assert_clean(str(info.value), None, markers, expected)


def _load_then_mean(path: Path, items: dict) -> None:
    dpmean.mean(load_data(path, **items), rho=1.0, method="plan", p=1, bounds=(0, 1),
                random_state=0)


def _chunked(path: Path, items: dict) -> None:
    dpmean.mean(open_source(path, **items), rho=1.0, method="cm", bounds=(0, 1),
                random_state=0)


@pytest.mark.parametrize("case", FILES)
@pytest.mark.parametrize("read", [_load_then_mean, _chunked], ids=["load_data", "open_source"])
def test_reading_files_does_not_echo_the_data(tmp_path, case, read):
    name, content, n_items, markers, expected = FILES[case]
    path = tmp_path / name
    path.write_text(content)
    items = {} if n_items is None else {"n_items": n_items}
    with pytest.raises(InvalidDataError) as info:
        read(path, items)
    assert_clean(str(info.value), path, markers, expected)


@pytest.mark.parametrize("case", FILES)
@pytest.mark.parametrize("engine", [[], ["--engine", "chunked"]], ids=["memory", "chunked"])
def test_the_cli_does_not_echo_the_data(tmp_path, capsys, case, engine):
    name, content, n_items, markers, expected = FILES[case]
    path = tmp_path / name
    path.write_text(content)
    items = [] if n_items is None else ["--items", str(n_items)]
    method = ["--method", "plan", "--p", "1"] if name.endswith(".dat") and not engine else [
        "--method", "cm"]
    code = main(["estimate", str(path), "--rho", "1", "--bounds", "0", "1", "--seed", "0",
                 *method, *items, *engine])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert_clean(err, path, markers, expected)
