"""Tolerances derived from a release's noise scale: quantiles of the Gaussian noise it reports
(``diagnostics["noise_std"]``) at a stated failure probability, instead of measured constants."""

import numpy as np
from scipy.stats import chi2


def isotropic_std(result) -> float:
    """The one standard deviation of a release whose Gaussian noise is the same on every
    coordinate (checked), as a float."""
    std = result.diagnostics["noise_std"]
    assert np.all(std == std[0]), f"noise is not isotropic: {std}"
    return float(std[0])


def chi_band(d: int, failure: float) -> tuple[float, float]:
    """(lo, hi) with ||N(0, I_d)|| outside [lo, hi] with probability ``failure`` (half on each
    side): a release's noise is neither larger nor smaller than it declares."""
    return float(np.sqrt(chi2.ppf(failure / 2, d))), float(np.sqrt(chi2.isf(failure / 2, d)))


def clipped_mean(x: np.ndarray, centre: np.ndarray, radius: float) -> np.ndarray:
    """The exact mean a clipped-mean release adds its noise to: each row's offset from
    ``centre`` clipped to the l2 ball of ``radius``. IOME's rotation is orthogonal, so it clips
    the same offsets; the rows must lie in the box (no clamping here)."""
    offsets = x - centre
    shrink = np.minimum(1.0, radius / np.maximum(np.linalg.norm(offsets, axis=1), 1e-300))
    return centre + (offsets * shrink[:, None]).mean(axis=0)
