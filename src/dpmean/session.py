"""``Session``: one privacy budget composed across several releases about the same data.

A session is opened with a total budget, either ``Session(rho=...)`` (a zCDP session, composed
in rho) or ``Session(epsilon=..., delta=...)`` (an approximate-DP session). Every release names
its own budget explicitly; the session charges the guarantee the estimator is granted (its
``Budget``, known from the request and the method alone) and refuses, with
``BudgetExceededError`` and before the data is read, any release that would take the composed
total over the session's budget.

The composition rules are the privacy argument; they are stated on ``Session`` and implemented
in ``Session._cost`` (zCDP sessions) and ``Session._composed_epsilon`` (approximate-DP sessions).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .accounting import _exceeds, pure_dp_to_zcdp, zcdp_to_approx_dp
from .api import build_estimator
from .budget import Budget
from .errors import BudgetExceededError, InvalidParameterError
from .result import MeanResult

SESSION_VERSION = 1

# A release is charged when it is reserved and stays charged whatever happens next.
STATUSES = ("reserved", "released", "failed")

_CENTRAL_ONLY = (
    "local and shuffle releases are guarantees in a different trust model (each user's "
    "messages, or the shuffled transcript) and do not compose with central releases in one "
    "budget"
)


@dataclass(frozen=True)
class Release:
    """One entry of a session's ledger.

    Attributes
    ----------
    index : int
        Its position in the ledger (0, 1, ...).
    method : str
        The estimator's ``method=`` name.
    budget : Budget
        The guarantee the release was granted: what the session charges.
    spent : float
        What the estimator's own ledger spent, in ``budget.unit`` (at most ``budget.total``);
        for a "reserved" or "failed" release, the whole granted total.
    status : str
        "reserved" (charged, the release has not finished: it may have crashed), "released"
        or "failed" (an error after the budget check; the data may have been read, so it is
        charged in full).
    """

    index: int
    method: str
    budget: Budget
    spent: float
    status: str = "released"

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "method": self.method, "budget": self.budget.to_dict(),
                "spent": self.spent, "status": self.status}


class Session:
    """A privacy budget composed across releases of the same data.

    ``Session(rho=R)`` is a rho-zCDP session; ``Session(epsilon=E, delta=D)`` an
    (epsilon, delta)-DP session. Each release is charged its granted ``Budget`` (not the
    possibly smaller amount its ledger used), so the composed guarantee below holds for the
    whole sequence of releases, adaptively chosen, under the replace-one relation.

    Composition in a zCDP session (Bun-Steinke 2016, Lemma 2.3 and Prop. 1.4):

    - a "zCDP" release adds its rho;
    - a "pure-DP" release of epsilon is epsilon^2/2-zCDP and adds that;
    - anything else is refused: an (epsilon, delta)-DP or tCDP release has no valid conversion
      to zCDP (tCDP bounds only the Renyi orders up to omega), and local or shuffle releases
      hold in a different trust model.

    Composition in an (epsilon, delta) session (``_composed_epsilon``):

    - the "zCDP" releases' rhos are summed (zCDP composition) and the sum is converted once,
      ``epsilon_z = zcdp_to_approx_dp(sum rho, delta_z)`` (Canonne-Kamath-Steinke 2020);
    - "approx-DP" releases add (epsilon_i, delta_i) and "pure-DP" ones (epsilon_i, 0) by basic
      composition (Dwork-Roth 2014, Thm. 3.16), which composes with the zCDP part's
      (epsilon_z, delta_z) the same way;
    - the session's delta is split: delta_z = delta - sum delta_i; the total is
      epsilon_z + sum epsilon_i, which must be at most the session's epsilon (a zCDP release
      is refused when sum delta_i already takes all of delta);
    - tCDP, local and shuffle releases are refused (tCDP could be composed at a fixed omega and
      converted with ``tcdp_to_approx_dp``; not implemented).

    A release's per-release budget must be given explicitly. The check uses only the request
    and the method (the estimator is built, which grants its ``Budget``, but ``estimate`` is
    not called), so a refused release never reads the data. An accepted release is charged
    before its estimator runs; if the estimator then raises, the release stays charged (status
    "failed"): the data may have been read.
    """

    def __init__(self, rho: float | None = None, *, epsilon: float | None = None,
                 delta: float | None = None) -> None:
        if rho is not None:
            if epsilon is not None or delta is not None:
                raise InvalidParameterError("a session takes rho, or epsilon with delta, not both")
            self._budget = Budget.zcdp(rho)
        elif epsilon is not None and delta is not None:
            self._budget = Budget.approx_dp(epsilon, delta)
        else:
            raise InvalidParameterError(
                "a session needs its total budget: Session(rho=R) for zCDP, or "
                "Session(epsilon=E, delta=D) for (epsilon, delta)-DP"
            )
        self._releases: list[Release] = []

    # ----------------------------------------------------------------------------------------
    # What the session holds

    @property
    def budget(self) -> Budget:
        """The session's total budget ("zCDP" or "approx-DP")."""
        return self._budget

    @property
    def unit(self) -> str:
        """"rho" for a zCDP session, "epsilon" for an (epsilon, delta) session."""
        return self._budget.unit

    @property
    def ledger(self) -> list[Release]:
        """Every release charged so far (a copy), in order."""
        return list(self._releases)

    @property
    def spent(self) -> float:
        """The composed cost of every charged release, in ``unit``: the sum of rho (zCDP
        session) or the composed epsilon at the session's delta (approximate-DP session)."""
        return self._total([r.budget for r in self._releases])

    @property
    def remaining(self) -> float:
        """``budget.total - spent``, never negative, in ``unit``.

        In a zCDP session it is the rho any further zCDP release may still take. In an
        (epsilon, delta) session it is the epsilon not yet used under the current composition;
        since zCDP releases are converted together, the next release's admissible epsilon or
        rho is not simply this number: ``check`` says whether a given release fits.
        """
        return max(0.0, self._budget.total - self.spent)

    # ----------------------------------------------------------------------------------------
    # Releasing

    def mean(self, x: Any, /, *, rho: float | None = None, epsilon: float | None = None,
             delta: float | None = None, method: str = "iome", **options: Any) -> MeanResult:
        """Release ``dpmean.mean(x, rho=.. | epsilon=.., delta=.., method=.., **options)`` and
        charge it to the session.

        Raises BudgetExceededError, before ``x`` is read, when the release does not fit (see
        the class docstring), and InvalidParameterError when no per-release budget is given.
        If the estimator raises after the check, the release stays charged (status "failed").
        """
        if rho is None and epsilon is None and delta is None:
            raise InvalidParameterError(
                "give this release's own budget (rho=, or epsilon= and delta=); a session never "
                "spends 'all that remains' by default"
            )
        estimator = build_estimator(method, rho, epsilon=epsilon, delta=delta, **options)
        index = self.reserve(estimator.method, estimator.budget)
        try:
            result = estimator.estimate(x)
        except BaseException:
            self.settle(index, "failed")
            raise
        self.settle(index, "released", result.spent)
        return result

    def check(self, budget: Budget) -> None:
        """Raise BudgetExceededError (or InvalidParameterError for an incompatible notion) if a
        release granted ``budget`` would not fit in what remains. Reads no data."""
        self._admit(budget)
        total = self._total([*(r.budget for r in self._releases), budget])
        if _exceeds(total, self._budget.total):
            before = self.spent
            raise BudgetExceededError(
                f"this release ({budget}) would take the session to {total:.6g} {self.unit} "
                f"composed, over its budget {self._budget} ({before:.6g} already spent, "
                f"{self.remaining:.6g} remaining); refused before reading the data"
            )

    def reserve(self, method: str, budget: Budget) -> int:
        """Check ``budget`` and charge it as a "reserved" release; return its index."""
        self.check(budget)
        index = len(self._releases)
        self._releases.append(Release(index, method, budget, budget.total, "reserved"))
        return index

    def settle(self, index: int, status: str, spent: float | None = None) -> None:
        """Record the outcome of reserved release ``index``: "released" (with the estimator's
        ``spent``) or "failed" (charged in full). The charge itself never changes."""
        release = self._releases[index]
        if release.status != "reserved":
            raise InvalidParameterError(f"release {index} is already {release.status}")
        if status not in ("released", "failed"):
            raise InvalidParameterError(f"a release settles as released or failed, not {status}")
        if status == "failed" or spent is None:
            spent = release.budget.total
        self._releases[index] = replace(release, status=status, spent=float(spent))

    # ----------------------------------------------------------------------------------------
    # Composition

    def _admit(self, budget: Budget) -> None:
        if not isinstance(budget, Budget):
            raise InvalidParameterError(f"a release's budget must be a Budget, got "
                                        f"{type(budget).__name__}")
        notion = budget.notion
        if notion.startswith(("local-", "shuffle-")):
            raise InvalidParameterError(f"cannot charge a {notion} release to a session: "
                                        f"{_CENTRAL_ONLY}")
        if self.unit == "rho" and notion not in ("zCDP", "pure-DP"):
            why = ("tCDP bounds only the Renyi orders up to omega, which is not zCDP"
                   if notion == "tCDP" else
                   "(epsilon, delta)-DP does not imply zCDP for any rho")
            raise InvalidParameterError(
                f"cannot charge a {notion} release to a zCDP session: {why}. Open an "
                f"(epsilon, delta) session (Session(epsilon=..., delta=...)) instead"
            )
        if self.unit == "epsilon" and notion not in ("zCDP", "pure-DP", "approx-DP"):
            raise InvalidParameterError(
                f"cannot charge a {notion} release to an (epsilon, delta) session: composing "
                f"tCDP releases is not implemented"
            )

    def _total(self, budgets: Sequence[Budget]) -> float:
        if self.unit == "rho":
            return math.fsum(self._cost(b) for b in budgets)
        return self._composed_epsilon(budgets)

    @staticmethod
    def _cost(budget: Budget) -> float:
        """A release's rho in a zCDP session: rho for zCDP, epsilon^2/2 for pure DP."""
        if budget.notion == "zCDP":
            assert budget.rho is not None
            return budget.rho
        assert budget.notion == "pure-DP" and budget.epsilon is not None
        return pure_dp_to_zcdp(budget.epsilon)

    def _composed_epsilon(self, releases: Iterable[Budget]) -> float:
        """The epsilon the releases compose to at the session's delta (``math.inf`` when the
        approximate-DP releases' deltas leave none for the zCDP ones). One place, so an exact
        (PLD) accountant can replace it."""
        session_delta = self._budget.delta
        assert session_delta is not None
        rho = 0.0
        epsilons: list[float] = []
        deltas: list[float] = []
        for budget in releases:
            if budget.notion == "zCDP":
                assert budget.rho is not None
                rho += budget.rho
            elif budget.notion == "pure-DP":
                assert budget.epsilon is not None
                epsilons.append(budget.epsilon)
            else:
                assert budget.notion == "approx-DP"
                assert budget.epsilon is not None and budget.delta is not None
                epsilons.append(budget.epsilon)
                deltas.append(budget.delta)
        delta_used = math.fsum(deltas)
        if _exceeds(delta_used, session_delta):
            return math.inf
        epsilon = math.fsum(epsilons)
        if rho > 0.0:
            delta_z = session_delta - delta_used
            if delta_z <= 0.0:
                return math.inf
            epsilon += zcdp_to_approx_dp(rho, delta_z)
        return epsilon

    # ----------------------------------------------------------------------------------------
    # Saving and loading

    def to_dict(self) -> dict[str, Any]:
        """The session as JSON-ready data: version, budget, releases and the composed spent."""
        return {"version": SESSION_VERSION, "budget": self._budget.to_dict(),
                "releases": [r.to_dict() for r in self._releases], "spent": self.spent}

    @classmethod
    def from_dict(cls, data: Any) -> Session:
        """The inverse of ``to_dict``. Raises InvalidParameterError on anything inconsistent:
        unknown version or fields, a bad budget, indices out of order, a negative or too large
        ``spent``, a recorded total that differs from the releases' composition, or releases
        that overspend the budget."""
        def bad(why: str) -> InvalidParameterError:
            return InvalidParameterError(f"not a valid dpmean session: {why}")

        if not isinstance(data, dict):
            raise bad("expected a mapping")
        if set(data) != {"version", "budget", "releases", "spent"}:
            raise bad("expected exactly the fields version, budget, releases, spent")
        if data["version"] != SESSION_VERSION or isinstance(data["version"], bool):
            raise bad(f"unknown version {data['version']!r} (this dpmean reads "
                      f"{SESSION_VERSION})")
        budget = Budget.from_dict(data["budget"])
        if budget.notion == "zCDP":
            session = cls(rho=budget.rho)
        elif budget.notion == "approx-DP":
            session = cls(epsilon=budget.epsilon, delta=budget.delta)
        else:
            raise bad(f"a session's budget is zCDP or approx-DP, not {budget.notion}")
        releases = data["releases"]
        if not isinstance(releases, list):
            raise bad("releases must be a list")
        for position, entry in enumerate(releases):
            if not isinstance(entry, dict) or set(entry) != {"index", "method", "budget",
                                                             "spent", "status"}:
                raise bad(f"release {position} must have index, method, budget, spent, status")
            if entry["index"] != position or isinstance(entry["index"], bool):
                raise bad(f"release {position} has index {entry['index']!r}")
            if not isinstance(entry["method"], str) or not entry["method"]:
                raise bad(f"release {position} has no method name")
            if entry["status"] not in STATUSES:
                raise bad(f"release {position} has unknown status {entry['status']!r}")
            release_budget = Budget.from_dict(entry["budget"])
            spent = _number(entry["spent"], f"release {position}'s spent", bad)
            if spent < 0 or _exceeds(spent, release_budget.total):
                raise bad(f"release {position} spent {spent:g}, outside [0, its budget "
                          f"{release_budget.total:g}]")
            try:
                session._admit(release_budget)
            except InvalidParameterError as exc:
                raise bad(f"release {position}: {exc}") from None
            session._releases.append(Release(position, entry["method"], release_budget,
                                             spent, entry["status"]))
        recorded = _number(data["spent"], "spent", bad)
        actual = session.spent
        if not math.isfinite(actual) or abs(recorded - actual) > 1e-9 * max(1.0, abs(actual)):
            raise bad(f"the recorded total {recorded:g} differs from the releases' "
                      f"composition {actual:g}")
        if _exceeds(actual, budget.total):
            raise bad(f"its releases compose to {actual:g} {session.unit}, over the budget "
                      f"{budget}")
        return session

    def __repr__(self) -> str:
        return (f"Session({self._budget}, {len(self._releases)} releases, spent "
                f"{self.spent:.6g} {self.unit}, remaining {self.remaining:.6g})")


def _number(value: Any, name: str, bad: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(
            value):
        raise bad(f"{name} must be a finite number, got {value!r}")
    return float(value)
