"""The central-model estimators, one class each, registered by their ``method=`` name."""

from .base import MeanEstimator
from .baselines import FixedQuantileClippedMean, GaussianMean
from .iome import ClippedMean, GaussianIOME, ShiftedClippedMean

ESTIMATORS: dict[str, type[MeanEstimator]] = {
    cls.method: cls
    for cls in (
        ClippedMean,
        FixedQuantileClippedMean,
        GaussianMean,
        ShiftedClippedMean,
        GaussianIOME,
    )
}

__all__ = [
    "ESTIMATORS",
    "ClippedMean",
    "FixedQuantileClippedMean",
    "GaussianIOME",
    "GaussianMean",
    "MeanEstimator",
    "ShiftedClippedMean",
]
