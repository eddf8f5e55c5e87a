"""What every protocol estimator shares: the trust model and guarantee recorded in the result,
and budgets in (epsilon, delta) for protocols without a zCDP guarantee (IOME section 5)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from ..accounting import resolve_budget, zcdp_to_approx_dp
from ..estimators.base import MeanEstimator
from ..result import MeanResult
from ..validation import check_fraction

DEFAULT_DELTA = 1e-9
"""The delta a rho budget is converted at for (epsilon, delta) protocols (IOME section 6.2)."""


class ProtocolEstimator(MeanEstimator):
    """A mean estimated by simulating a local or shuffle protocol on every user's row.

    ``model`` ("local" or "shuffle") and ``notion`` are recorded in the result (its ``notion``
    and ``diagnostics["model"]``). Subclasses read rows only through ``Engine.user_rows``, hand
    each block to the users' randomisers and give the analyser only the messages.
    """

    model: ClassVar[str]
    notion: ClassVar[str]

    def estimate(self, x: Any) -> MeanResult:
        result = super().estimate(x)
        diagnostics = {"model": self.model, **result.diagnostics}
        return replace(result, notion=self.notion, diagnostics=diagnostics)


class ApproxDPProtocol(ProtocolEstimator):
    """A protocol whose guarantee is (epsilon, delta)-DP; the ledger is kept in epsilon and
    delta is split alongside it in the same proportions.

    Budget: ``epsilon`` and ``delta``; or ``rho``, converted to the (epsilon, delta) it implies
    (Canonne-Kamath-Steinke) at ``delta`` (default 1e-9, as IOME's local experiments).
    """

    def __init__(self, rho: float | None = None, *, epsilon: float | None = None,
                 delta: float | None = None, **common: Any) -> None:
        if rho is not None:
            rho = resolve_budget(rho)
            delta = DEFAULT_DELTA if delta is None else check_fraction(delta, "delta")
            if epsilon is not None:
                resolve_budget(rho, epsilon)  # raises: both given
            epsilon = zcdp_to_approx_dp(rho, delta)
        else:
            resolve_budget(None, epsilon, delta)  # validates the pair, with its messages
        super().__init__(epsilon, **common)
        self.epsilon, self.delta = float(epsilon), float(delta)
