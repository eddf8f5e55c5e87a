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
    if kind == "sparse":
        if not is_sparse(x):
            raise InvalidParameterError("engine='sparse' needs scipy.sparse input")
        return SparseEngine(x, lo, hi, scale)
    if is_sparse(x):
        raise InvalidParameterError(f"engine={kind!r} needs dense input; sparse input runs on "
                                    f"engine='sparse'")
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
           "SparseEngine", "check_engine", "is_dask_array", "is_deferred", "make_engine",
           "open_source"]
