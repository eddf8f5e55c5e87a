"""A priori accuracy: the noise part of a release's confidence interval before any data is read,
and the budget a target accuracy needs.

The half-width is that of the per-coordinate noise interval of ``dpmean.intervals`` at
``level`` (z_{1 - alpha / 2} times the noise's standard deviation), for a release of shape
(n, d) in the public box. It is exact for ``gaussian`` (sensitivity ||hi - lo|| / n, all of rho
on the noise). For the clipped family the noise's standard deviation is 2 C / (n sqrt(2
rho_noise)) with C the private radius, which is at most the top of the searched interval, a
public number: ||max(|lo|, |hi|)|| for ``cm`` and ``cm-fixed``; ||hi - lo|| for ``iome``
(real-valued path) and ``plan-noscale``, whose private centres are projected onto the box, so
that no clamped row lies farther than the box's diameter. rho_noise is the estimator's own
``budget_plan(n, d)["noise"]``. So for those it is an upper bound: the worst case over every
radius the search can return. The clipping bias is not included (it depends on the private
radius); PLAN with scaling and ``auto`` have no a priori noise bound (their noise depends on
private variances or a private choice) and are refused.

The worst case can be far above a release's noise: the radius the search returns follows the
rows' spread, not the box (8 columns of N(1, 1) in +-10, n = 2000, rho = 1/2: IOME's noise
0.0044 against the bound's 0.066). ``clip_radius`` plans for the radius a user expects (in the
space the release runs in, as ``diagnostics["threshold"]`` reports it): the same formula at
min(clip_radius, top), which is the release's own noise when its search returns that radius.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from .api import build_estimator
from .bisection import narrowed
from .errors import InvalidParameterError
from .estimators.baselines import GaussianMean, clipped_sensitivity
from .estimators.clipped import box_reach
from .intervals import check_level
from .mechanisms.gaussian import normal_isf
from .registry import ESTIMATORS, PLANNED
from .validation import bounds_by_name, check_bounds, check_count, check_positive

# The bracket of ``rho_for_accuracy``'s search (as exp(log(.)), the values it has always tried).
_LEAST_RHO, _MOST_RHO = math.exp(math.log(1e-12)), math.exp(math.log(1e12))


def _noise_std(estimator: Any, n: int, d: int,
               clip_radius: float | None = None) -> float | np.ndarray:
    """The worst-case noise standard deviation of ``estimator``'s release of shape (n, d) (at
    a private radius of at most ``clip_radius``, if given): a number, or per coordinate (in the
    data's units) for a box-normalised release."""
    offset = estimator.far_box_offset(n, d)
    if offset is not None:
        # The release runs in the box moved to the origin (public: the box), where cm's
        # search tops out at the moved box's reach: planned about the origin, a box at 10^6
        # of width 10 was given 2 x 10^5 times the release's noise (a trial).
        estimator = estimator._moved(n, d, offset)
    scale = estimator.box_scale(n, d)
    std = _unit_noise_std(estimator, n, d, clip_radius)
    return std if scale is None else std / scale


def _unit_noise_std(estimator: Any, n: int, d: int, clip_radius: float | None) -> float:
    """``_noise_std`` in the space the release runs in (``unit_box``), where the noise is
    isotropic."""
    lo, hi = estimator.unit_box(n, d)
    plan = estimator.budget_plan(n, d)
    if n < estimator.minimum_rows(n, lo, hi, plan):
        raise InvalidParameterError(
            f"{estimator.method}: n={n} rows is too few for {estimator.budget} in d={d} "
            f"dimensions: the release would be the zero-vector fallback")
    method = estimator.method
    if method == "gaussian":
        if clip_radius is not None:
            raise InvalidParameterError(
                "accuracy: the Gaussian mechanism clips nothing (its noise follows the box); "
                "clip_radius applies to the clipped estimators")
        assert isinstance(estimator, GaussianMean)
        sensitivity = clipped_sensitivity(lo, hi, estimator.norm_bound)
        return sensitivity / n / math.sqrt(2.0 * plan["noise"])
    if method in ("cm", "cm-fixed"):
        top = box_reach(lo, hi)
    elif method == "plan-noscale":
        top = float(np.linalg.norm(hi - lo))
    else:  # iome, real-valued path: the centre is projected onto the box (settle_centre)
        if estimator.quantized:
            raise InvalidParameterError("accuracy: IOME's quantized path is not planned yet")
        top = float(np.linalg.norm(hi - lo))
    if clip_radius is not None:
        top = min(top, clip_radius)
    return 2.0 * top / n / math.sqrt(2.0 * plan["noise"])


def accuracy(method: str, n: int, d: int, bounds: Any, rho: float | None = None, *,
             epsilon: float | None = None, delta: float | None = None, level: float = 0.95,
             clip_radius: float | None = None, **options: Any) -> float | np.ndarray:
    """The a priori half-width of the noise part of a per-coordinate confidence interval.

    Parameters
    ----------
    method : str
        One of "gaussian", "cm", "cm-fixed", "iome", "plan-noscale".
    n, d : int
        The public shape of the data.
    bounds : tuple or mapping
        The public box ``(lo, hi)`` (scalars or length-d arrays), or a range for each of the d
        columns by name, ``{name: (lo, hi)}``, as ``dpmean.mean`` takes them (the result is then
        in the mapping's order).
    rho : float, optional
        The zCDP budget; or ``epsilon`` and ``delta``, converted as the estimator converts them.
    level : float
        The interval's coverage per coordinate.
    clip_radius : float, optional
        Plan for a private clipping radius of at most this (finite, positive), in the space
        the release runs in (the data's units for a box of equal widths, else the
        box-normalised one; what ``diagnostics["threshold"]`` reports). The search's radius
        follows the rows' spread about the centre (for "cm" the origin, or the public point
        the release is shifted to, ``diagnostics["box_offset"]``, in a box far from the
        origin), so a radius that
        holds nearly all rows gives the noise to expect, far below the worst case in a loose
        box. Not for "gaussian", which clips nothing.
    **options
        The estimator's own options (e.g. ``threshold_share``).

    Returns
    -------
    float or numpy.ndarray
        z_{1 - (1 - level) / 2} times the noise's standard deviation: exact for "gaussian", an
        upper bound (the largest radius the search can return, or ``clip_radius`` if smaller)
        for the clipped family, equal to the release's when its radius is that. The
        clipping bias of a release is not included (nor, where a release's interval is about
        the clip residual's measured move, that measurement's own noise,
        ``clip_residual_std``: part of the bias's price). Per coordinate (shape (d,), in the data's
        units) when the box's widths differ: the release then runs in the box-normalised space
        and each column's noise is proportional to its width.

    Raises
    ------
    InvalidParameterError
        An unknown ``method`` or one without an a priori noise bound, a ``level`` that is not
        a number strictly between 0 and 1, an ``n`` or ``d`` that is not a positive integer
        (Python's or numpy's; a bool, a float or a string is refused), or parameters the
        estimator refuses.
    """
    n, d, level = _check_request(method, n, d, level)
    _check_box_given("accuracy", bounds, options)
    if isinstance(bounds, Mapping):
        if len(bounds) != d:
            raise InvalidParameterError(
                f"accuracy: bounds give ranges for {len(bounds)} columns by name but d is {d}; "
                f"give one (lo, hi) for every column")
        names = list(bounds)
        bounds = bounds_by_name(bounds, names)
        # Judged here, where the names are known: the estimator's own check told "coordinate
        # 1" of ranges given by name (a trial).
        check_bounds(bounds, d, names)
    estimator = build_estimator(method, rho, epsilon=epsilon, delta=delta, bounds=bounds,
                                **options)
    # The rho a release of this shape is granted (an (epsilon, delta) request to PLAN is
    # calibrated to its plan for the shape: ``MeanEstimator.granted``).
    estimator = estimator.granted(n, d)
    if clip_radius is not None:
        clip_radius = check_positive(clip_radius, "clip_radius")
    return float(normal_isf((1.0 - level) / 2.0)) * _noise_std(estimator, n, d, clip_radius)


def _check_request(method: Any, n: Any, d: Any, level: Any) -> tuple[int, int, float]:
    """(n, d, level) as int, int, float, or an InvalidParameterError naming the argument.

    An unknown name is told apart from a known method without a bound (a typo such as
    "GAUSSIAN" is not a method that cannot be planned). n and d must be integers (numpy's
    too), not merely equal to one: a float, a string or a bool is refused with its repr, so
    that "1000" does not read as the number 1000 in the message."""
    if not isinstance(method, str) or method not in ESTIMATORS:
        raise InvalidParameterError(
            f"accuracy: unknown method {method!r}; the methods with an a priori noise bound "
            f"are {', '.join(PLANNED)}")
    if method not in PLANNED:
        raise InvalidParameterError(f"accuracy: {unplanned(method)}")
    return check_count(n, "n"), check_count(d, "d"), check_level(level)


def _check_box_given(caller: str, bounds: Any, options: Mapping[str, Any]) -> None:
    """Refuse a plan without a public box (``gaussian``'s ``norm_bound`` gives one). The
    release-side message says a mean needs a public range, which a release without bounds
    does not (it finds a private box): for a plan, the box is what is missing."""
    if bounds is None and options.get("norm_bound") is None:
        from .estimators.private_bounds import BOUNDS_SHARE

        raise InvalidParameterError(
            f"{caller}: no bounds given: the noise is planned in the release's public box, "
            f"bounds=(lo, hi) (on the command line --bounds LO HI). A release without bounds "
            f"spends {BOUNDS_SHARE:.0%} of rho on a private box found from the data, unknown "
            f"before it runs; plan with the box the data are assumed to lie in, and give the "
            f"release the same bounds")


def unplanned(method: str) -> str:
    """Why the known ``method`` (not in ``PLANNED``) cannot be planned, and what to do: for
    ``accuracy``'s refusal and ``dpmean budget``'s."""
    why = {"auto": "its noise is that of the method its private choice runs",
           "plan": "its noise depends on its private variance scales; plan-noscale, "
                   "without them, can be planned"}.get(
        method, "the planner does not model its noise")
    return (f"method {method!r} has no a priori noise bound ({why}); plan the method the "
            f"release will name, one of {', '.join(PLANNED)}")


def rho_for_accuracy(method: str, n: int, d: int, bounds: Any, half_width: float, *,
                     level: float = 0.95, clip_radius: float | None = None,
                     **options: Any) -> float:
    """The rho at which ``accuracy(method, n, d, bounds, rho, level=level)`` is at most
    ``half_width`` (the inverse of ``accuracy``; on every coordinate, for per-coordinate
    accuracies).

    Bisection on log rho over [1e-12, 1e12]; the returned rho always meets the target as
    computed (the upper end of the bracket is kept). Budget splits that depend on rho (IOME's
    ``threshold_share="auto"``) can make the accuracy jump, so the rho found meets the target
    and is within a relative 1e-9 of a point where it stops meeting it, but a smaller rho may
    also meet it.

    The rho returned is not always the target's: where n rows are too few for a release at
    the rho the target needs (it would be the zero-vector fallback), it is the least rho at
    which they are enough, and where the target is met at 1e-12, it is 1e-12; the half-width
    there is then below the target. ``dpmean.planning.rho_limit`` says which (``dpmean
    budget`` prints it), and ``accuracy`` at the rho returned gives the half-width it buys.

    Parameters
    ----------
    method : str
        One of the methods ``accuracy`` plans for.
    n, d : int
        The public shape of the data.
    bounds : tuple or mapping
        The public box ``(lo, hi)`` (scalars or length-d arrays), or ranges by name, as
        ``accuracy`` takes them.
    half_width : float
        The target half-width (finite, positive), in the data's units.
    level : float, default 0.95
        The interval's coverage per coordinate.
    clip_radius : float, optional
        The private clipping radius to plan for, as ``accuracy`` takes it.
    **options
        The estimator's own options (e.g. ``threshold_share``).

    Returns
    -------
    float
        The rho.

    Raises
    ------
    InvalidParameterError
        A ``half_width`` that is not a finite positive number (a string, an array or None is
        refused), when even rho = 1e12 does not reach the target, or whatever ``accuracy``
        refuses.
    """
    # Checked here, before the bisection: a string or an array would otherwise reach numpy's
    # comparisons, and a bad n, d or level would fail only inside the first trial accuracy.
    half_width = check_positive(half_width, "half_width")
    n, d, level = _check_request(method, n, d, level)
    _check_box_given("rho_for_accuracy", bounds, options)
    given = [name for name in ("rho", "epsilon", "delta") if name in options]
    if given:
        # Passed on to accuracy(), a rho= failed there with a bare TypeError (a trial).
        raise InvalidParameterError(
            f"rho_for_accuracy finds the rho for half_width, so it takes no budget "
            f"({', '.join(name + '=' for name in given)} given); accuracy(method, n, d, bounds, "
            f"rho) gives the half-width at a budget")

    def meets(rho: float) -> bool:
        planned = _widest_half_width(method, n, d, bounds, rho, level, clip_radius, options)
        return planned is not None and planned <= half_width

    if not meets(_MOST_RHO):
        # Which column binds (they differ where the ranges do), and how near it comes.
        best = np.atleast_1d(accuracy(method, n, d, bounds, _MOST_RHO, level=level,
                                      clip_radius=clip_radius, **options))
        j = int(np.argmax(best))
        names = list(bounds) if isinstance(bounds, Mapping) else None
        which = (f"; column {names[j]!r}" if names is not None else f"; column {j}") if (
            best.size > 1) else "; it"
        why = ("the range sets its sensitivity; a narrower range or more rows would"
               if method == "gaussian" else
               "its clipping radius can be as large as its range allows; a narrower range, "
               "more rows or method='gaussian' would")
        raise InvalidParameterError(
            f"rho_for_accuracy: {method} cannot reach half-width {half_width:g} at n={n}, "
            f"d={d} with any rho up to 1e12{which} comes no nearer than {best[j]:.3g} "
            f"({why})")
    if meets(_LEAST_RHO):
        return _LEAST_RHO
    return narrowed(meets, _MOST_RHO, _LEAST_RHO, 1e-9)


def _widest_half_width(method: str, n: int, d: int, bounds: Any, rho: float, level: float,
                       clip_radius: float | None, options: Mapping[str, Any]) -> float | None:
    """``accuracy``'s half-width at ``rho`` (the widest column's), or None where n rows are
    too few for a release there (the zero-vector fallback)."""
    try:
        return float(np.max(accuracy(method, n, d, bounds, rho, level=level,
                                     clip_radius=clip_radius, **options)))
    except InvalidParameterError as exc:
        if "fallback" in str(exc):
            return None
        raise


def rho_limit(method: str, n: int, d: int, bounds: Any, half_width: float, rho: float, *,
              level: float = 0.95, clip_radius: float | None = None, **options: Any) -> str:
    """What set the rho ``rho_for_accuracy`` returned for ``half_width`` (same arguments).

    A user trial: ``dpmean budget --half-width`` printed the target as the half-width reached
    even where the rho was the least n rows allow (cm, n = 1000, d = 4 in [0, 1]: targets 0.3,
    0.5 and 1e9 all gave rho = 0.000846, whose half-width is 0.22).

    Parameters
    ----------
    method, n, d, bounds, half_width, level, clip_radius, **options
        As ``rho_for_accuracy`` was given them.
    rho : float
        The rho it returned.

    Returns
    -------
    str
        "target": the half-width at ``rho`` is the target (to the search's precision; or a
        budget split that depends on rho jumps past it there). "rows": ``rho`` is the least
        at which n rows are enough for a release (below it, the zero-vector fallback), and
        the target alone is met at less. "search": ``rho`` is the least rho the search tries,
        1e-12, and the target is met at less.
    """
    def planned(at: float) -> float | None:
        return _widest_half_width(method, n, d, bounds, at, level, clip_radius, options)

    # The bisection stops within a relative 1e-9 of rho, where the half-width (in 1 / sqrt
    # rho) is within about 5e-10 of the target: anything further below is another limit.
    if (planned(rho) or 0.0) >= half_width * (1.0 - 1e-6):
        return "target"
    if planned(_LEAST_RHO) is not None:  # n rows are enough at the least rho tried
        return "search" if rho <= _LEAST_RHO * (1.0 + 1e-9) else "target"
    # The least rho (to a relative 1e-9, enough itself) at which n rows are enough.
    least = narrowed(lambda at: planned(at) is not None, _MOST_RHO, _LEAST_RHO, 1e-9)
    reached = planned(least)
    return "rows" if reached is not None and reached <= half_width else "target"


__all__ = ["accuracy", "rho_for_accuracy"]
