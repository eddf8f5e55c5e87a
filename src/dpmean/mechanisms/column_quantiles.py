"""Private quantiles of many columns at once, by the exponential mechanism or by PrivQuant's
binary search (PLAN sec. 7.1; IOME Algorithm 1), charged once for all columns.

Columns may arrive in blocks, as an engine's column questions give them; the mechanism charges
the whole stage (k columns, ``rho_each`` each) before the first block is drawn.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..accounting import PrivacyLedger
from ..errors import InvalidParameterError
from ..events import exponential_event
from .exponential import OrderStatistics, as_columns, exponential_draws, exponential_epsilon
from .quantiles import real_search, search_cost, search_cost_event

QUANTILE_METHODS = ("exponential", "binary-search")


def check_quantile_method(method: object) -> str:
    """``method`` if it is one of ``QUANTILE_METHODS``; InvalidParameterError otherwise."""
    if method not in QUANTILE_METHODS:
        raise InvalidParameterError(
            f"quantile must be one of {', '.join(QUANTILE_METHODS)}, got {method!r}"
        )
    return str(method)


def _column_draws(
    values: np.ndarray, q: float, lo: np.ndarray | float, hi: np.ndarray | float, *,
    rho_each: float, rng: np.random.Generator, method: str, steps: int, sensitivity: float,
    secure: bool, presorted: bool,
) -> np.ndarray:
    values, lo, hi = as_columns(values, lo, hi)
    if method == "exponential":
        return exponential_draws(values, lo, hi, q, rho=rho_each, rng=rng,
                                 sensitivity=sensitivity, presorted=presorted)

    def count_le(t: np.ndarray) -> np.ndarray:
        return np.count_nonzero(values <= t, axis=0)

    return real_search(count_le, q * len(values), lo, hi, steps=steps,
                       rho_per_search=rho_each, rng=rng, secure=secure,
                       sensitivity=sensitivity)


def column_quantiles(
    blocks: Iterable[tuple[slice, np.ndarray]] | OrderStatistics, k: int, q: float,
    lo: np.ndarray | float, hi: np.ndarray | float, *, rho_each: float, rng: np.random.Generator,
    ledger: PrivacyLedger, stage: str, method: str = "exponential", steps: int = 20,
    sensitivity: float = 1.0, secure: bool = False, presorted: bool = False,
) -> np.ndarray:
    """A private q-quantile of each of k columns, the columns arriving in blocks
    (cols, values (m, width)), column j on the public interval [lo_j, hi_j].

    ``method="exponential"``: the exponential mechanism (``exponential_quantile``; blocks whose
    widths are multiples of ``columns_per_draw`` give the very draws of one call on all
    columns; ``presorted``: every column arrives sorted ascending, best as the transpose of a
    C-ordered array, and is not sorted again; ``blocks`` may also be an ``OrderStatistics`` of
    all k columns, read by rank where they are, with the same draws). ``"binary-search"``:
    PrivQuant on the real interval with ``steps`` halvings; the noise of each count is scaled
    to ``sensitivity``. ``secure=True`` noises those counts with the exact discrete Gaussian;
    the exponential mechanism has no secure path (its draws are floating point whatever
    ``secure`` says; see docs/privacy.md).

    Privacy: each column is ``rho_each``-zCDP when replacing one person moves each column's
    ranks by at most ``sensitivity``; the k columns cost k * rho_each, charged to ``stage``
    before the first draw.
    """
    check_quantile_method(method)
    if method == "exponential":
        exponential_epsilon(rho_each)  # validates before charging
    lo = np.broadcast_to(np.asarray(lo, dtype=np.float64), (k,))
    hi = np.broadcast_to(np.asarray(hi, dtype=np.float64), (k,))
    if isinstance(blocks, OrderStatistics) and method != "exponential":
        raise InvalidParameterError("order statistics are read by the exponential "
                                    "mechanism only; give column blocks to binary-search")
    if method == "exponential":
        ledger.charge(stage, search_cost(lo, rho_each), exponential_event(rho_each, k))
    else:
        ledger.charge(stage, *search_cost_event(lo, rho_each, secure))
    if isinstance(blocks, OrderStatistics):
        return exponential_draws(blocks, lo, hi, q, rho=rho_each, rng=rng,
                                 sensitivity=sensitivity)
    out = np.empty(k)
    for cols, values in blocks:
        out[cols] = _column_draws(values, q, lo[cols], hi[cols], rho_each=rho_each, rng=rng,
                                  method=method, steps=steps, sensitivity=sensitivity,
                                  secure=secure, presorted=presorted)
    return out
