"""Exact order statistics of the columns of a dask.array without bringing the columns to the
client: per-column histograms on a grid, refined inside the buckets that hold the ranks asked
for, then only those buckets' values (issue 20, "Scale out without a funnel").

Each pass is one Dask reduction whose answer is O(queries x BUCKETS): a histogram per query
while its range is still too full, and, in the last pass, the distinct values (with their
multiplicities) of each query's final range. The answer is exact: the values at the sorted
positions asked for, the same as sorting each column would give.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..mechanisms.exponential import positions_as_runs
from .base import block_columns

# Buckets per grid: a level narrows a query's range by up to this factor.
BUCKETS = 2048
# A query's range is collected once it holds at most this many values beyond its own ranks
# (about 2 buckets' worth of a column of 10^6 values spread over a fifth of its grid).
SPARE_VALUES = 8192
# Levels after which a range is collected whatever it holds: 2048^5 = 2^55 narrows any float
# interval below the float spacing, so what remains are ties, collected as (value, count).
MAX_LEVELS = 5


@dataclass
class _Queries:
    """Q queries, each the sorted positions [start, stop) of one column, and the grid levels
    that narrowed it: a value is inside level l when its bucket lies in [i0, i1] there."""

    column: np.ndarray  # (Q,) column of each query
    start: np.ndarray  # (Q,) first position asked
    stop: np.ndarray  # (Q,) one past the last position asked
    offset: np.ndarray  # (Q,) level grids: bucket = floor((v - offset) * factor), clipped
    factor: np.ndarray
    first: np.ndarray  # (Q, levels) buckets kept at each level
    last: np.ndarray
    below: np.ndarray  # (Q,) values below the kept range
    inside: np.ndarray  # (Q,) values inside it

    @property
    def depth(self) -> int:
        return self.first.shape[1]

    def subset(self, which: np.ndarray) -> _Queries:
        """The queries ``which`` alone."""
        return _Queries(*(getattr(self, f)[which] for f in (
            "column", "start", "stop", "offset", "factor", "first", "last", "below", "inside")))


@dataclass(frozen=True)
class _Pass:
    """What one pass computes on every block: a histogram at the next level for the queries
    in ``refine``; the distinct values inside the kept range of every query when ``collect``;
    and, with ``between`` (pairs of queries (low, high)), the sum of values / ``divisor`` above
    low's range and below high's."""

    queries: _Queries
    refine: np.ndarray  # indices of the queries histogrammed at the next level
    next_offset: np.ndarray  # (len(refine),) the next level's grid
    next_factor: np.ndarray
    collect: bool
    between: np.ndarray | None  # (P, 2) query indices
    divisor: float

    def on_block(self, block: np.ndarray) -> tuple[Any, ...]:
        # Imported here, on the worker: numba's import costs a second the client need not pay.
        from . import order_kernels as kernels

        q, refine = self.queries, self.refine
        if not self.collect:  # a histogram pass reads only the queries it refines
            q, refine = q.subset(refine), np.arange(refine.size)
        # One column's values contiguous: every loop below reads a column at a time.
        values = block_columns(block)
        side = kernels.query_sides(values, q.column, q.offset, q.factor, q.first, q.last,
                                   BUCKETS)
        counts = None
        if refine.size:
            counts = kernels.inside_histograms(values, q.column, side, refine,
                                               self.next_offset, self.next_factor,
                                               BUCKETS).ravel()
        found = None
        if self.collect:
            found = kernels.distinct_runs(*kernels.inside_values(values, q.column, side))
        sums = None
        if self.between is not None:
            sums = kernels.between_sums(values, q.column, side, self.between[:, 0],
                                        self.between[:, 1], self.divisor)
        return counts, found, sums


def _combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
    """Two blocks' answers as one (histograms and sums added, distinct values merged: every
    query's runs in one compiled merge, where a ``np.unique`` and a merge for each of a
    block's 1,024 queries cost a third of a collecting pass in Python calls)."""
    from . import order_kernels as kernels

    counts = None if a[0] is None else a[0] + b[0]
    found = None if a[1] is None else kernels.merged_runs(*a[1], *b[1])
    sums = None if a[2] is None else a[2] + b[2]
    return counts, found, sums


def _merge(x: tuple[np.ndarray, np.ndarray],
           y: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Two (distinct ascending values, counts) as one. The stable sort of two ascending runs
    is a linear merge (timsort), where ``np.unique`` sorted them from scratch (a third of a
    collecting pass)."""
    values = np.concatenate([x[0], y[0]])
    order = np.argsort(values, kind="stable")
    values, counts = values[order], np.concatenate([x[1], y[1]])[order]
    if not values.size:
        return values, counts
    first = np.flatnonzero(np.concatenate([[True], values[1:] != values[:-1]]))
    return values[first], np.add.reduceat(counts, first)


def _run_pass(blocks: Sequence[Any], step: _Pass) -> tuple[Any, ...]:
    """``step`` on every block of a dask.array's row blocks (delayed), combined pairwise on
    the workers: the client receives one answer."""
    import dask

    return _reduced([dask.delayed(step.on_block)(block) for block in blocks], _combine)


def _reduced(parts: list[Any], combine: Any, *args: Any) -> Any:
    """The delayed answers ``parts`` combined pairwise on the workers (``combine(a, b,
    *args)``), computed: the client receives one answer."""
    import dask

    while len(parts) > 1:
        parts = [dask.delayed(combine)(parts[i], parts[i + 1], *args) if i + 1 < len(parts)
                 else parts[i] for i in range(0, len(parts), 2)]
    (answer,) = dask.compute(parts[0])
    return answer


@dataclass(frozen=True)
class Selection:
    """The sorted values of one query's final range: ``values`` distinct, ascending, with
    ``counts``; ``below`` values of the column lie below them."""

    values: np.ndarray
    counts: np.ndarray
    below: int

    def at(self, positions: np.ndarray) -> np.ndarray:
        """The column's values at sorted ``positions`` (inside this range)."""
        ends = np.cumsum(self.counts)
        return self.values[np.searchsorted(ends, positions - self.below, side="right")]


def select(
    x: Any, ranges: Sequence[tuple[int, int]], lo: np.ndarray, hi: np.ndarray, *,
    between: tuple[int, int] | None = None, divisor: float = 1.0,
) -> tuple[list[list[Selection]], np.ndarray | None]:
    """Exact order statistics of every column of a dask.array, selected on the workers.

    Passes: one histogram per level a range needs (usually one: a range whose buckets hold at
    most its own positions plus SPARE_VALUES is collected), then one collecting pass. The
    client holds O(ranges x k x (BUCKETS + positions + SPARE_VALUES)) values, or the distinct
    values of a range after MAX_LEVELS (ties).

    Parameters
    ----------
    x : dask.array.Array
        (n, k) float values, row blocks holding all k columns.
    ranges : sequence of (start, stop)
        Sorted positions [start, stop) to select in every column, 0 <= start < stop <= n.
    lo, hi : numpy.ndarray
        (k,) finite ends of each column's first grid; values outside fall in its end buckets.
    between : (a, b), optional
        Two indices into ``ranges``: also sum the values strictly above range a's selection
        and strictly below range b's, per column.
    divisor : float
        Each value of that sum is divided by it first (a power of two keeps it exact).

    Returns
    -------
    selections : list of list of Selection
        Per range, per column: the values of the kept range (``Selection.at``).
    sums : numpy.ndarray or None
        (k,) the ``between`` sums, None without ``between``.
    """
    n, k = (int(s) for s in x.shape)
    blocks = list(x.to_delayed().ravel())
    starts = np.array([r[0] for r in ranges], dtype=np.int64)
    stops = np.array([r[1] for r in ranges], dtype=np.int64)
    if not ((0 <= starts) & (starts < stops) & (stops <= n)).all():
        raise ValueError(f"sorted positions out of range 0..{n}: {ranges}")
    count = len(ranges)
    q = _Queries(
        column=np.tile(np.arange(k), count), start=np.repeat(starts, k),
        stop=np.repeat(stops, k), offset=np.empty((count * k, 0)),
        factor=np.empty((count * k, 0)), first=np.empty((count * k, 0), dtype=np.int64),
        last=np.empty((count * k, 0), dtype=np.int64),
        below=np.zeros(count * k, dtype=np.int64), inside=np.full(count * k, n, np.int64))
    lo = np.tile(np.asarray(lo, dtype=np.float64), count)
    hi = np.tile(np.asarray(hi, dtype=np.float64), count)
    refine = np.arange(count * k)
    next_offset, next_factor = lo, _factor(lo, hi)
    while refine.size:
        if q.depth == 0:
            # The first level is one histogram per column, whichever ranges share it.
            counts, _, _ = _run_pass(blocks, _Pass(q, refine[:k], next_offset[:k],
                                                   next_factor[:k], False, None, divisor))
            counts = np.tile(counts.reshape(k, BUCKETS), (count, 1))
        else:
            counts, _, _ = _run_pass(blocks, _Pass(q, refine, next_offset, next_factor, False,
                                                   None, divisor))
        refine, next_offset, next_factor = _narrow(
            q, refine, next_offset, next_factor, counts.reshape(refine.size, BUCKETS))
    pairs = None
    if between is not None:
        a, b = between
        pairs = np.column_stack([a * k + np.arange(k), b * k + np.arange(k)])
    _, (query, values, counts), sums = _run_pass(
        blocks, _Pass(q, refine, next_offset, next_factor, True, pairs, divisor))
    ends = np.searchsorted(query, np.arange(q.column.size + 1))
    selections = [Selection(values[a:b], counts[a:b], int(below))
                  for a, b, below in zip(ends[:-1], ends[1:], q.below, strict=True)]
    return [selections[i * k:(i + 1) * k] for i in range(count)], sums


def _factor(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """BUCKETS / (hi - lo) where that is a positive finite number, else 1 (any positive factor
    keeps the buckets ordered; such a range is collected or narrowed again)."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        factor = BUCKETS / (hi - lo)
    return np.where(np.isfinite(factor) & (factor > 0), factor, 1.0)


def _narrow(
    q: _Queries, refine: np.ndarray, offset: np.ndarray, factor: np.ndarray, counts: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Add the level just histogrammed to the queries ``refine``: keep the buckets holding
    their positions, and return those still too full for the next level, with its grid."""
    ends = np.cumsum(counts, axis=1)
    wanted_first = q.start[refine] - q.below[refine]
    wanted_last = q.stop[refine] - 1 - q.below[refine]
    first = np.array([np.searchsorted(e, w, side="right") for e, w in zip(ends, wanted_first,
                                                                          strict=True)])
    last = np.array([np.searchsorted(e, w, side="right") for e, w in zip(ends, wanted_last,
                                                                         strict=True)])
    rows = np.arange(refine.size)
    before = ends[rows, first] - counts[rows, first]
    # Queries not refined at this level keep all of it: factor 0 puts every value in bucket
    # 0, inside [0, BUCKETS - 1].
    q.offset = _appended(q.offset, refine, offset, 0.0)
    q.factor = _appended(q.factor, refine, factor, 0.0)
    q.first = _appended(q.first, refine, first, 0)
    q.last = _appended(q.last, refine, last, BUCKETS - 1)
    q.below[refine] += before
    q.inside[refine] = ends[rows, last] - before
    full = q.inside[refine] > (q.stop[refine] - q.start[refine]) + SPARE_VALUES
    if q.depth >= MAX_LEVELS:
        full[:] = False
    width = 1.0 / factor
    low = offset + first * width
    high = offset + (last + 1) * width
    return refine[full], low[full], _factor(low[full], high[full])


def _appended(levels: np.ndarray, rows: np.ndarray, new: np.ndarray, fill: float) -> np.ndarray:
    """``levels`` (Q, depth) with one more column: ``new`` on ``rows``, ``fill`` elsewhere."""
    column = np.full(levels.shape[0], fill, dtype=levels.dtype)
    column[rows] = new
    return np.column_stack([levels, column])


# A column of at most this many distinct values is read whole, as (value, count) runs, the
# first time the exponential sampler asks for a side of it (``DaskColumnOrder.runs``).
FEW_VALUES = 4096


def _few_values(block: np.ndarray, most: int) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """Per column of a block: its distinct values and their counts, or None beyond ``most``."""
    columns = np.sort(block_columns(block), axis=1)
    out: list[tuple[np.ndarray, np.ndarray] | None] = []
    for column in columns:
        first = np.flatnonzero(np.concatenate([[True], column[1:] != column[:-1]]))
        out.append((column[first], np.diff(np.append(first, column.size)))
                   if first.size <= most else None)
    return out


def _merge_few(a: list[Any], b: list[Any], most: int) -> list[Any]:
    """Two blocks' ``_few_values`` as one: merged where both are few, and still few."""
    out = []
    for x, y in zip(a, b, strict=True):
        merged = None if x is None or y is None else _merge(x, y)
        out.append(merged if merged is not None and merged[0].size <= most else None)
    return out


class DaskColumnOrder:
    """``engines.base.ColumnOrder`` of a dask.array ``x`` (n, k): every answer a ``select``,
    its first grid on [lo, hi] where both are finite, else on the column's own [min, max]
    (one more pass; the grid is internal, only exact order statistics leave). A side of a
    column of few distinct values (``runs``) comes from one pass that counts them in every
    column at once."""

    def __init__(self, x: Any, lo: np.ndarray, hi: np.ndarray) -> None:
        self._x = x
        self.shape = (int(x.shape[0]), int(x.shape[1]))
        self._lo = np.array(np.broadcast_to(lo, (self.shape[1],)), dtype=np.float64)
        self._hi = np.array(np.broadcast_to(hi, (self.shape[1],)), dtype=np.float64)
        self._few: list[tuple[np.ndarray, np.ndarray] | None] | None = None

    def _grid(self) -> tuple[np.ndarray, np.ndarray]:
        unbounded = ~(np.isfinite(self._lo) & np.isfinite(self._hi))
        if unbounded.any():
            import dask

            low, high = dask.compute(self._x.min(axis=0), self._x.max(axis=0))
            self._lo = np.where(unbounded, low, self._lo)
            self._hi = np.where(unbounded, high, self._hi)
        return self._lo, self._hi

    def positions(self, start: int, stop: int, cols: slice) -> np.ndarray:
        lo, hi = self._grid()
        (found,), _ = select(self._x[:, cols], [(start, stop)], lo[cols], hi[cols])
        wanted = np.arange(start, stop)
        return np.stack([column.at(wanted) for column in found])

    def runs(self, start: int, stop: int, col: int) -> tuple[np.ndarray, np.ndarray]:
        # The sampler reads a side only when a draw lands outside its window, which ties
        # cause: a column of few distinct values. One ``select`` per side and column made
        # PLAN's variances on MNIST's pair differences 2,264 passes (407 s against 1 s in
        # memory); one pass counting every column's distinct values answers them all.
        few = self._few_valued()[col]
        if few is None:
            return positions_as_runs(self.positions(start, stop, slice(col, col + 1))[0],
                                     start)
        values, counts = few
        ends = np.cumsum(counts)
        begins = ends - counts
        held = (ends > start) & (begins < stop)
        return values[held], np.maximum(begins[held], start)

    def _few_valued(self) -> list[tuple[np.ndarray, np.ndarray] | None]:
        """Per column, its distinct values and their counts, None for a column of more than
        FEW_VALUES: one pass, combined pairwise on the workers, O(k x FEW_VALUES) on the
        client."""
        if self._few is None:
            import dask

            self._few = _reduced([dask.delayed(_few_values)(block, FEW_VALUES)
                                  for block in self._x.to_delayed().ravel()],
                                 _merge_few, FEW_VALUES)
        return self._few

    def tails(self, m: int, divisor: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = self.shape[0]
        lo, hi = self._grid()
        (low, high), between = select(self._x, [(0, m + 1), (n - m - 1, n)], lo, hi,
                                      between=(0, 1), divisor=divisor)
        assert between is not None
        lowest = np.stack([c.at(np.arange(m + 1)) for c in low], axis=1)
        highest = np.stack([c.at(np.arange(n - m - 1, n)) for c in high], axis=1)
        # The workers summed the positions strictly between the two selections; the rest of
        # m..n-m-1 is in them (low's first where they overlap).
        middle = between.copy()
        for j, (a, b) in enumerate(zip(low, high, strict=True)):
            low_end = a.below + int(a.counts.sum())
            mine = np.arange(m, min(low_end, n - m))
            theirs = np.arange(max(b.below, low_end, m), n - m)
            middle[j] += (a.at(mine) / divisor).sum() + (b.at(theirs) / divisor).sum()
        return lowest, highest, middle
