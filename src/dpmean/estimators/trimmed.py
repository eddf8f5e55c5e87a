"""Trimmed mean with smooth sensitivity (Bun-Steinke 2019, Secs. 1.3, 2, 3).

Data-independent tuning of the trimming m and smoothing t, and the ``trimmed`` estimator with
every smooth-sensitivity noise; the statistic and its exact smooth sensitivity (Prop. 11) are
mechanism-level algorithms in ``mechanisms/smooth_sensitivity.py``.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from scipy import special

from ..accounting import (
    PrivacyLedger,
    approx_dp_to_tcdp,
    check_budget_request,
    check_tcdp_request,
    equal_share,
)
from ..budget import Budget
from ..diagnostics import Diagnostic, Kind
from ..engines import Engine
from ..errors import InvalidParameterError, SecureNoiseWarning
from ..mechanisms.smooth_noise import (
    NOISES,
    Calibration,
    StudentT,
    smooth_sensitivity_mechanism,
)
from ..mechanisms.smooth_sensitivity import (
    computed_smooth_sensitivity,
    tails_smooth_sensitivity,
    trimmed_means,
    trimmed_smooth_sensitivity,
    trimmed_sum_scale,
)
from ..parallel import over_row_ranges
from ..rng import RandomState
from ..transforms import IDENTITY
from ..validation import (
    check_bounds,
    check_flag,
    check_fraction,
    check_positive,
    user_stacklevel,
)
from .base import MeanEstimator

# Smoothing values the default tuning tries (each noise keeps those it admits).
_T_GRID = np.geomspace(1e-4, 4.0, 64)
# The tuning's exp(-t k) table holds at most this many values a block of candidates.
_TUNING_VALUES = 1 << 21
# Default assumed standard deviation of the data: this fraction of the box width.
_DEFAULT_STD_FRACTION = 1e-3


def gaussian_trimmed_variance(n: int, m: int) -> float:
    """n Var[trim_m(X)] for X ~ N(0, 1)^n, asymptotically: the winsorised variance
    ((1-2p) - 2 z phi(z) + 2 p z^2) / (1-2p)^2 with p = m/n, z = Phi^{-1}(1-p)."""
    p = m / n
    if p == 0:
        return 1.0
    z = special.ndtri(1.0 - p)
    phi = math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return ((1.0 - 2 * p) - 2.0 * z * phi + 2.0 * p * z * z) / (1.0 - 2 * p) ** 2


def trimming_bias_factor(n: int, m: int) -> float:
    """A bound on (trim_m(x) - mean(x))^2 / sigma^2 for any data of standard deviation sigma:
    the 2m trimmed values, a share p = 2m / n of the rows, sum to within
    sigma sqrt(n 2m (1 - p)) of 2m times the mean (Cauchy-Schwarz on the centred values), and
    the kept n - 2m rows carry the opposite deviation, so the squared shift is at most
    sigma^2 p / (1 - p). Zero for symmetric data; what trimming can cost on skewed columns
    (Bun-Steinke's Theorem 8, general distributions, pays for it in m / n)."""
    p = 2.0 * m / n
    return p / (1.0 - p)


def tuning_grid(n: int, assumed_std: float, trim: int | None) -> tuple[np.ndarray, list[int]]:
    """``tune_trimmed_mean``'s expected sorted sample (Blom's approximation of n draws from
    N(0, assumed_std^2)) and the trims it weighs: ``trim`` if given, else 0 and a geometric grid
    of 40 up to (n - 1) / 3."""
    z = special.ndtri((np.arange(1, n + 1) - 0.375) / (n + 0.25)) * assumed_std
    if trim is not None:
        return z, [int(trim)]
    grid = np.geomspace(1, (n - 1) // 3, 40) if n >= 4 else np.zeros(0)
    return z, [int(m) for m in np.unique(np.concatenate(([0], np.round(grid).astype(int))))]


def tune_trimmed_mean(
    n: int, candidates: list[Calibration], width: float, assumed_std: float, *,
    output_truncation: bool = False, trim: int | None = None, symmetric: bool = False,
) -> tuple[int, Calibration]:
    """Choose m (unless given) and the calibration (hence t) from public values only.

    Assumption: the data are N(mu, assumed_std^2) with mu anywhere in a box of width ``width``.
    Predicted MSE = assumed_std^2 (gaussian_trimmed_variance(n, m) / n
    + trimming_bias_factor(n, m)) + S^2 Var[Z] / s^2 (the bias term unless ``symmetric``: the
    data need not be symmetric, as Bun-Steinke's Theorem 8 allows), with S
    the smooth sensitivity of the expected sample (Blom's order-statistic approximation),
    max(max_{k<m} e^{-kt} G_k, e^{-mt} (b - a)) / (n - 2m) where G_k is the symmetric gap
    x_(n-m+1+k-l) - x_(m+1-l), l = ceil(k/2) (the widest for a symmetric sample), and padding is
    reached first at distance m, conservatively counted as the whole width (mu at an end).
    Minimised over m on a geometric grid up to (n - 1) / 3 (Proposition 13 assumes n > 3m) and
    over the candidate calibrations.
    """
    z, ms = tuning_grid(n, assumed_std, trim)

    def symmetric_gaps(m: int) -> np.ndarray:
        k = np.arange(m)
        lag = (k + 1) // 2  # l in Prop. 11
        return z[n - m + k - lag] - z[m - lag]  # 0-based x_(n-m+1+k-l) - x_(m+1-l)

    gaps = [symmetric_gaps(m) for m in ms]
    # max_k exp(-t k) gap_k for every candidate and m, the candidates a block at a time with
    # exp(-t k) taken once per block for every k below the largest m: the element-wise
    # operations of one candidate and one m at a time, so the same numbers and the same
    # choice (one by one, 64 candidates x 40 m took 0.038 s of MNIST's trimmed mean; 0.017 s
    # so). A block holds at most _TUNING_VALUES of them (n in the millions: 16 MB, not GBs).
    ts = np.array([cal.t for cal in candidates])
    gap_terms = np.empty((len(candidates), len(ms)))
    top = max(ms)
    rows = max(1, _TUNING_VALUES // max(top, 1))
    for first in range(0, len(candidates), rows):
        block = slice(first, first + rows)
        decays = np.exp(-ts[block, None] * np.arange(top))
        for j, (m, gap) in enumerate(zip(ms, gaps, strict=True)):
            gap_terms[block, j] = np.max(decays[:, :m] * gap, axis=1, initial=0.0)
    variance_factors = np.array([cal.variance_factor for cal in candidates])
    best: tuple[float, int, Calibration] | None = None
    for j, m in enumerate(ms):
        padding = width if not output_truncation else width * (n - 2 * m)
        bias = 0.0 if symmetric else trimming_bias_factor(n, m)
        trim_error = assumed_std**2 * (gaussian_trimmed_variance(n, m) / n + bias)
        paddings = np.array([math.exp(-cal.t * m) * padding for cal in candidates])
        smooth = np.maximum(gap_terms[:, j], paddings) / (n - 2 * m)
        if output_truncation:
            smooth = np.minimum(smooth, width)
        with np.errstate(invalid="ignore"):  # 0 x an infinite factor: nan, as with floats
            errors = trim_error + smooth * smooth * variance_factors
        for mse, cal in zip(errors.tolist(), candidates, strict=True):
            if best is None or mse < best[0]:
                best = (mse, m, cal)
    assert best is not None  # m_grid and candidates are never empty
    return best[1], best[2]


_NOTIONS = {name: cls.notion for name, cls in NOISES.items()}


class TrimmedMean(MeanEstimator):
    """Bun-Steinke's trimmed mean with noise scaled to its smooth sensitivity.

    Release, per coordinate: f(x) + (S^t(x) / s) Z, f = trim_m of the data clamped to the box
    (``truncation="input"``, the paper's experiments) or trim_m of the raw data clamped to the
    box afterwards (``truncation="output"``, for heavier tails), S^t its exact t-smooth
    sensitivity (Prop. 11; see ``trimmed_smooth_sensitivity``) and Z the chosen noise.

    Parameters
    ----------
    rho : float, optional
        The budget (rho, or ``epsilon`` and ``delta``); it and ``bounds``, ``random_state``,
        ``secure_noise`` and ``engine`` are those of :class:`MeanEstimator`.
    noise : str, default "lln"
        ``"lln"``, ``"uln"``, ``"arsinh"`` ((1/2) eps^2-CDP, eps = sqrt(2 rho)),
        ``"student-t"`` (pure eps-DP with eps = sqrt(2 rho), which implies rho-zCDP: the
        ledger is in rho), ``"laplace"`` or ``"gaussian"`` (NRS 2007, (eps, delta)-DP: give
        ``epsilon`` and ``delta``, not rho; the result's notion is "approx-DP" and its ledger
        is in epsilon) or ``"gaussian-tcdp"`` ((rho, omega)-tCDP; notion "tCDP"; epsilon and
        delta are turned into rho by ``accounting.approx_dp_to_tcdp``, which uses only the
        orders alpha <= omega and refuses pairs no rho can meet).
    smoothing : float, optional
        t > 0; default chosen by ``tune_trimmed_mean`` (for laplace and gaussian, the NRS
        smoothing fixed by (eps, delta), which is also the largest t allowed).
    trim : int or float, optional
        m, an integer count (0 <= 2m < n) or a fraction of n in (0, 0.5); default tuned with
        ``smoothing`` (``tune_trimmed_mean``): at most n / 3 (Proposition 13) and charged the
        trimming's worst-case bias on skewed data (Theorem 8's regime, about
        ln(n (b - a) / sigma) / epsilon rows a side). Too few rows for that trimming
        (``minimum_rows``) releases the box's nearest point to zero with an
        InsufficientDataWarning, as the other estimators do.
    truncation : str, default "input"
        ``"input"`` or ``"output"``.
    assumed_std : float, optional
        The public assumption behind the default m and t: the data's standard deviation, for
        data roughly Gaussian (default (hi - lo) / 1000). Never read from data.
    symmetric : bool, default False
        Assume the data symmetric about their mean (Bun-Steinke's Theorems 6 and 7, their
        experiments): trimming then costs no bias, and the default trims far more. False
        (Theorem 8, any distribution): skewed columns are not biased by a trimming tuned for
        Gaussians.
    dof : float, default 3
        Student's T degrees of freedom (>= 3, as in the paper).
    omega : float, default 10
        The tCDP order bound (as in the paper).

    Raises
    ------
    InvalidParameterError
        An unknown ``noise`` or ``truncation``; ``omega`` not above 1 for "gaussian-tcdp"; a
        non-positive ``smoothing`` or ``assumed_std``; a ``trim`` that is neither a count nor a
        fraction in (0, 0.5) (at estimate time: a count with 2m >= n); ``dof`` below 3 for
        Student's T; rho given for "laplace" or "gaussian" (they need epsilon and delta); or
        a common parameter :class:`MeanEstimator` refuses.

    Warns
    -----
    SecureNoiseWarning
        ``secure_noise=True``: no stage is a Gaussian mechanism, so nothing is drawn exactly.
    InsufficientDataWarning
        Too few rows for the trimming (``minimum_rows``, public).

    Privacy
    -------
    One stage, "noise", the whole granted total: per coordinate, the trimmed mean plus its
    exact t-smooth sensitivity over s times Z, with rho/d (or eps/d and delta/d) each. The
    guarantee follows ``noise``: "lln", "uln", "arsinh": rho-zCDP; "student-t": pure eps-DP
    with eps = sqrt(2 rho) (reported as zCDP, ledger in rho); "laplace", "gaussian":
    (eps, delta)-DP, notion "approx-DP", ledger in epsilon; "gaussian-tcdp":
    (rho, omega)-tCDP, notion "tCDP". Without ``bounds``, a rho notion first spends
    ``BOUNDS_SHARE`` (1/10) on a private box; approx-DP requires ``bounds``.

    Notes
    -----
    For d > 1 (our extension; the paper is 1-D) each coordinate is released separately with an
    equal share of the budget: rho/d each (zCDP and tCDP compose additively), or eps/d and
    delta/d (basic composition) for approx-DP. The exact smooth sensitivity never leaves the
    estimator: it is as sensitive as the data.
    """

    method = "trimmed"
    # With engine="sparse" it was charged, then refused (a review).
    sparse_engine_refuses = "its trim asks every column's order statistics"
    declared_diagnostics = {
        "noise": Diagnostic(Kind.TEXT, "The smooth-sensitivity noise distribution."),
        "truncation": Diagnostic(Kind.TEXT, "Where the trimmed mean is truncated."),
        "trim": Diagnostic(Kind.COUNTS, "The rows m trimmed from each end, per coordinate."),
        "smoothing": Diagnostic(Kind.VECTOR, "The smoothing parameter t per coordinate."),
        "shift": Diagnostic(Kind.VECTOR, "The noise's shift parameter s per coordinate."),
        "sigma": Diagnostic(Kind.VECTOR, "The noise's scale per coordinate (noises that have "
                            "one)."),
        "dof": Diagnostic(Kind.FLOAT, "Student-t degrees of freedom (noise \"student-t\")."),
        "pure_dp_epsilon_per_coordinate": Diagnostic(Kind.FLOAT, "Each coordinate's pure-DP "
                                                     "epsilon (noise \"student-t\")."),
        "omega": Diagnostic(Kind.FLOAT, "The tCDP omega (tCDP budgets)."),
    }
    # Coordinate-wise, with each coordinate's noise from its own box already: nothing to even
    # out (and ``assumed_std`` is in the data's units).
    box_normalised = False
    # Accepted, but it covers nothing here: no stage is a Gaussian mechanism (the smooth-
    # sensitivity noises are drawn in floating point). A SecureNoiseWarning says so.
    supports_secure_noise = True

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
        noise: str = "lln",
        smoothing: float | None = None,
        trim: float | None = None,
        truncation: str = "input",
        assumed_std: float | None = None,
        dof: int = 3,
        omega: float = 10.0,
        symmetric: bool = False,
    ) -> None:
        if noise not in NOISES:
            raise InvalidParameterError(
                f"unknown noise {noise!r}; choose one of {', '.join(NOISES)}"
            )
        self.notion = "zCDP" if noise == "student-t" else _NOTIONS[noise]
        self.noise = noise
        self.omega = omega
        if noise == "gaussian-tcdp" and not (check_positive(omega, "omega") > 1):
            raise InvalidParameterError(f"omega must exceed 1, got {omega}")
        super().__init__(rho, epsilon=epsilon, delta=delta, bounds=bounds,
                         random_state=random_state, secure_noise=secure_noise, engine=engine)
        if self.secure_noise:
            warnings.warn(
                "secure_noise=True makes Gaussian-mechanism stages exact; the trimmed mean has "
                "none: its smooth-sensitivity noise is drawn in floating point, as without it "
                "(see docs/privacy.md, 'Randomness and floating point')",
                SecureNoiseWarning, stacklevel=user_stacklevel())
        self.noise = noise
        self.smoothing = None if smoothing is None else check_positive(smoothing, "smoothing")
        self.trim = trim
        if isinstance(trim, bool) or not (trim is None or isinstance(trim, numbers.Real)):
            raise InvalidParameterError(f"trim must be a count or a fraction, got {trim!r}")
        if isinstance(trim, numbers.Real) and not isinstance(trim, numbers.Integral):
            check_fraction(trim, "trim (as a fraction of n)")
            if trim >= 0.5:
                raise InvalidParameterError(f"trim as a fraction must be below 0.5, got {trim}")
        if truncation not in ("input", "output"):
            raise InvalidParameterError(
                f"truncation must be 'input' or 'output', got {truncation!r}"
            )
        self.truncation = truncation
        self.assumed_std = None if assumed_std is None else check_positive(assumed_std,
                                                                           "assumed_std")
        self.dof = StudentT(dof).dof if noise == "student-t" else dof
        self.symmetric = check_flag(symmetric, "symmetric")

    def check_budget(self, rho: float | None, epsilon: float | None, delta: float | None) -> None:
        if self.notion == "approx-DP" and (rho is not None or epsilon is None or delta is None):
            raise InvalidParameterError(
                f"noise={self.noise!r} gives (epsilon, delta)-DP: pass epsilon and delta, "
                f"not rho"
            )
        check_budget_request(rho, epsilon, delta)
        if self.notion == "tCDP" and rho is None:
            assert epsilon is not None and delta is not None
            check_tcdp_request(epsilon, delta, self.omega)  # some rho > 0 must meet the pair

    def grant(self, rho: float | None, epsilon: float | None, delta: float | None) -> Budget:
        if self.notion == "approx-DP":
            # NRS noise is (eps, delta)-DP: the ledger is kept in epsilon, delta split alongside.
            assert epsilon is not None and delta is not None
            return Budget.approx_dp(epsilon, delta)
        if self.notion == "tCDP":
            if rho is None:
                # (rho, omega)-tCDP bounds only the orders alpha <= omega: (epsilon, delta) is
                # met by the tCDP conversion, not the zCDP one (which needs every order).
                assert epsilon is not None and delta is not None
                rho = approx_dp_to_tcdp(epsilon, delta, self.omega)
                return Budget("tCDP", rho=rho, omega=self.omega, epsilon=epsilon, delta=delta)
            return Budget("tCDP", rho=rho, omega=self.omega)
        return super().grant(rho, epsilon, delta)

    def _trim_count(self, n: int) -> int | None:
        if self.trim is None:
            return None
        m = int(self.trim) if isinstance(self.trim, numbers.Integral) else int(self.trim * n)
        if not 0 <= 2 * m < n:
            raise InvalidParameterError(
                f"trim={self.trim} asks to drop {m} values from each end of n={n} rows; "
                f"need 0 <= 2 trim < n"
            )
        return m

    def budget_plan(self, n: int, d: int) -> dict[str, float]:
        self._trim_count(n)  # a public check, before any data is read
        return {"noise": self.total}

    def check_secure_scale(self, n: int, d: int) -> None:
        # No secure sum: its noises are the smooth sensitivity's, floating point (a review:
        # it was refused above n sqrt(2 d) = 5e9 for sums it never takes).
        return

    def minimum_rows(
        self, n: int, lo: np.ndarray, hi: np.ndarray, budget: dict[str, float]
    ) -> float:
        """Bun-Steinke's Theorem 8 needs n >= ln(n (b - a) / sigma) / epsilon (its trimming m
        is of that order) and Proposition 13 needs n > 3 m: n must exceed three times that
        trimming on every coordinate (with epsilon = sqrt(2 rho) of each coordinate's share, or
        its share of epsilon for approx-DP). Public: n, the box, the budget, ``assumed_std``.
        A given ``trim`` is the caller's choice: no refusal then."""
        if self.trim is not None:
            return 1.0
        d = lo.shape[0]
        widths = self.release_box(n, d)[1] - self.release_box(n, d)[0]
        share = equal_share(budget["noise"], d)
        epsilon = share if self.budget.unit == "epsilon" else math.sqrt(2.0 * share)
        std = (self.assumed_std if self.assumed_std is not None
               else _DEFAULT_STD_FRACTION * widths)
        trimming = np.ceil(np.log(n * widths / std) / epsilon)
        return float(3.0 * np.max(trimming) + 1.0)

    def box(self, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = check_bounds(self.bounds, d)
        if self.truncation == "output":
            # The data are trimmed unclamped; only the trimmed mean is clamped to [lo, hi].
            return np.full(d, -np.inf), np.full(d, np.inf)
        return lo, hi

    def release_box(self, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
        # The caller's box, also with output truncation (which clamps the data to nothing).
        return check_bounds(self.bounds, d)

    def _calibrator(self, share: float) -> Callable[[float | None], Calibration]:
        """t -> the calibration for one coordinate's share of the budget (``share`` in the
        ledger's unit: rho, or epsilon with delta split in the same proportion)."""
        if self.notion == "approx-DP":
            delta = self.budget.delta
            assert delta is not None
            budget = Budget.approx_dp(share, delta * share / self.total)
        elif self.notion == "tCDP":
            budget = Budget("tCDP", rho=share, omega=self.omega)
        else:
            budget = Budget.zcdp(share)
        noise = NOISES[self.noise]
        return lambda t: noise.calibrate(budget, t, dof=self.dof)

    def settings(self, n: int, width: float, share: float) -> tuple[int, Calibration]:
        """(m, calibration) for one coordinate of box width ``width`` and budget ``share``,
        from public values only."""
        calibrate = self._calibrator(share)
        if self.smoothing is not None or self.notion == "approx-DP":
            candidates = [calibrate(self.smoothing)]
        else:
            candidates = []
            for t in _T_GRID:
                try:
                    candidates.append(calibrate(float(t)))
                except InvalidParameterError:  # t beyond what this noise admits
                    continue
        std = self.assumed_std if self.assumed_std is not None else _DEFAULT_STD_FRACTION * width
        return tune_trimmed_mean(n, candidates, width, std, trim=self._trim_count(n),
                                 output_truncation=self.truncation == "output",
                                 symmetric=self.symmetric)

    def release(
        self, engine: Engine, budget: dict[str, float], ledger: PrivacyLedger,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        n, d = engine.n, engine.d
        lo, hi = check_bounds(self.bounds, d)
        share = equal_share(budget["noise"], d)
        widths = (hi - lo).tolist()
        chosen = {w: self.settings(n, w, share) for w in set(widths)}
        per_coordinate = [chosen[w] for w in widths]
        exact, smooth = self._exact_and_smooth(engine, per_coordinate, lo, hi)
        mean = smooth_sensitivity_mechanism(exact, smooth, [cal for _, cal in per_coordinate],
                                            rng, ledger=ledger, stage="noise")
        diagnostics: dict[str, Any] = {
            "noise": self.noise,
            "truncation": self.truncation,
            "trim": np.array([m for m, _ in per_coordinate]),
            "smoothing": np.array([cal.t for _, cal in per_coordinate]),
            "shift": np.array([cal.s for _, cal in per_coordinate]),
        }
        sigmas = [getattr(cal.noise, "sigma", None) for _, cal in per_coordinate]
        if sigmas[0] is not None:
            diagnostics["sigma"] = np.array(sigmas)
        if self.noise == "student-t":
            diagnostics["dof"] = self.dof
            diagnostics["pure_dp_epsilon_per_coordinate"] = math.sqrt(2.0 * share)
        if self.notion == "tCDP":
            diagnostics["omega"] = self.omega
        return mean, diagnostics

    def _exact_and_smooth(
        self, engine: Engine, per_coordinate: list[tuple[int, Calibration]], lo: np.ndarray,
        hi: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each coordinate's trimmed mean and exact smooth sensitivity (both as sensitive as the
        data), from the engine's sorted columns block by block: memory O(n x block)."""
        d = engine.d
        trims = np.array([m for m, _ in per_coordinate])
        smoothing = np.array([cal.t for _, cal in per_coordinate])
        output = self.truncation == "output"
        exact, smooth = np.empty(d), np.empty(d)

        def fill(block: np.ndarray, start: int, part: slice) -> None:
            values = block[:, part]
            cols = slice(start + part.start, start + part.stop)
            for m in np.unique(trims[cols]):
                here = np.flatnonzero(trims[cols] == m)
                into = here + cols.start
                # Usually one m for the whole block: then no copy of its columns.
                same = values if len(here) == values.shape[1] else values[:, here]
                exact[into] = trimmed_means(same, int(m))
                smooth[into] = trimmed_smooth_sensitivity(
                    same, int(m), smoothing[into], lo[into], hi[into], output_truncation=output)

        order = engine.column_order(IDENTITY, engine.lo, engine.hi)
        if order is not None:
            # Rows that live apart (Dask): the tails and the middle sum are selected where the
            # rows are; the same order statistics, the middle summed in another order.
            n = engine.n
            for m in np.unique(trims).tolist():
                scale = trimmed_sum_scale(n, m)
                lowest, highest, middle = order.tails(m, scale)
                into = np.flatnonzero(trims == m)
                exact[into] = (middle / (n - 2 * m) * scale)[into]
                smooth[into] = tails_smooth_sensitivity(
                    lowest[:, into], highest[:, into], n, m, smoothing[into], lo[into],
                    hi[into], output_truncation=output)
        else:
            for cols, values in engine.sorted_column_blocks(IDENTITY, engine.column_width()):
                # Coordinates are separate problems: the block's columns are shared among the cores.
                over_row_ranges(values.shape[1], partial(fill, values, cols.start),
                                values=values.size)
        if output:
            exact = np.clip(exact, lo, hi)
        return exact, computed_smooth_sensitivity(smooth, engine.n, trims, lo, hi)
