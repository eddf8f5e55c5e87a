"""Confidence intervals for a private mean: the noise and the clipping bias of one release.

An interval here is a statement about the mechanism's randomness for the data at hand: with
probability at least ``level`` over the noise of the release, it contains the exact mean of the
data after clamping to the public box. It assumes nothing about how the data was drawn (it is
not an interval for a population mean) and it is built from private and public values only: the
released mean, the private radius, the noise scale and public settings in the diagnostics.

Two parts of the error, and the failure probability each uses (``alpha = 1 - level``):

- **Noise.** The last stage is the Gaussian mechanism with a known standard deviation
  (``diagnostics["noise_std"]``, in the space the rows were clipped in). It is mapped to the
  original coordinates through the view: PLAN divides coordinate j by its scale b_j, so its
  standard deviation there is noise_std / b_j; IOME's rotation is orthogonal, so an isotropic
  Gaussian stays isotropic with the same standard deviation. A box-normalised release (per-
  coordinate widths w_j, coordinate j multiplied by s_j = 1 / w_j before the estimator ran)
  reports noise_std already mapped back, noise_std / s_j per coordinate. Per coordinate the
  half-width is the exact two-sided Gaussian quantile at ``alpha_noise``; in l2 it is the chi
  distribution's quantile (isotropic) or the Laurent-Massart (2000, Lemma 1) bound for a
  weighted sum of chi-squares (unequal scales: PLAN's, or a box-normalised release's).
- **Clipping bias** (``cm``, ``cm-fixed``, ``iome``, ``plan`` and ``plan-noscale`` with
  ``quantile="binary-search"``). The radius C is PrivQuant's binary search over ``steps``
  halvings of [0, top] for rank m, each count noised by N(0, s^2), s^2 = steps / (2 rho).
  The counts' noises are independent, so with probability at least 1 - beta_search none
  exceeds t = s * z(beta_search / steps) (one-sided, union bound over the steps). On that
  event, whenever the search moved its right end to a point r, the noisy count there exceeded
  m, so the true number of rows with view norm <= r exceeds m - t. The search returns
  C = (left + right) / 2 with right - left = w = top / 2^steps, so the final right end is
  C + w / 2, and it was moved (``C < top - w``) unless the search went right every time.
  Clipping row x to C moves it by max(||x|| - C, 0) <= B - C, with B a bound on every view norm
  (public, or a function of private values: ``norm_bound`` / ``view_norm_bound``). Hence, in
  view-space l2,

      ||clipped mean - mean|| <= k (B - C) / n + (min(C + w / 2, B) - C),
      k = min(n, floor(n - m + t)),

  (k = 0 when the right end never moved and top >= B; no bound at all when it never moved and
  top < B, and then the public box is returned). The second term covers rows between C and the
  search's right end. In original coordinates, IOME's bias is the same l2 bound (rotation
  orthogonal, padding dropped), which also bounds every coordinate; PLAN's coordinate j is at
  most that bound divided by b_j, and its l2 at most the bound divided by min_j b_j. In a
  box-normalised release (``box_scale`` s in the diagnostics) the view-space bound is divided
  by s_j (times b_j for PLAN) per coordinate, and by the smallest such factor in l2.

The interval uses ``beta_search = search_share * alpha`` for the search and
``alpha_noise = alpha - beta_search`` for the noise, so it fails with probability at most
alpha (union bound). The clamped data's mean lies in the box, so every interval is intersected
with it (and the l2 radius capped by the box's farthest point from the release).

Where no honest bound is available (a fallback release, secure noise, PLAN's exponential-
mechanism threshold, whose rank error depends on the gaps between the data's norms and is
unbounded in the worst case, IOME's quantized path, the trimmed mean, CoinPress, the local and
shuffle protocols), the public box is returned with a ``BoxIntervalWarning`` naming why.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import chi2, norm

from .errors import BoxIntervalWarning, InvalidParameterError
from .mechanisms import count_noise_std

CLIPPED = ("cm", "cm-fixed", "iome", "plan", "plan-noscale")
SEARCH_SHARE = 0.5


@dataclass(frozen=True)
class ClipBound:
    """The public and private values the clipping-bias bound needs (see the module notes).

    Attributes
    ----------
    n : int
        Rows.
    rank : float
        The rank m the radius search aimed at.
    steps : int
        Halvings of the search.
    rho : float
        The search's budget (each of its ``steps`` counts has rho / steps).
    top : float
        The top of the searched interval [0, top].
    norm_bound : float
        B, a bound on every row's norm in the view.
    radius : float
        The private radius C.
    """

    n: int
    rank: float
    steps: int
    rho: float
    top: float
    norm_bound: float
    radius: float

    def view_bias(self, beta: float) -> float | None:
        """A bound on the view-space l2 distance between the clipped and the plain mean that
        holds with probability >= 1 - ``beta``; None when there is none."""
        radius, bound = self.radius, self.norm_bound
        if radius >= bound:
            return 0.0  # no view norm exceeds C: nothing was clipped
        width = self.top / 2.0**self.steps
        right = radius + width / 2.0
        if radius > self.top - width:  # the search never moved its right end
            if self.top < bound:
                return None  # rows above the searched interval: their number is unbounded
            return min(right, bound) - radius
        tail = count_noise_std(self.steps, self.rho) * float(norm.isf(beta / self.steps))
        clipped = min(float(self.n), math.floor(self.n - self.rank + tail))
        clipped = max(clipped, 0.0) if right < bound else 0.0
        return clipped * (bound - radius) / self.n + (min(right, bound) - radius)


@dataclass(frozen=True)
class ErrorModel:
    """How a release's error is bounded: Gaussian noise of per-coordinate standard deviation
    ``noise_std`` (original coordinates; ``isotropic`` when all equal), and an optional clipping
    bias, ``clip.view_bias`` in view-space l2 times ``bias_factor`` per coordinate and times
    ``bias_l2_factor`` in l2."""

    noise_std: np.ndarray
    isotropic: bool
    clip: ClipBound | None = None
    bias_factor: np.ndarray | None = None
    bias_l2_factor: float = 1.0


def _need(diagnostics: Mapping[str, Any], *keys: str) -> str | None:
    missing = [key for key in keys if diagnostics.get(key) is None]
    return f"its diagnostics lack {', '.join(missing)}" if missing else None


def error_model(result: Any) -> ErrorModel | str:
    """The error model of ``result`` (a ``MeanResult``), or the reason there is none.

    Parameters
    ----------
    result : MeanResult
        A release.

    Returns
    -------
    ErrorModel or str
        The model, or a sentence saying why the public box is all that can be claimed.
    """
    diagnostics = result.diagnostics
    method = result.method
    if result.fallback:
        return "the release is the zero-vector fallback (n too small for the budget)"
    if diagnostics.get("secure_noise"):
        return "intervals for secure_noise=True (discrete Gaussian noise) are not implemented"
    if method == "auto":
        method = diagnostics.get("chosen")
        if method is None:
            return "the auto release does not name the estimator it chose"
    if method not in ("gaussian", *CLIPPED):
        return f"method {method!r} has no confidence interval yet (only gaussian, " \
               f"{', '.join(CLIPPED)} and auto)"
    missing = _need(diagnostics, "noise_std")
    if missing:
        return missing
    d = result.d
    # Per coordinate, in the data's units: a box-normalised release has mapped its noise_std
    # back already (``estimators.base.restore_diagnostics``); its bias is mapped here.
    sigma = np.broadcast_to(np.asarray(diagnostics["noise_std"], dtype=np.float64), (d,))
    box_scale = diagnostics.get("box_scale")
    box_scale = np.ones(d) if box_scale is None else np.asarray(box_scale, dtype=np.float64)
    if method == "gaussian":
        return ErrorModel(sigma.copy(), _equal(sigma))
    if method in ("plan", "plan-noscale"):
        return _plan_model(result, sigma, box_scale)
    if method == "iome" and diagnostics.get("quantized"):
        return "IOME's quantized path (integer search, rounding) is not covered yet"
    missing = _need(diagnostics, "norm_bound", "threshold_steps", "threshold_rho",
                    "target_rank", "threshold")
    if missing:
        return missing
    bound = float(diagnostics["norm_bound"])
    clip = ClipBound(result.n, float(diagnostics["target_rank"]),
                     int(diagnostics["threshold_steps"]), float(diagnostics["threshold_rho"]),
                     bound, bound, float(diagnostics["threshold"]))
    return ErrorModel(sigma.copy(), _equal(sigma), clip, 1.0 / box_scale,
                      float(1.0 / np.min(box_scale)))


def _equal(values: np.ndarray) -> bool:
    return bool(np.all(values == values[0]))


def _plan_model(result: Any, sigma: np.ndarray, box_scale: np.ndarray) -> ErrorModel | str:
    diagnostics = result.diagnostics
    if diagnostics.get("threshold_search") != "binary-search":
        return ("PLAN's exponential-mechanism threshold has no data-independent rank "
                "guarantee (its rank error depends on the gaps between the row norms), so its "
                "clipping bias cannot be bounded; use quantile='binary-search'")
    missing = _need(diagnostics, "norm_bound", "view_norm_bound", "threshold_steps",
                    "threshold_rho", "target_quantile", "threshold")
    if missing:
        return missing
    scale = diagnostics.get("scale")
    scale = np.ones(result.d) if scale is None else np.asarray(scale, dtype=np.float64)
    n = result.n
    clip = ClipBound(n, float(diagnostics["target_quantile"]) * n,
                     int(diagnostics["threshold_steps"]), float(diagnostics["threshold_rho"]),
                     float(diagnostics["norm_bound"]), float(diagnostics["view_norm_bound"]),
                     float(diagnostics["threshold"]))
    # The view multiplies coordinate j by scale_j (PLAN) after box_scale_j (normalisation).
    total = scale * box_scale
    noise = sigma / scale
    return ErrorModel(noise, _equal(noise), clip, 1.0 / total, float(1.0 / np.min(total)))


def _split(level: float, clip: ClipBound | None, search_share: float) -> tuple[float, float]:
    """(alpha_noise, beta_search) with alpha_noise + beta_search = 1 - level."""
    if not 0.0 < level < 1.0:
        raise InvalidParameterError(f"level must lie strictly between 0 and 1, got {level}")
    if not 0.0 < search_share < 1.0:
        raise InvalidParameterError(
            f"search_share must lie strictly between 0 and 1, got {search_share}")
    alpha = 1.0 - level
    if clip is None:
        return alpha, 0.0
    return alpha * (1.0 - search_share), alpha * search_share


def _box(result: Any) -> tuple[np.ndarray, np.ndarray]:
    diagnostics = result.diagnostics
    lo, hi = diagnostics.get("bounds_lo"), diagnostics.get("bounds_hi")
    if lo is None or hi is None:
        inf = np.full(result.d, np.inf)
        return -inf, inf
    return (np.broadcast_to(np.asarray(lo, dtype=np.float64), (result.d,)),
            np.broadcast_to(np.asarray(hi, dtype=np.float64), (result.d,)))


def _warn(result: Any, reason: str) -> None:
    warnings.warn(f"{result.method}: confidence interval is the public box: {reason}",
                  BoxIntervalWarning, stacklevel=4)


def half_widths(model: ErrorModel, level: float,
                search_share: float = SEARCH_SHARE) -> np.ndarray | None:
    """Per-coordinate half-widths at ``level`` (None when the bias has no bound)."""
    alpha_noise, beta = _split(level, model.clip, search_share)
    half = float(norm.isf(alpha_noise / 2.0)) * model.noise_std
    if model.clip is not None:
        bias = model.clip.view_bias(beta)
        if bias is None:
            return None
        # a clipping model always carries its per-coordinate factor (1 for orthogonal views)
        factor = 1.0 if model.bias_factor is None else model.bias_factor
        half = half + bias * factor
    return half


def noise_radius(noise_std: np.ndarray, alpha: float, isotropic: bool) -> float:
    """A radius the l2 norm of independent N(0, noise_std_j^2) coordinates exceeds with
    probability at most ``alpha``: the chi quantile when all are equal, else Laurent-Massart:
    sum s_j^2 + 2 sqrt(x sum s_j^4) + 2 x max s_j^2, x = ln(1 / alpha)."""
    if isotropic:
        return float(noise_std[0] * np.sqrt(chi2.isf(alpha, noise_std.size)))
    var = noise_std**2
    x = math.log(1.0 / alpha)
    return float(np.sqrt(var.sum() + 2.0 * np.sqrt(x * np.sum(var**2)) + 2.0 * x * var.max()))


def confidence_interval(result: Any, level: float = 0.95, *,
                        search_share: float = SEARCH_SHARE) -> tuple[np.ndarray, np.ndarray]:
    """Per-coordinate intervals, each containing the exact mean of the clamped data with
    probability >= ``level`` over the release's randomness.

    Parameters
    ----------
    result : MeanResult
        A release.
    level : float
        Coverage per coordinate (not simultaneous over coordinates).
    search_share : float
        The share of ``1 - level`` given to the radius search's failure (clipped family only).

    Returns
    -------
    (lo, hi) : tuple of numpy.ndarray
        Arrays of shape (d,), inside the public box. The box itself (with a
        ``BoxIntervalWarning``) when the release has no honest narrower interval.
    """
    box_lo, box_hi = _box(result)
    model = error_model(result)
    half = None if isinstance(model, str) else half_widths(model, level, search_share)
    if half is None:
        _warn(result, model if isinstance(model, str) else
              "the radius search never moved below the top of a universe narrower than the "
              "data's reach, so the rows above it are not counted")
        return box_lo.copy(), box_hi.copy()
    mean = result.mean
    return np.clip(mean - half, box_lo, box_hi), np.clip(mean + half, box_lo, box_hi)


def confidence_radius(result: Any, level: float = 0.95, *,
                      search_share: float = SEARCH_SHARE) -> float:
    """An l2 radius around the release that contains the exact mean of the clamped data (the
    whole vector) with probability >= ``level``.

    Parameters
    ----------
    result : MeanResult
        A release.
    level : float
        Coverage of the whole vector.
    search_share : float
        The share of ``1 - level`` given to the radius search's failure (clipped family only).

    Returns
    -------
    float
        The radius; at most the distance from the release to the box's farthest point (that
        distance, with a ``BoxIntervalWarning``, when there is no honest smaller one).
    """
    box_lo, box_hi = _box(result)
    farthest = float(np.linalg.norm(np.maximum(np.abs(result.mean - box_lo),
                                               np.abs(box_hi - result.mean))))
    model = error_model(result)
    if isinstance(model, str):
        _warn(result, model)
        return farthest
    alpha_noise, beta = _split(level, model.clip, search_share)
    radius = noise_radius(model.noise_std, alpha_noise, model.isotropic)
    if model.clip is not None:
        bias = model.clip.view_bias(beta)
        if bias is None:
            _warn(result, "the radius search never moved below the top of a universe narrower "
                          "than the data's reach, so the rows above it are not counted")
            return farthest
        radius += bias * model.bias_l2_factor
    return min(radius, farthest)


def interval_summary(result: Any, level: float = 0.95) -> dict[str, Any]:
    """The interval, the radius and what they cover, JSON-ready (no warning: the basis says
    when they are the box)."""
    model = error_model(result)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BoxIntervalWarning)
        lo, hi = confidence_interval(result, level)
        radius = confidence_radius(result, level)
    if isinstance(model, str):
        basis = f"public box: {model}"
    elif model.clip is not None and model.clip.view_bias((1.0 - level) * SEARCH_SHARE) is None:
        basis = "public box: the clipping bias has no bound for this release"
    else:
        basis = "noise and clipping bias" if model.clip is not None else "noise"
    return {"level": level, "lo": lo.tolist(), "hi": hi.tolist(), "radius": radius,
            "basis": basis}


__all__ = ["BoxIntervalWarning", "confidence_interval", "confidence_radius", "error_model",
           "interval_summary"]
