"""The shape every central-model estimator shares: validate, plan, ask an engine, release.

Subclasses state their budget split (``budget_plan``) and their release (``release``).
"""

from __future__ import annotations

import inspect
import math
import warnings
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..accounting import PrivacyLedger, check_budget_request, remainder, resolve_budget
from ..budget import Budget
from ..diagnostics import Diagnostic, Kind, document, normalise
from ..engines import (
    DatSource,
    Engine,
    check_engine,
    check_whole_read_fits,
    is_deferred,
    make_engine,
    reads_whole,
)
from ..errors import (
    BoxFaceWarning,
    InsufficientDataWarning,
    InvalidDataError,
    InvalidParameterError,
    NoisyReleaseWarning,
    PrivacyAccountingError,
    SecureNoiseWarning,
)
from ..result import MeanResult
from ..rng import RandomState, check_random_state, make_rng
from ..tables import data_columns
from ..transforms import box_scale
from ..validation import (
    NARROWEST_WIDTH,
    bounds_by_name,
    check_bounds,
    check_data,
    check_declared_dtype,
    check_flag,
    check_sparse_data,
    is_sparse,
    named_column,
    sequence_shape,
    user_stacklevel,
)

if TYPE_CHECKING:
    from ..events import Event


class MeanEstimator(ABC):
    """A differentially private mean of n rows in R^d, rho-zCDP under replace-one neighbours.

    The base of every central-model estimator: it validates the request, grants the budget,
    checks the subclass's ``budget_plan`` against it before any data is read, asks an engine
    the questions the release needs, and returns a :class:`~dpmean.MeanResult`.

    Parameters
    ----------
    rho : float, optional
        The zCDP budget. Give either ``rho`` or both ``epsilon`` and ``delta``.
    epsilon, delta : float, optional
        An (epsilon, delta)-DP request instead of ``rho``, validated at construction and
        converted on first use (``budget``) to the largest rho that meets it: exactly (the
        analytic Gaussian) for estimators made only of continuous Gaussian stages, otherwise
        with the tight Canonne-Kamath-Steinke bound (``grant``).
    bounds : tuple of (scalar or array_like), or mapping, optional
        ``(lo, hi)``, scalars or length-d arrays: the public box the data is assumed to lie in;
        or, for data with named columns (a data frame, an Arrow table), a mapping of column
        name to its ``(lo, hi)`` (names the data does not use are ignored). Values outside
        are clamped (silently: reporting how many would leak). With
        per-coordinate widths that differ, the estimator runs in the box-normalised space
        (coordinate j multiplied by the public 1 / (hi_j - lo_j), ``box_scale``) and its
        release is mapped back, so each column's noise follows its own declared range
        (docs/privacy.md, "Scale-aware releases"). The release is then projected onto the
        box (post-processing: the clamped data's mean lies in it). Without bounds, estimators
        that can (``finds_bounds``) spend ``BOUNDS_SHARE`` of rho on a private box first.
    random_state : None, int or numpy.random.Generator, optional
        None (a cryptographically secure generator keyed from the OS: use this for real
        releases), an int (reproducible, for experiments and tests) or a Generator.
    secure_noise : bool, default False
        Draw every Gaussian mechanism exactly in integer arithmetic: discrete Gaussian noise on
        counts, and real values released on a fine grid with discrete Gaussian noise, so the
        guarantee of those stages survives floating point (see docs/privacy.md). Every central
        estimator accepts it; exponential-mechanism and smooth-sensitivity draws stay floating
        point. Slower.
    engine : str, optional
        How the data is read (``dpmean.engines.ENGINES``): None chooses by the input's type
        (scipy.sparse -> "sparse" for estimators that declare it, a row source from
        ``dpmean.engines.open_source`` -> "chunked", a dask.array -> "dask", else "memory").
        "sparse" forces sparse input onto the sparse engine for any estimator (it raises if
        the estimator asks a question it cannot answer). Same estimate, up to floating-point
        summation order, on every engine.

    Raises
    ------
    InvalidParameterError
        A budget that is missing, not positive or given twice (``rho`` with ``epsilon``, or
        ``epsilon`` without ``delta``); ``secure_noise=True`` on an estimator without a secure
        mode; an unknown ``engine``; a ``random_state`` that is not None, an int or a
        Generator.

    Privacy
    -------
    Each subclass's release is rho-zCDP (or the notion it declares in ``notion``) under
    replace-one neighbours, with n and d public. Its stages and their costs are stated by
    ``budget_plan`` from public values only, checked to sum to at most the granted total
    before any data is read; each mechanism charges its own stage, and the result's ledger
    lists stage -> amount. The subclasses' *Privacy* sections give their splits.
    """

    method: ClassVar[str]
    # The privacy notion of the release; the budget is granted in it (``grant``) and the result
    # states it. Subclasses whose guarantee is not zCDP declare theirs here and in ``grant``.
    # Not a ClassVar: TrimmedMean's notion follows its ``noise`` parameter, per instance.
    notion: str = "zCDP"
    # Estimators whose release asks only questions the SparseEngine answers set this, and then
    # receive scipy.sparse input on a SparseEngine (never densified); others refuse it.
    supports_sparse: ClassVar[bool] = False
    # Estimators that pass ``secure_noise`` to every Gaussian mechanism they run set this (all
    # the central ones); the others (local and shuffle protocols) refuse secure_noise=True.
    supports_secure_noise: ClassVar[bool] = False
    # Estimators every stage of which is a (continuous) Gaussian mechanism set this: their
    # release, an adaptive composition of Gaussians of total rho, is exactly sqrt(2 rho)-GDP
    # (Dong-Roth-Su 2019, Cor. 3.3), so an (epsilon, delta) request is calibrated exactly.
    gaussian_stages: ClassVar[bool] = False
    # Estimators whose public geometry is the box set this (all central ones but those whose
    # public inputs are in the data's own units and not the box's: CoinPress's ball, the
    # Gaussian wrapper's sigma bounds, and the trimmed mean, which is coordinate-wise already).
    box_normalised: ClassVar[bool] = True
    # Where a parameter is one scale for every column, in the data's units (CoinPress's ball,
    # GRS's sigma): what it is, and the methods that run each column in its own range instead,
    # for ``warn_if_one_scale``. None elsewhere.
    one_scale: ClassVar[tuple[str, str] | None] = None
    # Estimators that give the same release, moved, for data and box moved by a public offset
    # (all central ones but CoinPress, whose ball is in the data's units, and the Gaussian
    # wrapper, which preclips about the origin) run a box far from the origin on the data
    # minus its centre (``far_box_offset``).
    shifts_far_box: ClassVar[bool] = True
    # Estimators that, given no bounds, spend BOUNDS_SHARE of a rho budget on a private box
    # (``private_bounds``) and run in it; the others take other public geometry without bounds
    # (CoinPress, the Gaussian wrapper) or run in the local model (protocols).
    finds_bounds: ClassVar[bool] = True
    # Estimators that measure the rows' norms about the origin (the clipped mean, auto's
    # choice): a box whose farthest corner's squared distance from it overflows float64 is
    # refused before any charge (``check_box_reach``).
    norms_about_origin: ClassVar[bool] = False
    # What an estimator that has no sparse form would ask of the sparse engine where its rows
    # run there all the same (engine="sparse"), refused before any charge
    # (``check_sparse_questions``); None where it runs there.
    sparse_engine_refuses: ClassVar[str | None] = None

    # The diagnostics this class's results may carry, beyond those of the classes it extends
    # (``diagnostic_declarations`` merges them): key -> kind and meaning. Every result is
    # normalised to them (``diagnostics_of``) and each class's docstring lists them.
    declared_diagnostics: ClassVar[Mapping[str, Diagnostic]] = {
        "bounds_lo": Diagnostic(Kind.VECTOR, "The lower corner of the box the rows were clamped "
                                "to, in the data's units (public, or private with "
                                "``private_bounds``)."),
        "bounds_hi": Diagnostic(Kind.VECTOR, "The box's upper corner, likewise."),
        "box_scale": Diagnostic(Kind.VECTOR, "The factors 1 / (hi_j - lo_j) of the "
                                "box-normalised space the release ran in (absent when it ran "
                                "in the data's units)."),
        "secure_noise": Diagnostic(Kind.BOOL, "Whether the Gaussian stages drew discrete "
                                   "Gaussian noise."),
        "private_bounds": Diagnostic(Kind.BOOL, "True when the box was found privately (stage "
                                     "\"bounds\"); absent when it was given."),
        "private_bounds_borrowed": Diagnostic(Kind.COUNTS, "1 for each column whose private "
                                              "box was borrowed from the widest columns' (its "
                                              "own values did not clear the noise, in a table "
                                              "of scales 2^10 apart), else 0; absent when "
                                              "none was or the box was given."),
        "private_bounds_lifted": Diagnostic(Kind.COUNTS, "For each column, the powers of two "
                                            "by which wider columns lifted its private box "
                                            "above its own values' reach (it shares their box "
                                            "and its noise), 0 where it set its own; absent "
                                            "when no column was lifted by 5 or more, or the "
                                            "box was given."),
        "private_bounds_widened": Diagnostic(Kind.COUNTS, "1 for each column whose private "
                                             "box was narrower than the narrowest width a box "
                                             "may have (1e-100: its values are all smaller) "
                                             "and was widened to it, else 0; absent when none "
                                             "was or the box was given."),
        "box_offset": Diagnostic(Kind.VECTOR, "The public shift the release ran at, in the "
                                 "data's units: the centre of each column's box that lies "
                                 "farther from the origin than 1024 widths, else 0 (absent when "
                                 "no column does)."),
    }

    _given: tuple[tuple[Any, ...], dict[str, Any]]
    # (n, d, sparse) when this copy was granted an exactly calibrated rho for that shape.
    _granted_for: tuple[int, int, bool] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The docstring lists the keys this estimator adds to those every result carries.
        common = MeanEstimator.declared_diagnostics
        document(cls, {key: item for key, item in cls.diagnostic_declarations().items()
                       if key not in common})

    @classmethod
    def diagnostic_declarations(cls) -> dict[str, Diagnostic]:
        """Every diagnostic this estimator's results may carry, with its kind and meaning.

        Returns
        -------
        dict of str to Diagnostic
            The ``declared_diagnostics`` of this class and of every class it extends.
        """
        declared: dict[str, Diagnostic] = {}
        for klass in reversed(cls.__mro__):
            declared.update(vars(klass).get("declared_diagnostics", {}))
        return declared

    def __new__(cls, *args: Any, **kwargs: Any) -> MeanEstimator:
        # Keep the parameters exactly as the caller gave them (before any validation or
        # conversion), for get_params and repr.
        self = super().__new__(cls)
        self._given = (args, dict(kwargs))
        return self

    def get_params(self) -> dict[str, Any]:
        """The estimator's parameters: every keyword of its constructors (this class and the
        classes it extends) with its default, overridden by the values given, as given.

        Returns
        -------
        dict
            Parameter name -> value; ``type(self)(**self.get_params())`` builds an equal
            estimator (same parameters; a fresh random state unless one was given).
        """
        params: dict[str, Any] = {}
        for klass in reversed(type(self).__mro__):
            init = vars(klass).get("__init__")
            if init is None or klass is object:
                continue
            for p in inspect.signature(init).parameters.values():
                if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                    params[p.name] = None if p.default is p.empty else p.default
        args, kwargs = self._given
        names = [p.name for p in inspect.signature(type(self).__init__).parameters.values()
                 if p.kind is p.POSITIONAL_OR_KEYWORD and p.name != "self"]
        params.update(zip(names, args, strict=False))
        params.update(kwargs)
        return params

    def __repr__(self) -> str:
        args, kwargs = self._given
        shown = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
        return f"{type(self).__name__}({', '.join(shown)})"

    def __init__(
        self,
        rho: float | None = None,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        bounds: Any = None,
        random_state: RandomState = None,
        secure_noise: bool = False,
        engine: str | None = None,
    ) -> None:
        if secure_noise and not self.supports_secure_noise:
            raise InvalidParameterError(
                f"method {self.method!r} has no secure-noise mode (only the central-model "
                f"estimators have one)"
            )
        self.secure_noise = check_flag(secure_noise, "secure_noise")
        self.engine = check_engine(engine)
        # Validated now, converted on first use (``budget``): building an estimator is cheap
        # and loads no accountant.
        self.check_budget(rho, epsilon, delta)
        self._request = (rho, epsilon, delta)
        self.bounds = bounds
        check_random_state(random_state)  # each estimate() makes its own generator
        self.random_state = random_state

    def check_budget(self, rho: float | None, epsilon: float | None, delta: float | None) -> None:
        """Refuse a request ``grant`` would refuse, converting nothing: what the constructor
        checks (default: exactly one of ``rho`` or (``epsilon``, ``delta``), each in range)."""
        check_budget_request(rho, epsilon, delta)

    @cached_property
    def budget(self) -> Budget:
        """The granted budget: the request as given, converted by ``grant`` on first use (an
        estimate, a session's check, ``dpmean.accuracy``), then kept."""
        return self.grant(*self._request)

    def grant(self, rho: float | None, epsilon: float | None, delta: float | None) -> Budget:
        """The typed budget of a request ``check_budget`` accepted, in this estimator's notion
        (``budget`` calls it once, on first use).

        Default: a rho-zCDP budget; (epsilon, delta) is converted to the largest rho that implies
        it, and kept on the budget as the guarantee the caller asked for. The conversion is exact
        (``pld.gaussian_rho_for_approx_dp``: the analytic Gaussian) for estimators made only of
        continuous Gaussian stages, and Canonne-Kamath-Steinke's zCDP conversion otherwise
        (including secure noise: the discrete Gaussian is rho-zCDP, but its exact privacy
        curve is not the continuous one's).
        """
        budget_rho = resolve_budget(rho, epsilon, delta)
        if rho is None and self.gaussian_stages and not self.secure_noise:
            from ..pld import gaussian_rho_for_approx_dp  # loads the PLD library only if needed

            assert epsilon is not None and delta is not None
            budget_rho = gaussian_rho_for_approx_dp(epsilon, delta)
        return Budget("zCDP", rho=budget_rho, epsilon=epsilon, delta=delta)

    def stage_events(self, plan: Mapping[str, float], n: int, d: int,
                     sparse: bool = False) -> dict[str, Event] | None:
        """Stage -> the event (``dpmean.events``) its mechanism charges, for ``plan`` (public)
        and data of shape (n, d), or None when some stage's mechanism is neither a Gaussian nor
        an exponential mechanism (nor a choice among estimators that declare theirs).

        Estimators made only of Gaussian stages (``gaussian_stages``) declare a Gaussian event
        per stage (a ``ZCDPEvent`` with secure noise); estimators with exponential-mechanism
        stages override this. ``sparse`` is whether the input is baskets (``reads_baskets``: a
        public property of its type), which can change the mechanisms. Every release checks
        the events its mechanisms charged against this declaration (``check_events``)."""
        if not self.gaussian_stages:
            return None
        from ..events import gaussian_event

        return {stage: gaussian_event(rho, self.secure_noise) for stage, rho in plan.items()}

    def check_events(self, ledger: PrivacyLedger, n: int, d: int, sparse: bool) -> None:
        """Refuse a release whose mechanisms charged other events than ``stage_events``
        declares (an (epsilon, delta) calibration and a session's accounting rely on them)."""
        from ..events import same_events

        declared = self.stage_events(ledger.planned, n, d, sparse)
        if declared is None:
            return
        for stage, event in ledger.events.items():
            expected = declared.get(stage)
            if event is None or expected is None or not same_events(event, expected):
                raise PrivacyAccountingError(
                    f"{self.method}: stage {stage!r} charged {event}, but the estimator "
                    f"declares {expected}; the release must not leave")

    def granted(self, n: int, d: int, sparse: bool = False) -> MeanEstimator:
        """The estimator that releases for data of this public shape.

        Itself, except for an (epsilon, delta) request to an estimator whose stages are all
        Gaussian or exponential mechanisms (``stage_events``) but not all Gaussian (those are
        calibrated exactly already, ``grant``): then a copy granted the largest rho at which its
        plan for (n, d) composes, by privacy loss distributions (``pld.calibrate_scale``), to the
        request, if that beats the generic conversion. The copy's budget keeps the request's
        (epsilon, delta); its events (``privacy_events``) are its plan's."""
        if self._granted_for is not None:
            if self._granted_for != (n, d, sparse):
                raise InvalidParameterError(
                    f"{self.method}: this estimator was granted its budget for data of shape "
                    f"{self._granted_for[:2]}, not ({n}, {d})")
            return self
        if not self.calibrates_to_shape():
            return self
        budget = self.budget
        rho = exact_rho(self, n, d, sparse)
        assert budget.rho is not None
        if rho <= budget.rho:
            return self
        copy = self.with_rho(rho)
        copy.budget = Budget("zCDP", rho=rho, epsilon=budget.epsilon, delta=budget.delta)
        copy._granted_for = (n, d, sparse)
        return copy

    @classmethod
    def declares_mechanisms(cls) -> bool:
        """Whether the class declares its stages' mechanisms beyond all-Gaussian: it overrides
        ``stage_events`` (PLAN: Gaussian and exponential-mechanism stages)."""
        return cls.stage_events is not MeanEstimator.stage_events

    def calibrates_to_shape(self) -> bool:
        """Whether ``granted`` calibrates the budget to the data's shape: an (epsilon, delta)
        request, not yet granted, to an estimator that declares its mechanisms
        (``declares_mechanisms``; those made only of Gaussian stages are exact already). Without
        bounds the plan includes the private box (``plan_events``)."""
        budget = self.budget
        return (self._granted_for is None and budget.notion == "zCDP"
                and budget.epsilon is not None and budget.delta is not None
                and self.declares_mechanisms() and not self.gaussian_stages)

    def finds_its_box(self) -> bool:
        """Whether a release spends ``BOUNDS_SHARE`` of rho on a private box first (no bounds
        given, and the estimator can find them)."""
        return self.bounds is None and self.finds_bounds

    def in_box(self, rho: float, bounds: Any, random_state: RandomState = None) -> MeanEstimator:
        """The same options, granted rho-zCDP, in the box ``bounds``: what runs after a private
        box."""
        return self.with_params(rho=rho, epsilon=None, delta=None, bounds=bounds,
                                random_state=random_state)

    def with_rho(self, rho: float) -> MeanEstimator:
        """The same estimator (same parameters as given, same random state) granted rho-zCDP."""
        return self.with_params(rho=rho, epsilon=None, delta=None)

    def with_params(self, **changes: Any) -> MeanEstimator:
        """A new estimator of this class with the parameters as given here, ``changes``
        replacing some of them."""
        return type(self)(**{**self.get_params(), **changes})

    def plan_events(self, n: int, d: int, sparse: bool) -> list[Event]:
        """The events of the plan for (n, d) (``stage_events``), with any rho the plan leaves
        unspent as one ``GaussianEvent`` (it dominates spending nothing), so that they account
        for the whole grant.

        Without bounds: the private box's Gaussian, then the plan in a stand-in box
        (``box_stand_ins``). The box mostly moves rho between Gaussian stages (IOME's centre
        narrowing), which does not change the composition; where the stand-ins' plans differ
        (``auto`` on columns of different widths), the plan is a ``ChoiceEvent`` among them,
        chosen by the box. The release checks that the plan in the private box is accounted as
        one of them (``equivalent_events``) before it runs."""
        from ..events import ChoiceEvent, GaussianEvent

        if self.finds_its_box():
            box, options = self.stand_in_plans(n, d, sparse)
            return [box, *options[0]] if len(options) == 1 else [box, ChoiceEvent(options)]
        plan = self.budget_plan(n, d)
        events = self.stage_events(plan, n, d, sparse)
        assert events is not None and self.budget.rho is not None
        # Rho the plan leaves unspent is spent by no mechanism, so any event dominates it; a
        # continuous Gaussian keeps the plan inside the PLD accounting. (A ``ZCDPEvent`` had
        # none: a round-off residue of 5.6e-17 in CM's plan took a whole choice (``auto``) out
        # of its PLD at some budgets, and the (epsilon, delta) calibration, whose bisection
        # assumes delta grows with rho, met a 10x spike and granted the generic conversion.)
        unspent = self.budget.rho - math.fsum(plan.values())
        return [*events.values(), *([GaussianEvent(unspent)] if unspent > 0.0 else [])]

    def box_stand_ins(self, d: int) -> tuple[Any, ...]:
        """The boxes whose plans stand for every plan a private box can select for d columns
        (``plan_events`` without bounds; public): ``BOX_STAND_IN``. ``auto`` adds one of
        columns of different widths."""
        return (BOX_STAND_IN,)

    def stand_in_plans(self, n: int, d: int, sparse: bool
                       ) -> tuple[Event, tuple[tuple[Event, ...], ...]]:
        """Without bounds: the private box's Gaussian event and the plans (events) of the rest
        of rho in each of ``box_stand_ins`` that composes differently from those before it."""
        from ..events import equivalent_events, gaussian_event
        from .private_bounds import BOUNDS_SHARE

        assert self.budget.rho is not None
        rho_box = self.budget.rho * BOUNDS_SHARE
        options: list[tuple[Event, ...]] = []
        for stand_in in self.box_stand_ins(d):
            events = tuple(self.in_box(self.budget.rho - rho_box, stand_in).plan_events(
                n, d, sparse))
            if not any(equivalent_events(events, option) for option in options):
                options.append(events)
        return gaussian_event(rho_box, self.secure_noise), tuple(options)

    def privacy_events(self) -> list:
        """The release as an (epsilon, delta) accountant composes it (``dpmean.pld`` events),
        from the granted budget alone (no data): what a ``Session`` records for each release.

        Estimators made only of continuous Gaussian stages (``gaussian_stages``, without secure
        noise) are one ``GaussianEvent`` of their total rho: their stages, of rho_j each
        (noise multiplier sigma_j / Delta_j = 1 / sqrt(2 rho_j)), compose exactly to
        sqrt(2 rho)-GDP (Dong-Roth-Su 2019, Cor. 3.3), so one event carries all the accountant
        needs; a ledger that spends less than granted is dominated by it. Everything else is
        accounted by its notion (``pld.budget_events``): a ``ZCDPEvent`` (the discrete Gaussian,
        exponential mechanisms, smooth-sensitivity noise), ``ApproxDPEvent`` or
        ``PureDPEvent``.
        """
        from ..pld import GaussianEvent, budget_events

        if self._granted_for is not None:
            n, d, sparse = self._granted_for
            return self.plan_events(n, d, sparse)
        if self.budget.notion == "zCDP" and self.gaussian_stages and not self.secure_noise:
            assert self.budget.rho is not None
            return [GaussianEvent(self.budget.rho)]
        return budget_events(self.budget)

    @property
    def rho(self) -> float:
        """The granted rho; only for estimators whose ledger is kept in rho."""
        if self.budget.rho is None or self.budget.unit != "rho":
            raise AttributeError(
                f"a {self.budget.notion} budget has no rho; its ledger is in {self.budget.unit}"
            )
        return self.budget.rho

    @property
    def total(self) -> float:
        """The granted total in the ledger's unit (rho or epsilon)."""
        return self.budget.total

    def check_columns(self, d: int) -> None:
        """Refuse parameters that cannot fit data of ``d`` columns (public), for callers that
        know d but not yet n (a session's CSV path, before the charge); ``budget_plan`` checks
        the same and more. Default: nothing of the estimator's own depends on d alone."""
        return None

    @abstractmethod
    def budget_plan(self, n: int, d: int) -> dict[str, float]:
        """Stage -> amount in the budget's unit, decided from public values only; must sum to at
        most ``self.total``."""

    @abstractmethod
    def release(
        self, engine: Engine, budget: dict[str, float], ledger: PrivacyLedger,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Run the mechanisms; return the private mean and private diagnostics."""

    def minimum_rows(
        self, n: int, lo: np.ndarray, hi: np.ndarray, budget: dict[str, float]
    ) -> float:
        """Smallest n for which the estimator releases anything but the zero vector (a public
        check; ``n`` is passed for settings that depend on it)."""
        return 1.0

    def box(self, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
        """The public box the engine clamps to (read-only arrays)."""
        # A release asks for its box a dozen times (splits, domains, the engine, the
        # projection); validating the bounds each time was a fifth of a small release's time.
        boxes = self.__dict__.setdefault("_checked_boxes", {})
        if d not in boxes:
            lo, hi = check_bounds(self.bounds, d)
            lo.flags.writeable = hi.flags.writeable = False
            boxes[d] = (lo, hi)
        return boxes[d]

    def release_box(self, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
        """The public box the released mean is projected onto (default: ``box``)."""
        return self.box(n, d)

    def box_scale(self, n: int, d: int) -> np.ndarray | None:
        """The public factors of the box-normalised space the release runs in (coordinate j
        multiplied by 1 / (hi_j - lo_j)), or None when it runs in the data's own units (equal
        widths, an unbounded box, or an estimator that is not ``box_normalised``)."""
        return box_scale(*self.box(n, d)) if self.box_normalised else None

    def unit_box(self, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
        """The box the release runs in, the one its engine reports: ``box`` rescaled by
        ``box_scale`` (the box-normalised space), else ``box`` itself. Public settings that
        follow the box (search domains, budget splits) are taken in it."""
        lo, hi = self.box(n, d)
        scale = self.box_scale(n, d)
        return (lo, hi) if scale is None else (lo * scale, hi * scale)

    def estimate(self, x: Any, columns: Sequence[str] | str | None = None) -> MeanResult:
        """Release the private mean of ``x``: an array of shape (n, d) (or (n,) for one
        variable), a scipy.sparse matrix, a row source, a dask array, or a data frame or Arrow
        table (pandas, polars, pyarrow) whose numeric ``columns`` (default all) are used, by
        name; the result then carries the names (``MeanResult.columns``)."""
        x, names = data_columns(x, columns)
        estimator = self
        if isinstance(self.bounds, Mapping):
            # Ranges by column name: this release's box in the data's column order, judged
            # here so that a bad range is told by its column's name, not its position.
            box = bounds_by_name(self.bounds, names)
            check_bounds(box, len(box[0]), names)
            estimator = self.with_params(bounds=box)
        x = estimator.baskets_read_sparse(x)
        try:
            # numpy's floating-point errors as the caller set them (warnings, or raised) would
            # say whether some row made one: a subnormal value's underflow in a neighbour and
            # not in x (a review). The release handles its own floating point.
            with np.errstate(all="ignore"):
                result = estimator._estimate(x).named(names)
        except InvalidDataError as exc:
            raise named_column(exc, names) from None
        warn_if_box_borrowed(result)
        warn_if_box_lifted(result)
        warn_if_box_widened(result)
        warn_if_on_the_faces(result)
        warn_if_drowned(result)
        self.warn_if_one_scale(result)
        return result

    def warn_if_one_scale(self, result: MeanResult) -> None:
        """A ``NoisyReleaseWarning`` where ``one_scale`` is set and the columns' ranges differ
        in width by more than ``ONE_SCALE_RATIO``: the narrow columns then carry the widest's
        noise (user trials: a survey's age, 0/1 flag and 1-5 scale beside an income in
        (0, 10^6) came out at their faces, silently, from CoinPress and GRS). Public: the
        box."""
        if self.one_scale is None:
            return
        lo, hi = result.diagnostics.get("bounds_lo"), result.diagnostics.get("bounds_hi")
        if lo is None or hi is None:
            return
        widths = np.asarray(hi, dtype=np.float64) - np.asarray(lo, dtype=np.float64)
        narrowest, widest = float(np.min(widths)), float(np.max(widths))
        if not (np.isfinite(widest) and widest > ONE_SCALE_RATIO * narrowest):
            return
        what, instead = self.one_scale
        warnings.warn(
            f"{self.method} takes {what} in the data's units, one scale for every column, and "
            f"the columns' ranges differ in width ({narrowest:.3g} to {widest:.3g}): the "
            f"narrow columns carry the noise of the widest and may say nothing. Rescale the "
            f"columns to one range, or use {instead}, which run each column in units of its "
            f"range.", NoisyReleaseWarning, stacklevel=user_stacklevel())

    def floating_point_stages(self, n: int, d: int, sparse: bool = False) -> str | None:
        """With ``secure_noise``, the stages a release of n rows of d columns (``sparse``:
        baskets) may still draw in floating point, as its ``SecureNoiseWarning`` names them
        (None: every stage is exact). Public: n, d, the input's kind, the plan."""
        return None

    def warn_if_floating_stages(self, n: int, d: int, sparse: bool = False) -> None:
        """With ``secure_noise``, a ``SecureNoiseWarning`` naming the stages that still draw in
        floating point (``floating_point_stages``), once a release: from ``_estimate`` where the
        estimator runs in its box, after a private box or a budget's calibration."""
        floating = self.floating_point_stages(n, d, sparse) if self.secure_noise else None
        if floating:
            warnings.warn(
                f"secure_noise=True makes the Gaussian-mechanism stages exact; {floating} "
                f"still draw in floating point (see docs/privacy.md, 'Randomness and floating "
                f"point')", SecureNoiseWarning, stacklevel=user_stacklevel())

    def _estimate(self, x: Any) -> MeanResult:
        # Each release validates its bounds afresh (``box`` keeps them for this release only:
        # a caller may have changed the arrays in place since the last one).
        self.__dict__.pop("_checked_boxes", None)
        n, d = public_shape(x)
        if not is_sparse(x):
            # By its declared dtype before anything else: a dask array of text at too few rows
            # released the fallback where the same array in memory was refused (a review).
            check_declared_dtype(x, d)
        self.check_secure_scale(n, d)
        if self.engine is not None and reads_whole(x, self.engine):  # before any charge
            check_whole_read_fits(n, d, self.engine, isinstance(x, DatSource))
        baskets = self.reads_baskets(x)
        if self.finds_its_box():
            granted = self.granted(n, d, baskets)  # sparse input is refused below
            if granted is not self:
                return granted._estimate(x)
            return self._estimate_in_private_box(x, n, d)
        sparse = self.runs_sparse(x)
        granted = self.granted(n, d, baskets)
        if granted is not self:
            return granted._estimate(x)
        offset = None if sparse else self.far_box_offset(n, d)
        if offset is not None:
            return self._estimate_moved(x, n, d, offset)
        self.check_box_reach(n, d)
        lo, hi = self.box(n, d)
        scale = self.box_scale(n, d)
        unit_lo, unit_hi = self.unit_box(n, d)
        ledger = PrivacyLedger(self.total, self.budget.unit)
        # The split is fixed from public values and checked against the budget before any data
        # value is read.
        budget = ledger.plan(self.budget_plan(n, d))
        # Deferred inputs (row sources, dask arrays) are validated chunk by chunk as read.
        data = check_sparse_data(x) if sparse else x if is_deferred(x) else check_data(x)
        if self.too_few_rows(n, d, budget):
            return self._fallback(n, d, lo, hi, budget, ledger)
        # Baskets by their reading, as the accounting takes them (a .dat file read densely
        # keeps PLAN's basket stages: a review).
        self.warn_if_floating_stages(n, d, baskets)  # (a fallback draws nothing: a review)
        engine = make_engine(data, lo, hi, self.engine, scale=scale)
        mean, diagnostics = self.release(engine, budget, ledger, make_rng(self.random_state))
        # Every stage must have been charged its plan by the mechanism that spent it.
        ledger.verify()
        self.check_events(ledger, n, d, baskets)
        if scale is not None:
            mean, diagnostics = mean / scale, restore_diagnostics(diagnostics, scale)
        result = MeanResult(mean=self.project(mean, n, d), method=self.method, n=n, d=d,
                            budget=self.budget, ledger=ledger.spent,
                            diagnostics=self.diagnostics_of(diagnostics, d, lo, hi, scale))
        warn_if_mostly_noise(result)
        return result

    def rows_needed(self, n: int, d: int) -> float:
        """The fewest rows m >= n that this estimator releases with (``too_few_rows`` false for
        its plan at m; public: n, d, the box, the budget): where the minimum, or the plan
        itself, changes with n (the trimmed mean's trimming, ln n / epsilon; IOME's and PLAN's
        stages and shares), the minimum at n is not enough rows (the trimmed mean at d = 1000,
        rho = 0.01 said 5,101 at n = 2 and 10,363 at n = 5,101, where 10,870 release: a user
        trial; iome at d = 1, rho = 0.01 said 276 where 318 release: a review). Each step
        asks the minimum at the last count, so an (epsilon, delta) budget keeps the rho
        calibrated at n."""
        rows = float(n)
        for _ in range(64):  # a fixed point of a slowly growing minimum: a few steps
            m = math.ceil(rows)
            plan = self.budget_plan(m, d)
            if not self.too_few_rows(m, d, plan):
                break
            lo, hi = self.unit_box(m, d)
            rows = float(max(m + 1, math.ceil(self.minimum_rows(m, lo, hi, plan))))
            if rows > 2.0**53:  # beyond any table (and numpy's integers): as good as said
                break
        return rows

    def too_few_rows(self, n: int, d: int, budget: Mapping[str, float]) -> bool:
        """Whether n rows are too few for this estimator's plan ``budget`` in its box (public:
        n, d, the box, the plan): the release is then the fallback."""
        unit_lo, unit_hi = self.unit_box(n, d)
        return bool(n < self.minimum_rows(n, unit_lo, unit_hi, dict(budget)))

    def fallback_reason(self, n: int, d: int, sparse: bool = False) -> str | None:
        """Why a release of data of shape (n, d) (baskets where ``sparse``) would be the
        fallback (the warning it would give), or None, decided as ``estimate`` decides it from
        public values only (n, d, the box, the budget): a caller that must account a release
        before reading the data (the command line's ``--ledger``) refuses it at no cost. None
        where the box is private (found in the release)."""
        self.check_secure_scale(n, d)
        if self.finds_its_box():
            return None
        granted = self.granted(n, d, sparse)
        if granted is not self:
            return granted.fallback_reason(n, d, sparse)
        offset = None if sparse else self.far_box_offset(n, d)
        if offset is not None:
            return self._moved(n, d, offset).fallback_reason(n, d)
        self.check_box_reach(n, d)
        plan = self.budget_plan(n, d)
        return self.fallback_message(n, d) if self.too_few_rows(n, d, plan) else None

    def check_sparse_box(self, d: int) -> None:
        """Refuse, before any charge, bounds that miss 0 in some column for rows the sparse
        engine runs (its implicit zeros must stay zeros: ``SparseEngine``). Public: the
        bounds. A session charged such a release, then the engine refused it (a review)."""
        from ..engines.sparse import check_sparse_box

        if not self.finds_its_box():
            check_sparse_box(*check_bounds(self.bounds, d))

    def check_sparse_questions(self, n: int, d: int) -> None:
        """Refuse, before any charge, options whose plan for rows of shape (n, d) that run on
        the sparse engine asks questions it refuses, after the charge, without densifying
        (``session.check_input_type`` asks where the rows run there): here
        ``sparse_engine_refuses``. Public: the class, the options, n, d."""
        if self.sparse_engine_refuses is not None:
            raise self.sparse_engine_refusal(self.sparse_engine_refuses)

    def sparse_engine_refusal(self, what: str) -> InvalidParameterError:
        """The refusal of ``check_sparse_questions``: ``what`` the release would ask."""
        return InvalidParameterError(
            f"{self.method}: {what}, which the sparse engine does not answer without "
            f"densifying; give dense rows (a dense array, e.g. a sparse matrix's .toarray(); "
            f"for a .dat file engine='memory' or 'chunked')")

    def secure_coordinates(self, d: int) -> int:
        """The most coordinates a secure release of this estimator's takes on d columns (a
        rotation pads to at most 2 d; public)."""
        return 2 * d

    def check_secure_scale(self, n: int, d: int) -> None:
        """With ``secure_noise``, refuse before any charge a shape whose release grid is finer
        than float64 sums hold (``grid_sums.check_secure_scale``; public: n, d)."""
        if self.secure_noise:
            from ..engines.grid_sums import check_secure_scale

            check_secure_scale(n, self.secure_coordinates(d))

    def check_box_reach(self, n: int, d: int) -> None:
        """For an estimator that measures the rows' norms about the origin, refuse before any
        charge a box (the one the release runs in, after any far-box shift) whose farthest
        corner's squared distance from the origin overflows float64: the rows' norms would be
        inf. A review found (6e153, 1.2e154)^2 refused by the radius search after the charge.
        Public: the box. (A private box holds the origin, so its diameter overflows first:
        the fallback.)"""
        if not self.norms_about_origin or self.finds_its_box():
            return
        lo, hi = self.unit_box(n, d)
        with np.errstate(over="ignore"):
            squared = float(np.sum(np.square(np.maximum(np.abs(lo), np.abs(hi)))))
        if not np.isfinite(squared):
            raise InvalidParameterError(
                f"{self.method}: the box's farthest corner lies too far from the origin for "
                f"the rows' norms about it to be computed in float64 (their squares "
                f"overflow); rescale the data, e.g. to other units, or use a method that "
                f"centres the rows first ('iome', 'plan')")

    def far_box_offset(self, n: int, d: int) -> np.ndarray | None:
        """The public shift a release runs at, or None: where a column's box lies farther from
        the origin than ``FAR_BOX`` times its width, its centre (0 for the other columns).

        Why: float64 carries about 16 digits, so at 10^15 its spacing is 0.125; the mean of
        rows in a box [10^15, 10^15 + 1] plus noise of standard deviation 0.0005 rounds back
        to the spacing's grid, and the release was a number fixed by the data, different for
        neighbouring datasets (a leak with certainty; secure noise too). Rows clamped to the
        box and moved by its centre are exact (nearby floats subtract exactly), the release
        runs near the origin, and the offset is added back to the noisy result:
        post-processing. A function of the public box alone: the release box, which is the
        caller's box also where the rows are not clamped to it (the trimmed mean's output
        truncation)."""
        if not self.shifts_far_box:
            return None
        lo, hi = self.release_box(n, d)
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
            return None
        # Secure noise: every box that does not hold the origin, so that a box's sum has terms
        # no larger than its width (``engines.grid_sums``).
        far = np.maximum(np.abs(lo), np.abs(hi)) > (1.0 if self.secure_noise else FAR_BOX) * (
            hi - lo)
        if not far.any():
            return None
        return np.where(far, lo / 2.0 + hi / 2.0, 0.0)

    def _moved(self, n: int, d: int, offset: np.ndarray) -> MeanEstimator:
        """This estimator (its budget, calibration and stream) in the release box moved by
        ``-offset`` (``far_box_offset``)."""
        import copy

        release_lo, release_hi = self.release_box(n, d)
        moved = copy.copy(self)
        moved.__dict__.pop("_checked_boxes", None)
        moved.bounds = (release_lo - offset, release_hi - offset)
        return moved

    def _estimate_moved(self, x: Any, n: int, d: int, offset: np.ndarray) -> MeanResult:
        """The release of ``x`` clamped and moved by ``-offset`` in the box moved alike (this
        estimator's budget, calibration and stream), moved back: the mean and the positions
        among its diagnostics (``POSITION_DIAGNOSTICS``) plus ``offset``."""
        from ..engines import RowSource, is_dask_array
        from ..engines.chunked import ShiftedSource, moved_rows

        moved = self._moved(n, d, offset)
        # Rows are clamped to the box first (exact differences, none overflows); where they
        # are not clamped to it (output truncation), to what keeps x - offset finite.
        limit = (np.finfo(np.float64).max - np.abs(offset)) / 2.0
        box_lo, box_hi = self.box(n, d)
        lo, hi = np.maximum(box_lo, -limit), np.minimum(box_hi, limit)
        if isinstance(x, RowSource):
            rows: Any = ShiftedSource(x, lo, hi, offset)
        elif is_dask_array(x):
            x = x[:, None] if x.ndim == 1 else x  # one variable: blocks of one column
            rows = x.map_blocks(moved_rows, lo, hi, offset, dtype=np.float64)
        else:
            rows = moved_rows(x, lo, hi, offset)
        result = moved._estimate(rows)
        diagnostics = dict(result.diagnostics)
        for key in POSITION_DIAGNOSTICS:
            if diagnostics.get(key) is not None:
                diagnostics[key] = np.asarray(diagnostics[key], dtype=np.float64) + offset
        diagnostics["box_offset"] = offset
        return MeanResult(mean=result.mean + offset, method=result.method, n=n, d=d,
                          budget=result.budget, ledger=result.ledger, diagnostics=diagnostics,
                          fallback=result.fallback)

    def runs_sparse(self, x: Any) -> bool:
        """Whether ``x`` runs on the sparse engine (its type and the options: public)."""
        return is_sparse(x) and (self.supports_sparse or self.engine == "sparse")

    def reads_baskets(self, x: Any) -> bool:
        """Whether ``x`` is transaction baskets by its type (public): scipy.sparse input on the
        sparse engine, or a .dat row source read in dense chunks (``Engine.baskets``), which
        must give the same release. The mechanisms some estimators plan follow it (the
        ``sparse`` argument of ``stage_events`` and ``granted``)."""
        from ..engines import DatSource

        return self.runs_sparse(x) or isinstance(x, DatSource)

    def baskets_read_sparse(self, x: Any) -> Any:
        """``x``, or a ``.dat`` basket source (``DatSource``) as a scipy.sparse matrix where
        this estimator runs sparse rows on its engine (none named, or ``sparse``), as the
        command line reads such a file: the same release, which dense chunks took 40 times
        longer to make (a review, Retail baskets through ``dpmean.mean``). Read here, where
        the release reads its rows (a session has charged), since reading judges the ids."""
        return x.sparse() if self.reads_baskets_sparse(x) else x

    def reads_baskets_sparse(self, x: Any) -> bool:
        """Whether ``baskets_read_sparse`` makes ``x`` a scipy.sparse matrix: a ``.dat`` basket
        source, an estimator that takes sparse rows, its engine none or ``sparse``. Public (the
        input's type and the options), for the checks before a session's charge."""
        return (isinstance(x, DatSource) and self.engine in (None, "sparse")
                and self.supports_sparse)

    def check_private_box_input(self, x: Any) -> None:
        """Refuse, from public information only (the budget's notion, the input's type), what
        a private box cannot take: a session calls it before its charge."""
        if self.budget.unit != "rho" or self.budget.notion != "zCDP":
            raise InvalidParameterError(
                f"{self.method}: finding the bounds privately needs a zCDP budget (rho, or "
                f"epsilon and delta); with a {self.budget.notion} budget give bounds=(lo, hi)")
        if is_sparse(x):
            raise InvalidParameterError(
                f"{self.method}: sparse input needs bounds (baskets: bounds=(0, 1)); a private "
                f"box would read every column densely")

    def _estimate_in_private_box(self, x: Any, n: int, d: int) -> MeanResult:
        """Without bounds: ``BOUNDS_SHARE`` of rho buys a private box over the whole float64
        range (stage "bounds", ``private_bounds.private_box``); the same estimator then runs
        in it with the rest (its stages keep their names in the ledger). The box is a DP
        output: the result carries it (``bounds_lo``, ``bounds_hi``, ``private_bounds``)."""
        from .private_bounds import BOUNDS_SHARE, LIFT_WARN_LEVELS, private_box

        self.check_private_box_input(x)
        rho_box = self.rho * BOUNDS_SHARE
        ledger = PrivacyLedger(self.total)
        ledger.plan({"bounds": rho_box})
        data = x if is_deferred(x) else check_data(x)
        unbounded = np.full(d, np.inf)
        rng = make_rng(self.random_state)
        lo, hi, borrowed, lifted = private_box(
            make_engine(data, -unbounded, unbounded, self.engine), rho_box, rng, ledger=ledger,
            secure=self.secure_noise)
        ledger.verify()
        lo, hi = within_declared_range(lo, hi, getattr(x, "dtype", None))
        none_found = bool(np.isnan(lo).any())  # no bin cleared the threshold somewhere
        with np.errstate(over="ignore", invalid="ignore"):
            # A box whose squared diameter overflows float64 (values near 1e308): no estimator
            # computes in it, and refusing it after the charge told the user to rescale bounds
            # they never gave (review). Post-processing of the noisy box, like the NaN case.
            too_wide = not none_found and not np.isfinite(np.sum(np.square(hi - lo)))
        if none_found or too_wide:
            reason = ("the private box reaches values too large to compute a mean with in "
                      "float64 (its squared diameter overflows); rescale the data, e.g. to "
                      "other units" if too_wide else
                      f"n={n} rows is too few for {self.budget} to find a private box (no bin "
                      f"of the columns' histograms, alone or summed, clears its noise; values "
                      f"that are exactly 0 fall in no bin, so all-zero data find none either)")
            advice = ("" if too_wide else
                      " Give bounds=(lo, hi), a larger budget or more rows.")
            warnings.warn(f"{self.method}: {reason}; releasing the zero vector.{advice}",
                          InsufficientDataWarning, stacklevel=user_stacklevel())
            return MeanResult(mean=np.zeros(d), method=self.method, n=n, d=d,
                              budget=self.budget, ledger=ledger.spent,
                              diagnostics=normalise({"private_bounds": True,
                                                     "secure_noise": self.secure_noise},
                                                    self.diagnostic_declarations(), d),
                              fallback=True)
        # A column whose values all lie below about 1e-100 gets a box narrower than any box
        # may be (NARROWEST_WIDTH), which no estimator computes in; refusing it came after the
        # charge (a review). Widened to that width, post-processing of the noisy box, and told.
        widened = hi - lo < NARROWEST_WIDTH
        lo = np.where(widened & (lo < 0), -NARROWEST_WIDTH, lo)
        hi = np.where(widened & (hi > 0), NARROWEST_WIDTH, hi)
        # The rest of the budget, the same options, the private box, and the same stream.
        # What is left, an ulp less where rho_box + (rho - rho_box) would round above rho.
        inner = self.in_box(remainder(self.rho, rho_box), (lo, hi), rng)
        if self._granted_for is not None:
            # Calibrated with the plans in stand-in boxes: this box's plan must compose as
            # one of them.
            from ..events import equivalent_events

            sparse = self._granted_for[2]
            events = inner.plan_events(n, d, sparse)
            if not any(equivalent_events(events, option)
                       for option in self.stand_in_plans(n, d, sparse)[1]):
                raise PrivacyAccountingError(
                    f"{self.method}: the plan in the private box is accounted differently from "
                    f"the plans the (epsilon, delta) calibration composed; the release must "
                    f"not leave")
        result = inner.estimate(data)
        extra = {"private_bounds_borrowed": borrowed.astype(np.int64)} if borrowed.any() else {}
        if (lifted >= LIFT_WARN_LEVELS).any():
            extra["private_bounds_lifted"] = lifted.astype(np.int64)
        if widened.any():
            extra["private_bounds_widened"] = widened.astype(np.int64)
        return MeanResult(mean=result.mean, method=self.method, n=n, d=d, budget=self.budget,
                          ledger={**ledger.spent, **result.ledger},
                          diagnostics={**result.diagnostics, "private_bounds": True, **extra},
                          fallback=result.fallback)

    def project(self, mean: np.ndarray, n: int, d: int) -> np.ndarray:
        """``mean`` projected onto the public ``release_box`` (coordinate by coordinate, the
        nearest point of the box): post-processing that never moves a release away from any
        point of the box, the clamped data's exact mean included. No-op for unbounded boxes."""
        lo, hi = self.release_box(n, d)
        return np.clip(mean, lo, hi)

    def describe(self, diagnostics: dict[str, Any]) -> dict[str, Any]:
        """The diagnostics a result carries (subclasses add public settings)."""
        return diagnostics

    def diagnostics_of(self, raw: dict[str, Any], d: int, lo: np.ndarray, hi: np.ndarray,
                       scale: np.ndarray | None = None) -> dict[str, Any]:
        """The diagnostics a result carries: the release's by-products ``raw`` with the
        estimator's public settings (``describe``) and those of every result
        (``public_settings``), each converted to its declared type (``dpmean.diagnostics``)."""
        return normalise(self.public_settings(self.describe(raw), lo, hi, scale),
                         self.diagnostic_declarations(), d)

    def public_settings(self, diagnostics: dict[str, Any], lo: np.ndarray,
                        hi: np.ndarray, scale: np.ndarray | None = None) -> dict[str, Any]:
        """``diagnostics`` with the public settings every result carries: the box the data was
        clamped to (``bounds_lo``, ``bounds_hi``), ``secure_noise`` and, for a box-normalised
        release, the factors ``box_scale``; confidence intervals need them
        (``dpmean.intervals``)."""
        out = {**diagnostics, "bounds_lo": lo, "bounds_hi": hi,
               "secure_noise": self.secure_noise}
        if scale is not None:
            out["box_scale"] = scale
        return out

    def fallback_message(self, n: int, d: int) -> str:
        """The warning of a release that n rows are too few for (public: n, d, the box, the
        budget)."""
        # Whether any budget would do at n: a plan 10^12 times larger, where the minimum is
        # one of rows alone (cm needs 2 rows at any budget: a trial was told "a larger
        # budget" at rho = 10^8).
        lo, hi = self.unit_box(n, d)
        richer = {stage: 1e12 * rho for stage, rho in self.budget_plan(n, d).items()}
        advice = ("more rows" if n < self.minimum_rows(n, lo, hi, richer)
                  else "a larger budget or more rows")
        return (f"{self.method}: n={n} rows is too few for {self.budget} in d={d} dimensions "
                f"(needs at least {_row_count(self.rows_needed(n, d))}); "
                f"releasing the zero vector (projected onto the box), as the paper does. Give "
                f"{advice}.")

    def _fallback(
        self, n: int, d: int, lo: np.ndarray, hi: np.ndarray, budget: dict[str, float],
        ledger: PrivacyLedger,
    ) -> MeanResult:
        warnings.warn(self.fallback_message(n, d), InsufficientDataWarning,
                      stacklevel=user_stacklevel())
        return MeanResult(mean=self.project(np.zeros(d), n, d), method=self.method, n=n, d=d,
                          budget=self.budget, ledger=ledger.spent,
                          diagnostics=self.diagnostics_of({}, d, lo, hi),
                          fallback=True)


# Every result's keys, in the base's docstring (subclasses list only theirs).
document(MeanEstimator, MeanEstimator.declared_diagnostics)


# Diagnostics that are coordinates of the data (or lengths along one coordinate): in a
# box-normalised release they are mapped back to the data's units, coordinate j divided by
# box_scale_j. An isotropic noise_std becomes the per-coordinate vector it is in those units.
# Everything else (radii, norm bounds, PLAN's scale factors, predicted noises) describes the
# normalised space and stays in it.
COORDINATE_DIAGNOSTICS = ("noise_std", "centre", "std", "clip_residual", "clip_residual_std")
# Diagnostics that are points of the data's space (not lengths): a release moved by a public
# offset (``MeanEstimator.far_box_offset``) moves them back with its mean.
POSITION_DIAGNOSTICS = ("centre", "bounds_lo", "bounds_hi")
# A column's box farther from the origin than this many widths runs moved to its centre: the
# float64 spacing there stays 2^-42 of the width, as near the origin for rows of any n.
FAR_BOX = 2.0**10


def restore_diagnostics(diagnostics: dict[str, Any], scale: np.ndarray) -> dict[str, Any]:
    """``diagnostics`` of a release in the box-normalised space, with the coordinates in
    ``COORDINATE_DIAGNOSTICS`` mapped back to the data's units (divided by ``scale``)."""
    out = dict(diagnostics)
    for key in COORDINATE_DIAGNOSTICS:
        value = out.get(key)
        if value is not None and np.ndim(value) <= 1:
            out[key] = np.asarray(value, dtype=np.float64) / scale
    return out


def warn_if_box_borrowed(result: MeanResult) -> None:
    """A ``NoisyReleaseWarning`` naming the columns whose private box was borrowed from the
    widest columns' (``private_bounds.private_box``: their own values did not clear the
    noise, in a table of very different scales), with the box they got and what would help.
    Post-processing of the private box's counts."""
    borrowed = result.diagnostics.get("private_bounds_borrowed")
    if borrowed is None or not np.any(borrowed):
        return
    which = np.flatnonzero(borrowed)
    shown = shown_columns(result, which)
    lo = float(np.asarray(result.diagnostics["bounds_lo"])[which[0]])
    hi = float(np.asarray(result.diagnostics["bounds_hi"])[which[0]])
    its, them = ("their", "them") if len(which) > 1 else ("its", "it")
    warnings.warn(
        f"{result.method}: column{'s' if len(which) > 1 else ''} {shown} got the widest "
        f"columns' private box [{lo:.3g}, {hi:.3g}]: too few of {its} values cleared the noise "
        f"to place {its} own (e.g. a rare 0/1 flag), and {its} release carries that box's "
        f"noise. {_BOX_ADVICE.format(them=them, its=its)}", NoisyReleaseWarning,
        stacklevel=user_stacklevel())


# What helps a column whose private box is far wider than its values (``bounds`` must name
# every column used: a column alone, with ``columns=``, gets a private box of its own scale).
_BOX_ADVICE = ("Give bounds for every column (bounds={{name: (lo, hi), ...}}; on the command "
               "line --range NAME=LO:HI for each), or release {them} apart (columns=[...]; "
               "--columns) for a box of {its} own scale; a larger budget or more rows also "
               "help.")


def warn_if_box_lifted(result: MeanResult) -> None:
    """A ``NoisyReleaseWarning`` naming the columns that wider columns lifted at least
    ``LIFT_WARN_LEVELS`` powers of two above their own values (``private_box``: they share
    the widest columns' box, within 2^10 of them), with the box and the factor. Post-processing
    of the private box's counts."""
    lifted = result.diagnostics.get("private_bounds_lifted")
    if lifted is None:
        return
    from .private_bounds import LIFT_WARN_LEVELS

    which = np.flatnonzero(np.asarray(lifted) >= LIFT_WARN_LEVELS)
    if not which.size:
        return
    worst = which[np.argmax(np.asarray(lifted)[which])]
    lo = float(np.asarray(result.diagnostics["bounds_lo"])[worst])
    hi = float(np.asarray(result.diagnostics["bounds_hi"])[worst])
    many = len(which) > 1
    its, them = ("their", "them") if many else ("its", "it")
    warnings.warn(
        f"{result.method}: column{'s' if many else ''} {shown_columns(result, which)} got the "
        f"private box of wider columns ([{lo:.3g}, {hi:.3g}]"
        f"{' for ' + shown_columns(result, np.array([worst])) if many else ''}, "
        f"2^{int(np.asarray(lifted)[worst])} times the reach of {its} own values): {its} "
        f"release carries that box's noise. {_BOX_ADVICE.format(them=them, its=its)}",
        NoisyReleaseWarning, stacklevel=user_stacklevel())


def warn_if_box_widened(result: MeanResult) -> None:
    """A ``NoisyReleaseWarning`` naming the columns whose private box was widened to
    ``NARROWEST_WIDTH`` (their values are all smaller), with what would help. Post-processing
    of the private box."""
    widened = result.diagnostics.get("private_bounds_widened")
    if widened is None or not np.any(widened):
        return
    which = np.flatnonzero(widened)
    many = len(which) > 1
    its = "their" if many else "its"
    warnings.warn(
        f"{result.method}: the private box{'es' if many else ''} of column{'s' if many else ''} "
        f"{shown_columns(result, which)} {'were' if many else 'was'} narrower than "
        f"{NARROWEST_WIDTH:g}, the narrowest width a box may have, and widened to it: {its} "
        f"values are all smaller, and {its} release may carry noise of that width, far above "
        f"them. Rescale the data "
        f"(e.g. multiply by 1e100 and divide the release by it), or give bounds.",
        NoisyReleaseWarning,
        stacklevel=user_stacklevel())


def shown_columns(result: MeanResult, which: np.ndarray) -> str:
    """The columns ``which`` of a release for a message: by name where the data had names,
    else by position; the first 8, and how many more."""
    names = ([repr(result.columns[j]) for j in which] if result.columns is not None
             else [str(j) for j in which])
    return ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")


# The most the columns' ranges may differ in width before an estimator of one scale in the
# data's units (``MeanEstimator.one_scale``) warns: its narrow columns then carry at least
# twice their own scale's noise.
ONE_SCALE_RATIO = 2.0

# The noise's interval the release warnings judge by: two-sided, this level.
NOISY_LEVEL = 0.95


def noise_and_box(result: MeanResult) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The release's noise std per coordinate (``intervals.error_model``, in the data's
    units) and its public box (lo, hi), or None where either is missing (a fallback, or a
    noise scale the intervals do not model): what the release warnings read, post-processing
    of the release's diagnostics."""
    from ..intervals import error_model  # intervals reads results; results do not need it

    model = error_model(result)
    lo, hi = result.diagnostics.get("bounds_lo"), result.diagnostics.get("bounds_hi")
    # A local or shuffle protocol has no interval, but where it states its noise the warnings
    # read it: a trial's rows in cents in a box in dollars came out at the face without a word.
    std = (result.diagnostics.get("noise_std")
           if result.diagnostics.get("model") in ("local", "shuffle")
           else None if isinstance(model, str) else model.noise_std)
    if std is None or lo is None or hi is None:
        return None
    return (np.asarray(std, dtype=np.float64), np.asarray(lo, dtype=np.float64),
            np.asarray(hi, dtype=np.float64))


def noise_half_width(std: np.ndarray) -> np.ndarray:
    """Half the noise's two-sided ``NOISY_LEVEL`` interval: its reach either side."""
    from ..mechanisms.gaussian import normal_isf

    return float(normal_isf((1.0 - NOISY_LEVEL) / 2.0)) * std


# The most of the box's width the noise's 95% reach may span for a release within it of a face
# to be read as on the face (a wider reach says nothing of where the rows lie).
FACE_REACH = 10.0
# The share of the coordinates whose release must lie on a face for the warning: nearly all
# (MNIST rescaled to (-1, 1) has 56% of its pixels' means at -1, inside its box).
FACE_SHARE = 0.9
# A release within this fraction of the box's magnitude of a face, and of FACE_ROUNDING_WIDTH
# of its width, is on it (rounding).
FACE_ROUNDING = 2.0**-40
FACE_ROUNDING_WIDTH = 2.0**-20


def _near_faces(mean: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                slack: np.ndarray | float) -> np.ndarray:
    """The coordinates of ``mean`` within ``slack`` of a face of [lo, hi] that is not at 0:
    a face at 0 is where counts, flags and baskets lie (the value sparse formats leave out)."""
    return ((mean - lo <= slack) & (lo != 0.0)) | ((hi - mean <= slack) & (hi != 0.0))


def warn_if_on_the_faces(result: MeanResult) -> None:
    """A ``BoxFaceWarning`` when the release lies on a face of the box (at lo or hi, where the
    release is projected, or within the noise's 95% reach of one where that reach is under a
    tenth of the box) in nearly all coordinates (``FACE_SHARE``): rows outside the box are
    clamped to it, so such a release says the data lie at or beyond those faces, which is what
    a box in the wrong units gives (a user trial: ranges 200:300 for ages, incomes and hours
    released 200, 300, 200 without a word). Nearly all, not most (a review: MNIST in (-1, 1),
    flags near 1), and faces at 0 are not counted: a rare flag or item released at 0 is right,
    and most of a basket matrix's items are. Post-processing of the release, its noise scale
    and the public box. Not judged: a fallback release (the box's point nearest the origin,
    often a corner, says nothing of the data; ``error_model`` has none), nor a release
    without a noise scale per coordinate there (the trimmed mean's is as sensitive as the
    data; CoinPress's without its profile is not modelled; the protocols state their own,
    ``noise_std``): a release projected onto a face may be the noise's doing."""
    judged = noise_and_box(result)
    if judged is None:
        return
    std, lo, hi = judged
    mean = np.asarray(result.mean, dtype=np.float64)
    # On a face, or within the noise's 95% reach of one (the noise moves a release of rows
    # all clamped to a face off it, inward), where that reach is a small part of the box. The
    # release's own arithmetic (a rotation back, a rescaling) leaves it off a face by rounding:
    # IOME's release of rows all below a box (200, 300) lay 3.6e-15 above one face where the
    # noise's reach was 2.5e-17, so four of five columns were on their faces (a user trial).
    # The rounding allowance is capped at a sliver of the box's width, and the noise alone is
    # held to its tenth: in a box far from 0 (10^13 + (0, 100)) 2^-40 of its magnitude is 9,
    # which put rows 3 inside it on the face, and in (10^15, 10^15 + 10) the uncapped
    # allowance (909) failed the tenth and hid rows below the box (a review).
    reach = noise_half_width(std)
    rounding = np.minimum(FACE_ROUNDING * np.maximum(np.abs(lo), np.abs(hi)),
                          FACE_ROUNDING_WIDTH * (hi - lo))
    on_face = _near_faces(mean, lo, hi, reach + rounding) & (reach <= (hi - lo) / FACE_REACH)
    _warn_if_nearly_all(
        result, on_face, BoxFaceWarning,
        "{method}: the release lies on the box's faces in {faces} of {d} coordinates "
        "({columns}): the rows lie at or beyond those faces (rows outside the box are clamped "
        "to it). If the box was meant to hold them with room, check its values and units.")


def _warn_if_nearly_all(result: MeanResult, on_face: np.ndarray, category: type[Warning],
                        message: str) -> None:
    """``message`` (formatted with the method, the count of faces, d and the columns) as a
    ``category`` warning where ``on_face`` holds for nearly all coordinates (``FACE_SHARE``)."""
    faces = int(np.count_nonzero(on_face))
    if faces < FACE_SHARE * result.d:
        return
    warnings.warn(message.format(method=result.method, faces=faces, d=result.d,
                                 columns=shown_columns(result, np.flatnonzero(on_face))),
                  category, stacklevel=user_stacklevel())


# Where the noise's NOISY_LEVEL interval alone spans more than NOISY_SHARE of the box, the
# release says little the box did not.
NOISY_SHARE = 0.5


def _box_ratio(std: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The noise's two-sided ``NOISY_LEVEL`` interval in units of ``NOISY_SHARE`` of the box:
    above 1 on a coordinate, the release says little the box does not."""
    return 2.0 * noise_half_width(std) / (NOISY_SHARE * (hi - lo))


def _mostly_noise(ratio: np.ndarray, d: int) -> bool:
    """Whether ``_box_ratio`` is above 1 on most of the d coordinates: ``warn_if_mostly_noise``'s
    case, which ``warn_if_drowned`` leaves to it."""
    return 2 * int(np.count_nonzero(ratio > 1.0)) > d


def warn_if_mostly_noise(result: MeanResult) -> None:
    """A ``NoisyReleaseWarning`` when the noise's two-sided ``NOISY_LEVEL`` interval (from its
    standard deviation, released in the diagnostics: post-processing) is wider than
    ``NOISY_SHARE`` of the box on most coordinates, with the budget or n that would bring it
    within that share (noise scales as 1 / (n sqrt(rho))). It compared the standard deviation
    itself with the width: at n = 20, rho = 0.01 an age in (18, 90) got a standard deviation
    of 0.87 widths, every 95% interval was the whole box, and nothing was said (a user trial);
    then the interval with the whole width: auto's Gaussian release at n = 50, rho = 0.05,
    d = 10 in +-10^4 erred by 1.3e4 (its interval 78% of the box) without a word (another)."""
    judged = noise_and_box(result)
    if judged is None:
        # No released noise scale (the trimmed mean's is as sensitive as the data): judged by
        # where it landed.
        warn_if_projected_onto_the_faces(result)
        return
    std, lo, hi = judged
    ratio = _box_ratio(std, lo, hi)
    if not _mostly_noise(ratio, result.d):
        return
    loud = int(np.count_nonzero(ratio > 1.0))
    factor = float(np.median(ratio))
    # A radius near float64's largest makes the factor's square overflow (CoinPress at
    # radius 1e200 with its interval's profile): inf, said as such.
    squared = factor * factor if factor < 1e154 else math.inf
    more_rho = ("a budget beyond float64's range" if math.isinf(squared * (result.rho or 1.0))
                else f"rho >= {result.rho * squared:.3g}" if result.rho is not None
                # An (epsilon, delta) protocol splits epsilon over its coordinates and rounds
                # and converts each share to its noise its own way: no one figure (a review:
                # epsilon times the factor left the noise above half the box).
                else "a larger epsilon")
    percent = f"{NOISY_LEVEL:.0%}"
    # A local protocol's noise falls as 1 / sqrt(n) (each user adds their own), not 1 / n.
    # (Where a radius is private, as iome-local's, these are rough: it moves with n and rho.)
    rows = result.n * (squared if result.diagnostics.get("model") == "local" else factor)
    warnings.warn(
        f"{result.method}: the noise's {percent} interval is wider than half the box on {loud} "
        f"of {result.d} coordinates (median {NOISY_SHARE * factor:.3g} box widths): the "
        f"release says little the box does not. About {more_rho} or n >= "
        f"{_row_count(rows)} rows would bring it within half the box.",
        NoisyReleaseWarning, stacklevel=user_stacklevel())


def within_declared_range(lo: np.ndarray, hi: np.ndarray, dtype: Any
                          ) -> tuple[np.ndarray, np.ndarray]:
    """A private box (``lo``, ``hi``) cut to the range an input's integer or boolean dtype
    declares (a flag's [0, 1], uint8's [0, 255]), where the cut leaves a box: the data lie
    within that range, so the cut clamps nothing the private box did not, and a flag's box of
    [0, 4] (a power of two beyond its rows) carried 4 times the noise (a user trial). Public
    (the dtype) and post-processing of the noisy box. Other inputs: the box unchanged."""
    if not isinstance(dtype, np.dtype) or dtype.kind not in "biu":
        return lo, hi
    low, high = (0.0, 1.0) if dtype.kind == "b" else (float(np.iinfo(dtype).min),
                                                      float(np.iinfo(dtype).max))
    cut_lo, cut_hi = np.maximum(lo, low), np.minimum(hi, high)
    keep = cut_lo < cut_hi  # (False where a column found no box: NaN stays NaN)
    return np.where(keep, cut_lo, lo), np.where(keep, cut_hi, hi)


# A coordinate whose noise reaches this many times its released value cannot be told from 0;
# the warning fires where more than DROWNED_SHARE of the coordinates are so: most of them. A
# quarter told MNIST's border pixels, which are 0, at n = 1000-5000 (a review: 199 of 784).
DROWNED_RATIO = 100.0
DROWNED_SHARE = 0.5
# A released value this many noise half-widths (the 95% level's) from 0 is not drowned, however
# loose the interval's clipping bound: the noise's own interval excludes 0 by far.
CLEAR_OF_NOISE = 3.0


def warn_if_drowned(result: MeanResult) -> None:
    """A ``NoisyReleaseWarning`` when the release's ``NOISY_LEVEL`` interval (noise and
    clipping bias; the noise alone where the bias has no bound) reaches more than
    ``DROWNED_RATIO`` times the released value, which lies within ``CLEAR_OF_NOISE`` of its
    noise's half-widths from 0, on more than ``DROWNED_SHARE`` of the coordinates, each in a
    box on one side of 0 (not (0, 1)), though the noise is within half the box on most (else
    ``warn_if_mostly_noise`` has said so): columns on a far smaller scale than a box shared
    with larger ones. A user's telemetry table in one box (0, 1e9) released an error rate of
    0.0099 as 35.5 and a CPU share of 28.6 as 0, each with an interval of half a million,
    without a word (a user trial). Post-processing of the release and its diagnostics."""
    from ..intervals import SEARCH_SHARE, error_model

    judged = noise_and_box(result)
    if judged is None:
        return
    std, lo, hi = judged
    if _mostly_noise(_box_ratio(std, lo, hi), result.d):
        return  # warned as such
    mean = np.asarray(result.mean, dtype=np.float64)
    model = error_model(result)
    found = None if isinstance(model, str) else model.interval(mean, NOISY_LEVEL, SEARCH_SHARE)
    noise = noise_half_width(std) * np.ones(result.d)
    reach = noise if found is None else (np.asarray(found[1]) - np.asarray(found[0])) / 2.0
    # Only where the box lies on one side of 0: in a box about 0 (centred features,
    # gradients) a mean near 0 is what the data hold, and says nothing of the box's scale.
    # Nor in (0, 1), the box of flags and baskets by their format: a rare item's frequency
    # is tiny against its noise, and no narrower range exists (Retail's 16,470 items).
    one_sided = ((lo >= 0.0) | (hi <= 0.0)) & ~((lo == 0.0) & (hi == 1.0))
    # And not where the release stands clear of its noise (CLEAR_OF_NOISE half-widths from
    # 0), so that only the clipping's bound is loose, as in a box 10^10 times wider than rows
    # released to within 1% (a researcher's trial: data in [0, 100], bounds (0, 1e12), told
    # "cannot tell them from 0"). Not one half-width: noise that carried a value of 0.01 to
    # 533 clears that half the time, and the telemetry table went untold in 5-15% of
    # releases (a diff review).
    drowned = np.flatnonzero(one_sided & (reach > DROWNED_RATIO * np.abs(mean))
                             & (CLEAR_OF_NOISE * noise >= np.abs(mean)))
    if drowned.size == 0 or drowned.size <= DROWNED_SHARE * result.d:
        return
    many = drowned.size > 1
    its, them = ("their", "them") if many else ("its", "it")
    # How far the interval reaches from the release, on its farther finite side: one
    # unbounded below (a coordinate projected onto the face at 0, the lower end of its
    # clipping's bound then -inf) printed "reaches inf either side" (a review).
    if found is None:
        far = reach
    else:
        ends = np.abs(np.stack([np.asarray(found[0]), np.asarray(found[1])]) - mean)
        far = np.max(np.where(np.isfinite(ends), ends, 0.0), axis=0)
    warnings.warn(
        f"{result.method}: on {drowned.size} of {result.d} coordinates "
        f"({shown_columns(result, drowned)}) the release's {NOISY_LEVEL:.0%} interval reaches "
        f"{float(np.median(far[drowned])):.3g} from {its} released "
        f"value{'s' if many else ''} (the median), more than {DROWNED_RATIO:g} times "
        f"{'those values' if many else 'that value'}, which "
        f"{'lie' if many else 'lies'} within {CLEAR_OF_NOISE:g} noise half-widths of 0: at "
        f"this budget the release does not tell {them} from 0. "
        f"The box's width sets the noise and the clipping's reach; if {its} values lie on a "
        f"far smaller scale than the box, give each column its own range (bounds=(lo, hi) "
        f"arrays or a mapping; on the command line --bounds-file or --range NAME=LO:HI), or "
        f"release {them} apart; a larger budget or more rows also help.",
        NoisyReleaseWarning, stacklevel=user_stacklevel())


def warn_if_projected_onto_the_faces(result: MeanResult) -> None:
    """A ``NoisyReleaseWarning`` for a release without a stated noise scale that was projected
    onto the box's faces, exactly at lo or hi, in nearly all coordinates (``FACE_SHARE``;
    faces at 0 not counted, as ``warn_if_on_the_faces`` does): it cannot tell rows at those
    faces from noise that carried it beyond the box, and either way it says little the box
    does not. A trial: ``coinpress-cov`` at n = 200, d = 1, epsilon 1 released a face of the
    box in 50 releases of 50 (16x the Gaussian mechanism's error), silently. Not judged: a
    fallback (the box's point nearest the origin, said by its own warning). Post-processing
    of the release and the public box."""
    lo, hi = result.diagnostics.get("bounds_lo"), result.diagnostics.get("bounds_hi")
    if result.fallback or lo is None or hi is None:
        return
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    mean = np.asarray(result.mean, dtype=np.float64)
    _warn_if_nearly_all(
        result, _near_faces(mean, lo, hi, 0.0), NoisyReleaseWarning,
        "{method}: the release was projected onto the box's faces in {faces} of {d} "
        "coordinates ({columns}), and this method states no noise scale to tell rows at those "
        "faces from noise beyond the box: the release may say little the box does not. A "
        "larger budget or n, or a method with intervals (README, \"When to name a method "
        "yourself\"), would tell.")


def _row_count(rows: float) -> str:
    """A number of rows for a message: whole below 10^15, else 3 digits (a tiny budget asked
    for 150-digit counts)."""
    return f"{math.ceil(rows):,}" if rows < 1e15 else f"{rows:.3g}"


def public_shape(x: Any) -> tuple[int, int]:
    """n and d from the array's shape alone (public under replace-one)."""
    shape = getattr(x, "shape", None)
    if shape is None:
        shape = sequence_shape(x)  # a ragged list: numpy's ValueError quoted its shape
    if len(shape) == 1:
        shape = (shape[0], 1)
    if len(shape) != 2:
        raise InvalidDataError(f"data must be 1-D or 2-D (n rows, d columns), got shape {shape}")
    if any(isinstance(size, float) and math.isnan(size) for size in shape):
        # A dask array whose chunk sizes are unknown (boolean indexing, from_delayed): n is
        # public and must be known before anything runs.
        raise InvalidDataError("the data's number of rows is unknown (a dask array with unknown "
                               "chunk sizes); call x.compute_chunk_sizes() first")
    if shape[0] == 0:
        raise InvalidDataError("data is empty: no rows")
    if shape[1] == 0:
        raise InvalidDataError("data has no columns")
    return int(shape[0]), int(shape[1])


# Exact rhos already calibrated: (estimator parameters, n, d, sparse) -> rho. A calibration
# composes up to thousands of privacy loss distributions (about a second at d = 2048), and
# experiments release the same setting many times.
_EXACT_RHO: dict[tuple[str, int, int, bool], float] = {}


# The box a calibration without bounds plans in (``MeanEstimator.box_stand_ins``): any box of
# columns of equal widths gives the same accounting, which each release checks for its private
# box.
BOX_STAND_IN = (-1.0, 1.0)


def exact_rho(estimator: MeanEstimator, n: int, d: int, sparse: bool) -> float:
    """The largest rho at which ``estimator``'s plan for (n, d) is (epsilon, delta)-DP for its
    budget's request, composed by privacy loss distributions (``pld.calibrate_scale``: only a
    rho checked to meet the request is returned). Each evaluation takes the plan the estimator
    would make at that rho, structure included, so public switches in the plan (a stage that
    runs only at larger budgets) are accounted as they would run."""
    from ..pld import DEFAULT_DISCRETIZATION, MAX_DISCRETIZATION, calibrate_scale

    budget = estimator.budget
    assert budget.epsilon is not None and budget.delta is not None and budget.rho is not None
    params = {k: _exact(v) for k, v in estimator.get_params().items()
              if k not in ("rho", "epsilon", "delta", "random_state")}
    key = (f"{type(estimator).__name__}{sorted(params.items())!r}{budget!r}", n, d, sparse)
    if key not in _EXACT_RHO:
        def events_at(rho: float) -> list[Event]:
            return estimator.with_rho(rho).plan_events(n, d, sparse)

        # The privacy losses span about the larger of epsilon and the stages' rho (a Gaussian
        # stage's loss has mean rho and standard deviation sqrt(2 rho)), so a fixed grid's
        # size (time and memory) grew with them: 47 s and 1.5 GB for PLAN at epsilon = 1000,
        # out of memory at 10^4; PLAN without scaling at epsilon = 1 and delta = 1 - 1e-9,
        # where rho (76) is far above epsilon, took 5.5 s (2.5 s now). A grid of 10^-5 of
        # the larger of epsilon and the generic conversion's rho (``budget.rho``, where the
        # search starts) keeps it bounded; the discretisation is pessimistic, so a coarser
        # grid only returns a slightly smaller rho, never one that misses the request. Past
        # the coarsest grid (above 10^7) the grid would grow again (minutes at 10^8 on a grid
        # of 0.1): the generic conversion grants the budget there (``granted``).
        interval = max(DEFAULT_DISCRETIZATION, max(budget.epsilon, budget.rho) * 1e-5)
        # The PLD accountant's delta carries about 1e-12 of round-off (its FFT convolutions:
        # 1 - delta read 7e-13 to 2e-12, by the grid, for PLAN without scaling at rho = 4613,
        # whose exact 1 - delta is below e^-1000). Where 1 - delta is not ten thousand times
        # that, the calibration is decided or shaken by round-off (delta = 1 - 1e-12 was granted
        # rho = 4613, more than 40 times what meets it; at 1 - 1e-9 the grant's 1 - delta
        # re-read on a 10x finer grid came out 5e-12 short, sound only through the PLD
        # envelope's slack: the final review): the generic conversion grants the budget there.
        near_one = 1e-8
        if interval > MAX_DISCRETIZATION or 1.0 - budget.delta < near_one:
            _EXACT_RHO[key] = budget.rho
        else:
            _EXACT_RHO[key] = calibrate_scale(budget.epsilon, budget.delta, events_at,
                                              initial_scale=budget.rho, rtol=1e-4,
                                              value_discretization_interval=interval)
    return _EXACT_RHO[key]


def _exact(value: Any) -> Any:
    """``value`` as a cache key that tells every distinct parameter apart: arrays by their
    bytes (their repr elides long arrays, and two boxes must never share a calibration)."""
    if isinstance(value, np.ndarray):
        return ("array", value.shape, value.dtype.str, value.tobytes())
    if isinstance(value, list | tuple):
        return (type(value).__name__, *(_exact(item) for item in value))
    if isinstance(value, dict):
        return ("dict", *sorted((key, _exact(item)) for key, item in value.items()))
    return value
