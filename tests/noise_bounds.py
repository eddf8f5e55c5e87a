"""Tolerances derived from a release's noise scale: quantiles of the Gaussian noise it reports
(``diagnostics["noise_std"]``) at a stated failure probability, instead of measured constants."""

import numpy as np
from scipy.stats import chi2, norm


def isotropic_std(result) -> float:
    """The one standard deviation of a release whose Gaussian noise is the same on every
    coordinate (checked), as a float."""
    std = result.diagnostics["noise_std"]
    assert np.all(std == std[0]), f"noise is not isotropic: {std}"
    return float(std[0])


def chi_radius(d: int, failure: float) -> float:
    """r with P(||N(0, I_d)|| > r) = ``failure`` exactly (the chi distribution's quantile)."""
    return float(np.sqrt(chi2.isf(failure, d)))


def normal_half_width(failure: float, count: int = 1) -> float:
    """z with P(|N(0, 1)| > z) = ``failure`` / ``count``: ``count`` standard normals all stay
    within +-z except with probability at most ``failure`` (union bound)."""
    return float(norm.isf(failure / (2.0 * count)))
