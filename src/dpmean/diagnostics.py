"""Diagnostics with stable types: every estimator declares the keys its results may carry, each
with a kind and a meaning, and ``normalise`` converts a release's by-products to those kinds.

A key means the same thing, with the same type, in every result that carries it (issue 17):
``noise_std`` is always a float64 array of shape (d,), a radius always a Python float, a count
always a Python int. A key that does not apply to a release (a setting of another path, a
value that is None) is absent rather than None. The declarations are the documentation: each
estimator's docstring lists its keys in a *Diagnostics* section written from them
(``document``). Normalising changes types only, never values: it adds nothing to what the
release already published.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np


class Kind(Enum):
    """The type a diagnostic has in every result (its value is how the docs name it)."""

    FLOAT = "float"
    INT = "int"
    BOOL = "bool"
    TEXT = "str"
    VECTOR = "float64 array, shape (d,)"
    COUNTS = "int64 array, shape (d,)"
    SERIES = "float64 array, one value per step"
    AMOUNTS = "dict of str to float"


@dataclass(frozen=True)
class Diagnostic:
    """A declared diagnostic: its kind, and what it is (one line for the docs).

    Attributes
    ----------
    kind : Kind
        The type every result gives it.
    meaning : str
        What the value is, with its units and the space it is measured in.
    """

    kind: Kind
    meaning: str


NOISE_STD = Diagnostic(
    Kind.VECTOR, "The standard deviation of the Gaussian noise on each coordinate of the "
    "release, in the data's units (a box-normalised release's mapped back).")
"""``noise_std`` as the Gaussian releases carry it (confidence intervals read it)."""


def _integral(value: Any) -> int:
    number = float(value)
    if not number.is_integer():
        raise TypeError(f"{value!r} is not a whole number")
    return int(number)


def _per_coordinate(dtype: type) -> Callable[[Any, int], np.ndarray]:
    def convert(value: Any, d: int) -> np.ndarray:
        # An isotropic scalar is the same value on every coordinate.
        return np.broadcast_to(np.asarray(value, dtype=dtype), (d,)).copy()
    return convert


_CONVERT: dict[Kind, Callable[[Any, int], Any]] = {
    Kind.FLOAT: lambda value, d: float(value),
    Kind.INT: lambda value, d: _integral(value),
    Kind.BOOL: lambda value, d: bool(value),
    Kind.TEXT: lambda value, d: str(value),
    Kind.VECTOR: _per_coordinate(np.float64),
    Kind.COUNTS: _per_coordinate(np.int64),
    Kind.SERIES: lambda value, d: np.atleast_1d(np.asarray(value, dtype=np.float64)).ravel(),
    Kind.AMOUNTS: lambda value, d: {str(k): float(v) for k, v in value.items()},
}


def normalise(diagnostics: Mapping[str, Any], declared: Mapping[str, Diagnostic],
              d: int) -> dict[str, Any]:
    """``diagnostics`` with every value converted to its declared kind, None values dropped.

    Parameters
    ----------
    diagnostics : Mapping[str, Any]
        A release's diagnostics, as its mechanisms returned them.
    declared : Mapping[str, Diagnostic]
        The estimator's declarations (``MeanEstimator.diagnostic_declarations``).
    d : int
        The public dimension: per-coordinate kinds have shape (d,).

    Returns
    -------
    dict
        Key -> value of its declared type, in the order given.

    Raises
    ------
    TypeError
        A key the estimator did not declare (a defect in the estimator, found by the tests'
        sweep over every method), or a value that cannot take its kind.
    """
    out: dict[str, Any] = {}
    for key, value in diagnostics.items():
        if value is None:
            continue
        if key not in declared:
            raise TypeError(f"diagnostic {key!r} is not declared by the estimator")
        out[key] = _CONVERT[declared[key].kind](value, d)
    return out


def section(declared: Mapping[str, Diagnostic]) -> str:
    """A numpydoc *Diagnostics* section listing ``declared`` (name : kind, then the meaning)."""
    lines = ["Diagnostics", "-----------"]
    for key, item in declared.items():
        lines += [f"{key} : {item.kind.value}",
                  textwrap.fill(item.meaning, 96, initial_indent="    ",
                                subsequent_indent="    ")]
    return "\n".join(lines)


def document(cls: type, declared: Mapping[str, Diagnostic]) -> None:
    """Append the *Diagnostics* section of ``declared`` to ``cls``'s docstring (if it has one),
    so that the declarations are the only place the keys are written down."""
    doc = cls.__dict__.get("__doc__")
    if not doc or not declared:
        return
    cls.__doc__ = f"{inspect.cleandoc(doc)}\n\n{section(declared)}\n"

