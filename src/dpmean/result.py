"""The value every estimator returns: the private mean, its ledger and private diagnostics."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np


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

    Attributes:
        mean: the private estimate, shape (d,).
        method: the estimator's ``method=`` name.
        n, d: the public size and dimension of the data.
        rho: the zCDP budget the caller granted.
        ledger: stage -> rho actually spent; sums to ``rho_spent`` <= ``rho``.
        diagnostics: private by-products only (noisy thresholds, private centres, noise scales,
            public settings); never the true mean or any other exact statistic of the data.
        epsilon, delta: the (eps, delta) the caller asked for, when the budget was given that way.
        fallback: True when n was too small for the budget and the zero vector was released
            without touching the data (a public check; see InsufficientDataWarning).
        notion: the privacy guarantee the ledger is stated in: "zCDP" (ledger in rho; the
            default), or, for estimators whose noise has no zCDP guarantee, "approx-DP" (ledger
            in epsilon, with ``delta``), "pure-DP" (epsilon) or "tCDP" (rho, with the
            truncation parameter in diagnostics). Local and shuffle protocols (dpmean.protocols)
            state who is protected from whom, and record ``diagnostics["model"]`` ("local" or
            "shuffle"): "local-zCDP" (every user's messages are rho-zCDP in the local model,
            Definition 2.3 of IOME; ledger in rho), "local-approx-DP" ((epsilon, delta)-DP per
            user in the local model; ledger in epsilon) and "shuffle-approx-DP" (the shuffled
            transcript is (epsilon, delta)-DP, Definition 2.4; ledger in epsilon).
    """

    mean: np.ndarray
    method: str
    n: int
    d: int
    rho: float
    ledger: Mapping[str, float]
    diagnostics: Mapping[str, Any] = field(default_factory=dict)
    epsilon: float | None = None
    delta: float | None = None
    fallback: bool = False
    notion: str = "zCDP"

    def __post_init__(self) -> None:
        object.__setattr__(self, "mean", _frozen(np.asarray(self.mean, dtype=np.float64)))
        object.__setattr__(self, "ledger", MappingProxyType(dict(self.ledger)))
        diagnostics = {k: _frozen(v) for k, v in self.diagnostics.items()}
        object.__setattr__(self, "diagnostics", MappingProxyType(diagnostics))

    @property
    def rho_spent(self) -> float:
        return math.fsum(self.ledger.values())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (arrays become lists)."""
        out: dict[str, Any] = {
            "method": self.method,
            "n": self.n,
            "d": self.d,
            "mean": self.mean.tolist(),
            "rho": self.rho,
            "rho_spent": self.rho_spent,
            "ledger": dict(self.ledger),
            "diagnostics": _jsonable(dict(self.diagnostics)),
            "fallback": self.fallback,
            "notion": self.notion,
        }
        if self.epsilon is not None:
            out["epsilon"] = self.epsilon
            out["delta"] = self.delta
        return out
