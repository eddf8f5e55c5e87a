"""The chunked engine: aggregate questions about data read in bounded row chunks, one pass each.

For files bigger than memory (IOME and PLAN at scale, issue 8): peak memory O(chunk x d) whatever
n is, apart from answers that are themselves n-long (row norms) and a block of n x width values
in the column questions (order statistics, pair differences), which go through a temporary
column-major file (``engines.base.spilled_column_blocks``).
"""

from __future__ import annotations

import os
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from ..errors import InvalidDataError, InvalidParameterError
from ..io import cell_error, check_basket, check_n_items, find_bad_cell
from ..transforms import BoxClamp, View
from ..validation import check_data
from .base import Engine, spilled_column_blocks
from .memory import InMemoryEngine

# Bytes of one chunk of rows (float64, at the view's width): large enough that the per-chunk
# overhead vanishes, small enough that a chunk and its rotated copy stay far below memory.
CHUNK_BYTES = 64 << 20
_PLAIN_BASKET = re.compile(r"[0-9 \t\r\n]*")


class RowSource(ABC):
    """Rows of a (n, d) table read front to back in chunks; ``shape`` is known up front."""

    shape: tuple[int, int]

    @abstractmethod
    def chunks(self, rows: int) -> Iterator[np.ndarray]:
        """Consecutive row blocks of at most ``rows`` rows (any numeric dtype), in row order."""

    def read_all(self) -> np.ndarray:
        """All rows in memory, validated (for the engines that need them whole)."""
        rows = max(1, CHUNK_BYTES // (8 * self.shape[1]))
        return check_data(np.concatenate(list(self.chunks(rows))))


class ArraySource(RowSource):
    """An array (typically an ``np.memmap``) sliced in row blocks."""

    def __init__(self, x: np.ndarray) -> None:
        self._x = x[:, None] if x.ndim == 1 else x
        self.shape = self._x.shape

    def chunks(self, rows: int) -> Iterator[np.ndarray]:
        for start in range(0, self.shape[0], rows):
            yield self._x[start: start + rows]


class CsvSource(RowSource):
    """Comma-separated numbers, one row per line, an optional header line (as ``io.load_data``).

    Opening counts the rows (one pass over the text, O(1) memory)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        n, first = 0, None
        with _open_text(path) as f:
            for line in f:
                if line.strip():
                    n += 1
                    first = line if first is None else first
        if first is None:
            raise InvalidDataError(f"{path}: the file holds no rows")
        self._header = _parse_csv([first]) is None
        n -= self._header
        if n == 0:
            raise InvalidDataError(f"{path}: the file holds a header but no rows")
        width = len(first.split(","))
        self.shape = (n, width)

    def chunks(self, rows: int) -> Iterator[np.ndarray]:
        with _open_text(self._path) as f:
            # (line number, text) of the non-blank lines, so that errors can say where.
            lines = ((i, line) for i, line in enumerate(f, start=1) if line.strip())
            if self._header:
                next(lines)
            batch: list[tuple[int, str]] = []
            for item in lines:
                batch.append(item)
                if len(batch) == rows:
                    yield self._parse(batch)
                    batch = []
            if batch:
                yield self._parse(batch)

    def _parse(self, batch: list[tuple[int, str]]) -> np.ndarray:
        block = _parse_csv([line for _, line in batch])
        if block is not None and block.shape[1] == self.shape[1]:
            return block
        # The careful scan, line by line: it names the line and column of the first problem
        # (never the cell's contents), or reads what loadtxt would not (as io.load_data does).
        rows = []
        for lineno, line in batch:
            cells = line.split(",")
            if len(cells) != self.shape[1]:
                raise InvalidDataError(f"{self._path}: line {lineno} has {len(cells)} values, "
                                       f"the first row has {self.shape[1]}")
            column = find_bad_cell(line)
            if column is not None:
                raise cell_error(self._path, lineno, column)
            rows.append([float(_strip_quotes(c)) for c in cells])
        return np.array(rows, dtype=np.float64)


class ParquetSource(RowSource):
    """A table of numeric columns, read in record batches (needs pyarrow)."""

    def __init__(self, path: Path) -> None:
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise InvalidDataError(
                f'{path}: reading .parquet files needs pyarrow: pip install "dpmean[parquet]"'
            ) from None
        self._path = path
        try:
            self._file = pq.ParquetFile(path)
        except Exception as exc:  # pyarrow raises several unrelated types for a bad file
            raise InvalidDataError(f"{path}: not a valid .parquet file ({exc})") from None
        self.shape = (self._file.metadata.num_rows, self._file.metadata.num_columns)

    def chunks(self, rows: int) -> Iterator[np.ndarray]:
        for batch in self._file.iter_batches(batch_size=rows):
            # Nulls become NaN, which the engine then reports.
            yield np.column_stack([np.asarray(c.to_numpy(zero_copy_only=False), dtype=np.float64)
                                   for c in batch.columns])


class DatSource(RowSource):
    """Transaction baskets (one line each, space-separated item ids) as dense 0/1 chunks of
    shape (rows, n_items). ``n_items`` is public (see ``io.N_ITEMS_HELP``): the width is never
    read from the ids. Opening reads the file once for n and checks every id is below it."""

    def __init__(self, path: Path, n_items: int) -> None:
        self._path = path
        self._n_items = check_n_items(n_items)
        n, any_item = 0, False
        with _open_text(path) as f:
            for n, line in enumerate(f, start=1):
                any_item |= _basket_ids(line, path, n, self._n_items).size > 0
        if not any_item:
            raise InvalidDataError(f"{path}: the file holds no item ids")
        self.shape = (n, self._n_items)

    def chunks(self, rows: int) -> Iterator[np.ndarray]:
        with _open_text(self._path) as f:
            block = np.zeros((rows, self.shape[1]))
            i = 0
            for lineno, line in enumerate(f, start=1):
                block[i, _basket_ids(line, self._path, lineno, self._n_items)] = 1.0
                i += 1
                if i == rows:
                    yield block
                    block, i = np.zeros((rows, self.shape[1])), 0
            if i:
                yield block[:i]


def open_source(path: str | os.PathLike, *, n_items: int | None = None) -> RowSource:
    """A RowSource for a ``.npy`` (memory-mapped), ``.csv``, ``.parquet`` or ``.dat`` file.

    Parameters
    ----------
    path : str or os.PathLike
        The file; its extension chooses the reader.
    n_items : int, optional
        For ``.dat`` basket files only, and required for them: the public number of items,
        the width d of the rows (item ids must lie in 0 .. n_items - 1).

    Raises
    ------
    InvalidDataError
        The file is missing or malformed (messages give positions, never values).
    InvalidParameterError
        A ``.dat`` file without ``n_items``, or ``n_items`` for another format.
    """
    p = Path(path)
    ext = p.suffix.lower()
    if ext == ".dat":
        n_items = check_n_items(n_items)
    elif n_items is not None:
        raise InvalidParameterError(f"{p}: n_items ({n_items!r}) only applies to .dat files")
    if not p.is_file():
        raise InvalidDataError(f"{p}: no such file")
    if ext == ".npy":
        try:
            x = np.load(p, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise InvalidDataError(f"{p}: not a valid .npy file ({exc})") from None
        if x.ndim not in (1, 2) or not (np.issubdtype(x.dtype, np.number)
                                        or np.issubdtype(x.dtype, np.bool_)):
            raise InvalidDataError(f"{p}: needs a 1-D or 2-D numeric array, got shape "
                                   f"{x.shape} of {x.dtype}")
        return ArraySource(x)
    if ext == ".dat":
        assert n_items is not None  # checked above, before the file is touched
        return DatSource(p, n_items)
    readers: dict[str, Callable[[Path], RowSource]] = {".csv": CsvSource,
                                                       ".parquet": ParquetSource}
    if ext not in readers:
        raise InvalidDataError(f"{p}: the chunked engine reads .npy, .csv, .parquet and .dat "
                               f"files, not {ext or 'files without extension'}")
    return readers[ext](p)


class ChunkedEngine(Engine):
    """Answers every aggregate question in one pass over a RowSource (or an array).

    Each chunk is validated (no NaN or inf) and answered by an InMemoryEngine over that chunk
    alone, which clamps it and applies the view: the per-block computations are the in-memory
    engine's, and nothing from one chunk outlives its pass (the rotated copy the in-memory
    engine caches for the whole data is recomputed per pass instead, which is what bounds the
    memory). ``chunk_rows`` defaults to CHUNK_BYTES of float64 at the widest view width.
    """

    def __init__(self, source: RowSource | np.ndarray, lo: np.ndarray, hi: np.ndarray,
                 chunk_rows: int | None = None, scale: np.ndarray | None = None) -> None:
        self._box = BoxClamp.of(lo, hi, scale)
        self.lo, self.hi = self._box.out_lo, self._box.out_hi
        self._source = source if isinstance(source, RowSource) else ArraySource(source)
        self.n, self.d = self._source.shape
        # A rotation pads to at most 2 d columns.
        self._rows = chunk_rows or max(1, CHUNK_BYTES // (8 * 2 * self.d))

    def _each_chunk(self, question: Callable[[InMemoryEngine], np.ndarray]) -> Iterator:
        for chunk in self._source.chunks(self._rows):
            yield question(InMemoryEngine(check_data(chunk), self._box.lo, self._box.hi,
                                          self._box.scale))

    def coordinate_counts(self, view: View, thresholds: np.ndarray) -> np.ndarray:
        return sum(self._each_chunk(lambda e: e.coordinate_counts(view, thresholds)))

    def row_norms(self, view: View) -> np.ndarray:
        return np.concatenate(list(self._each_chunk(lambda e: e.row_norms(view))))

    def clipped_sum(self, view: View, radius: float) -> np.ndarray:
        return sum(self._each_chunk(lambda e: e.clipped_sum(view, radius)))

    def clipped_outer_sum(self, view: View, radius: float) -> np.ndarray:
        return sum(self._each_chunk(lambda e: e.clipped_outer_sum(view, radius)))

    def column_blocks(self, view: View, width: int) -> Iterator[tuple[slice, np.ndarray]]:
        # One pass writes the finished chunks to a column-major temporary file; the column
        # blocks are read back from it, so memory is O(chunk x k + n x width), never n x k.
        k = view.output_dim(self.d)
        finished = self._each_chunk(lambda e: next(e.column_blocks(view, k))[1])
        return spilled_column_blocks(finished, self.n, k, width)

    def user_rows(self, view: View) -> Iterator[np.ndarray]:
        for chunk in self._source.chunks(self._rows):
            yield view.apply(self._box(check_data(chunk)))

    def paired(self, order: np.ndarray) -> Engine:
        # The differences go to a temporary file when large (``pair_differences``), and a
        # chunked engine reads them in chunks: memory stays O(chunk x d).
        width = self.hi - self.lo
        return ChunkedEngine(self.pair_differences(View(), order), -width, width,
                             chunk_rows=self._rows)


def _open_text(path: Path):
    try:
        return open(path, encoding="utf-8-sig")
    except OSError as exc:
        raise InvalidDataError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _parse_csv(lines: list[str]) -> np.ndarray | None:
    """The lines as a float64 block (quoted cells allowed, as io.load_data), or None."""
    try:
        return np.loadtxt(lines, delimiter=",", ndmin=2, dtype=np.float64, comments=None,
                          quotechar='"')
    except ValueError:
        return None


def _strip_quotes(cell: str) -> str:
    cell = cell.strip()
    return cell[1:-1] if len(cell) >= 2 and cell[0] == cell[-1] == '"' else cell


def _basket_ids(line: str, path: Path, lineno: int, n_items: int) -> np.ndarray:
    """The item ids of one basket line, each an ASCII integer in 0 .. n_items - 1 (errors say
    where, never what the token was: ``io.check_basket``)."""
    tokens = line.split()
    # numpy's str -> int parsing is fast but lenient ("+5", non-ASCII digits): only for plain
    # digits, and only the careful check names the problem.
    if _PLAIN_BASKET.fullmatch(line):
        try:
            ids = np.array(tokens, dtype=np.int64)
        except (ValueError, OverflowError):
            ids = None
        if ids is not None and (ids.size == 0 or ids.max() < n_items):
            return ids
    return np.array(check_basket(path, lineno, tokens, n_items), dtype=np.int64)
