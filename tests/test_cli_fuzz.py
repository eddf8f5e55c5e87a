"""Hostile files and arguments through the command line: exit 0 or 2 with one error line,
never a traceback, never a partial output file."""

import json
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpmean.cli import main

EXTENSIONS = [".npy", ".npz", ".csv", ".parquet", ".dat", ".txt", ""]
ARGUMENT_SETS = [
    ["--rho", "0.5", "--bounds", "0", "1"],
    ["--epsilon", "1", "--delta", "1e-6", "--bounds", "-1e3", "1e3", "--method", "cm"],
    ["--rho", "nan", "--bounds", "0", "1"],
    ["--rho", "1", "--bounds", "inf", "1"],
    ["--rho", "1", "--bounds", "0", "1", "--method", "gaussian", "--option", "x=1"],
    ["--rho", "1", "--items", "64", "--method", "plan", "--p", "1"],
]


def run(capsys, argv):
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if code != 0:
        assert code == 2
        assert err.strip().startswith("dpmean: error:")
        assert len(err.strip().splitlines()) == 1
    return code


@given(content=st.one_of(st.binary(max_size=300),
                         st.text(alphabet="0123456789.,-e \n\tnaif", max_size=300)),
       extension=st.sampled_from(EXTENSIONS), arguments=st.sampled_from(ARGUMENT_SETS))
@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_random_files_give_a_release_or_one_error_line(capsys, content, extension, arguments):
    with tempfile.TemporaryDirectory() as folder:
        check_one_file(capsys, Path(folder), content, extension, arguments)


def check_one_file(capsys, tmp_path, content, extension, arguments):
    path = tmp_path / f"data{extension}"
    if isinstance(content, str):
        path.write_text(content)
    else:
        path.write_bytes(content)
    output = tmp_path / "out.json"
    code = run(capsys, ["estimate", str(path), *arguments, "--seed", "1",
                        "--output", str(output)])
    assert output.exists() == (code == 0)
    assert not [p for p in tmp_path.iterdir() if p.name not in {path.name, "out.json"}]


@given(values=st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1,
                       max_size=60),
       columns=st.integers(1, 4))
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_random_numeric_arrays(tmp_path, capsys, values, columns):
    rows = max(1, len(values) // columns)
    path = tmp_path / "x.npy"
    np.save(path, np.resize(np.array(values), (rows, columns)))
    run(capsys, ["estimate", str(path), "--rho", "1", "--bounds", "-5", "5", "--seed", "0",
                 "--json"])


def test_options_that_shadow_flags_or_the_data_are_refused(tmp_path, capsys):
    path = tmp_path / "x.npy"
    np.save(path, np.zeros((10, 2)))
    for option, message in (("rho=2", "use --rho"), ("random_state=3", "use --seed"),
                            ("seed=3", "use --seed"), ("eps=1", "use --epsilon"),
                            ("x=1", "unknown option")):
        assert run(capsys, ["estimate", str(path), "--rho", "1", "--bounds", "0", "1",
                            "--option", option]) == 2
        main(["estimate", str(path), "--rho", "1", "--bounds", "0", "1", "--option", option])
        assert message in capsys.readouterr().err


def test_without_bounds_the_box_is_found_privately_or_refused(tmp_path, capsys):
    # Without --bounds a zCDP release spends a stated share of its budget on a private box
    # (ledger stage "bounds"); a budget in another notion cannot, and says to give bounds;
    # methods with their own public inputs (coinpress's ball, iome-gaussian's prior) run in
    # those.
    path = tmp_path / "x.npy"
    np.save(path, np.random.default_rng(0).normal(size=(500, 3)))
    assert main(["estimate", str(path), "--rho", "1", "--method", "iome", "--seed", "0",
                 "--json"]) == 0
    assert "bounds" in json.loads(capsys.readouterr().out)["ledger"]
    assert main(["estimate", str(path), "--epsilon", "1", "--delta", "1e-6", "--method",
                 "trimmed", "--option", "noise=laplace"]) == 2
    assert "give bounds" in capsys.readouterr().err
    for method, option in (("coinpress", "radius=50"),
                           ("iome-gaussian", "mean_radius=10")):
        extra = ["--option", "sigma_min=0.5", "--option", "sigma_max=2"] if (
            method == "iome-gaussian") else []
        assert run(capsys, ["estimate", str(path), "--rho", "1", "--method", method,
                            "--option", option, *extra, "--seed", "0"]) == 0


def test_basket_files_have_the_box_of_their_format(capsys):
    # `dpmean estimate baskets.dat --items D --method plan --p 1 --rho 1`, as the PLAN issue asks
    # (plus the public number of items): a .dat file holds 0/1 rows by its format, so the box
    # (0, 1) is public.
    data = Path(__file__).resolve().parents[1] / "data"
    assert run(capsys, ["estimate", str(data / "kosarak-first-36682.dat"), "--items", "17035",
                        "--method", "plan", "--p", "1", "--rho", "1", "--seed", "0"]) == 0
