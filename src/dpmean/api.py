"""``dpmean.mean``: one call for every estimator, by ``method=`` name."""

from __future__ import annotations

import inspect
from typing import Any

from .errors import InvalidParameterError
from .estimators import MeanEstimator
from .registry import ESTIMATORS
from .result import MeanResult
from .rng import RandomState


def available_methods() -> list[str]:
    """The ``method=`` names ``mean`` accepts."""
    return sorted(ESTIMATORS)


def mean(
    x: Any,
    /,
    rho: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    method: str = "iome",
    bounds: Any = None,
    random_state: RandomState = None,
    **options: Any,
) -> MeanResult:
    """Release a differentially private mean of the rows of ``x``.

    Args:
        x: array of shape (n, d) (or (n,) for one variable).
        rho: the zCDP budget; or give ``epsilon`` and ``delta`` instead.
        method: one of ``available_methods()``; ``"iome"`` (default) is instance-optimal.
        bounds: ``(lo, hi)``, scalars or length-d arrays: the public a priori box.
        random_state: None for a real release (secure, OS-keyed); an int only for experiments.
        **options: the estimator's own parameters (see its class, e.g. ``ShiftedClippedMean``).

    Returns:
        A ``MeanResult`` whose ledger sums to at most the budget.
    """
    estimator = build_estimator(method, rho, epsilon=epsilon, delta=delta, bounds=bounds,
                                random_state=random_state, **options)
    return estimator.estimate(x)


def build_estimator(
    method: str,
    rho: float | None = None,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    bounds: Any = None,
    random_state: RandomState = None,
    **options: Any,
) -> MeanEstimator:
    """The estimator ``mean`` would run, built without touching any data: its ``budget`` is the
    typed guarantee the release will have (what a ``Session`` charges before reading data)."""
    cls = ESTIMATORS.get(method) if isinstance(method, str) else None
    if cls is None:
        raise InvalidParameterError(
            f"unknown method {method!r}; choose one of {', '.join(available_methods())}"
        )
    _check_options(cls, options)
    return cls(rho, epsilon=epsilon, delta=delta, bounds=bounds, random_state=random_state,
               **options)


def _check_options(cls: type[MeanEstimator], options: dict[str, Any]) -> None:
    allowed = set()
    for klass in cls.__mro__:
        if "__init__" in vars(klass):
            params = inspect.signature(vars(klass)["__init__"]).parameters.values()
            allowed |= {p.name for p in params if p.kind is p.KEYWORD_ONLY}
    allowed -= {"epsilon", "delta", "bounds", "random_state"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise InvalidParameterError(
            f"unknown option(s) {', '.join(unknown)} for method {cls.method!r}; "
            f"it accepts {', '.join(sorted(allowed)) or 'no options'}"
        )
