"""How the commands print numbers: a value on one terminal line, and JSON for numpy values.

numpy is imported where it is used: the CLI imports this module at start-up (``--help``).
"""

from __future__ import annotations

from typing import Any


def describe(value: Any) -> str:
    """A value on one line: an array by its size and first five entries, a number to six
    significant digits, anything else as ``str`` gives it.

    Parameters
    ----------
    value : Any
        A diagnostic, a half-width, ...

    Returns
    -------
    str
        E.g. ``"array of 784: 0.5, 1.25, 3, 0, 0 ..."`` or ``"0.0123457"``.
    """
    import numpy as np

    if isinstance(value, np.ndarray) and value.ndim > 0:
        shown = min(value.size, 5)
        rest = " ..." if value.size > shown else ""
        return f"array of {value.size}: {format_values(value.ravel()[:shown])}{rest}"
    if isinstance(value, (bool, np.bool_, str)):
        return str(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return f"{value:.6g}"
    return str(value)


def format_level(level: float) -> str:
    """A confidence level as a percentage with the digits it has (0.95 as 95%; 0.9999999999
    was printed as 100%, a trial)."""
    return f"{100.0 * level:.10g}%"


def format_values(values: Any, digits: int = 6) -> str:
    """Numbers to ``digits`` significant digits, separated by commas.

    Parameters
    ----------
    values : array_like
        One-dimensional numbers.
    digits : int, default 6
        Significant digits (``digits_to_resolve`` gives enough to tell an interval's ends
        apart).

    Returns
    -------
    str
    """
    import numpy as np

    return ", ".join(f"{v:.{digits}g}" for v in np.asarray(values, dtype=np.float64))


def digits_to_resolve(lo: Any, hi: Any) -> int:
    """The significant digits that show every interval [lo_j, hi_j] with its two ends apart
    (two digits of its width), at least 6 and at most 17: a timestamp of 1.7e12 ms with an
    interval a few ms wide printed as 1.70004e+12 at both ends.

    Parameters
    ----------
    lo, hi : array_like
        The intervals' ends.

    Returns
    -------
    int
    """
    import numpy as np

    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.maximum(np.abs(lo), np.abs(hi)) / (hi - lo)
    finite = ratio[np.isfinite(ratio) & (ratio > 0)]
    if np.any(hi - lo == 0):
        return 17  # ends that float64 cannot tell apart: every digit it has
    needed = int(np.ceil(np.log10(finite.max()))) + 2 if finite.size else 6
    return min(max(needed, 6), 17)


def json_default(obj: Any) -> Any:
    """``json.dump``'s ``default``: numpy arrays and scalars as lists and numbers, anything else
    as its ``str``.

    Parameters
    ----------
    obj : Any
        A value ``json`` cannot write itself.

    Returns
    -------
    Any
    """
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return str(obj)
