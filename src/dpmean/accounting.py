"""rho-zCDP budgets, ledgers and conversions (Bun-Steinke 2016; Canonne-Kamath-Steinke 2020).

Bun & Steinke 2016 (TCC), Props. 1.3, 1.4, 1.6; Canonne, Kamath & Steinke 2020 (NeurIPS), Sec. 2.3.

Every mechanism in dpmean is accounted in rho-zCDP, which composes by addition. Users may state
their budget as (epsilon, delta) instead; it is converted once, up front, to the largest rho whose
tight (epsilon, delta) guarantee meets theirs. ``PrivacyLedger`` records what each stage of an
estimator spends, and refuses a split that overspends before any data is read.

Other conversions: Cesar & Rogers 2021 (ALT), "Bounding, concentrating, and truncating: unifying
privacy loss composition for data analytics", for the exponential mechanism.
"""

from __future__ import annotations

import math
import numbers
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from .errors import BudgetExceededError, InvalidParameterError, PrivacyAccountingError

if TYPE_CHECKING:
    import numpy as np

    from .events import Event

__all__ = [
    "LARGE_DELTA",
    "MIN_RHO",
    "LargeDeltaWarning",
    "PrivacyLedger",
    "approx_dp_to_zcdp",
    "check_budget_request",
    "classic_zcdp_to_approx_dp",
    "equal_share",
    "exponential_mechanism_zcdp",
    "gaussian_mechanism_zcdp",
    "gaussian_sigma",
    "pure_dp_to_zcdp",
    "remainder",
    "resolve_budget",
    "stepped_down",
    "warn_if_large_delta",
    "zcdp_to_approx_dp",
]

# Summing stage budgets that were computed as fractions of the total (rho * 0.3 + rho * 0.7)
# can land an ulp or two above the total; this slack absorbs that and nothing a user would notice.
_RELATIVE_SLACK = 1e-9
# Relative slack is no help for subnormal stage budgets, whose rounding is absolute; a slack of
# the smallest normal float (~2e-308) covers it and is no privacy at all.
_ABSOLUTE_SLACK = sys.float_info.min

# The smallest rho a release may be granted. An estimator splits rho into stages (some a few
# per cent of it, searched again in tens of noisy counts) and each stage's noise has standard
# deviation sensitivity / sqrt(2 rho_stage): at the bottom of float64 those stages no longer
# exist (rho = 5e-324 split into stages rounds to 0 and the noise's scale divided by zero;
# rho = 1e-320 overflowed 1 / rho in the noise's variance). 1e-200 leaves a factor of 10^100
# for the stage fractions, the dimension, the box and n before anything overflows, and refuses
# nothing of use: at rho = 1e-200 the noise is already about 10^100 / n times the data's range.
MIN_RHO = 1e-200
# A delta above this draws a ``LargeDeltaWarning`` (a request, never an error): see
# ``check_budget_request``.
LARGE_DELTA = 0.01


class LargeDeltaWarning(UserWarning):
    """An (epsilon, delta) request whose delta is above ``LARGE_DELTA``: (epsilon, delta)-DP
    lets the release fail completely with probability delta, and a delta that is not far below
    1 / n permits publishing some of the rows as they are."""


_PURE_DP_HELP = (
    "dpmean's mechanisms are zCDP (Gaussian noise), so a pure epsilon-DP guarantee is not "
    "available; give delta as well (e.g. delta=1e-6), or give rho"
)


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _as_number(name: str, value: object) -> float:
    # bool is an int subclass, but rho=True is a bug in the caller, never a budget.
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidParameterError(
            f"{name} must be a number, got {value!r} of type {type(value).__name__}"
        )
    number = float(value)
    if math.isnan(number):
        raise InvalidParameterError(f"{name} must be a number, got NaN")
    if math.isinf(number):
        raise InvalidParameterError(f"{name} must be finite, got {number}")
    return number


def _positive(name: str, value: object) -> float:
    number = _as_number(name, value)
    if number <= 0:
        raise InvalidParameterError(f"{name} must be positive, got {number:g}")
    return number


def _non_negative(name: str, value: object) -> float:
    number = _as_number(name, value)
    if number < 0:
        raise InvalidParameterError(f"{name} must be non-negative, got {number:g}")
    return number


def _rho(value: object) -> float:
    """A rho a release may be granted: positive, finite and at least ``MIN_RHO``."""
    number = _positive("rho", value)
    if number < MIN_RHO:
        raise InvalidParameterError(
            f"rho must be at least {MIN_RHO:g}, got {number:g}: below it the noise of the "
            f"release's stages (standard deviation sensitivity / sqrt(2 rho) for each stage's "
            f"share of rho) cannot be represented in floating point, and at {MIN_RHO:g} it is "
            f"already about 10^100 / n times the data's range; give a larger rho"
        )
    return number


def _delta(value: object) -> float:
    number = _positive("delta", value)
    if number >= 1:
        raise InvalidParameterError(
            f"delta must be in (0, 1), got {number:g}; it is a failure probability and should "
            f"be much smaller than 1/n (e.g. 1e-6)"
        )
    return number


# --------------------------------------------------------------------------------------------
# Conversions
# --------------------------------------------------------------------------------------------


def _softplus(t: float) -> float:
    """log(1 + e^t) without overflow."""
    return max(t, 0.0) + math.log1p(math.exp(-abs(t)))


def _cks_objective(t: float, rho: float, log_rho: float, log_log_inv_delta: float) -> float:
    # The CKS objective at alpha = 1 + e^t. Working in t = log(alpha - 1) keeps alpha > 1 without
    # a constraint and spreads the optimum's neighbourhood evenly whether alpha* is 1.01 or 1e6;
    # the rewriting below avoids cancellation near alpha = 1 and overflow for huge alpha:
    #   alpha * rho                    = rho + e^(log rho + t)
    #   log(1/delta) / (alpha - 1)     = e^(log log(1/delta) - t)
    #   log(1 - 1/alpha)               = -softplus(-t)
    #   -log(alpha) / (alpha - 1)      = -softplus(t) e^(-t)
    sp = _softplus(t)
    return (
        rho
        + math.exp(log_rho + t)
        + math.exp(log_log_inv_delta - t)
        - _softplus(-t)
        - sp * math.exp(-t)
    )


def classic_zcdp_to_approx_dp(rho: float, delta: float) -> float:
    """epsilon = rho + 2 sqrt(rho log(1/delta)): the simple bound (Bun-Steinke 2016, Prop. 1.3).

    Valid but loose; ``zcdp_to_approx_dp`` is never larger.
    """
    rho = _non_negative("rho", rho)
    delta = _delta(delta)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def zcdp_to_approx_dp(rho: float, delta: float) -> float:
    """The smallest epsilon such that rho-zCDP implies (epsilon, delta)-DP, by the tight bound of
    Canonne, Kamath & Steinke 2020 (Sec. 2.3, Cor. 13):

        epsilon = inf_{alpha > 1} alpha rho
                  + (log(1/delta) + (alpha - 1) log(1 - 1/alpha) - log(alpha)) / (alpha - 1).

    Never larger than ``classic_zcdp_to_approx_dp`` and never negative.

    Parameters
    ----------
    rho : float
        The zCDP parameter (non-negative; 0 gives epsilon = 0).
    delta : float
        The target delta, in (0, 1).

    Returns
    -------
    float
        The smallest epsilon with rho-zCDP => (epsilon, delta)-DP.

    Raises
    ------
    InvalidParameterError
        A negative or non-finite ``rho``, or ``delta`` outside (0, 1).
    """
    rho = _non_negative("rho", rho)
    delta = _delta(delta)
    classic = classic_zcdp_to_approx_dp(rho, delta)
    if rho == 0.0:
        # A mechanism that reveals nothing is (0, 0)-DP.
        return 0.0
    log_inv_delta = math.log(1.0 / delta)
    log_rho = math.log(rho)
    log_l = math.log(log_inv_delta)

    def objective(t: float) -> float:
        return _cks_objective(t, rho, log_rho, log_l)

    # The classic bound is this objective without its two negative terms, minimised at
    # alpha - 1 = sqrt(log(1/delta) / rho); the tight optimum lies within a modest factor of it.
    # A coarse scan first, so a bounded Brent refine starts in the right basin even if the
    # objective were not unimodal over the whole range.
    centre = 0.5 * (log_l - log_rho)
    half_width = 25.0
    lo = max(centre - half_width, -700.0)
    hi = min(centre + half_width, 700.0)
    steps = 400
    grid = [lo + (hi - lo) * i / steps for i in range(steps + 1)]
    values = [objective(t) for t in grid]
    best = min(range(len(grid)), key=values.__getitem__)
    left = grid[max(best - 1, 0)]
    right = grid[min(best + 1, steps)]
    from scipy.optimize import minimize_scalar  # imported when used: 0.3 s
    refined = minimize_scalar(
        objective, bounds=(left, right), method="bounded", options={"xatol": 1e-12}
    )
    tight = min(values[best], float(refined.fun), objective(centre))
    # The classic bound is itself a valid conversion, so taking the minimum is sound, and it
    # makes "never above classic" hold exactly rather than up to rounding.
    return max(0.0, min(tight, classic))


def approx_dp_to_zcdp(epsilon: float, delta: float) -> float:
    """The largest rho such that rho-zCDP implies (epsilon, delta)-DP under the tight conversion.

    Inverting ``zcdp_to_approx_dp``: rho-zCDP gives (epsilon, delta) as soon as some order
    alpha > 1 has alpha rho + N(alpha) / (alpha - 1) <= epsilon, N(alpha) = log(1/delta) +
    (alpha - 1) log(1 - 1/alpha) - log(alpha); so the answer is the supremum over alpha of

        h(alpha) = (epsilon (alpha - 1) - N(alpha)) / (alpha (alpha - 1)),

    and every alpha gives a valid rho, h(alpha). It is maximised over log(alpha - 1) (a grid,
    then Brent), and h is evaluated with a bound on its floating-point error subtracted, so
    the result never exceeds the true largest rho (it lies below it by a relative 3e-14 to
    6e-13 for delta from 0.9 to 1e-12, 1e-11 at delta = 1e-150). Inverting the forward
    conversion by root-finding instead returned up to 1e-13 (relative) more than the true
    rho, and below epsilon = 1e-162 its bracket underflowed to 0 and it failed.
    As epsilon -> 0 the answer tends to a positive limit, the rho that is (0, delta)-DP (about
    e delta^2 / 2 for small delta): at epsilon = 1e-170 and delta = 1e-6 it is 1.36e-12.

    Parameters
    ----------
    epsilon : float
        The target epsilon (positive).
    delta : float
        The target delta, in (0, 1).

    Returns
    -------
    float
        The rho; it satisfies ``zcdp_to_approx_dp(rho, delta) <= epsilon`` exactly (checked,
        not just up to the optimiser's tolerance).

    Raises
    ------
    InvalidParameterError
        A non-positive or non-finite ``epsilon``, ``delta`` outside (0, 1) or so small that
        1/delta overflows, or a pair whose rho is below float64's smallest normal number,
        2.2e-308 (a tiny epsilon with a tiny delta: epsilon = 1e-170 with delta = 1e-300
        implies rho near 1e-341).
    """
    epsilon = _positive("epsilon", epsilon)
    delta = _delta(delta)
    if not 1.0 / delta < math.inf:
        # log(1/delta), as ``zcdp_to_approx_dp`` takes it, would be infinite (delta below
        # 5.6e-309, subnormal): its check below could never pass.
        raise InvalidParameterError(
            f"delta={delta:g} is too small to convert: 1/delta overflows float64; give "
            f"delta >= {1.0 / sys.float_info.max:.3g}")
    rho = _largest_rho(epsilon, delta)
    if not rho >= sys.float_info.min:
        raise InvalidParameterError(
            f"epsilon={epsilon:g}, delta={delta:g} converts to a rho-zCDP budget below "
            f"{sys.float_info.min:.3g}, the smallest normal float64: too small to compute with "
            f"(and far below the smallest rho a release may be granted, {MIN_RHO:g}); give a "
            f"larger epsilon or delta")

    def excess(value: float) -> float:
        return zcdp_to_approx_dp(value, delta) - epsilon

    return _step_down(rho, excess)


# Where ``_largest_rho`` looks for the best order: log(alpha - 1) from -700 (alpha - 1 stays a
# normal float) to 709 (e^t stays finite), on a grid of step 1/4 refined by Brent.
_T_LOW, _T_HIGH, _T_STEP = -700.0, 709.0, 0.25
# Relative slack for the roundings in ``_rho_at``: its terms are each computed with a few
# roundings (about 8 units of 2^-53 of their sum in all); 2^-48 is 32 units.
_ROUNDING = 2.0**-48


def _rho_at(t: np.ndarray | float, epsilon: float, log_inv_delta: float
            ) -> tuple[np.ndarray, np.ndarray]:
    """h(alpha) of ``approx_dp_to_zcdp`` at alpha = 1 + e^t: (as computed, a lower bound).

    With softplus(x) = log(1 + e^x): log(1 - 1/alpha) = -softplus(-t), log(alpha) = softplus(t)
    and 1 / (alpha (alpha - 1)) = e^-(t + softplus(t)), so h = M e^-(t + softplus(t)) with
    M = epsilon e^t - log(1/delta) + e^t softplus(-t) + softplus(t): no overflow (alpha up to
    e^709) and no cancellation but M's own. The lower bound subtracts from M its rounding error
    (``_ROUNDING`` times the sum of the terms' magnitudes), and from the factor its own
    (e^-x with x computed to a relative 2^-52 errs by about x 2^-52 relatively)."""
    import numpy as np  # imported when used: the module itself stays light

    t = np.asarray(t, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        grow = np.exp(t)
        plus = np.maximum(t, 0.0) + np.log1p(np.exp(-np.abs(t)))  # softplus(t)
        minus = np.maximum(-t, 0.0) + np.log1p(np.exp(-np.abs(t)))  # softplus(-t)
        terms = (epsilon * grow, grow * minus, plus)
        m = terms[0] - log_inv_delta + terms[1] + terms[2]
        size = terms[0] + log_inv_delta + terms[1] + terms[2]
        exponent = t + plus
        factor = np.exp(-exponent)
        value = m * factor
        lower = ((m - _ROUNDING * size) * factor
                 * (1.0 - _ROUNDING * (np.abs(exponent) + 4.0)))
    bad = ~np.isfinite(value)
    return np.where(bad, -np.inf, value), np.where(bad | ~np.isfinite(lower), -np.inf, lower)


def _largest_rho(epsilon: float, delta: float) -> float:
    """A lower bound on sup_alpha h(alpha) (``approx_dp_to_zcdp``) within about 1e-13 of it;
    0 when no order gives a positive rho."""
    import numpy as np  # imported when used, as scipy below
    from scipy.optimize import minimize_scalar  # imported when used: 0.3 s

    # log(1/delta), the larger of its two float forms: -log(delta) is accurate, log(1/delta)
    # is what ``zcdp_to_approx_dp`` takes (1/delta rounds: 1e-4 relative at delta = 1 - 1e-12).
    # h decreases in it, so the larger is conservative and passes the forward check.
    log_inv_delta = max(-math.log(delta), math.log(1.0 / delta))
    grid = np.arange(_T_LOW, _T_HIGH + _T_STEP / 2.0, _T_STEP)
    values, lowers = _rho_at(grid, epsilon, log_inv_delta)
    best = int(np.argmax(values))
    refined = minimize_scalar(
        lambda t: -float(_rho_at(t, epsilon, log_inv_delta)[0]),
        bounds=(float(grid[best]) - _T_STEP, float(grid[best]) + _T_STEP), method="bounded",
        options={"xatol": 1e-10})
    lower = max(float(lowers[best]), float(_rho_at(float(refined.x), epsilon,
                                                   log_inv_delta)[1]))
    return max(lower, 0.0)


def _step_down(rho: float, excess: Callable[[float], float]) -> float:
    # ``zcdp_to_approx_dp`` computes epsilon with its own rounding, so a rho that meets the
    # request exactly may miss it as computed by a hair; the guarantee must hold as computed
    # too, so walk down until it does.
    for _ in range(10_000):
        if excess(rho) <= 0.0:
            return rho
        rho *= 1.0 - 1e-12
    raise InvalidParameterError(  # pragma: no cover - excess is continuous and monotone
        "could not find a rho that meets the requested (epsilon, delta)"
    )


def pure_dp_to_zcdp(epsilon: float) -> float:
    """epsilon-DP implies (epsilon^2 / 2)-zCDP (Bun-Steinke 2016, Prop. 1.4)."""
    epsilon = _non_negative("epsilon", epsilon)
    return 0.5 * epsilon * epsilon


def exponential_mechanism_zcdp(epsilon: float) -> float:
    """The epsilon-DP exponential mechanism is (epsilon^2 / 8)-zCDP, because it has bounded range
    (Cesar-Rogers 2021), four times better than ``pure_dp_to_zcdp``."""
    epsilon = _non_negative("epsilon", epsilon)
    return epsilon * epsilon / 8.0


def gaussian_mechanism_zcdp(sensitivity: float, sigma: float) -> float:
    """Adding N(0, sigma^2) to an L2-sensitivity-Delta query is (Delta^2 / (2 sigma^2))-zCDP
    (Bun-Steinke 2016, Prop. 1.6)."""
    sensitivity = _non_negative("sensitivity", sensitivity)
    sigma = _positive("sigma", sigma)
    return sensitivity * sensitivity / (2.0 * sigma * sigma)


def gaussian_sigma(sensitivity: float, rho: float) -> float:
    """The noise scale sigma = Delta / sqrt(2 rho) at which the Gaussian mechanism is rho-zCDP."""
    sensitivity = _non_negative("sensitivity", sensitivity)
    rho = _positive("rho", rho)
    return sensitivity / math.sqrt(2.0 * rho)


def resolve_budget(
    rho: float | None = None, epsilon: float | None = None, delta: float | None = None
) -> float:
    """The zCDP budget from exactly one of ``rho`` or the pair (``epsilon``, ``delta``).

    (epsilon, delta) is converted with ``approx_dp_to_zcdp``: the largest rho that meets it.
    The request is checked as ``check_budget_request`` checks it (without its warning: the
    constructor that accepted the request warned already), and so is the converted rho: a
    pair whose rho is below ``MIN_RHO`` is refused as such a rho is (the release cannot be
    computed at it).
    """
    _check_request(rho, epsilon, delta)
    if rho is not None:
        return float(rho)
    assert epsilon is not None and delta is not None
    converted = approx_dp_to_zcdp(epsilon, delta)
    if converted < MIN_RHO:
        raise InvalidParameterError(
            f"epsilon={float(epsilon):g}, delta={float(delta):g} converts to rho={converted:g} "
            f"(the largest rho-zCDP that implies it), below the smallest rho a release may be "
            f"granted, {MIN_RHO:g}: the noise could not be represented in floating point; "
            f"give a larger epsilon or delta")
    return converted


def check_budget_request(
    rho: float | None = None, epsilon: float | None = None, delta: float | None = None
) -> None:
    """Validate a request of exactly one of ``rho`` or the pair (``epsilon``, ``delta``),
    converting nothing (``resolve_budget`` converts): what an estimator's constructor checks.

    Raises
    ------
    InvalidParameterError
        No budget, both ``rho`` and (part of) the pair, half of the pair, a value that is
        not a positive finite number (``delta`` in (0, 1)), or a ``rho`` below ``MIN_RHO``.

    Warns
    -----
    LargeDeltaWarning
        ``delta`` above ``LARGE_DELTA`` (0.01). delta is the probability that the release fails
        completely: a mechanism that publishes each row as it is with probability delta is
        (0, delta)-DP, so delta should be far below 1 / n (e.g. 1e-6). n is not known here
        (the request is checked before any data), and a data-dependent check would itself
        depend on n; the threshold is fixed: above 0.01, delta is at least 1 / n for every
        data set of 100 rows or more. The request is accepted (delta in (0, 1) is valid).
    """
    _check_request(rho, epsilon, delta)
    if rho is None and delta is not None:
        warn_if_large_delta(float(delta))


def warn_if_large_delta(delta: float) -> None:
    """A ``LargeDeltaWarning`` where ``delta`` (a checked number) exceeds ``LARGE_DELTA``:
    ``check_budget_request``'s, also for a session's or a ledger's total when it is made."""
    if delta > LARGE_DELTA:
        from .validation import user_stacklevel  # validation imports numpy: only when warning

        warnings.warn(
            f"delta={delta:g} is large: delta is the probability that the release fails "
            f"completely (a mechanism that publishes each row as it is with probability delta "
            f"is (0, delta)-DP), so it should be far below 1/n, e.g. 1e-6; above "
            f"{LARGE_DELTA:g} it is at least 1/n for every data set of "
            f"{round(1 / LARGE_DELTA)} rows or more",
            LargeDeltaWarning, stacklevel=user_stacklevel())


def _check_request(rho: float | None, epsilon: float | None, delta: float | None) -> None:
    """``check_budget_request`` without its warning."""
    if rho is not None and (epsilon is not None or delta is not None):
        given = ", ".join(
            name for name, value in (("epsilon", epsilon), ("delta", delta)) if value is not None
        )
        raise InvalidParameterError(
            f"give either rho or (epsilon, delta), not both: got rho and {given}"
        )
    if rho is not None:
        _rho(rho)
        return
    if epsilon is None and delta is None:
        raise InvalidParameterError(
            "no privacy budget given: pass rho (zCDP, e.g. rho=0.5), or epsilon and delta "
            "(e.g. epsilon=1.0, delta=1e-6)"
        )
    if delta is None:
        raise InvalidParameterError(f"epsilon was given without delta: {_PURE_DP_HELP}")
    if epsilon is None:
        raise InvalidParameterError(
            "delta was given without epsilon: give both epsilon and delta, or give rho"
        )
    _positive("epsilon", epsilon)
    _delta(delta)


# --------------------------------------------------------------------------------------------
# Ledger
# --------------------------------------------------------------------------------------------


def _exceeds(amount: float, limit: float) -> bool:
    return amount > limit * (1.0 + _RELATIVE_SLACK) + _ABSOLUTE_SLACK


def within(amounts: Iterable[float], total: float) -> bool:
    """Whether the exact sum of ``amounts`` is at most ``total``: fsum(amounts) <= total would
    let it exceed the total by up to half an ulp (rounded down to it), and a ledger summed in
    another order could then read an ulp over."""
    return math.fsum([*amounts, -total]) <= 0.0


def stepped_down(value: float, fits: Callable[[float], bool]) -> float:
    """``value``, or the largest float below it (down to 0) for which ``fits`` holds, an ulp at
    a time: for a budget's share computed to the nearest float, which its rounding can leave
    an ulp or two above what it must not exceed."""
    while value > 0.0 and not fits(value):
        value = math.nextafter(value, 0.0)
    return value


def remainder(total: float, *parts: float) -> float:
    """The largest float r >= 0 with parts + (r,) summing exactly to at most ``total``: the last
    share of a budget split (total - a - b can round up)."""
    return stepped_down(max(total - math.fsum(parts), 0.0),
                        lambda rest: within((*parts, rest), total))


def equal_share(total: float, parts: int) -> float:
    """The largest float s with ``parts`` copies of s summing exactly to at most ``total``: a
    budget split evenly (total / parts can round so that the parts sum above the total)."""
    return stepped_down(total / parts, lambda share: within([share] * parts, total))


def _stage_name(stage: object) -> str:
    if not isinstance(stage, str) or not stage:
        raise InvalidParameterError(f"a stage name must be a non-empty string, got {stage!r}")
    return stage


def _format_stages(stages: Mapping[str, float]) -> str:
    return ", ".join(f"{name}={value:.6g}" for name, value in stages.items()) or "none"


class PrivacyLedger:
    """What each stage of one release spends against a fixed total, in one unit (rho or
    epsilon).

    An estimator first ``plan``s its split (from public values only, before reading data); then
    each mechanism ``charge``s its own stage, once, with the cost it computes from its own
    parameters, before it draws any noise. A stage that was never planned, a second charge to
    the same stage, or a charge above the plan is refused, and ``verify`` (run before a release
    leaves the estimator) refuses a ledger whose charges do not add up to its plan.

    Parameters
    ----------
    budget : float
        The total this ledger may spend, in ``unit``.
    unit : str
        "rho" (zCDP, tCDP and local zCDP budgets) or "epsilon" (approximate and pure DP).
    """

    def __init__(self, budget: float, unit: str = "rho") -> None:
        if unit not in ("rho", "epsilon"):
            raise InvalidParameterError(f"a ledger's unit is 'rho' or 'epsilon', got {unit!r}")
        self._unit = unit
        self._budget = _positive("budget", budget)
        self._planned: dict[str, float] = {}
        self._spent: dict[str, float] = {}
        self._events: dict[str, Event] = {}

    @classmethod
    def for_stages(cls, stages: Mapping[str, float], unit: str = "rho") -> PrivacyLedger:
        """A ledger whose budget is exactly ``stages``'s total, with ``stages`` planned: for a
        mechanism run outside an estimator (an experiment, a test)."""
        ledger = cls(math.fsum(stages.values()), unit)
        ledger.plan(stages)
        return ledger

    def plan(self, stages: Mapping[str, float]) -> dict[str, float]:
        """Declare stage -> amount the estimator intends to spend; return a copy as floats.

        Raises
        ------
        BudgetExceededError
            If the planned stages (together with any earlier plan) sum to more than the budget.
        InvalidParameterError
            On a malformed plan, or a stage re-planned at another amount.
        """
        if not isinstance(stages, Mapping):
            raise InvalidParameterError(
                f"a budget plan must be a mapping of stage -> {self._unit}, "
                f"got {type(stages).__name__}"
            )
        new: dict[str, float] = {}
        for stage, amount in stages.items():
            name = _stage_name(stage)
            new[name] = _non_negative(f"planned {self._unit} for stage {name!r}", amount)
        for name, amount in new.items():
            # Changing an earlier plan would let a stage that was sized for one amount be charged
            # another; re-stating the same amount is harmless.
            if name in self._planned and self._planned[name] != amount:
                raise InvalidParameterError(
                    f"stage {name!r} was already planned at {self._unit}="
                    f"{self._planned[name]:.6g}; it cannot be re-planned at "
                    f"{self._unit}={amount:.6g}"
                )
        union = {**self._planned, **new}
        total = math.fsum(union.values())
        if _exceeds(total, self._budget):
            raise BudgetExceededError(
                f"the budget plan ({_format_stages(union)}) sums to {self._unit}={total:.6g}, "
                f"more than the budget {self._unit}={self._budget:.6g}"
            )
        if not within(union.values(), self._budget):
            new = self._within_budget(new)
        self._planned = {**self._planned, **new}
        return dict(new)

    def _within_budget(self, new: dict[str, float]) -> dict[str, float]:
        """The new stages lowered by their rounding, so that the plan sums to at most the
        budget exactly. Shares of the total (rho * 0.3 + rho * 0.7, or rho - rho * 0.05 beside
        rho * 0.05) can sum an ulp or two above it; the estimator draws with the amounts
        ``plan`` returns, so the release then costs at most its budget, not an ulp more."""
        fresh = [name for name in new if name not in self._planned]
        total = math.fsum({**self._planned, **new}.values())
        lowered = dict(new)
        for name in fresh:
            lowered[name] = new[name] * (self._budget / total)
        while not within({**self._planned, **lowered}.values(), self._budget):
            positive = [name for name in fresh if lowered[name] > 0.0]
            if not positive:  # pragma: no cover - the earlier plan alone was within the budget
                raise PrivacyAccountingError("a budget plan could not be fitted to its budget")
            for name in positive:
                lowered[name] = math.nextafter(lowered[name], 0.0)
        return lowered

    def charge(self, stage: str, amount: float, event: Event | None = None) -> float:
        """Record that ``stage`` spent ``amount``; return ``amount``.

        ``event`` (``dpmean.events``) says which mechanism spent it, for the (epsilon, delta)
        accountant: a Gaussian, bounded-range exponential mechanisms, or (None) only known to
        cost ``amount``. Its zCDP cost must be ``amount``.

        Raises
        ------
        PrivacyAccountingError
            (recording nothing) if the stage was never planned or was charged already.
        BudgetExceededError
            (recording nothing) if the amount exceeds the stage's plan.
        """
        name = _stage_name(stage)
        amount = _non_negative(f"{self._unit} charged to stage {name!r}", amount)
        if name not in self._planned:
            raise PrivacyAccountingError(
                f"stage {name!r} was never planned (planned: {_format_stages(self._planned)}); "
                f"every stage must be planned before any data is read"
            )
        if name in self._spent:
            raise PrivacyAccountingError(
                f"stage {name!r} was charged already; a mechanism charges its stage once"
            )
        if _exceeds(amount, self._planned[name]):
            raise BudgetExceededError(
                f"stage {name!r} would spend {self._unit}={amount:.6g}, more than the "
                f"{self._unit}={self._planned[name]:.6g} planned for it"
            )
        if event is not None and self._unit == "rho":
            from .events import zcdp_cost

            cost = zcdp_cost(event)
            if cost is None or not math.isclose(cost, amount, rel_tol=1e-9, abs_tol=1e-300):
                raise PrivacyAccountingError(
                    f"stage {name!r} was charged rho={amount:.6g} as {event}, whose cost is "
                    f"{cost}; a mechanism's event must cost what it charges")
            self._events[name] = event
        self._spent[name] = amount
        return amount

    def verify(self) -> None:
        """Check that every planned stage was charged its plan (up to rounding).

        Raises
        ------
        PrivacyAccountingError
            If a stage with a positive plan was charged less than planned, or not at all: the
            estimator's accounting and its plan disagree, and the release must not leave.
        """
        for name, planned in self._planned.items():
            spent = self._spent.get(name, 0.0)
            if _exceeds(planned, spent):
                raise PrivacyAccountingError(
                    f"stage {name!r} was planned at {self._unit}={planned:.6g} but charged "
                    f"{self._unit}={spent:.6g}; the release's ledger does not add up to its plan"
                )

    @property
    def unit(self) -> str:
        """The unit of every amount in this ledger: "rho" or "epsilon"."""
        return self._unit

    @property
    def budget(self) -> float:
        """The total this ledger may spend."""
        return self._budget

    @property
    def planned(self) -> dict[str, float]:
        """Stage -> amount planned (a copy)."""
        return dict(self._planned)

    @property
    def events(self) -> dict[str, Event | None]:
        """Stage -> the event its mechanism declared when charging (None: not declared)."""
        return {name: self._events.get(name) for name in self._spent}

    @property
    def spent(self) -> dict[str, float]:
        """Stage -> amount spent so far, in the order stages were charged (a copy)."""
        return dict(self._spent)

    @property
    def total_spent(self) -> float:
        """The amount spent by all stages together (both units compose by addition here)."""
        return math.fsum(self._spent.values())

    @property
    def remaining(self) -> float:
        """The amount not yet spent (never negative, even within the rounding slack)."""
        return max(0.0, self._budget - self.total_spent)

    def __repr__(self) -> str:
        return (
            f"PrivacyLedger({self._unit}: budget={self._budget:.6g}, "
            f"spent={self.total_spent:.6g} [{_format_stages(self._spent)}], "
            f"remaining={self.remaining:.6g})"
        )


# --------------------------------------------------------------------------------------------
# Truncated CDP (Bun, Dwork, Rothblum, Steinke 2018, "Composable and versatile privacy via
# truncated CDP", STOC): (rho, omega)-tCDP bounds D_alpha(M(x) || M(y)) <= rho alpha only for
# 1 < alpha <= omega, so the zCDP conversions above (which use every order alpha > 1) do not
# apply to it.
# --------------------------------------------------------------------------------------------

# Grid of log(alpha - 1) scanned before a bounded refine.
_TCDP_GRID_STEPS = 400
# The largest order used is 1 + (omega - 1)(1 - 1e-12): a hair below omega, so that rounding in
# exp(log(omega - 1)) can never step past the orders tCDP bounds.
_TCDP_TOP_MARGIN = 1e-12


def _omega(value: object) -> float:
    omega = _positive("omega", value)
    if not omega > 1.0 or not math.isfinite(omega):
        raise InvalidParameterError(f"tCDP needs a finite omega > 1, got {omega:g}")
    return omega


# A bound on the relative rounding error of ``_cks_order_epsilon``'s terms: 2^-45 is 256 units
# of float64's 2^-53, far above the few operations each term costs.
_CKS_ROUNDING = 2.0**-45


def _cks_order_epsilon(alpha: float, rho: float, log_inv_delta: float) -> float:
    """An upper bound on the epsilon that D_alpha <= rho alpha at the single order alpha gives
    at delta (Canonne-Kamath-Steinke 2020, Prop. 12 with tau = rho alpha):
    rho alpha + (log(1/delta) + (alpha - 1) log(1 - 1/alpha) - log(alpha)) / (alpha - 1),
    raised by ``_CKS_ROUNDING`` times its terms' magnitudes, so that the rounding of its
    terms cannot leave it below the exact value (a budget that meets the request only as
    computed could miss it by an ulp)."""
    am1 = alpha - 1.0
    terms = (alpha * rho, log_inv_delta / am1, math.log1p(-1.0 / alpha),
             -math.log(alpha) / am1)
    return sum(terms) + _CKS_ROUNDING * sum(abs(term) for term in terms)


def _tcdp_epsilon(rho: float, omega: float, delta: float) -> float:
    """min over orders 1 < alpha <= omega of ``_cks_order_epsilon`` (rho >= 0 allowed): every
    value evaluated is a valid conversion, so the minimum found is valid whatever the search."""
    # The larger of log(1/delta)'s two float forms (``_largest_rho`` says why): epsilon grows in it.
    log_inv_delta = max(-math.log(delta), math.log(1.0 / delta))
    top = math.log((omega - 1.0) * (1.0 - _TCDP_TOP_MARGIN))

    def objective(t: float) -> float:
        return _cks_order_epsilon(1.0 + math.exp(t), rho, log_inv_delta)

    # The unconstrained optimum is near alpha - 1 = sqrt(log(1/delta) / rho) (the classic bound's);
    # scan from far below it (or below the top) up to the top, then refine around the best.
    centre = 0.5 * (math.log(log_inv_delta) - math.log(rho)) if rho > 0 else top
    lo = min(centre, top) - 30.0
    grid = [lo + (top - lo) * i / _TCDP_GRID_STEPS for i in range(_TCDP_GRID_STEPS + 1)]
    values = [objective(t) for t in grid]
    best = min(range(len(grid)), key=values.__getitem__)
    left = grid[max(best - 1, 0)]
    right = grid[min(best + 1, _TCDP_GRID_STEPS)]
    from scipy.optimize import minimize_scalar  # imported when used: 0.3 s
    refined = minimize_scalar(objective, bounds=(left, right), method="bounded",
                              options={"xatol": 1e-12})
    return min(values[best], float(refined.fun), objective(top))


def tcdp_to_approx_dp(rho: float, omega: float, delta: float) -> float:
    """The smallest epsilon such that (rho, omega)-tCDP implies (epsilon, delta)-DP, using only
    the orders the definition bounds.

    (rho, omega)-tCDP (Bun-Dwork-Rothblum-Steinke 2018, Def. 1.1) means D_alpha(M(x) || M(y)) <=
    rho alpha for all neighbours x, y and all 1 < alpha <= omega. Each such order alone gives
    (epsilon_alpha, delta)-DP by Canonne-Kamath-Steinke 2020, Prop. 12 (the single-order
    statement behind the Cor. 13 that ``zcdp_to_approx_dp`` uses), whose proof bounds the
    privacy-loss tail by the single moment E[e^{(alpha - 1) Z}] = e^{(alpha - 1) D_alpha}
    (Markov's inequality on one order; no other order is used), so it applies per order:

        epsilon_alpha = rho alpha + (log(1/delta) + (alpha - 1) log(1 - 1/alpha) - log(alpha))
                        / (alpha - 1).

    We return min over 1 < alpha <= omega of epsilon_alpha (never negative). It is never above the
    standard per-order conversion rho alpha + log(1/delta) / (alpha - 1) (Mironov 2017, Prop. 3;
    BDRS's tCDP-to-DP bound is it minimised over the same range), whose extra terms are the negative
    (alpha - 1) log(1 - 1/alpha) - log(alpha). Unlike ``zcdp_to_approx_dp`` it does not fall to
    0 as rho -> 0: with orders capped at omega, epsilon stays above
    (log(1/delta) + (omega - 1) log(1 - 1/omega) - log(omega)) / (omega - 1) (for rho > 0).
    """
    rho = _non_negative("rho", rho)
    omega = _omega(omega)
    delta = _delta(delta)
    if rho == 0.0:
        return 0.0  # D_alpha = 0 at any order means identical outputs: (0, 0)-DP
    return max(0.0, _tcdp_epsilon(rho, omega, delta))


def approx_dp_to_tcdp(epsilon: float, delta: float, omega: float) -> float:
    """The largest rho such that (rho, omega)-tCDP implies (epsilon, delta)-DP by
    ``tcdp_to_approx_dp``; the rho returned satisfies ``tcdp_to_approx_dp(rho, omega, delta) <=
    epsilon`` as computed (a bisection that keeps its lower end feasible).

    Raises InvalidParameterError when no rho > 0 can: the orders up to omega alone cannot reach
    a delta that small at that epsilon (e.g. omega = 10, (0.5, 1e-6)); a larger omega, delta or
    epsilon is needed.
    """
    epsilon, delta, omega = check_tcdp_request(epsilon, delta, omega)

    def feasible(rho: float) -> bool:
        return _tcdp_epsilon(rho, omega, delta) <= epsilon

    lo, hi = 0.0, epsilon
    while feasible(hi):
        lo, hi = hi, 2.0 * hi
    for _ in range(2000):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if feasible(mid):
            lo = mid
        else:
            hi = mid
    if not lo > 0.0:  # pragma: no cover - floor < epsilon leaves room for some rho > 0
        raise InvalidParameterError(f"no rho > 0 meets ({epsilon:g}, {delta:g}) at omega={omega:g}")
    return lo


def check_tcdp_request(epsilon: float, delta: float, omega: float) -> tuple[float, float, float]:
    """``(epsilon, delta, omega)`` validated as a request some (rho, omega)-tCDP budget meets
    (``approx_dp_to_tcdp`` finds the largest), without computing that rho.

    Raises InvalidParameterError on a non-positive epsilon, a delta outside (0, 1), omega <= 1,
    or when no rho > 0 can meet the request: the orders up to omega give an epsilon above the
    request's even as rho -> 0.
    """
    epsilon = _positive("epsilon", epsilon)
    delta = _delta(delta)
    omega = _omega(omega)
    floor = _tcdp_epsilon(0.0, omega, delta)
    if not floor < epsilon:
        raise InvalidParameterError(
            f"(rho, omega={omega:g})-tCDP cannot give ({epsilon:g}, {delta:g})-DP for any "
            f"rho > 0: it bounds the Renyi divergence only at orders up to omega, and those "
            f"give epsilon >= {floor:.4g} at delta={delta:g} even as rho -> 0. Omega is too "
            f"small for that delta: use a larger omega, a larger delta or epsilon, or a zCDP "
            f"noise"
        )
    return epsilon, delta, omega


__all__ += ["approx_dp_to_tcdp", "check_tcdp_request", "tcdp_to_approx_dp"]
