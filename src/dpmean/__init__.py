"""dpmean: differentially private mean estimation, instance-optimal and variance-aware.

    >>> import dpmean
    >>> result = dpmean.mean(X, rho=0.5, bounds=(0, 255), method="iome")
    >>> result.mean, result.ledger
"""

from .accounting import (
    PrivacyLedger,
    approx_dp_to_zcdp,
    zcdp_to_approx_dp,
)
from .accuracy import accuracy, rho_for_accuracy
from .api import available_methods, mean
from .errors import (
    BoxIntervalWarning,
    BudgetExceededError,
    DPMeanError,
    InsufficientDataWarning,
    InvalidDataError,
    InvalidParameterError,
    SecureNoiseWarning,
)
from .estimators import (
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
from .protocols import GRSKnownVar, GRSUnkVar, LocalIOME, ShuffleIOME
from .result import MeanResult
from .session import Session

__version__ = "0.1.0"

__all__ = [
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
    "InvalidDataError",
    "InvalidParameterError",
    "LocalIOME",
    "MeanEstimator",
    "MeanResult",
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
