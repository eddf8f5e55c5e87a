"""SIGTERM and SIGHUP end a command as Ctrl-C (SIGINT) does: as a ``KeyboardInterrupt``.

``timeout``, ``kill``, systemd and a closed terminal send SIGTERM or SIGHUP, whose default
action ends the process at once: a ``dpmean estimate --ledger`` stopped so left its release
"reserved" and said nothing, where Ctrl-C settles it as "failed" and says that it stays charged
(a user trial). While a command runs, both raise ``Stopped``, a ``KeyboardInterrupt``, so every
``except KeyboardInterrupt`` and ``except BaseException`` of the commands handles them as it
handles Ctrl-C; the exit code is 128 + the signal's number, as a shell reports a process the
signal ended.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["Stopped", "exit_code", "handled_signals", "interrupted"]

# The signals handled as SIGINT is, where the platform has them (SIGHUP is POSIX only).
_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP")
                 if hasattr(signal, name))


class Stopped(KeyboardInterrupt):
    """The command was stopped by the signal ``signum`` (SIGTERM or SIGHUP).

    Parameters
    ----------
    signum : int
        The signal's number.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def handled_signals() -> Iterator[None]:
    """Raise ``Stopped`` on SIGTERM and SIGHUP in the block, then restore the old handlers.

    A signal a parent had ignored (``nohup`` ignores SIGHUP) stays ignored, and nothing is
    installed outside the main thread, where Python cannot (``main`` called from a thread).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {}
    owner = os.getpid()

    def stop(signum: int, frame: FrameType | None) -> None:
        if os.getpid() != owner:
            # A forked child (a process pool's worker) inherits the handler: it must still end
            # as the signal ends it (a pool's shutdown terminates its workers with SIGTERM).
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        raise Stopped(signum)

    try:
        for signum in _SIGNALS:
            previous = signal.getsignal(signum)
            if previous is not signal.SIG_IGN:
                old[signum] = previous
                signal.signal(signum, stop)
        yield
    finally:
        for signum, previous in old.items():
            signal.signal(signum, previous)


def interrupted(exc: KeyboardInterrupt) -> str:
    """What stopped the command, for its last line: "interrupted" (Ctrl-C), or "interrupted by
    SIGTERM" (the signal's name)."""
    if isinstance(exc, Stopped):
        return f"interrupted by {signal.Signals(exc.signum).name}"
    return "interrupted"


def exit_code(exc: KeyboardInterrupt) -> int:
    """128 + the number of the signal that stopped the command (SIGINT's for Ctrl-C: 130)."""
    return 128 + (exc.signum if isinstance(exc, Stopped) else int(signal.SIGINT))
