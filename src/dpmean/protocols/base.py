"""What every protocol estimator shares: the trust model and guarantee recorded in the result,
and budgets in (epsilon, delta) for protocols without a zCDP guarantee (IOME section 5)."""

from __future__ import annotations

from typing import Any, ClassVar

from ..accounting import check_budget_request, zcdp_to_approx_dp
from ..budget import Budget
from ..diagnostics import Diagnostic, Kind
from ..estimators.base import MeanEstimator
from ..validation import check_fraction

DEFAULT_DELTA = 1e-9
"""The delta a rho budget is converted at for (epsilon, delta) protocols (IOME section 6.2)."""

COORDINATE_BUDGET = {
    "coordinate_epsilon": Diagnostic(Kind.FLOAT, "The epsilon each coordinate's protocol ran "
                                     "with."),
    "coordinate_delta": Diagnostic(Kind.FLOAT, "The delta each coordinate's protocol ran with."),
}
"""The diagnostics of protocols that split their (epsilon, delta) over the coordinates."""


class ProtocolEstimator(MeanEstimator):
    """A mean estimated by simulating a local or shuffle protocol on every user's row.

    ``model`` ("local" or "shuffle") is recorded in ``diagnostics["model"]`` and ``notion`` in
    the result's budget. Subclasses read rows only through ``Engine.user_rows``, hand each block
    to the users' randomisers and give the analyser only the messages.
    """

    model: ClassVar[str]
    declared_diagnostics = {
        "model": Diagnostic(Kind.TEXT, "The trust model: \"local\" or \"shuffle\"."),
    }
    # The users' randomisers work on their rows in the data's units (GRS's sigma is in them).
    box_normalised = False
    finds_bounds = False  # a private box is a central-model release: give the bounds
    shifts_far_box = False  # each user randomises their own row, in the data's units

    def grant(self, rho: float | None, epsilon: float | None, delta: float | None) -> Budget:
        # A local zCDP protocol takes its budget exactly as the central estimators do.
        budget = super().grant(rho, epsilon, delta)
        return Budget(self.notion, rho=budget.rho, epsilon=epsilon, delta=delta)

    def describe(self, diagnostics: dict[str, Any]) -> dict[str, Any]:
        return {"model": self.model, **diagnostics}


class ApproxDPProtocol(ProtocolEstimator):
    """A protocol whose guarantee is (epsilon, delta)-DP; the ledger is kept in epsilon and
    delta is split alongside it in the same proportions.

    Budget: ``epsilon`` and ``delta``; or ``rho``, converted to the (epsilon, delta) it implies
    (Canonne-Kamath-Steinke) at ``delta`` (default 1e-9, as IOME's local experiments). The
    result's budget then holds that epsilon and delta, and no rho.
    """

    def check_budget(self, rho: float | None, epsilon: float | None, delta: float | None) -> None:
        if rho is None:
            check_budget_request(None, epsilon, delta)  # the pair, with its messages
            return
        check_budget_request(rho, epsilon)  # a positive rho, never with epsilon
        if delta is not None:
            check_fraction(delta, "delta")  # the delta to convert rho at

    def grant(self, rho: float | None, epsilon: float | None, delta: float | None) -> Budget:
        if rho is not None:
            delta = DEFAULT_DELTA if delta is None else delta
            epsilon = zcdp_to_approx_dp(rho, delta)
        assert epsilon is not None and delta is not None
        return Budget(self.notion, epsilon=float(epsilon), delta=float(delta))

    @property
    def epsilon(self) -> float:
        """The granted epsilon (the ledger's unit)."""
        assert self.budget.epsilon is not None
        return self.budget.epsilon

    @property
    def delta(self) -> float:
        """The granted delta."""
        assert self.budget.delta is not None
        return self.budget.delta
