"""Progress of a release: every engine reports each pass over the data, a command may show them.

An engine question (a count, a sum, the row norms, the column blocks) reads every row once: a
pass. ``engines.base.Engine`` counts each outermost question through ``counted_pass``; nested
questions (a chunked engine asks an in-memory engine per chunk) belong to the pass that asked
them. Nothing is shown unless a command opens ``shown_passes``. The number of passes is public
(step counts are fixed before the data is read), so the display reveals nothing a ledger does
not.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

# The open display's callback (one at a time: a command runs one release) and how deep the
# current question is nested.
_state: dict[str, Any] = {"tick": None, "depth": 0}


def counted_pass(question: F) -> F:
    """``question`` (an engine method) reporting one pass when it is not nested in another.
    An answer that is an iterator (column blocks, user rows) is a pass once it is exhausted."""

    @functools.wraps(question)
    def counted(*args: Any, **kwargs: Any) -> Any:
        if _state["depth"]:
            return question(*args, **kwargs)
        _state["depth"] += 1
        try:
            answer = question(*args, **kwargs)
        finally:
            _state["depth"] -= 1
        if isinstance(answer, Iterator):
            return _counted_iteration(answer)
        _tick()
        return answer

    return counted  # type: ignore[return-value]


def _counted_iteration(answer: Iterator[Any]) -> Iterator[Any]:
    while True:
        _state["depth"] += 1  # questions asked while producing the next item are this pass's
        try:
            item = next(answer)
        except StopIteration:
            break
        finally:
            _state["depth"] -= 1
        yield item
    _tick()


def _tick() -> None:
    if _state["tick"] is not None:
        _state["tick"]()


@contextlib.contextmanager
def shown_passes(description: str, *, quiet: bool = False, file: Any = None,
                 delay: float = 2.0) -> Iterator[Any]:
    """Show the passes of the releases run inside as a tqdm bar on ``file`` (default stderr):
    only when it is a terminal (nothing on a pipe or file), only once the release has taken
    ``delay`` seconds, and never with ``quiet``. Yields the bar (``.n`` counts the passes)."""
    from tqdm import tqdm

    with tqdm(desc=description, unit=" pass", file=file or sys.stderr, delay=delay,
              leave=False, disable=True if quiet else None) as bar:
        previous, _state["tick"] = _state["tick"], (lambda: bar.update(1))
        try:
            yield bar
        finally:
            _state["tick"] = previous
