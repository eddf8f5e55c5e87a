"""Baselines the papers compare against: the Gaussian mechanism with global sensitivity from the
bounds, and clipping at a fixed (privately chosen) quantile of the norms (IOME Figure 9)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..accounting import PrivacyLedger
from ..diagnostics import NOISE_STD
from ..engines import Engine
from ..mechanisms import gaussian_mechanism, gaussian_noise_std
from ..transforms import IDENTITY
from ..validation import check_fraction
from .base import MeanEstimator
from .iome import ClippedMean


class GaussianMean(MeanEstimator):
    """The Gaussian mechanism on the mean of the rows clamped to the public box.

    Its error grows linearly with the width of the box: the baseline every adaptive estimator
    should beat.

    Parameters
    ----------
    rho : float, optional
        The zCDP budget; this and the other common parameters (``epsilon``, ``delta``,
        ``bounds``, ``random_state``, ``secure_noise``, ``engine``) are those of
        :class:`MeanEstimator`, whose constructor it uses unchanged.

    Raises
    ------
    InvalidParameterError
        A common parameter :class:`MeanEstimator` refuses.

    Privacy
    -------
    rho-zCDP: one stage, "noise", all of rho (after ``BOUNDS_SHARE``, 1/10, on a private box
    when no ``bounds`` are given): the Gaussian mechanism on the clamped mean. Sensitivity
    under replace-one: one row moves anywhere in the box, so the mean moves by at most
    ||hi - lo||_2 / n.
    """

    gaussian_stages = True  # every stage a Gaussian mechanism: exact (eps, delta)

    method = "gaussian"
    declared_diagnostics = {"noise_std": NOISE_STD}
    supports_secure_noise = True
    supports_sparse = True  # one plain sum

    def budget_plan(self, n: int, d: int) -> dict[str, float]:
        return {"noise": self.rho}

    def release(
        self, engine: Engine, budget: dict[str, float], ledger: PrivacyLedger,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        sensitivity = float(np.linalg.norm(engine.hi - engine.lo)) / engine.n
        exact_mean = engine.clipped_sum(IDENTITY, np.inf) / engine.n
        mean = gaussian_mechanism(exact_mean, sensitivity, budget["noise"], rng, ledger=ledger,
                                  stage="noise", secure=self.secure_noise)
        return mean, {"noise_std": gaussian_noise_std(sensitivity, budget["noise"])}


class FixedQuantileClippedMean(ClippedMean):
    """CM with the radius at a fixed quantile of the row norms (default the median), as adaptive
    clipping work does, instead of IOME's bias/variance optimum.

    Parameters
    ----------
    rho : float, optional
        The zCDP budget; the common parameters are those of :class:`MeanEstimator`.
    quantile : float, default 0.5
        The quantile of the row norms the radius aims at, in (0, 1].
    **options
        The parameters of :class:`ClippedMean` (``threshold_share``, ``threshold_steps``,
        ``beta``) and of :class:`MeanEstimator`.

    Raises
    ------
    InvalidParameterError
        A ``quantile`` outside (0, 1], or a parameter :class:`ClippedMean` refuses.

    Privacy
    -------
    rho-zCDP, the same stages and costs as :class:`ClippedMean` ("threshold",
    ``threshold_share * rho``, a search of sensitivity-1 counts; "noise", the rest, the
    Gaussian mechanism with l2 sensitivity 2C/n); only the target rank differs, and it is
    public.
    """

    method = "cm-fixed"
    # A median radius clips half the rows, many of them beyond 1.5 C: the profile's shell at
    # 2 C bounds those more tightly than one count at the corner (docs/results.md).
    profile_doublings = 1

    def __init__(self, rho: float | None = None, *, quantile: float = 0.5, **options: Any) -> None:
        super().__init__(rho, **options)
        self.quantile = check_fraction(quantile, "quantile", high_open=False)

    def clip_rank(self, n: int, d: int, budget: dict[str, float], rank_error: float) -> float:
        return self.quantile * n

    def minimum_rows(
        self, n: int, lo: np.ndarray, hi: np.ndarray, budget: dict[str, float]
    ) -> float:
        return 1.0
