"""The central-model estimators, one class each, named by its ``method=`` name (the registry of
names is ``dpmean.registry``; the local and shuffle protocols are in ``dpmean.protocols``)."""

from .auto import AutoMean
from .base import MeanEstimator
from .baselines import FixedQuantileClippedMean, GaussianMean
from .coinpress import CoinPressCovMean, CoinPressMean
from .iome import ClippedMean, GaussianIOME, ShiftedClippedMean
from .plan import PlanNoScale, PrivateLimitAdaptedNoise
from .trimmed import TrimmedMean

__all__ = [
    "AutoMean",
    "ClippedMean",
    "CoinPressCovMean",
    "CoinPressMean",
    "FixedQuantileClippedMean",
    "GaussianIOME",
    "GaussianMean",
    "MeanEstimator",
    "PlanNoScale",
    "PrivateLimitAdaptedNoise",
    "ShiftedClippedMean",
    "TrimmedMean",
]
