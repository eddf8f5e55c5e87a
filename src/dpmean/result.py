"""The value every estimator returns: the private mean, its ledger and private diagnostics."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from .budget import Budget


def _frozen(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        value = value.copy()
        value.setflags(write=False)
    return value


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


@dataclass(frozen=True)
class MeanResult:
    """A differentially private mean and everything about it that may be released.

    Attributes
    ----------
    mean : numpy.ndarray
        The private estimate, shape (d,).
    method : str
        The estimator's ``method=`` name.
    n, d : int
        The public size and dimension of the data.
    budget : Budget
        The guarantee the release was granted, typed by notion: "zCDP" (``rho``; with the
        ``epsilon``, ``delta`` the caller asked for when the budget was given that way),
        "approx-DP" (``epsilon``, ``delta``), "pure-DP", "tCDP" (``rho``, ``omega``), or a
        local or shuffle notion (``diagnostics["model"]`` says which trust model):
        "local-zCDP" (every user's messages are rho-zCDP, IOME Definition 2.3),
        "local-approx-DP" and "shuffle-approx-DP" (the shuffled transcript is
        (epsilon, delta)-DP, Definition 2.4).
    ledger : Mapping[str, float]
        Stage -> amount spent, in ``unit``; sums to ``spent`` <= the budget's total.
    diagnostics : Mapping[str, Any]
        Private by-products only (noisy thresholds, private centres, noise scales, public
        settings); never the true mean or any other exact statistic of the data. Each key has
        the type its estimator declares (``diagnostic_declarations``; the *Diagnostics*
        section of its docstring) in every result: ``noise_std`` a float64 array of shape
        (d,), scalars Python floats and ints; keys that do not apply are absent. Arrays are
        read-only; ``to_dict`` turns them into lists.
    fallback : bool
        True when n was too small for the budget and the zero vector was released without
        touching the data (a public check; see InsufficientDataWarning).
    columns : tuple of str or None
        The names of the d coordinates, in order, when the data had them (a data frame, an
        Arrow table, a CSV header, a Parquet schema); None otherwise.
    """

    mean: np.ndarray
    method: str
    n: int
    d: int
    budget: Budget
    ledger: Mapping[str, float]
    diagnostics: Mapping[str, Any] = field(default_factory=dict)
    fallback: bool = False
    columns: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.budget, Budget):
            raise TypeError(f"budget must be a Budget, got {type(self.budget).__name__}")
        if self.columns is not None:
            columns = tuple(str(c) for c in self.columns)
            if len(columns) != self.d:
                raise ValueError(f"{len(columns)} column names for d = {self.d} coordinates")
            object.__setattr__(self, "columns", columns)
        object.__setattr__(self, "mean", _frozen(np.asarray(self.mean, dtype=np.float64)))
        object.__setattr__(self, "ledger", MappingProxyType(dict(self.ledger)))
        diagnostics = {k: _frozen(v) for k, v in self.diagnostics.items()}
        object.__setattr__(self, "diagnostics", MappingProxyType(diagnostics))

    @property
    def notion(self) -> str:
        """The privacy notion of the release (``budget.notion``)."""
        return self.budget.notion

    @property
    def unit(self) -> str:
        """The unit of the ledger: "rho" or "epsilon"."""
        return self.budget.unit

    @property
    def rho(self) -> float | None:
        """The granted rho (zCDP and tCDP notions only; None where the notion has no rho)."""
        return self.budget.rho

    @property
    def epsilon(self) -> float | None:
        """The granted (or requested and implied) epsilon; None for a plain rho budget."""
        return self.budget.epsilon

    @property
    def delta(self) -> float | None:
        """The delta that goes with ``epsilon``; None where there is none."""
        return self.budget.delta

    @property
    def spent(self) -> float:
        """The ledger's total, in ``unit``."""
        return math.fsum(self.ledger.values())

    @property
    def rho_spent(self) -> float | None:
        """The rho spent (the ledger's total) where the ledger is in rho; None otherwise."""
        return self.spent if self.unit == "rho" else None

    @property
    def epsilon_spent(self) -> float | None:
        """The epsilon spent (the ledger's total) where the ledger is in epsilon; else None."""
        return self.spent if self.unit == "epsilon" else None

    def confidence_interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Per-coordinate (lo, hi), each containing the exact mean of the data clamped to the
        box with probability >= ``level`` over the release's noise (noise and clipping bias;
        no assumption on the data). See ``dpmean.intervals.confidence_interval``."""
        from .intervals import confidence_interval

        return confidence_interval(self, level)

    def confidence_radius(self, level: float = 0.95) -> float:
        """An l2 radius about ``mean`` containing the clamped data's exact mean (the whole
        vector) with probability >= ``level``. See ``dpmean.intervals.confidence_radius``."""
        from .intervals import confidence_radius

        return confidence_radius(self, level)

    def named(self, columns: Sequence[str] | None) -> MeanResult:
        """This result with the coordinates' names (itself when ``columns`` is None)."""
        return self if columns is None else replace(self, columns=tuple(columns))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (arrays become lists); budget fields named by unit."""
        out: dict[str, Any] = {
            "method": self.method,
            "n": self.n,
            "d": self.d,
            "mean": self.mean.tolist(),
            "columns": None if self.columns is None else list(self.columns),
            **self.budget.to_dict(),
            "unit": self.unit,
            f"{self.unit}_spent": self.spent,
            "ledger": dict(self.ledger),
            "diagnostics": _jsonable(dict(self.diagnostics)),
            "fallback": self.fallback,
        }
        from .intervals import interval_summary

        summary = interval_summary(self)
        out["confidence_interval"] = {key: summary[key] for key in ("level", "lo", "hi")}
        out["confidence_radius"] = summary["radius"]
        out["confidence_basis"] = summary["basis"]
        return out
