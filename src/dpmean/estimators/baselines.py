"""Baselines the papers compare against: the Gaussian mechanism with global sensitivity from the
bounds (or a public l2 norm bound), and clipping at a fixed (privately chosen) quantile of the
norms (IOME Figure 9)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..accounting import PrivacyLedger
from ..diagnostics import NOISE_STD, Diagnostic, Kind
from ..engines import Engine
from ..errors import InvalidParameterError
from ..mechanisms import gaussian_mechanism, gaussian_noise_std
from ..validation import NARROWEST_WIDTH, check_fraction, check_positive
from .base import MeanEstimator
from .iome import ClippedMean
from .variance import box_sum

# The largest ``norm_bound``: its ball's diameter, and its square, stay finite.
WIDEST_NORM_BOUND = 1e150


class GaussianMean(MeanEstimator):
    """The Gaussian mechanism on the mean of the rows clamped to the public box, or clipped to
    a public l2 norm bound.

    Its error grows linearly with the width of the box (or the norm bound): the baseline every
    adaptive estimator should beat, and the release to use where an l2 bound on the rows is
    known (normalised embeddings, per-user gradients clipped upstream).

    Parameters
    ----------
    rho : float, optional
        The zCDP budget; this and the other common parameters (``epsilon``, ``delta``,
        ``bounds``, ``random_state``, ``secure_noise``, ``engine``) are those of
        :class:`MeanEstimator`.
    norm_bound : float, optional
        A public bound R on the rows' l2 norms, in the data's units: each row (clamped to the
        box first) is scaled down to norm at most R about the origin, and the noise follows R
        instead of the box (a user trial: unit-norm embeddings in the box (-1, 1)^1000 came out
        at 30x the error of the known bound's release). Without ``bounds`` the box is
        (-R, R)^d, which every row of norm at most R lies in, and no private box is bought.
        The release then runs in the data's units (not the box-normalised space of ranges of
        different widths). Rows beyond R are clipped to it, like values beyond the box: the
        release and its interval are of the clipped rows' mean.

    Raises
    ------
    InvalidParameterError
        A ``norm_bound`` that is not a number from 1e-100 to 1e150, a box that does not hold
        the origin with one, or a common parameter :class:`MeanEstimator` refuses.

    Privacy
    -------
    rho-zCDP: one stage, "noise", all of rho (after ``BOUNDS_SHARE``, 1/10, on a private box
    when neither ``bounds`` nor ``norm_bound`` is given): the Gaussian mechanism on the clamped
    (or clipped) mean. Sensitivity under replace-one: one row moves anywhere in the box, so
    the mean moves by at most ||hi - lo||_2 / n; with ``norm_bound`` anywhere in the part of
    the ball of radius R the box holds, 2R / n (sqrt(2) R / n where the box lies in one
    orthant, R / n for one such column), or the box's diameter where that is smaller (the
    box must hold the origin, so that scaling a row toward it keeps it in the box):
    ``clipped_sensitivity``.
    """

    gaussian_stages = True  # every stage a Gaussian mechanism: exact (eps, delta)

    method = "gaussian"
    declared_diagnostics = {
        "noise_std": NOISE_STD,
        "row_norm_bound": Diagnostic(Kind.FLOAT, "The public l2 bound R the rows were scaled "
                                     "to (``norm_bound``); absent without one."),
    }
    supports_secure_noise = True
    supports_sparse = True  # one plain sum

    def __init__(self, rho: float | None = None, *, norm_bound: float | None = None,
                 **common: Any) -> None:
        self.norm_bound = (None if norm_bound is None
                           else check_positive(norm_bound, "norm_bound"))
        if self.norm_bound is not None:
            if not NARROWEST_WIDTH <= self.norm_bound <= WIDEST_NORM_BOUND:
                # A subnormal bound's sensitivity 2R / n rounds to 0: a release without noise
                # (a review); a huge one's overflows.
                raise InvalidParameterError(
                    f"norm_bound must lie between {NARROWEST_WIDTH:g} and "
                    f"{WIDEST_NORM_BOUND:g} to compute with in floating point, got "
                    f"{self.norm_bound:g}; rescale the data, e.g. to other units")
            if common.get("bounds") is None:
                common["bounds"] = (-self.norm_bound, self.norm_bound)
        super().__init__(rho, **common)

    def box(self, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = super().box(n, d)
        if self.norm_bound is not None and not (np.all(lo <= 0.0) and np.all(hi >= 0.0)):
            # Rows scaled toward an origin outside the box leave it, and the release is
            # projected back onto its faces whatever the data (a review: rows in (1, 3)^2,
            # R = 1, released (1, 1)). Public: refused before the charge.
            raise InvalidParameterError(
                "norm_bound scales each row toward the origin, which the box must hold (lo <= 0 "
                "<= hi in every column); shift the data so that it does, or give no norm_bound")
        return lo, hi

    def box_scale(self, n: int, d: int) -> np.ndarray | None:
        # The norm bound is an l2 ball in the data's units: no box-normalised space.
        return None if self.norm_bound is not None else super().box_scale(n, d)

    def budget_plan(self, n: int, d: int) -> dict[str, float]:
        return {"noise": self.rho}

    def release(
        self, engine: Engine, budget: dict[str, float], ledger: PrivacyLedger,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        sensitivity = clipped_sensitivity(engine.lo, engine.hi, self.norm_bound) / engine.n
        radius = np.inf if self.norm_bound is None else self.norm_bound
        exact_mean = box_sum(engine, radius, sensitivity, budget["noise"],
                             secure=self.secure_noise) / engine.n
        mean = gaussian_mechanism(exact_mean, sensitivity, budget["noise"], rng, ledger=ledger,
                                  stage="noise", secure=self.secure_noise)
        diagnostics: dict[str, Any] = {"noise_std": gaussian_noise_std(sensitivity,
                                                                        budget["noise"])}
        if self.norm_bound is not None:
            diagnostics["row_norm_bound"] = self.norm_bound
        return mean, diagnostics


def clipped_sensitivity(lo: np.ndarray, hi: np.ndarray, norm_bound: float | None) -> float:
    """How far replacing one row moves the sum of the rows clamped to the box [lo, hi] and,
    where ``norm_bound`` R is given, scaled to l2 norm at most R about the origin, which the
    box holds (``GaussianMean.box`` refuses one that does not): the box's diameter
    ||hi - lo||, or the diameter of the part of the ball of radius R the box holds where
    smaller (a row scaled toward the origin stays in the box). That part's diameter is 2R,
    or sqrt(2) R where the box lies in one orthant (every column's range on one side of 0:
    counts, non-negative embeddings), whose points are at most a right angle apart (R for
    one column), as a review noted. Public."""
    diameter = float(np.linalg.norm(hi - lo))
    if norm_bound is None:
        return diameter
    one_orthant = bool(np.all((lo >= 0.0) | (hi <= 0.0)))
    ball = (1.0 if lo.size == 1 else math.sqrt(2.0)) if one_orthant else 2.0
    return min(ball * norm_bound, diameter)


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
