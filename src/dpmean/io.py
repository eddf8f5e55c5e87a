"""Reading user data files (.npy, .npz, .csv, .parquet, .dat baskets) into arrays; atomic writes.

Every mistake a user can make with a file becomes one InvalidDataError line that names the file.
"""

from __future__ import annotations

import contextlib
import numbers
import os
import re
import secrets
import stat
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import scipy.sparse

from .errors import InvalidDataError, InvalidParameterError
from .tables import CsvTable, ParquetTable
from .validation import check_real_dtype, dtype_kind

__all__ = ["SUPPORTED_EXTENSIONS", "BasketFile", "check_basket", "check_n_items",
           "check_numeric_dtype", "check_readable", "load_data", "npz_member", "open_table",
           "write_bytes_atomic", "write_text_atomic"]

SUPPORTED_EXTENSIONS = (".npy", ".npz", ".csv", ".parquet", ".dat")

# Item ids become column indices; scipy's default int32 indices cap them.
_MAX_ITEM_ID = np.iinfo(np.int32).max - 1
_PLAIN_BASKETS = re.compile(r"[0-9 \t\r\n]*")


# Why a basket file's number of items D is an input, for every message that asks for it (the
# command line's --items D too).
N_ITEMS_WHY = (
    "D is the public number of items, fixed before looking at the data; item ids must run from "
    "0 to D - 1 (a file with ids 1..K needs D = K + 1, column 0 stays empty). D is d, the "
    "length of the released mean, and d must be public: taking it from the largest id in the "
    "file would let one basket with one rare item change it, an unbounded privacy loss."
)
N_ITEMS_HELP = (
    "a .dat basket file needs n_items=D, given with the path to dpmean.mean or Session.mean, "
    "or to its reader, dpmean.engines.open_source(path, n_items=D) (read in chunks) or "
    "dpmean.io.load_data(path, n_items=D) (a scipy.sparse matrix), whose result any "
    "estimator takes in place of the path; on the command line, --items D. " + N_ITEMS_WHY
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
    path: str | os.PathLike, *, key: str | None = None, n_items: int | None = None,
    columns: Sequence[str] | str | None = None, delimiter: str | None = None,
    header: bool | None = None, index_col: bool | None = None, decimal: str | None = None,
    fill: Mapping[str, float] | None = None,
) -> np.ndarray | scipy.sparse.csr_matrix:
    """Read a data file, choosing the reader by the file's extension.

    - ``.npy``: one array (``allow_pickle=False``: object arrays are refused).
    - ``.npz``: ``key`` names the array; a file holding a single array needs no key. A file
      written by ``scipy.sparse.save_npz`` is read (without a key) as a sparse matrix.
    - ``.csv``: read by ``pyarrow.csv`` (quoted cells, CRLF, a UTF-8 byte-order mark; blank
      lines skipped). The delimiter is ``delimiter`` or sniffed from the first line (comma, tab,
      semicolon or bar). The first line is a header when none of its cells is a number, and
      data when all of them are; a first line that mixes numbers with text or empty cells is
      refused (a row with a missing value looks just like a header with a name that is a
      number). ``header=True`` reads it as a header (but refuses names that are numbers,
      e.g. pandas' default names 0 .. d-1, which cannot be told from a person's row; without
      it such a line is read as data: name the columns before writing), ``header=False`` as
      data. An empty first header cell marks pandas' index column, which
      is dropped (``index_col=True`` drops the first column always, ``False`` never).
      ``nan``/``inf`` cells are read as floats (the estimators reject them); ``True`` and
      ``False`` (any case) as 1 and 0. ``decimal=","`` reads numbers with a decimal comma
      (1,5), as European spreadsheets write them with ``;`` between cells. Details:
      ``dpmean.tables.CsvTable``.
    - ``.parquet``: a table of numeric (or boolean) columns (a pandas index is not a column).
    - ``fill`` (``.csv`` with a header, and ``.parquet``): a public value for each named
      column's missing cells (an empty CSV cell, quoted or not; a Parquet null; a NaN), given
      before the file is read. Each such cell takes its column's value, row by row, and n is
      unchanged, so the privacy of a release on the filled rows is as stated; the number of
      cells filled is not reported (it is not private). An empty cell of a column without a
      fill is refused, as without any.
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
    columns : sequence of str or str, optional
        For ``.csv`` (with a header) and ``.parquet``: the columns to read, by name, in order;
        default all (each must then be numeric).
    delimiter, header, index_col, decimal : optional
        For ``.csv`` only, as described above.
    fill : mapping of str to float, optional
        For ``.csv`` and ``.parquet``: each named column's public value for its missing
        cells, as described above.

    Returns
    -------
    numpy.ndarray or scipy.sparse.csr_matrix
        The rows; ``open_table`` also gives a table's column names.

    Raises
    ------
    InvalidDataError
        The file is missing, is a directory, is empty, has an unknown extension, is not what
        its extension says, or its contents are malformed (an item id outside 0 .. n_items - 1
        included), or a chosen column is missing or not numeric. Messages name the file and the
        line or column, never a value read from it.
    InvalidParameterError
        A ``.dat`` file without ``n_items``, or an option of another format.
    """
    p = Path(path)
    ext = p.suffix.lower()
    _check_options(p, n_items=n_items, key=key, columns=columns, delimiter=delimiter,
                   header=header, index_col=index_col, decimal=decimal, fill=fill)
    if ext in (".csv", ".parquet"):
        return open_table(p, columns=columns, delimiter=delimiter, header=header,
                          index_col=index_col, decimal=decimal, fill=fill).read()
    check_readable(p)
    if ext == ".npz":
        return _load_npz(p, key)
    if ext == ".dat":
        assert n_items is not None  # checked above, before the file is touched
        return BasketFile(p, n_items).read()
    return _load_npy(p)


# The formats each reader option applies to.
_OPTION_FORMATS = {"key": (".npz",), "n_items": (".dat",), "columns": (".csv", ".parquet"),
                   "delimiter": (".csv",), "header": (".csv",), "index_col": (".csv",),
                   "decimal": (".csv",), "fill": (".csv", ".parquet")}


def _check_options(p: Path, **options) -> None:
    """Refuse a reader option given for a format it does not apply to; require n_items for a
    .dat file (before the file is touched)."""
    ext = p.suffix.lower()
    if ext == ".dat":
        check_n_items(options.get("n_items"))
    for name, value in options.items():
        if value is not None and ext not in _OPTION_FORMATS[name]:
            # A key names something in the file (a data error since the first release).
            error = InvalidDataError if name == "key" else InvalidParameterError
            raise error(
                f"{p}: {name} ({value!r}) only applies to "
                f"{' and '.join(_OPTION_FORMATS[name])} files")


def open_table(
    path: str | os.PathLike, *, columns: Sequence[str] | str | None = None,
    delimiter: str | None = None, header: bool | None = None, index_col: bool | None = None,
    key: str | None = None, n_items: int | None = None, decimal: str | None = None,
    fill: Mapping[str, float] | None = None,
) -> CsvTable | ParquetTable:
    """A ``.csv`` or ``.parquet`` file opened for reading (layout and chosen columns checked, no
    rows read yet); options as in ``load_data``. ``.names`` are the chosen columns' names
    (None for a CSV file without a header), ``.read()`` the rows, ``.batches()`` row blocks.

    ``key`` and ``n_items`` (the ``.npz`` and ``.dat`` readers' options) are refused as
    ``load_data`` refuses them: they are taken here so that a table opened through
    ``engines.open_source`` or a Dask array says so, where it was a TypeError.
    """
    p = Path(path)
    ext = p.suffix.lower()
    if ext not in (".csv", ".parquet"):
        raise InvalidParameterError(f"{p}: open_table reads .csv and .parquet files")
    _check_options(p, columns=columns, delimiter=delimiter, header=header, index_col=index_col,
                   key=key, n_items=n_items, decimal=decimal, fill=fill)
    check_readable(p)
    if ext == ".parquet":
        return ParquetTable(p, columns=columns, fill=fill)
    return CsvTable(p, columns=columns, delimiter=delimiter, header=header, index_col=index_col,
                    decimal=decimal, fill=fill)


def check_readable(p: Path) -> None:
    """Refuse a path that is not a readable, non-empty data file of a known format, from its
    name and the file system alone (no value read): the readers, and the CLI before a
    ledger's charge."""
    ext = p.suffix.lower()
    if ext not in SUPPORTED_EXTENSIONS:
        if p.is_dir():  # as a directory named .csv is told (a trial)
            raise InvalidDataError(f"{p}: is a directory, not a data file")
        shown = f"extension {ext!r}" if ext else "no extension"
        # A tab-separated file is a CSV file whose delimiter is a tab (a trial).
        hint = (" (a tab-separated file is read as .csv: rename it; the delimiter is found "
                "from its first line, or give --delimiter)" if ext in (".tsv", ".tab", ".txt")
                else "")
        raise InvalidDataError(
            f"{p}: unknown file type ({shown}); dpmean reads "
            f"{', '.join(SUPPORTED_EXTENSIONS)}{hint}")
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


def _check_numeric(p: Path, arr: np.ndarray, what: str = "") -> np.ndarray:
    check_numeric_dtype(p, arr.dtype, what)
    return arr


def check_numeric_dtype(p: Path, dtype: np.dtype, what: str = "") -> None:
    """Refuse an array type that is not real numbers (or booleans): from the type alone, so
    the CLI checks an array's header with it before a ledger's charge, as the reader checks
    the array."""
    if not (np.issubdtype(dtype, np.number) or np.issubdtype(dtype, np.bool_)):
        raise InvalidDataError(f"{p}: {what}holds non-numeric values ({dtype_kind(dtype)})")
    try:
        # numpy counts complex numbers and timedelta64 as numbers: refused here with the
        # estimators' own message, which they gave only after a ledger's charge (a trial).
        check_real_dtype(dtype)
    except InvalidDataError as exc:
        raise InvalidDataError(f"{p}: {what.strip() + ': ' if what else ''}{exc}") from None


# Errors numpy and zipfile raise on a damaged, mislabelled or crafted .npy/.npz file: numpy's
# header parser lets through a TypeError (a key that is not a string), tokenize's error (an
# unbalanced quote) and others, which printed tracebacks or came after a session's charge (a
# review): any error of reading the file is the file's.
NUMPY_LOAD_ERRORS = (Exception,)


def _load_npy(p: Path) -> np.ndarray:
    try:
        obj = np.load(p, allow_pickle=False)
    except NUMPY_LOAD_ERRORS as exc:
        raise InvalidDataError(f"{p}: not a valid .npy file ({npy_reason(exc)})") from None
    if isinstance(obj, np.lib.npyio.NpzFile):
        obj.close()
        raise InvalidDataError(f"{p}: is an .npz archive, not a .npy array; rename it to .npz")
    return _check_numeric(p, obj)


def not_an_npz(p: Path, exc: BaseException | None) -> InvalidDataError:
    """The error for a file named .npz that is not a readable archive (``exc``: why numpy or
    zipfile could not read it): a .npy array by its magic bytes is told to be renamed. The
    reader and the CLI's header-only check (``cli.estimate._npz_layout``) say the same."""
    try:
        with open(p, "rb") as f:
            npy = f.read(6) == b"\x93NUMPY"
    except OSError:
        npy = False
    if npy:
        return InvalidDataError(f"{p}: is a .npy array, not an .npz archive; rename it to .npy")
    return InvalidDataError(f"{p}: not a valid .npz file "
                            f"({npy_reason(exc) if exc is not None else 'not a zip archive'})")


def _load_npz(p: Path, key: str | None) -> np.ndarray | scipy.sparse.csr_matrix:
    try:
        obj = np.load(p, allow_pickle=False)
    except NUMPY_LOAD_ERRORS as exc:
        raise not_an_npz(p, exc) from None
    if not isinstance(obj, np.lib.npyio.NpzFile):
        raise not_an_npz(p, None)
    with obj:
        key = npz_member(p, list(obj.files), key)
        if key is None:
            return _load_sparse_npz(p)
        try:
            arr = obj[key]
        except NUMPY_LOAD_ERRORS as exc:
            raise InvalidDataError(
                f"{p}: array {key!r} cannot be read ({npy_reason(exc)})"
            ) from None
    return _check_numeric(p, arr, f"array {key!r} ")


def npz_member(p: Path, keys: list[str], key: str | None) -> str | None:
    """The array of an .npz archive (its array names ``keys``) that ``key`` chooses: ``key``
    itself, or the only array without one; None for a matrix written by
    ``scipy.sparse.save_npz`` (read whole, without a key). From the names alone: the CLI checks
    them before a ledger's charge, the reader when it reads.

    Raises
    ------
    InvalidDataError
        No arrays, several without a key, or no array named ``key``.
    """
    if not keys:
        raise InvalidDataError(f"{p}: the archive holds no arrays")
    if {"format", "shape", "data"} <= set(keys):
        if key is not None:
            # Its members are the matrix's internals, not rows: one person's row moves many
            # entries of ``indptr`` and gives several of ``data``, so no stated sensitivity
            # holds for them (a review released ``indptr`` as a column of n + 1 rows).
            raise InvalidDataError(
                f"{p}: is a scipy.sparse matrix (scipy.sparse.save_npz); it is read whole, "
                f"without key= (--key), whose arrays are its internal parts, not rows")
        return None
    if key is None:
        if len(keys) > 1:
            raise InvalidDataError(
                f"{p}: holds several arrays ({', '.join(keys)}); choose one with key= "
                f"(--key on the command line)"
            )
        return keys[0]
    if key not in keys:
        raise InvalidDataError(
            f"{p}: no array named {key!r}; the archive holds {', '.join(keys)}"
        )
    return key


def _load_sparse_npz(p: Path) -> scipy.sparse.csr_matrix:
    """A matrix saved with ``scipy.sparse.save_npz`` (which reads without unpickling)."""
    try:
        mat = scipy.sparse.load_npz(p)
    except (*NUMPY_LOAD_ERRORS, KeyError) as exc:
        raise InvalidDataError(
            f"{p}: looks like a scipy.sparse .npz but cannot be read ({npy_reason(exc)})"
        ) from None
    return scipy.sparse.csr_matrix(mat)


def npy_reason(exc: BaseException) -> str:
    """Why numpy could not read a .npy file, from its error, without any of the file's bytes:
    numpy quotes what it read ("the magic string is not correct; expected b'\\x93NUMPY', got
    b'734512'" told a file's first six bytes, a data value: a user trial), so every quoted
    part is left out."""
    text = str(exc)
    if "pickle" in text.lower():
        return ("it holds Python objects or is not a numpy file; dpmean only reads numeric "
                "arrays and never unpickles")
    if not text:
        return type(exc).__name__
    if "magic string is not correct" in text:
        return "it does not begin as a .npy file does (numpy's magic string)"
    if "format version" in text:
        return "its format version is not one numpy reads (1, 2 or 3)"
    if isinstance(exc, UnicodeError):
        return "its header is not valid text"
    # numpy names what it read after a colon, unquoted ("Header is not a dictionary:
    # 734512.25", "shape is not valid: [734512]": a review): the part before it only.
    return _QUOTED.sub("(...)", text.splitlines()[0].split(":")[0])


# A quoted part of an error message: bytes (b'...', b"..."), a string or a repr of either.
_QUOTED = re.compile(r"b?'(?:[^'\\]|\\.)*'" + r'|b?"(?:[^"\\]|\\.)*"')


class BasketFile:
    """A ``.dat`` basket file: one basket per line, whitespace-separated item ids from 0 to
    ``n_items - 1`` (``n_items`` public: see N_ITEMS_HELP). The one parser of the format: the
    in-memory reader takes all of it as one CSR matrix, the chunked engine block by block."""

    def __init__(self, path: Path, n_items: int) -> None:
        self.path = path
        self.n_items = check_n_items(n_items)

    def blocks(self, lines: int) -> Iterator[scipy.sparse.csr_matrix]:
        """Consecutive 0/1 CSR blocks of at most ``lines`` baskets, of width ``n_items``."""
        start, batch = 1, []
        try:
            # Lines end at "\n" only, as ``count`` counts them (a "\r" before it is
            # whitespace).
            with open(self.path, encoding="utf-8-sig", newline="\n") as f:
                for line in f:
                    batch.append(line)
                    if len(batch) == lines:
                        yield self._parse(batch)
                        start, batch = start + len(batch), []
        except UnicodeDecodeError:
            raise InvalidDataError(f"{self.path}: not a text transaction (.dat) file (it is "
                                   f"not valid UTF-8)") from None
        except OSError as exc:
            raise InvalidDataError(f"{self.path}: cannot read: {exc.strerror or exc}") from None
        if batch or start == 1:
            yield self._parse(batch)

    def count(self) -> int:
        """The number of baskets (public n): the file's lines, counted without reading an id
        (a count read before a charge must not fail on what a basket holds)."""
        lines, last = 0, b"\n"
        try:
            with open(self.path, "rb") as f:
                while block := f.read(1 << 24):
                    lines += block.count(b"\n")
                    last = block[-1:]
        except OSError as exc:
            raise InvalidDataError(f"{self.path}: cannot read: {exc.strerror or exc}") from None
        lines += last != b"\n"  # a last line without its line break
        if lines == 0:
            raise InvalidDataError(f"{self.path}: the file holds no baskets")
        return lines

    def read(self) -> scipy.sparse.csr_matrix:
        """Every basket as one (n_baskets, n_items) CSR matrix of 0/1 float64. Baskets may be
        empty, all of them too (n is public, how many items they hold is not)."""
        mat = scipy.sparse.vstack(list(self.blocks(1 << 16)), format="csr")
        if mat.shape[0] == 0:
            raise InvalidDataError(f"{self.path}: the file holds no baskets")
        return mat

    def _parse(self, lines: list[str]) -> scipy.sparse.csr_matrix:
        baskets = [line.split() for line in lines]
        counts = np.fromiter((len(b) for b in baskets), dtype=np.int64, count=len(baskets))
        flat = [tok for b in baskets for tok in b]
        ids = None
        # numpy's str -> int parsing is fast but lenient ("+5", non-ASCII digits): only for
        # plain digits and whitespace; the careful scan judges anything else and says where.
        if all(_PLAIN_BASKETS.fullmatch(line) for line in lines):
            try:
                ids = np.array(flat, dtype=np.str_).astype(np.int64) if flat else np.zeros(
                    0, dtype=np.int64)
            except (ValueError, OverflowError):
                ids = None
        if ids is None or (ids.size and (ids.min() < 0 or ids.max() >= self.n_items)):
            ids = np.array([i for b in baskets for i in check_basket(self.path, b, self.n_items)],
                           dtype=np.int64)
        indptr = np.zeros(len(baskets) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        # The width is the public n_items, never the largest id: see N_ITEMS_HELP.
        mat = scipy.sparse.csr_matrix((np.ones(ids.shape[0]), ids, indptr),
                                      shape=(len(baskets), self.n_items))
        mat.sum_duplicates()
        mat.data[:] = 1.0  # a repeated item in one basket counts once
        return mat


def check_basket(p: Path, tokens: list[str], n_items: int) -> list[int]:
    """The item ids of one basket (its whitespace-split tokens), each an ASCII integer in
    0 .. n_items - 1. A bad one raises an InvalidDataError saying what is allowed, and neither
    the token nor where it is: "line 237, item 2 is not below 150"
    told an analyst who chose n_items which item one person bought, and a service that
    forwards error messages would leak it too."""
    ids = []
    for tok in tokens:
        where = f"{p}: an item"
        if not (tok.isascii() and tok.isdigit()):
            raise InvalidDataError(
                f"{where} is not an item id (a non-negative integer written in ASCII digits); "
                f"fix or remove it")
        digits = tok.lstrip("0")
        # More than 10 digits is above any allowed n_items (and int() of thousands of digits
        # would be refused by Python itself).
        if len(digits) > 10 or int(tok) >= n_items:
            raise InvalidDataError(
                f"{where} id is not below n_items={n_items} (ids run from 0 to "
                f"{n_items - 1}); remove the item or pass the catalogue's true number of items")
        ids.append(int(tok))
    return ids




def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` so that readers see the old file or the new one,
    never a half-written one."""
    write_files_atomic({Path(path): text.encode("utf-8")})


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see ``write_text_atomic``)."""
    write_files_atomic({Path(path): data})


def write_files_atomic(files: Mapping[Path, bytes]) -> None:
    """Write several files as a set: each to a temporary file beside it, synced, and only when
    all are complete renamed into place, in the mapping's order. An error or an interruption
    before the renames leaves every old file (or none) and no temporary file; put first the
    file the others must not appear without. An OSError names the file it was writing (its
    ``filename``), never the hidden temporary one."""
    temporary: dict[Path, Path] = {}
    try:
        for path, data in files.items():
            try:
                temporary[path] = _synced_temporary(path, data)
            except OSError as exc:
                exc.filename = str(path)
                raise
        for path, tmp in list(temporary.items()):
            os.replace(tmp, path)
            del temporary[path]
    finally:
        for tmp in temporary.values():  # those not renamed, after an error or interruption
            tmp.unlink(missing_ok=True)


def _new_temporary(path: Path, mode: int) -> tuple[int, Path]:
    """A new hidden file beside ``path`` (its name ``path``'s and 18 characters more), open
    for writing: its descriptor and path."""
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(  # pragma: no cover - 100 collisions of 48 random bits
        f"could not create a temporary file next to {path}")


def check_can_write(path: Path) -> None:
    """Create and remove the temporary file an atomic write of ``path`` would create first
    (``write_files_atomic``): what fails there (a directory that refuses new files, such as
    /proc's, a name too long once the temporary file's 18 characters are added, a full
    directory table) fails before anything is spent, not after. An OSError says why."""
    fd, tmp = _new_temporary(path, 0o600)
    try:
        os.close(fd)
    finally:  # an interruption or a failing close leaves no file behind (a review)
        os.unlink(tmp)


def _synced_temporary(path: Path, data: bytes) -> Path:
    """``data`` in a new hidden file beside ``path``, on disk; returns its path. Where
    ``path`` is a regular file already, the new file has its permissions (and its owner and
    group, as far as this process may set them: see ``_keep_ownership``)."""
    old = _regular_file_status(path)
    # The temporary file lives in the target's directory so os.replace is a rename on one file
    # system. For a new file, os.open with mode 0o666 lets the umask set the permissions, as a
    # plain open would; one that replaces a file starts private (0o600) and takes the old
    # file's mode before any data is written, so a file its owner made private is never
    # readable to others, not even for a moment.
    fd, tmp = _new_temporary(path, 0o666 if old is None else 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            if old is not None:
                _keep_ownership(fh.fileno(), old)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def _regular_file_status(path: Path) -> os.stat_result | None:
    """``os.stat(path)`` when it is a regular file (one a write replaces), else None."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status if stat.S_ISREG(status.st_mode) else None


def _keep_ownership(fd: int, old: os.stat_result) -> None:
    """Give the open file ``fd`` the old file's owner, group and permission bits.

    A replacement made under the umask turned a ledger its owner had made ``-rw-------`` into a
    world-readable ``-rw-r--r--`` (its labels name input and output files: a user trial), and
    took the writer's owner and group. The owner is kept only where the process may give it
    (root), the group where the writer may give it (one of its groups); otherwise they stay
    the writer's, as any new file's. The set-user-ID, set-group-ID and sticky bits are not
    copied."""
    if os.name != "posix":  # pragma: no cover - no POSIX owners or modes to keep
        return
    try:
        os.fchown(fd, old.st_uid, old.st_gid)
    except OSError:
        with contextlib.suppress(OSError):
            os.fchown(fd, -1, old.st_gid)
    # After the chown, which may clear permission bits on some systems.
    os.fchmod(fd, stat.S_IMODE(old.st_mode) & 0o777)
