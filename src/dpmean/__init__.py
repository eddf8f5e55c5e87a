"""dpmean: differentially private mean estimation, instance-optimal and variance-aware.

    >>> import dpmean
    >>> result = dpmean.mean(X, rho=0.5, bounds=(0, 255), method="iome")
    >>> result.mean, result.ledger

The public names are imported on first use (PEP 562), so that ``import dpmean`` and the
``dpmean`` command start without numpy and scipy; ``dpmean.mean`` and friends behave as if
imported here.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> the module that defines it (relative to this package): the names of __all__
# (tests/test_imports.py checks that they agree and that each resolves).
_HOME = {
    "PrivacyLedger": "accounting",
    "LargeDeltaWarning": "accounting",
    "approx_dp_to_zcdp": "accounting",
    "zcdp_to_approx_dp": "accounting",
    "accuracy": "planning",
    "rho_for_accuracy": "planning",
    "mean": "api",
    "available_methods": "registry",
    "BoxFaceWarning": "errors",
    "BoxIntervalWarning": "errors",
    "PrivateBoxIntervalWarning": "errors",
    "BudgetExceededError": "errors",
    "DPMeanError": "errors",
    "InsufficientDataWarning": "errors",
    "InvalidDataError": "errors",
    "InvalidParameterError": "errors",
    "SecureNoiseWarning": "errors",
    "TemporarySpaceError": "errors",
    "NoisyReleaseWarning": "errors",
    "AutoMean": "estimators",
    "ClippedMean": "estimators",
    "CoinPressCovMean": "estimators",
    "CoinPressMean": "estimators",
    "FixedQuantileClippedMean": "estimators",
    "GaussianIOME": "estimators",
    "GaussianMean": "estimators",
    "MeanEstimator": "estimators",
    "PlanNoScale": "estimators",
    "PrivateLimitAdaptedNoise": "estimators",
    "ShiftedClippedMean": "estimators",
    "TrimmedMean": "estimators",
    "GRSKnownVar": "protocols",
    "GRSUnkVar": "protocols",
    "LocalIOME": "protocols",
    "ShuffleIOME": "protocols",
    "MeanResult": "result",
    "Session": "session",
}

__all__ = [
    "AutoMean",
    "BoxFaceWarning",
    "BoxIntervalWarning",
    "BudgetExceededError",
    "ClippedMean",
    "CoinPressCovMean",
    "CoinPressMean",
    "DPMeanError",
    "FixedQuantileClippedMean",
    "GaussianIOME",
    "GaussianMean",
    "GRSKnownVar",
    "GRSUnkVar",
    "InsufficientDataWarning",
    "SecureNoiseWarning",
    "TemporarySpaceError",
    "InvalidDataError",
    "InvalidParameterError",
    "LargeDeltaWarning",
    "LocalIOME",
    "MeanEstimator",
    "NoisyReleaseWarning",
    "MeanResult",
    "PrivateBoxIntervalWarning",
    "PlanNoScale",
    "PrivacyLedger",
    "PrivateLimitAdaptedNoise",
    "Session",
    "ShiftedClippedMean",
    "ShuffleIOME",
    "TrimmedMean",
    "accuracy",
    "approx_dp_to_zcdp",
    "available_methods",
    "mean",
    "rho_for_accuracy",
    "zcdp_to_approx_dp",
]

if TYPE_CHECKING:  # what type checkers and editors see; at run time __getattr__ imports these
    from .accounting import (
        LargeDeltaWarning,
        PrivacyLedger,
        approx_dp_to_zcdp,
        zcdp_to_approx_dp,
    )
    from .api import mean
    from .errors import (
        BoxFaceWarning,
        BoxIntervalWarning,
        BudgetExceededError,
        DPMeanError,
        InsufficientDataWarning,
        InvalidDataError,
        InvalidParameterError,
        NoisyReleaseWarning,
        PrivateBoxIntervalWarning,
        SecureNoiseWarning,
        TemporarySpaceError,
    )
    from .estimators import (
        AutoMean,
        ClippedMean,
        CoinPressCovMean,
        CoinPressMean,
        FixedQuantileClippedMean,
        GaussianIOME,
        GaussianMean,
        MeanEstimator,
        PlanNoScale,
        PrivateLimitAdaptedNoise,
        ShiftedClippedMean,
        TrimmedMean,
    )
    from .planning import accuracy, rho_for_accuracy
    from .protocols import GRSKnownVar, GRSUnkVar, LocalIOME, ShuffleIOME
    from .registry import available_methods
    from .result import MeanResult
    from .session import Session


def __getattr__(name: str) -> Any:
    """Import a public name, or a submodule (``dpmean.io``), on first access."""
    home = _HOME.get(name)
    if home is not None:
        value = getattr(importlib.import_module(f".{home}", __name__), name)
        globals()[name] = value  # later accesses skip this function
        return value
    # Before imports were lazy, ``import dpmean`` loaded most submodules as a side effect;
    # code that reached them as attributes keeps working.
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
