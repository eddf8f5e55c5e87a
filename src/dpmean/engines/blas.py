"""BLAS limited to one thread while the engines run their own threads.

``threadpoolctl.threadpool_limits`` finds the loaded BLAS libraries anew on every call (it reads
the process's memory map: about 10 ms), which dominated small releases that ask many questions.
The controller is kept and found anew only after new modules were imported (a new import is
what may load another BLAS, e.g. scipy.linalg's).
"""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager
from typing import Any

from threadpoolctl import ThreadpoolController

_controller: tuple[int, ThreadpoolController] | None = None


def one_blas_thread() -> AbstractContextManager[Any]:
    """A context in which every loaded BLAS runs one thread (restored on exit).

    Returns
    -------
    contextlib.AbstractContextManager
        ``threadpoolctl``'s limiter for the libraries loaded when it is entered.
    """
    global _controller
    loaded = len(sys.modules)
    if _controller is None or _controller[0] != loaded:
        _controller = (loaded, ThreadpoolController())
    return _controller[1].limit(limits=1, user_api="blas")
