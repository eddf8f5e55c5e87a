"""``dpmean reproduce``: rerun one paper experiment into CSV, PNG and a markdown summary.

The experiments themselves live in ``dpmean.experiments``; their errors are NON-PRIVATE.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .arguments import NON_PRIVATE_HEADER, UsageError
from .interrupts import exit_code, interrupted


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``reproduce`` command to the ``dpmean`` parser.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subparsers of the top-level parser.
    """
    p = sub.add_parser(
        "reproduce",
        help="rerun a paper figure: CSV, PNG and markdown summary (NON-PRIVATE evaluation)",
        description="Run one paper experiment (see --list) with its settings, append each "
        "finished trial to NAME.csv in --out (an interrupted run resumes), then draw NAME.png "
        "and write NAME.md. The errors are NON-PRIVATE: they compare releases to true means.",
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="the experiment to run")
    p.add_argument("--list", action="store_true", help="list the experiments and exit")
    p.add_argument("--trials", type=int, metavar="N",
                   help="trials per setting (default: the paper's count)")
    p.add_argument("--quick", action="store_true",
                   help="a small grid and few trials (minutes, not hours); files NAME-quick.*")
    p.add_argument("--jobs", type=int, default=1, metavar="J",
                   help="worker processes (default: 1)")
    p.add_argument("--out", default="dpmean-results", metavar="DIR",
                   help="folder for the CSV, PNG and summary (default: dpmean-results)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """List the experiments, or run one and print the files it wrote.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``reproduce`` arguments.

    Returns
    -------
    int
        0; 130 when interrupted (128 + the signal's number for SIGTERM and SIGHUP), after
        saying which finished trials the CSV keeps. Bad flags
        and failed reads or writes raise ``UsageError``.
    """
    # Only this command needs the experiment specs: the other commands start without them.
    from ..experiments import SPECS, reproduce

    if args.list:
        width = max(map(len, SPECS))
        for name, spec in SPECS.items():
            print(f"{name:<{width}}  {spec.title}")
        return 0
    _check(args, SPECS)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"cannot write to {out}: it is not a directory")
    try:
        paths = reproduce(args.name, out, trials=args.trials, quick=args.quick, jobs=args.jobs)
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM or SIGHUP (``interrupts``)
        # Said here, not by dpmean.cli.main, whose "nothing was written" is untrue: the CSV
        # keeps every finished trial.
        kept = _kept(args, out)
        stopped = interrupted(exc)
        print(f"dpmean: {stopped}; {kept}; run the same command again to resume" if kept
              else f"dpmean: {stopped} before any trial finished", file=sys.stderr)
        return exit_code(exc)
    except OSError as exc:
        # The file and the system's reason: a full disk is not a folder's permissions.
        kept = _kept(args, out)
        raise UsageError(_os_error(exc) + (f" ({kept}; the same command resumes from them)"
                                           if kept else "")) from None
    print(NON_PRIVATE_HEADER)
    for path in paths:
        print(f"wrote {path}")
    return 0


def _check(args: argparse.Namespace, specs: Mapping[str, Any]) -> None:
    if args.name is None:
        raise UsageError("give an experiment NAME or --list (see 'dpmean reproduce --help')")
    if args.name not in specs:
        raise UsageError(f"unknown experiment {args.name!r}; see 'dpmean reproduce --list'")
    if args.trials is not None and args.trials < 1:
        raise UsageError(f"--trials must be at least 1, got {args.trials}")
    if args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}")


def _os_error(exc: OSError) -> str:
    """``path: reason`` for an OSError (both paths of a rename), the reason alone when it
    names no file."""
    reason = exc.strerror or str(exc)
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    return f"{' -> '.join(paths)}: {reason}" if paths else reason


def _kept(args: argparse.Namespace, out: Path) -> str | None:
    """What a stopped run leaves for the next one, the finished trials in the CSV; None when
    there are none (or the CSV cannot be read)."""
    from ..experiments.runner import csv_path, finished

    try:
        done, total = finished(args.name, out, trials=args.trials, quick=args.quick)
    except OSError:
        return None
    if done == 0:
        return None
    count = f"{done} of {total}" if done < total else f"all {total}"
    return f"{count} trials finished and are kept in {csv_path(args.name, out, args.quick)}"
