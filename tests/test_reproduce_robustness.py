"""``dpmean reproduce`` and ``dpmean demo`` when stopped: an interrupt says what the CSV keeps, an
OSError names its file and reason, a torn CSV line is cut and its trial run again on resume, and
the demo's picture and table are replaced together or not at all.

Every run is the quick Bun-Steinke Fig. 1 (one setting, 30 rows a trial, a fraction of a second
each) with fixed seeds; the demo runs on small synthetic digits.
"""

from __future__ import annotations

import csv
import errno
import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from test_cli import run

from dpmean.cli import demo
from dpmean.experiments import report, runner

NAME = "bs-fig1"
QUICK = ["reproduce", NAME, "--quick", "--trials", "2"]
CSV = f"{NAME}-quick.csv"
ROWS_PER_TRIAL = 30  # 3 laws x 10 trimming fractions


def error_line(code: int, out: str, err: str) -> str:
    """The one error line of a failed command (after its progress bar), checked as such."""
    assert code == 2 and out == "" and "Traceback" not in err, err
    line = err.strip().splitlines()[-1]
    assert line.startswith("dpmean: error: ")
    return line


def rows(path: Path) -> list[list[str]]:
    """The data lines of a CSV, parsed, in a canonical order."""
    with path.open(newline="") as f:
        return sorted(list(csv.reader(f))[1:])


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Path:
    """The CSV of an uninterrupted run of two trials: what every resumed run must end with."""
    out = tmp_path_factory.mktemp("clean")
    return runner.run(NAME, out, trials=2, quick=True, progress=False)


# --------------------------------------------------------------------------- interruption


def test_interrupt_says_what_the_csv_keeps_and_a_rerun_resumes(capsys, tmp_path, monkeypatch,
                                                                clean):
    real = runner.run_task
    calls = []

    def second_is_interrupted(*args):
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(runner, "run_task", second_is_interrupted)
    code, out, err = run(capsys, *QUICK, "--out", tmp_path)
    assert code == 130 and out == ""
    message = err.strip().splitlines()[-1]
    assert message == (f"dpmean: interrupted; 1 of 2 trials finished and are kept in "
                       f"{tmp_path / CSV}; run the same command again to resume")
    assert "nothing was written" not in err
    assert len(rows(tmp_path / CSV)) == ROWS_PER_TRIAL
    assert sorted(os.listdir(tmp_path)) == [CSV]  # no plot or summary of a partial run

    monkeypatch.undo()
    code, out, err = run(capsys, *QUICK, "--out", tmp_path)
    assert code == 0, err
    assert rows(tmp_path / CSV) == rows(clean)


def _slow_task(name: str, quick: bool, index: int, trial: int) -> list[dict]:
    """A trial that takes 0.2 s and leaves a file behind, to count the trials a pool ran."""
    (Path(os.environ["DPMEAN_TEST_STARTED"]) / f"{index}-{trial}").touch()
    time.sleep(0.2)
    return []


@pytest.mark.skipif(multiprocessing.get_start_method() != "fork",
                    reason="the workers see the monkeypatched task only when forked")
def test_interrupt_with_jobs_drops_the_queued_trials(tmp_path, monkeypatch):
    # An interrupt reaches the runner as the closing of its results: the pool used to run
    # every queued trial first (Ctrl-C with --jobs 2 took as long as the rest of the run).
    monkeypatch.setattr(runner, "run_task", _slow_task)
    monkeypatch.setenv("DPMEAN_TEST_STARTED", str(tmp_path))
    results = runner._results(NAME, True, [(0, t) for t in range(40)], jobs=2)
    next(results)
    results.close()
    assert len(os.listdir(tmp_path)) < 10


def test_interrupt_before_any_trial(capsys, tmp_path, monkeypatch):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_task", interrupted)
    code, out, err = run(capsys, *QUICK, "--out", tmp_path)
    assert code == 130
    assert err.strip().splitlines()[-1] == "dpmean: interrupted before any trial finished"


# --------------------------------------------------------------------------- OSError


def test_os_error_names_its_file_not_the_folder(capsys, tmp_path):
    (tmp_path / CSV).mkdir()  # the CSV's name taken by a folder: not the folder's permissions
    line = error_line(*run(capsys, *QUICK, "--out", tmp_path))
    assert line == f"dpmean: error: {tmp_path / CSV}: Is a directory"


def test_full_disk_names_the_file_and_keeps_the_old_plot(capsys, tmp_path, monkeypatch):
    png = tmp_path / f"{NAME}-quick.png"
    png.write_bytes(b"old picture")

    def full(fd):  # the disk fills as the plot is synced: an error that names no file
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    line = error_line(*run(capsys, *QUICK, "--out", tmp_path))
    assert line == (f"dpmean: error: {png}: No space left on device (all 2 trials "
                           f"finished and are kept in {tmp_path / CSV}; the same command "
                           f"resumes from them)")
    assert png.read_bytes() == b"old picture"  # not half a new one
    assert sorted(os.listdir(tmp_path)) == [CSV, png.name]


def test_full_disk_while_appending_tears_a_row_and_the_rerun_mends_it(tmp_path, clean):
    # A real short write: a file size limit lets the first trial's write through in part, then
    # refuses the rest (EFBIG, like ENOSPC an error without a file name). Python ignores
    # SIGXFSZ, so the limit gives an error, not a killed process.
    limit = 1500  # the header and about a dozen rows: a row is torn in the middle

    def limited():
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    command = [sys.executable, "-B", "-m", "dpmean", *QUICK, "--out", str(tmp_path)]
    done = subprocess.run(command, preexec_fn=limited, capture_output=True, text=True,
                          timeout=120)
    line = error_line(done.returncode, done.stdout, done.stderr)
    assert line == f"dpmean: error: {tmp_path / CSV}: {os.strerror(errno.EFBIG)}"
    torn = (tmp_path / CSV).read_bytes()
    assert len(torn) == limit and not torn.endswith(b"\n")

    runner.run(NAME, tmp_path, trials=2, quick=True, progress=False)
    assert rows(tmp_path / CSV) == rows(clean)


# --------------------------------------------------------------------------- torn rows


def _cut_in_row(k: int, keep: int):
    """Cut the file inside data row ``k`` (0-based), keeping ``keep`` of its characters."""
    def cut(lines: list[bytes]) -> bytes:
        return b"".join(lines[:1 + k]) + lines[1 + k][:keep]
    return cut


def _cut_in_value(lines: list[bytes]) -> bytes:
    """The last row of the second trial without the end of its value: a number all the same."""
    last = lines[2 * ROWS_PER_TRIAL]
    return b"".join(lines[:2 * ROWS_PER_TRIAL]) + last[:-6]


def _short_line(lines: list[bytes]) -> bytes:
    """A last line that has its newline but too few fields."""
    return b"".join(lines[:1 + ROWS_PER_TRIAL + 5]) + b"1001,1000\r\n"


@pytest.mark.parametrize("tear", [
    _cut_in_row(ROWS_PER_TRIAL + 9, 40),  # the second trial's 10th row: its 20 later rows lost
    _cut_in_row(ROWS_PER_TRIAL, 40),      # the second trial's first row: none of it written
    _cut_in_row(ROWS_PER_TRIAL + 4, 25),  # inside the quoted "fractions" field
    _cut_in_value,
    _short_line,
], ids=["mid-trial", "trial-start", "in-quotes", "in-value", "short-line"])
def test_resume_cuts_a_torn_row_and_reruns_its_trial(tmp_path, clean, tear):
    lines = clean.read_bytes().splitlines(keepends=True)
    assert len(lines) == 1 + 2 * ROWS_PER_TRIAL
    path = tmp_path / CSV
    torn = tear(lines)
    path.write_bytes(torn)
    kept = torn[:torn.rfind(b"\n", 0, len(torn) - 1) + 1]  # every line before the torn one

    runner.run(NAME, tmp_path, trials=2, quick=True, progress=False)
    assert path.read_bytes().startswith(kept)  # finished rows stay as they were
    assert rows(path) == rows(clean)  # nothing lost, nothing twice


def test_a_row_of_the_wrong_width_is_never_a_result(tmp_path, clean):
    spec = runner.get_spec(NAME, quick=True)
    lines = clean.read_bytes().splitlines(keepends=True)
    first = lines[1].rstrip(b"\r\n")
    path = tmp_path / CSV
    # one good row, then the same row with a field too many and one with a field too few
    path.write_bytes(lines[0] + lines[1] + first + b",7\r\n" + first.rsplit(b",", 2)[0]
                     + b",99\r\n")
    stats = report.aggregate(spec, path)
    assert [s["trials"] for s in stats.values()] == [1]


# --------------------------------------------------------------------------- demo


@pytest.fixture(scope="module")
def digits_file(tmp_path_factory) -> Path:
    """Ten synthetic digits of 1,500 images each (as test_demo.py), in an MNIST-like .npz."""
    rng = np.random.default_rng(5)
    side = demo.SIDE * demo.SIDE
    groups = []
    for k in demo.DIGITS:
        images = rng.integers(0, 40, size=(1500, side)).astype(np.uint8)
        images[:, 50 * k:50 * k + 200] += 200
        groups.append(images)
    path = tmp_path_factory.mktemp("digits") / "digits.npz"
    np.savez(path, images=np.vstack(groups), digits=np.repeat(np.arange(10), 1500))
    return path


def _old_pair(out: Path) -> dict[str, bytes]:
    out.mkdir()
    (out / demo.PNG_NAME).write_bytes(b"old picture")
    (out / demo.JSON_NAME).write_bytes(b'{"old": true}\n')
    return {name: (out / name).read_bytes() for name in os.listdir(out)}


def _failing_second_sync(monkeypatch, error: BaseException) -> None:
    """The second fsync fails: the first file is complete, the second is not."""
    sync = os.fsync
    calls = []

    def second_fails(fd):
        calls.append(fd)
        if len(calls) == 2:
            raise error
        sync(fd)

    monkeypatch.setattr(os, "fsync", second_fails)


@pytest.mark.parametrize("error, code, message", [
    (OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), 2, "No space left on device"),
    (KeyboardInterrupt(), 130, "dpmean: interrupted; nothing was written"),
], ids=["full-disk", "interrupt"])
def test_demo_replaces_its_pair_only_when_both_are_written(capsys, tmp_path, monkeypatch,
                                                           digits_file, error, code, message):
    pytest.importorskip("matplotlib")
    out = tmp_path / "demo"
    old = _old_pair(out)
    argv = ["demo", "--data", digits_file, "--rho", 0.3, "--seed", 1, "--out", out]
    _failing_second_sync(monkeypatch, error)
    result, _, err = run(capsys, *argv)
    assert result == code and message in err and "Traceback" not in err
    # the old picture and table, as they were, and no temporary file
    assert {name: (out / name).read_bytes() for name in os.listdir(out)} == old

    monkeypatch.undo()
    result, _, err = run(capsys, *argv)
    assert result == 0, err
    assert sorted(os.listdir(out)) == [demo.JSON_NAME, demo.PNG_NAME]
    assert (out / demo.PNG_NAME).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((out / demo.JSON_NAME).read_text())["seed"] == 1


def test_a_trial_cut_at_a_line_end_is_completed_on_resume(tmp_path):
    # A write that stops at a line's end (then a full disk) leaves the last trial short of
    # rows with no torn line to see; it was taken as finished and its rows never written
    # (review). The last trial written is always run again, appending what it lacks.
    from dpmean.experiments.runner import run

    path = run("iome-fig9", tmp_path, trials=1, quick=True, progress=False)
    full = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(full[:-1]))
    run("iome-fig9", tmp_path, trials=1, quick=True, progress=False)
    assert sorted(path.read_bytes().splitlines(keepends=True)) == sorted(full)
