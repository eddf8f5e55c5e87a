"""The one runner for every experiment spec: (setting, trial) tasks in parallel processes,
seeded per task, appended to a CSV as they finish so an interrupted run resumes."""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import os
from collections.abc import Generator, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from ..errors import InvalidParameterError
from .spec import Spec


def get_spec(name: str, quick: bool = False) -> Spec:
    """The registered spec ``name`` (its ``--quick`` variant if asked)."""
    from .figures import SPECS

    if name not in SPECS:
        raise InvalidParameterError(
            f"unknown experiment {name!r}; see 'dpmean reproduce --list'")
    return SPECS[name].quick_version() if quick else SPECS[name]


def columns(spec: Spec) -> list[str]:
    """CSV header: the setting parameters (in first-seen order), trial, method, value."""
    params: dict[str, None] = {}
    for setting in spec.settings:
        params.update(dict.fromkeys(setting))
    return [*params, *spec.extra, "trial", "method", "value"]


def _key(setting: dict[str, Any], params: list[str]) -> tuple[str, ...]:
    return tuple(str(setting.get(p, "")) for p in params)


def task_seed(spec: Spec, index: int, trial: int) -> np.random.SeedSequence:
    """Per-(setting, trial) seed: independent of --jobs, of order and of resumption."""
    return np.random.SeedSequence(spec.seed, spawn_key=(index, trial))


def run_task(name: str, quick: bool, index: int, trial: int) -> list[dict[str, Any]]:
    """One trial of one setting (a top-level function so worker processes can import it)."""
    spec = get_spec(name, quick)
    setting = spec.settings[index]
    rows = spec.run_trial(setting, np.random.default_rng(task_seed(spec, index, trial)))
    return [{**setting, "trial": trial, **row} for row in rows]


def csv_path(name: str, out: Path, quick: bool = False) -> Path:
    """Where :func:`run` keeps the finished trials of an experiment.

    Parameters
    ----------
    name : str
        The experiment.
    out : Path
        The output folder.
    quick : bool, default False
        The ``--quick`` variant, which has files of its own.

    Returns
    -------
    Path
        ``out/NAME.csv``, or ``out/NAME-quick.csv``.
    """
    return out / f"{name}{'-quick' if quick else ''}.csv"


def finished(name: str, out: Path, *, trials: int | None = None,
             quick: bool = False) -> tuple[int, int]:
    """How many of the trials a :func:`run` asks for are already in its CSV.

    Parameters
    ----------
    name, out, trials, quick
        As for :func:`run`.

    Returns
    -------
    tuple of int
        The finished trials (the ones a resumed run would not run again) and all the trials
        the run asks for.
    """
    spec = get_spec(name, quick)
    trials = spec.trials if trials is None else trials
    header = columns(spec)
    params = header[:-3 - len(spec.extra)]
    path = csv_path(name, out, quick)
    content = path.read_bytes() if path.is_file() else b""
    done, _ = _finished(*_split_torn(content, len(header)), header, params)
    wanted = {(_key(setting, params), t) for setting in spec.settings for t in range(trials)}
    return len(done & wanted), len(wanted)


def _fields(line: str) -> list[str]:
    """The fields of one CSV line (quotes undone)."""
    return next(csv.reader([line]), [])


def _trial(row: list[str], params: list[str]) -> tuple[tuple[str, ...], int]:
    """(setting key, trial) of a row: the setting's columns come first, trial is 3rd to last."""
    return tuple(row[:len(params)]), int(row[-3])


def _split_torn(content: bytes, width: int) -> tuple[bytes, bool]:
    """``content`` without a last line torn by an interrupted write (no newline, or not
    ``width`` fields), and whether there was one."""
    start = content.rfind(b"\n", 0, len(content) - 1) + 1  # where the last line begins
    last = content[start:]
    if not last or (last.endswith(b"\n")
                    and len(_fields(last.decode("utf-8", errors="replace"))) == width):
        return content, False
    return content[:start], True


def _finished(content: bytes, last_unfinished: bool, header: list[str], params: list[str],
              ) -> tuple[set[tuple[tuple[str, ...], int]], set[tuple[str, ...]]]:
    """The (setting key, trial) pairs finished in ``content`` (a CSV without its torn line),
    and the rows (all fields but the value) already written of the trial that may not be.

    Only rows of the header's width whose trial and value parse count: any other line (torn,
    or not ours) is not a result. With ``last_unfinished`` the last trial written may lack
    rows (a trial's rows are written together, and a write may stop at a torn line or at a
    line's end): it is not finished, and only its missing rows are to be appended. (If a torn
    line began a trial of its own, that one has no row here.)
    """
    rows = []
    text = content.decode("utf-8", errors="replace")
    for row in itertools.islice(csv.reader(io.StringIO(text, newline="")), 1, None):
        try:
            if len(row) == len(header):
                int(row[-3])
                float(row[-1])
                rows.append(row)
        except ValueError:
            continue
    done = {_trial(row, params) for row in rows}
    if not (last_unfinished and rows):
        return done, set()
    last = _trial(rows[-1], params)
    done.discard(last)
    return done, {tuple(row[:-1]) for row in rows if _trial(row, params) == last}


def _lines(rows: list[dict[str, Any]], header: list[str]) -> list[str]:
    """Each row as its CSV line, quoted and ended as the csv module writes it."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=header, extrasaction="raise")
    lines = []
    for row in rows:
        writer.writerow(row)
        lines.append(buffer.getvalue())
        buffer.seek(0)
        buffer.truncate()
    return lines


@contextlib.contextmanager
def _naming(path: Path) -> Iterator[None]:
    """Name ``path`` in an OSError that names no file: a full disk fails a write with an
    error that does not say which file it was."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            exc.filename = os.fspath(path)
        raise


def run(name: str, out: Path, *, trials: int | None = None, quick: bool = False, jobs: int = 1,
        progress: bool = True) -> Path:
    """Run (or resume) an experiment, appending each finished trial to its CSV.

    Each trial's rows go to the file in one unbuffered write, so that an interruption keeps
    every finished trial whole. A resumed run first cuts a last line torn by an interrupted
    write and runs the last trial written again, appending only the rows it lacks.

    Parameters
    ----------
    name : str
        The experiment (see ``dpmean reproduce --list``).
    out : Path
        The folder of the CSV; it must exist.
    trials : int, optional
        Trials per setting; default the spec's.
    quick : bool, default False
        Run the spec's ``--quick`` variant, into ``NAME-quick.csv``.
    jobs : int, default 1
        Worker processes.
    progress : bool, default True
        Show a progress bar on stderr when it is a terminal.

    Returns
    -------
    Path
        The CSV, ``csv_path(name, out, quick)``.
    """
    spec = get_spec(name, quick)
    trials = spec.trials if trials is None else trials
    header = columns(spec)
    params = header[:-3 - len(spec.extra)]
    path = csv_path(name, out, quick)
    content, torn = _split_torn(path.read_bytes() if path.exists() else b"", len(header))
    if torn:  # appends must start on a line of their own
        os.truncate(path, len(content))
    # The last trial written is run again whether or not a line was torn: a write cut short
    # at a line's end (a full disk) leaves a trial short of rows with nothing torn to see.
    done, kept = _finished(content, True, header, params)
    # Trial-major: an interrupted run leaves every setting with about as many trials, so its
    # partial CSV already draws every point of the figure.
    todo = [(i, t) for t in range(trials) for i, setting in enumerate(spec.settings)
            if (_key(setting, params), t) not in done]
    # Unbuffered: every write reaches the OS at once, and closing has nothing left to write
    # (a buffer would retry a failed write at close, with an error that names no file).
    with (path.open("ab", buffering=0) as f,
          # disable=None: a bar on a terminal, nothing in a log or a pipe (a redirected run
          # wrote every update of the bar into its log).
          tqdm(total=len(todo), desc=name, unit="trial",
               disable=None if progress else True) as bar,
          contextlib.closing(_results(name, quick, todo, jobs)) as results):
        if not content:
            _append(f, path, _lines([dict(zip(header, header, strict=True))], header))
        for task_rows in results:
            _append(f, path, [line for line in _lines(task_rows, header)
                              if tuple(_fields(line)[:-1]) not in kept])
            bar.update()
    return path


def _append(f: io.FileIO, path: Path, lines: list[str]) -> None:
    """Append a trial's lines in one write: the trial reaches the file whole or, if the
    process dies inside the write, as a torn last line that the next run cuts. (No fsync: a
    killed process loses nothing written, and a sync per trial would cost more than a quick
    trial.)"""
    data = "".join(lines).encode("utf-8")
    with _naming(path):
        while data:  # a short write (a disk filling up) is followed by the error
            data = data[f.write(data):]


def _one_blas_thread() -> None:
    """Worker initialiser: one BLAS thread per worker process, since the workers already use
    every core (two-thread BLAS in two workers on two cores made CoinPress's eigendecompositions
    several times slower)."""
    threadpool_limits(1)


def _results(name: str, quick: bool, todo: list[tuple[int, int]],
             jobs: int) -> Generator[list[dict[str, Any]], None, None]:
    if jobs <= 1:
        for i, t in todo:
            yield run_task(name, quick, i, t)
        return
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_one_blas_thread)
    try:
        futures = [pool.submit(run_task, name, quick, i, t) for i, t in todo]
        for future in as_completed(futures):
            yield future.result()
    finally:
        # On an interrupt or an error, drop the queued trials: shutting down with them would
        # run every one before the command could stop.
        pool.shutdown(cancel_futures=True)


def reproduce(name: str, out: Path, *, trials: int | None = None, quick: bool = False,
              jobs: int = 1, progress: bool = True) -> tuple[Path, Path, Path]:
    """Run (or resume) an experiment into ``out`` and write its plot and markdown summary.

    Parameters
    ----------
    name, trials, quick, jobs, progress
        As for :func:`run`.
    out : Path
        The folder, created if needed.

    Returns
    -------
    tuple of Path
        The CSV, the PNG and the markdown summary.

    Raises
    ------
    OSError
        When a file cannot be read or written; it names the file.
    """
    from ..io import write_text_atomic
    from .report import aggregate, plot, summary

    spec = get_spec(name, quick)
    out.mkdir(parents=True, exist_ok=True)
    path = run(name, out, trials=trials, quick=quick, jobs=jobs, progress=progress)
    stats = aggregate(spec, path)
    png, md = path.with_suffix(".png"), path.with_suffix(".md")
    # Each written whole or not at all: an interruption keeps the previous plot and summary.
    with _naming(png):
        plot(spec, stats, png)
    with _naming(md):
        write_text_atomic(md, summary(spec, stats, path, png))
    return path, png, md
