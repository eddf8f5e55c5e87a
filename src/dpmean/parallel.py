"""Sharing numpy work on one array among the machine's cores.

numpy releases the GIL inside its loops (sorts, ufuncs, reductions), so threads that work on
disjoint row ranges of one array run in parallel; no data is copied between them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, TypeVar

import numpy as np

# Threads a job is shared among (the in-memory engine's row blocks use as many).
THREADS = max(1, min(os.cpu_count() or 1, 8))
# Below this many values a job runs on one thread: handing work to threads costs about 0.06 ms.
SERIAL_BELOW = 1 << 16

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")

# One pool for the process, its threads started once: a fresh pool per job started two
# threads each time (0.22 against 0.06 ms a job of two parts; a PLAN release on MNIST hands
# out about 50 jobs). Forgotten in a forked child (the parent's threads do not exist there)
# and made again when THREADS changes.
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()
_in_pool = threading.local()


def _mark_pool_thread() -> None:
    _in_pool.inside = True


def _forget_pool() -> None:
    global _pool, _pool_size, _pool_lock
    _pool, _pool_size, _pool_lock = None, 0, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def map_on_threads(fn: Callable[[_Item], _Result], items: Sequence[_Item]) -> list[_Result]:
    """[fn(item) for item in items], the calls run on the process's ``THREADS`` shared threads
    (more items wait for a free one), the results in the items' order; an exception in any
    call is raised here. Run in this thread when there is one item or one thread, or when
    called from one of the shared threads (a job that waited there on jobs queued behind it
    could wait forever)."""
    global _pool, _pool_size
    if len(items) <= 1 or THREADS <= 1 or getattr(_in_pool, "inside", False):
        return [fn(item) for item in items]
    with _pool_lock:
        if _pool is None or _pool_size != THREADS:
            if _pool is not None:
                _pool.shutdown(wait=False)  # its threads end once their jobs are done
            _pool = ThreadPoolExecutor(THREADS, thread_name_prefix="dpmean",
                                       initializer=_mark_pool_thread)
            _pool_size = THREADS
        pool = _pool
    # numpy's floating-point error handling is the calling thread's and is not inherited by
    # the pool's: a release that ignores its own errors (``MeanEstimator.estimate``: whether
    # a row made one would tell it) must ignore them in its threads too (a review).
    handling = np.geterr()

    def run(item: _Item) -> _Result:
        with np.errstate(**handling):
            return fn(item)

    return list(pool.map(run, items))


def over_row_ranges(rows: int, fn: Callable[[slice], object], *, values: int,
                    threads: int | None = None) -> None:
    """Call ``fn(part)`` once for each of up to ``threads`` (default ``THREADS``) consecutive
    slices that together cover range(rows), in parallel; an exception in any call is raised
    here. ``values``: how many values the whole job reads (one call on range(rows) when fewer
    than SERIAL_BELOW).

    For deterministic work only (no random draws: a generator is not shared between threads)
    whose result does not depend on how the rows are split, so the answer is the same on any
    machine. ``fn`` must not call BLAS (sort, ufuncs, reductions): BLAS would start its own
    threads inside these and spin on the same cores, and limiting it (threadpoolctl) costs
    milliseconds a call.
    """
    parts = max(1, min(threads or THREADS, rows)) if values >= SERIAL_BELOW else 1
    bounds = [rows * t // parts for t in range(parts + 1)]
    slices = [slice(bounds[t], bounds[t + 1]) for t in range(parts)]
    map_on_threads(fn, slices)


def sort_columns(columns: np.ndarray) -> np.ndarray:
    """The columns of ``columns`` (n, b) as the rows of a new C-ordered (b, n) array of the same
    dtype, each sorted ascending, the rows shared among the cores.

    Integers of 8 and 16 bits are sorted by radix (numpy's stable sort for them), O(n) however
    many ties (MNIST's pixels: 74 % zeros); float64 by a compiled radix-then-insertion sort on
    the floats' bits (``radix_sort``: 1.9x numpy's on PLAN's pair magnitudes, the transposing
    copy included, and never much slower on skewed or tied values); other types by numpy's
    default sort. A sort, not a selection: numpy's introselect (``partition``) slows down
    ninefold on tie-heavy columns and was then 7x slower than this sort."""
    rows = np.empty((columns.shape[1], columns.shape[0]), dtype=columns.dtype)
    if rows.dtype == np.float64:
        # Imported here: numba's import costs the CLI's start-up a second.
        from .radix_sort import sort_float_columns

        over_row_ranges(rows.shape[0],
                        lambda part: sort_float_columns(columns, rows, part.start, part.stop),
                        values=rows.size)
        return rows
    radix = rows.dtype.kind in "iub" and rows.dtype.itemsize <= 2
    kind: Literal["stable"] | None = "stable" if radix else None

    def fill(part: slice) -> None:
        rows[part] = columns[:, part].T
        rows[part].sort(axis=1, kind=kind)

    over_row_ranges(rows.shape[0], fill, values=rows.size)
    return rows
