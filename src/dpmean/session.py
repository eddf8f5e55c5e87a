"""``Session``: one privacy budget composed across several releases about the same data.

A session is opened with a total budget, either ``Session(rho=...)`` (a zCDP session, composed
in rho) or ``Session(epsilon=..., delta=...)`` (an approximate-DP session). Every release names
its own budget explicitly; the session charges the guarantee the estimator is granted (its
``Budget``, known from the request and the method alone) and refuses, with
``BudgetExceededError`` and before the data is read, any release that would take the composed
total over the session's budget.

Each release records, besides its budget, the events an (epsilon, delta) accountant composes
(``dpmean.pld``): one ``GaussianEvent`` for estimators made only of continuous Gaussian stages,
else a ``ZCDPEvent``, ``ApproxDPEvent`` or ``PureDPEvent`` from its notion.

The composition rules are the privacy argument; they are stated on ``Session`` and implemented
in ``Session._cost`` (zCDP sessions) and ``Session._composed_epsilon`` (approximate-DP sessions).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .accounting import _exceeds, pure_dp_to_zcdp, warn_if_large_delta, zcdp_to_approx_dp
from .api import (
    basket_bounds,
    build_estimator,
    check_bounds_names,
    opened_path,
    reader_options,
)
from .budget import Budget
from .errors import (
    BudgetExceededError,
    DPMeanError,
    InvalidDataError,
    InvalidParameterError,
    PrivacyAccountingError,
    fallback_parts,
)
from .events import zcdp_cost
from .pld import (
    ApproxDPEvent,
    ChoiceEvent,
    Event,
    GaussianEvent,
    PureDPEvent,
    ZCDPEvent,
    budget_events,
    compose_epsilon,
)
from .registry import DEFAULT_METHOD, ESTIMATORS
from .result import MeanResult
from .rng import seed_digest
from .tables import data_columns, is_table, series_as_frame, table_data
from .validation import (
    bounds_by_name,
    check_data,
    check_declared_dtype,
    check_sparse_data,
    is_sparse,
)

# 2: every release carries its accountant events. Version 1 files (no events) are still read:
# their releases are accounted by their notion (budget_events), which is what version 1 did.
# The smallest rho ``Session.largest_rho`` tells apart from none.
SMALLEST_RHO = 1e-12
# 4: a seeded release carries its seed's digest (``rng.seed_digest``), refused again by a later
# run on the same ledger file; versions 1-3 are read with no seeds recorded.
SESSION_VERSION = 4
READABLE_VERSIONS = (1, 2, 3, 4)

# The notions a central session composes; others are refused by Session._admit.
_CENTRAL_NOTIONS = ("zCDP", "pure-DP", "approx-DP")

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
    events : tuple of dpmean.pld events
        The release as an (epsilon, delta) accountant composes it: ``(GaussianEvent(rho),)``
        for an estimator made only of continuous Gaussian stages, else the events of its
        notion (``pld.budget_events``). Consistent with ``budget`` (checked on entry).
    spent : float
        What the estimator's own ledger spent, in ``budget.unit`` (at most ``budget.total``);
        for a "reserved" or "failed" release, the whole granted total.
    status : str
        "reserved" (charged, the release has not finished: it may have crashed), "released"
        or "failed" (an error after the budget check; the data may have been read, so it is
        charged in full).
    label : str or None
        What the release was of, as its caller named it before reading the data (the command
        line writes the input file, its columns and the time): for an audit of the ledger.
        Public text, never derived from the data's values.
    seed : str or None
        For a release given a ``random_state``, its digest (``rng.seed_digest``): a later
        release with the same noise is refused, in this session or in a later run on its
        saved ledger (the command line's ``--ledger``); None for the secure default.
    """

    index: int
    method: str
    budget: Budget
    spent: float
    status: str = "released"
    events: tuple[Event, ...] = ()
    label: str | None = None
    seed: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "method": self.method, "budget": self.budget.to_dict(),
                "events": [event_to_dict(e) for e in self.events], "spent": self.spent,
                "status": self.status, "label": self.label, "seed": self.seed}


def check_label(label: Any) -> str | None:
    """A release's label: None or a string (InvalidParameterError otherwise)."""
    if label is not None and not isinstance(label, str):
        raise InvalidParameterError(f"a release's label is a string, got "
                                    f"{type(label).__name__}")
    return label


def granted_for(estimator: Any, x: Any, columns: Sequence[str] | str | None = None) -> Any:
    """``estimator.granted`` for the public shape of ``x`` (of its ``columns``), read only when
    the estimator's budget is calibrated to the shape (``calibrates_to_shape``); else, and for
    the protocols, the estimator itself."""
    from .estimators.base import MeanEstimator, public_shape

    if not isinstance(estimator, MeanEstimator) or not estimator.calibrates_to_shape():
        return estimator
    data, _ = data_columns(x, columns)
    try:
        n, d = public_shape(data)
    except InvalidDataError:
        return estimator  # the release refuses it with this error, after the charge
    return estimator.granted(n, d, estimator.reads_baskets(data))


def public_release(estimator: Any, x: Any, columns: Sequence[str] | str | None = None
                   ) -> tuple[Any, Any, Sequence[str] | str | None]:
    """The estimator a session charges for a release of ``x`` (of its ``columns``), and the
    input and columns it then runs on, once everything public about the release is checked.

    The checks read what is public under replace-one neighbours, never a value of the data:
    the requested columns against a table's column names and their declared types, the
    input's shape and dtype (a CSV or basket file's rows counted without judging a value),
    and the estimator's parameters and box for that shape (``MeanEstimator.box``,
    ``budget_plan``). Bounds given by column name are put in the data's column order, as
    ``MeanEstimator.estimate`` puts them, and an (epsilon, delta) budget calibrated to the
    shape is granted (``MeanEstimator.granted``), so that the session charges the estimator
    that runs and the release is the one ``dpmean.mean`` makes with the same seed.

    Parameters
    ----------
    estimator : MeanEstimator
        The release's estimator, built from the request alone (``api.build_estimator``).
    x : array_like, data frame, scipy.sparse matrix, dask array, row source or path
        The data, as ``dpmean.mean`` takes it.
    columns : sequence of str or str, optional
        A table's columns, by name.

    Returns
    -------
    (MeanEstimator, object, sequence of str or str or None)
        The estimator to charge and run, and the input and ``columns`` to pass to its
        ``estimate``. The estimator and ``x`` unchanged when the checks cannot tell (an input
        whose inspection fails with anything but a dpmean error): the release then raises it
        itself, after the charge, as it did before these checks.

    Raises
    ------
    InvalidParameterError, InvalidDataError
        What the release would refuse from public information alone: bounds of the wrong
        length, a column that is not in the table or not numeric, data that is not 1-D or 2-D
        or has no rows, a dtype that is not real numbers, a parameter the shape rules out;
        and too few rows for the budget (the release could only be the fallback).
    """
    from .estimators.base import MeanEstimator

    if not isinstance(estimator, MeanEstimator):
        return estimator, x, columns
    try:
        return _checked(estimator, x, columns)
    except DPMeanError:
        raise
    except Exception:
        # Not dpmean's diagnosis of the request (an object whose attributes fail, a ragged
        # list): charged and left to the release, which raises it as it did before.
        return estimator, x, columns


@dataclass(frozen=True)
class ShapeOnly:
    """A stand-in for data of a public shape only: what ``public_shape`` and calibrating an
    (epsilon, delta) budget to the plan (``granted_for``) read, before any value is."""

    shape: tuple[int, int]


def _checked(estimator: Any, x: Any, columns: Sequence[str] | str | None
             ) -> tuple[Any, Any, Sequence[str] | str | None]:
    """``public_release`` without its fallback."""
    from .estimators.base import public_shape

    # What the estimator reads (its type decides sparse and basket input), None for a table
    # (read as a float64 array of the columns its schema declares numeric).
    data: Any = None
    names: tuple[str, ...] | None
    x = series_as_frame(x)
    if is_table(x):
        empty = _no_rows(x)
        # The columns' names and declared types, from the frame cut to no rows: a pandas
        # column of Python objects has no declared type, and pyarrow would infer one from its
        # values (refused, if need be, after the charge). A frame that cannot be cut is
        # converted whole; its columns' types are declared.
        converted, names = table_data(x if empty is None else empty, columns)
        rows = (converted.shape[0] if empty is None else
                x.num_rows if hasattr(x, "num_rows") else x.shape[0])
        n, d = public_shape(ShapeOnly((int(rows), len(names))))
        run, run_columns = x, columns
    else:
        # Arrays, sparse matrices, dask arrays and row sources as they are (``columns`` only
        # for tables); a path is opened as a row source from its header or metadata, a CSV or
        # basket file's rows counted without judging a value (the release runs on that
        # source: the same rows and names, and a bad value is refused after the charge).
        data, names = data_columns(x, columns)
        n, d = public_shape(data)
        run, run_columns = data, None
    if isinstance(estimator.bounds, Mapping):
        # Ranges by column name in the data's column order, as ``estimate`` puts them: the
        # box checked below and the estimator granted and charged are the one that runs.
        estimator = estimator.with_params(bounds=bounds_by_name(estimator.bounds, names))
    if not estimator.finds_its_box():
        # The box and the budget's split the release takes for (n, d) before reading.
        estimator.box(n, d)
        estimator.budget_plan(n, d)
    check_input_type(estimator, data, d, n)
    baskets = estimator.reads_baskets(data)
    reason = estimator.fallback_reason(n, d, baskets)
    if reason is not None:
        # Too few rows for the budget (public: n, d, the box, the budget): the release could
        # only be the zero vector. Refused before the charge, as the command line refuses it
        # (a user trial: a session charged 0.01 for the box's corner).
        raise InvalidParameterError(
            f"{fallback_parts(reason)[0]}: a session does not charge a release that "
            f"could only be the zero-vector fallback (nothing was charged). Give a larger "
            f"budget or more rows, or call dpmean.mean for the fallback itself")
    return estimator.granted(n, d, baskets), run, run_columns


def _no_rows(table: Any) -> Any:
    """``table`` cut to no rows, its columns and their declared types kept (pyarrow, pandas,
    polars); None for a frame that cannot be cut without converting it."""
    if type(table).__module__.split(".")[0] == "pyarrow":
        return table.slice(0, 0)
    head = getattr(table, "head", None)
    return head(0) if callable(head) else None


def check_input_type(estimator: Any, data: Any, d: int, n: int | None = None) -> None:
    """Refuse, by its type and dtype alone (a stand-in of that dtype is checked, not the data),
    input the release refuses before reading a value: sparse input the estimator does not
    take, an engine for the other kind of input, values that are not real numbers.

    A session calls it before its charge, and the command line with a stand-in of the type
    its reader gives (``cli.estimate``): the estimator's own checks (``check_data``,
    ``check_sparse_data``, ``engines.check_engine_input``), made before it reads a value,
    with their messages.

    Parameters
    ----------
    estimator : MeanEstimator
        The release's estimator (its method, budget and ``engine``).
    data : object
        The input as the estimator receives it, or a stand-in of its type and dtype; None
        for a table, whose columns' types are checked already (read as float64).
    d : int
        The input's number of columns (public).
    n : int, optional
        The number of rows (public), where known: rows on the sparse engine are then also
        checked for options whose plan asks it column questions (``check_sparse_questions``).

    Raises
    ------
    InvalidParameterError, InvalidDataError
        What the release would refuse by the input's type.
    """
    from .engines import check_engine_input

    if estimator.finds_its_box():
        # Its own refusals (a budget other than zCDP, sparse input), before the charge.
        estimator.check_private_box_input(data)
    # A .dat basket source becomes a scipy.sparse matrix in the release (after the charge).
    baskets = estimator.reads_baskets_sparse(data)
    sparse = is_sparse(data) or baskets
    questions = False  # rows on the sparse engine, whose plan's questions are checked last
    if sparse and not estimator.finds_its_box():
        if not (baskets or estimator.runs_sparse(data)):
            check_data(data)  # refuses sparse input by its type, before looking at it
        else:
            estimator.check_sparse_box(d)
            questions = n is not None
        import scipy.sparse

        check_sparse_data(scipy.sparse.csr_matrix((1, d), dtype=getattr(data, "dtype",
                                                                        np.float64)))
    elif not sparse:
        check_declared_dtype(data, d)
    # As ``make_engine`` refuses it, once the input's type is allowed (a trial: the sparse
    # engine asked of an array was charged, then refused).
    check_engine_input(estimator.engine, sparse)
    if questions:
        # Options whose plan asks the sparse engine column questions; after the instant
        # refusals, as an (epsilon, delta) budget's grant may take a calibration (a review).
        assert n is not None
        estimator.granted(n, d, True).check_sparse_questions(n, d)


def release_events(estimator: Any) -> list[Event] | None:
    """``estimator.privacy_events()`` for the notions a session composes; None for the others
    (tCDP, local, shuffle), which the session then refuses with its own explanation."""
    if estimator.budget.notion not in _CENTRAL_NOTIONS:
        return None
    return list(estimator.privacy_events())


def event_to_dict(event: Event) -> dict[str, Any]:
    """One accountant event as JSON-ready data (the ``events`` of a saved release)."""
    if isinstance(event, GaussianEvent):
        return {"kind": "gaussian", "rho": event.rho}
    if isinstance(event, ZCDPEvent):
        return {"kind": "zCDP", "rho": event.rho}
    if isinstance(event, PureDPEvent):
        return {"kind": "pure-DP", "epsilon": event.epsilon, "count": event.count,
                "bounded_range": event.bounded_range}
    if isinstance(event, ApproxDPEvent):
        return {"kind": "approx-DP", "epsilon": event.epsilon, "delta": event.delta,
                "count": event.count}
    if isinstance(event, ChoiceEvent):
        return {"kind": "choice",
                "options": [[event_to_dict(e) for e in option] for option in event.options]}
    raise InvalidParameterError(f"not an accountant event: {type(event).__name__}")


_EVENT_FIELDS = {
    "gaussian": (GaussianEvent, ("rho",)),
    "zCDP": (ZCDPEvent, ("rho",)),
    "pure-DP": (PureDPEvent, ("epsilon", "count", "bounded_range")),
    "approx-DP": (ApproxDPEvent, ("epsilon", "delta", "count")),
}


def event_from_dict(data: Any) -> Event:
    """The inverse of ``event_to_dict``; InvalidParameterError on anything else."""
    if isinstance(data, dict) and data.get("kind") == "choice":
        options = data.get("options")
        if set(data) != {"kind", "options"} or not isinstance(options, list) or not all(
                isinstance(option, list) for option in options):
            raise InvalidParameterError("a choice event has exactly the fields kind and "
                                        "options, a list of lists of events")
        return ChoiceEvent(tuple(tuple(map(event_from_dict, option)) for option in options))
    if not isinstance(data, dict) or data.get("kind") not in _EVENT_FIELDS:
        raise InvalidParameterError(
            f"an event must be a mapping with a kind among {', '.join(_EVENT_FIELDS)}, "
            f"choice")
    cls, fields = _EVENT_FIELDS[data["kind"]]
    if set(data) != {"kind", *fields}:
        raise InvalidParameterError(f"a {data['kind']} event has exactly the fields kind, "
                                    f"{', '.join(fields)}")
    for name in fields:
        value = data[name]
        if name == "bounded_range":
            continue  # the event checks it is a bool
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(
                value):
            raise InvalidParameterError(f"a {data['kind']} event's {name} must be a finite "
                                        f"number")
    return cls(**{name: data[name] for name in fields})


class Session:
    """A privacy budget composed across releases of the same data.

    ``Session(rho=R)`` is a rho-zCDP session; ``Session(epsilon=E, delta=D)`` an
    (epsilon, delta)-DP session. Each release is charged its granted ``Budget`` (not the
    possibly smaller amount its ledger used), so the composed guarantee below holds for the
    whole sequence of releases, adaptively chosen, under the replace-one relation.

    Means per group (a loop over ``frame.groupby(...)``) are releases of their own, charged
    in sequence, never in parallel: a session does not know the groups are disjoint, and
    each result publishes its group's size ``n`` exactly, which is private only where the
    groups' membership is public (a GroupBy itself is refused as input).

    Parameters
    ----------
    rho : float, optional
        The session's total zCDP budget.
    epsilon, delta : float, optional
        The session's total (epsilon, delta)-DP budget, instead of ``rho``.
    warn_delta : bool, default True
        Warn (``LargeDeltaWarning``) where ``delta`` exceeds 0.01, as a release's request
        does; a ledger file read back passes False (it warned when it was made).

    Raises
    ------
    InvalidParameterError
        Both ``rho`` and ``epsilon``/``delta``, neither, or a budget that is not valid.

    Notes
    -----
    Composition in a zCDP session (Bun-Steinke 2016, Lemma 2.3 and Prop. 1.4):

    - a "zCDP" release adds its rho;
    - a "pure-DP" release of epsilon is epsilon^2/2-zCDP and adds that;
    - anything else is refused: an (epsilon, delta)-DP or tCDP release has no valid conversion
      to zCDP (tCDP bounds only the Renyi orders up to omega), and local or shuffle releases
      hold in a different trust model.

    Composition in an (epsilon, delta) session (``_composed_epsilon``): the composed epsilon at
    the session's delta is the smaller of two valid upper bounds, and must be at most the
    session's epsilon.

    - **PLD** (``pld.compose_epsilon`` over every release's events): the Gaussian events add
      their rho and are exactly sqrt(2 sum rho)-GDP (Dong-Roth-Su 2019, Cor. 3.3); approx-DP
      and pure-DP events enter the privacy-loss-distribution convolution as their worst-case
      pairs (Kairouz-Oh-Viswanath 2015: optimal composition); ``ZCDPEvent`` releases (no
      exact PLD: discrete Gaussian, exponential, smooth-sensitivity noise) are summed and
      converted with the CKS bound, and that part is added to the PLD part by basic
      composition over a searched split of epsilon. Discretisation only rounds up.
    - **CKS + basic composition** (``_cks_epsilon``, the rule before PLD accounting and the
      one version-1 files were written with): all zCDP-granted releases' rhos summed and
      converted once, ``zcdp_to_approx_dp(sum rho, delta_z)`` (Canonne-Kamath-Steinke 2020);
      (epsilon_i, delta_i) and pure (epsilon_i, 0) releases added by basic composition
      (Dwork-Roth 2014, Thm. 3.16) with delta_z = delta - sum delta_i.

    Both hold for adaptively chosen releases, so their minimum does. tCDP, local and shuffle
    releases are refused (tCDP could be composed at a fixed omega and converted with
    ``tcdp_to_approx_dp``; not implemented).

    A release's per-release budget must be given explicitly. The check uses only the request
    and the method (the estimator is built, which grants its ``Budget``, but ``estimate`` is
    not called), so a refused release never reads the data. Before the charge, ``mean`` also
    refuses what public information shows wrong (``public_release``: the columns, shape and
    dtype of the input, the bounds and parameters for that shape). An accepted release is
    charged before its estimator runs; if the estimator then raises, the release stays charged
    (status "failed"): the data may have been read.

    A session may be shared by threads. Checking a release against the budget and charging it
    (``reserve``) is one atomic step under the session's lock, so concurrent releases never
    overspend: of two that fit only one at a time, one is refused (``BudgetExceededError``,
    before its data is read). The estimator itself runs outside the lock, after its charge is
    recorded; recording its outcome (``settle``) and reading the session (``spent``,
    ``remaining``, ``ledger``, ``to_dict``) take the lock too, so each sees a consistent
    ledger. The lock is the session object's: two ``Session`` objects (two ``from_dict`` of
    one saved session, say) are two budgets; ``dpmean.ledger_file`` shares one across
    processes.
    """

    def __init__(self, rho: float | None = None, *, epsilon: float | None = None,
                 delta: float | None = None, warn_delta: bool = True) -> None:
        if rho is not None:
            if epsilon is not None or delta is not None:
                raise InvalidParameterError("a session takes rho, or epsilon with delta, not both")
            self._budget = Budget.zcdp(rho)
        elif epsilon is not None and delta is not None:
            self._budget = Budget.approx_dp(epsilon, delta)
            if warn_delta:
                # A delta above 0.01 draws the warning a release's own request draws (a user
                # trial: a session or ledger of delta 0.5 was made without a word).
                assert self._budget.delta is not None  # an approx-DP budget has one
                warn_if_large_delta(self._budget.delta)
        else:
            raise InvalidParameterError(
                "a session needs its total budget: Session(rho=R) for zCDP, or "
                "Session(epsilon=E, delta=D) for (epsilon, delta)-DP"
            )
        self._releases: list[Release] = []
        # Held across every read-modify-write of ``_releases`` (check then charge in
        # ``reserve``, ``settle``) and every read of more than one thing about it, so that
        # threads sharing the session neither overspend it nor see half an update. Re-entrant:
        # ``reserve`` calls ``check``, which reads ``spent``.
        self._lock = threading.RLock()
        # Composed totals by the releases' (budget, events): PLD composition takes a fraction
        # of a second, and ``spent`` / ``remaining`` / ``check`` ask for the same total often.
        self._totals: dict[tuple, float] = {}
        # The noise states (``seed_digest``) this session's ``mean`` claimed (the releases'
        # recorded ones are in ``Release.seed``): a seed given again would draw the same
        # noise, which composition does not allow for.
        self._seeds: set[Any] = set()

    def __getstate__(self) -> dict[str, Any]:
        # Copied and pickled as before the lock (which cannot be): a copy gets its own.
        with self._lock:
            state = self.__dict__.copy()
            state["_releases"] = list(self._releases)
            state["_totals"] = dict(self._totals)
            state["_seeds"] = set(self._seeds)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_seeds", set())
        self._lock = threading.RLock()

    # ----------------------------------------------------------------------------------------
    # What the session holds

    @property
    def budget(self) -> Budget:
        """The session's total budget ("zCDP" or "approx-DP")."""
        return self._budget

    @property
    def unit(self) -> str:
        """The ledger's unit: "rho" in a zCDP session, "epsilon" in an (epsilon, delta) one."""
        return self._budget.unit

    @property
    def ledger(self) -> list[Release]:
        """Every release charged so far (a copy), in order."""
        with self._lock:
            return list(self._releases)

    @property
    def spent(self) -> float:
        """The composed cost of every charged release, in ``unit``.

        The sum of rho in a zCDP session; the composed epsilon at the session's delta in an
        approximate-DP session."""
        with self._lock:
            return self._total([(r.budget, r.events) for r in self._releases])

    @property
    def remaining(self) -> float:
        """What is left: ``budget.total - spent``, never negative, in ``unit``.

        In a zCDP session it is the rho any further zCDP release may still take. In an
        (epsilon, delta) session it is the epsilon not yet used under the current (PLD)
        composition at the session's delta; releases compose sub-additively there (Gaussian
        ones add their rho and are converted together), so the next release's admissible
        epsilon is not simply this number (it is usually more): ``check`` recomposes everything
        with a given release and says whether it fits.
        """
        return max(0.0, self._budget.total - self.spent)

    def largest_rho(self) -> float:
        """The largest rho a further release of Gaussian stages (``method="gaussian"``, or any
        zCDP release its ledger accounts as one Gaussian event) may take and still fit.

        In a zCDP session it is ``remaining``. In an (epsilon, delta) session ``remaining`` is
        an epsilon that no single release's cost is measured in (a trial read "0.0986
        epsilon" left, then saw a 0.09-epsilon release fit and a rho = 0.01 one refused); this
        is found by bisection of ``check`` under the composition, to 0.1%, rounded down so that
        it fits; 0 where not even ``SMALLEST_RHO`` does. Reads no data."""
        if self.unit == "rho":
            return self.remaining

        def fits(rho: float) -> bool:
            try:
                self.check(Budget("zCDP", rho=rho), [GaussianEvent(rho)], "gaussian")
            except BudgetExceededError:
                return False
            return True

        if not fits(SMALLEST_RHO):
            return 0.0  # spent (a bisection toward 0 would ask for rho = 0 itself)
        low, high = SMALLEST_RHO, 1.0
        while fits(high):
            low, high = high, 2.0 * high
            if high > 1e12:  # (an epsilon budget beyond any use)
                return low
        while high - low > 1e-3 * high:
            middle = (low + high) / 2.0
            low, high = (middle, high) if fits(middle) else (low, middle)
        return low

    # ----------------------------------------------------------------------------------------
    # Releasing

    def mean(self, x: Any, /, *, rho: float | None = None, epsilon: float | None = None,
             delta: float | None = None, method: str = DEFAULT_METHOD,
             columns: Sequence[str] | str | None = None, label: str | None = None,
             **options: Any) -> MeanResult:
        """Release a private mean of ``x`` (as ``dpmean.mean``) and charge it to the session.

        Give ``rho``, or ``epsilon`` and ``delta``, for this release, the method and its
        options as ``dpmean.mean`` takes them, ``columns`` to pick a data frame's columns
        by name, and a ``label`` that the ledger keeps with the release (what it was of, for
        an audit: ``Release.label``; public text, never the data's values).

        Raises BudgetExceededError, before ``x`` is read, when the release does not fit (see
        the class docstring), and InvalidParameterError when no per-release budget is given.
        What public information shows wrong (bounds for another number of columns, a column
        the table does not have, data that is not 1-D or 2-D, a dtype that is not real
        numbers: ``public_release``) is refused before the charge, with the release's own
        error; so is a release with too few rows for its budget, which could only be the
        zero-vector fallback (InvalidParameterError; ``dpmean.mean`` releases that fallback
        with an InsufficientDataWarning). If the estimator raises after the charge (an error
        that may depend on the data's values, such as NaN), the release stays charged
        (status "failed").

        A ``random_state`` that would draw the noise an earlier release of this session drew
        (the same integer, its SeedSequence, a Generator freshly seeded alike: the generator's
        state decides) is refused before the charge: two releases with the same noise on data
        that differ in one row differ by exactly that row's effect (a user trial), which the
        composed budget does not allow for. Seeds are for experiments; real releases leave
        ``random_state`` None.
        """
        if rho is None and epsilon is None and delta is None:
            raise InvalidParameterError(
                "give this release's own budget (rho=, or epsilon= and delta=); a session never "
                "spends 'all that remains' by default"
            )
        seed = self._claim_seed(options.get("random_state"))
        try:
            reader = reader_options(x, options)  # a path's: the file is opened with them
            bounds = basket_bounds(x, options.get("bounds"))  # as dpmean.mean
            if bounds is not None:
                options["bounds"] = bounds
            estimator = build_estimator(method, rho, epsilon=epsilon, delta=delta, **options)
            if estimator.calibrates_to_shape():
                # Its budget follows the plan for the data's shape: checked once granted.
                self._admit(estimator.budget)
            else:
                # Refused before anything of x is looked at, its shape included.
                self.check(estimator.budget, release_events(estimator), estimator.method)
            # What is wrong from public information is refused before the charge; the budget
            # of an (epsilon, delta) release may be calibrated to its plan for the data's
            # shape (``MeanEstimator.granted``): charge what will run.
            if isinstance(options.get("bounds"), Mapping):
                check_bounds_names(options["bounds"], x, columns, reader)  # as dpmean.mean
            estimator, data, columns = public_release(estimator,
                                                      *opened_path(x, columns, reader))
            index = self.reserve(estimator.method, estimator.budget,
                                 release_events(estimator), label, seed=seed)
        except BaseException:
            # Refused before the charge: the seed drew nothing and may be given again.
            with self._lock:
                self._seeds.discard(seed)
            raise
        try:
            result = estimator.estimate(data, columns)
            if result.budget != estimator.budget:
                # An estimator charged before its budget was calibrated to the shape (the
                # checks above could not read it) would release under another guarantee.
                raise PrivacyAccountingError(
                    f"{estimator.method}: the release was made under {result.budget}, not the "
                    f"{estimator.budget} the session charged; the release must not leave")
        except BaseException as exc:
            self.settle(index, "failed")
            # Said where the error is read, as the command line says it (a user trial: the
            # session's spent budget grew with nothing in the message to say why).
            exc.add_note(f"release #{index} stays charged to this session ({estimator.budget}), "
                         f"as failed: the data may have been read, and a failure can depend "
                         f"on it")
            raise
        self.settle(index, "released", result.spent)
        return result

    def _claim_seed(self, random_state: Any) -> Any:
        """Record the noise ``random_state`` would draw (``seed_digest``) for a release about to
        be checked, or refuse it (InvalidParameterError) where an earlier release of this
        session claimed it, or its ledger recorded it (``_recorded``): one step under the
        lock, so two threads given the same seed cannot both pass (a review: 9 releases of 12
        did, checked first and recorded after the charge). The caller discards the claim if
        the release is refused before its charge. Returns the key (None for the secure
        default, never claimed)."""
        seed = seed_digest(random_state)
        if seed is None:
            return None
        with self._lock:
            if seed in self._seeds or self._recorded(seed):
                raise _seed_reused(f"random_state={random_state!r}")
            self._seeds.add(seed)
        return seed

    def _recorded(self, seed: str) -> bool:
        """Whether a release of the ledger was drawn with ``seed`` (``Release.seed``)."""
        return any(release.seed == seed for release in self._releases)

    def check(self, budget: Budget, events: Sequence[Event] | None = None,
              method: str | None = None) -> None:
        """Raise BudgetExceededError (or InvalidParameterError for an incompatible notion or
        events) if a release granted ``budget``, accounted as ``events`` (default: by its
        notion, ``pld.budget_events``), would not fit in what remains. Reads no data."""
        self._admit(budget)
        entry = (budget, self._events(method, budget, events))
        with self._lock:
            total = self._total([*((r.budget, r.events) for r in self._releases), entry])
            if _exceeds(total, self._budget.total):
                before = self.spent
                left = max(0.0, self._budget.total - before)
                # Six digits, or as many as tell the total from the budget (a review: "would
                # take the session to 1 rho ... over its budget zCDP(rho=1)").
                shown = (".6g" if f"{total:.6g}" != f"{self._budget.total:.6g}" else ".17g")
                raise BudgetExceededError(
                    f"this release ({budget}) would take the session to {total:{shown}} "
                    f"{self.unit} composed, over its budget {self._budget} ({before:{shown}} "
                    f"already spent, {left:{shown}} remaining); refused before any value of "
                    f"the data was read"
                )

    def reserve(self, method: str, budget: Budget,
                events: Sequence[Event] | None = None, label: str | None = None,
                seed: str | None = None) -> int:
        """Check ``budget`` (accounted as ``events``, see ``check``) and charge it as a
        "reserved" release, with its ``label`` (``Release.label``) and its ``random_state``'s
        ``seed_digest`` (``Release.seed``: one a recorded release has is refused, before the
        charge); return its index.

        ``events`` must be what the estimator declares (``MeanEstimator.privacy_events``): the
        events of ``budget``'s notion, or for a zCDP budget of a method made only of Gaussian
        stages, ``[GaussianEvent(rho)]``."""
        with self._lock:
            # The check and the charge are one step: no other thread's release is charged
            # between them (two releases that fit only one at a time would both pass a check
            # made before either is charged). PLD composition runs under the lock.
            if seed is not None and self._recorded(seed):
                raise _seed_reused("the seed (--seed, random_state=)")
            self.check(budget, events, method)
            index = len(self._releases)
            self._releases.append(Release(index, method, budget, budget.total, "reserved",
                                          tuple(self._events(method, budget, events)),
                                          check_label(label), seed))
            return index

    def settle(self, index: int, status: str, spent: float | None = None) -> None:
        """Record the outcome of reserved release ``index``: "released" (with the estimator's
        ``spent``) or "failed" (charged in full). The charge itself never changes."""
        with self._lock:
            release = self._releases[index]
            if release.status != "reserved":
                raise InvalidParameterError(f"release {index} is already {release.status}")
            if status not in ("released", "failed"):
                raise InvalidParameterError(f"a release settles as released or failed, not "
                                            f"{status}")
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
            raise InvalidParameterError(f"cannot charge {_article(notion)} release to a session: "
                                        f"{_CENTRAL_ONLY}")
        if self.unit == "rho" and notion not in ("zCDP", "pure-DP"):
            why = ("tCDP bounds only the Renyi orders up to omega, which is not zCDP"
                   if notion == "tCDP" else
                   "(epsilon, delta)-DP does not imply zCDP for any rho")
            raise InvalidParameterError(
                f"cannot charge {_article(notion)} release to a zCDP session: {why}. Open an "
                f"(epsilon, delta) session (Session(epsilon=..., delta=...)) instead"
            )
        if self.unit == "epsilon" and notion not in ("zCDP", "pure-DP", "approx-DP"):
            raise InvalidParameterError(
                f"cannot charge {_article(notion)} release to an (epsilon, delta) session: "
                f"composing tCDP releases is not implemented"
            )

    @staticmethod
    def _events(method: str | None, budget: Budget,
                events: Sequence[Event] | None) -> list[Event]:
        """``events`` checked against ``budget`` (the notion's events by default).

        Accepted: exactly ``pld.budget_events(budget)``, or ``[GaussianEvent(rho)]`` for a zCDP
        budget of rho when ``method`` is a registered estimator made only of Gaussian stages
        (whether it ran with secure noise is the caller's statement: the estimator's
        ``privacy_events`` gives the Gaussian event only without it)."""
        default = budget_events(budget)
        if events is None:
            return default
        if isinstance(events, (str, bytes)) or not isinstance(events, Sequence):
            raise InvalidParameterError("a release's events must be a list of dpmean.pld events")
        events = list(events)
        if events == default:
            return events
        finer = _finer_events(method)
        if (finer is not None and budget.notion == "zCDP" and budget.rho is not None
                and _refines(events, budget.rho, finer)):
            return events
        raise InvalidParameterError(
            f"the events {events} do not match a {method!r} release granted {budget} (expected "
            f"{default}" + (f", or {finer} events of rho={budget.rho} in all"
                            if finer else "") + ")")

    def _total(self, entries: Sequence[tuple[Budget, Sequence[Event]]]) -> float:
        if self.unit == "rho":
            return math.fsum(self._cost(b) for b, _ in entries)
        key = tuple((b, tuple(e)) for b, e in entries)
        if key not in self._totals:
            self._totals[key] = self._composed_epsilon(entries)
        return self._totals[key]

    @staticmethod
    def _cost(budget: Budget) -> float:
        """A release's rho in a zCDP session: rho for zCDP, epsilon^2/2 for pure DP."""
        if budget.notion == "zCDP":
            assert budget.rho is not None
            return budget.rho
        assert budget.notion == "pure-DP" and budget.epsilon is not None
        return pure_dp_to_zcdp(budget.epsilon)

    def _composed_epsilon(self, entries: Sequence[tuple[Budget, Sequence[Event]]]) -> float:
        """The epsilon the releases (budget, events) compose to at the session's delta: the
        smaller of the PLD accountant's bound and the CKS + basic composition bound (see the
        class docstring); ``math.inf`` when neither meets the delta."""
        if not entries:
            return 0.0
        delta = self._budget.delta
        assert delta is not None
        legacy = self._cks_epsilon([b for b, _ in entries])
        events = [e for _, group in entries for e in group]
        # The approximate-DP events lose with probability 1 - prod (1 - delta_i) (their pairs'
        # infinite loss), and a Gaussian or zCDP part of positive rho has delta > 0 at every
        # epsilon, however small (it underflows to 0 in floating point far out): when the
        # former takes the session's delta, nothing of the latter fits.
        infinite = -math.expm1(math.fsum(e.count * math.log1p(-e.delta) for e in events
                                         if isinstance(e, ApproxDPEvent)))
        if infinite >= delta * (1.0 - 1e-9) and any(
                isinstance(e, (GaussianEvent, ZCDPEvent)) and e.rho > 0.0 for e in events):
            return legacy  # valid always; inf once the deltas add up to the session's
        return min(legacy, compose_epsilon(events, delta))

    def _cks_epsilon(self, releases: Iterable[Budget]) -> float:
        """The epsilon the releases compose to at the session's delta by CKS + basic
        composition (``math.inf`` when the approximate-DP releases' deltas leave none for the
        zCDP ones): valid for any releases of these notions, and how version-1 files were
        totalled."""
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
        with self._lock:  # the releases and their total at one moment
            return {"version": SESSION_VERSION, "budget": self._budget.to_dict(),
                    "releases": [r.to_dict() for r in self._releases], "spent": self.spent}

    @classmethod
    def from_dict(cls, data: Any) -> Session:
        """The inverse of ``to_dict``. Raises InvalidParameterError on anything inconsistent:
        unknown version or fields, a bad budget, events that do not match a release's budget
        and method, indices out of order, a negative or too large ``spent``, a recorded total
        that differs from the releases' composition, or releases that overspend the budget.

        Version 1 (before releases carried events) is read too: each release is accounted by
        its notion (``pld.budget_events``: a zCDP release as a ``ZCDPEvent``, which is how
        version 1 composed it), the recorded total is checked against the CKS + basic
        composition version 1 used, and the session is then totalled as now (never more than
        that). ``to_dict`` writes it back as the current version (``SESSION_VERSION``)."""
        def bad(why: str) -> InvalidParameterError:
            return InvalidParameterError(f"not a valid dpmean session: {why}")

        if not isinstance(data, dict):
            raise bad("expected a mapping")
        if set(data) != {"version", "budget", "releases", "spent"}:
            raise bad("expected exactly the fields version, budget, releases, spent")
        version = data["version"]
        if isinstance(version, bool) or version not in READABLE_VERSIONS:
            raise bad(f"unknown version {version!r} (this dpmean reads "
                      f"{', '.join(map(str, READABLE_VERSIONS))})")
        fields = {"index", "method", "budget", "spent", "status"}
        if version >= 2:
            fields.add("events")
        if version >= 3:
            fields.add("label")
        if version >= 4:
            fields.add("seed")
        budget = Budget.from_dict(data["budget"])
        if budget.notion == "zCDP":
            session = cls(rho=budget.rho)
        elif budget.notion == "approx-DP":
            # A ledger read back warned when it was made, not at every read (a review).
            session = cls(epsilon=budget.epsilon, delta=budget.delta, warn_delta=False)
        else:
            raise bad(f"a session's budget is zCDP or approx-DP, not {budget.notion}")
        releases = data["releases"]
        if not isinstance(releases, list):
            raise bad("releases must be a list")
        for position, entry in enumerate(releases):
            if not isinstance(entry, dict) or set(entry) != fields:
                raise bad(f"release {position} must have exactly the fields "
                          f"{', '.join(sorted(fields))}")
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
                events = None
                if version >= 2:
                    if not isinstance(entry["events"], list):
                        raise InvalidParameterError("events must be a list")
                    events = [event_from_dict(e) for e in entry["events"]]
                events = session._events(entry["method"], release_budget, events)
                label = check_label(entry.get("label"))
                seed = entry.get("seed")
                if seed is not None and not (isinstance(seed, str) and len(seed) == 64):
                    raise InvalidParameterError(f"seed must be null or a SHA-256 hex digest, "
                                                f"got {seed!r}")
            except InvalidParameterError as exc:
                raise bad(f"release {position}: {exc}") from None
            session._releases.append(Release(position, entry["method"], release_budget,
                                             spent, entry["status"], tuple(events), label,
                                             seed))
        recorded = _number(data["spent"], "spent", bad)
        if version == 1 and session.unit == "epsilon":
            written = session._cks_epsilon([r.budget for r in session._releases])
        else:
            written = session.spent
        # PLD totals are bisections of a numerical bound: allow for a different dp_accounting
        # build rounding differently; the budget check below uses the total computed here.
        tolerance = 1e-9 if session.unit == "rho" else 1e-7
        if not math.isfinite(written) or abs(recorded - written) > tolerance * max(
                1.0, abs(written)):
            raise bad(f"the recorded total {recorded:g} differs from the releases' "
                      f"composition {written:g}")
        actual = session.spent
        if _exceeds(actual, budget.total):
            raise bad(f"its releases compose to {actual:g} {session.unit}, over the budget "
                      f"{budget}")
        return session

    def __repr__(self) -> str:
        with self._lock:
            spent = self.spent
            return (f"Session({self._budget}, {len(self._releases)} releases, spent "
                    f"{spent:.6g} {self.unit}, remaining "
                    f"{max(0.0, self._budget.total - spent):.6g})")


def _article(notion: str) -> str:
    """``notion`` with its article: "an approx-DP", "a zCDP" ("a approx-DP" was printed)."""
    return f"{'an' if notion[0] in 'aeiou' else 'a'} {notion}"


def _seed_reused(given: str) -> InvalidParameterError:
    return InvalidParameterError(
        f"{given} draws the noise an earlier release of this session (or its "
        f"ledger file) drew: releases with the same noise on data that differ in one row tell "
        f"that row apart, which the session's composed budget does not allow for. Give each "
        f"release its own seed, or none (real releases use none)")


def _finer_events(method: str | None) -> str | None:
    """Which events a registered method may declare beyond its notion's (``privacy_events``),
    adding up to its rho: "Gaussian" for those made only of Gaussian stages, "Gaussian and
    bounded-range" for those that declare their stages' mechanisms (``stage_events``), else
    None."""
    from .estimators.base import MeanEstimator

    cls = ESTIMATORS.get(method) if isinstance(method, str) else None
    if cls is None or not issubclass(cls, MeanEstimator):
        return None
    if cls.gaussian_stages:
        return "Gaussian"
    if cls.declares_mechanisms():
        return "Gaussian and bounded-range"
    return None


def _refines(events: Sequence[Event], rho: float, finer: str) -> bool:
    """Whether ``events`` describe a rho-zCDP release more finely: Gaussian and zCDP events
    (and, unless ``finer`` is "Gaussian", bounded-range exponential ones) whose zCDP costs add
    up to at most ``rho``: what an estimator declares in ``privacy_events``; its mechanisms'
    charges are checked against the declaration when it releases."""
    def known(e: Event) -> bool:
        if isinstance(e, ChoiceEvent):  # auto's candidates, each refining its own rho
            return finer != "Gaussian" and all(known(x) for option in e.options for x in option)
        return isinstance(e, GaussianEvent | ZCDPEvent) or (
            finer != "Gaussian" and isinstance(e, PureDPEvent) and e.bounded_range)

    total = math.fsum(c for c in map(zcdp_cost, events) if c is not None)
    return all(map(known, events)) and math.isclose(total, rho, rel_tol=1e-9)


def _number(value: Any, name: str, bad: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(
            value):
        raise bad(f"{name} must be a finite number, got {value!r}")
    return float(value)
