"""NON-PRIVATE evaluation helpers: errors of a released mean against the true mean.

They read the true mean (and covariance), so their outputs are not differentially private: use
them to evaluate estimators on data you are allowed to see (IOME section 6, Figures 1-5).
"""

from __future__ import annotations

import numpy as np

from .errors import InvalidParameterError


def _difference(estimate: np.ndarray, truth: np.ndarray) -> np.ndarray:
    estimate = np.asarray(estimate, dtype=np.float64)
    truth = np.asarray(truth, dtype=np.float64)
    if estimate.shape != truth.shape or estimate.ndim != 1:
        raise InvalidParameterError(
            f"estimate and truth must be vectors of one length, got shapes {estimate.shape} "
            f"and {truth.shape}")
    return estimate - truth


def l2_error(estimate: np.ndarray, truth: np.ndarray) -> float:
    """NON-PRIVATE: ||estimate - truth||_2."""
    return float(np.linalg.norm(_difference(estimate, truth)))


def mahalanobis_error(estimate: np.ndarray, truth: np.ndarray, covariance: np.ndarray) -> float:
    """NON-PRIVATE: ||Sigma^(-1/2) (estimate - truth)||_2 for the true covariance Sigma (positive
    definite), the error measure of IOME Figure 5 and CoinPress.

    Computed as ||L^-1 (estimate - truth)|| with Sigma = L L^T (Cholesky), which equals it since
    both square to v^T Sigma^-1 v.
    """
    diff = _difference(estimate, truth)
    covariance = np.asarray(covariance, dtype=np.float64)
    if covariance.shape != (diff.shape[0], diff.shape[0]):
        raise InvalidParameterError(
            f"covariance must be ({diff.shape[0]}, {diff.shape[0]}), got {covariance.shape}")
    try:
        factor = np.linalg.cholesky(covariance)
    except np.linalg.LinAlgError:
        raise InvalidParameterError("covariance must be symmetric positive definite") from None
    return float(np.linalg.norm(np.linalg.solve(factor, diff)))


__all__ = ["l2_error", "mahalanobis_error"]
