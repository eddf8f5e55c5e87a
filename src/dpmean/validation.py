"""Input validation shared by every public entry point (scikit-learn's check_array, for DP).

Errors name what is wrong and how to fix it; nothing here looks at data beyond what the error
message needs, and no data-derived value is used as a default.
"""

from __future__ import annotations

import math
import numbers
import os
import sys
from collections.abc import Container, Sequence

import numpy as np

from .errors import InvalidDataError, InvalidParameterError

BOUNDS_HELP = (
    "a differentially private mean needs a public range: pass bounds=(lo, hi) (on the command "
    "line --bounds LO HI), the box the data is assumed to lie in before you look at it (values "
    "outside are clamped). Reading the range "
    "from the data would leak it. A generous range costs little: the error of 'cm' and 'iome' "
    "grows only logarithmically with it."
)


def length_d_array(value, d: int, requirement: str) -> np.ndarray:
    """``value`` (a number or a length-d array) as a fresh float64 array of length d; else an
    InvalidParameterError: "<requirement> or an array of length d, got <what value is>"
    (``short_description``: an array by its shape, never all its values)."""
    try:
        return np.broadcast_to(np.asarray(value, dtype=np.float64), (d,)).copy()
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"{requirement} or an array of length d = {d} (one per column), got "
            f"{short_description(value)}"
        ) from None


# The longest repr of a parameter an error message quotes; longer ones are cut.
_SHORTEST_REPR = 80


def short_description(value) -> str:
    """``value`` for an error message, short whatever its size: an array (or a list or tuple
    of more than a few items) by its type and shape ("an array of length 784", "a list of
    length 3,522"), anything else by its repr cut to ``_SHORTEST_REPR`` characters. A bounds
    array of d = 784 was printed whole: 3,522 characters."""
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and len(shape) >= 1:
        kind = type(value).__name__
        kind = "array" if kind == "ndarray" else kind
        size = (f"length {shape[0]:,}" if len(shape) == 1
                else "shape (" + ", ".join(str(n) for n in shape) + ")")
        return f"an {kind} of {size}" if kind[0] in "aeiou" else f"a {kind} of {size}"
    if isinstance(value, list | tuple) and len(value) > 4:
        return f"a {type(value).__name__} of length {len(value):,}"
    text = repr(value)
    return text if len(text) <= _SHORTEST_REPR else text[:_SHORTEST_REPR - 3] + "..."


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes ``warnings.warn`` point at the first caller outside
    dpmean (the user's ``dpmean.mean``, ``estimator.estimate`` or ``session.mean`` line), for
    a warning raised by the function that calls this (``warnings.warn(...,
    stacklevel=user_stacklevel())``). A fixed number cannot: the same warning is reached
    through different depths (a granted copy, a private box, a session, ``auto``'s choice)."""
    # Frame 1 is the function that warns (stacklevel 1); walk out of the package.
    frame = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


NOT_AN_ARRAY = ("data must be a numeric array of shape (n, d) or (n,); it could not be "
                "converted to one (rows of different lengths, or a cell that is not a real "
                "number: text, a complex number?)")


def sequence_shape(x) -> tuple[int, ...]:
    """The shape of input that has none of its own (a list or tuple of rows), as numpy reads
    it, or an InvalidDataError.

    Why: ``np.shape([[1, 2], [3]])`` raises numpy's "inhomogeneous shape" ValueError, which
    quotes the detected shape; a ragged list reached the user as that raw traceback. The
    message is ``check_data``'s (no value quoted).

    Parameters
    ----------
    x : object
        The input, a nested list or tuple of numbers.

    Returns
    -------
    tuple of int
        ``np.shape(x)``.

    Raises
    ------
    InvalidDataError
        When numpy cannot read ``x`` as an array (rows of different lengths).
    """
    try:
        return tuple(np.shape(x))
    except (TypeError, ValueError):
        raise InvalidDataError(NOT_AN_ARRAY) from None


def _declares_no_dtype(x: object) -> bool:
    """Whether numpy would read ``x``'s dtype off its values: a Python sequence (a list, a
    tuple, a deque, a UserList), not an array or anything that hands numpy one."""
    return not any(hasattr(x, name) for name in ("dtype", "__array__", "__array_interface__",
                                                  "__array_struct__"))


def _listed_floats(x) -> np.ndarray:
    """A sequence of rows without a dtype (``_declares_no_dtype``: a list, a tuple, a deque)
    as float64 by numpy's cast, except that a Python integer beyond
    float64's range (about 1.8e308) is read as the infinity of its sign: a value beyond the
    range, clamped to the box like inf. numpy refuses to convert it, and that refusal came
    after the charge: one row's magnitude told with certainty (a review). Such a list is cast
    row by row, and cell by cell only within the row that overflows, each cell by numpy's
    cast: every other value reads as it would without that row (reviews found a date, a
    boolean beside a string, a row given as a numpy array read differently when cast as
    Python objects)."""
    try:
        return np.asarray(x, dtype=np.float64)
    except OverflowError:
        return np.array([_row_floats(row) for row in x], dtype=np.float64)


def _row_floats(row) -> np.ndarray:
    """One row (or, in a list of one variable, one cell) as ``_listed_floats`` reads it."""
    try:
        return np.asarray(row, dtype=np.float64)
    except OverflowError:
        return np.vectorize(_cell_float, otypes=[np.float64])(np.asarray(row, dtype=object))


def _cell_float(value) -> float:
    """One cell as numpy's float64 cast reads it in a list (None is NaN, a numeric string its
    number), or the infinity of its sign where it is an integer beyond float64's range."""
    try:
        return float(np.asarray(value, dtype=np.float64))
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def check_declared_dtype(data: object, d: int) -> None:
    """Refuse ``data`` by the dtype it declares (an array's, a dask array's or a row source's
    metadata: no value read) where ``check_data`` would refuse values of that dtype: text,
    objects, complex numbers; and a dask array whose blocks are scipy.sparse matrices (its
    ``_meta``), which every engine refuses as it reads them: after a session's charge, before
    (a review). Nothing without a numpy dtype."""
    if is_sparse(getattr(data, "_meta", None)):
        raise InvalidDataError(
            "a dask array of scipy.sparse blocks is not supported; pass the scipy.sparse "
            "matrix itself (the sparse engine), or dense blocks (x.map_blocks(lambda b: "
            "b.toarray()))")
    dtype = getattr(data, "dtype", None)
    if isinstance(dtype, np.dtype):
        check_data(np.zeros((1, d), dtype=dtype))
    elif dtype is not None and _declares_no_number(dtype):
        # A pandas category, text or object Series, a polars non-numeric one: its values
        # decided (an unnamed category Series of one text category was charged, then refused,
        # where its numeric neighbour was released: a review), as a frame's column is refused
        # by its type.
        raise InvalidDataError(
            f"data of type {dtype} declares no numbers; only numeric or boolean data can be "
            f"used (convert it first, e.g. pd.to_numeric, or .cat.codes where the codes mean "
            f"something)")


def _declares_no_number(dtype: object) -> bool:
    """Whether a dtype that is not numpy's (pandas' extension dtypes, polars') declares
    something other than numbers or booleans."""
    kind = getattr(dtype, "kind", None)
    if isinstance(kind, str):
        return kind not in "biuf"
    numeric = getattr(dtype, "is_numeric", None)
    return callable(numeric) and not (numeric() or str(dtype) == "Boolean")


def check_data(x) -> np.ndarray:
    """Return ``x`` as a real numeric array of shape (n, d), without NaN or inf; a 1-D array is
    n values of one variable. The dtype is kept (engines convert once, while copying)."""
    if is_sparse(x):
        raise InvalidDataError(
            "sparse input is not supported by this estimator yet; pass a dense array"
        )
    if isinstance(x, np.ma.MaskedArray):
        # np.asarray would read the values under the mask as data.
        if np.ma.getmaskarray(x).any():
            raise InvalidDataError("data is a masked array with masked values; remove or impute "
                                   "them before a private release (as NaN values)")
        x = np.ma.getdata(x)
    try:
        # A list's dtype would be read off its values (one integer above 2^64 made it an
        # object array, refused, where 7 was released): lists, tuples and every other
        # sequence without a dtype of its own (a deque, a UserList: a review) are float64 by
        # declaration, as every value is clamped to the box anyway.
        arr = _listed_floats(x) if _declares_no_dtype(x) else np.asarray(x)
    except (TypeError, ValueError, OverflowError):
        # numpy's message may quote the input; say only what is expected.
        raise InvalidDataError(NOT_AN_ARRAY) from None
    if arr.dtype == np.float16:
        # Exact in float32, which every engine's compiled kernels take (float16 they do not).
        arr = arr.astype(np.float32)
    check_real_dtype(arr.dtype)
    arr = native_dtype(arr)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise InvalidDataError(
            f"data must be 1-D or 2-D (n rows, d columns), got shape {arr.shape}"
        )
    if arr.shape[0] == 0:
        raise InvalidDataError("data is empty: no rows")
    if arr.shape[1] == 0:
        raise InvalidDataError("data has no columns")
    if np.issubdtype(arr.dtype, np.floating):
        # A NaN or an infinity makes its column's sum NaN or infinite: summing (a read, as
        # fast as the mean) clears the data at a third of the cost of isnan's n x d mask,
        # which is taken only when some sum is not finite (a bad value, or finite values
        # whose sum overflows).
        with np.errstate(over="ignore", invalid="ignore"):
            sums = np.add.reduce(arr, axis=0)
        if not np.isfinite(sums).all():
            arr = beyond_range_clamped(arr)
    return arr


def check_real_dtype(dtype: np.dtype) -> None:
    """Refuse a dtype that is not real numbers (or booleans), from the dtype alone.

    ``check_data``'s refusal of an array's type, which needs no value: the readers and the
    command line make it from a ``.npy`` header, before a ledger's charge, with this message.

    Parameters
    ----------
    dtype : numpy.dtype
        The data's type.

    Raises
    ------
    InvalidDataError
        Text, objects, datetime64 or timedelta64 ("data must be numeric"), or complex numbers
        ("data must be real-valued").
    """
    # numpy files timedelta64 under the integers and complex numbers under its numbers;
    # neither they nor datetime64 are quantities to average here.
    if dtype.kind in "OmM" or not (
        np.issubdtype(dtype, np.number) or np.issubdtype(dtype, np.bool_)
    ):
        raise InvalidDataError(f"data must be numeric, got {dtype_kind(dtype)} values")
    if np.issubdtype(dtype, np.complexfloating):
        raise InvalidDataError("data must be real-valued, got complex numbers")


def beyond_range_clamped(arr: np.ndarray) -> np.ndarray:
    """``arr`` (floating) with +-inf as the largest finite number of its type and sign (a
    copy where it holds one); a NaN is refused, naming its column (``non_finite_error``).

    An infinity is a number beyond the range, as a long double or a CSV number too large for
    float64 is (``native_dtype``): it is clamped like any value outside the box, which the
    box's clamp then makes the box's bound. Refused, it told its neighbour apart after the
    charge (1e300 released, 1e400 refused: a review). A NaN has no value to clamp: it is
    refused, and a file's reader can fill it with a public value (``fill=``, ``--fill``)."""
    nan_columns = np.isnan(arr).any(axis=0)
    if nan_columns.any():
        raise non_finite_error(int(np.argmax(nan_columns)))
    if np.isinf(arr).any():
        largest = np.finfo(arr.dtype).max
        return np.clip(arr, -largest, largest)
    return arr


def native_dtype(arr: np.ndarray) -> np.ndarray:
    """``arr`` in a dtype every engine's compiled kernels take: itself when it already is one
    (native byte order, and not a float wider than float64), else a converted copy.

    Why: numba compiles for native byte order and float64 at most; a big-endian ``>f8`` array
    (as ``np.save`` on another machine or ``np.dtype('>f8')`` writes) or ``np.longdouble``
    reached ``pair_kernels`` and failed with a TypingError. Here, where every input is
    validated (arrays, the chunks of files and dask arrays), they become native: a byte swap
    changes no value. A long double is rounded to float64, losing the digits beyond float64's
    16: the arithmetic is float64 in any case (documented), and values beyond float64's range
    are first clamped to its largest number, which the box's clamp then makes the box's bound
    as it would have (both clamps are monotone, the box lies inside float64's range). A NaN
    stays one and is refused after; an inf is clamped after (``beyond_range_clamped``).
    Native inputs are returned as they are (no copy), so
    their releases are unchanged.
    """
    dtype = arr.dtype
    # Any float but float32 and float64 (float16 became float32 before): long double, which
    # is also a type of its own where it is 8 bytes wide.
    if dtype.kind == "f" and dtype.type not in (np.float32, np.float64):
        largest = np.finfo(np.float64).max
        return np.clip(arr, -largest, largest).astype(np.float64)
    if not dtype.isnative:
        return arr.astype(dtype.newbyteorder("="))
    return arr


# What to do about NaN: in memory the caller fills it (a trial followed the readers' fill= with
# a frame and was told the option is unknown); a file's reader takes a fill value itself.
FILL_ADVICE = ("remove them, or replace them with a public value before the release (numpy: "
               "np.nan_to_num(x, nan=VALUE); pandas: df.fillna(VALUE)); a file's path takes "
               "one as fill= (--fill NAME=VALUE)")


def non_finite_error(column: int) -> InvalidDataError:
    """The error for NaN in the data. It names the first column holding one (a position) but
    neither how many there are nor where else: a service that forwards error messages would
    leak what it says about the data. (Whether some row holds one is told, after the charge:
    a row's value must be a number, as its columns must be numeric; docs/privacy.md.)"""
    error = InvalidDataError(
        f"data contains NaN values (the first in column {column}, counting from 0); {FILL_ADVICE}")
    # Where the data's columns have names, the release says the name (``named_column``).
    error.column = column  # type: ignore[attr-defined]
    return error


def named_column(error: InvalidDataError, names: Sequence[str] | None) -> InvalidDataError:
    """``error`` (``non_finite_error``'s) told by the column's name where the data has names:
    a frame's null cells arrive as NaN, and the README promises their column's name."""
    column = getattr(error, "column", None)
    if names is None or column is None or not 0 <= column < len(names):
        return error
    name = names[column]
    # An embedding's element by its list column, as the file readers tell it.
    which = (f"column {name.column!r} (element {name.position})"
             if isinstance(name, ElementName) else f"column {name!r}")
    return InvalidDataError(
        f"{which} holds NaN values or empty cells (nulls); {FILL_ADVICE}")


def dtype_kind(dtype: np.dtype) -> str:
    """A dtype's kind without its size (a string dtype's size is the longest string's length)
    or a structured dtype's field names (a file's header bytes: a review)."""
    if np.issubdtype(dtype, np.str_) or np.issubdtype(dtype, np.bytes_):
        return "text"
    if dtype.names is not None:
        return f"records of {len(dtype.names)} fields"
    return "object" if dtype.kind == "O" else str(dtype)


def is_sparse(x) -> bool:
    """Whether ``x`` is a scipy.sparse matrix or array (without importing scipy for others)."""
    return hasattr(x, "tocsr") and hasattr(x, "nnz")


def check_sparse_data(x):
    """Return ``x`` as a real-valued scipy.sparse CSR matrix of shape (n, d), n, d >= 1, whose
    stored values are finite, one per cell (repeated entries summed). Looks at the stored values
    only, O(nnz); never densifies."""
    import scipy.sparse

    if len(x.shape) != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise InvalidDataError(
            f"sparse data must be 2-D with at least one row and one column, got shape {x.shape}"
        )
    csr = scipy.sparse.csr_matrix(x)
    dtype = csr.data.dtype
    if not (np.issubdtype(dtype, np.number) or np.issubdtype(dtype, np.bool_)) or np.issubdtype(
        dtype, np.complexfloating
    ):
        raise InvalidDataError(f"sparse data must be real numbers, got {dtype_kind(dtype)} "
                               f"values")
    if np.issubdtype(dtype, np.floating) and not np.isfinite(csr.data).all():
        bad = np.isnan(csr.data)
        if bad.any():
            raise non_finite_error(int(csr.indices[bad].min()))
        # An infinity is clamped as a dense one is (``beyond_range_clamped``), on a copy.
        csr = csr.copy()
        csr.data = beyond_range_clamped(csr.data[:, None])[:, 0]
    if not csr.has_canonical_format:
        # Repeated (row, column) entries mean their sum; merge them on a copy so that clamping
        # and norms see one value per cell (the caller's matrix is left as it is).
        csr = csr.copy()
        csr.sum_duplicates()
        if np.issubdtype(dtype, np.floating) and not np.isfinite(csr.data).all():
            # Entries near the largest float whose sum overflows: a number beyond the range.
            csr.data = beyond_range_clamped(csr.data[:, None])[:, 0]
    return csr


class ElementName(str):
    """The name of a data column that is element ``position`` of a list column (``column``):
    ``"emb[3]"``, as ``tables`` names a fixed-size list's elements. A plain column that
    happens to be named ``"a[0]"`` is a plain ``str``: only an element takes its list
    column's range (``range_name``)."""

    column: str
    position: int

    def __new__(cls, column: str, position: int) -> ElementName:
        name = super().__new__(cls, f"{column}[{position}]")
        name.column, name.position = column, position
        return name

    def __reduce__(self) -> tuple[type, tuple[str, int]]:
        return ElementName, (self.column, self.position)


def column_text(name: object) -> str:
    """A data column's name as text, an ``ElementName`` kept as it is."""
    return name if isinstance(name, str) else str(name)


def range_name(name: str, given: Container[str]) -> str | None:
    """The name in ``given`` whose range the data's column ``name`` takes: its own, else, for
    an element of a list column (an ``ElementName``), the list column's; None when neither is
    given."""
    if name in given:
        return str(name)
    if isinstance(name, ElementName) and name.column in given:
        return name.column
    return None


def range_owners(names: Sequence[object], given: Container[str]
                 ) -> tuple[list[str | None], list[str]]:
    """For each of the data's column ``names``, the name in ``given`` whose range it takes
    (``range_name``, None where there is none), and the columns missing a range as ranges are
    asked for (``ranged_columns``)."""
    owners = [range_name(column_text(name), given) for name in names]
    missing = ranged_columns([column_text(name) for name, owner
                              in zip(names, owners, strict=True) if owner is None])
    return owners, missing


def ranged_columns(names: Sequence[str]) -> list[str]:
    """The data's column ``names`` as ranges are given for them: the elements of a list column
    (``ElementName``s) as the list column (once), for messages that ask for the missing
    ranges."""
    shown: list[str] = []
    for name in names:
        column = name.column if isinstance(name, ElementName) else str(name)
        if column not in shown:
            shown.append(column)
    return shown


def bounds_by_name(bounds, names) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) arrays in the order of the data's column ``names`` from a mapping of column name
    to its (lo, hi) (a list column's range serves each of its elements, ``range_name``); names
    the data does not use are ignored. Public: the names and the box."""
    if names is None:
        raise InvalidParameterError(
            "bounds given by column name need data with named columns (a data frame or an "
            "Arrow table); give bounds=(lo, hi) with per-coordinate arrays otherwise")
    # The data's names are text (a frame's integer labels 0, 1, ... become "0", "1", ...):
    # the mapping's keys are read alike, so bounds={0: (lo, hi)} names pd.DataFrame(x)'s 0.
    by_text = {str(key): value for key, value in bounds.items()}
    owners, missing = range_owners(names, by_text)
    if missing:
        # Names the mapping gives that the data does not have (column names are public;
        # never a value): usually the missing column's name mistyped.
        unknown = [key for key in by_text if key not in owners]
        also = (f"; {_listed(unknown)} {'is' if len(unknown) == 1 else 'are'} not one of the "
                f"columns used" if unknown else "")
        raise InvalidParameterError(
            f"bounds have no range for column(s) {', '.join(map(repr, missing[:5]))}"
            f"{' ...' if len(missing) > 5 else ''}{also}: give every column used a (lo, hi), "
            f"or choose the columns with columns=")
    pairs = []
    for name in owners:
        try:
            lo, hi = by_text[str(name)]
            if _holds_bool(lo) or _holds_bool(hi):
                raise TypeError("a bool is not a bound")  # as ``check_bounds`` refuses
            pairs.append((float(lo), float(hi)))
        except OverflowError:
            raise _beyond_float64(f"bounds[{name!r}]") from None
        except (TypeError, ValueError):
            raise InvalidParameterError(
                f"bounds[{name!r}] must be a pair (lo, hi) of numbers, got "
                f"{short_description(by_text[str(name)])}") from None
    lo_arr, hi_arr = (np.array(side, dtype=np.float64) for side in zip(*pairs, strict=True))
    return lo_arr, hi_arr


def _listed(names: Sequence[str], most: int = 5) -> str:
    """The first ``most`` names, quoted, and " ..." when there are more."""
    return ", ".join(repr(name) for name in names[:most]) + (" ..." if len(names) > most else "")


def _beyond_float64(what: str) -> InvalidParameterError:
    """The error for a bound that is a Python integer beyond float64 (bounds=(-10**400,
    10**400), whose conversion overflowed): refused as an infinite one is."""
    return InvalidParameterError(
        f"{what} must be finite, got an integer beyond float64's range (magnitude above "
        f"{np.finfo(np.float64).max:.3g})")


def _holds_bool(value) -> bool:
    """Whether a bound is, or holds, a bool: True, numpy's True, a bool array, or a list or
    tuple with one among its items (numpy would read [True, 2.5] as [1.0, 2.5])."""
    if isinstance(value, bool | np.bool_):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype == np.bool_
    if isinstance(value, list | tuple):
        return any(_holds_bool(item) for item in value)
    return False


# The narrowest column a box may have: its squares and their private spreads stay far above
# float64's smallest numbers (a width of 1e-300 sent PLAN's log-domain searches to log 0).
NARROWEST_WIDTH = 1e-100


def _equal_as_floats(lo: float, hi: float) -> str:
    """Why bounds given apart can be equal: read as float64 numbers, whose spacing grows with
    their magnitude (nanosecond timestamps near 1.7e18 are 256 apart: a user trial)."""
    if lo != hi or abs(lo) < 2.0**53:
        return ""
    return (f" (equal as float64 numbers, which are {float(np.spacing(abs(lo))):g} apart at "
            f"this magnitude: subtract a public offset from the data and the bounds first)")


def check_bounds(bounds, d: int, names: Sequence[str] | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Return (lo, hi) as float64 arrays of shape (d,) from scalars or per-coordinate arrays;
    errors name a coordinate by its column's name where ``names`` are given."""
    if bounds is None:
        raise InvalidParameterError(f"no bounds given: {BOUNDS_HELP}")
    try:
        lo, hi = bounds
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"bounds must be a pair (lo, hi) of numbers or length-{d} arrays, got "
            f"{short_description(bounds)}") from None
    out = []
    for name, value in (("lo", lo), ("hi", hi)):
        if _holds_bool(value):
            # True/False read as 1/0 made bounds=(False, True) the box [0, 1], where a bool
            # rho, epsilon or level is refused: a bool here is a caller's bug too.
            raise InvalidParameterError(
                f"bounds {name} must be a number or an array of length d = {d} (one per "
                f"column) of numbers, not True or False; got {short_description(value)}")
        try:
            arr = length_d_array(value, d, f"bounds {name} must be a number")
        except OverflowError:
            raise _beyond_float64(f"bounds {name}") from None
        if not np.isfinite(arr).all():
            j = int(np.argmin(np.isfinite(arr)))
            which = (f" (column {names[j]!r} has {name}={arr[j]:g})" if names is not None
                     and arr.size > 1 else "")
            raise InvalidParameterError(f"bounds {name} must be finite{which}")
        out.append(arr)
    lo_arr, hi_arr = out
    if not (lo_arr < hi_arr).all():
        j = int(np.argmax(~(lo_arr < hi_arr)))
        # Scalar bounds are every coordinate's: "coordinate 0" named the first of a frame's
        # columns by position (a user trial).
        scalar = np.ndim(lo) == 0 and np.ndim(hi) == 0
        which = ("every column" if scalar and d > 1 else
                 f"column {names[j]!r}" if names is not None else f"coordinate {j}")
        raise InvalidParameterError(
            f"bounds need lo < hi in every coordinate; {which} has lo={lo_arr[j]:g}, "
            f"hi={hi_arr[j]:g}" + _equal_as_floats(lo_arr[j], hi_arr[j])
        )
    with np.errstate(over="ignore"):
        diameter_squared = np.sum(np.square(hi_arr - lo_arr))
    if not np.isfinite(diameter_squared):
        raise InvalidParameterError(
            "bounds are too wide to compute with in floating point (the squared diameter of "
            "the box overflows); give bounds that hold the data more closely, or rescale the "
            "data, e.g. to other units"
        )
    narrowest = float(np.min(hi_arr - lo_arr))
    if narrowest < NARROWEST_WIDTH:
        # Squares of such widths (pair variances, squared norms, their logs) underflow to 0.
        raise InvalidParameterError(
            f"bounds are too narrow to compute with in floating point (a column's width, "
            f"{narrowest:.3g}, is below {NARROWEST_WIDTH:g}); rescale the data, e.g. to other "
            f"units"
        )
    return lo_arr, hi_arr


def intersected_box(lo: np.ndarray, hi: np.ndarray, user_lo: np.ndarray, user_hi: np.ndarray,
                    *, method: str, own: str) -> tuple[np.ndarray, np.ndarray]:
    """An estimator's own public box [lo, hi] cut to the caller's bounds [user_lo, user_hi],
    refused when the two do not overlap.

    Why: ``iome-gaussian`` clamps to the cube of its a-priori ball cut to the bounds; bounds
    beside that cube gave lo > hi, and a release outside the caller's box with an interval
    whose lower end exceeded its upper one.

    Parameters
    ----------
    lo, hi : numpy.ndarray
        The estimator's own box (public: from its parameters alone).
    user_lo, user_hi : numpy.ndarray
        The caller's bounds, checked (``check_bounds``).
    method : str
        The estimator's name, for the message.
    own : str
        What the estimator's box is, for the message ("the cube of its a-priori ball").

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        max(lo, user_lo) and min(hi, user_hi).

    Raises
    ------
    InvalidParameterError
        When the intersection is empty, or narrower than ``NARROWEST_WIDTH``, in a
        coordinate (the first one is named, with both ranges: public values).
    """
    cut_lo, cut_hi = np.maximum(lo, user_lo), np.minimum(hi, user_hi)
    bad = ~(cut_hi - cut_lo >= NARROWEST_WIDTH)
    if bad.any():
        j = int(np.argmax(bad))
        raise InvalidParameterError(
            f"{method}: the bounds do not overlap {own}: in coordinate {j} it is "
            f"[{lo[j]:g}, {hi[j]:g}] and the bounds [{user_lo[j]:g}, {user_hi[j]:g}], so no "
            f"release lies in both; give bounds that meet it, or parameters whose box holds "
            f"them")
    return cut_lo, cut_hi


def check_fraction(value, name: str, *, low_open: bool = True, high_open: bool = True) -> float:
    """A number strictly inside (0, 1) (endpoints allowed when not open)."""
    value = check_number(value, name)
    ok_low = value > 0 if low_open else value >= 0
    ok_high = value < 1 if high_open else value <= 1
    if not (ok_low and ok_high):
        lb, hb = ("(" if low_open else "["), (")" if high_open else "]")
        raise InvalidParameterError(f"{name} must lie in {lb}0, 1{hb}, got {value}")
    return value


def check_positive(value, name: str) -> float:
    value = check_number(value, name)
    if value <= 0:
        raise InvalidParameterError(f"{name} must be > 0, got {value}")
    return value


def check_steps(value, name: str, also: str = "") -> int:
    """An integer from 1 to 60 (a number of steps); ``also`` names what else the caller takes
    (e.g. 'or "auto"'), for the message."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
            or not 1 <= int(value) <= 60):
        other = f" {also}" if also else ""
        raise InvalidParameterError(
            f"{name} must be an integer from 1 to 60{other}, got {value!r}")
    return int(value)


def check_count(value, name: str) -> int:
    """A positive integer with no upper limit (a group size, a number of pairings)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise InvalidParameterError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_flag(value, name: str) -> bool:
    """A yes/no option: True or False (numpy's too), or the integers 1 and 0. Anything else is
    refused rather than read by its truth value: ``bool("no")`` is True, and a switch such as
    ``secure_noise`` or ``quantized`` turned on by a typo is a silently different release."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral) and int(value) in (0, 1):
        return bool(value)
    raise InvalidParameterError(f"{name} must be True or False, got {value!r}")


def check_number(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidParameterError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not np.isfinite(value):
        raise InvalidParameterError(f"{name} must be finite, got {value}")
    return value
