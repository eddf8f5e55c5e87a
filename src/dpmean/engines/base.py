"""The engine interface: the only way estimators reach data.

Estimators ask a handful of aggregate questions about a View of the clamped data; an engine
answers them in memory, from sparse structure, in chunks or on a cluster.
"""

from __future__ import annotations

import errno
import os
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from ..errors import TemporarySpaceError
from ..parallel import over_row_ranges, sort_columns
from ..progress import counted_pass
from ..transforms import View

if TYPE_CHECKING:
    from .grid_sums import OuterSplit, SplitBands

# Bytes of the column answers an engine holds in memory at a time: one block of n x width
# values in the column questions, and the largest answer kept in memory rather than spilled to
# a temporary file (``scratch_array``).
COLUMN_BLOCK_BYTES = 64 << 20
# Bytes of one row block that an engine computes at a time (Dask partitions of derived rows).
CHUNK_ROWS_BYTES = 64 << 20
# The questions that read every row: one pass each.
_PASSES = ("coordinate_counts", "coordinate_count_table", "row_norms", "clipped_sum",
           "clipped_sums", "clipped_outer_sum", "column_blocks", "user_rows", "split_sums",
           "outer_splits")


class ColumnOrder(Protocol):
    """The columns of a view (or of values derived from its rows), read by sorted position
    where they are, not handed over whole: what an engine whose rows live apart (Dask) answers
    column questions with. ``shape`` is (n, k): n values in each of k columns. As sensitive as
    the data: only mechanisms read it (``exponential_draws``, the trimmed mean's tails)."""

    shape: tuple[int, int]

    def positions(self, start: int, stop: int, cols: slice) -> np.ndarray:
        """The values at sorted positions start..stop-1 (0-based, ascending) of each column in
        ``cols``: (len(cols), stop - start), one column per row."""
        ...

    def runs(self, start: int, stop: int, col: int) -> tuple[np.ndarray, np.ndarray]:
        """Sorted positions start..stop-1 of column ``col`` as runs of one value
        (``mechanisms.exponential.OrderStatistics.runs``)."""
        ...

    def tails(self, m: int, divisor: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(low, high, middle): the sorted positions 0..m and n-m-1..n-1 of every column,
        (m + 1, k) each, and sum_{i=m}^{n-m-1} x_(i) / divisor per column (k,)."""
        ...


class Engine(ABC):
    """Aggregate questions about n rows of dimension d, clamped to the public box [lo, hi].

    Every answer is an exact, non-private aggregate: estimators must pass it through a
    mechanism before anything leaves them.
    """

    n: int
    d: int
    lo: np.ndarray
    hi: np.ndarray

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Each question an engine answers is a pass over the data, reported for progress bars
        # (``dpmean.progress``), whichever engine answers it.
        super().__init_subclass__(**kwargs)
        for name in _PASSES:
            if name in vars(cls):
                setattr(cls, name, counted_pass(vars(cls)[name]))

    # Whether each question is a pass that is slow to repeat (a file read again, a cluster's
    # blocks scheduled again): binary searches then ask ``coordinate_count_table`` about all
    # the thresholds of several halvings at once instead of one ``coordinate_counts`` each.
    counts_by_table: bool = False
    # Whether the rows are transaction baskets by the input's type (scipy.sparse, a .dat row
    # source): public, and what PLAN's and auto's basket forms follow, so that a .dat file
    # gives the same release on the sparse engine and read in dense chunks.
    baskets: bool = False

    @abstractmethod
    def coordinate_counts(self, view: View, thresholds: np.ndarray) -> np.ndarray:
        """For each coordinate j of the view, the number of rows with v(x)_j <= thresholds[j]."""

    def coordinate_count_table(self, view: View, edges: np.ndarray) -> np.ndarray:
        """For each coordinate j of the view and each l, the number of rows with
        v(x)_j <= edges[j, l]: (k, m) int64 for ``edges`` (k, m), each row ascending. The
        engines that set ``counts_by_table`` answer it in one pass; here, one per column."""
        edges = np.asarray(edges, dtype=np.float64)
        return np.column_stack([self.coordinate_counts(view, edges[:, col])
                                for col in range(edges.shape[1])])

    @abstractmethod
    def row_norms(self, view: View) -> np.ndarray:
        """The l2 norms ||v(x_i)|| of all n view rows, in row order: (n,). As sensitive as the
        data; estimators use them only through ``norm_counts`` and ``sorted_norms``."""

    def sorted_norms(self, view: View) -> np.ndarray:
        """The row norms sorted ascending (cached for the last view asked about): every step of a
        radius search, and the exponential-mechanism quantile of the norms, read them."""
        cached = getattr(self, "_sorted_norms_cache", None)
        if cached is None or cached[0] is not view:
            cached = (view, np.sort(self.row_norms(view)))
            self._sorted_norms_cache = cached
        return cached[1]

    def norm_counts(self, view: View, thresholds: np.ndarray) -> np.ndarray:
        """For each threshold t, the number of rows with ||v(x)||_2 <= t."""
        return np.searchsorted(self.sorted_norms(view), thresholds, side="right")

    @abstractmethod
    def clipped_sum(self, view: View, radius: float) -> np.ndarray:
        """sum_i min(1, radius / ||v(x_i)||) v(x_i): the sum of view rows clipped to l2 ``radius``
        (``radius = inf`` gives the plain sum)."""

    def clipped_sums(self, view: View, radii: Sequence[float]) -> list[np.ndarray]:
        """``clipped_sum`` at each radius, the same values; engines that can answer them in
        one pass over the rows do (the clipped mean and its clip residual ask two)."""
        return [self.clipped_sum(view, radius) for radius in radii]

    @abstractmethod
    def clipped_outer_sum(self, view: View, radius: float) -> np.ndarray:
        """sum_i c_i c_i^T with c_i = v(x_i) clipped to l2 ``radius``: a (k, k) matrix, the
        aggregate behind private covariance estimates."""

    @abstractmethod
    def column_blocks(self, view: View, width: int) -> Iterator[tuple[slice, np.ndarray]]:
        """Every coordinate of the view over all rows, ``width`` coordinates at a time: pairs
        (cols, values) with ``values`` the (n, len(cols)) block v(x)[:, cols] in row order, the
        slices consecutive from coordinate 0.

        The primitive behind the column questions (order statistics, pair differences): an
        engine holds O(n x width) of it at a time, not the whole n x k answer. As sensitive as
        the data; estimators ask it for private quantiles (which select, they need no sort),
        or ask ``sorted_column_blocks`` or ``pair_difference_blocks``.
        Each block is a fresh array (never a view of the engine's state): the caller may
        overwrite it."""

    def column_width(self, rows: int | None = None, unit: int = 1) -> int:
        """Coordinates per block for column questions over ``rows`` values per column (default
        n): the largest multiple of ``unit`` whose float64 block fits in COLUMN_BLOCK_BYTES, and
        at least ``unit``. Public (a function of n only), so every engine blocks alike."""
        rows = self.n if rows is None else rows
        return unit * max(1, COLUMN_BLOCK_BYTES // (8 * max(rows, 1) * unit))

    def sorted_column_blocks(self, view: View,
                             width: int) -> Iterator[tuple[slice, np.ndarray]]:
        """``column_blocks`` with each column sorted ascending: the order statistics that
        trimmed means read. Each block is the transpose of a C-ordered (width, n) array, so
        every column is contiguous; the columns are sorted on all cores."""
        for cols, values in self.column_blocks(view, width):
            yield cols, sort_columns(values).T

    def sorted_columns(self, view: View) -> np.ndarray:
        """Every coordinate of the view over all rows, each column sorted ascending: (n, k),
        the whole answer in memory (estimators ask ``sorted_column_blocks`` instead)."""
        return join_columns(self.sorted_column_blocks(view, self.column_width()),
                            np.empty((self.n, view.output_dim(self.d))))

    def pair_difference_blocks(
        self, view: View, orders: Sequence[np.ndarray], width: int,
    ) -> Iterator[tuple[slice, list[np.ndarray]]]:
        """For each ``order`` in ``orders``, the pair differences of ``pair_differences``,
        ``width`` coordinates at a time: pairs (cols, [differences for each order])."""
        pairs = [pairs_of(order) for order in orders]
        for cols, values in self.column_blocks(view, width):
            yield cols, [_pair_differences(values, p) for p in pairs]

    def pair_distances(self, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For the disjoint row pairs (a, b) of ``order``: ||a - b||_1 and ||a - b||_2^2 of the
        clamped rows, each of length len(order) // 2. Each is added up column block by column
        block (``column_width()`` coordinates, in order), the order every engine follows, so
        all give the same bits. Exact statistics: only a mechanism may release anything
        computed from them."""
        l1, squared = np.zeros(len(order) // 2), np.zeros(len(order) // 2)
        for _, diffs in self.pair_difference_blocks(View(), [order], self.column_width()):
            add_distances(diffs[0], l1, squared)
        return l1, squared

    def sorted_pair_magnitude_blocks(
        self, orders: Sequence[np.ndarray], width: int,
    ) -> Iterator[tuple[slice, np.ndarray]]:
        """|a_j - b_j| over the pairs (a, b) of clamped rows of every order in ``orders``,
        pooled (m = len(orders) x (n // 2) values per coordinate), each coordinate's values
        sorted ascending, ``width`` coordinates at a time: pairs (cols, values (m, len(cols))),
        each block the transpose of a C-ordered array (every column contiguous). What pair
        variances by the exponential mechanism read (it needs order statistics only)."""
        for cols, diffs in self.pair_difference_blocks(View(), orders, width):
            pooled = diffs[0] if len(diffs) == 1 else np.concatenate(diffs)
            yield cols, sort_columns(np.abs(pooled, out=pooled)).T

    def pair_differences(self, view: View, order: np.ndarray) -> np.ndarray:
        """v(x_order[2i]) - v(x_order[2i+1]) for i < len(order) // 2: (len(order) // 2, k).

        ``order`` is a permutation (or any index sequence without repeats) drawn by the caller;
        each row takes part in at most one pair, so a changed row changes one difference."""
        blocks = ((cols, diffs[0]) for cols, diffs in
                  self.pair_difference_blocks(view, [order], self.column_width()))
        # Column-major, so each block lands contiguously; on a temporary file when large.
        out = scratch_array((len(order) // 2, view.output_dim(self.d)), order="F")
        return join_columns(blocks, out)

    def column_order(self, view: View, lo: np.ndarray, hi: np.ndarray) -> ColumnOrder | None:
        """The view's columns read by sorted position (``ColumnOrder``), or None (this default:
        the engine hands whole columns, ``column_blocks``). ``lo``, ``hi`` (k,): a public range
        the values lie in (clamped or public domain), where an engine may start looking."""
        return None

    def pair_value_order(
        self, orders: Sequence[np.ndarray], rows: int, unit: int,
        values_of: Any, lo: np.ndarray, hi: np.ndarray,
    ) -> ColumnOrder | None:
        """``column_order`` of values derived from pair differences, or None (this default:
        ask ``pair_difference_blocks``). For each ``order``: the differences of its first
        ``rows`` pairs (``pair_differences``, clamped rows), ``values_of`` applied to blocks of
        consecutive pairs (a multiple of ``unit`` pairs, giving 1 row per ``unit``); the orders'
        values stacked, the first order's first."""
        return None

    def user_rows(self, view: View) -> Iterator[np.ndarray]:
        """The finished view rows v(x_i), in row order, as consecutive blocks of rows.

        Only protocol simulations (dpmean.protocols, the local and shuffle models) may ask this,
        each block going straight to the users' own randomisers (row i's messages depending only
        on row i and public values), and the secure sums (``split_sums``), which split each
        row's own term before anything is added. ``materialised`` reads it too, to keep the rows
        inside a new engine. Engines that cannot hand rows over (this default)
        raise InvalidParameterError.
        """
        # Imported here, as in ``paired``: keep the interface's imports minimal.
        from ..errors import InvalidParameterError

        raise InvalidParameterError(
            f"{type(self).__name__} cannot hand rows to a local or shuffle protocol simulation; "
            f"pass a dense in-memory array"
        )

    def split_sums(self, view: View, split: SplitBands) -> np.ndarray:
        """The sums behind a secure release (``grid_sums.exact_clipped_sums``): for each of
        ``split``'s bands, the level sums of every row's term split on the band's public grids,
        whole numbers whose sums are exact in any order, as a (bands, levels, k) array. Each
        row's term is computed from that row alone. This default splits the blocks of
        ``user_rows``; an engine whose blocks live elsewhere adds them there."""
        from .grid_sums import rows_split_sums

        return rows_split_sums(self.user_rows(view), split, view.output_dim(self.d))

    def outer_splits(self, view: View, split: OuterSplit) -> np.ndarray:
        """The three whole-number products behind a secure release's clipped outer sum
        (``grid_sums.exact_outer_sum``), exact in any order, as a (3, k, k) array; this
        default from the blocks of ``user_rows``, as ``split_sums``."""
        from .grid_sums import rows_outer_splits

        return rows_outer_splits(self.user_rows(view), split, view.output_dim(self.d))

    def materialised(self, view: View) -> Engine:
        """An engine over the finished rows v(x_i), computed once, unbounded (no clamping).

        For many questions about one fixed map of the rows (CoinPress's MVMRec on whitened
        rows reads O(n k) a step instead of applying a k x d map every time). Replacing one row
        of this engine replaces one row of the new one, whose answers are those of ``view``, so
        privacy is unchanged. The row blocks of ``user_rows`` are written straight into one
        row-major array, in memory or, when large, in a temporary file: one copy, never two.
        """
        # Imported here, as in ``paired``: the in-memory engine subclasses this one.
        from .memory import InMemoryEngine

        rows = scratch_array((self.n, view.output_dim(self.d)))
        start = 0
        for block in self.user_rows(view):
            rows[start:start + block.shape[0]] = block
            start += block.shape[0]
        unbounded = np.full(rows.shape[1], np.inf)
        return InMemoryEngine(rows, -unbounded, unbounded)

    def paired(self, order: np.ndarray) -> Engine:
        """An engine over the len(order) // 2 rows x_order[2i] - x_order[2i+1] (clamped rows).

        Pair differences have mean zero whatever the mean of the data, which second-moment
        estimates of a covariance need (CoinPress MVCRec on data of unknown mean). ``order`` is
        drawn by the caller independently of the data; each row is in at most one pair, so
        replacing one row of this engine replaces at most one row of the paired engine. This
        generic version holds the differences in memory; an engine may answer more cheaply.
        """
        # Imported here: the in-memory engine is a subclass of this module's Engine.
        from .memory import InMemoryEngine

        width = self.hi - self.lo
        return InMemoryEngine(self.pair_differences(View(), order), -width, width)


def _pair_differences(values: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """values[pairs[i, 0]] - values[pairs[i, 1]] for every pair i, the pairs shared among the
    cores (row gathers in a random order: memory-bound, so two cores read faster than one)."""
    out = np.empty((len(pairs), values.shape[1]))

    def fill(part: slice) -> None:
        # np.take, not values[p]: the same rows, 5x faster on narrow blocks (numpy 2.4).
        np.subtract(np.take(values, pairs[part, 0], axis=0),
                    np.take(values, pairs[part, 1], axis=0), out=out[part])

    over_row_ranges(len(pairs), fill, values=out.size)
    return out


def add_distances(diff: np.ndarray, l1: np.ndarray, squared: np.ndarray) -> None:
    """Add each row's l1 norm and squared l2 norm of ``diff`` (pairs x coordinates) to ``l1``
    and ``squared``: the one way ``Engine.pair_distances`` sums a column block."""
    l1 += np.abs(diff).sum(axis=1)
    squared += np.einsum("ij,ij->i", diff, diff)


def pairs_of(order: np.ndarray) -> np.ndarray:
    """The pairs (order[2i], order[2i+1]) as a (len(order) // 2, 2) array."""
    order = np.asarray(order)
    return order[: 2 * (len(order) // 2)].reshape(-1, 2)


def column_slices(k: int, width: int) -> list[slice]:
    """Consecutive slices of ``width`` coordinates (the last one shorter) covering range(k)."""
    return [slice(start, min(start + width, k)) for start in range(0, k, width)]


def join_columns(blocks: Iterable[tuple[slice, np.ndarray]], out: np.ndarray) -> np.ndarray:
    """``out`` filled with the columns that ``blocks`` gives."""
    for cols, values in blocks:
        out[:, cols] = values
    return out


def scratch_array(shape: tuple[int, int], *, order: Literal["C", "F"] = "C") -> np.ndarray:
    """A zero-filled float64 array for an answer too big to hold in memory: in memory up to
    COLUMN_BLOCK_BYTES, above that backed by a temporary file (memory-mapped).

    The file is anonymous (``tempfile.TemporaryFile``: on POSIX it is unlinked before any data
    is written), so it never outlives the array, on error or crash included; the disk space
    comes back when the array is garbage collected. It lives in the temporary directory
    (``TMPDIR``). The pages touched count in the resident set while mapped, but they are file
    cache, which the OS writes out and drops under memory pressure."""
    nbytes = 8 * shape[0] * shape[1]
    if nbytes <= COLUMN_BLOCK_BYTES:
        return np.zeros(shape, order=order)
    with tempfile.TemporaryFile(prefix="dpmean-") as f:
        f.truncate(nbytes)  # a sparse file of zeros
        allocate = getattr(os, "posix_fallocate", None)  # not on every system
        if allocate is not None:
            # Its disk space taken now: a sparse file's pages, first touched through the map
            # on a full disk, killed the process with SIGBUS and no message (a review).
            with _room_for(shape[0], shape[1]):
                allocate(f.fileno(), 0, nbytes)
        # The map keeps its own reference to the file, which closing ``f`` does not end.
        return np.memmap(f, dtype=np.float64, mode="r+", shape=shape, order=order)


# Rows of a strip of the transposing copy (``block_columns``): measured fastest of 16 to 256.
_TILE = 16


def block_columns(block: np.ndarray) -> np.ndarray:
    """A row block (rows, k) as float64 columns (k, rows), one column's values contiguous.
    Copied _TILE rows at a time (each strip's columns stay in cache): numpy's transposing copy
    of a whole 64 MiB block took 2.7x as long (70 against 26 ms)."""
    out = np.empty((block.shape[1], block.shape[0]))
    for start in range(0, block.shape[0], _TILE):
        out[:, start:start + _TILE] = block[start:start + _TILE].T
    return out


def spilled_column_blocks(
    row_blocks: Iterable[np.ndarray], n: int, k: int, width: int,
) -> Iterator[tuple[slice, np.ndarray]]:
    """``column_blocks`` for engines that read rows in blocks (chunked, Dask): the finished
    row blocks (consecutive, in row order) are written once into a temporary file, laid out
    block of ``width`` columns after block (each one n x width values), then read back one
    column block at a time. Memory: one row block plus one column block (n x width), not
    n x k; answers of at most COLUMN_BLOCK_BYTES stay in memory.

    Within a column block's part of the file each row block's columns are one piece (width
    x rows, column by column), so a row block is written in k / width pieces, not k (writing
    each column of each row block apart made 8,192 small writes of a 2 GB file: 45 % of a
    chunked trimmed mean), and a column block is one read, its pieces then put side by side
    in memory.

    The file is anonymous (``tempfile.TemporaryFile``, in ``TMPDIR``; on POSIX unlinked before
    any data is written) and closed when the blocks end, fail or are abandoned, so it never
    outlives the answer. It is read and written, not memory-mapped: its pages are the OS's
    file cache and never count as the process's resident memory."""
    if 8 * n * k <= COLUMN_BLOCK_BYTES:
        values = np.concatenate(list(row_blocks))
        for cols in column_slices(k, width):
            yield cols, np.array(values[:, cols])
        return
    blocks = column_slices(k, width)
    with tempfile.TemporaryFile(prefix="dpmean-") as file:
        start, sizes = 0, []
        for rows in row_blocks:
            for cols in blocks:
                piece = block_columns(rows[:, cols])
                with _room_for(n, k):
                    _write_exactly(file, piece, 8 * (n * cols.start + start * piece.shape[0]))
            start += rows.shape[0]
            sizes.append(rows.shape[0])
        pieces = np.empty(width * n)  # one buffer for every block's read
        for cols in blocks:
            w = cols.stop - cols.start
            _read_exactly(file, pieces[:w * n], 8 * n * cols.start)
            block = np.empty((w, n))  # the block's transpose, C order
            first = 0
            for size in sizes:
                block[:, first:first + size] = pieces[w * first:w * (first + size)].reshape(w, size)
                first += size
            yield cols, block.T


def _write_exactly(file: Any, data: np.ndarray, offset: int) -> None:
    """Write the C-contiguous ``data`` into the file from ``offset``, all of it: a short
    write (a nearly full disk) left a hole that read back as zeros; the next write raises
    the disk's error instead."""
    view = data.data.cast("B")
    done = 0
    while done < len(view):
        wrote = os.pwrite(file.fileno(), view[done:], offset + done)
        if wrote <= 0:
            raise OSError(errno.ENOSPC, "a temporary file of the engine took no bytes")
        done += wrote


@contextmanager
def _room_for(n: int, k: int) -> Iterator[None]:
    """Writes to a temporary file of ``n`` rows x ``k`` columns, with a full temporary
    directory (``ENOSPC``, ``EDQUOT``) raised as the user can act on it: a
    ``TemporarySpaceError`` naming the directory and the bytes the file needs (public: n and
    k), the ``OSError`` its cause; any other error as it is."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
            raise
        raise TemporarySpaceError(
            f"the temporary directory {tempfile.gettempdir()} ran out of space: the engine "
            f"spills the data to a temporary file there, {n:,} rows x {k:,} columns x 8 bytes "
            f"= {_amount(8 * n * k)}; point TMPDIR at a disk with that much free space"
        ) from exc


def _amount(size: int) -> str:
    """``size`` bytes for a person: "1.45 GB (1,448,000,000 bytes)"."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.3g} {unit} ({size:,} bytes)"
    return f"{size:,} bytes"


def _read_exactly(file: Any, out: np.ndarray, offset: int) -> None:
    """Fill the C-contiguous ``out`` with the file's bytes from ``offset``."""
    view = out.data.cast("B")
    done = 0
    while done < len(view):
        got = os.preadv(file.fileno(), [view[done:]], offset + done)
        if got == 0:
            raise OSError("a temporary file of the engine ended early")
        done += got
