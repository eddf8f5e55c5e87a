"""Timing and memory helpers shared by the benchmark scripts (run them as scripts: this folder is
then on the import path)."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable


def best_time(fn: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` wall-clock runs of ``fn``, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_memory(fn: Callable[[], object]) -> float:
    """Peak memory ``fn`` allocates while it runs (tracemalloc; numpy reports to it), in MiB."""
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20
