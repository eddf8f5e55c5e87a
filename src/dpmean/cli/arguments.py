"""What every ``dpmean`` command shares: the parser and its two exceptions, the arguments that
mean the same everywhere (budget, bounds, seed, method and options, output) and writing files.

A command module adds its arguments through these helpers so that a flag has one spelling, one
help text and one parser; the error messages they raise are part of the CLI's contract. Building
the parser imports neither numpy nor the readers: they load when a command runs.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidDataError, InvalidParameterError, fallback_parts
from ..registry import DEFAULT_METHOD, MEANT, available_methods

if TYPE_CHECKING:
    import numpy as np

EXIT_USAGE = 2
NON_PRIVATE_HEADER = "NON-PRIVATE evaluation: the true means are used only to measure error"
SEED_HELP = ("seed the noise (reproducible; for experiments only: anyone who knows the seed can "
             "remove the noise). Default: a secure generator keyed from the OS")

# argparse (before Python 3.13) takes "-1e3" for an option; bounds need such numbers.
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-inf(inity)?$", re.I)

# Parameters of dpmean.mean that have flags of their own.
_OWN_FLAGS = {"rho": "rho", "epsilon": "epsilon", "delta": "delta", "method": "method",
              "bounds": "bounds", "random_state": "seed"}


class UsageError(Exception):
    """A command-line mistake found by argparse or by our own flag checks."""


class ParserExit(Exception):
    """argparse finished on purpose (--help, --version)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class Parser(argparse.ArgumentParser):
    """An argparse parser that raises instead of exiting, so ``main`` prints one error line and
    returns the exit code (tests and embedding callers keep their process)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBER

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        if message:
            sys.stderr.write(message)
        raise ParserExit(status)


def insufficient_data_error(warning: Warning) -> UsageError:
    """The error for an ``InsufficientDataWarning`` turned into one (a command publishes no
    fallback): the library's reason, without its "releasing the zero vector" (a command
    releases nothing), and what the command did instead, in one consistent line."""
    reason, rest = fallback_parts(str(warning))
    advice = "" if rest is None else " " + rest.replace("bounds=(lo, hi)", "--bounds LO HI")
    return UsageError(f"too few rows for this budget: {reason}. The library would release the "
                      f"zero vector (projected onto the box) in place of a mean; the command "
                      f"line publishes no such fallback, and wrote no output.{advice}")


# ------------------------------------------------------------------------------------ budget


def add_budget_arguments(parser: argparse.ArgumentParser, whose: str) -> None:
    """Add --rho, or --epsilon with --delta: the one way every command takes a budget.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser; the flags go into a group of their own in its help.
    whose : str
        Whose budget it is, for the group's title (e.g. ``"the release's"``).
    """
    budget = parser.add_argument_group(
        f"privacy budget, {whose} (give --rho, or --epsilon and --delta)")
    budget.add_argument("--rho", type=float, metavar="R", action=_Once,
                        help="zCDP budget rho > 0")
    budget.add_argument("--epsilon", type=float, metavar="E", action=_Once,
                        help="(epsilon, delta)-DP budget epsilon > 0, with --delta")
    budget.add_argument("--delta", type=float, metavar="D", action=_Once,
                        help="delta in (0, 1), with --epsilon")


class _Once(argparse.Action):
    """Store a flag's value, refusing the flag given twice: ``--rho 0.1 --rho 0.9`` spent 0.9,
    the last, without a word (a trial), where a repeated --option is refused."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        if getattr(namespace, self.dest, None) is not None:
            raise UsageError(f"{option_string} is given twice; give the budget once")
        setattr(namespace, self.dest, values)


def budget_from(args: argparse.Namespace) -> dict[str, float]:
    """Read back the budget of :func:`add_budget_arguments`.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments with ``rho``, ``epsilon`` and ``delta``.

    Returns
    -------
    dict
        ``{"rho": R}`` or ``{"epsilon": E, "delta": D}``: keyword arguments for the library.

    Raises
    ------
    UsageError
        When no budget, both kinds, or only one of epsilon and delta is given.
    """
    if args.rho is not None:
        if args.epsilon is not None:
            raise UsageError("give either --rho or --epsilon with --delta, not both")
        if args.delta is not None:  # (a trial was told "not both" with no --epsilon given)
            raise UsageError("--delta goes with --epsilon, not with --rho: give --rho alone, "
                             "or --epsilon and --delta")
        return {"rho": args.rho}
    if args.epsilon is None and args.delta is None:
        raise UsageError("no privacy budget given: pass --rho R (zCDP), or --epsilon E and "
                         "--delta D")
    if args.epsilon is None or args.delta is None:
        raise UsageError("--epsilon and --delta go together: give both (or --rho instead)")
    return {"epsilon": args.epsilon, "delta": args.delta}


# ------------------------------------------------------------------------------------ bounds


def add_bounds_arguments(parser: argparse.ArgumentParser, *, reads_data: bool = True) -> None:
    """Add --bounds LO HI, --bounds-file FILE or --range NAME=LO:HI (one kind of them): the
    data's public range.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    reads_data : bool
        Whether the command reads an INPUT (``estimate``: named ranges are matched to its
        columns, and without a range a private box is bought); else (``budget``) one of the
        three is needed and named ranges are taken in their order.
    """
    if reads_data:
        without = ("without --bounds, --bounds-file or --range, 10%% of a rho budget buys a "
                   "private box (ledger stage 'bounds'), except for .dat baskets: 0/1 by "
                   "their format, their box is (0, 1) at no cost")
        matched, by_header = ("matched to a table INPUT's columns by name, in any order; an "
                              "INPUT without column names needs a file without a header"), (
            "matched to a table INPUT's header by name")
    else:
        without = "one of --bounds, --bounds-file and --range is needed"
        matched = by_header = "in the order given, since no data is read"
    bounds = parser.add_mutually_exclusive_group()
    bounds.add_argument("--bounds", nargs=2, type=float, metavar=("LO", "HI"),
                        help=f"public range of every coordinate, e.g. --bounds 0 255; {without}")
    bounds.add_argument("--bounds-file", metavar="FILE.npy",
                        help="per-coordinate public ranges: a (2, d) array, a column for each "
                        "of the d columns, row 0 the lower bounds, row 1 the upper bounds (in "
                        "any data file format). A CSV with a header (or a Parquet file) gives "
                        f"each named column its range: {matched}")
    bounds.add_argument("--range", action="append", type=_named_range, metavar="NAME=LO:HI",
                        dest="ranges",
                        help="one column's public range by name, e.g. --range age=0:120 "
                        f"--range income=0:1e6 (repeat for every column; {by_header})")


def _named_range(text: str) -> tuple[str, float, float]:
    name, equals, span = text.rpartition("=")
    lo, colon, hi = span.partition(":")
    try:
        if not (name and equals and colon):
            raise ValueError
        return name, float(lo), float(hi)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected NAME=LO:HI (e.g. age=0:120), got {text!r}") from None


def bounds_from(args: argparse.Namespace) -> tuple[Any, Any] | None:
    """Read back the range of :func:`add_bounds_arguments`, loading a bounds file.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments with ``bounds`` and ``bounds_file``.

    Returns
    -------
    tuple or None
        ``(lo, hi)``: two floats from --bounds, two float64 arrays of length d from
        --bounds-file; None when neither was given.

    Raises
    ------
    InvalidParameterError
        When the bounds file does not hold a (2, d) array.
    """
    if args.bounds_file:
        data = getattr(args, "input", None)
        if data is not None and _same_file(args.bounds_file, data):
            # Read whole before the charge, the data's own cells answered for free what the
            # release would refuse (a text cell, its column), as often as asked (review).
            raise UsageError(f"the --bounds-file {args.bounds_file} is INPUT itself: bounds "
                             f"must be public, not read from the data")
        return _load_bounds(args.bounds_file)
    if getattr(args, "ranges", None):
        import numpy as np

        names = [name for name, _, _ in args.ranges]
        repeated = list(dict.fromkeys(name for name in names if names.count(name) > 1))
        if repeated:
            raise UsageError(f"--range names a column more than once: "
                             f"{', '.join(map(repr, repeated))}")
        return (np.array([lo for _, lo, _ in args.ranges]),
                np.array([hi for _, _, hi in args.ranges]))
    return tuple(args.bounds) if args.bounds else None


def bounds_names(args: argparse.Namespace) -> list[str] | None:
    """The column names the ranges are given for: --range's names, or a --bounds-file's CSV
    header or Parquet schema; else None (positional: the data's column order).

    A command that reads a table INPUT (``args.input``, a .csv with a header or a .parquet
    file) has --range's names checked against its columns first, from its header or schema
    alone: where every column used has a range, a name that is none of INPUT's columns (a
    typo) is refused, as ``dpmean.mean`` refuses it in a bounds mapping; its range was
    dropped silently. (Where a column has no range, the command's own error names both.) A
    range for a column --columns leaves out is allowed, and unused; so is a bounds file's
    range for a column INPUT does not have (a bounds file may describe more columns than
    one file holds).

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments with ``bounds_file``.

    Returns
    -------
    list of str or None
        The names, in the file's order.

    Raises
    ------
    InvalidParameterError
        A --range name that is not a column of a table INPUT.
    """
    from pathlib import Path

    from ..io import open_table

    if getattr(args, "ranges", None):
        names = [name for name, _, _ in args.ranges]
        _check_range_names(args, names)
        return names
    path = args.bounds_file
    if not path or Path(path).suffix.lower() not in (".csv", ".parquet"):
        return None
    header = open_table(path).names
    return None if header is None else [str(name) for name in header]


def _check_range_names(args: argparse.Namespace, names: list[str]) -> None:
    """Refuse --range ``names`` that are not columns of a table INPUT (any of its columns,
    not only those --columns chooses), read as ``estimate`` reads its layout (no value read),
    where every column used has a range."""
    from ..tables import check_range_names

    available = input_columns(args)
    if available is not None:
        check_range_names(names, available, args.input, what="--range", used=args.columns)


def input_columns(args: argparse.Namespace) -> tuple[str, ...] | None:
    """Every column of a table INPUT, whichever --columns chooses (of any type: a text column
    left out must not stop a check), from its header or schema alone (a CSV file read with the
    command's options); None for other input or a CSV file without a header."""
    from ..io import open_table
    from ..tables import table_column_names

    data = getattr(args, "input", None)
    if data is None or Path(data).suffix.lower() not in (".csv", ".parquet"):
        return None
    if Path(data).suffix.lower() == ".csv":
        return open_table(data, **{**table_options(args), "columns": None}).names
    return table_column_names(data)


def table_options(args: argparse.Namespace) -> dict[str, Any]:
    """The table reader's options of a command that reads a .csv or .parquet INPUT."""
    delimiter = "\t" if args.delimiter in ("tab", "\\t") else args.delimiter
    return {"columns": args.columns, "delimiter": delimiter, "header": args.header,
            "decimal": getattr(args, "decimal", None),
            "index_col": args.index_col, "fill": fill_values(getattr(args, "fill", None))}


def fill_values(pairs: list[tuple[str, float]] | None) -> dict[str, float] | None:
    """The --fill NAME=VALUE flags as the readers' ``fill`` mapping (None without any); a
    column named twice is refused."""
    if not pairs:
        return None
    fill: dict[str, float] = {}
    for name, value in pairs:
        if name in fill:
            raise UsageError(f"--fill names column {name!r} twice")
        fill[name] = value
    return fill


def fill_pair(text: str) -> tuple[str, float]:
    """One --fill flag, NAME=VALUE (the last '=' splits: a name may hold one)."""
    name, equals, value = text.rpartition("=")
    try:
        number = float(value)
    except ValueError:
        number = None
    if not equals or not name.strip() or number is None:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE (a column name and a number), "
                                         f"got {text!r}")
    return name.strip(), number


def check_ranges(args: argparse.Namespace, bounds: tuple[Any, Any], d: int, whose: str) -> None:
    """Refuse ranges from --bounds-file or --range for other than ``d`` columns: one range per
    column, never one stretched over all of them (that is --bounds LO HI).

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments with ``bounds_file`` and ``ranges``.
    bounds : tuple
        ``(lo, hi)`` from :func:`bounds_from`.
    d : int
        The number of columns.
    whose : str
        Where d comes from, to end the message, e.g. ``"--d is 4"``.

    Raises
    ------
    UsageError
        When the ranges are for another number of columns.
    """
    given = getattr(bounds[0], "size", 1)
    source = "--bounds-file" if args.bounds_file else "--range" if getattr(
        args, "ranges", None) else None
    if source is not None and given != d:
        ranges = "1 column's range" if given == 1 else f"{given} columns' ranges"
        raise UsageError(f"{source} gives {ranges} but {whose}; give one range for every "
                         f"column (a (2, d) bounds file, or --range for each), or --bounds LO "
                         f"HI for the same range on all of them")


def _same_file(a: str, b: str) -> bool:
    """Whether two paths name one file (links followed); False where either is missing."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _load_bounds(path: str) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    from ..io import load_data

    layout = ("a bounds file holds a (2, d) array, row 0 the lower bounds and row 1 the upper "
              "bounds; as a CSV, a header of column names and two lines, e.g. "
              "'age,income' / '0,0' / '120,1e6' (or give --range age=0:120 ...)")
    if not Path(path).is_file():  # the reader's "no such file" would end the layout's help
        problem = "not a file" if Path(path).exists() else "no such file"
        raise InvalidParameterError(f"{path}: {problem} (--bounds-file)")
    try:
        arr = load_data(path)
    except InvalidDataError as exc:
        # A user's first guess is often one line per column (name,lo,hi): the data reader's
        # complaint about a text cell does not say what a bounds file looks like.
        raise InvalidParameterError(f"{path}: {layout} (read as numbers: {exc})") from exc
    if not isinstance(arr, np.ndarray) or arr.ndim != 2 or arr.shape[0] != 2:
        shape = getattr(arr, "shape", None)
        raise InvalidParameterError(f"{path}: {layout}; got shape {shape}")
    return arr[0].astype(np.float64), arr[1].astype(np.float64)


# ------------------------------------------------------------------------------------ seed


def add_seed_argument(parser: argparse.ArgumentParser, help: str = SEED_HELP) -> None:
    """Add --seed S (``args.seed``, None unless given: the secure, OS-keyed default).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    help : str, optional
        The flag's help text, when the command says more than the general warning.
    """
    parser.add_argument("--seed", type=_seed, metavar="S", help=help)


def _seed(text: str) -> int:
    """A seed: a non-negative integer (numpy's generators refuse others; ``demo`` printed its
    traceback for -1)."""
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if seed < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return seed


def add_level_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """Add --level L, the coverage of the confidence intervals (default 0.95).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    what : str
        What the level is the coverage of, for the help text.
    """
    parser.add_argument("--level", type=_level, default=0.95, metavar="L",
                        help=f"coverage of {what} (default 0.95)")


def _level(text: str) -> float:
    """A coverage strictly between 0 and 1 (``check_fraction``), refused at parsing (before
    any charge)."""
    from ..validation import check_fraction

    try:
        return check_fraction(float(text), "--level")
    except (ValueError, InvalidParameterError):
        raise argparse.ArgumentTypeError(f"expected a number strictly between 0 and 1, "
                                         f"got {text!r}") from None


# ------------------------------------------------------------------------- method and options


def add_method_argument(parser: argparse.ArgumentParser) -> None:
    """Add --method M (default ``DEFAULT_METHOD``), whose help lists the registered methods.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    """
    parser.add_argument("--method", default=DEFAULT_METHOD, metavar="M",
                        help=f"estimator: {', '.join(available_methods())} "
                             f"(default: {DEFAULT_METHOD})")


def add_option_argument(parser: argparse.ArgumentParser) -> None:
    """Add --option NAME=VALUE (repeatable), an estimator parameter; see :func:`parse_options`.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    """
    parser.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                        help="an estimator parameter, e.g. --option threshold_share=0.3; values "
                        "are read as int, float, true/false/none, else text (repeatable)")


def parse_options(items: Sequence[str]) -> dict[str, Any]:
    """Turn ``--option NAME=VALUE`` items into estimator keyword arguments.

    Parameters
    ----------
    items : sequence of str
        The items as given; dashes in a name become underscores.

    Returns
    -------
    dict
        Name to value; a value is read as int, float, true/false/none, else kept as text.

    Raises
    ------
    UsageError
        For an item without ``=``, a name given twice, or a parameter that has its own flag.
    """
    options: dict[str, Any] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name.isidentifier():
            raise UsageError(f"--option expects NAME=VALUE, got {item!r}")
        if name in options:
            raise UsageError(f"--option {name} is given twice")
        flag = _OWN_FLAGS.get(MEANT.get(name, name))
        if flag:
            raise UsageError(f"--option {name}=... is not an estimator option; use --{flag}")
        options[name] = _parse_value(raw.strip())
    return options


def _parse_value(raw: str) -> Any:
    for convert in (int, float):
        try:
            return convert(raw)
        except ValueError:
            pass
    lowered = raw.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    return raw


# ------------------------------------------------------------------------------------ output


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """Add --output FILE (the JSON result in a file) and --json (the JSON result on stdout).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    """
    parser.add_argument("--output", metavar="FILE",
                        help="write the result as JSON to FILE (a new file, unless --force)")
    parser.add_argument("--force", action="store_true",
                        help="let --output replace an existing FILE")
    parser.add_argument("--json", action="store_true",
                        help="print the JSON result on stdout (the summary then goes to stderr)")


def check_writable(path: str, keep: Mapping[str, str | None] | None = None, *,
                   replace: bool = False) -> Path:
    """Refuse an output path that cannot be written, before any work (or privacy) is spent.

    The file is written by a rename in its directory (``write_file``), so the directory must
    exist and take new files. An existing file is refused unless ``replace`` (``--force``): it
    may be an earlier release, whose budget is spent and which could not be made again; one
    of the command's other files is refused either way.

    Parameters
    ----------
    path : str
        The file the command will write, as given on the command line.
    keep : mapping of str to str or None, optional
        Files the output must not replace, by what they are (e.g. ``{"INPUT": "x.npy"}``);
        None values are skipped.
    replace : bool, default False
        Whether an existing file (not one of ``keep``) may be replaced.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    UsageError
        When the name is empty, the path is a directory or another non-regular file (a
        device, a pipe), its directory does not exist or cannot take a new file, it is
        one of the files in ``keep``, or it exists and ``replace`` is False.
    """
    if not path:
        # Path("") is the working directory: an empty name would write nothing or fail late.
        raise UsageError("cannot write '': the file name is empty")
    out = Path(path)
    try:
        return _writable(out, keep, replace)
    except OSError as exc:
        # A name too long for the file system (a traceback before: a user trial), or the
        # write's own temporary file refused (``check_can_write``).
        raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None


def _writable(out: Path, keep: Mapping[str, str | None] | None, replace: bool) -> Path:
    """``check_writable``'s checks of ``out``; an OSError where the system refuses one."""
    from ..io import check_can_write

    parent = out.parent
    if out.is_dir():
        raise UsageError(f"cannot write {out}: it is a directory")
    if out.exists() and not out.is_file():
        # The rename would replace the device or pipe itself (as root, /dev/null).
        raise UsageError(f"cannot write {out}: it is not a regular file (for the result on "
                         f"standard output, use --json)")
    if not parent.is_dir():
        where = (f"{parent} is not a directory" if parent.exists()
                 else f"directory {parent} does not exist")
        raise UsageError(f"cannot write {out}: {where}")
    # Creating (and renaming) a file needs write and search permission on the directory.
    if not os.access(parent, os.W_OK | os.X_OK,
                     effective_ids=os.access in os.supports_effective_ids):
        raise UsageError(f"cannot write {out}: directory {parent} is not writable (permission "
                         f"denied or a read-only file system)")
    for what, other in (keep or {}).items():
        if other and out.exists() and Path(other).exists() and os.path.samefile(out, other):
            raise UsageError(f"cannot write {out}: it is {what} ({other}), which the result "
                             f"would replace; choose another file")
    if out.exists() and not replace:
        raise UsageError(f"cannot write {out}: the file exists (an earlier result, whose budget "
                         f"is spent?); choose another name, or pass --force to replace it")
    # The permission bits can say yes where the file system says no (/proc: a result charged
    # and then lost, a user trial): the write's first step is tried.
    try:
        check_can_write(out)
    except OSError as exc:
        why = ("the name is too long for the file system once the write's temporary file "
               "adds its 18 characters" if exc.errno == errno.ENAMETOOLONG
               else f"directory {parent} refused a new file ({exc.strerror or exc})")
        raise UsageError(f"cannot write {out}: {why}") from None
    return out


def write_file(path: Path, content: str | bytes) -> None:
    """Write a file atomically: a failed write leaves no file, or the old one.

    Parameters
    ----------
    path : Path
        Where to write.
    content : str or bytes
        Text (UTF-8) or bytes.

    Raises
    ------
    UsageError
        When the write fails (full disk, no permission), with the system's reason.
    """
    from ..io import write_bytes_atomic, write_text_atomic

    try:
        if isinstance(content, bytes):
            write_bytes_atomic(path, content)
        else:
            write_text_atomic(path, content)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


@contextlib.contextmanager
def printing(done: str | None = None) -> Iterator[None]:
    """Print a command's results in the block, then flush them: a standard output that cannot
    take them (a full disk, a file that went away) becomes one ``UsageError`` saying what was
    done all the same, instead of a traceback or Python's complaint at exit.

    A closed pipe (``dpmean ... | head``) is not an error: its ``BrokenPipeError`` is left to
    ``dpmean.cli.main``.

    Parameters
    ----------
    done : str, optional
        What the command did before printing, e.g. ``"the release was made"``; the error
        says it was done, but could not be printed.

    Yields
    ------
    None

    Raises
    ------
    UsageError
        When standard output fails.
    """
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        discard_stdout()
        what = f"{done}, but its result" if done else "the result"
        raise UsageError(f"{what} could not be printed: cannot write to standard output "
                         f"({exc.strerror or exc})") from None
    except UnicodeEncodeError as exc:
        # A column's name that standard output's encoding cannot write (PYTHONIOENCODING=
        # ascii and a name 'temp°C'): a traceback lost the note that the release was made
        # and charged (a diff review).
        discard_stdout()
        what = f"{done}, but its result" if done else "the result"
        raise UsageError(f"{what} could not be printed: standard output's encoding "
                         f"({exc.encoding}) cannot write a character of it; set "
                         f"PYTHONIOENCODING=utf-8, or write it to a file with --output") from None


def write_stdout(text: str) -> None:
    """Write ``text`` to standard output whole, or raise: an ``OSError`` when it cannot all
    be written.

    Where standard output is a file descriptor, ``text`` is encoded as ``sys.stdout`` would
    encode it and written to the descriptor until every byte is taken: Python's text
    standard output can take a short write to a nearly full disk without a word (a JSON
    result cut short, exit code 0), while a loop of ``os.write`` gets the full disk's
    ``ENOSPC`` on the write after it. Elsewhere (a test's capture) it is ``sys.stdout.write``.
    Use it within ``printing``, which turns the error into one line.

    Parameters
    ----------
    text : str
        What to print.

    Raises
    ------
    OSError
        When standard output does not take all of ``text`` (``BrokenPipeError`` for a closed
        pipe).
    """
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        sys.stdout.write(text)  # no descriptor (a test's capture, a replaced stream)
        return
    # What is buffered on sys.stdout goes first, so that the output keeps its order.
    sys.stdout.flush()
    data = memoryview(text.encode(sys.stdout.encoding or "utf-8",
                                  getattr(sys.stdout, "errors", None) or "strict"))
    while data:
        written = os.write(fd, data)
        if written <= 0:  # a write that takes nothing and reports no error: never done
            raise OSError(errno.EIO, "standard output took no bytes")
        data = data[written:]


def discard_stdout() -> None:
    """Point standard output at ``os.devnull`` after it failed, so that Python's flush of what
    is still buffered, at exit, does not fail (and complain) again."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a file descriptor (a test's capture): nothing is flushed at exit
    os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
