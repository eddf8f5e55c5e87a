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


def format_values(values: Any) -> str:
    """Numbers to six significant digits, separated by commas.

    Parameters
    ----------
    values : array_like
        One-dimensional numbers.

    Returns
    -------
    str
    """
    import numpy as np

    return ", ".join(f"{v:.6g}" for v in np.asarray(values, dtype=np.float64))


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
