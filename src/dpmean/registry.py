"""The ``method=`` names: one registry of every estimator, central (``estimators``) and local or
shuffle (``protocols``), owned by the API layer so that neither subpackage imports the other.

The names are known without importing any estimator: ``ESTIMATORS`` imports a class's
subpackage (and with it numpy and scipy) only when that class is asked for, so the command
line lists the methods in its help and checks a name without that cost.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .estimators import MeanEstimator

# Names users reach for (other libraries', the command line's) -> the parameter of
# ``dpmean.mean`` that means it: an unknown option by one of these names is told which.
MEANT = {"seed": "random_state", "rng": "random_state", "random_seed": "random_state",
         "bound": "bounds", "range": "bounds", "eps": "epsilon", "budget": "rho"}

# method= name -> (subpackage, class name); each class's ``method`` attribute is its name here
# (tests/test_estimators.py checks that every entry resolves to it).
_WHERE = {
    "auto": ("estimators", "AutoMean"),
    "cm": ("estimators", "ClippedMean"),
    "cm-fixed": ("estimators", "FixedQuantileClippedMean"),
    "gaussian": ("estimators", "GaussianMean"),
    "iome": ("estimators", "ShiftedClippedMean"),
    "iome-gaussian": ("estimators", "GaussianIOME"),
    "coinpress": ("estimators", "CoinPressMean"),
    "coinpress-cov": ("estimators", "CoinPressCovMean"),
    "plan": ("estimators", "PrivateLimitAdaptedNoise"),
    "plan-noscale": ("estimators", "PlanNoScale"),
    "trimmed": ("estimators", "TrimmedMean"),
    "iome-local": ("protocols", "LocalIOME"),
    "iome-shuffle": ("protocols", "ShuffleIOME"),
    "grs-knownvar": ("protocols", "GRSKnownVar"),
    "grs-unkvar": ("protocols", "GRSUnkVar"),
}

DEFAULT_METHOD = "auto"
"""The method ``dpmean.mean``, ``Session.mean`` and ``dpmean estimate`` run when none is named.
``auto`` since 2026-11-25, when it measured within 1.05x of the best of plan, iome, cm and
gaussian on the PLAN grids, MNIST, the basket files and a small mixed-scale table
(docs/results.md); ``iome`` before."""

PLANNED = ("gaussian", "cm", "cm-fixed", "iome", "plan-noscale")
"""The methods ``dpmean.accuracy`` plans: those with an a priori bound on their noise."""


class _Registry(Mapping[str, "type[MeanEstimator]"]):
    """A read-only mapping of method names to estimator classes, each imported on first use."""

    def __init__(self, where: Mapping[str, tuple[str, str]]) -> None:
        self._where = where

    def __getitem__(self, name: str) -> type[MeanEstimator]:
        subpackage, class_name = self._where[name]
        cls: type[MeanEstimator] = getattr(
            importlib.import_module(f"{__package__}.{subpackage}"), class_name)
        return cls

    def __contains__(self, name: object) -> bool:
        # Mapping's default would import the class to answer.
        return name in self._where

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def __repr__(self) -> str:
        return f"<method registry: {', '.join(self._where)}>"


ESTIMATORS: Mapping[str, type[MeanEstimator]] = _Registry(_WHERE)
"""``method=`` name -> estimator class: what ``dpmean.mean`` and ``Session`` accept."""


def available_methods() -> list[str]:
    """The ``method=`` names ``dpmean.mean`` accepts.

    Returns
    -------
    list of str
        The names, sorted; listing them imports no estimator.
    """
    return sorted(ESTIMATORS)
