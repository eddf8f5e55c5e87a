"""Compiled scans of a CSV file's bytes (numba), in chunks: its lines and its quotes.

- ``count_lines``: the records a release reads, a record a line (\\n, \\r\\n or a lone \\r
  ends one), blank lines skipped but in a file of one column; n, which an (epsilon, delta)
  budget's calibration reads before the charge, so nothing a cell holds may move it or fail
  it. (pyarrow's parse with quotes off and a Python call for every line of another width
  than the header's took 15 s per 2 million lines whose text column held a quoted comma, a
  review.)
- ``quote_over_line``: whether a quoted cell runs over a line break, the quotes read as
  pyarrow reads them: a quote opens a quoted cell only at a cell's start; inside one, two
  quotes are a quote and one closes it; after it, up to the next delimiter, a quote is text.
  Run after a release's parse or check failed (``CsvTable``), so that a record over two
  lines is told as one whatever else fails, and a quote inside a cell (12" pipe) is not taken
  for one (a review: counting quotes, an odd number of them refused a well-formed file).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
from numba import njit

# Scanner states: at a cell's start, inside an unquoted cell (or after a closed quote), inside
# a quoted cell, and just after a quote inside a quoted cell.
_START, _PLAIN, _QUOTED, _QUOTE_SEEN = 0, 1, 2, 3
_QUOTE, _LF, _CR = ord('"'), ord("\n"), ord("\r")
_CHUNK_BYTES = 16 << 20


@njit(nogil=True, cache=True)
def _scan(data, delimiter, state, broken):  # pragma: no cover - compiled
    # Returns (state after data, whether a quoted line break was seen and not yet followed by
    # anything, whether one was: a record of two lines or more).
    for c in data:
        if broken:
            if c == _LF:
                continue  # the \n of a \r\n
            return state, broken, True
        if state == _QUOTED:
            if c == _QUOTE:
                state = _QUOTE_SEEN
            elif c == _LF or c == _CR:
                broken = True  # a record over two lines, once anything follows
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
    return state, broken, False


@njit(nogil=True, cache=True)
def _lines(data, skip_blank, after_cr, length, count):  # pragma: no cover - compiled
    # Returns (whether data ended on a \r, the length of its unfinished line, lines so far).
    for c in data:
        if c == _LF and after_cr:
            after_cr = False  # the \n of a \r\n: its line was ended at the \r
            continue
        if c == _LF or c == _CR:
            if length > 0 or not skip_blank:
                count += 1
            length = 0
            after_cr = c == _CR
        else:
            length += 1
            after_cr = False
    return after_cr, length, count


def _chunks(path: Path, start: int) -> Iterator[np.ndarray]:
    """The file's bytes from ``start`` on, ``_CHUNK_BYTES`` at a time, as uint8 arrays."""
    with open(path, "rb") as f:
        f.seek(start)
        while chunk := f.read(_CHUNK_BYTES):
            yield np.frombuffer(chunk, dtype=np.uint8)


def count_lines(data: bytes | None, path: Path | None = None, start: int = 0, *,
                skip_blank: bool = True) -> int:
    """The lines of ``data``, or of the file at ``path`` from byte ``start`` on: each ended by
    \\n, \\r\\n or a lone \\r, or by the end (a last line without a break, if it holds
    anything); an empty one is not counted where ``skip_blank``."""
    if data is not None:
        chunks: Iterable[np.ndarray] = [np.frombuffer(data, dtype=np.uint8)]
    else:
        assert path is not None
        chunks = _chunks(path, start)
    after_cr, length, count = False, 0, 0
    for chunk in chunks:
        after_cr, length, count = _lines(chunk, skip_blank, after_cr, length, count)
    return count + (1 if length > 0 else 0)


def quote_over_line(path: Path, start: int, delimiter: str) -> bool:
    """Whether, from byte ``start`` of the file on, a quoted cell holds a line break that more
    of the file follows: a record over two lines or more. A quote left open at the end, or one
    that holds only the file's last line break, ends its record there, as pyarrow reads it
    (the records are then the lines: a fourth review)."""
    state, broken = _START, False
    for chunk in _chunks(path, start):
        state, broken, spans = _scan(chunk, ord(delimiter), state, broken)
        if spans:
            return True
    return False
