"""A ledger for tests that call one mechanism directly, outside an estimator."""

from dpmean.accounting import PrivacyLedger

# Large enough for any mechanism a test calls (many searches, many simulated releases).
_PLENTY = 1e12


def stage(name: str = "test") -> dict:
    """Keyword arguments ``ledger=``, ``stage=`` for one mechanism call: a fresh ledger with
    one planned stage that any single charge fits."""
    ledger = PrivacyLedger(_PLENTY)
    ledger.plan({name: _PLENTY})
    return {"ledger": ledger, "stage": name}
