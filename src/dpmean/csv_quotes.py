"""Whether a CSV file's quotes run over a line break, read as pyarrow reads them: a quote opens
a quoted cell only at a cell's start; inside one, two quotes are a quote and one closes it;
after it, up to the next delimiter, a quote is text. A compiled scan of the bytes (numba), run
after a release's parse failed (``CsvTable``), so that an open quote is told as one whatever
else fails, and a quote inside a cell (12" pipe) is not taken for one (a review: counting
quotes, an odd number of them refused a well-formed file)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import njit

# Scanner states: at a cell's start, inside an unquoted cell (or after a closed quote), inside
# a quoted cell, and just after a quote inside a quoted cell.
_START, _PLAIN, _QUOTED, _QUOTE_SEEN = 0, 1, 2, 3
_QUOTE, _LF, _CR = ord('"'), ord("\n"), ord("\r")
_CHUNK_BYTES = 16 << 20


@njit(nogil=True, cache=True)
def _scan(data, delimiter, state):  # pragma: no cover - compiled
    # Returns (state after data, whether a line break fell inside quotes).
    for c in data:
        if state == _QUOTED:
            if c == _QUOTE:
                state = _QUOTE_SEEN
            elif c == _LF or c == _CR:
                return state, True
        elif state == _QUOTE_SEEN:
            if c == _QUOTE:
                state = _QUOTED
            elif c == delimiter or c == _LF or c == _CR:
                state = _START
            else:
                state = _PLAIN
        elif c == delimiter or c == _LF or c == _CR:
            state = _START
        elif state == _START and c == _QUOTE:
            state = _QUOTED
        else:
            state = _PLAIN
    return state, False


def quote_over_line(path: Path, start: int, delimiter: str) -> bool:
    """Whether, from byte ``start`` of the file on, a quoted cell holds a line break or is
    still open at the file's end."""
    state = _START
    with open(path, "rb") as f:
        f.seek(start)
        while chunk := f.read(_CHUNK_BYTES):
            state, broken = _scan(np.frombuffer(chunk, dtype=np.uint8), ord(delimiter), state)
            if broken:
                return True
    return state == _QUOTED
