"""The typed privacy budget: one value that says which guarantee a release has, in its units.

A ``Budget`` travels from the request (``dpmean.mean(rho=...)`` or ``epsilon=, delta=``) through
the estimator to its ``MeanResult``, so a number is never read in the wrong unit: ``rho`` only
ever holds a zCDP (or tCDP) rho, ``epsilon`` and ``delta`` only an approximate-DP pair.
Conversions between notions live in ``dpmean.accounting``; this module only checks that the
fields fit the notion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, SupportsFloat

from .errors import InvalidParameterError

# notion -> (the unit its ledger is kept in, the fields it requires, the fields it may carry).
# A zCDP or tCDP budget may also carry the (epsilon, delta) the caller asked for, which its rho
# implies; an approximate-DP budget never carries a rho.
_NOTIONS: dict[str, tuple[str, frozenset[str], frozenset[str]]] = {
    "zCDP": ("rho", frozenset({"rho"}), frozenset({"epsilon", "delta"})),
    "tCDP": ("rho", frozenset({"rho", "omega"}), frozenset({"epsilon", "delta"})),
    "local-zCDP": ("rho", frozenset({"rho"}), frozenset({"epsilon", "delta"})),
    "approx-DP": ("epsilon", frozenset({"epsilon", "delta"}), frozenset()),
    "pure-DP": ("epsilon", frozenset({"epsilon"}), frozenset()),
    "local-approx-DP": ("epsilon", frozenset({"epsilon", "delta"}), frozenset()),
    "shuffle-approx-DP": ("epsilon", frozenset({"epsilon", "delta"}), frozenset()),
}
NOTIONS = tuple(_NOTIONS)
"""Every privacy notion a dpmean release can be stated in."""

_FIELDS = ("rho", "epsilon", "delta", "omega")


@dataclass(frozen=True)
class Budget:
    """A privacy guarantee: its notion and parameters, each in its own unit.

    Parameters
    ----------
    notion : str
        One of ``NOTIONS``: "zCDP" (rho), "tCDP" (rho, omega), "local-zCDP" (rho, per user),
        "approx-DP" (epsilon, delta), "pure-DP" (epsilon), "local-approx-DP" and
        "shuffle-approx-DP" (epsilon, delta).
    rho, epsilon, delta, omega : float or None
        The notion's parameters. A zCDP-family budget may also carry the ``epsilon`` and
        ``delta`` the caller asked for (its rho implies them); nothing else is allowed.

    Raises
    ------
    InvalidParameterError
        On an unknown notion, a missing or extra parameter, or a value out of range.
    """

    notion: str
    rho: float | None = None
    epsilon: float | None = None
    delta: float | None = None
    omega: float | None = None

    def __post_init__(self) -> None:
        if self.notion not in _NOTIONS:
            raise InvalidParameterError(
                f"unknown privacy notion {self.notion!r}; choose one of {', '.join(NOTIONS)}"
            )
        _, required, optional = _NOTIONS[self.notion]
        given = {name for name in _FIELDS if getattr(self, name) is not None}
        missing = sorted(required - given)
        extra = sorted(given - required - optional)
        if missing or extra:
            parts = [f"needs {', '.join(missing)}"] if missing else []
            parts += [f"takes no {', '.join(extra)}"] if extra else []
            raise InvalidParameterError(f"a {self.notion} budget {' and '.join(parts)}")
        if ("epsilon" in given) != ("delta" in given) and self.notion != "pure-DP":
            raise InvalidParameterError(f"a {self.notion} budget takes epsilon and delta together")
        for name in given:
            object.__setattr__(self, name, _checked(name, getattr(self, name)))

    @classmethod
    def zcdp(cls, rho: float) -> Budget:
        """A rho-zCDP budget."""
        return cls("zCDP", rho=rho)

    @classmethod
    def approx_dp(cls, epsilon: float, delta: float) -> Budget:
        """An (epsilon, delta)-DP budget."""
        return cls("approx-DP", epsilon=epsilon, delta=delta)

    @property
    def unit(self) -> str:
        """The unit a ledger under this budget is kept in: "rho" or "epsilon"."""
        return _NOTIONS[self.notion][0]

    @property
    def total(self) -> float:
        """The amount a ledger under this budget may spend, in ``unit``."""
        value = self.rho if self.unit == "rho" else self.epsilon
        assert value is not None  # guaranteed by __post_init__
        return value

    def to_dict(self) -> dict[str, Any]:
        """The notion and its parameters, JSON-ready (absent parameters left out)."""
        out: dict[str, Any] = {"notion": self.notion}
        out.update({name: getattr(self, name) for name in _FIELDS
                    if getattr(self, name) is not None})
        return out

    @classmethod
    def from_dict(cls, data: Any) -> Budget:
        """The inverse of ``to_dict``; raises InvalidParameterError on anything else."""
        if not isinstance(data, dict) or not isinstance(data.get("notion"), str):
            raise InvalidParameterError("a budget must be a mapping with a 'notion' string")
        unknown = sorted(set(data) - {"notion", *_FIELDS})
        if unknown:
            raise InvalidParameterError(f"a budget takes no field(s) {', '.join(unknown)}")
        return cls(**data)

    def __str__(self) -> str:
        params = ", ".join(f"{name}={getattr(self, name):.6g}" for name in _FIELDS
                           if getattr(self, name) is not None)
        return f"{self.notion}({params})"


def _checked(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, SupportsFloat):
        raise InvalidParameterError(f"{name} must be a number, got {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise InvalidParameterError(f"{name} must be positive and finite, got {number:g}")
    if name == "delta" and number >= 1:
        raise InvalidParameterError(f"delta must be in (0, 1), got {number:g}")
    if name == "omega" and number <= 1:
        raise InvalidParameterError(f"omega must be greater than 1, got {number:g}")
    return number
