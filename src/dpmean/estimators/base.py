"""The shape every central-model estimator shares: validate, plan, ask an engine, release.

Subclasses state their budget split (``budget_plan``) and their release (``release``).
"""

from __future__ import annotations

import inspect
import warnings
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ..accounting import PrivacyLedger, resolve_budget
from ..budget import Budget
from ..engines import Engine, check_engine, is_deferred, make_engine
from ..errors import InsufficientDataWarning, InvalidDataError, InvalidParameterError
from ..result import MeanResult
from ..rng import RandomState, make_rng
from ..tables import data_columns
from ..validation import check_bounds, check_data, check_sparse_data, is_sparse


class MeanEstimator(ABC):
    """A differentially private mean of n rows in R^d, rho-zCDP under replace-one neighbours.

    Parameters common to every estimator:
        rho: the zCDP budget; or ``epsilon`` and ``delta``, converted with the tight
            Canonne-Kamath-Steinke bound to the largest rho that meets them.
        bounds: ``(lo, hi)``, scalars or length-d arrays: the public box the data is assumed to
            lie in. Values outside are clamped (silently: reporting how many would leak).
        random_state: None (a cryptographically secure generator keyed from the OS: use this for
            real releases), an int (reproducible, for experiments and tests) or a Generator.
        secure_noise: draw every Gaussian mechanism exactly in integer arithmetic: discrete
            Gaussian noise on counts, and real values released on a fine grid with discrete
            Gaussian noise, so the guarantee of those stages survives floating point (see
            docs/privacy.md). Every central estimator accepts it; exponential-mechanism and
            smooth-sensitivity draws stay floating point. Slower.
        engine: how the data is read (``dpmean.engines.ENGINES``): None chooses by the input's
            type (scipy.sparse -> "sparse" for estimators that declare it, a row source from
            ``dpmean.engines.open_source`` -> "chunked", a dask.array -> "dask", else
            "memory"). "sparse" forces sparse input onto the sparse engine for any estimator
            (it raises if the estimator asks a question it cannot answer). Same estimate, up
            to floating-point summation order, on every engine.
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

    _given: tuple[tuple[Any, ...], dict[str, Any]]

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
        self.secure_noise = bool(secure_noise)
        self.engine = check_engine(engine)
        self.budget = self.grant(rho, epsilon, delta)
        self.bounds = bounds
        make_rng(random_state)  # validates it now; each estimate() makes its own generator
        self.random_state = random_state

    def grant(self, rho: float | None, epsilon: float | None, delta: float | None) -> Budget:
        """The typed budget of the request, in this estimator's notion (validated).

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
        """The public box the engine clamps to."""
        return check_bounds(self.bounds, d)

    def estimate(self, x: Any, columns: Sequence[str] | str | None = None) -> MeanResult:
        """Release the private mean of ``x``: an array of shape (n, d) (or (n,) for one
        variable), a scipy.sparse matrix, a row source, a dask array, or a data frame or Arrow
        table (pandas, polars, pyarrow) whose numeric ``columns`` (default all) are used, by
        name; the result then carries the names (``MeanResult.columns``)."""
        x, names = data_columns(x, columns)
        return self._estimate(x).named(names)

    def _estimate(self, x: Any) -> MeanResult:
        n, d = _public_shape(x)
        lo, hi = self.box(n, d)
        ledger = PrivacyLedger(self.total, self.budget.unit)
        # The split is fixed from public values and checked against the budget before any data
        # value is read.
        budget = ledger.plan(self.budget_plan(n, d))
        sparse = is_sparse(x) and (self.supports_sparse or self.engine == "sparse")
        # Deferred inputs (row sources, dask arrays) are validated chunk by chunk as read.
        data = check_sparse_data(x) if sparse else x if is_deferred(x) else check_data(x)
        if n < self.minimum_rows(n, lo, hi, budget):
            return self._fallback(n, d, lo, hi, budget, ledger)
        engine = make_engine(data, lo, hi, self.engine)
        mean, diagnostics = self.release(engine, budget, ledger, make_rng(self.random_state))
        # Every stage must have been charged its plan by the mechanism that spent it.
        ledger.verify()
        return MeanResult(mean=mean, method=self.method, n=n, d=d, budget=self.budget,
                          ledger=ledger.spent,
                          diagnostics=self.public_settings(self.describe(diagnostics), lo, hi))

    def describe(self, diagnostics: dict[str, Any]) -> dict[str, Any]:
        """The diagnostics a result carries (subclasses add public settings)."""
        return diagnostics

    def public_settings(self, diagnostics: dict[str, Any], lo: np.ndarray,
                        hi: np.ndarray) -> dict[str, Any]:
        """``diagnostics`` with the public settings every result carries: the box the data was
        clamped to (``bounds_lo``, ``bounds_hi``) and ``secure_noise``; confidence intervals
        need them (``dpmean.intervals``)."""
        return {**diagnostics, "bounds_lo": lo, "bounds_hi": hi,
                "secure_noise": self.secure_noise}

    def _fallback(
        self, n: int, d: int, lo: np.ndarray, hi: np.ndarray, budget: dict[str, float],
        ledger: PrivacyLedger,
    ) -> MeanResult:
        warnings.warn(
            f"{self.method}: n={n} rows is too few for {self.budget} in d={d} dimensions "
            f"(needs at least {self.minimum_rows(n, lo, hi, budget):.0f}); releasing the zero "
            f"vector, as the paper does. Give a larger budget or more rows.",
            InsufficientDataWarning,
            stacklevel=3,
        )
        return MeanResult(mean=np.zeros(d), method=self.method, n=n, d=d, budget=self.budget,
                          ledger=ledger.spent,
                          diagnostics=self.public_settings(self.describe({}), lo, hi),
                          fallback=True)


def _public_shape(x: Any) -> tuple[int, int]:
    """n and d from the array's shape alone (public under replace-one)."""
    shape = getattr(x, "shape", None)
    if shape is None:
        shape = np.shape(x)
    if len(shape) == 1:
        shape = (shape[0], 1)
    if len(shape) != 2:
        raise InvalidDataError(f"data must be 1-D or 2-D (n rows, d columns), got shape {shape}")
    if shape[0] == 0:
        raise InvalidDataError("data is empty: no rows")
    if shape[1] == 0:
        raise InvalidDataError("data has no columns")
    return int(shape[0]), int(shape[1])
