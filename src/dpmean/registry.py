"""The ``method=`` names: one registry of every estimator, central (``estimators``) and local or
shuffle (``protocols``), owned by the API layer so that neither subpackage imports the other."""

from __future__ import annotations

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
from .protocols import GRSKnownVar, GRSUnkVar, LocalIOME, ShuffleIOME

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
"""``method=`` name -> estimator class: what ``dpmean.mean`` and ``Session`` accept."""
