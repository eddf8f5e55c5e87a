"""The chunked engine: aggregate questions about data read in bounded row chunks, one pass each.

For files bigger than memory (IOME and PLAN at scale, issue 8): peak memory O(chunk x d) whatever
n is, apart from answers that are themselves n-long (row norms) and a block of n x width values
in the column questions (order statistics, pair differences), which go through a temporary
column-major file (``engines.base.spilled_column_blocks``).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidDataError, InvalidParameterError
from ..io import (
    NUMPY_LOAD_ERRORS,
    BasketFile,
    check_n_items,
    check_numeric_dtype,
    npy_reason,
    open_table,
)
from ..tables import CsvTable, ParquetTable
from ..transforms import BoxClamp, View
from ..validation import check_data
from .base import Engine, spilled_column_blocks
from .memory import InMemoryEngine

# Bytes of one chunk of rows (float64, at the view's width): large enough that the per-chunk
# overhead vanishes, small enough that a chunk and its rotated copy stay far below memory.
CHUNK_BYTES = 64 << 20


class RowSource(ABC):
    """Rows of a (n, d) table read front to back in chunks; ``shape`` is known up front."""

    shape: tuple[int, int]
    # The columns' names where the format has them (a CSV header, a Parquet schema).
    column_names: tuple[str, ...] | None = None

    @abstractmethod
    def chunks(self, rows: int) -> Iterator[np.ndarray]:
        """Consecutive row blocks of at most ``rows`` rows (any numeric dtype), in row order."""

    def read_all(self) -> np.ndarray:
        """All rows in memory, validated (for the engines that need them whole)."""
        rows = max(1, CHUNK_BYTES // (8 * self.shape[1]))
        return check_data(np.concatenate(list(self.chunks(rows))))


def moved_rows(rows: Any, lo: np.ndarray, hi: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """``rows`` validated, clamped to [lo, hi] and moved by ``-offset`` (a public shift:
    ``MeanEstimator.far_box_offset``): clamped first, so the difference of two nearby floats
    is exact and no finite row can overflow."""
    return np.clip(check_data(rows), lo, hi) - offset


class ShiftedSource(RowSource):
    """Another source's rows, chunk by chunk, as ``moved_rows`` moves them."""

    def __init__(self, source: RowSource, lo: np.ndarray, hi: np.ndarray,
                 offset: np.ndarray) -> None:
        self._source, self._lo, self._hi, self._offset = source, lo, hi, offset
        self.shape = source.shape
        self.column_names = source.column_names

    def chunks(self, rows: int) -> Iterator[np.ndarray]:
        for chunk in self._source.chunks(rows):
            yield moved_rows(chunk, self._lo, self._hi, self._offset)


class ArraySource(RowSource):
    """An array (typically an ``np.memmap``) sliced in row blocks."""

    def __init__(self, x: np.ndarray) -> None:
        self._x = x[:, None] if x.ndim == 1 else x
        self.shape = self._x.shape

    def chunks(self, rows: int) -> Iterator[np.ndarray]:
        for start in range(0, self.shape[0], rows):
            yield self._x[start: start + rows]


class TableSource(RowSource):
    """The chosen columns of a ``.csv`` or ``.parquet`` file (``io.open_table``: the same reader
    as ``io.load_data``), re-blocked to the engine's chunk size. ``column_names`` are the
    columns' names (None for a CSV file without a header). Opening a CSV file reads it once to
    count its records (O(1) memory), judging no value: a malformed cell is refused by the
    release, after its charge (``CsvTable.count_rows``)."""

    def __init__(self, table: CsvTable | ParquetTable) -> None:
        self._table = table
        self.column_names = table.names
        if isinstance(table, ParquetTable):
            n = table.num_rows
        else:
            n = table.count_rows()
        if n == 0:
            raise InvalidDataError(f"{table.path}: the file holds a header but no rows")
        self.shape = (n, table.width)

    def chunks(self, rows: int) -> Iterator[np.ndarray]:
        blocks = (self._table.batches(rows) if isinstance(self._table, ParquetTable)
                  else self._table.batches())
        for block in blocks:
            for start in range(0, block.shape[0], rows):
                yield block[start: start + rows]


class DatSource(RowSource):
    """Transaction baskets as dense 0/1 chunks of shape (rows, n_items), parsed by
    ``io.BasketFile`` (as ``io.load_data`` parses them). ``n_items`` is public (see
    ``io.N_ITEMS_HELP``): the width is never read from the ids. Opening counts the baskets
    (its lines) without reading an id: a malformed one is refused by the release, after its
    charge."""

    def __init__(self, path: Path, n_items: int) -> None:
        self._baskets = BasketFile(path, n_items)
        self.shape = (self._baskets.count(), self._baskets.n_items)

    def chunks(self, rows: int) -> Iterator[np.ndarray]:
        for block in self._baskets.blocks(rows):
            yield block.toarray()

    def sparse(self) -> Any:
        """Every basket as one scipy.sparse CSR matrix (``io.BasketFile.read``): what the
        sparse engine reads, the same release as these dense chunks give (``Engine.baskets``).
        Reading it judges the ids, so it is called where the release reads its rows."""
        return self._baskets.read()


def open_source(path: str | os.PathLike, *, n_items: int | None = None,
                **table_options: Any) -> RowSource:
    """A RowSource for a ``.npy`` (memory-mapped), ``.csv``, ``.parquet`` or ``.dat`` file.

    Parameters
    ----------
    path : str or os.PathLike
        The file; its extension chooses the reader.
    n_items : int, optional
        For ``.dat`` basket files only, and required for them: the public number of items,
        the width d of the rows (item ids must lie in 0 .. n_items - 1).
    **table_options
        For ``.csv`` and ``.parquet`` files: ``columns`` and ``fill``, and for CSV
        ``delimiter``, ``header``, ``index_col``, ``decimal``, as ``io.load_data`` takes them.

    Raises
    ------
    InvalidDataError
        The file is missing or malformed (messages give positions, never values).
    InvalidParameterError
        A ``.dat`` file without ``n_items``, or an option of another format.
    """
    p = Path(path)
    ext = p.suffix.lower()
    if ext in (".csv", ".parquet"):
        if n_items is not None:
            raise InvalidParameterError(f"{p}: n_items ({n_items!r}) only applies to .dat files")
        return TableSource(open_table(p, **table_options))
    given = [name for name, value in table_options.items() if value is not None]
    if given:
        # Each option named with the formats it belongs to (key= on a .npy was told it
        # applies to .csv and .parquet files).
        from ..io import _OPTION_FORMATS

        formats = {name: " and ".join(_OPTION_FORMATS.get(name, (".csv", ".parquet")))
                   for name in given}
        raise InvalidParameterError(f"{p}: " + "; ".join(
            f"{name} applies to {where} files" for name, where in formats.items()))
    if ext == ".dat":
        n_items = check_n_items(n_items)
    elif n_items is not None:
        raise InvalidParameterError(f"{p}: n_items ({n_items!r}) only applies to .dat files")
    if p.is_dir():
        raise InvalidDataError(f"{p}: is a directory, not a data file")  # as io.load_data
    if not p.is_file():
        raise InvalidDataError(f"{p}: no such file")
    if ext == ".npy":
        try:
            x = np.load(p, mmap_mode="r", allow_pickle=False)
        except NUMPY_LOAD_ERRORS as exc:
            raise InvalidDataError(f"{p}: not a valid .npy file ({npy_reason(exc)})") from None
        # From the header (the array is mapped, not read): a session refuses it before its
        # charge, as the command line does; complex numbers passed as numbers (a trial).
        check_numeric_dtype(p, x.dtype)
        if x.ndim not in (1, 2):
            raise InvalidDataError(f"{p}: needs a 1-D or 2-D numeric array, got shape "
                                   f"{x.shape} of {x.dtype}")
        return ArraySource(x)
    if ext == ".dat":
        assert n_items is not None  # checked above, before the file is touched
        return DatSource(p, n_items)
    # A .npz archive holds several arrays: which one is the data is the user's to say.
    if ext == ".npz":
        raise InvalidDataError(
            f"{p}: an .npz archive is read whole, by the name of its array: give key=NAME "
            f"(dpmean.mean(path, key=NAME), dpmean.io.load_data(path, key=NAME); on the "
            f"command line --key NAME)")
    raise InvalidDataError(f"{p}: the chunked engine reads .npy, .csv, .parquet and .dat "
                           f"files, not {ext or 'files without extension'}")


class ChunkedEngine(Engine):
    """Answers every aggregate question in one pass over a RowSource (or an array).

    Each chunk is validated (no NaN or inf) and answered by an InMemoryEngine over that chunk
    alone, which clamps it and applies the view: the per-block computations are the in-memory
    engine's, and nothing from one chunk outlives its pass (the rotated copy the in-memory
    engine caches for the whole data is recomputed per pass instead, which is what bounds the
    memory). ``chunk_rows`` defaults to CHUNK_BYTES of float64 at the widest view width. So that
    IOME's medians do not pay a rotation per halving, their searches read the counts of several
    halvings from one pass (``counts_by_table``, ``coordinate_count_table``).
    """

    def __init__(self, source: RowSource | np.ndarray, lo: np.ndarray, hi: np.ndarray,
                 chunk_rows: int | None = None, scale: np.ndarray | None = None) -> None:
        self._box = BoxClamp.of(lo, hi, scale)
        self.lo, self.hi = self._box.out_lo, self._box.out_hi
        self._source = source if isinstance(source, RowSource) else ArraySource(source)
        self.n, self.d = self._source.shape
        self.baskets = isinstance(self._source, DatSource)
        # A rotation pads to at most 2 d columns.
        self._rows = chunk_rows or max(1, CHUNK_BYTES // (8 * 2 * self.d))

    def _each_chunk(self, question: Callable[[InMemoryEngine], Any]) -> Iterator:
        for chunk in self._source.chunks(self._rows):
            yield question(InMemoryEngine(check_data(chunk), self._box.lo, self._box.hi,
                                          self._box.scale))

    # Every pass reads the source again (and rotates each chunk again): searches ask for many
    # halvings' counts at once.
    counts_by_table = True

    def coordinate_counts(self, view: View, thresholds: np.ndarray) -> np.ndarray:
        return sum(self._each_chunk(lambda e: e.coordinate_counts(view, thresholds)))

    def coordinate_count_table(self, view: View, edges: np.ndarray) -> np.ndarray:
        return sum(self._each_chunk(lambda e: e.coordinate_count_table(view, edges)))

    def row_norms(self, view: View) -> np.ndarray:
        return np.concatenate(list(self._each_chunk(lambda e: e.row_norms(view))))

    def clipped_sum(self, view: View, radius: float) -> np.ndarray:
        return sum(self._each_chunk(lambda e: e.clipped_sum(view, radius)))

    def clipped_sums(self, view: View, radii: Sequence[float]) -> list[np.ndarray]:
        # One pass over the chunks; per radius the chunks' sums added in the order (and from
        # the same start, 0) that ``clipped_sum``'s ``sum`` adds them: the same bits.
        totals: list[Any] = [0] * len(radii)
        for sums in self._each_chunk(lambda e: e.clipped_sums(view, radii)):
            totals = [total + part for total, part in zip(totals, sums, strict=True)]
        return totals

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
