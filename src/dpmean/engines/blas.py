"""BLAS limited to one thread while the engines run their own threads.

``threadpoolctl.threadpool_limits`` finds the loaded BLAS libraries anew on every call (it reads
the process's memory map: about 10 ms), which dominated small releases that ask many questions.
The controller is kept and found anew only after new modules were imported (a new import is
what may load another BLAS, e.g. scipy.linalg's).

The limit is process-wide, and engines may enter it from several threads at once (Dask's
threaded scheduler runs engine work in its own threads). Each limiter restores the limits it
found when it was entered, so overlapping entries left BLAS at one thread for good (the second
one found 1 and restored 1). The first entry limits and the last exit restores, under a lock.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from threadpoolctl import ThreadpoolController

_controller: tuple[int, ThreadpoolController] | None = None
_lock = threading.Lock()
_entered = 0
_limiter: Any = None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """A context in which every loaded BLAS runs one thread (restored when the last context
    open in the process, in any thread, exits)."""
    global _controller, _entered, _limiter
    with _lock:
        if _entered == 0:
            loaded = len(sys.modules)
            if _controller is None or _controller[0] != loaded:
                _controller = (loaded, ThreadpoolController())
            _limiter = _controller[1].limit(limits=1, user_api="blas")
        _entered += 1
    try:
        yield
    finally:
        with _lock:
            _entered -= 1
            if _entered == 0:
                _limiter.restore_original_limits()
                _limiter = None
