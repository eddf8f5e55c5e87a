"""``dpmean estimate``: a private mean of the rows of a data file, as a summary and JSON.

The estimator is built from public values only (flags, file name and size, the input's layout:
its header, schema or array header) and, with ``--ledger``, charged to the ledger file before
any value of the data is read. Everything that can be refused without reading a value (the
file, its format, the flags, the columns, the array's type, the Dask scheduler, the output
path) is refused before the charge, at no cost; a failure after it stays charged. The library
(numpy, the estimators, the readers) is imported by the functions that run the command, not by
the parser.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TextIO

from ..engine_names import ENGINES
from ..errors import DPMeanError, InsufficientDataWarning, InvalidDataError
from ..registry import ESTIMATORS
from .arguments import (
    UsageError,
    add_bounds_arguments,
    add_budget_arguments,
    add_level_argument,
    add_method_argument,
    add_option_argument,
    add_output_arguments,
    add_seed_argument,
    bounds_from,
    bounds_names,
    budget_from,
    check_ranges,
    check_writable,
    fill_pair,
    fill_values,
    input_columns,
    insufficient_data_error,
    parse_options,
    printing,
    table_options,
    write_file,
    write_stdout,
)
from .output import describe, digits_to_resolve, format_level, format_values, json_default

if TYPE_CHECKING:

    from ..result import MeanResult
    from ..session import Session

# Files above this size are read by the chunked engine unless --engine says otherwise: the
# in-memory engine would hold the data plus IOME's rotated copy (about 2x the file).
CHUNKED_ABOVE_BYTES = 1 << 30
# Seconds ``--scheduler`` waits for the scheduler to have a worker, before the charge: a
# scheduler without workers takes a release's tasks and never runs them (the ledger's entry
# stayed "reserved" while the command waited forever).
SCHEDULER_WORKERS_TIMEOUT = 30.0
# Seconds between two questions to the scheduler, during a release on it, of how many workers it
# has (``_workers_watched``): one small request, beside the release's own.
_WORKERS_POLL = 1.0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``estimate`` command to the ``dpmean`` parser.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subparsers of the top-level parser.
    """
    p = sub.add_parser(
        "estimate",
        help="release a private mean of the rows of a data file",
        description="Release a differentially private mean of the rows of INPUT "
        "(.npy, .npz, .csv with optional header, .parquet, or .dat baskets). Give the budget as "
        "--rho (zCDP) or as --epsilon with --delta, and the public range of the data with "
        "--bounds LO HI (the same for every column), --bounds-file (one range per column) or "
        "--range NAME=LO:HI (a table's columns by name). "
        "The range must be chosen without looking at the data; values outside are clamped, "
        "columns of unequal ranges are estimated each in proportion to its range, and the "
        "release is projected into the range. Without a range, 10% of a rho budget finds one "
        "privately (.dat baskets, 0/1 by their format, take (0, 1)).",
    )
    # The order of the calls is the order of the flags in the help and usage lines.
    p.add_argument("input", metavar="INPUT", help="the data file (rows are people)")
    add_budget_arguments(p, "the release's")
    add_method_argument(p)
    add_bounds_arguments(p)
    add_seed_argument(p)
    p.add_argument("--key", metavar="K", help="the array to use from an .npz INPUT")
    p.add_argument("--items", type=int, metavar="D",
                   help="for a .dat basket INPUT (required for one): the public number of "
                   "items, the length d of the released mean; item ids must lie in 0..D-1 "
                   "(ids 1..K need D = K + 1; a larger id is an error). Never read from the "
                   "data, where one basket could change it. Baskets are 0/1 by their format, "
                   "so their box is (0, 1) without --bounds (no budget buys one). Baskets run "
                   "on the sparse engine with every method that supports it; the others "
                   "(e.g. trimmed) run with --engine chunked")
    table = p.add_argument_group(
        "tables (.csv, .parquet)",
        "CSV files are read by pyarrow (quoted cells; blank lines skipped). The first line is "
        "a header when none of its cells is a number, and data when all of them are; a first "
        "line that mixes numbers with text or empty cells is refused: say which it is with "
        "--header or --no-header (a guess from the values would make n and the column names "
        "depend on one row). "
        "An empty first header cell (pandas' to_csv() index) marks an index column, which is "
        "dropped. The JSON output names the columns.")
    table.add_argument("--columns", metavar="A,B,...", type=_names,
                       help="use these columns, by header name, in this order (default: all, "
                       "each numeric); the others may hold text")
    table.add_argument("--delimiter", metavar="C",
                       help="the CSV delimiter, one character no number holds (default: "
                       "sniffed from the first line among comma, tab, ';' and '|'); "
                       "--delimiter tab for a tab")
    table.add_argument("--decimal", choices=(".", ","),
                       help="the CSV decimal mark (default '.'); ',' for numbers written 1,5, "
                       "as European spreadsheets write them, with ';' between cells")
    table.add_argument("--header", action=argparse.BooleanOptionalAction, default=None,
                       help="the first CSV line is a header (--header) or data (--no-header); "
                       "default: a header when none of its cells is a number, data when all "
                       "are, an error when it mixes numbers with text or empty cells. A header "
                       "with a name that is a number (pandas' 0,1,2) is refused even with "
                       "--header: it cannot be told from a person's row; without a flag such "
                       "a line is read as data (name the columns before writing the file)")
    table.add_argument("--index-col", action="store_true", default=None,
                       help="drop the first CSV column (an index), whatever its header cell")
    table.add_argument("--fill", metavar="NAME=VALUE", type=fill_pair, action="append",
                       help="a public value for the missing cells of column NAME (an empty "
                       "CSV cell, a Parquet null, a NaN), chosen without looking at the data; "
                       "repeat for other columns (one --columns leaves out is unused, as a "
                       "--range for it). n is unchanged and the count of cells filled "
                       "is not reported. Without it an empty cell is refused (after the "
                       "charge, as the rows are read)")
    add_output_arguments(p)
    add_level_argument(p, "the confidence interval of each coordinate and of the l2 radius "
                       "printed and written with the release")
    add_option_argument(p)
    p.add_argument("--p", type=float, metavar="P",
                   help="the lp error to target, for estimators that take it (plan: 2 for l2, "
                   "the default; 1 for l1, e.g. on baskets)")
    p.add_argument("--engine", choices=ENGINES,
                   help="how the data is read: memory, chunked (bounded row chunks, one pass per "
                   "aggregate; chosen automatically for .npy/.csv/.parquet files above "
                   f"{CHUNKED_ABOVE_BYTES >> 30} GiB of float64 values: a Parquet file's "
                   "rows x columns from its metadata, a large CSV file's rows counted; and "
                   "files whose rows as float64 would not fit in memory three times), sparse "
                   "(.dat/.npz sparse input, any "
                   "method that supports it), dask (a dask.distributed cluster, see --scheduler)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="a dask.distributed scheduler, e.g. tcp://host:8786 (implies --engine "
                   "dask; needs pip install \"dpmean[dask]\"). A scheduler without a worker "
                   f"{SCHEDULER_WORKERS_TIMEOUT:g} s after connecting, or whose workers run "
                   "another dpmean, is refused before --ledger is charged; one without a worker "
                   "for as long during the release ends it, charged")
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar (shown on stderr, when it is a terminal, for releases "
                   "longer than about two seconds: one step per pass over the data)")
    p.add_argument("--ledger", metavar="FILE",
                   help="charge this release to a ledger file (see 'dpmean ledger init'): "
                   "refused, before the data is read and with nothing written, if it would "
                   "overspend the ledger's budget. Errors found before the charge (the file, "
                   "its format and flags, --output) cost nothing; a release that fails after "
                   "it stays charged, as failed")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Release the mean, print the summary, write the JSON.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``estimate`` arguments.

    Returns
    -------
    int
        0; every failure raises (``UsageError``, ``DPMeanError``, ``InsufficientDataWarning``)
        and ``dpmean.cli.main`` turns it into one error line.
    """
    from .. import ledger_file
    from ..api import build_estimator

    with _uncharged(args):
        budget = budget_from(args)
        options = _estimator_options(args)
        output = None if args.output is None else check_writable(
            args.output, {"INPUT": args.input, "the --ledger file": args.ledger,
                          # (replaced while held, it would lock nothing: second review)
                          "the --ledger file's lock": None if args.ledger is None else
                          str(ledger_file.lock_file(args.ledger)),
                          "the --bounds-file": args.bounds_file}, replace=args.force)
        if args.ledger is not None:
            # A missing or corrupt ledger is found before anything else is opened.
            ledger_file.read(args.ledger)
        layout = _input_layout(args)
        engine = _choose_engine(args, layout)
        if engine is not None:
            options["engine"] = engine
        # Built from public values only: its budget is what a ledger is charged, before any
        # value of the data is read.
        estimator = build_estimator(args.method, **budget, bounds=_bounds(args, layout),
                                    random_state=args.seed, **options)
        _check_input_type(args, estimator, engine, layout)
    result, session, index = _release(args, estimator, engine, layout)
    payload = result.to_dict(level=args.level)
    if "epsilon" in budget:
        payload["epsilon"] = budget["epsilon"]
        payload["delta"] = budget["delta"]
    # A seeded release's noise is reproducible by anyone who has the seed: the file says so,
    # not only the terminal (a shared file could not be told from a private release: a trial).
    payload["seeded"] = args.seed is not None
    text = json.dumps(payload, indent=2, default=json_default) + "\n"
    # What an error from here on must say: the release was made (and charged) all the same.
    done = [f"charged to the ledger {args.ledger} as release #{index}"] if index is not None else []
    if output is not None:
        try:
            write_file(output, text)
        except UsageError as exc:
            exc.add_note(_made(done) + ", but its result is lost")
            raise
        done.append(f"written to {output}")
    with printing(_made(done)):
        if args.json:
            write_stdout(text)
        # Without --json the summary is the result: gathered, then written whole by
        # write_stdout, which notices a full disk that print's short write did not.
        summary_to = sys.stderr if args.json else io.StringIO()
        _print_summary(result, budget, args, output, summary_to)
        if session is not None:
            print(f"charged to ledger {args.ledger} as release #{index} ({result.spent:.6g} "
                  f"{result.unit}); the ledger: {session.spent:.6g} {session.unit} of "
                  f"{session.budget} spent in all, {session.remaining:.6g} remaining",
                  file=summary_to)
        if isinstance(summary_to, io.StringIO):
            write_stdout(summary_to.getvalue())
    return 0


def _made(done: list[str]) -> str:
    """What an error after the release says of it: it was made, and ``done`` with it."""
    return "the release was made" + (f", {' and '.join(done)}" if done else "")


@contextlib.contextmanager
def _uncharged(args: argparse.Namespace) -> Iterator[None]:
    """The steps before the ledger is charged: an error in them says it cost nothing."""
    try:
        yield
    except (UsageError, DPMeanError) as exc:
        if args.ledger is not None:
            exc.add_note("nothing was charged to the ledger")
        raise


def _estimator_options(args: argparse.Namespace) -> dict[str, Any]:
    options = parse_options(args.option)
    if "engine" in options:
        # --option engine=X is --engine X: the input is then opened for that engine too (the
        # diff review: a .dat file with --option engine=memory was opened sparse and refused,
        # where --engine memory reads it densely).
        if args.engine is not None:
            raise UsageError("give the engine once: --engine or --option engine=..., not both")
        args.engine = str(options.pop("engine"))
    if args.p is not None:
        if "p" in options:
            raise UsageError("give p once: --p or --option p=..., not both")
        from ..api import method_options
        from ..registry import available_methods

        if "p" not in method_options(args.method):
            takers = [name for name in available_methods() if "p" in method_options(name)]
            raise UsageError(f"--p is for the estimators that target an lp error "
                             f"({', '.join(takers)}); method {args.method!r} does not take it")
        options["p"] = args.p
    return options


def _bounds(args: argparse.Namespace, layout: _Layout) -> tuple[Any, Any] | None:
    # No bounds is for the methods with other public inputs (coinpress, iome-gaussian); the
    # others refuse it with the library's explanation. A .dat basket file is 0/1 by its format,
    # so its box is (0, 1) without looking at the data.
    bounds = bounds_from(args)
    if bounds is None and Path(args.input).suffix.lower() == ".dat":
        return (0.0, 1.0)
    if bounds is None:
        return None
    named = bounds_names(args)
    if named is not None:
        bounds = _bounds_by_name(args, bounds, named, layout.names)
    else:
        # Positional ranges are the data's columns in order: exactly one each (a (2, 1) file
        # is not stretched over d columns, which --bounds LO HI says on purpose).
        columns = f"{layout.d} column{'s' if layout.d != 1 else ''}"
        check_ranges(args, bounds, layout.d, f"--columns selects {columns}" if args.columns
                     else f"{args.input} has {columns}")
    # Public values, judged here, before the charge: the estimator judged them when it ran,
    # after it for input whose rows are counted (CSV), so a range typed hi:lo cost a release.
    from ..validation import check_bounds

    check_bounds(bounds, layout.d, layout.names)
    _warn_fills_outside(args, bounds, layout)
    return bounds


def _warn_fills_outside(args: argparse.Namespace, bounds: tuple[Any, Any],
                        layout: _Layout) -> None:
    """Say, before anything is read, where a --fill value lies outside its column's range: the
    filled cells are then clamped to the range's end like any value beyond it, so a sentinel
    (-1 for a missing age in 0:120) becomes the range's end (a user trial). Public values."""
    import warnings

    import numpy as np

    fills = fill_values(getattr(args, "fill", None)) or {}
    if not fills or layout.names is None:
        return
    lo = np.broadcast_to(np.asarray(bounds[0], dtype=np.float64), (layout.d,))
    hi = np.broadcast_to(np.asarray(bounds[1], dtype=np.float64), (layout.d,))
    for name, value in fills.items():
        if name in layout.names:
            j = layout.names.index(name)
            if not lo[j] <= value <= hi[j]:
                warnings.warn(f"--fill {name}={value:g} lies outside the column's range "
                              f"{lo[j]:g}:{hi[j]:g}: its filled cells are clamped to "
                              f"{min(max(value, lo[j]), hi[j]):g}, as any value beyond the "
                              f"range is", UserWarning, stacklevel=2)


def _bounds_by_name(args: argparse.Namespace, bounds: tuple[Any, Any], named: list[str],
                    data_names: tuple[str, ...] | None) -> tuple[Any, Any]:
    """Ranges given by column name (--range, or a bounds file with a CSV header or Parquet
    schema) matched to INPUT's columns by name (``data_names``, from its header or schema:
    layout only, no rows read): their order need not be the data's, and columns the data does
    not use are ignored. INPUT without names is refused: matching names to positions would
    be a guess."""
    import numpy as np

    from ..validation import range_owners

    source = args.bounds_file or "--range"
    if data_names is None:
        if args.bounds_file:
            raise UsageError(f"the bounds file {args.bounds_file} names its columns but "
                             f"{args.input} has none; give a bounds file without a header "
                             f"(a (2, d) array in the data's column order), or --bounds")
        guessed = Path(args.input).suffix.lower() == ".csv" and args.header is None
        numbers = ("; its first line is all numbers, so it is read as a row (a header of "
                   "numbers, such as pandas' 0,1,2, cannot be told from a person's values: "
                   "give the columns names with letters)" if guessed else "")
        raise UsageError(f"--range names columns, but {args.input} has none{numbers}. Use "
                         f"--bounds-file or --bounds, which take the columns in order")
    where = {name: i for i, name in enumerate(named)}
    owners, missing = range_owners(data_names, where)
    if missing:
        # Names given a range that the release does not use (names are public, never a
        # value): usually the missing column's name, mistyped.
        unknown = [name for name in named if name not in owners]
        # A name that is no column of INPUT at all is a typo; one --columns left out is not.
        everything = set(input_columns(args) or ()) if args.columns else set()
        chosen = ("the chosen columns (--columns)" if args.columns
                  else f"the columns of {args.input}")
        also = "".join(
            f"; {source} names {', '.join(repr(name) for name in group[:5])}"
            f"{' ...' if len(group) > 5 else ''}, not one of {scope}"
            for group, scope in (([n for n in unknown if n in everything], chosen),
                                  ([n for n in unknown if n not in everything],
                                   f"the columns of {args.input}" if args.columns else chosen))
            if group)
        raise UsageError(
            f"{source} names its columns but has no range for "
            f"{', '.join(map(repr, missing[:5]))}{' ...' if len(missing) > 5 else ''} (columns of "
            f"{args.input}){also}; give every column a range, by name")
    order = np.array([where[str(owner)] for owner in owners])
    lo, hi = bounds
    return np.asarray(lo)[order], np.asarray(hi)[order]


def _release(args: argparse.Namespace, estimator: Any, engine: str | None,
             layout: _Layout) -> tuple[MeanResult, Session | None, int | None]:
    """Run the estimator on INPUT, charged to --ledger first when one is given."""
    from .. import ledger_file
    from ..progress import shown_passes
    from ..session import ShapeOnly, granted_for, release_events

    index = None
    with contextlib.ExitStack() as stack:
        x = None
        with _uncharged(args):
            # Connected before the charge: an unreachable scheduler, or one without
            # workers, is not a release.
            client = stack.enter_context(_dask_client(args.scheduler))
            ext = Path(args.input).suffix.lower()
            n, baskets = layout.n, layout.sparse or ext == ".dat"
            if n is None and ext in (".csv", ".dat") and (
                    args.ledger is not None or estimator.calibrates_to_shape()):
                # n counted without judging a value (reading the rows here refused a bad
                # cell before the charge: a free, repeatable question about the data).
                n = _counted_rows(args)
            if estimator.calibrates_to_shape():
                # An (epsilon, delta) budget calibrated to the plan for the input's (public)
                # shape, so that the ledger is charged what will run: from the header where
                # it records the shape, else (CSV and basket files) the rows are counted.
                if layout.n is not None and not layout.sparse:
                    estimator = granted_for(estimator, ShapeOnly((layout.n, layout.d)))
                elif ext in (".csv", ".dat"):  # counted above
                    assert n is not None
                    estimator = estimator.granted(n, layout.d, baskets)
                else:
                    with _cluster_errors(args.scheduler, client):
                        x = _open_input(args, engine)
                    estimator = granted_for(estimator, x)
            if n is not None and engine == "memory":
                # A file read whole must fit (public: n, d, the machine): refused here, free.
                from ..engines import check_whole_read_fits

                check_whole_read_fits(n, layout.d, engine, baskets)
            if n is not None and layout.n is None:
                # n counted just now: the input's checks that need it (options that ask the
                # sparse engine column questions), before the charge.
                _check_input_type(args, estimator, engine, layout, n)
            if n is not None:
                # Too few rows for the budget is a question of public values (n from the
                # header or counted, d, the box, the budget): refused here, it costs nothing
                # (a CSV file's was charged, then refused: review).
                reason = estimator.fallback_reason(n, layout.d, baskets)
                if reason is not None:
                    raise insufficient_data_error(InsufficientDataWarning(reason))
        if args.ledger is not None:
            from ..rng import seed_digest  # numpy: not at the command's start-up

            # A refusal (over the budget, a changed or broken file) charges nothing.
            with _uncharged(args):
                index, _ = ledger_file.reserve(args.ledger, estimator.method,
                                               estimator.budget, release_events(estimator),
                                               _release_label(args), seed_digest(args.seed))
        try:
            with _cluster_errors(args.scheduler, client):
                if x is None:
                    x = _open_input(args, engine)
                with warnings.catch_warnings():
                    warnings.simplefilter("error", InsufficientDataWarning)
                    try:
                        with shown_passes(f"dpmean estimate ({estimator.method})",
                                          quiet=args.quiet):
                            result = estimator.estimate(x)
                    except InsufficientDataWarning as exc:
                        raise insufficient_data_error(exc) from None
                    except InvalidDataError as exc:
                        raise _naming_input(args, exc) from None
        except BaseException as exc:
            if index is not None:
                # The data may have been read: the release stays charged, as failed.
                with contextlib.suppress(DPMeanError):
                    ledger_file.settle(args.ledger, index, "failed")
                exc.add_note(f"release #{index} stays charged to the ledger {args.ledger}, as "
                             f"failed: the data may have been read, and a failure can depend "
                             f"on it")
            raise
    session = None
    if index is not None:
        try:
            session = ledger_file.settle(args.ledger, index, "released", result.spent)
        except (UsageError, DPMeanError, OSError) as exc:
            # The release was made and is charged in full (its entry stays reserved); the
            # error said only that the ledger could not be written (a review).
            exc.add_note(f"the release was made and stays charged to the ledger "
                         f"{args.ledger} as release #{index} (reserved: counted in full), "
                         f"but its result is lost")
            raise
    return result, session, index


def _naming_input(args: argparse.Namespace, exc: InvalidDataError) -> InvalidDataError:
    """``exc`` as it names INPUT: itself where the reader named the file already."""
    if str(exc).startswith(f"{args.input}: "):
        return exc
    return InvalidDataError(f"{args.input}: {exc}")


def _check_input_type(args: argparse.Namespace, estimator: Any, engine: str | None,
                      layout: _Layout, n: int | None = None) -> None:
    """Refuse, before the charge, what the release refuses by the type of the input its
    reader gives (``session.check_input_type`` on a stand-in of that type, from the layout):
    sparse input the method does not take, an engine for the other kind of input, a sparse
    archive whose values are not real. The release refused them after the charge, which
    the help of --ledger says they cost nothing (a trial)."""
    from ..session import check_input_type

    try:
        check_input_type(estimator, _stand_in(args, engine, layout), layout.d,
                         layout.n if n is None else n)
    except InvalidDataError as exc:
        raise _naming_input(args, exc) from None


def _stand_in(args: argparse.Namespace, engine: str | None, layout: _Layout) -> Any:
    """A row of zeros of the type ``_open_input`` gives for INPUT and ``engine`` (its dtype
    from the array's header): a scipy.sparse matrix for a sparse archive, and for baskets
    read by the sparse engine; an array for a .npy or .npz array; None for the rest (tables,
    and baskets read densely), whose values are read as float64."""
    import numpy as np
    import scipy.sparse

    ext = Path(args.input).suffix.lower()
    if layout.sparse or (ext == ".dat" and engine in (None, "sparse")):
        if layout.dtype is not None and np.dtype(layout.dtype).kind in "OUSV":
            # Refused from the type alone, before the charge (text values: scipy refused the
            # stand-in and a float one stood in, so the release was charged; the diff review).
            from ..io import check_numeric_dtype

            check_numeric_dtype(Path(args.input), np.dtype(layout.dtype), "sparse data ")
        try:
            return scipy.sparse.csr_matrix((1, layout.d), dtype=layout.dtype or np.float64)
        except (TypeError, ValueError):  # a type scipy does not take: its reader refuses it
            return scipy.sparse.csr_matrix((1, layout.d))
    if layout.dtype is not None:
        return np.zeros((1, layout.d), dtype=layout.dtype)
    return None


def _release_label(args: argparse.Namespace) -> str:
    """What the ledger records of a release, for an audit (``Release.label``): the input, the
    columns asked for, the output file and the time (UTC). Public: nothing of the data."""
    from datetime import UTC, datetime

    label = os.path.abspath(args.input)
    if args.columns is not None:
        label += f" columns {','.join(args.columns)}"
    if args.output is not None:
        label += f" -> {os.path.abspath(args.output)}"
    return f"{label}, {datetime.now(UTC).isoformat(timespec='seconds')}"


def _choose_engine(args: argparse.Namespace, layout: _Layout) -> str | None:
    """--engine, else dask with --scheduler, else chunked for a chunkable file whose data
    takes more than ``CHUNKED_ABOVE_BYTES``: its rows times columns as float64 (a Parquet
    file's from its metadata: compressed, a 486 MB file of 28 million rows x 6 held 1.3 GB and
    took 6.9 GB on the memory engine, a user trial; a CSV file's rows counted, without reading
    a value, where its cells could take that much: one-digit cells take 4 times their bytes),
    a ``.npy`` file's size (its rows times columns times the dtype's size). Public: the
    layout and the number of rows, never the bytes that the values take (a review: one cell
    written with more digits moved a file across the threshold, and the chunked engine's clip
    residual differs from the memory engine's by rounding)."""
    if args.scheduler is not None and args.engine not in (None, "dask"):
        raise UsageError(f"--scheduler runs on the dask engine, not --engine {args.engine}")
    if args.engine is not None or args.scheduler is not None:
        return args.engine or "dask"
    path = Path(args.input)
    ext = path.suffix.lower()
    if ext not in (".npy", ".csv", ".parquet") or not path.is_file():
        return None
    size = path.stat().st_size
    memory = _memory_limit()
    if ext == ".csv":
        # A CSV file's rows, counted only where they could take that much; elsewhere they
        # cannot, so the choice is the same as counting would give.
        could = size * _CSV_EXPANSION > min(CHUNKED_ABOVE_BYTES, memory)
        floats = _counted_rows(args) * layout.d * 8 if could else 0
    else:
        floats = size if layout.n is None else layout.n * layout.d * 8
    # The threshold reads a .npy file's own size (small integers take a byte a value), the
    # others' as float64; the memory engine's peak, the data as float64.
    sized = size if ext == ".npy" else floats
    return "chunked" if sized > CHUNKED_ABOVE_BYTES or floats > memory else None


# What the memory engine may take, as a multiple of the data as float64: PLAN keeps a rotated
# copy (d padded to a power of two) and the pairs' differences (n/2 x d) beside the rows; an
# 800 MB file with 2.5 GB to give ran out of memory after the ledger's charge (a review).
MEMORY_ENGINE_PEAK = 3


def _memory_limit() -> float:
    """The most data, as float64, the memory engine should read whole: 1 / ``MEMORY_ENGINE_PEAK``
    of the memory this process may still take (``engines.available_memory``; infinite where
    that is not told). The machine's memory is not the data's, and the engines' releases
    differ only by rounding: the choice tells nothing of the rows."""
    from ..engines import available_memory

    free = available_memory()
    return math.inf if free is None else free / MEMORY_ENGINE_PEAK


# The most a CSV cell's bytes grow as float64: a row of d cells takes at least 2d bytes (a
# character and a delimiter or line end a cell) and d x 8 as float64.
_CSV_EXPANSION = 4


# The flags of one input format, and the formats they apply to.
_FORMAT_FLAGS = {"items": (".dat",), "columns": (".csv", ".parquet"), "delimiter": (".csv",),
                 "header": (".csv",), "index_col": (".csv",), "decimal": (".csv",),
                 "fill": (".csv", ".parquet"),
                 "key": (".npz",)}


def _names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected comma-separated column names, got {text!r}")
    return names


def _check_input_flags(args: argparse.Namespace) -> None:
    ext = Path(args.input).suffix.lower()
    for name, formats in _FORMAT_FLAGS.items():
        if getattr(args, name, None) is not None and ext not in formats:
            flag = "--" + name.replace("_", "-")
            raise UsageError(f"{flag} applies to {' and '.join(formats)} files; INPUT is not "
                             f"one")
    # Without an engine (--scheduler implies dask) a .dat file runs on the sparse engine.
    if ext == ".dat" and args.engine is None and args.scheduler is None:
        cls = ESTIMATORS.get(args.method)
        if cls is not None and not cls.supports_sparse:
            able = sorted(m for m, c in ESTIMATORS.items() if c.supports_sparse)
            raise UsageError(
                f"method {args.method!r} does not run on .dat baskets as sparse rows (their "
                f"default, the sparse engine): add --engine chunked to read them densely, in "
                f"row chunks (the release a dense .npy copy gets), or use --method "
                f"{' or '.join(able)}")


def _open_input(args: argparse.Namespace, engine: str | None) -> Any:
    """The data as the engine reads it: a row source, a dask array, a table (named columns)
    or an array loaded in memory."""
    from ..engines import open_source
    from ..io import load_data, open_table

    _check_input_flags(args)
    ext = Path(args.input).suffix.lower()
    # The readers refuse a .dat file without --items, with the reason.
    items = {"n_items": args.items} if ext == ".dat" else {}
    tables = table_options(args) if ext in (".csv", ".parquet") else {}
    if ext == ".dat" and engine in ("memory", "chunked", "dask"):
        # A basket source on every dense engine (the memory and dask engines read it whole):
        # baskets by format, so PLAN's and auto's basket forms (Engine.baskets).
        return open_source(args.input, **items)
    if engine in ("chunked", "dask") and ext != ".npz":
        if engine == "chunked":
            return open_source(args.input, **items, **tables)
        try:
            from ..engines.dask import dask_array_from_file
        except ImportError:
            raise UsageError('--engine dask needs dask: pip install "dpmean[dask]"') from None
        return dask_array_from_file(args.input, **items, **tables)
    if tables:
        table = open_table(args.input, **tables)
        # A table keeps its names into the result; a CSV file without a header has none.
        # Either is checked as a file's cells are (a NaN cell was told apart from an empty
        # one by the estimators' own message, its column counted from 0: a trial).
        return table.table() if table.names is not None else table.read(check=True)
    return load_data(args.input, key=args.key, **items)


def _counted_rows(args: argparse.Namespace) -> int:
    """The number of rows of a CSV or basket file, counted without reading a value
    (``CsvTable.count_rows``, ``BasketFile.count``)."""
    from ..io import BasketFile
    from ..tables import CsvTable

    path = Path(args.input)
    if path.suffix.lower() == ".dat":
        return BasketFile(path, args.items).count()
    n = CsvTable(path, **table_options(args)).count_rows()
    if n == 0:
        raise InvalidDataError(f"{path}: the file holds a header line but no rows")
    return n


@dataclass(frozen=True)
class _Layout:
    """INPUT as its layout gives it, before any value is read: its number of columns, its
    number of rows where the file records it (an array header, Parquet metadata), its column
    names (a CSV header, a Parquet schema), and whether it is a scipy.sparse archive."""

    d: int
    n: int | None = None
    names: tuple[str, ...] | None = None
    sparse: bool = False
    # The values' type in an array's header (a sparse archive's data), else None.
    dtype: Any = None


def _input_layout(args: argparse.Namespace) -> _Layout:
    """Check INPUT as far as it can be checked without reading a value, and return its layout.

    The readers check these only as they read the rows, after the ledger's charge; here they
    cost nothing: the file (it exists, is a readable, non-empty file of a known format), the
    flags (--items for baskets, --key in the archive, --columns in the header or schema) and
    the type (a numeric array of 1 or 2 dimensions in a .npy or .npz header, numeric Parquet
    columns). A CSV file's cells are numbers or not only when read.
    """
    from ..io import N_ITEMS_WHY, check_n_items, check_readable, open_table

    _check_input_flags(args)
    path = Path(args.input)
    ext = path.suffix.lower()
    if ext == ".dat" and args.items is None:
        # The library's message names its Python readers; here the flag is the way.
        raise UsageError(f"no number of items given: a .dat basket INPUT needs --items D. "
                         f"{N_ITEMS_WHY}")
    if ext in (".csv", ".parquet"):
        table = open_table(path, **table_options(args))
        return _Layout(d=table.width, n=getattr(table, "num_rows", None), names=table.names)
    # Required before the file is touched, as the reader does, with the reason.
    items = check_n_items(args.items) if ext == ".dat" else None
    check_readable(path)
    if items is not None:
        return _Layout(d=items)
    if ext == ".npz":
        return _npz_layout(path, args.key)
    with open(path, "rb") as f:
        if f.read(4) == b"PK\x03\x04":
            raise InvalidDataError(f"{path}: is an .npz archive, not a .npy array; rename it "
                                   f"to .npz")
        f.seek(0)
        layout = _array_layout(path, f, "")
        # The length the header's shape and dtype imply (public, as they are): a file cut
        # short is refused here, before the charge, as the Python API refuses it when it maps
        # the file (a review: the command line charged it and failed in the read).
        needed = f.tell() + (layout.n or 0) * layout.d * layout.dtype.itemsize
        if path.stat().st_size < needed:
            raise InvalidDataError(
                f"{path}: not a valid .npy array (the file is shorter than its header's shape "
                f"and dtype need: was it fully written?)")
        return layout


def _npz_layout(path: Path, key: str | None) -> _Layout:
    """An .npz archive's layout: the array ``key`` chooses (the only one, without a key) from
    its header, or a scipy.sparse matrix's shape (``io.load_data`` reads the same)."""
    import zipfile
    import zlib

    import numpy as np

    from ..io import not_an_npz, npz_member

    try:
        with zipfile.ZipFile(path) as archive:
            # numpy's names for the members: "x.npy" is the array x.
            members = {name.removesuffix(".npy"): name for name in archive.namelist()}
            key = npz_member(path, list(members), key)
            if key is None:
                # scipy.sparse.save_npz keeps the (public) shape as an array of its own, and
                # the values' type in the header of its data.
                with archive.open(members["shape"]) as f:
                    n, d = (int(v) for v in np.lib.format.read_array(f, allow_pickle=False))
                with archive.open(members["data"]) as f:
                    _, dtype = _array_header(path, f, "")
                return _Layout(d=d, n=n, sparse=True, dtype=dtype)
            with archive.open(members[key]) as f:
                return _array_layout(path, f, f"array {key!r} ")
    except InvalidDataError:
        raise
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, TypeError) as exc:
        raise not_an_npz(path, exc) from None


def _array_layout(path: Path, f: IO[bytes], what: str) -> _Layout:
    """The layout in a .npy header (at ``f``'s position): a numeric array of 1 or 2
    dimensions, with at least one row and one column."""
    from ..io import check_numeric_dtype

    shape, dtype = _array_header(path, f, what)
    check_numeric_dtype(path, dtype, what)
    if len(shape) not in (1, 2) or 0 in shape:
        raise InvalidDataError(f"{path}: {what}must hold rows of numbers (1-D or 2-D, at least "
                               f"one row and one column), got shape {shape}")
    return _Layout(d=shape[1] if len(shape) == 2 else 1, n=shape[0], dtype=dtype)


def _array_header(path: Path, f: IO[bytes], what: str) -> tuple[tuple[int, ...], Any]:
    """The shape and dtype in a .npy header (at ``f``'s position)."""
    import numpy as np

    from ..io import NUMPY_LOAD_ERRORS, npy_reason

    try:
        version = np.lib.format.read_magic(f)
        if version not in ((1, 0), (2, 0), (3, 0)):
            # (Read as version 2, another's bytes gave a header length: a review.)
            raise ValueError("format version")
        # Version 3 differs from 2 only in the header's encoding (UTF-8, for the field names
        # of structured dtypes, which are refused below as non-numeric anyway).
        read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                else np.lib.format.read_array_header_2_0)
        shape, _, dtype = read(f)
    except NUMPY_LOAD_ERRORS as exc:
        raise InvalidDataError(f"{path}: {what}not a valid .npy array ({npy_reason(exc)})"
                               ) from None
    if not all(type(size) is int and size >= 0 for size in shape):  # (True is an int)
        raise InvalidDataError(f"{path}: {what}not a valid .npy array (its shape is not of "
                               f"sizes 0 or more)")
    return shape, dtype


@contextlib.contextmanager
def _dask_client(address: str | None) -> Iterator[Any]:
    """A dask.distributed client for the run (it becomes Dask's scheduler) once the scheduler
    has a worker, or nothing. Its event loop's own logs are quiet meanwhile (``_quiet``).

    Made Dask's scheduler inside this context only, not as distributed's default client: a
    default client registers itself before it connects, so one whose address failed to parse
    stayed registered, "connecting", and every later computation of the process waited on it
    forever (``main`` called in-process, as the tests call it: a hang in one run of four)."""
    if address is None:
        yield None
        return
    try:
        from distributed import Client
    except ImportError:
        raise UsageError('--scheduler needs dask.distributed: pip install "dpmean[dask]"') \
            from None
    try:
        client = Client(address, timeout="10s", set_as_default=False)
    except OSError as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    except (ValueError, TypeError) as exc:  # not an address dask can parse
        raise UsageError(f"--scheduler {address!r} is not a Dask scheduler address (e.g. "
                         f"tcp://host:8786): {exc}") from None
    with _quiet(), client:
        try:
            client.wait_for_workers(1, timeout=SCHEDULER_WORKERS_TIMEOUT)
        except OSError as exc:  # TimeoutError, or the scheduler went away meanwhile
            if not isinstance(exc, TimeoutError):
                raise UsageError(f"cannot reach the Dask scheduler at {address}: {exc}") \
                    from None
            raise UsageError(f"the Dask scheduler at {address} has no workers (none joined "
                             f"within {SCHEDULER_WORKERS_TIMEOUT:g} s): start one, e.g. "
                             f"'dask worker {address}'") from None
        _check_same_dpmean(client, address)
        import dask

        # As_current too: before 2025, dask's persist found the cluster only through the
        # current or default client, and brought persisted blocks to this process without it
        # (a review, with dask 2024.12).
        with dask.config.set(scheduler=client), client.as_current():
            yield client


def _check_same_dpmean(client: Any, address: str) -> None:
    """Refuse, before the charge, a scheduler whose workers run another dpmean than this
    command, or none: the release's privacy rests on the code the workers run (a clamp or a
    clip), and another build failed mid-release with a deserialisation traceback."""
    from ..engines.dask import source_digest

    try:
        answers = client.run(source_digest, on_error="return")
    except OSError as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    ours = source_digest()
    silent = {worker: type(answer).__name__ for worker, answer in answers.items()
              if not isinstance(answer, str)}
    if silent:
        # No dpmean (ModuleNotFoundError), one without the digest (AttributeError), or a
        # worker that did not answer.
        raise UsageError(
            f"the Dask workers {', '.join(f'{w} ({why})' for w, why in sorted(silent.items()))} "
            f"of the scheduler at {address} did not say which dpmean they run: install this "
            f"dpmean on every worker and restart them")
    others = sorted(worker for worker, answer in answers.items() if answer != ours)
    if others:
        raise UsageError(
            f"the Dask workers {', '.join(others)} of the scheduler at {address} run another "
            f"dpmean than this command: install the same dpmean on every worker and restart "
            f"them")


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The loggers through which a client's event loop thread reports what the command reports
    itself as one line (a lost scheduler, an interrupted wait), quiet: on Ctrl-C they printed
    tracebacks beside it ("Task exception was never retrieved ... AllExit", and distributed's
    ``sync`` failing to cancel its wait)."""
    import logging

    loggers = [logging.getLogger(name) for name in ("asyncio", "tornado.application",
                                                    "distributed.client")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


@contextlib.contextmanager
def _cluster_errors(address: str | None, client: Any = None) -> Iterator[None]:
    """Steps run on the Dask scheduler at ``address`` through ``client`` (None: no scheduler):
    a scheduler lost (distributed cancels the client's futures or closes its connection), one
    that lost all its workers (``_workers_watched`` cancels them) or another OSError of the
    cluster becomes one error line instead of a traceback; ``_release`` adds whether the
    release stays charged (``_uncharged``, that it cost nothing)."""
    if address is None:
        yield
        return
    from concurrent.futures import CancelledError

    from distributed.comm.core import CommClosedError

    with _workers_watched(client) as lost:
        try:
            yield
        except (CancelledError, CommClosedError, ConnectionError, TimeoutError) as exc:
            if lost.is_set():
                raise UsageError(f"the Dask scheduler at {address} lost all its workers during "
                                 f"the release (none for {SCHEDULER_WORKERS_TIMEOUT:g} s)") \
                    from None
            raise UsageError(f"lost the connection to the Dask scheduler at {address} during "
                             f"the release ({type(exc).__name__}): is it still running?") \
                from None
        except OSError as exc:
            # Its reason and file name only: a message raised on a worker could quote anything.
            reason = "".join(f": {part}" for part in (exc.strerror, exc.filename) if part)
            raise UsageError(f"the release on the Dask scheduler at {address} failed "
                             f"({type(exc).__name__}{reason})") from None


@contextlib.contextmanager
def _workers_watched(client: Any) -> Iterator[threading.Event]:
    """A thread that asks the scheduler for its number of workers every ``_WORKERS_POLL``
    seconds while the steps run, and ends them once it has answered "none" for
    ``SCHEDULER_WORKERS_TIMEOUT`` seconds in a row: it cancels the client's futures, whose
    wait in the main thread raises CancelledError, and sets the event it yields, by which
    ``_cluster_errors`` tells this from a lost scheduler.

    A scheduler whose workers all died keeps their tasks (in state "no-worker") until one
    joins, and the command waited forever; ``distributed.scheduler.no-workers-timeout``, which
    would end them, is the scheduler's setting, not the client's. A worker that restarts within
    the timeout, or an answer that fails (a lost scheduler: ``_cluster_errors`` says so), starts
    the count again. The thread ends with the steps (it is joined, at most one request late).
    """
    lost = threading.Event()
    done = threading.Event()

    def cancel_all() -> None:
        # As distributed does on a lost connection (``Client._reconnect``), in the client's
        # event loop, where its futures' states live: their waits end, as cancelled. The
        # scheduler forgets the tasks when the client releases them or closes.
        for state in list(client.futures.values()):
            state.cancel(reason="lost-all-workers",
                         msg="the scheduler lost all its workers during the release")

    def watch() -> None:
        since = None  # when the scheduler first answered "no worker", since the last one
        while not done.wait(_WORKERS_POLL):
            try:
                if not lost.is_set():
                    # One small request (a worker's address and thread count each), with a
                    # deadline: the thread is joined when the steps end.
                    workers = len(client.nthreads(callback_timeout=5 * _WORKERS_POLL))
                    if workers:
                        since = None
                    elif since is None:
                        since = time.monotonic()
                    elif time.monotonic() - since >= SCHEDULER_WORKERS_TIMEOUT:
                        lost.set()
                if lost.is_set():
                    # At every turn until the steps end: a pass submitted after the first
                    # cancel waits for a worker too.
                    client.loop.add_callback(cancel_all)
            except Exception:  # an unanswered request is no news of the workers
                since = None

    thread = threading.Thread(target=watch, name="dpmean-workers-watched", daemon=True)
    thread.start()
    try:
        yield lost
    finally:
        done.set()
        thread.join()


# ------------------------------------------------------------------------------------ summary


def _print_summary(result: Any, budget: dict[str, float], args: argparse.Namespace,
                   output: Path | None, out: TextIO) -> None:
    from ..intervals import interval_summary

    lines = [
        f"dpmean estimate: method {result.method}, n = {result.n} "
        f"row{'s' if result.n != 1 else ''}, d = {result.d} column{'s' if result.d != 1 else ''}",
        _privacy_line(result),
    ]
    if "epsilon" in budget:
        lines.append(f"  requested as (epsilon, delta) = ({budget['epsilon']:g}, "
                     f"{budget['delta']:g})-DP")
    lines.append(f"ledger ({result.unit} per stage):")
    width = max((len(k) for k in result.ledger), default=0)
    lines += [f"  {stage:<{width}}  {rho:.6g}" for stage, rho in result.ledger.items()]
    if result.diagnostics:
        lines.append("private diagnostics:")
        width = max(len(k) for k in result.diagnostics)
        lines += [f"  {name:<{width}}  {describe(value)}"
                  for name, value in result.diagnostics.items()]
    # Every column of a table of up to 16 (a user trial missed the last two of ten), else 8.
    shown = result.d if result.d <= 16 else 8
    if result.columns is not None:
        lines.append(f"columns (first {shown} of {result.d}): {', '.join(result.columns[:shown])}"
                     f"{' ...' if result.d > shown else ''}")
    ci = interval_summary(result, args.level)
    # Enough digits to tell each interval's ends apart (far from 0, six are not).
    digits = digits_to_resolve(ci["lo"][:shown], ci["hi"][:shown])
    lines.append(f"private mean (first {shown} of {result.d}): "
                 f"{format_values(result.mean[:shown], digits)}"
                 f"{' ...' if result.d > shown else ''}")
    lines.append(f"{format_level(ci['level'])} interval per coordinate ({ci['basis']}): lo "
                 f"{format_values(ci['lo'][:shown], digits)}; hi "
                 f"{format_values(ci['hi'][:shown], digits)}")
    lines.append(f"{format_level(ci['level'])} l2 radius of the whole vector: "
                 f"{ci['radius']:.6g}")
    if _could_profile(result) and ci["basis"] == "noise and clipping bias":
        lines.append("note: the interval's clipping-bias part assumes every row the radius "
                     "search may have clipped lies at the box's farthest corner; without "
                     "--option interval_share=0, 1% of the budget (the default) buys a clip "
                     "profile and residual that narrow it (docs/privacy.md, \"Confidence "
                     "intervals\")")
    if args.seed is not None:
        lines.append("note: --seed makes the noise reproducible; use it for experiments only")
    if output is not None:
        lines.append(f"wrote {output}")
    print("\n".join(lines), file=out)


def _could_profile(result: Any) -> bool:
    """Whether the release's estimator takes ``interval_share`` and spent none on it."""
    from ..estimators.iome import ClippedMean

    method = result.diagnostics.get("chosen") if result.method == "auto" else result.method
    estimator = ESTIMATORS.get(method) if isinstance(method, str) else None
    return (estimator is not None and issubclass(estimator, ClippedMean)
            and "clip_profile" not in result.diagnostics)


def _privacy_line(result: Any) -> str:
    # The budget names its own unit: a rho is only ever printed as a rho.
    budget = result.budget
    line = (f"privacy: {budget.unit} = {result.spent:.6g} spent of {budget.total:.6g} "
            f"({budget.notion})")
    if budget.unit == "epsilon" and budget.delta is not None:
        line += f", delta = {budget.delta:g}"
    if budget.omega is not None:
        line += f", omega = {budget.omega:g}"
    return line
