"""Tables in: data frames, Arrow tables, CSV and Parquet files, all read through Arrow, their
numeric columns chosen by name and handed on as one (n, d) float64 array with the names.

One adapter (``pyarrow.table``, which takes pandas frames and anything that speaks the Arrow
PyCapsule stream or dataframe-interchange protocol: polars, pyarrow, DuckDB ...) and one CSV
parser (``pyarrow.csv``) serve the library, the in-memory reader and the chunked engine alike.
Errors say what and where (a column's name, a line and column number), never a cell's value.
"""

from __future__ import annotations

import io
import math
import numbers
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InvalidDataError, InvalidParameterError
from .validation import ElementName

__all__ = ["CsvTable", "ParquetTable", "check_range_names", "data_columns", "is_table",
           "table_column_names", "table_data"]

# Delimiters tried, in this order on ties, when none is given (see ``sniff_delimiter``).
DELIMITERS = (",", "\t", ";", "|")
# Bytes pyarrow parses at a time: large enough to amortise its per-block cost, small enough
# that a block of text and its parsed columns stay far below memory.
_BLOCK_BYTES = 16 << 20
_SHOWN_NAMES = 10
_QUOTED = re.compile(r'"[^"]*"')
# What ends a CSV record: a line break, quoted or not (``CsvTable``: a record a line).
_RECORD_BYTES = re.compile(rb'[\r\n]')
# Bytes of a file read for its first record (a longer one is read up to here), and the
# first read's size, doubled until the record's end is in.
_FIRST_RECORD_BYTES = 64 << 20
_FIRST_READ_BYTES = 1 << 16
# The boolean words a cell may hold (any case, as pandas writes a bool column), with the
# number each reads as, and what is trimmed around a cell before it is judged (as pyarrow's
# float parse trims a number).
_BOOLEAN_WORDS = {"true": "1", "false": "0"}
_CELL_SPACE = " \t"
# How a missing value of a file can be filled, for the refusals that find one.
_FILL_HINT = ("; a .csv or .parquet file's reader can fill a missing value (empty, or NaN) "
              "with a public one: --fill NAME=VALUE, fill={NAME: VALUE}")
# What a CSV cell of a column read with a fill may say for "missing", besides being empty:
# the spellings of R, spreadsheets and pandas' writers (a user trial: NA cells were refused
# with --fill given). Only where some column has a fill; a cell of spaces is not one of them.
_MISSING_WORDS = ["", "NA", "N/A", "n/a", "NULL", "null", "None", "#N/A", "<NA>"]


def is_table(x: Any) -> bool:
    """Whether ``x`` is a data frame or Arrow table (not an array or a single column): it has
    ``columns`` and speaks the Arrow stream or dataframe-interchange protocol, or is pyarrow's."""
    if type(x).__module__.split(".")[0] == "pyarrow":
        return hasattr(x, "column_names")
    if type(x).__name__ == "LazyFrame":
        # Not read as a table (``data_columns`` refuses it): its ``columns`` would resolve the
        # query's schema, with polars' PerformanceWarning, printed twice (a user trial).
        return False
    return hasattr(x, "columns") and (hasattr(x, "__arrow_c_stream__")
                                      or hasattr(x, "__dataframe__"))


def data_columns(x: Any, columns: Sequence[str] | str | None = None
                 ) -> tuple[Any, tuple[str, ...] | None]:
    """``x`` as the estimators read it, with its column names where it has them: a data frame
    or table becomes the array of its chosen ``columns`` (``table_data``); a path (str or
    os.PathLike) is opened as a row source (``engines.open_source``: ``.npy``, ``.csv``,
    ``.parquet``; ``columns`` chooses a table file's columns); a row source of a CSV or
    Parquet file keeps its ``column_names``; other input is unnamed (and ``columns`` does
    not apply to it)."""
    x = series_as_frame(x)
    if is_table(x):
        return table_data(x, columns)
    if type(x).__name__ == "LazyFrame" and hasattr(x, "collect"):
        # A query, not its rows: numpy read it as a 0-d object ("got shape ()").
        raise InvalidDataError("a polars LazyFrame is a query, not its rows: pass "
                               "frame.collect()")
    if type(x).__name__.endswith("GroupBy"):
        # pandas' and polars' GroupBy: numpy read them as rows of different lengths or a 0-d
        # object (a user trial).
        raise InvalidDataError(
            "a GroupBy is not data: release each group's mean by itself (for name, group in "
            "frame.groupby(...)); each is a release of its own, charged in sequence by a "
            "Session, and publishes its group's size n (a group's membership must be public "
            "for that to be private)")
    if isinstance(x, Mapping):
        # Its columns declare no types: a list's, or a pandas category's, would be guessed
        # from its values, where one row's 2**64 or text refused the whole input after a
        # session's charge and quoted it (a review); the frame the caller makes declares them.
        raise InvalidDataError(
            "a mapping of columns is not read directly (its columns declare no types): pass "
            "pandas.DataFrame(mapping), polars.DataFrame(mapping) or pyarrow.table(mapping), "
            "whose column types are then checked, or an array")
    if isinstance(x, str | PathLike):
        # A file, read in chunks by the chunked engine (a 0-d array of text before, refused
        # with "got shape ()").
        from .engines import open_source

        source = open_source(x) if columns is None else open_source(x, columns=columns)
        return source, source.column_names
    if columns is not None:
        raise InvalidParameterError(
            f"columns= chooses columns of a data frame or table by name, and the data is a "
            f"{type(x).__name__}; index an array by position, or pass columns= to "
            f"dpmean.io.load_data or dpmean.engines.open_source for a file")
    return x, getattr(x, "column_names", None)


def series_as_frame(x: Any) -> Any:
    """A pandas or polars Series with a name (pandas' default is None, polars' the empty
    string) as the frame of its one column, whose name the result then carries, as a frame's
    column's (a user trial: ``dpmean.mean(frame.age)`` lost it; a column picked from a frame
    of integer names, ``frame[0]``, is named 0, and ranges by that name are taken as a
    frame's are); else ``x``."""
    module = type(x).__module__.split(".")[0]
    named = (module in ("pandas", "polars") and type(x).__name__ == "Series"
             and x.name is not None and x.name != "")
    return x.to_frame() if named else x


def table_data(x: Any, columns: Sequence[str] | str | None = None
               ) -> tuple[np.ndarray, tuple[str, ...]]:
    """The chosen numeric columns of a data frame or Arrow table as an (n, d) float64 array.

    Parameters
    ----------
    x : pandas.DataFrame, polars.DataFrame, pyarrow.Table or another data frame
        Anything ``pyarrow.table`` converts. A pandas index is not a column.
    columns : sequence of str or str, optional
        The columns to use, in this order; default every column (each must then be numeric).

    Returns
    -------
    (numpy.ndarray, tuple of str)
        The values (nulls become NaN, which the estimators refuse) and the column names.

    Raises
    ------
    InvalidDataError
        A column that is not numeric or boolean, a name that is not a column, a table that
        cannot be converted.
    """
    import pyarrow as pa

    labels = _column_labels(x)
    twice = sorted(name for name, count in Counter(labels).items() if count > 1)
    if twice:
        # Names are public; pyarrow's refusal of them said only "ValueError".
        raise InvalidDataError(f"the {type(x).__name__} has two columns named {twice[0]!r}; "
                               f"rename one")
    if type(x).__module__.startswith("dask."):
        # A dask data frame is partitioned lazily; pyarrow's refusal of it read as a column
        # problem (a review).
        raise InvalidDataError(
            f"a dask {type(x).__name__} is not read as a table: pass its values as a dask "
            f"array (x.to_dask_array(lengths=True), with the columns chosen first), or compute "
            f"it into a pandas data frame if it fits in memory")
    x = _declared_numeric(x, labels, columns)
    try:
        table = pa.table(x)
    except (TypeError, ValueError, OverflowError, pa.ArrowException,
            NotImplementedError) as exc:
        # pyarrow's own message may quote a value: its type and what usually causes it only.
        raise InvalidDataError(
            f"cannot read the {type(x).__name__} as a table of columns ({type(exc).__name__}: "
            f"a column pyarrow cannot convert, such as a pandas sparse or mixed-type object "
            f"column; convert it to numbers first, e.g. .sparse.to_dense() or .astype(float))"
        ) from None
    index = pandas_index_columns(table.schema)
    available = [name for name in table.column_names if name not in index]
    names = choose_columns(available, columns, "the table")
    for name in names:
        check_numeric_type(table.schema.field(name).type, name)
    return _as_array(table, names), element_names(table.schema, names, available)


def _declared_numeric(x: Any, labels: list[str], columns: Sequence[str] | str | None) -> Any:
    """A pandas frame cut to its chosen columns, each refused by its declared dtype unless
    numeric or boolean; other frames unchanged.

    Why: pyarrow types a pandas object column by its values (one integer above 2^63, or one
    True among integers, was refused where its neighbour was released), so whether a column
    is numeric must be read off its dtype, and the columns not chosen must not be converted."""
    if type(x).__module__.split(".")[0] != "pandas" or not hasattr(x, "dtypes"):
        return x
    chosen = choose_columns(labels, columns, "the table")
    picked = set(chosen)
    for label, dtype in zip(labels, x.dtypes, strict=True):
        arrow = getattr(dtype, "pyarrow_dtype", None)  # pandas' ArrowDtype declares its type
        if label in picked and arrow is not None:
            check_numeric_type(arrow, label)
        elif label in picked and getattr(dtype, "kind", "O") in ("m", "M", "O", "S", "U"):
            raise InvalidDataError(
                f"column {label!r} has type {dtype}; only numeric or boolean columns can be "
                f"used (convert it first, {_conversion_hint(dtype)}, or choose others with "
                f"columns=)")
    position = {label: i for i, label in enumerate(labels)}  # names are unique (checked)
    return x.iloc[:, [position[name] for name in chosen]]


def _conversion_hint(dtype: Any) -> str:
    """How to make numbers of a pandas column of ``dtype`` (the dtype alone): .astype(float)
    was offered for dates and categories of text, which pandas refuses (a user trial)."""
    kind, name = getattr(dtype, "kind", "O"), str(dtype)
    if kind in "mM":
        return ("e.g. seconds since a public origin: (frame[column] - pd.Timestamp(ORIGIN))"
                ".dt.total_seconds()" if kind == "M" else "e.g. .dt.total_seconds()")
    if name == "category":
        return "e.g. .cat.codes where the codes mean something, or pd.to_numeric on its values"
    if name.startswith(("str", "string")) or kind in "SU":
        return "e.g. pd.to_numeric(frame[column]) where its text holds numbers"
    # (An object column of arrays is the usual pandas embedding.)
    return ("e.g. .astype(float); a column of arrays (vectors) reads as one column per "
            "element when typed pd.ArrowDtype(pa.list_(pa.float32(), d)), or pass "
            "np.stack(frame[column])")


def _column_labels(x: Any) -> list[str]:
    """A frame's column names, read from its schema only: pandas' and polars' ``columns`` are
    names, pyarrow's ``column_names`` (its ``columns`` are the data: a review found their
    printout, ten values of each, quoted in an error). Other frames: none (pyarrow names them,
    and refuses duplicates itself)."""
    module = type(x).__module__.split(".")[0]
    if module == "pyarrow":
        return [str(name) for name in x.column_names]
    if module in ("pandas", "polars"):
        return [str(name) for name in x.columns]
    return []


def pandas_index_columns(schema: Any) -> set[str]:
    """The columns of an Arrow schema that hold a pandas index (not data). pandas' metadata
    lists a stored index by its column name and a RangeIndex by a description (a dict, with
    no column): only the names are columns."""
    listed = (schema.pandas_metadata or {}).get("index_columns", [])
    return {name for name in listed if isinstance(name, str)}


def choose_columns(available: Sequence[str], columns: Sequence[str] | str | None,
                   where: str) -> list[str]:
    """``columns`` checked against the names ``available`` (all of them when None)."""
    if columns is None:
        chosen = list(available)
    else:
        chosen = [columns] if isinstance(columns, str | int) else list(columns)
        if not chosen or not all(isinstance(c, str | int) and not isinstance(c, bool)
                                 for c in chosen):
            raise InvalidParameterError("columns must be a non-empty list of column names")
        # A frame's integer labels are read as text (pd.DataFrame(x)'s 0, 1, ... are "0",
        # "1", ...): columns=[0, 1] chooses them.
        chosen = [str(c) for c in chosen]
    seen: set[str] = set()
    counts = Counter(available)  # a set's and a count's lookups: O(d), not O(d^2)
    for name in chosen:
        if name in seen:
            raise InvalidParameterError(f"column {name!r} is chosen twice")
        seen.add(name)
        if name not in counts:
            raise InvalidDataError(f"{where} has no column named {name!r}; it has "
                                   f"{_list_names(available)}")
        if counts[name] > 1:
            raise InvalidDataError(f"{where} has two columns named {name!r}; rename one")
    if not chosen:
        raise InvalidDataError(f"{where} has no data columns")
    if columns is None and len(chosen) > 1 and chosen[-1] == "" and all(chosen[:-1]):
        # A header's names are public: a last column without one (each line ending with the
        # delimiter, as some spreadsheets write), chosen by default, is refused here, before
        # any charge; its empty cells were refused after it (a review).
        raise InvalidDataError(
            f"{where}: its last column has no name (the header line ends with the delimiter, "
            f"as some spreadsheets write); name it, or choose the named columns with columns= "
            f"(--columns)")
    return chosen


def check_numeric_type(arrow_type: Any, name: str) -> None:
    """Refuse a column whose Arrow type is not a number or a boolean, or a fixed-size list of
    them (an embedding: one column of the data per element), from the type alone (its values
    are not read)."""
    import pyarrow as pa

    t = arrow_type
    if pa.types.is_fixed_size_list(t) and _is_scalar_number(t.value_type) and t.list_size > 0:
        return
    if _is_scalar_number(t):
        return
    if pa.types.is_null(t):
        # Every cell empty, as the type says: refused here, before a charge, rather than by
        # the release's check of its values after it (review).
        raise InvalidDataError(f"column {name!r} holds only empty cells (type null); remove "
                               f"it or choose others with columns=, --columns")
    if pa.types.is_fixed_size_list(t) and t.list_size == 0:
        raise InvalidDataError(f"column {name!r} has type {t}: lists of no elements, no data")
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        # A list's length per row is the row's, and d must be public: only the type's own.
        raise InvalidDataError(
            f"column {name!r} has type {t}; a list column is read as one column per element "
            f"only when its type fixes the length and the elements are numbers (pyarrow "
            f"fixed_size_list, e.g. pa.list_(pa.float32(), 768); polars Array), since d "
            f"must not depend on the rows")
    raise InvalidDataError(f"column {name!r} has type {t}; only numeric or boolean columns "
                           f"can be used (choose others with columns=, --columns)")


def _is_scalar_number(t: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
                or pa.types.is_decimal(t))


def column_width(arrow_type: Any) -> int:
    """How many columns of the data a table column gives: a fixed-size list's length (public:
    its type), else 1."""
    import pyarrow as pa

    return int(arrow_type.list_size) if pa.types.is_fixed_size_list(arrow_type) else 1


def element_names(schema: Any, columns: Sequence[str],
                  taken: Sequence[str] = ()) -> tuple[str, ...]:
    """The data's column names for the table ``columns`` of an Arrow ``schema``: a column's
    own name, or ``name[i]`` for element i of a fixed-size list column (a range given for
    ``name`` serves each, ``validation.range_name``: each is a ``validation.ElementName``).
    An element name that is also the name of
    another column of the table (``taken``) is refused: the two would be one name."""
    names: list[str] = []
    for column in columns:
        if not is_list_column(schema.field(column).type):
            names.append(column)
            continue
        elements = [ElementName(column, i)
                    for i in range(column_width(schema.field(column).type))]
        clash = sorted(set(elements) & set(taken))
        if clash:
            raise InvalidDataError(f"column {clash[0]!r} has the name of an element of the "
                                   f"list column {column!r}; rename one")
        names.extend(elements)
    return tuple(names)


def is_list_column(arrow_type: Any) -> bool:
    """Whether a table column is a fixed-size list (read as one data column per element)."""
    import pyarrow as pa

    return bool(pa.types.is_fixed_size_list(arrow_type))


def table_column_names(x: Any, reader: Mapping[str, Any] | None = None
                       ) -> tuple[str, ...] | None:
    """Every column name of ``x``, chosen by ``columns=`` or not, from its schema or header
    alone (no value read): a data frame's or Arrow table's columns (a pandas index is not one),
    a ``.csv`` (with a header; read with the ``reader`` options that shape it: ``delimiter``,
    ``header``, ``index_col``, ``decimal``) or ``.parquet`` path's, a row source's or Dask array's
    ``column_names``. None for input without names (an array, a CSV file without a header, a
    frame whose names only its conversion gives). A named Series is its one-column frame
    (``series_as_frame``)."""
    x = series_as_frame(x)
    if is_table(x):
        module = type(x).__module__.split(".")[0]
        if module == "pyarrow":
            schema = getattr(x, "schema", None)
            index = pandas_index_columns(schema) if schema is not None else set()
            return tuple(str(name) for name in x.column_names if name not in index)
        return tuple(_column_labels(x)) if module in ("pandas", "polars") else None
    if isinstance(x, str | PathLike):
        if Path(x).suffix.lower() not in (".csv", ".parquet"):
            return None
        from .io import check_readable, open_table  # io reads tables through this module

        if Path(x).suffix.lower() == ".parquet":
            # Every column's name, whatever its type: a text column that ``columns=`` leaves
            # out must not stop a range given for another by name (open_table checks every
            # column it opens).
            check_readable(Path(x))
            return tuple(str(name) for name in open_parquet(Path(x))[1])
        shaping = {name: value for name, value in (reader or {}).items()
                   if name in ("delimiter", "header", "index_col", "decimal")}
        names = open_table(x, **shaping).names
        return None if names is None else tuple(str(name) for name in names)
    names = getattr(x, "column_names", None)
    return None if names is None else tuple(str(name) for name in names)


def check_range_names(given: Iterable[Any], available: Sequence[str], where: str,
                      what: str = "bounds", used: Sequence[Any] | None = None) -> None:
    """Refuse names given a range that are not columns of the data: ``given`` (a bounds
    mapping's keys, the names of ``--range``) against
    ``available`` (every column of the data, ``table_column_names``). Names are public, never
    a value. A range for a column of the table that ``columns=`` leaves out is allowed (and
    unused); a name that is no column at all is usually a typo, whose range was silently
    dropped (with every column given a range, nothing else said so). Checked only where every
    column ``used`` (default: every one ``available``) has a range: where one has none, the
    caller's own error names it (the typo beside it).

    Raises
    ------
    InvalidParameterError
        Naming the unknown names (the first five) and the data's columns (the first ten).
    """
    names = [str(name) for name in given]
    if not {str(name) for name in (available if used is None else used)} <= set(names):
        return
    columns = {str(name) for name in available}
    unknown = [name for name in names if name not in columns]
    if unknown:
        shown = ", ".join(repr(name) for name in unknown[:5]) + (" ..." if len(unknown) > 5
                                                                 else "")
        which = "is not a column" if len(unknown) == 1 else "are not columns"
        raise InvalidParameterError(
            f"{what} names {shown}, which {which} of {where} (it has "
            f"{_list_names(list(available))}): a typo? Give ranges for the data's columns only")


def _list_names(names: Sequence[str]) -> str:
    shown = ", ".join(repr(n) for n in names[:_SHOWN_NAMES])
    more = f" and {len(names) - _SHOWN_NAMES} more" if len(names) > _SHOWN_NAMES else ""
    return f"columns {shown}{more}" if names else "no columns"


def _as_array(table: Any, names: Sequence[str]) -> np.ndarray:
    """The named columns of a pyarrow Table or RecordBatch as float64 (nulls become NaN), a
    fixed-size list column as one column per element (its rows checked for nulls first:
    ``check_values``)."""
    import pyarrow as pa

    n = table.num_rows
    widths = [column_width(table.schema.field(name).type) for name in names]
    out = np.empty((n, sum(widths)), dtype=np.float64)
    at = 0
    for name, width in zip(names, widths, strict=True):
        column = table.column(name)
        if is_list_column(column.type):
            column = _list_values(column)
        if column.type != pa.float64():
            # Not a safe cast: an integer above 2^53 (int64, uint64) or a wide decimal is
            # rounded to the nearest float64, as numpy rounds it. A safe cast refuses it with
            # an error that quotes the value; the rows are clamped to a public box anyway.
            column = column.cast(pa.float64(), safe=False)
        values = column.to_numpy(zero_copy_only=False) if n else np.empty(0)
        out[:, at: at + width] = values.reshape(n, width)
        at += width
    return out


def _list_values(column: Any) -> Any:
    """A fixed-size list column's elements, row after row (a null list as nulls, so that the
    shape holds and ``check_values`` refuses it)."""
    import pyarrow as pa

    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    values = [chunk.fill_null([None] * chunk.type.list_size).flatten()
              if chunk.null_count else chunk.flatten() for chunk in chunks]
    return pa.chunked_array(values, type=column.type.value_type)


def check_values(table: Any, names: Sequence[str], labels: Sequence[str], *,
                 csv: bool = False) -> None:
    """Refuse a null or a NaN in the named columns of a pyarrow Table or
    RecordBatch, naming the first column that holds one (``labels[j]``, e.g. "column 'age'")
    and neither the value, nor where, nor how many: what the estimators refuse, said in the
    table's own terms (a null is an empty cell, not a NaN). Integer, decimal and boolean
    columns are finite as float64 (a decimal256 is below 1e77); a float column is checked.

    Parameters
    ----------
    table : pyarrow.Table or pyarrow.RecordBatch
        The rows, before their conversion to float64.
    names : sequence of str
        The columns to check.
    labels : sequence of str
        How the message names each column, in the order of ``names``.
    csv : bool, default False
        The rows are a CSV file's: the message also names the cells it reads as empty.

    Raises
    ------
    InvalidDataError
        A column holds a null or a NaN (an infinite value, or a CSV number too large for a
        float64, is a number: clamped to the box, as the estimators clamp it).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    for name, label in zip(names, labels, strict=True):
        column = table.column(name)
        if is_list_column(column.type):
            column = _list_values(column)
        # One message for a null and a NaN: which of the two a column holds is a fact about
        # some row that the refusal need not add (two messages told it: a user trial). (An
        # infinite value, or a CSV number too large for a float64, is a number beyond the
        # range: clamped, ``validation.beyond_range_clamped``.)
        if column.null_count or (pa.types.is_floating(column.type) and pc.any(
                pc.is_nan(column), min_count=1).as_py()):
            # (The CSV spellings of "missing" only for a CSV file: a Parquet file's null
            # named them, a user trial.)
            spellings = (" (where another column has a fill, a CSV cell NA, N/A, NULL, None, "
                         "#N/A or <NA> is empty too)" if csv else "")
            error = InvalidDataError(f"{label} holds an empty cell (null) or a NaN value: it "
                                     f"must be removed or imputed before a private "
                                     f"release{spellings}{_FILL_HINT}")
            error.column_name = name  # type: ignore[attr-defined]
            raise error


def check_fill(fill: Any, names: Sequence[str], where: str,
               available: Sequence[str] = ()) -> dict[str, float]:
    """``fill`` (a mapping of column name to a public value, or None) checked against the
    chosen columns ``names``: each name one of them or of the file's other columns
    ``available`` (allowed and unused, as a range for a column left out is: a fill kept for a
    table was refused once ``columns`` left its column out, a user trial), each value a finite
    real number. Returns the fills of the chosen columns.

    A fill value is public, given before the rows are read, and replaces each missing cell of
    its column, row by row (``fill_missing``): a row's value depends on that row alone, so
    neighbouring files stay neighbours and n is unchanged.

    Raises
    ------
    InvalidParameterError
        ``fill`` is not a mapping, names a column the file does not have, or gives a value
        that is not a finite real number.
    """
    if fill is None:
        return {}
    if not hasattr(fill, "items") or isinstance(fill, str):
        raise InvalidParameterError(f"fill must be a mapping of column name to value, e.g. "
                                    f"{{'income': 0.0}}, got {type(fill).__name__}")
    checked: dict[str, float] = {}
    for name, value in fill.items():
        if str(name) not in names and str(name) not in available:
            raise InvalidParameterError(f"{where}: fill names {name!r}, not one of the "
                                        f"file's columns "
                                        f"({_list_names(list(available or names))})")
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
                math.isfinite(value)):
            raise InvalidParameterError(f"the fill value of column {name!r} must be a finite "
                                        f"number, got {value!r}")
        checked[str(name)] = float(value)
    return {name: value for name, value in checked.items() if name in names}


def fill_missing(rows: Any, fill: dict[str, float]) -> Any:
    """``rows`` (a pyarrow Table or RecordBatch) with each column of ``fill`` as float64, its
    missing cells (null, an empty CSV cell, and NaN, pandas' missing float) replaced by the
    column's public value. Infinite values stay: a number beyond the box, clamped like one
    (``validation.beyond_range_clamped``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for name, value in fill.items():
        at = rows.schema.get_field_index(name)
        column = rows.column(at).cast(pa.float64(), safe=False)
        filled = pc.fill_null(pc.if_else(pc.is_nan(column), value, column), value)
        rows = rows.set_column(at, name, filled)
    return rows


# ------------------------------------------------------------------------------------- CSV

# A number written with a decimal comma, as European spreadsheets export them (12,5, -0,25,
# 1.234,5 with a thousands point).
_DECIMAL_COMMA = re.compile(r"[+-]?(\d+|\d{1,3}(\.\d{3})+),\d+([eE][+-]?\d+)?")


def delimiter_candidates(decimal: str) -> list[str]:
    """``DELIMITERS`` but the decimal mark (a number may hold a decimal comma: a first row of
    1,5;2,5 chose the comma, and was refused before the charge where 1;2 was released,
    review)."""
    return [d for d in DELIMITERS if d != decimal]


def sniff_delimiter(layout: str, decimal: str = ".") -> str:
    """The delimiter a CSV file's first line uses: the one of ``delimiter_candidates`` its
    ``layout`` (the line without its quoted text, as ``CsvTable`` gives it) holds most often,
    the first on ties or when it holds none. A number holds none of them, so on a file of
    numbers the choice depends on the layout, never on a value."""
    candidates = delimiter_candidates(decimal)
    counts = [layout.count(d) for d in candidates]
    return candidates[int(np.argmax(counts))] if max(counts) else candidates[0]


class CsvTable:
    """A CSV file's layout, decided once from its first line, and its rows read with pyarrow.

    - The delimiter is ``delimiter``, else sniffed from the first line (``sniff_delimiter``).
    - ``header=None`` takes the first line as a header when none of its cells is a number
      (names; an empty cell among them, such as the first one ``DataFrame.to_csv()`` writes
      for the index, is a name too), and as data when all of its cells are numbers. A line
      that mixes numbers with text or empty cells is refused: it may be a row with a missing
      value or a header with a name that is a number, and guessing either from the values
      would make n, d and the published column names depend on one person's row. A header
      with a name that is a number (pandas' default names 0 .. d-1 too) is refused even with
      ``header=True``: it cannot be told from a row of data. ``header=False`` reads the first
      line as data, as the default does a line of numbers only (pandas' ``0,1,2`` from a
      frame without names is then a row: refusing it for free would judge what may be a
      person's row, and tell whether it is 0, 1, 2).
    - ``index_col=None`` drops the first column when its header cell is empty (what pandas'
      ``DataFrame.to_csv()`` writes for the index); ``True`` drops the first column always;
      ``False`` never.
    - ``columns`` chooses columns by header name (the others may hold anything).
    - Quoted cells, a UTF-8 byte-order mark, CRLF endings and blank lines are read as pandas
      and polars read them (blank lines skipped), except that in a file of one column a
      blank line is a row with an empty cell (counted in n, refused by the release).
    - A record is a line: n counts the lines (``count_rows``), whatever the cells hold, and a
      quoted cell that runs over a line break (or a quote left open, which pandas reads to
      the next quote, rows and all) is refused by the release, after its charge. Where a
      record ends must not depend on a person's cell: one unclosed quote in a text column
      left out took the rest of the file into one cell, and the release published n = 3 for
      a file of 100 rows (review).

    Every chosen cell must be a number (with a decimal comma where ``decimal=","``), or a
    boolean word (True, false, ... as pandas writes a bool column), read as 1 or 0.
    ``read()`` gives ``nan``/``inf`` cells (and numbers too large for a float64, as inf) as
    they are; ``table()`` and ``batches()``, which feed a release, refuse a NaN naming the
    column (``check_values``), as the estimators would, and the estimators clamp an inf to
    the box like any number beyond it. ``fill`` maps chosen columns to the public value of
    their missing cells (``fill_missing``).
    """

    def __init__(self, path: str | Path, *, columns: Sequence[str] | str | None = None,
                 delimiter: str | None = None, header: bool | None = None,
                 index_col: bool | None = None, decimal: str | None = None,
                 fill: Any = None) -> None:
        import pyarrow.csv as pcsv

        self.path = Path(path)
        if decimal not in (None, ".", ","):
            raise InvalidParameterError(f"the decimal mark must be '.' or ',', got {decimal!r}")
        for name, value in (("header", header), ("index_col", index_col)):
            # header="no" read the first line as a header (any truthy value did: a trial).
            if value is not None and not isinstance(value, bool | np.bool_):
                raise InvalidParameterError(f"{name} must be True, False or None (guessed), "
                                            f"got {value!r}")
        self.decimal = decimal or "."
        first = self._first_record(header)
        if delimiter is not None and (len(delimiter) != 1 or delimiter in '"\r\n.+-'
                                      or delimiter.isalnum() or not delimiter.isascii()):
            # A character a number may hold would split the values themselves: an analyst
            # sweeping --delimiter over the digits read which digits a person's age held
            # from which rows the file then refused (review).
            raise InvalidParameterError(
                f"the delimiter must be one ASCII character that no number holds (not a "
                f"digit, a letter, '.', '+' or '-') and not a quote or a line break, got "
                f"{delimiter!r}")
        # The first line without its quoted text; without a header it is a person's row, and
        # its quotes are not read (a malformed row whose quotes hid its ';' was refused here,
        # for free, review).
        layout = first if header is False else _QUOTED.sub("", first)
        if delimiter is None and self.decimal == "," and not any(
                d in layout for d in delimiter_candidates(self.decimal)):
            # Layout only (a number holds none of them): a comma file read with a decimal
            # comma came out as one column of numbers a,b (review).
            raise InvalidParameterError(
                f"{self.path}: with a decimal comma the delimiter is a tab, ';' or '|', and "
                f"the first line holds none of them; give the file's delimiter with --delimiter, "
                f"delimiter= (for a file of one column, any of them)")
        self.delimiter = delimiter or sniff_delimiter(layout, self.decimal)
        self._delimiter_given = delimiter is not None
        if self.delimiter == self.decimal and self._delimiter_given:
            raise InvalidParameterError(f"the decimal mark and the delimiter are both "
                                        f"{delimiter!r}: a decimal comma needs another "
                                        f"delimiter (';' as spreadsheets write it)")
        # newlines_in_values: a quoted cell may hold a line break; without it pyarrow splits
        # the file into blocks at any line break and refused files over 16 MiB whose split fell
        # inside such a cell ("line 568733 has 1 values").
        self._parse = pcsv.ParseOptions(delimiter=self.delimiter, newlines_in_values=True)
        try:
            first_cells = self._read(first.encode(), autogenerate=True).schema
        except InvalidDataError:
            if header is not False:
                raise
            # A person's row (header=False): its layout read without its quotes, and the
            # row itself judged by the release, after its charge. Refused here, a row with an
            # open quote was refused for free where the same row later in the file was
            # charged (review).
            first_cells = self._read(first.encode(), autogenerate=True, quoted=False).schema
        numbers = [] if header is False else self._number_cells(first_cells, first)
        if header and any(numbers):
            # Names are published (the result's columns, errors that list them): a row of
            # data read as a header published one person's values (review).
            raise InvalidDataError(
                f"{self.path}: the header line has a name that reads as a number (digits, "
                f"nan, inf, or True and False, which are read as 1 and 0), so it cannot be "
                f"told from a row of data; rename the columns (pandas' 0, 1, ... too), or "
                f"pass --no-header (header=False) if the line is data")
        self.header = self._guess_header(numbers) if header is None else bool(header)
        if self.header:
            all_names = list(self._read(first.encode(), autogenerate=False).column_names)
        else:
            all_names = [f.name for f in first_cells]
        others = ([c for c in DELIMITERS if c != self.delimiter and c in str(all_names[0])]
                  if self._delimiter_given and self.header and len(all_names) == 1 else [])
        if others:
            # The header is layout (public): a tab or ';' file read with --delimiter ',' came out
            # as one column and was refused after the charge, each line one value (a trial).
            raise InvalidParameterError(
                f"{self.path}: read with the delimiter {self.delimiter!r} the header is one "
                f"column whose name holds {others[0]!r}: is that the file's delimiter? "
                f"(--delimiter, delimiter=; a name that holds it, rename)")
        if len(all_names) == 1:
            # In a file of one column a blank line is a row whose cell is empty: skipped, as
            # pyarrow skips blank lines, it silently took one row from n (review). It is read
            # as a record, so n counts it and the release refuses its empty cell.
            if self._blank_before and self.header:
                # A header cannot be told from a blank line before it, read as a row; a
                # headerless file's (header=False) is a person's empty cell, for the release
                # to refuse after its charge. (With the header guessed, line 1 is judged.)
                raise InvalidDataError(f"{self.path}: a file of one column begins with a blank "
                                       f"line (an empty cell, or none?); remove it")
            self._parse = pcsv.ParseOptions(delimiter=self.delimiter, newlines_in_values=True,
                                            ignore_empty_lines=False)
        if index_col is None:
            index_col = self.header and all_names[0] == ""
        data_names = all_names[1:] if index_col else all_names
        where = f"{self.path}"
        if not data_names:
            raise InvalidDataError(f"{where}: the file holds an index column but no data "
                                   f"columns")
        if columns is not None and not self.header:
            raise InvalidParameterError(f"{where}: columns are chosen by header name, and the "
                                        f"file is read without a header")
        chosen = choose_columns(data_names, columns, where)
        if fill is not None and not self.header:
            raise InvalidParameterError(f"{where}: fill names columns by header name, and the "
                                        f"file is read without a header")
        self.fill: dict[str, float] = check_fill(fill, chosen, where, data_names)
        counts = Counter(all_names)
        for name in chosen:  # pyarrow picks columns by name: an index's name must differ
            if counts[name] > 1:
                raise InvalidDataError(f"{where}: the header names two columns {name!r}; "
                                       f"rename one")
        # (physical column number, name) of the chosen columns, for errors (each named once:
        # refused just above otherwise).
        number = {name: i + 1 for i, name in enumerate(all_names)}
        self._column_of = {name: number[name] for name in chosen}
        # Chosen columns found to hold a boolean word (True, false ...): read as text and
        # converted cell by cell (``_numbers``), since pyarrow's float parse refuses the words.
        self._worded: set[str] = set()
        self._records: int | None = None  # ``count_rows``, once counted
        self._all_names = all_names
        self.names: tuple[str, ...] | None = tuple(chosen) if self.header else None
        self.width = len(chosen)
        # How errors about values name the chosen columns: by header name, else by number.
        self._labels = [f"column {name!r}" if self.header else f"column {at}"
                        for name, at in self._column_of.items()]

    def _number_cells(self, cells: Any, first: str) -> list[bool]:
        """Which cells of the first line (its inferred ``cells``) are numbers. A cell written
        as a number with a decimal comma (12,5) counts as one: read as a name, a European
        file's first row became public column names (and the errors quoted them)."""
        texts = self._read(first.encode(), autogenerate=False).column_names
        # A boolean word counts as the reader reads it (``_numbers``: trimmed of spaces and
        # tabs, any case); pyarrow's guess took "True" but not "True " or "tRuE" (review).
        return [_is_scalar_number(f.type) or bool(_DECIMAL_COMMA.fullmatch(text.strip()))
                or text.strip(_CELL_SPACE).lower() in _BOOLEAN_WORDS
                for f, text in zip(cells, texts, strict=True)]

    def _guess_header(self, numbers: list[bool]) -> bool:
        """Whether the first line is a header, from which of its cells are numbers: none
        (names) or every one (data); anything between is refused, since the first row of a
        headerless file with a missing value looks just like it."""
        if not any(numbers):
            return True
        if all(numbers):
            return False
        # The delimiter is layout (public), and a wrong one makes such a line (12,5;3,25).
        sniffed = ("" if self._delimiter_given else
                   f" (its cells were split at {self.delimiter!r}, the delimiter sniffed from "
                   f"it; give another with --delimiter, delimiter=)")
        raise InvalidDataError(
            f"{self.path}: the first line mixes numbers with text or empty cells, so it is "
            f"neither a header of names nor a row of numbers{sniffed}: pass --header "
            f"(header=True) if it is a header (after renaming any name that reads as a "
            f"number: digits, nan, inf, True or False), --no-header (header=False) if it is "
            f"data")

    def _first_record(self, header: bool | None) -> str:
        """The first record as text, with its line end; sets ``data_offset`` (where the
        records after it begin) and ``_blank_before`` (whether blank lines precede it).

        A record ends at a line break (\\n, \\r\\n or a lone \\r, as pyarrow ends one),
        quoted or not (a record a line), so a file of \\r line ends is not read whole here
        (every row judged before a charge). With ``header=False`` the record is a person's
        row, read for its layout only: bytes that are not UTF-8 are the release's to refuse,
        after its charge."""
        try:
            with open(self.path, "rb") as f:
                # Read as far as the first record's end (a short read at the file's end), in
                # doubling steps up to _FIRST_RECORD_BYTES: every open of a table (a Dask
                # block's too) read 64 MiB here.
                data, size = b"", _FIRST_READ_BYTES
                while True:
                    data += f.read(size - len(data))
                    last = len(data) < size or size >= _FIRST_RECORD_BYTES
                    bounds = _first_record_bounds(data, last)
                    if bounds is not None:
                        break
                    size *= 2
        except OSError as exc:
            raise InvalidDataError(f"{self.path}: cannot read: {exc.strerror or exc}") from None
        bom, begin, stop, end = bounds
        self._blank_before = begin > bom
        self.data_offset = end
        self._bom_end = bom
        raw = data[begin:stop]
        if not raw:
            raise InvalidDataError(f"{self.path}: the file holds no rows")
        try:
            text = raw.decode("utf-8", errors="replace" if header is False else "strict")
        except UnicodeDecodeError:
            raise InvalidDataError(f"{self.path}: not a text CSV file (line 1 is not valid "
                                   f"UTF-8)") from None
        return text + "\n"

    def _read(self, data: bytes, *, autogenerate: bool, quoted: bool = True) -> Any:
        import pyarrow as pa
        import pyarrow.csv as pcsv

        parse = self._parse if quoted else pcsv.ParseOptions(delimiter=self.delimiter,
                                                             quote_char=False)
        try:
            return pcsv.read_csv(
                io.BytesIO(data), parse_options=parse,
                read_options=pcsv.ReadOptions(autogenerate_column_names=autogenerate,
                                              use_threads=False),
                convert_options=pcsv.ConvertOptions(null_values=[], strings_can_be_null=False))
        except pa.ArrowException:
            raise InvalidDataError(f"{self.path}: line 1 is not a CSV record (an unclosed "
                                   f"quote?)") from None

    @property
    def records_offset(self) -> int:
        """Where the records begin: after the header's line, or, without a header, after a
        UTF-8 byte-order mark (which the counts, reading bytes as latin-1, took for a line's
        text: a mark before a blank line was one record more, review)."""
        return self.data_offset if self.header else self._bom_end

    @property
    def skips_blank_lines(self) -> bool:
        """Whether a blank line is layout (skipped), not a row (a file of one column)."""
        return bool(self._parse.ignore_empty_lines)

    def _read_options(self, block: bool) -> Any:
        """The whole file (its header gives the names, or none) or a block of its lines after
        the header (named as the file's columns)."""
        import pyarrow.csv as pcsv

        if block or not self.header:
            # Without a header the names read from the first line (f0, f1 ...): pyarrow cannot
            # infer the columns of a file of one line without a line break (a trial: a single
            # value was refused after the charge as "not a valid CSV file").
            return pcsv.ReadOptions(use_threads=False, column_names=self._all_names,
                                    **({} if block else {"block_size": _BLOCK_BYTES}))
        return pcsv.ReadOptions(use_threads=False, block_size=_BLOCK_BYTES)

    def _reader(self) -> Any:
        import pyarrow.csv as pcsv

        return pcsv.open_csv(self.path, read_options=self._read_options(False),
                             parse_options=self._parse, convert_options=self._convert())

    def _convert(self) -> Any:
        """Every chosen cell a float64 number (a column that holds boolean words as text, for
        ``_numbers``): no missing-value words, nothing else read."""
        import pyarrow as pa

        names = list(self._column_of)
        types = {name: pa.string() if name in self._worded else pa.float64() for name in names}
        return self._number_options(include_columns=names, column_types=types)

    def _number_options(self, **options: Any) -> Any:
        """pyarrow's conversion options for this file's cells: its decimal mark, no
        missing-value words (an empty cell is not a number), and ``options``. Every cell is
        read through them, a worded column's others too (``_parse_cells``). With a ``fill``,
        an empty cell (quoted or not) or one of ``_MISSING_WORDS`` is read as missing: a filled
        column's is filled (``_numbers``), another's is refused as a null
        (``check_values``)."""
        import pyarrow.csv as pcsv

        blank = bool(self.fill)
        return pcsv.ConvertOptions(decimal_point=self.decimal,
                                   null_values=_MISSING_WORDS if blank else [],
                                   strings_can_be_null=False, quoted_strings_can_be_null=blank,
                                   **options)

    def _numbers(self, rows: Any) -> Any:
        """``rows`` with every worded column as float64: True and False (any case, as pandas
        writes a bool column) as 1 and 0, every other cell parsed by the float parse that reads
        the other columns (``_parse_cells``); then the missing cells of the ``fill`` columns
        filled (``fill_missing``). The value of a cell depends on the cell alone, whichever
        block found the column's first word."""
        import pyarrow.compute as pc

        for name in (name for name in self._column_of if name in self._worded):  # file order
            at = rows.schema.get_field_index(name)
            digits = text = rows.column(at)
            word = pc.utf8_lower(pc.utf8_trim(text, _CELL_SPACE))
            for spelled, number in _BOOLEAN_WORDS.items():
                digits = pc.if_else(pc.equal(word, spelled), number, digits)
            rows = rows.set_column(at, name, self._parse_cells(digits, name))
        return fill_missing(rows, self.fill)

    def _parse_cells(self, cells: Any, name: str) -> Any:
        """Text cells as float64 by pyarrow's CSV float parse itself (each cell quoted, one a
        line), with this file's decimal mark: a cell it refuses anywhere is refused here, one it
        reads is read alike. (A cast of the text differed: it refused " 5", which the parse
        trims, so one person's True beside it decided release or refusal: review.)"""
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pcsv

        quoted = pc.binary_join_element_wise('"', pc.replace_substring(cells, '"', '""'), '"',
                                             "")
        lines = "\n".join(quoted.to_pylist()).encode() + b"\n"
        try:
            parsed = pcsv.read_csv(
                io.BytesIO(lines),
                read_options=pcsv.ReadOptions(column_names=["x"], use_threads=False),
                parse_options=pcsv.ParseOptions(newlines_in_values=True,
                                                ignore_empty_lines=False),
                convert_options=self._number_options(column_types={"x": pa.float64()}))
        except pa.ArrowException:
            raise self._not_a_number(self._column_of[name]) from None
        return parsed.column("x")

    def _word_column(self, exc: Exception) -> bool:
        """Whether pyarrow's float parse failed in a chosen column not yet read as text: then
        it is read as text from now on (``_numbers`` judges its cells), and the caller reads
        again."""
        column = re.search(r"column #(\d+)", str(exc))
        if not column or "conversion error to double" not in str(exc):
            return False
        name = self._all_names[int(column.group(1))]
        if name not in self._column_of or name in self._worded:
            return False
        self._worded.add(name)
        return True

    def parse_block(self, data: bytes) -> Any:
        """Whole lines of the file after its header (a Dask worker's block) as a pyarrow Table
        of the chosen float64 columns, read as ``batches`` reads the file; pyarrow's errors
        (which quote the cell) are the caller's to retell."""
        import pyarrow as pa
        import pyarrow.csv as pcsv

        while True:
            try:
                return self._numbers(pcsv.read_csv(
                    io.BytesIO(data), read_options=self._read_options(True),
                    parse_options=self._parse, convert_options=self._convert()))
            except pa.ArrowInvalid as exc:
                if not self._word_column(exc):
                    raise

    def _record_batches(self) -> Iterator[Any]:
        """The chosen columns' record batches, front to back, as float64. A column found to
        hold a boolean word mid-file is read as text from then on: the file is read again
        from the start, past the rows already given (their cells read the same either way)."""
        import pyarrow as pa

        given = 0
        while True:
            skip = given
            try:
                for batch in self._reader():
                    if skip >= batch.num_rows:
                        skip -= batch.num_rows
                        continue
                    batch, skip = batch.slice(skip), 0
                    if batch.num_rows:
                        batch = self._numbers(batch)
                        given += batch.num_rows
                        yield batch
                if given != self.count_rows():  # records that are not the lines
                    raise self._not_lines()
                return
            except pa.ArrowException as exc:
                # pyarrow fails where a quote runs over lines (an open one to the file's end
                # gives "empty block"): told as any record that is not a line is, one sentence
                # wherever its row is, whatever else fails.
                self._check_lines()
                if not self._word_column(exc):
                    raise self._error(exc) from None
            except OSError as exc:
                raise InvalidDataError(
                    f"{self.path}: cannot read: {exc.strerror or exc}") from None

    def count_rows(self, block: bytes | None = None) -> int:
        """The number of records after the header (public): its lines (a record a line, quoted
        or not; blank lines skipped where ``skips_blank_lines``), counted without judging a
        value (``csv_bytes.count_lines``); of ``block`` (whole lines after the header, a Dask
        worker's) when given.

        An (epsilon, delta) budget's calibration reads this before the charge, so nothing a
        row holds may fail it or move it: no cell is read, a line of the wrong width is
        counted, not refused, and quotes are not read (one cell's open quote took the rest of
        the file into one record). The release refuses them after its charge (``batches``,
        whose records must be these lines)."""
        if block is None and self._records is not None:
            return self._records
        from .csv_bytes import count_lines

        try:
            rows = count_lines(block, self.path, self.records_offset,
                               skip_blank=self.skips_blank_lines)
        except OSError as exc:
            raise InvalidDataError(f"{self.path}: cannot read: {exc.strerror or exc}") from None
        if block is None:
            self._records = rows
        return rows

    def _check_lines(self) -> None:
        """Refuse (``_not_lines``) a file whose quoted cells run over lines, by a scan of its
        bytes (``csv_bytes.quote_over_line``): on the error path, after the charge, before
        another refusal speaks for it."""
        from .csv_bytes import quote_over_line

        if quote_over_line(self.path, self.records_offset, self.delimiter):
            raise self._not_lines() from None

    def _not_lines(self) -> InvalidDataError:
        return InvalidDataError(
            f"{self.path}: a quoted cell runs over a line break, or a quote is left open, so a "
            f"record is not one line; dpmean reads a record a line, whatever its cells hold "
            f"(where records end must not depend on a person's cell: it sets n). Take the "
            f"line breaks out of the cells, close the quote, or write the table as Parquet")

    def batches(self) -> Iterator[np.ndarray]:
        """The chosen columns as consecutive float64 row blocks, front to back, for a release:
        a NaN is refused, naming its column (``check_values``)."""
        for batch in self._record_batches():
            self._check(batch)
            yield _as_array(batch, list(self._column_of))

    def table(self) -> Any:
        """All rows of the chosen columns as a pyarrow Table of float64 columns (named by the
        header; ``f0``, ``f1`` ... without one, when ``names`` is None), for a release: a NaN
        is refused, naming its column (``check_values``)."""
        table = self._table()
        self._check(table)
        return table

    def read(self, check: bool = False) -> np.ndarray:
        """All rows of the chosen columns, (n, d) float64, as they are (``nan``/``inf`` cells
        included: the estimators refuse them), or with a NaN refused as a cell that is not a
        number, naming its column (``check``, as ``table``)."""
        return _as_array(self.table() if check else self._table(), list(self._column_of))

    def _table(self) -> Any:
        import pyarrow as pa

        batches = list(self._record_batches())
        if not batches:
            raise InvalidDataError(f"{self.path}: the file holds a header line but no rows")
        return pa.Table.from_batches(batches)

    def _check(self, rows: Any) -> None:
        try:
            check_values(rows, list(self._column_of), self._labels, csv=True)
        except InvalidDataError as exc:
            self._check_lines()  # a record over lines is told first (a review: a NaN was)
            # As a cell that is not a number: an empty cell, NA or NaN in a CSV file is told
            # as one (three messages told which of them a row held: a user trial).
            column = exc.column_name  # type: ignore[attr-defined]  # set by check_values
            raise self._not_a_number(self._column_of[column]) from None

    def _error(self, exc: Exception) -> InvalidDataError:
        """pyarrow's error (which quotes the cell or row) retold without the row: neither the
        value nor where it is ("line 237, column 2 is not a number" told which person's cell
        was not one, and with an analyst's --delimiter, which digits it held)."""
        text = str(exc)
        counts = re.search(r"Expected (\d+) columns", text)
        if counts:
            first = "the header (line 1)" if self.header else "line 1"
            return InvalidDataError(f"{self.path}: a line does not have the {counts.group(1)} "
                                    f"values {first} has (a missing or extra delimiter?)")
        column = re.search(r"column #(\d+)", text)
        if column:
            return self._not_a_number(int(column.group(1)) + 1)
        return InvalidDataError(f"{self.path}: not a valid CSV file ({type(exc).__name__})")

    def _not_a_number(self, number: int) -> InvalidDataError:
        """A cell of the file's column ``number`` (from 1) is not a number: said without the
        cell or its row."""
        name = self._all_names[number - 1]
        named = f"column {name!r}; " if self.header else ""
        # A header name that holds another delimiter: the file is likely split at the wrong
        # one (a comma file read with --delimiter ';'). The header is layout.
        other = [c for c in DELIMITERS if c != self.delimiter and c in str(name)]
        hint = (f"; its name holds {other[0]!r}: is that the file's delimiter? "
                f"(--delimiter, delimiter=)" if self.header and other else "")
        if not hint and self.delimiter != "," and self.decimal == ".":
            # Layout only: a ';' file is how spreadsheets with a decimal comma write.
            hint = "; numbers written with a decimal comma (1,5) need --decimal , (decimal=',')"
        filled = name in self.fill
        return InvalidDataError(
            f"{self.path}: column {number} holds a cell that is not a number ({named}"
            f"{'' if filled else 'empty, NA, NaN, '}text, or a malformed number; True and False "
            f"are read as 1 and 0); fix the cell, remove the row, or choose other columns{hint}"
            + ("; its fill takes empty cells, NaN and NA, N/A, NULL, None, #N/A, <NA>, not a "
               "cell of spaces" if filled else
               "; an empty cell can take a public value with --fill NAME=VALUE (fill=)"))


def _first_record_bounds(data: bytes, last: bool) -> tuple[int, int, int, int] | None:
    """In the first bytes of a CSV file: where its byte-order mark ends, where its first record
    begins (after blank lines, which pyarrow skips), where it stops and where the next one
    begins (after its line break: \\n, \\r\\n or a lone \\r, quoted or not: a record a
    line). None when more bytes may change them, unless ``data`` is the ``last`` read: then a
    record without a line break runs to its end."""
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    begin = len(data) - len(data[bom:].lstrip(b"\r\n"))
    match = _RECORD_BYTES.search(data, begin)
    if match is None:
        return (bom, begin, len(data), len(data)) if last else None
    stop, end = match.start(), match.end()
    if data[stop:end + 1] == b"\r\n":
        end += 1
    # A line break at the last byte read may be a \r whose \n comes next.
    return (bom, begin, stop, end) if end < len(data) or last else None


# ---------------------------------------------------------------------------------- Parquet


def open_parquet(path: Path) -> tuple[Any, list[str]]:
    """The Parquet file at ``path`` (a ``pyarrow.parquet.ParquetFile``) and its columns' names
    (a pandas index is not a column), from its metadata alone: every column, whatever its type
    (``ParquetTable`` checks the chosen ones).

    Raises
    ------
    InvalidDataError
        Not a valid Parquet file, or one without columns.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        # pre_buffer (pyarrow's default) reads ahead whole row groups' column chunks and kept
        # much of the file in memory while the chunked engine streamed it: 844 MB against 389
        # MB for a 300,000 x 384 embedding file (a trial; docs/performance.md).
        file = pq.ParquetFile(path, pre_buffer=False)
    except (pa.ArrowException, OSError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InvalidDataError(f"{path}: not a valid .parquet file ({reason})") from None
    index = pandas_index_columns(file.schema_arrow)
    available = [name for name in file.schema_arrow.names if name not in index]
    if not available:
        raise InvalidDataError(f"{path}: the table has no columns")
    return file, available


class ParquetTable:
    """A Parquet file's chosen numeric columns (default all), read whole or in row batches; a
    fixed-size list column (an embedding) gives one column of the data per element, named
    ``name[i]`` (``element_names``).

    ``columns`` are the chosen columns of the file, ``names`` those of the data (d of them).
    ``fill`` maps a chosen column of numbers to the public value of its missing cells (null
    or NaN; ``fill_missing``).
    """

    def __init__(self, path: str | Path, *, columns: Sequence[str] | str | None = None,
                 fill: Any = None) -> None:
        self.path = Path(path)
        self._file, available = open_parquet(self.path)
        schema = self._file.schema_arrow
        self.columns = tuple(choose_columns(available, columns, str(self.path)))
        try:
            for name in self.columns:
                check_numeric_type(schema.field(name).type, name)
            self.names = element_names(schema, self.columns, available)
        except InvalidDataError as exc:
            raise InvalidDataError(f"{self.path}: {exc}") from None
        self.num_rows = self._file.metadata.num_rows
        if self.num_rows == 0:  # from the metadata: refused alike on every path, uncharged
            raise InvalidDataError(f"{self.path}: the file holds columns but no rows")
        self.width = len(self.names)
        self.labels = [f"column {name!r}" for name in self.columns]
        lists = [name for name in self.columns if is_list_column(schema.field(name).type)]
        listed = [name for name in (fill or {}) if name in lists]
        if listed:
            raise InvalidParameterError(f"{self.path}: fill applies to columns of numbers, not "
                                        f"to the list column {listed[0]!r}")
        self.fill = check_fill(fill, self.columns, str(self.path), available)

    def _rows(self, rows: Any) -> Any:
        """Rows read from the file with the missing cells of the ``fill`` columns filled."""
        return fill_missing(rows, self.fill)

    def batches(self, rows: int = 1 << 16) -> Iterator[np.ndarray]:
        """The chosen columns as consecutive float64 blocks of at most ``rows`` rows, for a
        release: a null or NaN is refused, naming its column
        (``check_values``)."""
        for batch in self._file.iter_batches(batch_size=rows, columns=list(self.columns)):
            # Without the path: the blocks are read during a release (the chunked engine's
            # passes), whose caller names its input, as for the estimators' own errors.
            batch = self._rows(batch)
            check_values(batch, self.columns, self.labels)
            yield _as_array(batch, self.columns)

    def table(self) -> Any:
        """All rows of the chosen columns as a pyarrow Table, for a release: a null or NaN is
        refused, naming its column (``check_values``)."""
        table = self._rows(self._file.read(columns=list(self.columns)))
        try:
            check_values(table, self.columns, self.labels)
        except InvalidDataError as exc:
            raise InvalidDataError(f"{self.path}: {exc}") from None
        return table

    def read(self) -> np.ndarray:
        """All rows of the chosen columns, (n, d) float64, as they are but for the ``fill``
        columns (other nulls become NaN, which the estimators refuse)."""
        return _as_array(self._rows(self._file.read(columns=list(self.columns))), self.columns)

    def row_group_rows(self) -> list[int]:
        """The number of rows of each of the file's row groups (its metadata: no value read)."""
        metadata = self._file.metadata
        return [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]

    def row_groups(self, groups: Sequence[int]) -> np.ndarray:
        """Row groups ``groups`` of the chosen columns, (rows, d) float64, for a release (the
        Dask engine's blocks): a null or NaN is refused, naming its column,
        without the path, as in ``batches``."""
        rows = self._rows(self._file.read_row_groups(list(groups), columns=list(self.columns)))
        check_values(rows, self.columns, self.labels)
        return _as_array(rows, self.columns)
