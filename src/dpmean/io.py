"""Reading user data files (.npy, .npz, .csv, .parquet, .dat baskets) into arrays; atomic writes.

Every mistake a user can make with a file becomes one InvalidDataError line that names the file.
"""

from __future__ import annotations

import numbers
import os
import re
import secrets
import zipfile
import zlib
from pathlib import Path

import numpy as np
import scipy.sparse

from .errors import InvalidDataError, InvalidParameterError
from .validation import dtype_kind

__all__ = ["SUPPORTED_EXTENSIONS", "cell_error", "check_basket", "check_n_items",
           "find_bad_cell", "load_data", "write_bytes_atomic", "write_text_atomic"]

SUPPORTED_EXTENSIONS = (".npy", ".npz", ".csv", ".parquet", ".dat")

# Item ids become column indices; scipy's default int32 indices cap them.
_MAX_ITEM_ID = np.iinfo(np.int32).max - 1
_PLAIN_BASKETS = re.compile(r"[0-9 \t\r\n]*")


N_ITEMS_HELP = (
    "a .dat basket file needs n_items=D (on the command line --items D): the public number of "
    "items, fixed before looking at the data; item ids must run from 0 to D - 1 (a file with "
    "ids 1..K needs D = K + 1, column 0 stays empty). D is d, the length of the released mean, "
    "and d must be public: taking it from the largest id in the file would let one basket with "
    "one rare item change it, an unbounded privacy loss."
)


def check_n_items(n_items) -> int:
    """The public number of items of a basket file as an int in 1 .. 2^31 - 2 (scipy's int32
    column indices); an InvalidParameterError that explains why it is needed otherwise."""
    if n_items is None:
        raise InvalidParameterError(f"no number of items given: {N_ITEMS_HELP}")
    if isinstance(n_items, bool) or not isinstance(n_items, numbers.Integral) or not (
            1 <= int(n_items) <= _MAX_ITEM_ID + 1):
        raise InvalidParameterError(
            f"n_items must be an integer from 1 to {_MAX_ITEM_ID + 1}, got {n_items!r}")
    return int(n_items)


def load_data(
    path: str | os.PathLike, *, key: str | None = None, n_items: int | None = None
) -> np.ndarray | scipy.sparse.csr_matrix:
    """Read a data file, choosing the reader by the file's extension.

    - ``.npy``: one array (``allow_pickle=False``: object arrays are refused).
    - ``.npz``: ``key`` names the array; a file holding a single array needs no key. A file
      written by ``scipy.sparse.save_npz`` is read (without a key) as a sparse matrix.
    - ``.csv``: comma-separated numbers, one row per line; a first line that does not parse as
      numbers is taken as a header. ``nan``/``inf`` cells are read as floats (the estimators
      reject them with a clear message).
    - ``.parquet``: a table of numeric (or boolean) columns, as an (n_rows, n_columns) array;
      needs pyarrow (``pip install "dpmean[parquet]"``).
    - ``.dat``: a transaction file, one basket per line, space-separated item ids from 0 to
      ``n_items - 1``; returns a ``scipy.sparse.csr_matrix`` of 0/1 float64 of shape
      (n_baskets, n_items). ``n_items`` is required: the number of columns d is public (it is
      the length of the release), so it is never read from the ids. Item ids are used as column
      indices as they are, so a file whose ids start at 1 has an empty column 0. A repeated
      item counts once; a blank line is an empty basket.

    Parameters
    ----------
    path : str or os.PathLike
        The file; its extension chooses the reader.
    key : str, optional
        The array to read from an ``.npz`` archive.
    n_items : int, optional
        For ``.dat`` files only, and required for them: the public number of items (columns).

    Raises
    ------
    InvalidDataError
        The file is missing, is a directory, is empty, has an unknown extension, is not what
        its extension says, or its contents are malformed (an item id outside 0 .. n_items - 1
        included). Messages name the file and the line or column, never a value read from it.
    InvalidParameterError
        A ``.dat`` file without ``n_items``, or ``n_items`` for another format.
    """
    p = Path(path)
    ext = p.suffix.lower()
    if ext == ".dat":
        n_items = check_n_items(n_items)
    elif n_items is not None:
        raise InvalidParameterError(f"{p}: n_items ({n_items!r}) only applies to .dat files")
    _check_readable(p)
    if key is not None and ext != ".npz":
        raise InvalidDataError(f"{p}: a key ({key!r}) only applies to .npz files")
    if ext == ".npz":
        return _load_npz(p, key)
    if ext == ".dat":
        assert n_items is not None  # checked above, before the file is touched
        return _load_dat(p, n_items)
    return _READERS[ext](p)


def _check_readable(p: Path) -> None:
    ext = p.suffix.lower()
    if ext not in SUPPORTED_EXTENSIONS:
        shown = f"extension {ext!r}" if ext else "no extension"
        raise InvalidDataError(
            f"{p}: unknown file type ({shown}); dpmean reads {', '.join(SUPPORTED_EXTENSIONS)}"
        )
    try:
        st = p.stat()
    except FileNotFoundError:
        raise InvalidDataError(f"{p}: no such file") from None
    except OSError as exc:
        raise InvalidDataError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if p.is_dir():
        raise InvalidDataError(f"{p}: is a directory, not a data file")
    if not os.access(p, os.R_OK):
        raise InvalidDataError(f"{p}: cannot read: permission denied")
    if st.st_size == 0:
        raise InvalidDataError(f"{p}: the file is empty")


def _read_bytes(p: Path) -> bytes:
    try:
        return p.read_bytes()
    except OSError as exc:
        raise InvalidDataError(f"{p}: cannot read: {exc.strerror or exc}") from None


def _read_text(p: Path, kind: str) -> str:
    try:
        return _read_bytes(p).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidDataError(f"{p}: not a text {kind} file (it is not valid UTF-8)") from None


def _check_numeric(p: Path, arr: np.ndarray, what: str = "") -> np.ndarray:
    if not (np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)):
        raise InvalidDataError(f"{p}: {what}holds non-numeric values ({dtype_kind(arr.dtype)})")
    return arr


# Errors numpy and zipfile raise on a damaged or mislabelled .npy/.npz file.
_NUMPY_LOAD_ERRORS = (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error)


def _load_npy(p: Path) -> np.ndarray:
    try:
        obj = np.load(p, allow_pickle=False)
    except _NUMPY_LOAD_ERRORS as exc:
        raise InvalidDataError(f"{p}: not a valid .npy file ({_npy_reason(exc)})") from None
    if isinstance(obj, np.lib.npyio.NpzFile):
        obj.close()
        raise InvalidDataError(f"{p}: is an .npz archive, not a .npy array; rename it to .npz")
    return _check_numeric(p, obj)


def _load_npz(p: Path, key: str | None) -> np.ndarray | scipy.sparse.csr_matrix:
    try:
        obj = np.load(p, allow_pickle=False)
    except _NUMPY_LOAD_ERRORS as exc:
        raise InvalidDataError(f"{p}: not a valid .npz file ({_npy_reason(exc)})") from None
    if not isinstance(obj, np.lib.npyio.NpzFile):
        raise InvalidDataError(f"{p}: is a .npy array, not an .npz archive; rename it to .npy")
    with obj:
        keys = list(obj.files)
        if not keys:
            raise InvalidDataError(f"{p}: the archive holds no arrays")
        if key is None and {"format", "shape", "data"} <= set(keys):
            return _load_sparse_npz(p)
        if key is None:
            if len(keys) > 1:
                raise InvalidDataError(
                    f"{p}: holds several arrays ({', '.join(keys)}); choose one with key= "
                    f"(--key on the command line)"
                )
            key = keys[0]
        elif key not in keys:
            raise InvalidDataError(
                f"{p}: no array named {key!r}; the archive holds {', '.join(keys)}"
            )
        try:
            arr = obj[key]
        except _NUMPY_LOAD_ERRORS as exc:
            raise InvalidDataError(
                f"{p}: array {key!r} cannot be read ({_npy_reason(exc)})"
            ) from None
    return _check_numeric(p, arr, f"array {key!r} ")


def _load_sparse_npz(p: Path) -> scipy.sparse.csr_matrix:
    """A matrix saved with ``scipy.sparse.save_npz`` (which reads without unpickling)."""
    try:
        mat = scipy.sparse.load_npz(p)
    except (*_NUMPY_LOAD_ERRORS, KeyError) as exc:
        raise InvalidDataError(
            f"{p}: looks like a scipy.sparse .npz but cannot be read ({_npy_reason(exc)})"
        ) from None
    return scipy.sparse.csr_matrix(mat)


def _npy_reason(exc: BaseException) -> str:
    text = str(exc)
    if "pickle" in text.lower():
        return ("it holds Python objects or is not a numpy file; dpmean only reads numeric "
                "arrays and never unpickles")
    return text.splitlines()[0] if text else type(exc).__name__


def _load_csv(p: Path) -> np.ndarray:
    lines = _read_text(p, "CSV").split("\n")
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise InvalidDataError(f"{p}: the file holds no rows")
    start = 0 if _parse_row(lines[0]) is not None else 1
    header = None if start == 0 else lines[0]
    body = lines[start:]
    if not body:
        raise InvalidDataError(f"{p}: the file holds a header line but no rows of numbers")
    try:
        arr = np.loadtxt(body, delimiter=",", dtype=np.float64, ndmin=2, comments=None,
                         quotechar='"')
    except ValueError:
        arr = None
    # loadtxt skips blank lines and rejects a few spellings float() takes; the careful scan
    # names the line and column of the first problem, or reads the file if there is none.
    if arr is None or arr.shape[0] != len(body):
        arr = _scan_csv(p, body, start)
    if header is not None:
        n_names = len(header.split(","))
        if n_names != arr.shape[1]:
            raise InvalidDataError(
                f"{p}: the header (line 1) has {n_names} names but the rows have "
                f"{arr.shape[1]} values"
            )
    return arr


def _parse_cell(cell: str) -> float | None:
    cell = cell.strip()
    if len(cell) >= 2 and cell[0] == cell[-1] == '"':
        cell = cell[1:-1].strip()
    try:
        return float(cell)
    except ValueError:
        return None


def _parse_row(line: str) -> list[float] | None:
    values = [_parse_cell(c) for c in line.split(",")]
    numbers_ = [v for v in values if v is not None]
    return numbers_ if len(numbers_) == len(values) else None


def cell_error(p: Path, lineno: int, column: int) -> InvalidDataError:
    """The error for a CSV cell that is not a number. It says where (line and column, counted
    from 1) but not what the cell holds: a service that forwards error messages would leak it."""
    return InvalidDataError(
        f"{p}: line {lineno}, column {column} is not a number (empty, text, or a malformed "
        f"number); fix the cell or remove the row")


def find_bad_cell(line: str) -> int | None:
    """The 1-based column of the first cell of a CSV line that is not a number, if any."""
    for j, cell in enumerate(line.split(",")):
        if _parse_cell(cell) is None:
            return j + 1
    return None


def _scan_csv(p: Path, body: list[str], start: int) -> np.ndarray:
    rows: list[list[float]] = []
    for i, line in enumerate(body):
        lineno = start + i + 1
        if not line.strip():
            raise InvalidDataError(
                f"{p}: line {lineno} is empty (only empty lines at the end are allowed)"
            )
        cells = line.split(",")
        if rows and len(cells) != len(rows[0]):
            raise InvalidDataError(
                f"{p}: line {lineno} has {len(cells)} values but line {start + 1} has "
                f"{len(rows[0])}"
            )
        row = []
        for j, cell in enumerate(cells):
            value = _parse_cell(cell)
            if value is None:
                raise cell_error(p, lineno, j + 1)
            row.append(value)
        rows.append(row)
    return np.array(rows, dtype=np.float64)


def _load_parquet(p: Path) -> np.ndarray:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InvalidDataError(
            f'{p}: reading .parquet files needs pyarrow: pip install "dpmean[parquet]"'
        ) from None
    try:
        table = pq.read_table(p)
    except (pa.ArrowException, OSError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InvalidDataError(f"{p}: not a valid .parquet file ({reason})") from None
    if table.num_columns == 0:
        raise InvalidDataError(f"{p}: the table has no columns")
    columns = []
    for name, column in zip(table.column_names, table.columns, strict=True):
        t = column.type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
            raise InvalidDataError(
                f"{p}: column {name!r} has type {t}; only numeric columns can be used"
            )
        # Nulls become NaN, which the estimators then report.
        values = column.cast(pa.float64()) if column.null_count else column
        columns.append(np.asarray(values.to_numpy()))
    return np.column_stack(columns)


def _load_dat(p: Path, n_items: int) -> scipy.sparse.csr_matrix:
    text = _read_text(p, "transaction (.dat)")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline ending the last basket does not start another
    baskets = [line.split() for line in lines]
    if not baskets:
        raise InvalidDataError(f"{p}: the file holds no baskets")
    counts = np.fromiter((len(b) for b in baskets), dtype=np.int64, count=len(baskets))
    flat = [tok for b in baskets for tok in b]
    if not flat:
        raise InvalidDataError(f"{p}: the file holds {len(baskets)} baskets but no item ids")
    ids = None
    # numpy's str -> int parsing is fast but lenient ("+5", non-ASCII digits); use it only when
    # the text is plain digits and whitespace, and let the careful scan judge anything else.
    if _PLAIN_BASKETS.fullmatch(text):
        try:
            ids = np.array(flat).astype(np.int64)
        except (ValueError, OverflowError):
            ids = None
    if ids is None or ids.min() < 0 or ids.max() >= n_items:
        ids = _scan_dat(p, baskets, n_items)
    indptr = np.zeros(len(baskets) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    # The width is the public n_items, never the largest id: see N_ITEMS_HELP.
    mat = scipy.sparse.csr_matrix(
        (np.ones(ids.shape[0], dtype=np.float64), ids, indptr), shape=(len(baskets), n_items)
    )
    mat.sum_duplicates()
    mat.data[:] = 1.0  # a repeated item in one basket counts once
    return mat


def check_basket(p: Path, lineno: int, tokens: list[str], n_items: int) -> list[int]:
    """The item ids of one basket (its whitespace-split tokens), each an ASCII integer in
    0 .. n_items - 1. A bad one raises an InvalidDataError saying where it is (line, position
    in the basket) and what is allowed, never the token itself: a service that forwards error
    messages would leak it."""
    ids = []
    for j, tok in enumerate(tokens):
        where = f"{p}: line {lineno}, item {j + 1}"
        if not (tok.isascii() and tok.isdigit()):
            raise InvalidDataError(
                f"{where} is not an item id (a non-negative integer written in ASCII digits); "
                f"fix or remove it")
        digits = tok.lstrip("0")
        # More than 10 digits is above any allowed n_items (and int() of thousands of digits
        # would be refused by Python itself).
        if len(digits) > 10 or int(tok) >= n_items:
            raise InvalidDataError(
                f"{where}: the item id is not below n_items={n_items} (ids run from 0 to "
                f"{n_items - 1}); remove the item or pass the catalogue's true number of items")
        ids.append(int(tok))
    return ids


def _scan_dat(p: Path, baskets: list[list[str]], n_items: int) -> np.ndarray:
    ids = []
    for i, basket in enumerate(baskets):
        ids += check_basket(p, i + 1, basket, n_items)
    return np.array(ids, dtype=np.int64)


_READERS = {".npy": _load_npy, ".csv": _load_csv, ".parquet": _load_parquet}


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` so that readers see the old file or the new one,
    never a half-written one."""
    _write_atomic(Path(path), lambda fh: fh.write(text.encode("utf-8")))


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see ``write_text_atomic``)."""
    _write_atomic(Path(path), lambda fh: fh.write(data))


def _write_atomic(path: Path, write) -> None:
    # The temporary file lives in the target's directory so os.replace is a rename on one file
    # system. os.open with mode 0o666 lets the umask set the permissions, as a plain open would.
    directory = path.parent
    for _ in range(100):
        tmp = directory / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 100 collisions of 48 random bits
        raise FileExistsError(f"could not create a temporary file next to {path}")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
