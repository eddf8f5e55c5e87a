"""The command line against hostile or careless use: what is refused before a ledger is charged,
outputs that would destroy an input, files left behind, ranges for the wrong number of columns,
a full standard output and sizes too large to plan. Every failure is one error line."""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dpmean
from dpmean import ledger_file
from dpmean.cli import main

SRC = Path(__file__).resolve().parent.parent / "src"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(code, err):
    lines = err.strip().splitlines()
    return code == 2 and len(lines) == 1 and lines[0].startswith("dpmean: error: ") and (
        "Traceback" not in err)


@pytest.fixture
def folder(tmp_path, monkeypatch, capsys):
    """A working directory with a data file of each kind, careless files, and a ledger."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 10, size=(300, 3))
    np.save("a.npy", x)
    np.savez("a.npz", x=x)
    Path("a.csv").write_text("age,income,height\n" + "\n".join(
        ",".join(f"{v:.4f}" for v in row) for row in x) + "\n")
    Path("plain.csv").write_text("\n".join(",".join(f"{v:.4f}" for v in row) for row in x)
                                 + "\n")
    Path("x.txt").write_text("1,2,3\n")
    Path("b.dat").write_text("0 1\n2\n")
    Path("dir.csv").mkdir()
    np.save("text.npy", np.array([["a", "b"]] * 10))
    np.save("cube.npy", np.zeros((4, 3, 2)))
    np.save("norows.npy", np.zeros((0, 3)))
    os.replace("a.npz", "zip.npy")
    np.savez("a.npz", x=x)
    assert run(capsys, "ledger", "init", "T.json", "--rho", 10)[0] == 0
    return tmp_path


def estimate(capsys, *argv):
    return run(capsys, "estimate", *argv, "--rho", 0.25, "--method", "cm")


# ------------------------------------------------ 1. nothing is charged before the data is read


@pytest.mark.parametrize("argv", [
    ["x.txt", "--bounds", 0, 10],                      # unknown extension
    ["b.dat", "--bounds", 0, 1],                       # baskets without --items
    ["dir.csv", "--bounds", 0, 10],                    # a directory
    ["missing.npy", "--bounds", 0, 10],
    ["a.npz", "--key", "zz", "--bounds", 0, 10],       # no such array in the archive
    ["a.csv", "--columns", "zz", "--bounds", 0, 10],   # no such column in the header
    ["text.npy", "--bounds", 0, 10],                   # a text array (its header says so)
    ["cube.npy", "--bounds", 0, 10],                   # three dimensions
    ["norows.npy", "--bounds", 0, 10],                 # no rows
    ["zip.npy", "--bounds", 0, 10],                    # an .npz archive named .npy
])
def test_errors_found_without_reading_values_are_not_charged(capsys, folder, argv):
    before = Path("T.json").read_bytes()
    code, out, err = estimate(capsys, *argv, "--ledger", "T.json")
    assert one_error_line(code, err) and out == ""
    assert "nothing was charged to the ledger" in err
    assert Path("T.json").read_bytes() == before


def test_an_unreachable_scheduler_is_not_charged(capsys, folder, monkeypatch):
    distributed = pytest.importorskip("distributed")

    def refused(address, **kwargs):
        raise OSError(f"Timed out trying to connect to {address}")

    # (The real client waits 10 s for a closed port: the order is what is tested.)
    monkeypatch.setattr(distributed, "Client", refused)
    before = Path("T.json").read_bytes()
    code, _, err = estimate(capsys, "a.npy", "--bounds", 0, 10, "--scheduler",
                            "tcp://127.0.0.1:1", "--ledger", "T.json")
    assert one_error_line(code, err) and "cannot reach the Dask scheduler" in err
    assert "nothing was charged" in err and Path("T.json").read_bytes() == before


def test_a_failure_after_the_charge_says_it_stays_charged_and_why(capsys, folder):
    Path("bad.csv").write_text("a,b\n" + "1,2\n" * 400 + "3,oops\n")  # rows for the budget
    code, _, err = estimate(capsys, "bad.csv", "--bounds", 0, 10, "--ledger", "T.json")
    assert one_error_line(code, err) and "column 2 holds a cell" in err
    assert "release #0 stays charged to the ledger T.json, as failed" in err
    assert "the data may have been read" in err
    (release,) = ledger_file.read("T.json").ledger
    assert release.status == "failed" and release.spent == pytest.approx(0.25)


def test_an_epsilon_delta_budget_is_calibrated_from_the_header_before_the_data_is_read(
        capsys, folder, monkeypatch):
    # plan calibrates an (epsilon, delta) request to its plan for (n, d): the .npy header
    # gives them, so the ledger is charged before the rows are opened.
    import dpmean.cli.estimate as cli_estimate

    events = []
    reserve, open_input = ledger_file.reserve, cli_estimate._open_input
    monkeypatch.setattr(ledger_file, "reserve",
                        lambda *a, **k: events.append("charge") or reserve(*a, **k))
    monkeypatch.setattr(cli_estimate, "_open_input",
                        lambda *a, **k: events.append("read") or open_input(*a, **k))
    code, _, err = run(capsys, "estimate", "a.npy", "--epsilon", 1, "--delta", 1e-6,
                       "--method", "plan", "--bounds", 0, 10, "--ledger", "T.json")
    assert code == 0, err
    assert events == ["charge", "read"]


@pytest.mark.parametrize("engine", [[], ["--engine", "chunked"]], ids=["default", "chunked"])
@pytest.mark.parametrize("name, content, flags", [
    ("bad.csv", "a,b\n" + "1,2\n" * 1500 + "3,oops\n" + "1,2\n" * 1500, ["--bounds", 0, 10]),
    ("ragged.csv", "a,b\n" + "1,2\n" * 1500 + "3,4,5\n" + "1,2\n" * 1500, ["--bounds", 0, 10]),
    ("b.dat", "1 2\n" * 1500 + "1 150\n" + "2\n" * 1500, ["--items", 150]),
])
def test_an_epsilon_delta_release_that_fails_on_a_value_is_charged(capsys, folder, engine,
                                                                   name, content, flags):
    # The rows were read to count n before the charge: a bad cell, line or item id was
    # refused for free, again and again (review: --items 150 against 151 told which item
    # one person bought, with nothing spent). Now n is counted judging no value.
    Path(name).write_text(content)
    code, _, err = run(capsys, "estimate", name, "--epsilon", 2, "--delta", 1e-6, "--method",
                       "plan", *engine, *flags, "--ledger", "T.json")
    assert one_error_line(code, err) and "stays charged" in err, err
    (release,) = ledger_file.read("T.json").ledger
    assert release.status == "failed"


# ------------------------------------------- 2. outputs that cannot be written or would destroy


def test_an_unwritable_output_directory_is_refused_before_the_charge(capsys, folder,
                                                                     monkeypatch):
    # Root writes anywhere, and the tests run as root: os.access is told that the directory
    # refuses new files, as it does for a user without write permission on it.
    Path("locked").mkdir()
    access = os.access

    def denied(path, mode, **kwargs):
        if Path(path).name == "locked" and mode & os.W_OK:
            return False
        return access(path, mode, **kwargs)

    monkeypatch.setattr(os, "access", denied)
    before = Path("T.json").read_bytes()
    code, _, err = estimate(capsys, "a.npy", "--bounds", 0, 10, "--output", "locked/out.json",
                            "--ledger", "T.json")
    assert one_error_line(code, err) and "directory locked is not writable" in err
    assert Path("T.json").read_bytes() == before and os.listdir("locked") == []


@pytest.mark.parametrize("length", [240, 300])
def test_an_output_name_too_long_is_refused_before_the_charge(capsys, folder, length):
    # 300 characters: a traceback from the checks (a user trial). 240: the name fits, the
    # write's temporary file (18 characters more) does not, so the result was charged and lost.
    before = Path("T.json").read_bytes()
    name = "r" * length + ".json"
    code, _, err = estimate(capsys, "a.npy", "--bounds", 0, 10, "--output", name,
                            "--ledger", "T.json")
    assert one_error_line(code, err) and "too long" in err, err
    assert Path("T.json").read_bytes() == before
    assert sorted(os.listdir(".")) == sorted(p.name for p in folder.iterdir())
    assert not any(p.name.startswith(".r") for p in folder.iterdir())


def test_a_directory_that_refuses_new_files_is_refused_before_the_charge(capsys, folder):
    # /proc's permission bits let root write, its file system takes no new file: the result
    # was charged, then lost (a user trial).
    if not (Path("/proc").is_dir() and os.access("/proc", os.W_OK)):
        pytest.skip("needs a /proc that os.access calls writable (root on Linux)")
    before = Path("T.json").read_bytes()
    code, _, err = estimate(capsys, "a.npy", "--bounds", 0, 10, "--output", "/proc/x.json",
                            "--ledger", "T.json")
    assert one_error_line(code, err) and "refused a new file" in err, err
    assert Path("T.json").read_bytes() == before


def test_a_ledger_name_too_long_is_one_error_line(capsys, folder):
    code, _, err = run(capsys, "ledger", "init", "l" * 300 + ".json", "--rho", 1)
    assert one_error_line(code, err) and "too long" in err, err


def test_an_output_under_a_regular_file_is_refused(capsys, folder):
    # Not writable even by root: the "directory" is a file.
    before = Path("T.json").read_bytes()
    code, _, err = estimate(capsys, "a.npy", "--bounds", 0, 10, "--output", "x.txt/out.json",
                            "--ledger", "T.json")
    assert one_error_line(code, err) and "x.txt is not a directory" in err
    assert Path("T.json").read_bytes() == before


@pytest.mark.parametrize("output, what", [
    ("a.npy", "it is INPUT"),
    ("T.json", "it is the --ledger file"),
    ("link.npy", "it is INPUT"),            # a hard link to INPUT
    ("bounds.npy", "it is the --bounds-file"),
])
def test_an_output_that_would_replace_an_input_is_refused(capsys, folder, output, what):
    os.link("a.npy", "link.npy")
    np.save("bounds.npy", np.array([[0.0] * 3, [10.0] * 3]))
    files = {name: Path(name).read_bytes() for name in ("a.npy", "T.json", "bounds.npy")}
    code, _, err = estimate(capsys, "a.npy", "--bounds-file", "bounds.npy", "--output", output,
                            "--ledger", "T.json")
    assert one_error_line(code, err) and what in err
    assert {name: Path(name).read_bytes() for name in files} == files


@pytest.mark.parametrize("output, message", [
    ("", "the file name is empty"),
    ("fifo", "not a regular file"),
])
def test_an_empty_or_special_output_is_refused(capsys, folder, output, message):
    os.mkfifo("fifo")
    code, out, err = estimate(capsys, "a.npy", "--bounds", 0, 10, "--output", output)
    assert one_error_line(code, err) and message in err and out == ""


def test_a_failed_run_leaves_no_lock_file(capsys, folder):
    before = set(os.listdir())
    code, _, err = estimate(capsys, "a.npy", "--bounds", 0, 10, "--ledger", "")
    assert one_error_line(code, err) and "ledger file name is empty" in err
    code, _, err = estimate(capsys, "a.npy", "--bounds", 0, 10, "--ledger", "typo.json")
    assert one_error_line(code, err) and "no such ledger file" in err
    Path("precious.json").write_text("mine\n")
    before.add("precious.json")
    code, _, err = run(capsys, "ledger", "init", "precious.json", "--rho", 1)
    assert one_error_line(code, err) and "already exists" in err
    code, _, err = run(capsys, "ledger", "show", "")
    assert one_error_line(code, err)
    assert set(os.listdir()) == before  # no ..lock, typo.json.lock, precious.json.lock


# ---------------------------------------------------------- 3. one range for every column


@pytest.mark.parametrize("argv, message", [
    (["budget", "--n", 1000, "--d", 4, "--range", "age=0:100", "--rho", 1],
     "--range gives 1 column's range but --d is 4"),
    (["budget", "--n", 1000, "--d", 4, "--bounds-file", "one.npy", "--rho", 1],
     "--bounds-file gives 1 column's range but --d is 4"),
    (["estimate", "a.npy", "--bounds-file", "one.npy", "--rho", 1],
     "--bounds-file gives 1 column's range but a.npy has 3 columns"),
    (["estimate", "a.csv", "--bounds-file", "one.npy", "--rho", 1],
     "--bounds-file gives 1 column's range but a.csv has 3 columns"),
    (["estimate", "a.npy", "--bounds-file", "named.csv", "--rho", 1],
     "the bounds file named.csv names its columns but a.npy has none"),
    (["estimate", "plain.csv", "--bounds-file", "named.csv", "--rho", 1],
     "the bounds file named.csv names its columns but plain.csv has none"),
])
def test_ranges_must_be_one_per_column(capsys, folder, argv, message):
    np.save("one.npy", np.array([[0.0], [10.0]]))
    Path("named.csv").write_text("height,income,age\n0,0,0\n10,10,10\n")
    code, out, err = run(capsys, *argv)
    assert one_error_line(code, err) and message in err and out == ""


def test_ranges_for_every_column_are_taken(capsys, folder):
    np.save("three.npy", np.array([[0.0] * 3, [10.0] * 3]))
    Path("named.csv").write_text("height,income,age\n0,0,0\n10,10,10\n")
    assert run(capsys, "estimate", "a.npy", "--bounds-file", "three.npy", "--rho", 1)[0] == 0
    assert run(capsys, "estimate", "plain.csv", "--bounds-file", "three.npy", "--rho", 1)[0] == 0
    assert run(capsys, "estimate", "a.csv", "--bounds-file", "named.csv", "--rho", 1)[0] == 0
    assert run(capsys, "budget", "--n", 1000, "--d", 3, "--bounds-file", "three.npy",
               "--rho", 1)[0] == 0


# ------------------------------------------------ 4. a full standard output, sizes, budgets


class FullStdout(io.StringIO):
    """A standard output on a full disk."""

    def write(self, text):
        raise OSError(errno.ENOSPC, "No space left on device")

    def flush(self):
        raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_a_full_stdout_says_the_release_was_made_and_charged(capsys, folder, monkeypatch,
                                                             json_flag):
    monkeypatch.setattr(sys, "stdout", FullStdout())
    code, _, err = estimate(capsys, "a.npy", "--bounds", 0, 10, "--ledger", "T.json",
                            *json_flag)
    err = err.splitlines()[-1] if json_flag else err  # --json: the summary went to stderr
    assert one_error_line(code, err)
    assert "the release was made, charged to the ledger T.json as release #0" in err
    assert "could not be printed" in err and "No space left on device" in err
    assert [r.status for r in ledger_file.read("T.json").ledger] == ["released"]


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_a_short_write_to_stdout_says_the_release_was_made_and_charged(capsys, folder,
                                                                       monkeypatch, json_flag):
    # A nearly full disk: the first write takes part of the result, the next has no room.
    # Python's text stdout let such a short write pass (truncated JSON, exit code 0).
    stdout = open("stdout.txt", "w")  # a real descriptor, as a shell's redirection gives
    target, real_write, calls = stdout.fileno(), os.write, []

    def nearly_full(fd, data):
        if fd != target:
            return real_write(fd, data)
        calls.append(len(data))
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, bytes(data)[:len(data) // 2])

    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(os, "write", nearly_full)
    try:
        code, _, err = estimate(capsys, "a.npy", "--bounds", 0, 10, "--ledger", "T.json",
                                *json_flag)
    finally:
        stdout.close()
    err = err.splitlines()[-1] if json_flag else err  # --json: the summary went to stderr
    assert len(calls) == 2 and one_error_line(code, err)
    assert "the release was made, charged to the ledger T.json as release #0" in err
    assert "could not be printed" in err and "No space left on device" in err
    assert [r.status for r in ledger_file.read("T.json").ledger] == ["released"]


def test_a_full_temporary_directory_is_one_error_line(capsys, folder, monkeypatch):
    # The chunked engine spills a trimmed mean's columns to a file in TMPDIR: a directory
    # too small for it is one line naming it (a traceback from os.pwrite before), and the
    # release stays charged, as failed (the data was read).
    import tempfile

    from dpmean.engines import base as base_module

    monkeypatch.setattr(base_module, "COLUMN_BLOCK_BYTES", 4096)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))

    def full(fd, data, offset):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full)
    code, out, err = run(capsys, "estimate", "a.npy", "--rho", 1, "--bounds", 0, 10,
                         "--method", "trimmed", "--engine", "chunked", "--ledger", "T.json",
                         "--quiet")
    assert one_error_line(code, err) and out == ""
    assert f"the temporary directory {folder} ran out of space" in err
    assert "300 rows x 3 columns x 8 bytes = 7.2 kB (7,200 bytes)" in err
    assert "point TMPDIR at a disk" in err and "stays charged" in err
    assert [r.status for r in ledger_file.read("T.json").ledger] == ["failed"]


def test_an_output_that_fails_after_the_release_says_it_was_charged(capsys, folder,
                                                                    monkeypatch):
    rename = os.replace

    def full_disk(src, dst):
        if os.fspath(dst) == "out.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        return rename(src, dst)

    monkeypatch.setattr(os, "replace", full_disk)
    code, out, err = estimate(capsys, "a.npy", "--bounds", 0, 10, "--ledger", "T.json",
                              "--output", "out.json")
    assert one_error_line(code, err) and out == "" and "cannot write out.json" in err
    assert "the release was made, charged to the ledger T.json as release #0, but its result " \
        "is lost" in err


def test_a_ledger_that_cannot_be_settled_says_the_release_was_made(capsys, folder,
                                                                   monkeypatch):
    # The release was made and its entry stays reserved (counted in full); the error said only
    # "cannot write T.json: No space left on device" (a review).
    settle = ledger_file.settle

    def full_disk(path, index, status, *args, **kwargs):
        if status == "released":
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return settle(path, index, status, *args, **kwargs)

    monkeypatch.setattr(ledger_file, "settle", full_disk)
    code, out, err = estimate(capsys, "a.npy", "--bounds", 0, 10, "--ledger", "T.json")
    assert one_error_line(code, err) and out == "", err
    assert "No space left on device" in err
    assert "the release was made and stays charged to the ledger T.json as release #0" in err
    assert "its result is lost" in err
    assert [entry.status for entry in ledger_file.read("T.json").ledger] == ["reserved"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [
    ["estimate", "a.npy", "--rho", "1", "--bounds", "0", "10", "--method", "cm", "--json"],
    ["estimate", "a.npy", "--rho", "1", "--bounds", "0", "10", "--method", "cm"],
    ["budget", "--n", "1000", "--d", "10", "--bounds", "0", "1", "--rho", "1"],
])
def test_a_full_stdout_is_one_error_line_in_a_real_process(folder, argv):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "dpmean", *argv], stdout=full,
                              stderr=subprocess.PIPE, text=True, env=env, timeout=300)
    err = proc.stderr if argv[-1] != "--json" else proc.stderr.splitlines()[-1]
    assert one_error_line(proc.returncode, err), proc.stderr
    assert "No space left on device" in err and "Exception ignored" not in proc.stderr


def test_a_d_too_large_is_refused_before_allocating(capsys, monkeypatch):
    import dpmean.planning

    def no_allocation(*args, **kwargs):
        raise AssertionError("the plan was built")

    monkeypatch.setattr(dpmean.planning, "accuracy", no_allocation)
    shape = ("budget", "--method", "cm", "--n", 1000, "--bounds", 0, 1, "--rho", 0.5)
    code, _, err = run(capsys, *shape, "--d", 10_000_000_000)
    assert one_error_line(code, err) and "at most 2**31 - 1" in err
    # Below that, a d whose vectors exceed this machine's memory (here told it has 1 MiB).
    monkeypatch.setattr(os, "sysconf", lambda name: {"SC_PAGE_SIZE": 4096,
                                                    "SC_PHYS_PAGES": 256}[name])
    code, _, err = run(capsys, *shape, "--d", 1_000_000)
    assert one_error_line(code, err) and "too large to plan on this machine" in err


def test_out_of_memory_is_one_error_line(capsys, monkeypatch):
    import dpmean.planning

    def allocation_fails(*args, **kwargs):
        raise MemoryError("Unable to allocate 74.5 GiB for an array with shape (10000000000,)")

    monkeypatch.setattr(dpmean.planning, "accuracy", allocation_fails)
    code, _, err = run(capsys, "budget", "--method", "cm", "--n", 1000, "--d", 10,
                       "--bounds", 0, 1, "--rho", 0.5)
    assert one_error_line(code, err) and "out of memory: Unable to allocate 74.5 GiB" in err


def test_budget_refuses_delta_with_rho_as_estimate_does(capsys):
    code, _, err = run(capsys, "budget", "--method", "cm", "--n", 1000, "--d", 10, "--bounds",
                       0, 1, "--rho", 0.5, "--delta", 1e-6)
    # Named as what it is (a trial was told "not both" with no --epsilon given).
    assert one_error_line(code, err) and "--delta goes with --epsilon, not with --rho" in err
    # --delta with --half-width still prints the epsilon of the rho found.
    code, out, _ = run(capsys, "budget", "--method", "cm", "--n", 1000, "--d", 10, "--bounds",
                       0, 1, "--half-width", 0.5, "--delta", 1e-6, "--json")
    assert code == 0 and "epsilon" in json.loads(out)


# ------------------------------------------------------------- 5. numbers in error messages


@pytest.mark.parametrize("method", ["cm", "gaussian"])
def test_a_tiny_budget_gives_readable_numbers(capsys, folder, method):
    _, _, err = run(capsys, "estimate", "a.npy", "--rho", 1e-300, "--bounds", 0, 10,
                    "--method", method)
    assert not any(len(word.strip("();,.")) > 20 and word.strip("();,.").isdigit()
                   for word in err.split()), err


# ------------------------------------------------------- a basket file on every engine


def test_a_basket_file_gives_one_release_on_every_engine(capsys, tmp_path):
    """--engine chunked and dask read a .dat file as baskets too (PLAN's mean centre and binary
    variances): the same file and seed gave another threshold and a 4x larger error there."""
    pytest.importorskip("dask.array")
    items = np.minimum(np.random.default_rng(2).zipf(1.6, size=(2000, 5)) - 1, 39)
    path = tmp_path / "b.dat"
    path.write_text("".join(" ".join(map(str, sorted(set(row)))) + "\n" for row in items))
    releases = []
    for engine in ("sparse", "chunked", "dask"):
        code, out, _ = run(capsys, "estimate", path, "--items", 40, "--rho", 1, "--seed", 1,
                           "--method", "plan", "--engine", engine, "--json", "--quiet")
        assert code == 0, engine
        releases.append(json.loads(out))
    for other in releases[1:]:
        np.testing.assert_allclose(other["mean"], releases[0]["mean"], rtol=0, atol=1e-12)
        assert other["diagnostics"]["threshold"] == pytest.approx(
            releases[0]["diagnostics"]["threshold"], rel=1e-12)


def test_a_seed_is_a_non_negative_integer_for_every_command(capsys):
    """`dpmean demo --seed -1` printed numpy's traceback; every command now refuses it alike."""
    for command in (["demo", "--rho", "0.5"], ["estimate", "x.npy", "--rho", "1"]):
        code, out, err = run(capsys, *command, "--seed", "-1")
        assert one_error_line(code, err) and "non-negative integer" in err, err


def test_a_scheduler_address_dask_cannot_parse_is_one_error_line(capsys, folder):
    """--scheduler notanaddress gave a ValueError traceback. And it left a default client,
    still "connecting", that every later computation of the process waited on forever (the
    test suite hung in one run of four)."""
    distributed = pytest.importorskip("distributed")
    import dask

    scheduler = dask.config.get("scheduler", None)
    code, out, err = run(capsys, "estimate", "a.npy", "--rho", 1, "--bounds", 0, 10,
                         "--scheduler", "notanaddress")
    assert one_error_line(code, err) and "not a Dask scheduler address" in err, err
    assert dask.config.get("scheduler", None) == scheduler
    with pytest.raises(ValueError, match="No clients found"):
        distributed.default_client()


def test_a_scheduler_alone_runs_a_basket_file_densely_as_engine_dask_does():
    """--scheduler implies --engine dask, where a .dat file is read densely and every method
    runs; the sparse engine's method check refused trimmed with --scheduler alone."""
    import argparse

    from dpmean.cli.estimate import _check_input_flags

    flags = {"items": 50, "columns": None, "delimiter": None, "header": None,
             "index_col": None, "method": "trimmed"}
    _check_input_flags(argparse.Namespace(input="b.dat", engine=None,
                                          scheduler="tcp://127.0.0.1:8786", **flags))
    with pytest.raises(Exception, match="does not run on .dat baskets"):
        _check_input_flags(argparse.Namespace(input="b.dat", engine=None, scheduler=None,
                                              **flags))


@pytest.mark.parametrize("name", ["a.npy", "a.csv", "c.dat"])
def test_a_file_too_large_to_read_whole_is_refused_before_the_charge(folder, capsys,
                                                                    monkeypatch, name):
    # A trial: a basket file with --engine memory (11.6 GB read whole) failed for memory after
    # the ledger's charge, 12 s and 5.5 GB in. n and d are public, and so is the machine's
    # free memory: refused before the charge, pointing at the chunked engine.
    import dpmean.engines

    monkeypatch.setattr(dpmean.engines, "available_memory", lambda: 1000)
    Path("c.dat").write_text("0 1\n2\n" * 150)
    items = ["--items", 3] if name.endswith(".dat") else []
    code, _, err = run(capsys, "estimate", name, *items, "--rho", 1, "--bounds", 0, 10,
                       "--method", "cm", "--engine", "memory", "--ledger", "T.json")
    assert one_error_line(code, err) and "use engine='chunked'" in err
    assert "nothing was charged" in err
    assert ledger_file.read("T.json").spent == 0
    # The chunked engine reads it in blocks: released.
    code, _, err = run(capsys, "estimate", name, *items, "--rho", 1, "--bounds", 0, 10,
                       "--method", "cm", "--engine", "chunked", "--quiet")
    assert code == 0, err
    with pytest.raises(dpmean.InvalidParameterError, match="use engine='chunked'"):
        dpmean.mean(name, **({"n_items": 3} if name.endswith(".dat") else {}), rho=1.0,
                    bounds=(0, 10), method="cm", engine="memory")


def test_a_result_standard_output_cannot_encode_says_the_release_was_made():
    # PYTHONIOENCODING=ascii and a column named 'temp°C': a traceback lost the note that the
    # release was made and charged (a diff review).
    from dpmean.cli.arguments import UsageError, printing

    with pytest.raises(UsageError, match=r"was made, but its result could not be printed: "
                                         r"standard output's encoding \(ascii\)"):
        with printing("the release was made"):
            raise UnicodeEncodeError("ascii", "temp\u00b0C", 4, 5, "ordinal not in range")


@pytest.mark.parametrize("engine", ["memory", "chunked"])
def test_a_file_that_is_not_a_npy_array_is_refused_without_its_bytes(capsys, tmp_path,
                                                                      engine):
    # numpy's error quoted the first six bytes it read, here a data value (a user trial).
    path = tmp_path / "secret.npy"
    path.write_bytes(b"734512,88\n12,3\n")
    code, _, err = run(capsys, "estimate", path, "--rho", "1", "--bounds", "0", "1",
                       "--engine", engine)
    assert one_error_line(code, err), err
    assert "not a valid .npy" in err and "734512" not in err, err
    # A header numpy cannot parse is told without its text either (numpy names what it read
    # after a colon, unquoted), and a crafted one (a key that is not a string, an open quote,
    # a negative size, another format version) is one error line, never a traceback, and is
    # refused before a session's charge (a review).
    headers = [b"{'descr': '<f8 734512', 'fortran_order': False, 'shape': (2, 2), }",
               b"734512.25", b"{'descr': '<f8', 'fortran_order': False, 'shape': [734512]}",
               b"{'descr': '<f8', 'fortran_order': 734512, 'shape': (2, 2), }",
               b"{'descr': 734512, 'fortran_order': False, 'shape': (2, 2), }",
               b"{1: 2, 'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }",
               b"{'descr': '<f8, 'fortran_order': False, 'shape': (734512, 2), }",
               b"{'descr': '<f8', 'fortran_order': False, 'shape': (-734512,), }",
               b"{'descr': '<f8', 'fortran_order': False, 'shape': (True, 734512), }",
               b"{'descr': [('s734512', '<f8')], 'fortran_order': False, 'shape': (2,), }"]
    for header in headers:
        for version in (b"\x01\x00", b"74"):
            path.write_bytes(b"\x93NUMPY" + version + len(header).to_bytes(2, "little")
                             + header + b"\n" + bytes(64))
            code, _, err = run(capsys, "estimate", path, "--rho", "1", "--bounds", "0", "1",
                               "--engine", engine)
            assert one_error_line(code, err), (header, err)
            assert "734512" not in err and "2021" not in err, (header, err)
            session = dpmean.Session(rho=1.0)
            with pytest.raises(dpmean.InvalidDataError) as refused:
                session.mean(str(path), rho=0.5, bounds=(0, 1), engine=engine)
            assert "734512" not in str(refused.value), (header, refused.value)
            assert session.spent == 0.0, header
