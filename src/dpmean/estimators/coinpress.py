"""CoinPress (Biswas, Dong, Kamath, Ullman, NeurIPS 2020): MVMRec, the iterative confidence-ball
mean, and MVCRec-then-MVMRec as IOME section 6 runs it (reference notes, part A)."""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..accounting import PrivacyLedger
from ..diagnostics import NOISE_STD, Diagnostic, Kind
from ..engines import Engine
from ..engines.grid_sums import OUTER_SUM_ROWS, exact_outer_sum
from ..errors import InvalidParameterError, NoisyReleaseWarning
from ..mechanisms import symmetric_gaussian_mechanism
from ..mechanisms.gaussian import check_secure_noise
from ..transforms import View
from ..validation import check_fraction, check_positive, check_steps, user_stacklevel
from .base import MeanEstimator, noise_half_width
from .clipped import (
    INTERVAL_SHARE,
    PROFILE_DIAGNOSTICS,
    PROFILE_STAGE,
    clip_profile,
    noisy_clipped_mean,
    with_interval_stages,
)

# Without bounds, rows are clamped to the a priori centre plus or minus this many times the
# radius plus a row's expected spread (``_CoinPress.safety_box``): far beyond every step's ball.
SAFETY_REACH = 2.0**20
# The largest squared view norm the safety box may give: float64 sums of squares stay finite
# with room for the shifts and sums the engines add.
_LARGEST_SQUARED_NORM = 1e280


# coinpress-cov's memory bound: the d x d float64 matrices a covariance step holds at once (A,
# its predecessor, the second moment and its noisy copy, Z, the eigenvectors and eigh's
# workspace, products' temporaries, the engine's accumulators: 12.4 of them at the peak
# measured at d = 2,000, 15 at d = 1,000, n = 50), and the most bytes they may take. A d above
# the bound is refused before anything is charged or read (n = 50, d = 20,000 reached 18.9 GB
# of memory); time grows as d^3 too (49 s in all at d = 2,000 on two cores).
COVARIANCE_MATRICES = 12
LARGEST_COVARIANCE_BYTES = 2 << 30


def largest_covariance_dimension() -> int:
    """The largest d ``coinpress-cov`` takes: ``COVARIANCE_MATRICES`` d x d float64 matrices
    within ``LARGEST_COVARIANCE_BYTES`` (2 GiB): 4,729."""
    return math.isqrt(LARGEST_COVARIANCE_BYTES // (8 * COVARIANCE_MATRICES))


def check_covariance_dimension(method: str, d: int) -> None:
    """Refuse a number of columns ``d`` (public; no data is read) whose d x d matrices would
    exceed ``coinpress-cov``'s memory bound.

    Parameters
    ----------
    method : str
        The estimator's name, for the message.
    d : int
        The number of columns.

    Raises
    ------
    InvalidParameterError
        When d > ``largest_covariance_dimension()`` (4,729): about ``COVARIANCE_MATRICES``
        d x d float64 matrices above ``LARGEST_COVARIANCE_BYTES``, and O(d^3) time a step.
    """
    largest = largest_covariance_dimension()
    if d > largest:
        need = COVARIANCE_MATRICES * 8.0 * d * d
        raise InvalidParameterError(
            f"{method} estimates a d x d covariance: at d = {d:,} its steps would hold about "
            f"{need / 2**30:,.1f} GiB of matrices (and take O(d^3) time each), above its limit "
            f"of {LARGEST_COVARIANCE_BYTES / 2**30:g} GiB, which allows d <= {largest:,}; use "
            f"method 'coinpress' (O(n d) memory) or 'iome' / 'plan' for data this wide")


def gaussian_tail_radius(d: int, beta: float) -> float:
    """tau_d(beta) = sqrt(d + 2 sqrt(d ln(1/beta)) + 2 ln(1/beta)): ||N(0, I_d)|| <= tau_d(beta)
    with probability at least 1 - beta (the Laurent-Massart chi-square tail bound)."""
    log = math.log(1.0 / beta)
    return math.sqrt(d + 2.0 * math.sqrt(d * log) + 2.0 * log)


def step_budgets(total: float, steps: int) -> list[float]:
    """CoinPress's schedule: the last step spends 3/4 of ``total`` and the first ``steps - 1``
    share the other quarter equally (one step spends everything)."""
    if steps == 1:
        return [total]
    return [total / (4.0 * (steps - 1))] * (steps - 1) + [0.75 * total]


def _stages(prefix: str, budgets: list[float]) -> dict[str, float]:
    return {f"{prefix}-step-{k}": rho for k, rho in enumerate(budgets, start=1)}


def _planned(budget: dict[str, float], prefix: str, steps: int | None = None) -> list[float]:
    """Each step's rho in the plan ``budget``, in order: ``steps`` of them, or (None) all the
    plan has."""
    if steps is None:
        steps = sum(1 for stage in budget if stage.startswith(f"{prefix}-step-"))
    return [budget[f"{prefix}-step-{k}"] for k in range(1, steps + 1)]


def mvm_rec(
    engine: Engine, view: View, centre: np.ndarray, radius: float, budgets: list[float], *,
    beta: float, ledger: PrivacyLedger, rng: np.random.Generator, secure: bool = False,
) -> tuple[np.ndarray, dict[str, Any], View]:
    """MVMRec: shrink a public ball B(centre, radius) around the mean, one noisy step at a time.

    ``view`` maps rows to coordinates where they are assumed N(mu', Sigma') with Sigma' <= I (a
    scale 1/sigma, or a whitening map); ``centre`` is in original coordinates, ``radius`` in view
    units. Step k (budget ``budgets[k-1]``, ledger stage ``mean-step-k``), with
    gamma = tau_d(beta):

    - clip view rows to the ball of radius kappa = min(sqrt(r^2 + 6 r + gamma^2), r + gamma)
      around the current centre (the reference code's radius; 6 r = 2 r * 3, three standard
      deviations of a row's component along mu - centre);
    - release their mean with the Gaussian mechanism (replace-one sensitivity 2 kappa / n) as
      the new centre;
    - r <- gamma sqrt(1/n + s^2) for the step's noise std s (sampling plus noise, inflated by
      the chi tail).

    Each step projects the (clamped) rows themselves, as the paper's algorithm does; the
    reference code projects in place, so later steps see rows already projected. The radii are
    functions of public values only. Returns the last centre, its diagnostics (the clipping
    radii, noise stds and final confidence radius, all in view units) and the view the last
    step clipped in (centred on the previous, released, centre).
    """
    n = engine.n
    gamma = gaussian_tail_radius(view.output_dim(engine.d), beta)
    clip_radii, noise_stds = [], []
    step = view
    for k, rho in enumerate(budgets, start=1):
        step = view.with_shift(centre)
        kappa = _clip_radius(radius, gamma)
        noisy, std = noisy_clipped_mean(engine, step, kappa, rho=rho, ledger=ledger, rng=rng,
                                        stage=f"mean-step-{k}", secure=secure)
        centre = step.restore(noisy)
        radius = _next_radius(std, n, gamma)
        clip_radii.append(kappa)
        noise_stds.append(std)
    return centre, {"clip_radii": clip_radii, "step_noise_std": noise_stds,
                    "final_radius": radius}, step


# Below this, MVMRec's radii are squared as they always were; above, ``math.hypot`` takes the
# same roots without squaring (equal up to rounding): r^2 overflowed past r = 1.3e154
# (``radius=1e200`` raised OverflowError). Releases below it are unchanged bit for bit.
_SQUARED_SAFELY = 1e150
# The largest view norm a clipping centre may be expected at (``check_mvm_radius``): the
# engines' squared norms of rows about it stay finite, as the safety box's.
_LARGEST_VIEW_NORM = math.sqrt(_LARGEST_SQUARED_NORM)


def _clip_radius(radius: float, gamma: float) -> float:
    """kappa = min(sqrt(r^2 + 6 r + gamma^2), r + gamma), MVMRec's clipping radius for a ball
    of radius r (see ``mvm_rec``), computed without overflow."""
    if radius < _SQUARED_SAFELY:
        root = math.sqrt(radius**2 + 6.0 * radius + gamma**2)
    else:
        root = math.hypot(radius, math.sqrt(6.0 * radius), gamma)
    return min(root, radius + gamma)


def _next_radius(std: float, n: int, gamma: float) -> float:
    """The next ball's radius, gamma sqrt(1/n + s^2) for a step's noise std s, computed
    without overflow (s^2 overflowed past s = 1.3e154)."""
    if std < _SQUARED_SAFELY:
        return gamma * math.sqrt(1.0 / n + std**2)
    return gamma * math.hypot(1.0 / math.sqrt(n), float(std))


def mvm_steps(radius: float, d: int, n: int, budgets: list[float],
              beta: float) -> Iterator[tuple[float, float, float]]:
    """MVMRec's public recursion (``mvm_rec``): for each step, from the a priori ``radius``
    (view units) with ``budgets`` (each step's rho), its clipping radius kappa_k, its noise
    std 2 kappa_k / (n sqrt(2 rho_k)) (``noisy_clipped_mean``'s) and the next ball's radius.
    Functions of public values only; a non-finite std gives an infinite next radius."""
    gamma = gaussian_tail_radius(d, beta)
    for rho in budgets:
        kappa = _clip_radius(radius, gamma)
        std = 2.0 * kappa / n / math.sqrt(2.0 * rho)
        radius = _next_radius(std, n, gamma) if math.isfinite(std) else math.inf
        yield kappa, std, radius


# ``t="auto"`` takes the fewest steps (at least ``FEWEST_STEPS``) whose last step's predicted
# noise is within this factor of the smallest: each step's ball holds the mean only with
# probability 1 - beta (a union over the steps), so a step that buys under 1% is not taken.
STEPS_SLACK = 1.01
# At least two steps: one step clips about the a priori centre alone, so a radius that does
# not hold the mean (an assumption nothing checks) biases the release without recourse, where
# a second step clips about the first's release. A review: radius 0.3 ||mu|| (N(mu, 9 I),
# d = 100, n = 5000, rho = 0.5): t = 2 0.176, t = 1 (predicted 0.6% noisier than t = 2, inside
# the slack) 12.96. The predicted cost of the second step is at most sqrt(4/3) in noise.
FEWEST_STEPS = 2


# A pure function of public numbers, asked by every plan of a release (its checks, its
# events, an (epsilon, delta) calibration's many rhos): each answer walks 59 recursions.
@functools.lru_cache(maxsize=256)
def public_steps(radius: float, d: int, n: int, rho: float, beta: float) -> int:
    """The number of MVMRec steps ``t="auto"`` takes for rows in d view dimensions, an a
    priori ``radius`` (view units) and ``rho`` for the steps: the fewest within
    ``STEPS_SLACK`` of the smallest predicted noise of the release (the last step's std,
    ``mvm_steps``, under CoinPress's schedule ``step_budgets``), over ``FEWEST_STEPS`` to 60
    steps whose arithmetic ``check_mvm_radius`` accepts (2 where none does: it then refuses
    as for t = 2). Public: n, d, rho, the radius, beta. The prediction assumes the radius
    holds the mean. A loose radius needs more steps (each shrinks the ball to about
    gamma sqrt(1/n + s_k^2)); a tight one fewer (each takes a share of the budget):
    N(100, 10^2 I_10), n = 1000, rho = 0.5, radius 10^6 sqrt(10) (sigma = 10): mean l2 error
    480 at CoinPress's t = 2, 0.396 at the 6 chosen, 0.401 at t = 10; CoinPress's own ball
    (10 sqrt(d), d = 100, n = 2000): 0.146 at the 3 chosen, 0.151 at t = 2
    (``scripts/coinpress_steps.py``, docs/results.md)."""
    last = {}
    for t in range(FEWEST_STEPS, 61):
        budgets = step_budgets(rho, t)
        if mvm_refusal(radius, d, n, budgets, beta) is None:
            *_, (_, std, _) = mvm_steps(radius, d, n, budgets, beta)
            last[t] = std
    if not last:
        return 2  # every schedule is refused: ``check_mvm_radius`` refuses t = 2 too
    smallest = min(last.values())
    return min(t for t, std in last.items() if std <= STEPS_SLACK * smallest)


def check_mvm_radius(method: str, radius: float, d: int, n: int, budgets: list[float],
                     beta: float, centre_limit: float = _LARGEST_VIEW_NORM) -> None:
    """Refuse, from public values alone (before anything is charged), an a priori radius too
    large for MVMRec's float64 arithmetic.

    Parameters
    ----------
    method : str
        The estimator's name, for the message.
    radius : float
        R in view units (the data's units over the public scale sigma).
    d, n : int
        The view's dimension and the number of rows.
    budgets : list of float
        Each mean step's rho, as ``mvm_rec`` takes them.
    beta : float
        Each step's failure probability (gamma = tau_d(beta)).
    centre_limit : float, default ``_LARGEST_VIEW_NORM``
        The farthest a step before the last may move the next centre (its noise std times
        sqrt(d)); ``math.inf`` checks for overflow alone (``coinpress-cov``, whose radius
        here is only an upper bound on the one it runs with).

    Raises
    ------
    InvalidParameterError
        When a step's sensitivity 2 kappa_k / n or noise std is not finite (kappa_k near
        float64's largest number, ``radius=1e308``), or when a step before the last would
        release a clipping centre about its noise std sqrt(d) from the truth beyond
        ``_LARGEST_VIEW_NORM`` (1e140 view units), where the next step's squared norms of
        rows about it overflow. The radii are those ``mvm_rec`` computes: public functions of
        these values.
    """
    refused = mvm_refusal(radius, d, n, budgets, beta, centre_limit)
    if refused is not None:
        k, kappa, problem = refused
        raise InvalidParameterError(
            f"{method}: radius is too large for float64 arithmetic at this budget and n = {n} "
            f"(a ball of radius {radius:.3g} in the units MVMRec runs in): its step {k} clips "
            f"to a ball of radius {kappa:.3g}, and {problem}; give a smaller radius (a bound "
            f"on ||mean - centre||: with bounds, the largest distance from the centre to the "
            f"box is always one) or a larger budget")


def mvm_refusal(radius: float, d: int, n: int, budgets: list[float], beta: float,
                centre_limit: float = _LARGEST_VIEW_NORM) -> tuple[int, float, str] | None:
    """Why ``check_mvm_radius`` refuses MVMRec's recursion from ``radius`` with ``budgets``
    (its step k, that step's clipping radius, the problem), or None where it runs."""
    for k, (kappa, std, following) in enumerate(mvm_steps(radius, d, n, budgets, beta),
                                                start=1):
        if not math.isfinite(following):
            return k, kappa, "its sensitivity 2 kappa / n, noise or next radius overflows float64"
        if k < len(budgets) and not std * math.sqrt(d) <= centre_limit:
            return k, kappa, (f"its noise (standard deviation {std:.3g}) would put the next "
                              f"step's centre beyond {centre_limit:.3g}, where squared norms "
                              f"overflow")
    return None


def _whitening_view(a: np.ndarray) -> View:
    # Pair differences have covariance 2 Sigma: w = A (x - x') / sqrt(2) has covariance A Sigma
    # A^T. The column convention (w = A y, un-whitened by A^-1 Z A^-T) stays consistent when A is
    # not symmetric, which it is not after two noisy updates.
    return View().with_linear(a / math.sqrt(2.0))


def _unwhiten(a: np.ndarray, z: np.ndarray) -> np.ndarray:
    """A^-1 Z A^-T: the covariance estimate behind a whitened second moment Z."""
    left = np.linalg.solve(a, z)
    return np.linalg.solve(a, left.T).T


def _mvc_steps(
    paired: Engine, sigma_max: float, budgets: list[float], *, beta: float,
    ledger: PrivacyLedger, rng: np.random.Generator, secure: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The steps of ``mvc_rec``: (A before the last update, the last Z, the final A)."""
    m, d = paired.n, paired.d
    gamma = gaussian_tail_radius(d, beta)
    eta = math.sqrt(d / m) + d / (2.0 * m)
    a = np.eye(d) / sigma_max
    previous, z = a, np.zeros((d, d))
    sensitivity = math.sqrt(2.0) * gamma**2 / m
    if secure:
        # Every step's draw is checked before the first step's charge (public: m, d, beta and
        # the budgets; a review: a later step was refused after the earlier were charged).
        for rho in budgets:
            check_secure_noise(sensitivity, rho, d * (d + 1) // 2)
    for k, rho in enumerate(budgets, start=1):
        view = _whitening_view(a)
        second = (exact_outer_sum(paired, view, gamma) if secure
                  else paired.clipped_outer_sum(view, gamma)) / m
        noisy = symmetric_gaussian_mechanism(second, sensitivity, rho, rng,
                                             ledger=ledger, stage=f"cov-step-{k}",
                                             secure=secure)
        # Z (the PSD part) and Z + eta I share the eigenvectors of the noisy moment: one
        # eigendecomposition gives both (it is the O(d^3) cost of a step).
        values, vectors = np.linalg.eigh(noisy)
        kept = np.maximum(values, 0.0)
        z = (vectors * kept) @ vectors.T
        previous = a
        a = (vectors * (kept + eta) ** -0.5) @ (vectors.T @ a)
    return previous, z, a


def mvc_rec(
    paired: Engine, sigma_max: float, budgets: list[float], *, beta: float,
    ledger: PrivacyLedger, rng: np.random.Generator, secure: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """MVCRec on zero-mean rows (pair differences), a priori Sigma <= sigma_max^2 I.

    Start from A = I / sigma_max. Step k (budget ``budgets[k-1]``, stage ``cov-step-k``) with
    gamma = tau_d(beta), eta = sqrt(d/m) + d/(2m) for m rows (the reference code's sampling
    term; the paper adds a noise-norm term nu, which only changes accuracy):

    - whiten w = A y, clip to norm gamma, release Z = PSD part of (1/m) sum w w^T + Y with the
      symmetric Gaussian mechanism (Frobenius sensitivity sqrt(2) gamma^2 / m);
    - A <- (Z + eta I)^(-1/2) A.

    Returns (Sigma_hat, M): the covariance estimate A^-1 Z_t A^-T of the last step (A before its
    update), and the whitening M = (Z_t + eta I)^(-1/2) A, under which the rows have covariance
    about (Z_t + eta I)^(-1/2) Z_t (Z_t + eta I)^(-1/2) <= I, the assumption MVMRec needs; unlike
    Sigma_hat^(-1/2) it exists even where Z_t has zero eigenvalues.

    A step helps only when its noise is small next to the whitened covariance. Where it is not
    (the noise's semicircle radius nu_k = 2 sqrt(d) gamma^2 / (m sqrt(rho_k)) far above the
    eigenvalues of A Sigma A^T), Z + eta I is noise plus eta with a random eigenbasis and mean
    eigenvalue eta + 2 nu_k / (3 pi), so each step multiplies E ||M^-1||_F^2 by that factor:
    more steps make M^-1, and every error un-whitened through it, larger once it exceeds 1.
    """
    previous, z, a = _mvc_steps(paired, sigma_max, budgets, beta=beta, ledger=ledger, rng=rng,
                                secure=secure)
    return _unwhiten(previous, z), a


class _CoinPress(MeanEstimator):
    """What both CoinPress estimators share: the a priori ball and no need for ``bounds``.

    Public inputs: ``radius`` R and ``centre`` c (a number or a length-d vector, default the
    origin) with ||mu - c||_2 <= R assumed, ``beta`` the failure probability of each step's
    Gaussian tail bound. ``bounds``, if given, still clamp the rows; without them the ball and
    the covariance bound are the only public geometry, and rows are clamped to a public safety
    box far outside every ball (``safety_box``: it keeps the arithmetic of a row near the float
    limit finite). ``center`` is the deprecated spelling of
    ``centre`` (the library spells it one way everywhere); it still works, with a FutureWarning,
    for one release.
    """

    gaussian_stages = True  # every stage a Gaussian mechanism: exact (eps, delta)
    one_scale = ("its ball (radius, centre) and covariance bound", "auto or iome")
    supports_secure_noise = True
    declared_diagnostics = {
        "clip_radii": Diagnostic(Kind.SERIES, "Each mean step's clipping radius kappa_k (view "
                                 "units)."),
        "step_noise_std": Diagnostic(Kind.SERIES, "Each mean step's isotropic Gaussian noise "
                                     "standard deviation (view units; the last is the "
                                     "release's)."),
        "final_radius": Diagnostic(Kind.FLOAT, "The last confidence ball's radius (view "
                                   "units)."),
        "noise_std": NOISE_STD,
        "sigma": Diagnostic(Kind.FLOAT, "The public scale bound sigma (view units are data "
                            "units over sigma)."),
        "clip_centre": Diagnostic(Kind.VECTOR, "The centre the last step clipped about (the "
                                  "previous step's release; data units)."),
        "norm_bound": Diagnostic(Kind.FLOAT, "B, the largest view norm a clamped row can have "
                                 "about the last clip's centre (with a clip profile)."),
        **PROFILE_DIAGNOSTICS,
    }
    # The ball (radius, center) and the covariance bound are in the data's units, and a ball
    # rescaled coordinate by coordinate is no ball: runs in the data's own units.
    box_normalised = False
    finds_bounds = False  # the ball is its geometry
    shifts_far_box = False  # the ball's centre and radius are in the data's own units

    def __init__(
        self, rho: float | None = None, *, radius: float | None = None, centre: Any = 0.0,
        beta: float = 0.01, center: Any = None, **common: Any,
    ) -> None:
        super().__init__(rho, **common)
        if center is not None:
            warnings.warn("center= is deprecated: use centre= (the same a priori centre)",
                          FutureWarning, stacklevel=2)
            centre = center
        if radius is None:
            raise InvalidParameterError(
                f"{self.method} needs radius=R (on the command line --option radius=R): a "
                f"public bound ||mean - centre|| <= R, chosen without looking at the data "
                f"(CoinPress's experiments use 10 sqrt(d), IOME's 50 sqrt(d))")
        self.radius = check_positive(radius, "radius")
        try:
            self.centre = np.asarray(centre, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidParameterError(
                f"centre must be a number or a vector, got {centre!r}") from None
        if self.centre.ndim > 1 or not np.isfinite(self.centre).all():
            raise InvalidParameterError("centre must be a finite number or a finite vector")
        self.beta = check_fraction(beta, "beta")

    def box(self, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
        if self.bounds is None:
            return self.safety_box(d)
        return super().box(n, d)

    def safety_box(self, d: int) -> tuple[np.ndarray, np.ndarray]:
        """The public box rows are clamped to without ``bounds``: the a priori centre c plus
        or minus SAFETY_REACH (R + s sqrt(d)), s the public scale (``public_scale``), widened
        to hold the origin (sparse rows' zeros).

        Why: the ball is the only geometry, and a finite row far enough out (1e308) overflowed
        the view's arithmetic: its norm became inf or NaN, which gave NaN releases, an
        exception after the budget was spent, or (a sparse row's NaN norm) a row not clipped
        at all, each telling two neighbouring datasets apart with certainty. Every step's ball
        lies within about R + s tau_d of c, so a row this far out is clipped by every step
        with or without the box; the clamp changes only the direction of such rows. Refused
        when even this box is too wide for float64 norms (an R or centre near 1e150 over s).
        """
        centre = self.prior_centre(d)
        reach = SAFETY_REACH * (self.radius + self.public_scale(d) * math.sqrt(d))
        lo, hi = np.minimum(centre - reach, 0.0), np.maximum(centre + reach, 0.0)
        widest = float(np.max(hi - lo)) / self.public_scale(d)
        if not math.isfinite(widest) or widest * widest * d > _LARGEST_SQUARED_NORM:
            raise InvalidParameterError(
                f"{self.method} without bounds: the radius and centre are too large against the "
                f"scale ({widest:.3g} scales across) for float64 arithmetic; give bounds")
        return lo, hi

    def public_scale(self, d: int) -> float:
        """The public scale of a row's spread (view units are data units over it)."""
        raise NotImplementedError

    def check_columns(self, d: int) -> None:
        self.prior_centre(d)  # a centre of another length is refused before any data is read

    def prior_centre(self, d: int) -> np.ndarray:
        if self.centre.ndim == 1 and self.centre.shape[0] != d:
            raise InvalidParameterError(
                f"centre has length {self.centre.shape[0]}, the data has d = {d} columns")
        return np.broadcast_to(self.centre, (d,)).copy()


class CoinPressMean(_CoinPress):
    """MVMRec (CoinPress, Algorithm MVMRec; code version of the reference notes A.1-A.2).

    Assumes rows N(mu, Sigma) with Sigma <= sigma^2 I (``sigma`` = 1: CoinPress's N(mu, I)) and
    ||mu - centre|| <= radius; privacy holds for any data. ``t`` steps shrink the ball; the last
    spends 3/4 of rho and the first t - 1 share the rest (the schedule of every CoinPress
    experiment). CoinPress's demo takes t = 2 and IOME tries t = 1, 2, 3, 4, 10; the default,
    ``"auto"``, takes the t (2 to 60) whose release the public recursion of the balls predicts
    the least noise, within 1% (``public_steps``; the prediction assumes the radius holds the
    mean): with a loose radius t = 2 erred 10^3 times more (N(100, 10^2 I_10), n = 1000,
    rho = 0.5, radius 10^6 sqrt(10), sigma = 10: 480 against 0.40 at the 6 steps chosen).

    Parameters
    ----------
    rho : float, optional
        The zCDP budget; the common parameters (``epsilon``, ``delta``, ``bounds``,
        ``random_state``, ``secure_noise``, ``engine``) are those of :class:`MeanEstimator`.
    t : int or "auto", default "auto"
        The number of steps, from 1 to 60, or ``"auto"``: from 2 to 60, chosen from public
        values (n, d, rho, the radius over sigma, beta) by ``public_steps``; the diagnostics'
        ``clip_radii`` has one entry per step taken.
    sigma : float, default 1.0
        The public bound Sigma <= sigma^2 I (positive).
    radius : float
        R, the public bound ||mu - centre||_2 <= R, chosen without looking at the data.
    centre : float or array_like, default 0.0
        c, a number or a length-d vector: the a priori centre of the ball.
    beta : float, default 0.01
        The failure probability of each step's Gaussian tail bound, in (0, 1).
    interval_share : float or None, default None
        The fraction of rho spent first on a clip profile of the last step's clip (stage "clip
        profile", as in :class:`~dpmean.estimators.iome.ClippedMean`), in [0, 1); needs
        ``bounds``. None, the default: ``clipped.INTERVAL_SHARE`` (1%, as for cm, IOME and
        PLAN) where ``bounds`` are given, else 0. With it the release has a confidence
        interval; without it (0) the interval is the public box (nothing bounds how many rows
        the last step clipped). All of the share buys the profile (no clip residual: the last
        ball clips few rows, so it would only take budget from the profile). N(0.5, I) rows,
        n = 2000, d = 8, box +-5, radius 5, rho = 1 (``scripts/interval_widths.py``, 100
        releases): the 90% interval 28.9 times the error with 1%, the whole box (2,286 times)
        with 0, for an error 0.5% larger (0.004397 against 0.004375).
    center : float or array_like, optional
        Deprecated spelling of ``centre`` (a FutureWarning, for one release).
    **options
        The parameters of :class:`MeanEstimator`. ``bounds``, if given, still clamp the rows;
        without them the ball is the only public geometry (rows are clamped to
        ``safety_box``, c +- 2^20 (R + sigma sqrt(d)), far outside every ball).

    Raises
    ------
    InvalidParameterError
        No ``radius``, a non-positive ``radius`` or ``sigma``, a ``centre`` that is not a
        finite number or vector (or, at estimate time, not of length d), ``t`` neither
        "auto" nor an integer from 1 to 60, ``beta`` outside (0, 1), ``interval_share``
        outside [0, 1) or given without
        ``bounds``, without ``bounds`` a radius or centre too large against sigma for float64
        norms, or a common parameter :class:`MeanEstimator` refuses.

    Privacy
    -------
    rho-zCDP under replace-one, for any data. One stage per step, "mean-step-1" ...
    "mean-step-t": step k < t spends rho / (4 (t - 1)), the last 3 rho / 4 (t = 1: all of rho);
    each is the Gaussian mechanism on the mean of the rows clipped to the ball B(c_k, kappa_k),
    l2 sensitivity 2 kappa_k / n. With ``interval_share`` s > 0, "clip profile" takes s rho
    first (the steps share the rest as above): the Gaussian mechanism on the counts of rows in
    shells beyond kappa_t about c_t, l2 sensitivity sqrt(2). No private box is searched
    without ``bounds``: the safety box is public (R, c, sigma, d), and clamping to it is a map
    of each row alone, so the sensitivities stand.
    """

    method = "coinpress"
    supports_sparse = True  # shifted row norms and clipped sums only

    def __init__(
        self, rho: float | None = None, *, t: int | str = "auto", sigma: float = 1.0,
        interval_share: float | None = None, **options: Any,
    ) -> None:
        super().__init__(rho, **options)
        self.t: int | str = "auto" if isinstance(t, str) and t == "auto" else check_steps(
            t, "t", also='or "auto"')
        self.sigma = check_positive(sigma, "sigma")
        if interval_share is None:  # the default: the interval's stages where they can run
            interval_share = INTERVAL_SHARE if self.bounds is not None else 0.0
        self.interval_share = check_fraction(interval_share, "interval_share", low_open=False)
        if self.interval_share and self.bounds is None:
            raise InvalidParameterError(
                "interval_share needs bounds: the clip profile's shells end at the box's "
                "farthest corner from the last clip's centre")

    def public_scale(self, d: int) -> float:
        return self.sigma

    def budget_plan(self, n: int, d: int) -> dict[str, float]:
        self.check_columns(d)
        # The profile alone: CoinPress's last ball clips few rows, so the bound about the
        # release is the narrower and a residual's quarter of the share only narrows the
        # profile (measured: 5% share, 17.3 -> 19.3 times the RMSE with one; docs/results.md).
        def steps(rho: float) -> dict[str, float]:
            t = (public_steps(self.radius / self.sigma, d, n, rho, self.beta)
                 if self.t == "auto" else int(self.t))
            return _stages("mean", step_budgets(rho, t))

        plan = with_interval_stages(self.rho, self.interval_share, steps, residual=False)
        # A radius whose arithmetic overflows is refused here, before the charge (a radius of
        # 1e200 failed after its first step was charged).
        check_mvm_radius(self.method, self.radius / self.sigma, d, n, _planned(plan, "mean"),
                         self.beta)
        return plan

    def release(
        self, engine: Engine, budget: dict[str, float], ledger: PrivacyLedger,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        d = engine.d
        view = View().with_scale(np.full(d, 1.0 / self.sigma))
        mean, diagnostics, last = mvm_rec(
            engine, view, self.prior_centre(d), self.radius / self.sigma,
            _planned(budget, "mean"), beta=self.beta, ledger=ledger, rng=rng,
            secure=self.secure_noise)
        # restore() multiplies the view's isotropic noise by sigma.
        diagnostics.update(noise_std=np.full(d, diagnostics["step_noise_std"][-1] * self.sigma),
                           sigma=self.sigma)
        if self.bounds is None:  # (a box's own warning judges a release within bounds)
            warn_if_wider_than_the_ball(self.method, diagnostics["noise_std"], self.radius)
        if PROFILE_STAGE in budget:
            centre = last.restore(np.zeros(d))
            reach = np.maximum(np.abs(engine.hi - centre), np.abs(centre - engine.lo))
            bound = float(np.linalg.norm(reach)) / self.sigma
            diagnostics.update(clip_centre=centre, norm_bound=bound, **clip_profile(
                engine, last, diagnostics["clip_radii"][-1], bound, rho=budget[PROFILE_STAGE],
                ledger=ledger, rng=rng, secure=self.secure_noise))
        return mean, diagnostics


def warn_if_wider_than_the_ball(method: str, noise_std: np.ndarray, radius: float) -> None:
    """A ``NoisyReleaseWarning`` where the noise's 95% reach on a coordinate (the median over
    them) exceeds the radius R of the ball the mean was declared in: the release then says
    less than that ball. Without bounds the release warnings judge the noise against the
    safety box, 2^20 times wider, and said nothing: at n = 1, rho = 1e-4, R = 100 CoinPress's
    balls grew to 1.1e6 and it released 5.3e6 (a trial). Post-processing of the released
    noise scale and the public radius."""
    reach = float(np.median(noise_half_width(np.asarray(noise_std, dtype=np.float64))))
    if reach > radius:
        warnings.warn(
            f"{method}: the noise's 95% interval reaches {reach:.3g} on a coordinate, beyond "
            f"the radius {radius:.3g} of the ball the mean was declared in: the release says "
            f"less than that ball does (too few rows or too small a budget for its steps to "
            f"shrink it). Give a larger rho or more rows", NoisyReleaseWarning,
            stacklevel=user_stacklevel())


class CoinPressCovMean(_CoinPress):
    """MVCRec then MVMRec ("MVCRec-MVMRec" in IOME section 6): estimate Sigma privately, whiten,
    run MVMRec on the whitened rows, map back.

    The mean is unknown, so MVCRec runs on the n // 2 pair differences of a public random
    pairing (mean zero, covariance 2 Sigma; each row in one pair). It starts from the a priori
    Sigma <= sigma_max^2 I (default sigma_max = radius / sqrt(d), IOME's choice) and takes
    ``t_cov`` steps (default 2; IOME tries 1 to 5) with ``cov_share`` of rho (IOME: 1/2), with
    CoinPress's schedule; then
    MVMRec takes ``t`` steps (IOME: 10) with the rest, on the rows whitened by M (see
    ``mvc_rec``), inside the ball of radius ||M||_op R around M c, which contains M mu. We use
    the consistent convention w = A x, Sigma_hat = A^-1 Z A^-T; the public reference code
    whitens with A^T and degrades for t_cov >= 3 on non-spherical Sigma. Costs O((t_cov + 1)
    n d^2 + t_cov d^3) time (MVMRec reads the rows whitened once) and n x d more memory,
    against O(t n d) for ``coinpress``.

    It pays off only where Sigma can be estimated: each step needs its noise (spectral norm
    about 2 sqrt(d) gamma^2 / (m sqrt(rho_k)), gamma^2 ~ d) below the whitened covariance. At
    d = 16, n = 4000 it reaches the non-private Mahalanobis error; at d = 128, n = 4000,
    rho = 0.5 the noise dominates and it is far worse than ``coinpress`` (IOME Figures 4-5 make
    the same point; benchmarks/bench_coinpress.py), and worse with every extra covariance step:
    each multiplies the un-whitening M^-1, through which MVMRec's noise comes back, by about
    sqrt(eta + 2 nu_k / (3 pi)) > 1 (see ``mvc_rec``; l2 error 13 at t_cov = 1, 170 at 5).

    Parameters
    ----------
    rho : float, optional
        The zCDP budget; the common parameters are those of :class:`MeanEstimator`.
    t_cov : int, default 2
        Covariance steps (MVCRec), from 1 to 60.
    t : int, default 10
        Mean steps (MVMRec), from 1 to 60.
    cov_share : float, default 0.5
        The fraction of rho the covariance steps spend, in (0, 1).
    sigma_max : float, optional
        The a priori bound Sigma <= sigma_max^2 I (default ``radius / sqrt(d)``).
    cov_beta : float, default 0.1
        Sets the covariance steps' clipping radius (the reference code's value), in (0, 1).
    **options
        ``radius``, ``centre``, ``beta`` as in :class:`CoinPressMean`, and the parameters of
        :class:`MeanEstimator`.

    Raises
    ------
    InvalidParameterError
        Steps outside 1 to 60, a share or ``cov_beta`` outside (0, 1), a non-positive
        ``sigma_max``, or a parameter :class:`CoinPressMean` refuses.

    Privacy
    -------
    rho-zCDP under replace-one, for any data. "cov-step-1" ... "cov-step-{t_cov}" share
    ``cov_share * rho`` with CoinPress's schedule (the last 3/4, the others the rest equally):
    each a symmetric Gaussian matrix on the n // 2 pair differences, Frobenius sensitivity
    sqrt(2) gamma^2 / (n // 2) (a row is in one pair). Then "mean-step-1" ... "mean-step-{t}"
    share the rest with the same schedule, as :class:`CoinPressMean` on the whitened rows.
    """

    method = "coinpress-cov"
    # With engine="sparse" it was charged, then refused (a review).
    sparse_engine_refuses = "its covariance steps ask the rows' pair differences"
    declared_diagnostics = {
        "whitening_norm": Diagnostic(Kind.FLOAT, "||M||_op of the private whitening map M."),
        "sigma_max": Diagnostic(Kind.FLOAT, "The a priori bound Sigma <= sigma_max^2 I used."),
    }

    def __init__(
        self, rho: float | None = None, *, t_cov: int = 2, t: int = 10, cov_share: float = 0.5,
        sigma_max: float | None = None, cov_beta: float = 0.1, **options: Any,
    ) -> None:
        super().__init__(rho, **options)
        self.t_cov = check_steps(t_cov, "t_cov")
        self.t = check_steps(t, "t")
        self.cov_share = check_fraction(cov_share, "cov_share")
        self.sigma_max = None if sigma_max is None else check_positive(sigma_max, "sigma_max")
        self.cov_beta = check_fraction(cov_beta, "cov_beta")

    def secure_coordinates(self, d: int) -> int:
        # The covariance steps release the upper triangle of a d x d moment.
        return max(2 * d, d * (d + 1) // 2)

    def check_secure_scale(self, n: int, d: int) -> None:
        super().check_secure_scale(n, d)
        if self.secure_noise and n // 2 > OUTER_SUM_ROWS:
            # Public: the covariance steps' exact outer sums take at most this many pairs.
            raise InvalidParameterError(
                f"secure noise on coinpress-cov sums at most {OUTER_SUM_ROWS} row pairs exactly "
                f"({n // 2} asked); use secure_noise=False or a sample of the rows")

    def public_scale(self, d: int) -> float:
        return self.sigma_max or self.radius / math.sqrt(d)

    def check_columns(self, d: int) -> None:
        super().check_columns(d)
        # O(d^2) memory, O(d^3) time: a d too wide is refused before anything is charged.
        check_covariance_dimension(self.method, d)

    def budget_plan(self, n: int, d: int) -> dict[str, float]:
        self.check_columns(d)
        cov = self.rho * self.cov_share
        plan = {**_stages("cov", step_budgets(cov, self.t_cov)),
                **_stages("mean", step_budgets(self.rho - cov, self.t))}
        m = n // 2
        if m >= 1:
            # MVMRec runs in a ball of radius ||M||_op R, M private; but each covariance
            # step multiplies A (A_0 = I / sigma_max) by (Z + eta I)^(-1/2), Z PSD, of norm
            # at most eta^(-1/2): a public bound (margin for rounding), checked as for
            # ``coinpress`` where it overflows (a radius of 1e300 with sigma_max = 1e-10 was
            # refused after the covariance steps were charged, on a private norm).
            eta = math.sqrt(d / m) + d / (2.0 * m)
            bound = (1.0 + 1e-6) * eta ** (-0.5 * self.t_cov) / self.public_scale(d)
            check_mvm_radius(self.method, bound * self.radius, d, n,
                             _planned(plan, "mean", self.t), self.beta,
                             centre_limit=math.inf)
        return plan

    def minimum_rows(
        self, n: int, lo: np.ndarray, hi: np.ndarray, budget: dict[str, float]
    ) -> float:
        return 2.0  # one pair for the covariance

    def release(
        self, engine: Engine, budget: dict[str, float], ledger: PrivacyLedger,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        d = engine.d
        sigma_max = self.public_scale(d)
        paired = engine.paired(rng.permutation(engine.n))
        *_, whitening = _mvc_steps(
            paired, sigma_max, _planned(budget, "cov", self.t_cov), beta=self.cov_beta,
            ledger=ledger, rng=rng, secure=self.secure_noise)
        # ||M||_op from the Gram matrix: a symmetric eigenvalue problem, cheaper than an SVD.
        whitening_norm = float(np.sqrt(np.linalg.eigvalsh(whitening @ whitening.T)[-1]))
        # MVMRec in whitened coordinates: the ball B(M c, ||M||_op R) contains M mu.
        whitened_mean, diagnostics, _ = mvm_rec(
            engine.materialised(View().with_linear(whitening)), View(),
            whitening @ self.prior_centre(d),
            whitening_norm * self.radius, _planned(budget, "mean", self.t), beta=self.beta,
            ledger=ledger, rng=rng, secure=self.secure_noise)
        mean = np.linalg.solve(whitening, whitened_mean)
        return mean, {**diagnostics, "whitening_norm": whitening_norm, "sigma_max": sigma_max}


__all__ = ["CoinPressCovMean", "CoinPressMean", "check_covariance_dimension", "check_mvm_radius",
           "gaussian_tail_radius", "largest_covariance_dimension", "mvc_rec", "mvm_rec",
           "step_budgets"]
