"""The one runner for every experiment spec: (setting, trial) tasks in parallel processes,
seeded per task, appended to a CSV as they finish so an interrupted run resumes."""

from __future__ import annotations

import csv
from collections.abc import Iterator
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


def _done(path: Path, params: list[str]) -> set[tuple[tuple[str, ...], int]]:
    """(setting key, trial) pairs already in the CSV (rows whose value does not parse are
    skipped)."""
    if not path.exists():
        return set()
    done = set()
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            try:
                float(row["value"])
                done.add((_key(row, params), int(row["trial"])))
            except (TypeError, ValueError, KeyError):
                continue
    return done


def _drop_torn_line(path: Path) -> None:
    """Cut a last line left without its newline by an interrupted write, so appends stay
    aligned."""
    if not path.exists():
        return
    with path.open("rb+") as f:
        content = f.read()
        if content and not content.endswith(b"\n"):
            f.truncate(content.rfind(b"\n") + 1)


def run(name: str, out: Path, *, trials: int | None = None, quick: bool = False, jobs: int = 1,
        progress: bool = True) -> Path:
    """Run (or resume) experiment ``name`` into ``out/NAME[-quick].csv``; return that path."""
    spec = get_spec(name, quick)
    trials = spec.trials if trials is None else trials
    header = columns(spec)
    params = header[:-3 - len(spec.extra)]
    path = out / f"{name}{'-quick' if quick else ''}.csv"
    _drop_torn_line(path)
    done = _done(path, params)
    # Trial-major: an interrupted run leaves every setting with about as many trials, so its
    # partial CSV already draws every point of the figure.
    todo = [(i, t) for t in range(trials) for i, setting in enumerate(spec.settings)
            if (_key(setting, params), t) not in done]
    fresh = not path.exists() or path.stat().st_size == 0
    with path.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=header, extrasaction="raise")
        if fresh:
            writer.writeheader()
        bar = tqdm(total=len(todo), desc=name, unit="trial", disable=not progress)
        for rows in _results(name, quick, todo, jobs):
            writer.writerows(rows)
            f.flush()
            bar.update()
        bar.close()
    return path


def _one_blas_thread() -> None:
    """Worker initialiser: one BLAS thread per worker process, since the workers already use
    every core (two-thread BLAS in two workers on two cores made CoinPress's eigendecompositions
    several times slower)."""
    threadpool_limits(1)


def _results(name: str, quick: bool, todo: list[tuple[int, int]],
             jobs: int) -> Iterator[list[dict[str, Any]]]:
    if jobs <= 1:
        for i, t in todo:
            yield run_task(name, quick, i, t)
        return
    with ProcessPoolExecutor(max_workers=jobs, initializer=_one_blas_thread) as pool:
        futures = [pool.submit(run_task, name, quick, i, t) for i, t in todo]
        for future in as_completed(futures):
            yield future.result()


def reproduce(name: str, out: Path, *, trials: int | None = None, quick: bool = False,
              jobs: int = 1, progress: bool = True) -> tuple[Path, Path, Path]:
    """Run ``name`` into ``out`` and write its plot and markdown summary: (csv, png, md)."""
    from .report import aggregate, plot, summary

    spec = get_spec(name, quick)
    out.mkdir(parents=True, exist_ok=True)
    path = run(name, out, trials=trials, quick=quick, jobs=jobs, progress=progress)
    stats = aggregate(spec, path)
    png, md = path.with_suffix(".png"), path.with_suffix(".md")
    plot(spec, stats, png)
    md.write_text(summary(spec, stats, path, png))
    return path, png, md
