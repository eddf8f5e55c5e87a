"""The ledger as a protocol's randomisers see it: every call charges the per-user cost of its
round, and the round is charged once."""

from __future__ import annotations

from ..accounting import PrivacyLedger
from ..errors import PrivacyAccountingError


class RoundLedger:
    """An estimator's ledger seen through the rounds of a local or shuffle protocol.

    A protocol draws one round in several randomiser calls: block by block of users (the engine
    streams rows) and, in GRS, coordinate by coordinate. Each call charges what the whole round
    costs one user (its ``RoundBudget``: a call that answers one of a user's d coordinates
    states the cost of all d). Users of different blocks are different people, so the round
    costs each user what one call does (parallel composition), not the sum: the first charge of
    a stage goes to the estimator's ledger (which refuses an unplanned stage or an overspend),
    and every later call of the stage must state the same cost, or some users would spend what
    was never charged. (GRS's groups are disjoint and each answers one of its rounds, so its
    rounds share one stage and one ``RoundLedger``; IOME's rounds are each their own.)

    Parameters
    ----------
    ledger : PrivacyLedger
        The estimator's ledger, with the protocol's stages planned.
    """

    def __init__(self, ledger: PrivacyLedger) -> None:
        self._ledger = ledger
        self._charged: dict[str, float] = {}

    @property
    def unit(self) -> str:
        """The ledger's unit: "rho" or "epsilon"."""
        return self._ledger.unit

    def charge(self, stage: str, amount: float) -> float:
        """Charge ``amount`` to ``stage`` if it is the round's first call; else check that it is
        the amount charged. Returns ``amount``.

        Raises
        ------
        PrivacyAccountingError
            A later call stating another cost, or (from the ledger) an unplanned stage.
        BudgetExceededError
            (From the ledger) a first charge above the stage's plan.
        """
        if stage not in self._charged:
            self._charged[stage] = self._ledger.charge(stage, amount)
        elif amount != self._charged[stage]:
            raise PrivacyAccountingError(
                f"a randomiser of stage {stage!r} costs {self.unit}={amount:.6g} per user, but "
                f"its round charged {self.unit}={self._charged[stage]:.6g}")
        return amount


Ledger = PrivacyLedger | RoundLedger
"""What a randomiser charges: an estimator's ledger (one call is the whole round, as in the
tests), or a protocol's ``RoundLedger``."""
