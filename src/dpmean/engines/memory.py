"""The in-memory numpy engine: the default way estimators reach a dense array.

Works on row blocks that fit in cache, one thread per core (numpy releases the GIL). Rows are
clamped to the box block by block as they are read, and the clipped/quantized/rotated copy of
the data, the expensive part of a view (O(n d log d)), is computed once and cached.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import threadpool_limits

from ..parallel import THREADS, over_row_ranges, sort_columns
from ..transforms import View, clamp, clip_weights
from .base import Engine, column_slices

# Rows per block: a block and its temporaries stay in the per-core cache (measured fastest for
# both the transform's small matrix products and the counting loop's comparisons).
_BLOCK_BYTES = 1 << 20
_THREADS = THREADS


class InMemoryEngine(Engine):
    """Answers aggregate questions with numpy about ``x`` (n, d) clamped to [lo, hi].

    ``x`` is read, never written, and never copied whole: only a view's rotated copy is kept.
    """

    def __init__(self, x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        self.lo = np.asarray(lo, dtype=np.float64)
        self.hi = np.asarray(hi, dtype=np.float64)
        self.n, self.d = x.shape
        self._x = x
        self._base_key: tuple | None = None
        self._base: np.ndarray | None = None

    def _each_block(self, width: int, fn: Callable[[slice], np.ndarray | None]) -> list:
        """fn over row blocks; each thread takes a contiguous run of blocks. Results come back
        in block order, so sums over them are reproducible whatever the threads' timing."""
        step = max(1, _BLOCK_BYTES // (8 * max(width, 1)))
        blocks = [slice(i, min(i + step, self.n)) for i in range(0, self.n, step)]
        runs = [blocks[len(blocks) * t // _THREADS: len(blocks) * (t + 1) // _THREADS]
                for t in range(_THREADS)]
        if len(blocks) <= 1 or _THREADS == 1:
            return [fn(rows) for rows in blocks]
        # BLAS would start its own threads inside ours and spin on the same cores.
        with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(_THREADS) as pool:
            done = pool.map(lambda run: [fn(rows) for rows in run], runs)
            return [result for run in done for result in run]

    def _clamped(self, rows: slice | np.ndarray) -> np.ndarray:
        return clamp(self._x[rows], self.lo, self.hi)

    def _base_reader(
        self, view: View,
    ) -> tuple[int, Callable[[slice | np.ndarray], np.ndarray]]:
        """Width of the view's base (clip, quantize, rotate) and a reader of its rows (a block
        as a slice, or an integer array of row indices)."""
        if (view.preclip, view.quantizer, view.rotation) == (None, None, None):
            return self.d, self._clamped
        base = self._cached_base(view)
        return base.shape[1], lambda rows: base[rows]

    def _cached_base(self, view: View) -> np.ndarray:
        """The view's base over all rows, computed once per base (the last one asked is kept)."""
        key = (view.preclip, view.quantizer, view.rotation)
        base = self._base
        if base is None or key != self._base_key:
            base = np.empty((self.n, view.output_dim(self.d)))

            def fill(rows: slice) -> None:
                base[rows] = view.apply_base(self._clamped(rows))

            self._each_block(base.shape[1], fill)
            self._base, self._base_key = base, key
        return base

    def coordinate_counts(self, view: View, thresholds: np.ndarray) -> np.ndarray:
        width, read = self._base_reader(view)
        limit = np.asarray(thresholds, dtype=np.float64)
        if view.linear is not None:
            # A dense map mixes coordinates: no per-coordinate shortcut, compare finished rows.
            base_read = read
            read = lambda rows: view.finish(base_read(rows))  # noqa: E731
        else:
            # v_j <= t_j  <=>  based_j <= t_j / scale_j + shift_j, for the positive scales views
            # use.
            if view.scale is not None:
                limit = limit / view.scale
            if view.shift is not None:
                limit = limit + view.shift

        def block_counts(rows: slice) -> np.ndarray:
            # Summing the comparison's bytes row by row vectorises; count_nonzero along axis 0
            # does not, and this is the hot loop of every private median.
            below = (read(rows) <= limit).view(np.uint8)
            return np.add.reduce(below, axis=0, dtype=np.int32)

        return np.asarray(np.sum(self._each_block(width, block_counts), axis=0, dtype=np.int64))

    def row_norms(self, view: View) -> np.ndarray:
        width, read = self._base_reader(view)
        norms = np.empty(self.n)

        def fill(rows: slice) -> None:
            block = view.finish(read(rows))
            norms[rows] = np.sqrt(np.einsum("ij,ij->i", block, block))

        self._each_block(width, fill)
        return norms

    def clipped_sum(self, view: View, radius: float) -> np.ndarray:
        width, read = self._base_reader(view)

        def block_sum(rows: slice) -> np.ndarray:
            block = view.finish(read(rows))
            weights = clip_weights(np.sqrt(np.einsum("ij,ij->i", block, block)), radius)
            return weights @ block

        return np.sum(self._each_block(width, block_sum), axis=0)

    def clipped_outer_sum(self, view: View, radius: float) -> np.ndarray:
        width, read = self._base_reader(view)

        def block_outer(rows: slice) -> np.ndarray:
            block = view.finish(read(rows))
            block = block * clip_weights(np.sqrt(np.einsum("ij,ij->i", block, block)),
                                         radius)[:, None]
            return block.T @ block

        return np.sum(self._each_block(width, block_outer), axis=0)

    def column_blocks(self, view: View, width: int) -> Iterator[tuple[slice, np.ndarray]]:
        k = view.output_dim(self.d)
        if view.linear is not None:
            # A dense map mixes coordinates: finish whole rows once, then hand columns out.
            row_width, read = self._base_reader(view)
            finished = np.concatenate(self._each_block(row_width,
                                                       lambda rows: view.finish(read(rows))))
            for cols in column_slices(k, width):
                yield cols, np.array(finished[:, cols])
            return
        for cols in column_slices(k, width):
            # Shift and scale act coordinate by coordinate: finish the base's columns alone.
            values = self._base_columns(view, cols)
            if view.shift is not None:
                values -= view.shift[cols]
            if view.scale is not None:
                values *= view.scale[cols]
            yield cols, values

    def sorted_column_blocks(self, view: View,
                             width: int) -> Iterator[tuple[slice, np.ndarray]]:
        steps = (view.preclip, view.quantizer, view.rotation, view.shift, view.scale, view.linear)
        if any(step is not None for step in steps):
            yield from super().sorted_column_blocks(view, width)
            return
        for cols in column_slices(self.d, width):
            # Clamping is monotone, so it commutes with sorting: sort the raw columns in their
            # own dtype (a radix sort for 8- and 16-bit integers such as MNIST's pixels, O(n)
            # whatever the ties), then clamp the sorted copy into float64.
            yield cols, _clamped_on_cores(sort_columns(self._x[:, cols]), self.lo[cols, None],
                                          self.hi[cols, None]).T

    def _base_columns(self, view: View, cols: slice) -> np.ndarray:
        """Columns ``cols`` of the view's base (clip, quantize, rotate) over all rows: a copy."""
        if (view.preclip, view.quantizer, view.rotation) == (None, None, None):
            return _clamped_on_cores(self._x[:, cols], self.lo[cols], self.hi[cols])
        return np.array(self._cached_base(view)[:, cols])

    def user_rows(self, view: View) -> Iterator[np.ndarray]:
        width, read = self._base_reader(view)
        step = max(1, _BLOCK_BYTES // (8 * max(width, 1)))
        for start in range(0, self.n, step):
            yield view.finish(read(slice(start, min(start + step, self.n))))

    def pair_differences(self, view: View, order: np.ndarray) -> np.ndarray:
        order = np.asarray(order)
        pairs = order[: 2 * (len(order) // 2)].reshape(-1, 2)
        _, read = self._base_reader(view)
        # Readers index rows with slices or, as here, integer arrays.
        return view.finish(read(pairs[:, 0])) - view.finish(read(pairs[:, 1]))


def _clamped_on_cores(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``values`` clamped to [lo, hi] (broadcast to its shape) as a new float64 array, its row
    ranges shared among the cores: a strided read and a clamp are memory-bound, and two cores
    read faster than one."""
    out = np.empty(values.shape)
    lo = np.broadcast_to(lo, values.shape)
    hi = np.broadcast_to(hi, values.shape)

    def fill(part: slice) -> None:
        clamp(values[part], lo[part], hi[part], out=out[part])

    over_row_ranges(len(values), fill, values=out.size)
    return out
