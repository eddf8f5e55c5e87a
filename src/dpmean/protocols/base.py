"""What every protocol estimator shares: the trust model and guarantee recorded in the result,
and budgets in (epsilon, delta) for protocols without a zCDP guarantee (IOME section 5)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np

from ..accounting import check_budget_request, warn_if_large_delta, zcdp_to_approx_dp
from ..budget import Budget
from ..diagnostics import Diagnostic, Kind
from ..engines import Engine
from ..estimators.base import MeanEstimator
from ..transforms import View
from ..validation import check_fraction

DEFAULT_DELTA = 1e-9
"""The delta a rho budget is converted at for (epsilon, delta) protocols (IOME section 6.2)."""

COORDINATE_BUDGET = {
    "coordinate_epsilon": Diagnostic(Kind.FLOAT, "The epsilon each coordinate's protocol ran "
                                     "with."),
    "coordinate_delta": Diagnostic(Kind.FLOAT, "The delta each coordinate's protocol ran with."),
}
"""The diagnostics of protocols that split their (epsilon, delta) over the coordinates."""

RELEASE_NOISE = {
    "noise_std": Diagnostic(Kind.VECTOR, "The release's noise standard deviation per "
                            "coordinate (at most, where a rounding's is bounded), in the "
                            "data's units; not its clipping bias (the release warnings read "
                            "it)."),
}
"""The diagnostic of a local protocol that states its release's noise (public: from n, the
budget and its clipping)."""

USER_BLOCK_BYTES = 1 << 20
"""The float64 bytes of one block of users handed to the randomisers at once (the in-memory
engine's own row blocks, so its releases are those it gave before the blocks were fixed)."""


def user_blocks(engine: Engine, view: View) -> Iterator[np.ndarray]:
    """The finished view rows of every user (``Engine.user_rows``) in blocks of a fixed
    number of rows set by the public (n, width) alone.

    Why: the randomisers draw block by block (a block's coins, then its noise), so blocks that
    followed the engine (a memory engine's cache blocks, a file's chunks, a dask array's
    chunks) gave another release for the same seed on each engine. Blocks of a public size
    make the draws, and so the release, the same on every engine.
    """
    width = view.output_dim(engine.d)
    size = max(1, USER_BLOCK_BYTES // (8 * max(width, 1)))
    held: list[np.ndarray] = []
    count = 0
    for block in engine.user_rows(view):
        while block.shape[0]:
            take = min(size - count, block.shape[0])
            held.append(block[:take])
            count += take
            block = block[take:]
            if count == size:
                yield held[0] if len(held) == 1 else np.concatenate(held)
                held, count = [], 0
    if held:
        yield held[0] if len(held) == 1 else np.concatenate(held)


class ProtocolEstimator(MeanEstimator):
    """A mean estimated by simulating a local or shuffle protocol on every user's row.

    ``model`` ("local" or "shuffle") is recorded in ``diagnostics["model"]`` and ``notion`` in
    the result's budget. Subclasses read rows only through ``user_blocks`` (``Engine.user_rows``
    in blocks of a public size), hand each block to the users' randomisers and give the
    analyser only the messages.
    """

    model: ClassVar[str]
    declared_diagnostics = {
        "model": Diagnostic(Kind.TEXT, "The trust model: \"local\" or \"shuffle\"."),
    }
    # The users' randomisers work on their rows in the data's units (GRS's sigma is in them);
    # IOME's protocols, which take no parameter in those units, in units of each column's
    # range (``box_normalised``), as the central estimators.
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
            warn_if_large_delta(float(delta))  # as for a pair (it was silent here: a review)

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
