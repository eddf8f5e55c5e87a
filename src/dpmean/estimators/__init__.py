"""The central-model estimators, one class each, registered by their ``method=`` name."""

from ..protocols import GRSKnownVar, GRSUnkVar, LocalIOME, ShuffleIOME
from .auto import AutoMean
from .base import MeanEstimator
from .baselines import FixedQuantileClippedMean, GaussianMean
from .coinpress import CoinPressCovMean, CoinPressMean
from .iome import ClippedMean, GaussianIOME, ShiftedClippedMean
from .plan import PlanNoScale, PrivateLimitAdaptedNoise
from .trimmed import TrimmedMean

ESTIMATORS: dict[str, type[MeanEstimator]] = {
    cls.method: cls
    for cls in (
        AutoMean,
        ClippedMean,
        FixedQuantileClippedMean,
        GaussianMean,
        ShiftedClippedMean,
        GaussianIOME,
        CoinPressMean,
        CoinPressCovMean,
        PrivateLimitAdaptedNoise,
        PlanNoScale,
        TrimmedMean,
        LocalIOME,
        ShuffleIOME,
        GRSKnownVar,
        GRSUnkVar,
    )
}

__all__ = [
    "ESTIMATORS",
    "AutoMean",
    "ClippedMean",
    "CoinPressCovMean",
    "CoinPressMean",
    "FixedQuantileClippedMean",
    "GaussianIOME",
    "GaussianMean",
    "GRSKnownVar",
    "GRSUnkVar",
    "LocalIOME",
    "MeanEstimator",
    "PlanNoScale",
    "PrivateLimitAdaptedNoise",
    "ShiftedClippedMean",
    "ShuffleIOME",
    "TrimmedMean",
]
