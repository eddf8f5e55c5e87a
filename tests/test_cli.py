"""The ``dpmean`` command end to end: estimate (demo: test_demo.py), and one clear line for every
bad input."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dpmean
from dpmean import cli
from dpmean.cli import main


@pytest.fixture
def data(tmp_path):
    """A small data set in each dense format, in its own folder."""
    folder = tmp_path / "in"
    folder.mkdir()
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 10, size=(3000, 4))
    np.save(folder / "x.npy", x)
    np.savez(folder / "x.npz", rows=x, other=np.zeros(3))
    lines = ["a,b,c,d"] + [",".join(f"{v:.6f}" for v in row) for row in x]
    (folder / "x.csv").write_text("\n".join(lines) + "\n")
    return folder


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def check_json(payload, rho, n=3000, d=4):
    assert payload["n"] == n and payload["d"] == d
    assert len(payload["mean"]) == d
    assert math.isclose(math.fsum(payload["ledger"].values()), payload["rho_spent"], rel_tol=1e-9)
    assert payload["rho_spent"] <= rho * (1 + 1e-9)


# ---------------------------------------------------------------------------------- estimate


@pytest.mark.parametrize("name, extra", [
    ("x.npy", []),
    ("x.csv", []),
    ("x.npz", ["--key", "rows"]),
])
def test_estimate_json(capsys, data, name, extra):
    code, out, err = run(capsys, "estimate", data / name, "--rho", 0.5, "--method", "iome",
                         "--bounds", 0, 10, "--seed", 1, "--json", *extra)
    assert code == 0
    payload = json.loads(out)
    check_json(payload, 0.5)
    assert math.isclose(payload["rho_spent"], 0.5)
    assert payload["method"] == "iome"
    assert np.allclose(payload["mean"], 5.0, atol=0.5)
    # the human summary goes to stderr with --json
    assert "ledger" in err and "method iome" in err and "n = 3000" in err


def test_estimate_summary_on_stdout(capsys, data):
    code, out, err = run(capsys, "estimate", data / "x.npy", "--rho", 1, "--method", "cm",
                         "--bounds", 0, 10)
    assert code == 0
    assert "method cm" in out and "ledger (rho per stage):" in out
    assert "private mean (first 4 of 4)" in out
    assert "private diagnostics:" in out
    assert err == ""


def test_estimate_names_the_clip_profile_where_it_would_narrow_the_interval(capsys, data):
    hint = "without --option interval_share=0, 1% of the budget (the default) buys"
    code, out, _ = run(capsys, "estimate", data / "x.npy", "--rho", 1, "--method", "iome",
                       "--bounds", 0, 10, "--seed", 1, "--option", "interval_share=0")
    assert code == 0 and hint in out
    code, out, _ = run(capsys, "estimate", data / "x.npy", "--rho", 1, "--method", "iome",
                       "--bounds", 0, 10, "--seed", 1, "--json")
    payload = json.loads(out)
    assert code == 0 and "clip profile" in payload["ledger"] and hint not in out
    check_json(payload, 1.0)
    for method in ("gaussian", "trimmed"):  # nothing to narrow by a profile
        code, out, _ = run(capsys, "estimate", data / "x.npy", "--rho", 1, "--method", method,
                           "--bounds", 0, 10, "--seed", 1)
        assert code == 0 and hint not in out


def test_estimate_output_file(capsys, data, tmp_path):
    target = tmp_path / "result.json"
    code, out, _ = run(capsys, "estimate", data / "x.csv", "--rho", 0.5, "--method", "gaussian",
                       "--bounds", 0, 10, "--output", target)
    assert code == 0
    payload = json.loads(target.read_text())
    check_json(payload, 0.5)
    assert payload["method"] == "gaussian"
    assert f"wrote {target}" in out
    assert sorted(os.listdir(tmp_path)) == ["in", "result.json"]  # no temporary file left


def test_estimate_epsilon_delta(capsys, data):
    code, out, err = run(capsys, "estimate", data / "x.npy", "--epsilon", 1, "--delta", 1e-6,
                         "--bounds", 0, 10, "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["epsilon"] == 1 and payload["delta"] == 1e-6
    check_json(payload, payload["rho"])
    assert payload["rho"] < 1
    assert "(epsilon, delta) = (1, 1e-06)" in err


def test_estimate_seed_is_reproducible(capsys, data):
    args = ["estimate", data / "x.npy", "--rho", 0.5, "--bounds", 0, 10, "--json", "--seed", 7]
    first = json.loads(run(capsys, *args)[1])
    second = json.loads(run(capsys, *args)[1])
    assert first["mean"] == second["mean"]
    # The file says its noise is reproducible (a user trial: only the terminal did).
    assert first["seeded"] is True
    assert json.loads(run(capsys, *args[:-2])[1])["seeded"] is False


def test_estimate_negative_bounds_in_scientific_notation(capsys, data):
    code, out, _ = run(capsys, "estimate", data / "x.npy", "--rho", 0.5, "--bounds", "-1e2",
                       "1e2", "--json")
    assert code == 0
    check_json(json.loads(out), 0.5)


def test_estimate_bounds_file(capsys, data, tmp_path):
    np.save(tmp_path / "bounds.npy", np.array([[0, 0, 0, 0], [10, 10, 20, 10]]))
    code, out, _ = run(capsys, "estimate", data / "x.npy", "--rho", 0.5, "--method", "gaussian",
                       "--bounds-file", tmp_path / "bounds.npy", "--json")
    assert code == 0
    check_json(json.loads(out), 0.5)


def test_estimate_option(capsys, data):
    code, out, _ = run(capsys, "estimate", data / "x.npy", "--rho", 0.5, "--method", "cm",
                       "--bounds", 0, 10, "--option", "threshold_share=0.5",
                       "--option", "threshold-steps=30", "--json")
    assert code == 0
    check_json(json.loads(out), 0.5)


def test_estimate_plan_on_baskets_with_p(capsys, tmp_path):
    # Baskets with ids from 1, as in retail.dat: column 0 is empty, d = --items = 39 + 1.
    rng = np.random.default_rng(3)
    baskets = [" ".join(map(str, sorted(set(rng.integers(1, 40, size=rng.integers(1, 8))))))
               for _ in range(2000)]
    path = tmp_path / "baskets.dat"
    path.write_text("\n".join(baskets) + "\n")
    code, out, _ = run(capsys, "estimate", path, "--items", 40, "--method", "plan", "--p", 1,
                       "--rho", 1, "--bounds", 0, 1, "--seed", 2, "--json")
    assert code == 0
    payload = json.loads(out)
    check_json(payload, 1.0, n=2000, d=40)
    assert set(payload["ledger"]) == {"centre domain", "centre", "variance spread", "variance",
                                      "threshold", "noise", "clip profile", "clip residual"}
    code, out, err = run(capsys, "estimate", path, "--items", 40, "--method", "plan", "--p", 1,
                         "--rho", 1, "--bounds", 0, 1, "--option", "p=2")
    assert_one_error_line(code, out, err)
    code, out, err = run(capsys, "estimate", path, "--items", 40, "--method", "plan", "--p",
                         0.5, "--rho", 1, "--bounds", 0, 1)
    assert_one_error_line(code, out, err)


@pytest.mark.parametrize("engine", [[], ["--engine", "chunked"], ["--engine", "sparse"]])
def test_basket_width_is_items_not_the_largest_id(capsys, tmp_path, engine):
    # Neighbours: one basket gains a rare item with a large id. d (the length of the released
    # mean) was max id + 1 and changed with it; now it is --items, or the file is refused.
    base = ["1 2", "2 3", "1", "3"] * 50
    (tmp_path / "a.dat").write_text("\n".join(base) + "\n")
    (tmp_path / "b.dat").write_text("\n".join(base[:-1] + ["3 700"]) + "\n")
    common = ["--method", "plan", "--p", 1, "--rho", 1, "--seed", 0, "--json", *engine]
    sizes = []
    for name in ("a.dat", "b.dat"):
        code, out, _ = run(capsys, "estimate", tmp_path / name, "--items", 1000, *common)
        assert code == 0
        sizes.append(json.loads(out)["d"])
    assert sizes == [1000, 1000]
    code, out, err = run(capsys, "estimate", tmp_path / "b.dat", "--items", 10, *common)
    assert_one_error_line(code, out, err)
    # Neither the id nor where it is: "line 200, item 2" said which item one person bought.
    assert "not below n_items=10" in err and "700" not in err and "line" not in err


def test_basket_file_without_items_is_refused_with_the_reason(capsys, tmp_path, data):
    (tmp_path / "a.dat").write_text("1 2\n3\n")
    for engine in ([], ["--engine", "chunked"]):
        code, out, err = run(capsys, "estimate", tmp_path / "a.dat", "--rho", 1, *engine)
        assert_one_error_line(code, out, err)
        assert "--items D" in err and "must be public" in err
    code, out, err = run(capsys, "estimate", data / "x.npy", *GOOD, "--items", 5)
    assert_one_error_line(code, out, err)
    assert "--items" in err


def test_option_values():
    options = cli.arguments.parse_options(["a=3", "b=0.5", "c=1e-3", "d=true", "e=None", "f=text"])
    assert options == {"a": 3, "b": 0.5, "c": 1e-3, "d": True, "e": None, "f": "text"}


def test_help_and_version(capsys):
    code, out, _ = run(capsys, "estimate", "--help")
    assert code == 0 and "--bounds-file" in out
    code, out, _ = run(capsys, "--version")
    assert code == 0 and dpmean.__version__ in out


# ------------------------------------------------------------------------------ bad input: exit 2


def make_bad_files(folder: Path) -> None:
    x = np.random.default_rng(1).uniform(0, 1, size=(50, 3))
    with_nan = x.copy()
    with_nan[3, 1] = np.nan
    np.save(folder / "nan.npy", with_nan)
    (folder / "inf.csv").write_text("1,2\n3,inf\n")
    (folder / "nan.csv").write_text("1,2\n3,nan\n")
    np.save(folder / "cube.npy", np.zeros((4, 3, 2)))
    np.save(folder / "empty.npy", np.zeros((0, 3)))
    (folder / "ragged.csv").write_text("1,2\n3\n")
    (folder / "words.csv").write_text("1,2\n3,x\n")
    (folder / "garbage.npy").write_bytes(b"not numpy at all")
    (folder / "zero.npy").touch()
    np.save(folder / "bounds-wrong.npy", np.zeros((3, 3)))
    np.savez(folder / "two.npz", a=x, b=x)
    (folder / "notes.txt").write_text("1,2\n")
    np.save(folder / "few.npy", np.full((20, 3), 0.5))
    (folder / "folder.npy").mkdir()


GOOD = ["--rho", "0.5", "--bounds", "0", "1"]

# a bad data file, read with a good budget and good bounds
BAD_DATA_FILES = {
    "missing file": "missing.npy",
    "directory": "folder.npy",
    "unknown extension": "notes.txt",
    "empty file": "zero.npy",
    "garbage": "garbage.npy",
    "nan": "nan.npy",
    "nan csv": "nan.csv",
    "wrong shape": "cube.npy",
    "empty data": "empty.npy",
    "ragged csv": "ragged.csv",
    "non-numeric csv": "words.csv",
    "npz without key": "two.npz",
}

BAD_ESTIMATES = {
    **{case: [name, *GOOD] for case, name in BAD_DATA_FILES.items()},
    "npz unknown key": ["two.npz", "--key", "c", *GOOD],
    "lo == hi": ["nan.npy", "--rho", "0.5", "--bounds", "1", "1"],
    "lo > hi": ["nan.npy", "--rho", "0.5", "--bounds", "2", "1"],
    "bounds file shape": ["nan.npy", "--rho", "0.5", "--bounds-file", "bounds-wrong.npy"],
    "bounds and bounds file": ["nan.npy", *GOOD, "--bounds-file", "bounds-wrong.npy"],
    "no bounds": ["nan.npy", "--rho", "0.5"],
    "zero rho": ["cube.npy", "--rho", "0", "--bounds", "0", "1"],
    "negative rho": ["cube.npy", "--rho", "-1", "--bounds", "0", "1"],
    "nan rho": ["cube.npy", "--rho", "nan", "--bounds", "0", "1"],
    "text rho": ["cube.npy", "--rho", "lots", "--bounds", "0", "1"],
    "no budget": ["cube.npy", "--bounds", "0", "1"],
    "rho and epsilon": ["cube.npy", *GOOD, "--epsilon", "1", "--delta", "1e-6"],
    "epsilon without delta": ["cube.npy", "--epsilon", "1", "--bounds", "0", "1"],
    "zero epsilon": ["cube.npy", "--epsilon", "0", "--delta", "1e-6", "--bounds", "0", "1"],
    "delta of one": ["cube.npy", "--epsilon", "1", "--delta", "1", "--bounds", "0", "1"],
    "unknown method": ["inf.csv", *GOOD, "--method", "magic"],
    "unknown option": ["inf.csv", *GOOD, "--option", "colour=blue"],
    "option without value": ["inf.csv", *GOOD, "--option", "threshold_share"],
    "option out of range": ["empty.npy", *GOOD, "--option", "threshold_share=2"],
    "negative seed": ["inf.csv", *GOOD, "--seed", "-3"],
    "level of one": ["inf.csv", *GOOD, "--level", "1"],
    "text level": ["inf.csv", *GOOD, "--level", "high"],
    "p for a method without p": ["inf.csv", *GOOD, "--method", "cm", "--p", "1"],
    "missing bounds file": ["inf.csv", "--rho", "0.5", "--bounds-file", "nowhere.csv"],
    "n too small for the budget": ["few.npy", "--rho", "1e-9", "--bounds", "0", "1",
                                   "--method", "iome"],
}


@pytest.fixture
def bad_files(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    make_bad_files(folder)
    return folder


def assert_one_error_line(code, out, err):
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("dpmean: error: ")
    assert "Traceback" not in err


@pytest.mark.parametrize("case", sorted(BAD_ESTIMATES))
def test_bad_estimate_input(capsys, bad_files, tmp_path, monkeypatch, case):
    argv = BAD_ESTIMATES[case]
    monkeypatch.chdir(bad_files)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "result.json"
    code, out, err = run(capsys, "estimate", *argv, "--output", target)
    assert_one_error_line(code, out, err)
    assert os.listdir(out_dir) == []  # no result, no temporary file


def test_bad_input_messages_say_what_is_wrong(capsys, bad_files):
    expectations = {
        "missing.npy": "no such file",
        "nan.npy": "NaN",
        "nan.csv": "NaN",
        "ragged.csv": "a line does not have the 2 values line 1 has",
        "words.csv": "column 2 holds a cell",
    }
    for name, expected in expectations.items():
        _, _, err = run(capsys, "estimate", bad_files / name, *GOOD)
        assert expected in err, err


def test_usage_messages_say_what_is_wrong(capsys, bad_files, monkeypatch):
    # A user trial: a missing bounds file was explained as a format error ending in "no such
    # file", and --p for cm as an unknown option "p".
    monkeypatch.chdir(bad_files)
    expectations = {
        ("--bounds-file", "nowhere.csv"): "nowhere.csv: no such file (--bounds-file)",
        ("--bounds-file", "folder.npy"): "folder.npy: not a file (--bounds-file)",
        ("--bounds", "0", "1", "--method", "cm", "--p", "1"):
            "--p is for the estimators that target an lp error (plan); method 'cm'",
        ("--bounds", "0", "1", "--level", "1.5"): "--level: expected a number strictly "
                                                   "between 0 and 1, got '1.5'",
    }
    for argv, expected in expectations.items():
        _, _, err = run(capsys, "estimate", "inf.csv", "--rho", 0.5, *argv)
        assert expected in err, err


def test_level_sets_the_printed_and_written_interval(capsys, data):
    argv = ["estimate", data / "x.npy", "--rho", 0.5, "--method", "cm", "--bounds", 0, 10,
            "--seed", 1, "--json"]
    payloads = {}
    for level, shown in ((0.5, "50%"), (0.99, "99%"), (0.9999999999, "99.99999999%")):
        code, out, err = run(capsys, *argv, "--level", level)
        assert code == 0
        payloads[level] = json.loads(out)
        # With the digits the level has (0.9999999999 was printed as 100%: a trial).
        assert f"\n{shown} interval per coordinate" in err
        assert payloads[level]["confidence_interval"]["level"] == level
    # The same release (same seed): only the interval's coverage differs.
    assert payloads[0.5]["mean"] == payloads[0.99]["mean"]
    result = dpmean.mean(np.load(data / "x.npy"), method="cm", rho=0.5, bounds=(0, 10),
                         random_state=1)
    for level, payload in payloads.items():
        lo, hi = result.confidence_interval(level)
        assert np.allclose(payload["confidence_interval"]["lo"], lo, rtol=0, atol=1e-12)
        assert np.allclose(payload["confidence_interval"]["hi"], hi, rtol=0, atol=1e-12)
        assert math.isclose(payload["confidence_radius"], result.confidence_radius(level))
    assert (np.subtract(payloads[0.5]["confidence_interval"]["hi"],
                        payloads[0.5]["confidence_interval"]["lo"])
            < np.subtract(payloads[0.99]["confidence_interval"]["hi"],
                          payloads[0.99]["confidence_interval"]["lo"])).all()


def test_insufficient_data_is_an_error(capsys, tmp_path):
    np.save(tmp_path / "few.npy", np.full((20, 3), 0.5))
    code, out, err = run(capsys, "estimate", tmp_path / "few.npy", "--rho", 1e-9,
                         "--bounds", 0, 1, "--method", "iome")
    assert_one_error_line(code, out, err)
    assert "too few rows" in err


@pytest.mark.parametrize("name", ["few.npy", "few.parquet", "few.csv"])
def test_too_few_rows_known_from_the_header_costs_nothing(capsys, tmp_path, name):
    # A user trial: 5 rows at rho = 0.1 (cm needs 92) were charged to the ledger as a failed
    # release, though n (the .npy header, Parquet metadata), d, the box and the budget decide
    # it. Refused before the charge now. A CSV records no n: its records are counted first,
    # judging no value (a review found its refusal still charged).
    import pandas as pd

    x = np.random.default_rng(0).uniform(0, 10, (5, 3))
    path = tmp_path / name
    if name.endswith(".npy"):
        np.save(path, x)
    elif name.endswith(".parquet"):
        pd.DataFrame(x, columns=list("abc")).to_parquet(path, index=False)
    else:
        pd.DataFrame(x, columns=list("abc")).to_csv(path, index=False)
    ledger = tmp_path / "l.json"
    assert run(capsys, "ledger", "init", ledger, "--rho", 1)[0] == 0
    code, out, err = run(capsys, "estimate", path, "--rho", 0.1, "--bounds", 0, 10,
                         "--method", "cm", "--ledger", ledger)
    assert_one_error_line(code, out, err)
    assert "too few rows" in err
    releases = json.loads(ledger.read_text())["session"]["releases"]
    assert releases == [] and "nothing was charged" in err


def test_output_to_missing_directory(capsys, data, tmp_path):
    code, out, err = run(capsys, "estimate", data / "x.npy", *GOOD,
                         "--output", tmp_path / "nowhere" / "r.json")
    assert_one_error_line(code, out, err)
    assert "does not exist" in err


def test_an_existing_output_is_kept_unless_forced(capsys, data, tmp_path):
    # A user trial: --output replaced an earlier result without a word, whose budget was spent.
    # Refused before the charge (the ledger keeps its whole budget), replaced with --force.
    output, ledger = tmp_path / "r.json", tmp_path / "l.json"
    output.write_text('{"old": 1}')
    assert run(capsys, "ledger", "init", ledger, "--rho", 1)[0] == 0
    code, out, err = run(capsys, "estimate", data / "x.npy", *GOOD, "--output", output,
                         "--ledger", ledger)
    assert_one_error_line(code, out, err)
    assert "exists" in err and "--force" in err
    assert output.read_text() == '{"old": 1}'
    assert json.loads(ledger.read_text())["session"]["releases"] == []
    code, _, _ = run(capsys, "estimate", data / "x.npy", *GOOD, "--output", output, "--force")
    assert code == 0 and "mean" in json.loads(output.read_text())


def test_failed_write_leaves_no_file(capsys, data, tmp_path, monkeypatch):
    # Only the output's rename fails: numba renames its cache files into place too, and on a
    # fresh machine the release compiles (and caches) its kernels first.
    output, rename = tmp_path / "r.json", os.replace

    def full_disk(src, dst):
        if os.fspath(dst) == os.fspath(output):
            raise OSError(28, "No space left on device")
        return rename(src, dst)

    monkeypatch.setattr(os, "replace", full_disk)
    code, out, err = run(capsys, "estimate", data / "x.npy", "--rho", 0.5, "--bounds", 0, 10,
                         "--output", output)
    assert_one_error_line(code, out, err)
    assert "No space left on device" in err
    assert sorted(os.listdir(tmp_path)) == ["in"]


@pytest.mark.parametrize("argv", [
    [],
    ["frobnicate"],
    ["estimate"],
    ["estimate", "x.npy", "--rho", "1", "--bounds", "0"],
    ["estimate", "x.npy", "--no-such-flag"],
    ["demo", "--rho", "abc"],
])
def test_usage_errors(capsys, argv):
    code, out, err = run(capsys, *argv)
    assert_one_error_line(code, out, err)


# ------------------------------------------------------------------- the installed command itself


def test_installed_command(tmp_path):
    np.save(tmp_path / "x.npy", np.random.default_rng(2).uniform(0, 1, size=(2000, 3)))
    env = dict(os.environ)
    exe = shutil.which("dpmean")
    if exe is not None:
        command = [exe]
    else:
        command = [sys.executable, "-m", "dpmean"]
        src = str(Path(dpmean.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    ok = subprocess.run(
        [*command, "estimate", str(tmp_path / "x.npy"), "--rho", "0.5", "--bounds", "0", "1",
         "--json"], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert ok.returncode == 0, ok.stderr
    check_json(json.loads(ok.stdout), 0.5, n=2000, d=3)
    bad = subprocess.run(
        [*command, "estimate", str(tmp_path / "missing.npy"), "--rho", "0.5", "--bounds", "0",
         "1"], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert bad.returncode == 2
    assert bad.stderr.startswith("dpmean: error: ") and len(bad.stderr.splitlines()) == 1


@pytest.mark.parametrize("method, options, stages", [
    ("coinpress", ["sigma=3", "t=3"], 4),  # its steps and, with bounds, the clip profile
    ("coinpress-cov", ["t_cov=3"], 13),
])
def test_estimate_coinpress(capsys, data, method, options, stages):
    extra = [arg for option in options for arg in ("--option", option)]
    code, out, _ = run(capsys, "estimate", data / "x.npy", "--rho", 0.5, "--method", method,
                       "--bounds", -1000, 1000, "--option", "radius=100", *extra, "--seed", 2,
                       "--json")
    assert code == 0
    payload = json.loads(out)
    check_json(payload, 0.5)
    assert math.isclose(payload["rho_spent"], 0.5)
    assert len(payload["ledger"]) == stages
    # Uniform(0, 10) columns: mean 5, sd 2.9; the noise std at n = 3000 is far below 0.5.
    assert np.allclose(payload["mean"], 5.0, atol=0.5)


def test_a_closed_pipe_is_not_a_traceback(tmp_path):
    # `dpmean estimate ... | head -1`: the reader may leave before dpmean writes. Here it has
    # left before dpmean starts (the pipe's read end is closed first), so every write fails;
    # dpmean stops quietly with the shell's SIGPIPE status instead of printing a
    # BrokenPipeError traceback.
    import subprocess
    import sys

    data = tmp_path / "x.npy"
    np.save(data, np.random.default_rng(0).uniform(0, 1, size=(200, 30)))
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "dpmean", "estimate", str(data), "--rho", "1", "--bounds",
             "0", "1", "--seed", "1"], stdout=write_end, stderr=subprocess.PIPE)
    finally:
        os.close(write_end)
    err = proc.stderr.decode()
    assert proc.returncode == 141, err
    assert "Traceback" not in err


def test_a_warning_is_one_line_without_source(tmp_path, capsys):
    # 5 rows at rho = 1 in 300 unit columns: the Gaussian mechanism's noise, sqrt(300) / 5 /
    # sqrt(2) = 2.4 box widths, exceeds the box, which the library warns about; the command
    # line shows it as one "dpmean: warning:" line.
    from dpmean.cli import main

    data = tmp_path / "x.npy"
    np.save(data, np.random.default_rng(0).uniform(0, 1, size=(5, 300)))
    assert main(["estimate", str(data), "--rho", "1", "--bounds", "0", "1", "--seed", "1",
                 "--method", "gaussian"]) == 0
    err = capsys.readouterr().err
    warning_lines = [line for line in err.splitlines() if "warning" in line.lower()]
    assert len(warning_lines) == 1
    assert warning_lines[0].startswith("dpmean: warning: gaussian: the noise")
    assert "base.py" not in err and "NoisyReleaseWarning" not in err


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGHUP"), reason="POSIX signals")
def test_signal_handlers_are_the_callers_again_after_a_command(capsys, monkeypatch):
    """main handles SIGTERM and SIGHUP as Ctrl-C only while a command runs (a program that
    calls it keeps its own handlers), and a signal the caller ignores (nohup's SIGHUP) stays
    ignored: the command is not stopped by what its user asked to ignore."""
    import signal

    from dpmean.cli.interrupts import handled_signals

    def mine(signum, frame):
        raise AssertionError("the caller's handler")

    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        signal.signal(signal.SIGTERM, mine)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        with handled_signals():
            assert signal.getsignal(signal.SIGTERM) is not mine
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        assert main(["budget", "--method", "gaussian", "--n", "100", "--d", "1", "--bounds",
                     "0", "1", "--rho", "1"]) == 0
        assert signal.getsignal(signal.SIGTERM) is mine
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        for signum, handler in old.items():
            signal.signal(signum, handler)


def test_baskets_in_a_box_that_misses_zero_are_refused_before_the_ledger_charge(capsys,
                                                                               tmp_path):
    # The sparse engine refuses a box without 0 (its implicit zeros); the ledger was charged
    # first and the release recorded as failed (a review). In dense chunks it runs.
    rng = np.random.default_rng(3)
    baskets = [" ".join(map(str, sorted(set(rng.integers(0, 20, size=3))))) for _ in range(500)]
    path = tmp_path / "b.dat"
    path.write_text("\n".join(baskets) + "\n")
    ledger = tmp_path / "ledger.json"
    assert run(capsys, "ledger", "init", ledger, "--rho", 1)[0] == 0
    code, out, err = run(capsys, "estimate", path, "--items", 20, "--rho", 0.5, "--method", "cm",
                         "--bounds", 0.5, 2, "--ledger", ledger)
    assert_one_error_line(code, out, err)
    assert "contain 0 in every coordinate" in err and "nothing was charged" in err
    assert json.loads(ledger.read_text())["session"]["releases"] == []
    code, _, _ = run(capsys, "estimate", path, "--items", 20, "--rho", 0.5, "--method", "cm",
                     "--bounds", 0.5, 2, "--engine", "chunked", "--seed", 1)
    assert code == 0


def test_a_ledger_no_release_could_use_is_refused(capsys, tmp_path):
    # Releases take rho >= MIN_RHO (1e-200): a ledger of 1e-300 could take none (a review).
    ledger = tmp_path / "tiny.json"
    code, out, err = run(capsys, "ledger", "init", ledger, "--rho", 1e-300)
    assert_one_error_line(code, out, err)
    assert "at least 1e-200" in err and not ledger.exists()
