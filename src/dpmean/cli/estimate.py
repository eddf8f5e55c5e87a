"""``dpmean estimate``: a private mean of the rows of a data file, as a summary and JSON.

The estimator is built from public values only (flags, file name and size) and, with
``--ledger``, charged to the ledger file before the data is opened. The library (numpy, the
estimators, the readers) is imported by the functions that run the command, not by the parser.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..engine_names import ENGINES
from ..errors import DPMeanError, InsufficientDataWarning, InvalidDataError
from ..registry import ESTIMATORS
from .arguments import (
    UsageError,
    add_bounds_arguments,
    add_budget_arguments,
    add_method_argument,
    add_option_argument,
    add_output_arguments,
    add_seed_argument,
    bounds_from,
    bounds_names,
    budget_from,
    check_writable,
    parse_options,
    write_file,
)
from .output import describe, format_values, json_default

if TYPE_CHECKING:

    from ..result import MeanResult
    from ..session import Session

# Files above this size are read by the chunked engine unless --engine says otherwise: the
# in-memory engine would hold the data plus IOME's rotated copy (about 2x the file).
CHUNKED_ABOVE_BYTES = 1 << 30


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
        "privately.",
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
                   "data, where one basket could change it. Baskets run on the sparse engine "
                   "with every method that supports it")
    table = p.add_argument_group(
        "tables (.csv, .parquet)",
        "CSV files are read by pyarrow (quoted cells; blank lines skipped). The first line is "
        "a header when one of its cells is not a number; a line of numbers is data unless "
        "--header says otherwise (a guess from the values would make n depend on one row). "
        "An empty first header cell (pandas' to_csv() index) marks an index column, which is "
        "dropped. The JSON output names the columns.")
    table.add_argument("--columns", metavar="A,B,...", type=_names,
                       help="use these columns, by header name, in this order (default: all, "
                       "each numeric); the others may hold text")
    table.add_argument("--delimiter", metavar="C",
                       help="the CSV delimiter (default: sniffed from the first line among "
                       "comma, tab, ';' and '|'); --delimiter tab for a tab")
    table.add_argument("--header", action=argparse.BooleanOptionalAction, default=None,
                       help="the first CSV line is a header (--header: needed for names that "
                       "are numbers, e.g. pandas' 0,1,2) or data (--no-header); default: a "
                       "header when one of its cells is not a number")
    table.add_argument("--index-col", action="store_true", default=None,
                       help="drop the first CSV column (an index), whatever its header cell")
    add_output_arguments(p)
    add_option_argument(p)
    p.add_argument("--p", type=float, metavar="P",
                   help="the lp error to target, for estimators that take it (plan: 2 for l2, "
                   "the default; 1 for l1, e.g. on baskets)")
    p.add_argument("--engine", choices=ENGINES,
                   help="how the data is read: memory, chunked (bounded row chunks, one pass per "
                   "aggregate; chosen automatically for .npy/.csv/.parquet files above "
                   f"{CHUNKED_ABOVE_BYTES >> 30} GiB), sparse (.dat/.npz sparse input, any "
                   "method that supports it), dask (a dask.distributed cluster, see --scheduler)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="a dask.distributed scheduler, e.g. tcp://host:8786 (implies --engine "
                   "dask; needs pip install \"dpmean[dask]\")")
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar (shown on stderr, when it is a terminal, for releases "
                   "longer than about two seconds: one step per pass over the data)")
    p.add_argument("--ledger", metavar="FILE",
                   help="charge this release to a ledger file (see 'dpmean ledger init'): "
                   "refused, before the data is read and with nothing written, if it would "
                   "overspend the ledger's budget")
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
    from ..api import build_estimator

    budget = budget_from(args)
    options = _estimator_options(args)
    output = Path(args.output) if args.output else None
    if output is not None:
        check_writable(output)
    engine = _choose_engine(args)
    if engine is not None:
        options["engine"] = engine
    _check_input_flags(args)
    # Built from public values only: its budget is what a ledger is charged, before any data.
    estimator = build_estimator(args.method, **budget, bounds=_bounds(args),
                                random_state=args.seed, **options)
    result, session, index = _release(args, estimator, engine)
    payload = result.to_dict()
    if "epsilon" in budget:
        payload["epsilon"] = budget["epsilon"]
        payload["delta"] = budget["delta"]
    text = json.dumps(payload, indent=2, default=json_default) + "\n"
    if output is not None:
        write_file(output, text)
    summary_to = sys.stderr if args.json else sys.stdout
    if args.json:
        sys.stdout.write(text)
    _print_summary(result, budget, args, output, summary_to)
    if session is not None:
        print(f"charged to ledger {args.ledger} as release #{index}: {session.spent:.6g} "
              f"{session.unit} of {session.budget} spent, {session.remaining:.6g} remaining",
              file=summary_to)
    return 0


def _estimator_options(args: argparse.Namespace) -> dict[str, Any]:
    options = parse_options(args.option)
    if args.p is not None:
        if "p" in options:
            raise UsageError("give p once: --p or --option p=..., not both")
        options["p"] = args.p
    return options


def _bounds(args: argparse.Namespace) -> tuple[Any, Any] | None:
    # No bounds is for the methods with other public inputs (coinpress, iome-gaussian); the
    # others refuse it with the library's explanation. A .dat basket file is 0/1 by its format,
    # so its box is (0, 1) without looking at the data.
    bounds = bounds_from(args)
    if bounds is None and Path(args.input).suffix.lower() == ".dat":
        return (0.0, 1.0)
    named = bounds_names(args)
    if bounds is not None and named is not None:
        return _bounds_by_name(args, bounds, named)
    return bounds


def _bounds_by_name(args: argparse.Namespace, bounds: tuple[Any, Any],
                    named: list[str]) -> tuple[Any, Any]:
    """Ranges given by column name (--range, or a bounds file with a CSV header or Parquet
    schema) matched to INPUT's columns by name (its header or schema: layout only, no rows
    read): their order need not be the data's, and columns the data does not use are ignored.
    A bounds file is positional when INPUT has no names; --range needs them."""
    import numpy as np

    from ..io import open_table

    source = args.bounds_file or "--range"
    table = Path(args.input).suffix.lower() in (".csv", ".parquet")
    data_names = open_table(args.input, **_table_options(args)).names if table else None
    if data_names is None:
        if args.bounds_file:
            return bounds
        raise UsageError(f"--range names columns, but {args.input} has none (a .csv with a "
                         f"header or a .parquet file has): use --bounds-file or --bounds")
    where = {name: i for i, name in enumerate(named)}
    missing = [str(name) for name in data_names if str(name) not in where]
    if missing:
        raise UsageError(
            f"{source} names its columns but has no range for "
            f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''} (columns of "
            f"{args.input}); give every column a range, by name")
    order = np.array([where[str(name)] for name in data_names])
    lo, hi = bounds
    return np.asarray(lo)[order], np.asarray(hi)[order]


def _release(args: argparse.Namespace, estimator: Any,
             engine: str | None) -> tuple[MeanResult, Session | None, int | None]:
    """Run the estimator on INPUT, charged to --ledger first when one is given."""
    from .. import ledger_file
    from ..progress import shown_passes
    from ..session import granted_for, release_events

    index = None
    if args.ledger is not None and not Path(args.input).exists():
        raise UsageError(f"{args.input}: no such file (nothing was charged to the ledger)")
    x = None
    if estimator.calibrates_to_shape():
        # An (epsilon, delta) budget calibrated to the plan for the input's (public) shape:
        # the input is opened first, so that the ledger is charged what will run.
        x = _open_input(args, engine)
        estimator = granted_for(estimator, x)
    if args.ledger is not None:
        index, _ = ledger_file.reserve(args.ledger, estimator.method, estimator.budget,
                                       release_events(estimator))
    try:
        if x is None:
            x = _open_input(args, engine)
        with warnings.catch_warnings():
            warnings.simplefilter("error", InsufficientDataWarning)
            try:
                with _dask_client(args.scheduler), shown_passes(
                        f"dpmean estimate ({estimator.method})", quiet=args.quiet):
                    result = estimator.estimate(x)
            except InvalidDataError as exc:
                raise InvalidDataError(f"{args.input}: {exc}") from None
    except BaseException:
        if index is not None:
            # The data may have been read: the release stays charged, as failed.
            with contextlib.suppress(DPMeanError):
                ledger_file.settle(args.ledger, index, "failed")
        raise
    session = (ledger_file.settle(args.ledger, index, "released", result.spent)
               if index is not None else None)
    return result, session, index


def _choose_engine(args: argparse.Namespace) -> str | None:
    """--engine, else dask with --scheduler, else chunked for a big chunkable file."""
    if args.scheduler is not None and args.engine not in (None, "dask"):
        raise UsageError(f"--scheduler runs on the dask engine, not --engine {args.engine}")
    if args.engine is not None or args.scheduler is not None:
        return args.engine or "dask"
    path = Path(args.input)
    if path.suffix.lower() in (".npy", ".csv", ".parquet") and path.is_file() and (
            path.stat().st_size > CHUNKED_ABOVE_BYTES):
        return "chunked"
    return None


# The flags of one input format, and the formats they apply to.
_FORMAT_FLAGS = {"items": (".dat",), "columns": (".csv", ".parquet"), "delimiter": (".csv",),
                 "header": (".csv",), "index_col": (".csv",)}


def _names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected comma-separated column names, got {text!r}")
    return names


def _check_input_flags(args: argparse.Namespace) -> None:
    ext = Path(args.input).suffix.lower()
    for name, formats in _FORMAT_FLAGS.items():
        if getattr(args, name) is not None and ext not in formats:
            flag = "--" + name.replace("_", "-")
            raise UsageError(f"{flag} applies to {' and '.join(formats)} files; INPUT is not "
                             f"one")
    if ext == ".dat" and args.engine is None:
        cls = ESTIMATORS.get(args.method)
        if cls is not None and not cls.supports_sparse:
            able = sorted(m for m, c in ESTIMATORS.items() if c.supports_sparse)
            raise UsageError(
                f"method {args.method!r} does not run on .dat baskets (sparse rows): use "
                f"--method {' or '.join(able)}, or convert the baskets to a dense .npy file")


def _table_options(args: argparse.Namespace) -> dict[str, Any]:
    delimiter = "\t" if args.delimiter in ("tab", "\\t") else args.delimiter
    return {"columns": args.columns, "delimiter": delimiter, "header": args.header,
            "index_col": args.index_col}


def _open_input(args: argparse.Namespace, engine: str | None) -> Any:
    """The data as the engine reads it: a row source, a dask array, a table (named columns)
    or an array loaded in memory."""
    from ..engines import open_source
    from ..io import load_data, open_table

    _check_input_flags(args)
    ext = Path(args.input).suffix.lower()
    # The readers refuse a .dat file without --items, with the reason.
    items = {"n_items": args.items} if ext == ".dat" else {}
    tables = _table_options(args) if ext in (".csv", ".parquet") else {}
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
        return table.table() if table.names is not None else table.read()
    return load_data(args.input, key=args.key, **items)


def _dask_client(address: str | None) -> Any:
    """A dask.distributed client for the run (it becomes Dask's scheduler), or nothing."""
    if address is None:
        return contextlib.nullcontext()
    try:
        from distributed import Client
    except ImportError:
        raise UsageError('--scheduler needs dask.distributed: pip install "dpmean[dask]"') \
            from None
    try:
        return Client(address, timeout="10s")
    except OSError as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {address}: {exc}") from None


# ------------------------------------------------------------------------------------ summary


def _print_summary(result: Any, budget: dict[str, float], args: argparse.Namespace,
                   output: Path | None, out: TextIO) -> None:
    from ..intervals import interval_summary

    lines = [
        f"dpmean estimate: method {result.method}, n = {result.n} rows, d = {result.d} columns",
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
    shown = min(result.d, 8)
    if result.columns is not None:
        lines.append(f"columns (first {shown} of {result.d}): {', '.join(result.columns[:shown])}"
                     f"{' ...' if result.d > shown else ''}")
    lines.append(f"private mean (first {shown} of {result.d}): "
                 f"{format_values(result.mean[:shown])}{' ...' if result.d > shown else ''}")
    ci = interval_summary(result)
    lines.append(f"{ci['level']:.0%} interval per coordinate ({ci['basis']}): lo "
                 f"{format_values(ci['lo'][:shown])}; hi {format_values(ci['hi'][:shown])}")
    lines.append(f"{ci['level']:.0%} l2 radius of the whole vector: {ci['radius']:.6g}")
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
