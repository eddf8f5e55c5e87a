"""The Dask engine: each aggregate question is one Dask reduction over row blocks of a dask.array.

Runs the estimators of IOME, PLAN and the others on a cluster (issue 8): workers return exact
aggregates, and the estimator adds noise once, on the client, after the reduce. Column
questions are answered where the rows are (issue 20): order statistics by histograms refined
on the workers (``dask_order``), pair differences gathered and kept on the workers.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..transforms import IDENTITY, BoxClamp, View
from ..validation import check_data
from .base import CHUNK_ROWS_BYTES, Engine, pairs_of, spilled_column_blocks
from .dask_order import DaskColumnOrder
from .grid_sums import OuterSplit, SplitBands
from .memory import InMemoryEngine

# A random pairing's gather takes a piece of every source block for every block of pairs, so
# its tasks grow as the square of the source blocks: the rows are gathered from at most
# _GATHER_BLOCKS blocks, each at most _GATHER_BLOCK_BYTES (a worker holds a few at a time).
# PLAN's pair distances at 10 GB (150 blocks of 64 MiB): 86.2 s, from 16 blocks 46.6 s.
_GATHER_BLOCKS = 16
_GATHER_BLOCK_BYTES = 1 << 30
# Bytes of a CSV file each worker task parses (as dask.dataframe's blocks were).
_CSV_BLOCK_BYTES = 64 << 20


def source_digest() -> str:
    """A digest of this process's dpmean: its version and the bytes of every module of the
    package (about 4 ms). Workers are asked for theirs before a release on a scheduler: the
    release's privacy rests on the code that computes it, and the version number alone does
    not change between builds."""
    import hashlib

    import dpmean

    root = Path(dpmean.__file__).parent
    digest = hashlib.sha256(dpmean.__version__.encode())
    for module in sorted(root.rglob("*.py")):
        digest.update(module.relative_to(root).as_posix().encode() + b"\0")
        digest.update(module.read_bytes())
    return digest.hexdigest()


def _answer(block: np.ndarray, box: BoxClamp, question: str, *args: Any) -> np.ndarray:
    """One block's answer, by the in-memory engine's own per-block computation."""
    return getattr(InMemoryEngine(check_data(block), box.lo, box.hi, box.scale),
                   question)(*args)


def _finish(block: np.ndarray, box: BoxClamp, rest: View) -> np.ndarray:
    return rest.finish(box(check_data(block)))


def _based(block: np.ndarray, box: BoxClamp, view: View) -> np.ndarray:
    # The in-memory engine's cache-sized blocks on its threads, one BLAS thread: a whole 64 MiB
    # block at once took 2x as long on a worker, 1.3x in a local thread (the same values).
    return InMemoryEngine(check_data(block), box.lo, box.hi, box.scale).base_rows(view)


class DaskEngine(Engine):
    """Answers aggregate questions about a dask.array ``x`` (n, d) clamped to [lo, hi] (and
    rescaled by ``scale``, if given: ``BoxClamp``).

    Uses whatever scheduler is active: a ``dask.distributed.Client`` when one exists (e.g.
    ``Client("tcp://host:8786")``), else Dask's local threads. Row blocks keep all columns.
    Like the in-memory engine it keeps the expensive part of a view (clip, quantize, rotate) for
    reuse, here persisted on the workers; shift, map and scale are applied per block. Row norms
    (n-long) and pair distances (n/2-long) are gathered on the client. The order statistics
    that PLAN's medians and variances and the trimmed mean read (``column_order``,
    ``pair_value_order``) are selected on the workers: the client receives O(k x buckets)
    histograms and the values near the ranks asked, never whole columns and never a temporary
    file. Whole columns (``column_blocks``: the private box without bounds, PLAN's
    binary-search variances, ``user_rows``) still come to the client block by block through a
    temporary file there.
    """

    def __init__(self, x: Any, lo: np.ndarray, hi: np.ndarray,
                 scale: np.ndarray | None = None) -> None:
        self._box = BoxClamp.of(lo, hi, scale)
        self.lo, self.hi = self._box.out_lo, self._box.out_hi
        if x.ndim == 1:
            x = x[:, None]
        self._x = x.rechunk({1: -1})
        self.n, self.d = (int(s) for s in self._x.shape)
        self._base_key: tuple | None = None
        self._base: Any = None
        # The pair differences of the last orders asked, persisted on the workers: the
        # spread and every pass of the variances' selection read them (one shuffle, not three).
        self._pairs: list[tuple[np.ndarray, bool, Any, np.ndarray | None]] = []

    def _for(self, view: View) -> tuple[Any, View, BoxClamp]:
        """(blocks, rest of the view, box) that the per-block engine answers about."""
        key = (view.preclip, view.quantizer, view.rotation)
        if key == (None, None, None):
            # A view without a base: the workers' copy of the last base goes (it is as large
            # as the data; an estimator that comes back to it pays one more pass).
            self._base, self._base_key = None, None
            return self._x, view, self._box
        if self._base_key is None or key != self._base_key:
            width = view.output_dim(self.d)
            self._base = self._x.map_blocks(
                _based, self._box, view.base(), dtype=np.float64,
                chunks=(self._x.chunks[0], (width,))).persist()
            self._base_key = key
        # The base is clamped and rotated already: the per-block engine must not clamp again.
        width = self._base.shape[1]
        rest = View(shift=view.shift, scale=view.scale, linear=view.linear)
        return self._base, rest, BoxClamp.of(np.full(width, -np.inf), np.full(width, np.inf))

    def _reduce(self, view: View, question: str, shape: tuple[int, ...], *args: Any) -> Any:
        """sum over blocks of the per-block answer (of the given shape): one reduction."""
        blocks, rest, box = self._for(view)
        per_block = blocks.map_blocks(
            lambda b: _answer(b, box, question, rest, *args)[None],
            dtype=np.float64, chunks=((1,) * blocks.numblocks[0], *((s,) for s in shape)),
            new_axis=list(range(2, len(shape) + 1)) if len(shape) > 1 else None)
        return per_block.sum(axis=0).compute()

    # Every pass schedules a reduction over all blocks: searches ask for many halvings'
    # counts at once.
    counts_by_table = True

    def coordinate_counts(self, view: View, thresholds: np.ndarray) -> np.ndarray:
        k = view.output_dim(self.d)
        counts = self._reduce(view, "coordinate_counts", (k,), np.asarray(thresholds))
        return np.rint(counts).astype(np.int64)

    def coordinate_count_table(self, view: View, edges: np.ndarray) -> np.ndarray:
        edges = np.asarray(edges, dtype=np.float64)
        counts = self._reduce(view, "coordinate_count_table", edges.shape, edges)
        return np.rint(counts).astype(np.int64)

    def row_norms(self, view: View) -> np.ndarray:
        blocks, rest, box = self._for(view)
        return blocks.map_blocks(lambda b: _answer(b, box, "row_norms", rest),
                                 drop_axis=1, dtype=np.float64).compute()

    def clipped_sum(self, view: View, radius: float) -> np.ndarray:
        return self._reduce(view, "clipped_sum", (view.output_dim(self.d),), radius)

    def clipped_sums(self, view: View, radii: Sequence[float]) -> list[np.ndarray]:
        # One reduction: each block answers every radius (a (radii, k) array).
        shape = (len(radii), view.output_dim(self.d))
        return list(self._reduce(view, "stacked_clipped_sums", shape, tuple(radii)))

    def clipped_outer_sum(self, view: View, radius: float) -> np.ndarray:
        k = view.output_dim(self.d)
        return self._reduce(view, "clipped_outer_sum", (k, k), radius)

    def split_sums(self, view: View, split: SplitBands) -> np.ndarray:
        # Added on the workers: whole numbers, exact in the reduction's order as in any.
        return self._reduce(view, "split_sums", split.shape(view.output_dim(self.d)), split)

    def outer_splits(self, view: View, split: OuterSplit) -> np.ndarray:
        k = view.output_dim(self.d)
        return self._reduce(view, "outer_splits", (3, k, k), split)

    def _finished(self, view: View) -> Any:
        blocks, rest, box = self._for(view)
        return blocks.map_blocks(_finish, box, rest, dtype=np.float64,
                                 chunks=(blocks.chunks[0], (view.output_dim(self.d),)))

    def column_order(self, view: View, lo: np.ndarray, hi: np.ndarray) -> DaskColumnOrder:
        # Order statistics selected on the workers (``dask_order``): the client receives
        # histograms and the values near the ranks asked, never whole columns.
        return DaskColumnOrder(self._finished(view), lo, hi)

    def pair_value_order(
        self, orders: Sequence[np.ndarray], rows: int, unit: int,
        values_of: Any, lo: np.ndarray, hi: np.ndarray,
    ) -> DaskColumnOrder:
        parts = [self._pair_values(order, rows, unit, values_of) for order in orders]
        import dask.array as da

        return DaskColumnOrder(da.concatenate(parts, axis=0), lo, hi)

    def _pair_values(self, order: np.ndarray, rows: int, unit: int, values_of: Any) -> Any:
        # Pairs of one, all of them: read only as order statistics, so in any order.
        every = unit == 1 and rows == len(order) // 2
        diffs, _ = self._pair_differences(order, any_order=every)
        diffs = diffs[:rows]
        k = diffs.shape[1]
        # Blocks of whole units (groups of pairs), each giving one row per unit.
        step = unit * max(1, CHUNK_ROWS_BYTES // (8 * k * unit))
        diffs = diffs.rechunk({0: step})
        return diffs.map_blocks(_values_of_copy, values_of, dtype=np.float64,
                                chunks=(tuple(c // unit for c in diffs.chunks[0]), (k,)))

    def _pair_differences(self, order: np.ndarray,
                          any_order: bool = False) -> tuple[Any, np.ndarray | None]:
        """x_a - x_b of the clamped rows for the pairs (a, b) = (order[2i], order[2i+1]), as a
        dask.array gathered and kept on the workers (Dask moves the rows between them; the
        client sees only the index), and None; with ``any_order`` (a caller that reads only
        each pair's magnitudes and their order statistics) each pair is oriented with its
        smaller row index first and the pairs listed by it, and the second item says which
        pair each row is (``which[r]``). That first gather then reads every block in row order:
        at 2 GB on two workers 3.7 s against 10.4 s for two gathers in random order.
        The last two answers are kept (PLAN's spread and its first pairing share one)."""
        for known, ordered, diffs, which in self._pairs:
            if known is order and ordered == any_order:
                return diffs, which
        pairs, which = pairs_of(order), None
        if any_order:
            pairs = np.sort(pairs, axis=1)
            which = np.argsort(pairs[:, 0], kind="stable")
            pairs = pairs[which]
        rows = _gather_source(self._finished(IDENTITY))
        with warnings.catch_warnings():
            # The pairs' index (n/2 x 2 integers, 15 MiB at 2 million rows) travels in the
            # graph, and distributed advises "loading the data with Dask directly", which a
            # user cannot act on (a user trial): the index is O(n), as the row norms are.
            warnings.filterwarnings("ignore", message="Sending large graph")
            diffs = _pair_gather(rows, pairs, first_sorted=any_order).persist()
        self._pairs = [*self._pairs[-1:], (order, any_order, diffs, which)]
        return diffs, which

    def pair_distances(self, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # Two numbers a pair, computed where the pair is: n / 2 of each reach the client, put
        # back in the pairs' order (|a - b| and its squares do not depend on the orientation).
        diffs, which = self._pair_differences(order, any_order=True)
        assert which is not None  # any order: the rows come with their pairs' places
        both = diffs.map_blocks(_l1_and_squared, chunks=(diffs.chunks[0], (2,)),
                                dtype=np.float64)
        distances = np.empty((len(which), 2))
        distances[which] = both.compute()
        return distances[:, 0], distances[:, 1]

    def column_blocks(self, view: View, width: int) -> Iterator[tuple[slice, np.ndarray]]:
        # Row blocks come to the client one at a time and go to a column-major temporary file
        # (as on the chunked engine): the client holds O(block x k + n x width), never n x k.
        return spilled_column_blocks(self._finished_blocks(view), self.n,
                                     view.output_dim(self.d), width)

    def _finished_blocks(self, view: View) -> Iterator[np.ndarray]:
        """The finished view rows, one Dask block at a time, in row order."""
        for block in self._finished(view).to_delayed().ravel():
            yield block.compute()

    def user_rows(self, view: View) -> Iterator[np.ndarray]:
        # Block by block: the client holds one block of rows at a time.
        return self._finished_blocks(view)


def _gather_source(rows: Any) -> Any:
    """``rows`` (a dask.array, n x k float64) in blocks to gather random rows from: merged
    into at most ``_GATHER_BLOCKS`` blocks of at most ``_GATHER_BLOCK_BYTES`` where its own
    are smaller (the same values)."""
    n, k = rows.shape
    step = min(-(-n // _GATHER_BLOCKS), max(1, _GATHER_BLOCK_BYTES // (8 * k)))
    return rows.rechunk({0: step}) if step > max(rows.chunks[0]) else rows


def _pair_gather(rows: Any, pairs: np.ndarray, *, first_sorted: bool) -> Any:
    """``rows[pairs[:, 0]] - rows[pairs[:, 1]]`` (``rows`` a dask.array, n x k), each block of
    pairs made from one piece of rows per source block and side (``_rows_at``) and put back in
    the pairs' order (``_difference``): the same values as dask's fancy indexing, which sorts
    a random index, takes and un-sorts it in separate passes (PLAN's pair distances, 2 GB on
    two workers: 6.8 and 8.9 s with it, 4.8 and 4.9 s so). Where ``first_sorted`` (the first
    rows ascending), the blocks of pairs follow the first rows' source blocks, so that side is
    one local piece; else the pairs are cut into as many equal blocks as ``rows`` has."""
    import dask
    import dask.array as da
    from dask.highlevelgraph import HighLevelGraph

    edges = np.cumsum((0, *rows.chunks[0]))
    cuts = (np.searchsorted(pairs[:, 0], edges) if first_sorted
            else np.linspace(0, len(pairs), len(edges)).astype(np.intp))
    # The layout is part of the graph: the same pairs gathered both ways are other tasks.
    token = dask.base.tokenize(rows, pairs, first_sorted)
    name, piece = f"pair-differences-{token}", f"pair-rows-{token}"
    graph: dict[Any, Any] = {}
    sizes: list[int] = []
    for start, stop in zip(cuts[:-1], cuts[1:], strict=True):
        if stop == start:  # a source block that holds no pair's first row
            continue
        t = len(sizes)
        sides = []
        for side in (0, 1):
            index = pairs[start:stop, side]
            source = np.searchsorted(edges, index, side="right") - 1
            by_source = np.argsort(source, kind="stable")
            keys = []
            for s in np.unique(source):
                graph[(piece, side, s, t)] = (_rows_at, (rows.name, s, 0),
                                              index[by_source[source[by_source] == s]] - edges[s])
                keys.append((piece, side, s, t))
            sides.append((by_source, keys))
        graph[(name, t, 0)] = (_difference, *sides[0], *sides[1])
        sizes.append(stop - start)
    if not sizes:  # no pairs: no block to make
        return rows[:0]
    layer = HighLevelGraph.from_collections(name, graph, dependencies=[rows])
    return da.Array(layer, name, chunks=(tuple(sizes), rows.chunks[1]), dtype=rows.dtype)


def _rows_at(block: np.ndarray, index: np.ndarray) -> np.ndarray:
    return block[index]


def _in_order(by_source: np.ndarray, pieces: list[np.ndarray]) -> np.ndarray:
    """The pieces (rows grouped by source block, ``by_source`` the grouping's order) back in
    the pairs' order."""
    grouped = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
    rows = np.empty_like(grouped)
    rows[by_source] = grouped
    return rows


def _difference(first_order: np.ndarray, first: list[np.ndarray], second_order: np.ndarray,
                second: list[np.ndarray]) -> np.ndarray:
    return _in_order(first_order, first) - _in_order(second_order, second)


def _values_of_copy(block: np.ndarray, values_of: Any) -> np.ndarray:
    """``values_of`` on a copy of a persisted block (it may write into its input)."""
    return values_of(np.array(block))


def _l1_and_squared(diffs: np.ndarray) -> np.ndarray:
    """Per row of ``diffs``: its l1 norm and squared l2 norm, (rows, 2)."""
    return np.column_stack([np.abs(diffs).sum(axis=1), np.einsum("ij,ij->i", diffs, diffs)])


def _npy_rows(path: str, start: int, stop: int) -> np.ndarray:
    x = np.load(path, mmap_mode="r", allow_pickle=False)
    return np.array((x[:, None] if x.ndim == 1 else x)[start:stop], dtype=np.float64)


def dask_array_from_file(path: str, rows_per_block: int | None = None, *,
                         n_items: int | None = None, **table_options: Any) -> Any:
    """A dask.array over a data file whose blocks the workers read themselves: ``.npy`` blocks
    memory-mapped, ``.parquet`` row groups and ``.csv`` runs of lines through pyarrow (the
    reader of the other engines), all from a file system the workers share. The file's layout
    (a ``.npy`` header's shape and dtype, a table's first line or schema and chosen columns)
    is checked on the client first, as the in-memory engine checks it. Other formats
    (``.dat``) are read through ``open_source`` on the client. ``n_items``: the public number
    of items of a ``.dat`` basket file (required for one); ``table_options``: a table's
    ``columns`` and CSV layout (``open_source``). A table's array carries the chosen columns'
    names as ``column_names`` (None for a CSV file without a header), which a release reads
    (``tables.data_columns``) as it reads a row source's.

    Raises
    ------
    InvalidDataError
        What the in-memory engine refuses in the same file, said the same way (never a
        cell's value): a layout, no rows, complex numbers. What a row holds is found by the
        workers during the release, never by the row count: a Parquet null or NaN, and a
        CSV cell that is not a finite number or a line of the wrong width (said without the
        path, which the release's caller names).
    """
    import dask.array as da

    # The workers open the file themselves, from their own working directory: an absolute
    # path (a relative one failed there, after a ledger's charge). Errors name it as given,
    # as the other engines do.
    path = str(path)
    absolute = str(Path(path).resolve())
    ext = path.lower().rsplit(".", 1)[-1]
    if ext in ("csv", "parquet"):
        from ..io import open_table
        from ..tables import CsvTable

        table = open_table(path, **table_options)
        x = (_csv_array(table, absolute, table_options) if isinstance(table, CsvTable)
             else _parquet_array(table, absolute))
        x.column_names = table.names
        return x
    from .chunked import CHUNK_BYTES, open_source

    source = open_source(path, n_items=n_items, **table_options)
    n, d = source.shape
    rows = rows_per_block or max(1, CHUNK_BYTES // (8 * d))
    if ext != "npy":
        return da.from_array(source.read_all(), chunks=(rows, -1))
    _check_npy_header(path, n, d)
    import dask

    blocks = [da.from_delayed(dask.delayed(_npy_rows)(absolute, s, min(s + rows, n)),
                              shape=(min(s + rows, n) - s, d), dtype=np.float64)
              for s in range(0, n, rows)]
    return da.concatenate(blocks, axis=0)


def _check_npy_header(path: str, n: int, d: int) -> None:
    """Refuse on the client what ``check_data`` refuses from a ``.npy`` file's header alone (no
    rows, no columns, complex numbers), in its words: the workers' blocks would otherwise drop
    an imaginary part with only numpy's warning, or fail to concatenate no blocks at all."""
    from ..errors import InvalidDataError

    dtype = np.load(path, mmap_mode="r", allow_pickle=False).dtype
    try:
        # A stand-in of the file's dtype and public shape: no value of the file is read.
        check_data(np.zeros((min(n, 1), d), dtype=dtype))
    except InvalidDataError as exc:
        raise InvalidDataError(f"{path}: {exc}") from None


def _csv_array(table: Any, path: str, options: dict[str, Any]) -> Any:
    """The chosen columns of a CsvTable as a float64 dask.array read by the workers from
    ``path`` (the table's file as they find it; ``options``: the table's, ``open_table``):
    each block the whole lines that start in a run of the file's bytes (``_csv_lines``).

    The row count (public n, which an (epsilon, delta) budget's calibration reads before the
    charge) is counted by the workers without judging a value, as ``CsvTable.count_rows``
    counts it (``_csv_records``). The blocks are parsed during the release by pyarrow with
    the other engines' options (``_csv_rows``), so that they refuse what those refuse, in
    their words: a line with more or fewer values than the first, a cell that is not a
    number (pandas, through ``dask.dataframe`` before, dropped extra values and read
    true/false as 1/0), a NaN."""
    import dask
    import dask.array as da

    from ..errors import InvalidDataError

    # Offsets from the header's end and the file's size (layout, public); a block holds the
    # lines that start in its range. A record is a line (``CsvTable``), quoted or not: a
    # quoted cell over a line break is refused, whichever block it falls in (its block's
    # records, parsed, are fewer than its lines).
    first = table.records_offset
    size = Path(path).stat().st_size
    starts = list(range(first, size, _CSV_BLOCK_BYTES)) or [first]
    step = _CSV_BLOCK_BYTES
    count = dask.delayed(_csv_records)
    try:
        sizes = dask.compute(*[count(path, first, start, start + step, options)
                               for start in starts])
    except InvalidDataError as exc:
        raise InvalidDataError(f"{table.path}: {exc}") from None
    if not sum(sizes):
        raise InvalidDataError(f"{table.path}: the file holds a header line but no rows")
    parse = dask.delayed(_csv_rows)
    blocks = [da.from_delayed(parse(path, first, start, start + step, options, rows),
                              shape=(rows, table.width), dtype=np.float64)
              for start, rows in zip(starts, sizes, strict=True) if rows]
    return da.concatenate(blocks, axis=0)


def _csv_lines(path: str, first: int, start: int, stop: int) -> bytes:
    """The whole lines of the file at ``path`` that start at a byte in [start, stop); the
    records begin at ``first`` (after the header)."""
    with open(path, "rb") as f:
        if start > first:
            # The line under way at ``start`` belongs to the block before.
            f.seek(start - 1)
            f.readline()
        else:
            f.seek(first)
        begin = f.tell()
        data = f.read(stop - begin) if begin < stop else b""
        if data and not data.endswith(b"\n"):
            data += f.readline()  # the last line started here: it ends here
    return data


def _csv_records(path: str, first: int, start: int, stop: int, options: dict[str, Any]) -> int:
    """The number of records in a block's lines (``_csv_lines``), counted as
    ``CsvTable.count_rows`` counts a file's: no cell converted, a record of the wrong width
    counted, not refused (a count read before a charge must not fail on what a row holds)."""
    from ..tables import CsvTable

    data = _csv_lines(path, first, start, stop)
    table = CsvTable(path, **options)
    if not data or (table.skips_blank_lines and not data.strip(b"\r\n")):
        return 0  # (in a file of one column a blank line is a row)
    return table.count_rows(data)


def _csv_rows(path: str, first: int, start: int, stop: int, options: dict[str, Any],
              rows: int) -> np.ndarray:
    """A block's ``rows`` records (``_csv_lines``: no header), (rows, d) float64, parsed as
    ``CsvTable`` parses the file (``CsvTable.parse_block``) on the table ``options``
    describe. What that reader refuses, and a NaN, is refused in its words
    (``_csv_refusal``)."""
    import pyarrow as pa

    from ..errors import InvalidDataError
    from ..tables import CsvTable, _as_array

    table = CsvTable(path, **options)
    try:
        parsed = table.parse_block(_csv_lines(path, first, start, stop))
    except (pa.ArrowException, InvalidDataError):
        # pyarrow's message quotes the cell or the line, and counts records in this block.
        raise _csv_refusal(table) from None
    values = _as_array(parsed, list(table._column_of))
    if values.shape[0] != rows or np.isnan(values).any():
        raise _csv_refusal(table)
    return values


def _csv_refusal(table: Any) -> Exception:
    """The error the other engines give for ``table``'s first bad line or value (its reader
    finds it again, from the top: one more pass, on an error only), without the path, which
    the release's caller names, as for the estimators' own errors."""
    from ..errors import InvalidDataError

    try:
        # A record over lines first, as the other engines' readers say it (a trial: the Dask
        # engine said "not a number" for a quoted cell holding a line break).
        table._check_lines()
        for _ in table.batches():
            pass
    except InvalidDataError as exc:
        return InvalidDataError(str(exc).removeprefix(f"{table.path}: "))
    return InvalidDataError("a block of the file read by a Dask worker is not CSV rows of "
                            "numbers, though the whole file is (a line break inside a quoted "
                            "cell, where the file is split into blocks?); read it with "
                            "another engine")


def _parquet_array(table: Any, path: str) -> Any:
    """The chosen columns of a ParquetTable as a float64 dask.array (read from ``path``, the
    table's file as the workers find it): each block a run of the file's row groups, read by
    a worker with pyarrow and converted as the other engines convert them
    (``ParquetTable.row_groups``: a null or NaN is refused naming its column). The row counts
    come from the file's metadata (public layout): nothing is read on the client. (Not
    ``dask.dataframe``: it reads through pandas, whose nullable integers fail to convert, and
    it warns about files written without pandas' metadata.)"""
    import dask
    import dask.array as da

    from ..errors import InvalidDataError
    from .chunked import CHUNK_BYTES

    target = max(1, CHUNK_BYTES // (8 * table.width))
    runs: list[tuple[list[int], int]] = []  # (row groups, rows) of each block
    for group, rows in enumerate(table.row_group_rows()):
        if not rows:
            continue
        if runs and runs[-1][1] + rows <= target:
            runs[-1] = ([*runs[-1][0], group], runs[-1][1] + rows)
        else:
            runs.append(([group], rows))
    if not runs:
        raise InvalidDataError(f"{table.path}: the file holds a header but no rows")
    read = dask.delayed(_parquet_rows)
    blocks = [da.from_delayed(read(path, table.columns, groups, table.fill),
                              shape=(rows, table.width), dtype=np.float64)
              for groups, rows in runs]
    return da.concatenate(blocks, axis=0)


def _parquet_rows(path: str, names: Sequence[str], groups: list[int],
                  fill: dict[str, float]) -> np.ndarray:
    """Row groups ``groups`` of a Parquet file's columns ``names``, as (rows, d) float64, the
    missing cells of the ``fill`` columns filled."""
    from ..tables import ParquetTable

    return ParquetTable(path, columns=list(names), fill=fill).row_groups(groups)
