"""Timing and memory helpers shared by the benchmark scripts (run them as scripts: this folder is
then on the import path)."""

from __future__ import annotations

import threading
import time
import tracemalloc
import types
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any


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


@contextmanager
def wrapped(owner: Any, names: Iterable[str],
            wrap: Callable[[str, Callable[..., Any]], Callable[..., Any]]) -> Iterator[None]:
    """Each attribute ``names`` of ``owner`` replaced by ``wrap(name, original)`` while
    inside, and put back after."""
    originals = {name: getattr(owner, name) for name in names}
    for name, original in originals.items():
        setattr(owner, name, wrap(name, original))
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(owner, name, original)


@contextmanager
def timed_calls(owners: dict[Any, Iterable[str]]) -> Iterator[list[list[Any]]]:
    """[name, seconds] of every outermost call of the methods ``owners[cls]`` of each class
    while inside, in order: where a run's time goes, question by question. A method called
    from inside another is not listed apart (its time is its caller's), and one that returns
    a generator is also charged for producing its items (the work happens there)."""
    calls: list[list[Any]] = []
    nesting = threading.local()  # per thread: engines may be asked from several threads

    def depth() -> int:
        return getattr(nesting, "depth", 0)

    def timed(step: Callable[[], Any], entry: list[Any]) -> Any:
        # ``step()``, its seconds added to ``entry`` when no timed call is running already.
        outer = depth()
        nesting.depth = outer + 1
        start = time.perf_counter()
        try:
            return step()
        finally:
            nesting.depth = outer
            if outer == 0:
                entry[1] += time.perf_counter() - start

    def items(generator: Iterator[Any], entry: list[Any]) -> Iterator[Any]:
        while True:
            try:
                item = timed(lambda: next(generator), entry)
            except StopIteration:
                return
            yield item

    def timing(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            entry = [name, 0.0]
            if depth() == 0:
                calls.append(entry)
            answer = timed(lambda: original(*args, **kwargs), entry)
            return items(answer, entry) if isinstance(answer, types.GeneratorType) else answer
        return call

    with ExitStack() as stack:
        for owner, names in owners.items():
            stack.enter_context(wrapped(owner, names, timing))
        yield calls
