"""How data is read: engines answer estimators' aggregate questions."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..engine_names import ENGINES
from ..errors import InvalidParameterError
from .base import Engine
from .chunked import ChunkedEngine, DatSource, RowSource, open_source
from .memory import InMemoryEngine
from .sparse import SparseEngine


def is_dask_array(x: Any) -> bool:
    """Whether ``x`` is a dask.array (without importing dask for other inputs)."""
    return type(x).__module__.split(".")[0] == "dask" and hasattr(x, "chunks")


def is_deferred(x: Any) -> bool:
    """Inputs read only by their engine (row sources, dask arrays): validated chunk by chunk."""
    return isinstance(x, RowSource) or is_dask_array(x)


def check_engine(kind: str | None) -> str | None:
    if kind is not None and kind not in ENGINES:
        raise InvalidParameterError(
            f"engine must be one of {', '.join(ENGINES)} (or None to choose by input), "
            f"got {kind!r}")
    return kind


def available_memory() -> int | None:
    """The bytes this process may still take: Linux's MemAvailable, and no more than what its
    address-space limit (``ulimit -v``) leaves beside the address space it holds already
    (``VmSize``: the libraries and threads' reservations are counted against the limit, and
    took 0.5-1 GB of it before any data); None where neither is told."""
    import resource

    free = _proc_kilobytes("/proc/meminfo", "MemAvailable:")
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit != resource.RLIM_INFINITY:
        held = _proc_kilobytes("/proc/self/status", "VmSize:") or 0
        left = max(limit - held, 0)
        free = left if free is None else min(free, left)
    return free


def _proc_kilobytes(path: str, field: str) -> int | None:
    """A "FIELD: N kB" line of a /proc file, in bytes; None where it cannot be read."""
    try:
        with open(path) as lines:
            for line in lines:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def reads_whole(x: Any, kind: str | None) -> bool:
    """Whether engine ``kind`` reads the file or dask array ``x`` whole into memory ("memory";
    "dask" for a file opened as a row source)."""
    return (kind == "memory" and is_deferred(x)) or (kind == "dask" and isinstance(x, RowSource))


def check_whole_read_fits(n: int, d: int, kind: str, baskets: bool = False) -> None:
    """Refuse, before any charge (public: n, d, the engine, the machine's free memory), an
    input that engine ``kind`` reads whole (``reads_whole``) into n x d float64 values larger
    than the memory this process may still take: a trial's basket file with ``--engine
    memory`` asked for 11.6 GB and failed for memory after the charge, 12 s and 5.5 GB in."""
    free = available_memory()
    if free is None or 8.0 * n * d <= free:
        return
    sparse = " (or 'sparse', which a basket file takes by default)" if baskets else ""
    raise InvalidParameterError(
        f"engine={kind!r} reads the whole input as {n:,} x {d:,} float64 values, "
        f"{8.0 * n * d / 2**30:.3g} GiB, more than the {free / 2**30:.3g} GiB this machine has "
        f"free: use engine='chunked'{sparse}, which reads it in blocks")


def check_engine_input(kind: str | None, sparse: bool) -> None:
    """Refuse engine ``kind`` for input that is scipy.sparse (``sparse``) or is not, by the
    input's type alone: ``make_engine`` as it reads, and a session and the command line before
    a charge (public: an engine given for the wrong input was refused after it, a trial).

    Parameters
    ----------
    kind : str or None
        The engine asked for (None chooses by the input's type, and takes either).
    sparse : bool
        Whether the input is a scipy.sparse matrix or array.

    Raises
    ------
    InvalidParameterError
        The sparse engine for dense input, or another engine for sparse input.
    """
    if kind == "sparse" and not sparse:
        raise InvalidParameterError("engine='sparse' needs scipy.sparse input")
    if kind not in (None, "sparse") and sparse:
        raise InvalidParameterError(f"engine={kind!r} needs dense input; sparse input runs on "
                                    f"engine='sparse'")


def make_engine(x: Any, lo: np.ndarray, hi: np.ndarray, kind: str | None = None, *,
                scale: np.ndarray | None = None) -> Engine:
    """The engine of kind ``kind`` over validated input ``x`` clamped to [lo, hi] and, when
    ``scale`` is given, rescaled coordinate by coordinate (``transforms.BoxClamp``): the
    estimator then sees the box [lo * scale, hi * scale].

    ``kind=None`` chooses by the input's type (never its values): scipy.sparse -> sparse, a
    RowSource (``open_source(path)``) -> chunked, a dask.array -> dask, else memory.
    """
    from ..validation import check_data, is_sparse

    kind = check_engine(kind)
    if kind is None:
        kind = ("sparse" if is_sparse(x) else "chunked" if isinstance(x, RowSource)
                else "dask" if is_dask_array(x) else "memory")
    check_engine_input(kind, is_sparse(x))
    if kind == "sparse":
        return SparseEngine(x, lo, hi, scale)
    # A basket file read whole is baskets still (``reads_baskets``): noted before it is read.
    baskets = isinstance(x, DatSource)
    engine: Engine
    if kind == "dask":
        from .dask import DaskEngine

        if not is_dask_array(x):
            import dask.array as da

            x = x.read_all() if isinstance(x, RowSource) else x
            x = da.from_array(np.asarray(x), chunks=(max(1, (64 << 20) // (8 * x.shape[1])),
                                                      -1))
        engine = DaskEngine(x, lo, hi, scale)
    else:
        if is_dask_array(x):
            x = check_data(x.compute())
        if kind == "chunked":
            return ChunkedEngine(x, lo, hi, scale=scale)  # baskets when its source is .dat
        if isinstance(x, RowSource):
            x = x.read_all()
        engine = InMemoryEngine(x, lo, hi, scale)
    engine.baskets = baskets
    return engine


__all__ = ["ENGINES", "ChunkedEngine", "DatSource", "Engine", "InMemoryEngine", "RowSource",
           "SparseEngine", "available_memory", "check_engine", "check_engine_input",
           "check_whole_read_fits",
           "is_dask_array", "is_deferred", "make_engine", "open_source", "reads_whole"]
