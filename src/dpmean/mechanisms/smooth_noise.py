"""Noise for smooth sensitivity: release f(x) + (S^t(x) / s) Z (Bun-Steinke 2019, Sec. 1.2, 4).

Laplace log-normal, uniform log-normal, arsinh-normal (CDP, Props. 3-5), Student's T (pure DP),
Laplace and Gaussian with Nissim-Raskhodnikova-Smith (eps, delta) parameters, Gaussian (tCDP).

Privacy of the mechanism reduces to the noise: for neighbours x, y (replace-one),
M(y) - f(x) = (S^t(y)/s) Z + f(y) - f(x), so comparing M(x) with M(y) is comparing Z with
e^{t'} Z + s' where |s'| = s |f(y) - f(x)| / S^t(x) <= s (S^t bounds the local sensitivity) and
|t'| = |ln(S^t(y) / S^t(x))| <= t (S^t is t-smooth). Each noise below states for which (s, t)
that comparison meets its notion. ``calibrate(budget, t)`` (one signature for every noise)
returns, for a typed privacy budget and a smoothing t, the shape parameter and the largest s
(the smallest noise), near-optimally.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..accounting import PrivacyLedger, stepped_down
from ..budget import Budget
from ..errors import InvalidParameterError
from ..validation import check_positive

# Gauss-Hermite nodes for E[g(Y)], Y ~ N(0, 1): the log-normal mixtures' densities are such
# expectations, smooth in Y, and 160 nodes integrate them to near machine precision.
_HERMITE_Y, _HERMITE_W = np.polynomial.hermite_e.hermegauss(160)
_HERMITE_W = _HERMITE_W / math.sqrt(2.0 * math.pi)


def _exp(x: float) -> float:
    """exp(x), inf on overflow: at tiny budgets the noise shapes' scales overflow, and the
    calibration must say "infinite noise" rather than crash."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


@dataclass(frozen=True)
class Calibration:
    """A noise ready to use: release f(x) + (S^t(x) / s) Z with Z ~ ``noise``.

    ``t`` is the smoothing of the smooth sensitivity the noise must be scaled to, ``s`` the shift
    parameter; the noise on the release has variance S^t(x)^2 ``noise.variance`` / s^2.
    ``cost`` is what one release with it spends, in the ledger's unit of its notion: rho for
    the CDP noises ((1/2) eps^2-CDP is rho = eps^2 / 2), for Student's T (pure eps-DP implies
    eps^2 / 2-zCDP) and for tCDP; epsilon for the (eps, delta) noises.
    """

    noise: SmoothNoise
    t: float
    s: float
    cost: float

    @property
    def variance_factor(self) -> float:
        """Var[Z] / s^2: the release's noise variance per unit of squared smooth sensitivity
        (inf when the budget is too small for the shape: s underflows or Var[Z] overflows)."""
        if self.s <= 0.0:
            return math.inf
        return self.noise.variance / self.s / self.s  # s * s could underflow to 0


class SmoothNoise(ABC):
    """A noise distribution Z admissible for smooth sensitivity.

    ``notion`` is the guarantee of a release with it (``"zCDP"``, ``"approx-DP"`` or
    ``"tCDP"``); ``accepts`` the notions of the budgets ``calibrate`` takes.
    """

    name: str
    notion: str
    accepts: ClassVar[tuple[str, ...]] = ("zCDP",)

    @classmethod
    def calibrate(cls, budget: Budget, t: float | None = None, *, dof: int = 3) -> Calibration:
        """The noise's shape and the largest shift s for ``budget`` at smoothing ``t``.

        Parameters
        ----------
        budget : Budget
            The privacy level of one release with this noise, in a notion of ``accepts``:
            zCDP (rho; the CDP noises are (1/2) eps^2-CDP with eps = sqrt(2 rho)), pure-DP
            (epsilon; Student's T, which also takes a zCDP budget as eps = sqrt(2 rho)),
            approx-DP (epsilon, delta; the NRS noises) or tCDP (rho, omega).
        t : float, optional
            The smoothing of the smooth sensitivity the noise will be scaled to; required but
            for the NRS noises, whose (eps, delta) fix it (any t up to that is admissible).
        dof : int, default 3
            Student's T degrees of freedom (ignored by the other noises).

        Returns
        -------
        Calibration
            The noise, t, s and the cost of one release in the budget's unit.

        Raises
        ------
        InvalidParameterError
            A budget in a notion the noise does not take, a missing or too large t, or a
            budget too small for the noise.
        """
        if budget.notion not in cls.accepts:
            raise InvalidParameterError(
                f"{cls.name} noise is calibrated to a {' or '.join(cls.accepts)} budget, not "
                f"{budget.notion}")
        if t is None and cls.notion != "approx-DP":
            raise InvalidParameterError(f"{cls.name} noise needs the smoothing t")
        return cls._calibrate(budget, t, dof)

    @classmethod
    @abstractmethod
    def _calibrate(cls, budget: Budget, t: float | None, dof: int) -> Calibration:
        """``calibrate`` for a budget already checked to be one this noise takes."""

    @abstractmethod
    def sample(self, size: int | tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        """Independent draws of Z."""

    @abstractmethod
    def pdf(self, z: np.ndarray) -> np.ndarray:
        """The density of Z."""

    @property
    @abstractmethod
    def variance(self) -> float:
        """Var[Z] (Z has mean zero)."""


def _cdp_epsilon(budget: Budget) -> float:
    """The eps of (1/2) eps^2-CDP that a rho-zCDP budget is: sqrt(2 rho), an ulp lower where
    its cost as charged, 0.5 eps eps, would round above rho (a review: a trimmed mean charged
    0.9249144902833768 of 0.9249144902833767)."""
    rho = budget.rho
    assert rho is not None  # a zCDP Budget has its rho
    return stepped_down(math.sqrt(2.0 * rho), lambda epsilon: 0.5 * epsilon * epsilon <= rho)


def _check_t(t: float | None, limit: float, why: str) -> float:
    t = check_positive(t, "smoothing t")
    if not t < limit:
        raise InvalidParameterError(
            f"smoothing t={t:g} is too large: {why} needs t < {limit:.6g}; choose a smaller t"
        )
    return t


# --------------------------------------------------------------------------------------------
# The three CDP noises (Bun-Steinke 2019, Props. 3-5): (1/2) eps^2-CDP = rho-zCDP, rho = eps^2/2
# --------------------------------------------------------------------------------------------


class LaplaceLogNormal(SmoothNoise):
    """LLN(sigma): Z = X e^{sigma Y}, X ~ Laplace(1), Y ~ N(0, 1) (Prop. 3).

    Privacy: for all s, t > 0, f(x) + (S^t(x)/s) Z is (1/2) eps^2-CDP with
    eps = t / sigma + e^{3 sigma^2 / 2} s. Var[Z] = 2 e^{2 sigma^2}.
    """

    name = "lln"
    notion = "zCDP"

    def __init__(self, sigma: float) -> None:
        self.sigma = check_positive(sigma, "sigma")

    def sample(self, size, rng):
        return rng.laplace(size=size) * np.exp(self.sigma * rng.standard_normal(size))

    def pdf(self, z):
        # p(z) = E_Y[ (1/2) e^{-sigma Y} exp(-|z| e^{-sigma Y}) ].
        scale = np.exp(-self.sigma * _HERMITE_Y)
        inner = 0.5 * scale * np.exp(-np.abs(np.asarray(z, dtype=float))[..., None] * scale)
        return inner @ _HERMITE_W

    @property
    def variance(self) -> float:
        return 2.0 * _exp(2.0 * self.sigma**2)

    @staticmethod
    def epsilon(sigma: float, s: float, t: float) -> float:
        return t / sigma + _exp(1.5 * sigma**2) * s

    @classmethod
    def _calibrate(cls, budget: Budget, t: float | None, dof: int) -> Calibration:
        """Near-optimal sigma for (1/2) epsilon^2-CDP at smoothing t: minimising
        Var[Z]/s^2 = 2 e^{5 sigma^2} / (eps - t/sigma)^2 gives the cubic
        5 (eps/t) sigma^3 - 5 sigma^2 - 1 = 0 (its real root has sigma > t/eps); then
        s = e^{-3 sigma^2 / 2} (eps - t / sigma)."""
        epsilon = _cdp_epsilon(budget)
        t = check_positive(t, "smoothing t")
        roots = np.roots([5.0 * epsilon / t, -5.0, 0.0, -1.0])
        sigma = float(max(r.real for r in roots if abs(r.imag) < 1e-9 * max(1.0, abs(r))))
        s = _exp(-1.5 * sigma**2) * (epsilon - t / sigma)
        return Calibration(cls(sigma), t, s, 0.5 * epsilon * epsilon)


class UniformLogNormal(SmoothNoise):
    """ULN(sigma), sigma >= sqrt(2): Z = U e^{sigma Y}, U ~ Uniform[-1, 1], Y ~ N(0, 1) (Prop. 4).

    Privacy: for all s, t > 0, (1/2) eps^2-CDP with
    eps = t / sigma + e^{3 sigma^2 / 2} sqrt(2 / (pi sigma^2)) s. Var[Z] = e^{2 sigma^2} / 3.
    """

    name = "uln"
    notion = "zCDP"

    def __init__(self, sigma: float) -> None:
        sigma = check_positive(sigma, "sigma")
        if sigma < math.sqrt(2.0):
            raise InvalidParameterError(
                f"uniform log-normal noise needs sigma >= sqrt(2) (Bun-Steinke Prop. 4), got "
                f"{sigma:g}"
            )
        self.sigma = sigma

    def sample(self, size, rng):
        return rng.uniform(-1.0, 1.0, size=size) * np.exp(self.sigma * rng.standard_normal(size))

    def pdf(self, z):
        # p(z) = (1/2) E_Y[e^{-sigma Y} 1{|z| <= e^{sigma Y}}] = (1/2) e^{sigma^2/2}
        # Phi_bar(ln|z| / sigma + sigma).
        with np.errstate(divide="ignore"):
            log_z = np.log(np.abs(np.asarray(z, dtype=float)))
        from scipy import special  # imported when used (scipy.stats: 0.6 s)
        return 0.5 * _exp(0.5 * self.sigma**2) * special.ndtr(-(log_z / self.sigma
                                                                     + self.sigma))

    @property
    def variance(self) -> float:
        return _exp(2.0 * self.sigma**2) / 3.0

    @staticmethod
    def epsilon(sigma: float, s: float, t: float) -> float:
        return t / sigma + _exp(1.5 * sigma**2) * math.sqrt(2.0 / (math.pi * sigma**2)) * s

    @classmethod
    def _calibrate(cls, budget: Budget, t: float | None, dof: int) -> Calibration:
        """Var[Z]/s^2 = pi sigma^2 e^{5 sigma^2} / (6 (eps - t/sigma)^2) is stationary where
        5 eps sigma^2 - 5 t sigma - eps = 0; Prop. 4 needs sigma >= sqrt(2), which binds for
        every t < 9 eps / (5 sqrt(2)), so in practice sigma = sqrt(2)."""
        epsilon = _cdp_epsilon(budget)
        t = _check_t(t, epsilon * math.sqrt(2.0), "uniform log-normal noise at sigma >= sqrt(2)")
        free = t / (2.0 * epsilon) + math.sqrt(t * t / (4.0 * epsilon**2) + 0.2)
        sigma = max(math.sqrt(2.0), free)
        shift_cost = _exp(1.5 * sigma**2) * math.sqrt(2.0 / (math.pi * sigma**2))
        return Calibration(cls(sigma), t, (epsilon - t / sigma) / shift_cost,
                           0.5 * epsilon * epsilon)


class ArsinhNormal(SmoothNoise):
    """Z = sinh(Y), Y ~ N(0, 1): the arsinh-normal with sigma = 1 (Prop. 5).

    Privacy: for s, t in (0, 1), (1/2) eps^2-CDP with eps = 2 sqrt(t) + 1.2 s. The paper proves
    no other sigma, so this is the only shape offered. Var[Z] = (e^2 - 1) / 2.
    """

    name = "arsinh"
    notion = "zCDP"

    def sample(self, size, rng):
        return np.sinh(rng.standard_normal(size))

    def pdf(self, z):
        z = np.asarray(z, dtype=float)
        from scipy import stats  # imported when used: 0.6 s
        return stats.norm.pdf(np.arcsinh(z)) / np.sqrt(1.0 + z * z)

    @property
    def variance(self) -> float:
        return (math.e**2 - 1.0) / 2.0

    @staticmethod
    def epsilon(s: float, t: float) -> float:
        return 2.0 * math.sqrt(t) + 1.2 * s

    @classmethod
    def _calibrate(cls, budget: Budget, t: float | None, dof: int) -> Calibration:
        """s = (eps - 2 sqrt(t)) / 1.2, kept inside (0, 1) as Prop. 5 requires."""
        epsilon = _cdp_epsilon(budget)
        t = _check_t(t, min(1.0, epsilon**2 / 4.0), "arsinh-normal noise (2 sqrt(t) < eps)")
        s = min((epsilon - 2.0 * math.sqrt(t)) / 1.2, math.nextafter(1.0, 0.0))
        return Calibration(cls(), t, s, 0.5 * epsilon * epsilon)


# --------------------------------------------------------------------------------------------
# Comparison noises (Bun-Steinke 2019, Sec. 4)
# --------------------------------------------------------------------------------------------


class StudentT(SmoothNoise):
    """Student's T with ``dof`` degrees of freedom: pure eps-DP, reported as eps^2/2-zCDP.

    Privacy (pointwise log-density ratio, derived here): ln p(z) - ln p(z - s') lies within
    +-(dof+1)|s'|/(2 sqrt(dof)) (the score (dof+1) z/(dof+z^2) peaks at z = sqrt(dof)), and
    ln p(z) - ln(e^{-t'} p(z e^{-t'})) within +-dof |t'|; so f(x) + (S^t(x)/s) Z is eps-DP with
    eps = dof t + (dof+1) s / (2 sqrt(dof)), hence (eps^2/2)-zCDP (Bun-Steinke 2016, Prop. 1.4).
    (A third-party code uses (dof+1)(t + s/(2 sqrt(dof))), which is looser.)
    Var[Z] = dof / (dof - 2), finite for dof > 2.
    """

    name = "student-t"
    notion = "zCDP"

    def __init__(self, dof: int = 3) -> None:
        if isinstance(dof, bool) or not isinstance(dof, (int, np.integer)) or dof < 3:
            raise InvalidParameterError(
                f"Student's T needs an integer dof >= 3 (finite variance), got {dof!r}"
            )
        self.dof = int(dof)

    def sample(self, size, rng):
        return rng.standard_t(self.dof, size=size)

    def pdf(self, z):
        from scipy import stats  # imported when used: 0.6 s
        return stats.t.pdf(z, self.dof)

    @property
    def variance(self) -> float:
        return self.dof / (self.dof - 2.0)

    @staticmethod
    def epsilon(dof: int, s: float, t: float) -> float:
        return dof * t + (dof + 1.0) * s / (2.0 * math.sqrt(dof))

    accepts = ("pure-DP", "zCDP")

    @classmethod
    def _calibrate(cls, budget: Budget, t: float | None, dof: int) -> Calibration:
        """s = 2 sqrt(dof) (eps - dof t) / (dof + 1), for pure epsilon-DP (eps = sqrt(2 rho)
        for a zCDP budget: pure eps-DP implies eps^2 / 2-zCDP)."""
        epsilon = (check_positive(budget.epsilon, "epsilon") if budget.notion == "pure-DP"
                   else _cdp_epsilon(budget))
        noise = cls(dof)
        t = _check_t(t, epsilon / noise.dof, "Student's T noise (dof * t < eps)")
        return Calibration(noise, t, 2.0 * math.sqrt(noise.dof) * (epsilon - noise.dof * t)
                           / (noise.dof + 1.0), 0.5 * epsilon * epsilon)


class _NRSNoise(SmoothNoise):
    """Nissim-Raskhodnikova-Smith (2007) admissible noise for (eps, delta)-DP: the smoothing is
    fixed by (eps, delta) (any t up to it is admissible; a smaller t only adds noise)."""

    notion = "approx-DP"

    @staticmethod
    @abstractmethod
    def parameters(epsilon: float, delta: float) -> tuple[float, float]:
        """(shift alpha = s, smoothing beta = largest t)."""

    accepts = ("approx-DP",)

    @classmethod
    def _calibrate(cls, budget: Budget, t: float | None, dof: int) -> Calibration:
        epsilon, delta = budget.epsilon, budget.delta
        assert epsilon is not None and delta is not None  # an approx-DP Budget has both
        s, beta = cls.parameters(epsilon, delta)
        if t is not None:
            t = _check_t(t, math.nextafter(beta, math.inf), f"{cls.name} noise at (eps, delta)")
        return Calibration(cls(), beta if t is None else t, s, epsilon)


class LaplaceNRS(_NRSNoise):
    """Laplace(1) noise, (eps, delta)-DP with shift s = eps/2 and smoothing
    t <= ln(1 + eps/(2 ln(2/delta))) (NRS 2007's admissible parameters, B.4 of the project's
    notes, with the dilation's exact bound; Bun-Steinke's text only cites NRS). Var[Z] = 2.

    Why the logarithm: NRS take t = eps/(2 ln(2/delta)), reading 1 - e^-t as t. Dilating Z by
    e^t raises the density ratio above e^(eps/2) only where |z| (1 - e^-t) > eps/2 + t, which
    Z e^t reaches with probability exp(-(eps/2 + t) / (e^t - 1)); at t = ln(1 + x),
    x = eps/(2 ln(2/delta)), that is at most exp(-(eps/2) / x) = delta/2, for every eps. At NRS's
    t it exceeds delta/2 once eps (per coordinate) is above about 13: a review measured the
    hockey-stick divergence of Lap(1) against e^t Lap(1) - s at 1.6e-3 for delta = 1e-3, eps =
    14, and 4.6e-5 for delta = 1e-6, eps = 30. At small eps the two agree to about x/2."""

    name = "laplace"

    def sample(self, size, rng):
        return rng.laplace(size=size)

    def pdf(self, z):
        return 0.5 * np.exp(-np.abs(np.asarray(z, dtype=float)))

    @property
    def variance(self) -> float:
        return 2.0

    @staticmethod
    def parameters(epsilon: float, delta: float) -> tuple[float, float]:
        return epsilon / 2.0, math.log1p(epsilon / (2.0 * math.log(2.0 / delta)))


class _StandardNormal:
    """Z ~ N(0, 1): the sampler, density and variance the two Gaussian noises share."""

    def sample(self, size, rng):
        return rng.standard_normal(size)

    def pdf(self, z):
        from scipy import stats  # imported when used: 0.6 s
        return stats.norm.pdf(z)

    @property
    def variance(self) -> float:
        return 1.0


class GaussianNRS(_StandardNormal, _NRSNoise):
    """N(0, 1) noise, (eps, delta)-DP in one dimension with shift
    s = eps / (5 sqrt(2 ln(2/delta))) and smoothing t <= eps / (4 (1 + ln(2/delta)))
    (NRS 2007's admissible parameters in dimension 1, as the notes quote them, B.4; the notes
    check numerically that both leave delta far below its target). Var[Z] = 1."""

    name = "gaussian"

    @staticmethod
    def parameters(epsilon: float, delta: float) -> tuple[float, float]:
        log_term = math.log(2.0 / delta)
        return epsilon / (5.0 * math.sqrt(2.0 * log_term)), epsilon / (4.0 * (1.0 + log_term))


def gaussian_renyi(alpha: np.ndarray, s: np.ndarray, t: np.ndarray) -> np.ndarray:
    """D_alpha(N(0, 1) || N(s, e^{2t})) in closed form (inf where the integral diverges):
    t + ln(e^{2t} / v) / (2 (alpha - 1)) + alpha s^2 / (2 v), v = alpha e^{2t} + 1 - alpha."""
    alpha, s, t = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (alpha, s, t)))
    v = alpha * np.exp(2.0 * t) + 1.0 - alpha
    with np.errstate(divide="ignore", invalid="ignore"):
        out = t + (2.0 * t - np.log(v)) / (2.0 * (alpha - 1.0)) + alpha * s * s / (2.0 * v)
    return np.where(v > 0, out, np.inf)


class GaussianTCDP(_StandardNormal, SmoothNoise):
    """N(0, 1) noise under truncated CDP (Bun-Dwork-Rothblum-Steinke 2018): (rho, omega)-tCDP,
    i.e. D_alpha <= rho alpha for 1 < alpha <= omega, when the closed-form divergence
    ``gaussian_renyi`` of Z against e^{t'} Z + s' meets it for all |s'| <= s, |t'| <= t. It is
    finite only while omega e^{-2t} + 1 - omega > 0, so t < ln(omega / (omega - 1)) / 2.
    Var[Z] = 1. The paper compares at (eps^2/2, 10)-tCDP."""

    name = "gaussian-tcdp"
    notion = "tCDP"

    accepts = ("tCDP",)

    @classmethod
    def _calibrate(cls, budget: Budget, t: float | None, dof: int) -> Calibration:
        """The largest s with sup_{1<alpha<=omega, |t'|<=t} D_alpha / alpha <= rho. The bound
        D_alpha <= rho alpha reads
        s'^2 <= 2 v (rho alpha - t' - (2t' - ln v) / (2(alpha - 1))) / alpha,
        minimised over a fine grid of alpha and t' (smooth in both), then shrunk by 1e-6 to
        absorb the grid's resolution."""
        rho, omega = budget.rho, budget.omega
        assert rho is not None and omega is not None  # a tCDP Budget has both
        if omega <= 1:
            raise InvalidParameterError(f"tCDP needs omega > 1, got {omega:g}")
        t = _check_t(t, 0.5 * math.log(omega / (omega - 1.0)), f"tCDP with omega={omega:g}")
        alpha = 1.0 + np.geomspace(1e-6, omega - 1.0, 4000)[:, None]
        tp = np.linspace(-t, t, 201)[None, :]
        v = alpha * np.exp(2.0 * tp) + 1.0 - alpha
        room = rho * alpha - tp - (2.0 * tp - np.log(v)) / (2.0 * (alpha - 1.0))
        s2 = float(np.min(2.0 * v * room / alpha))
        if s2 <= 0:
            raise InvalidParameterError(
                f"smoothing t={t:g} alone exceeds ({rho:g}, {omega:g})-tCDP; choose a smaller t"
            )
        return Calibration(cls(), t, math.sqrt(s2) * (1.0 - 1e-6), rho)


NOISES: dict[str, type[SmoothNoise]] = {
    cls.name: cls
    for cls in (LaplaceLogNormal, UniformLogNormal, ArsinhNormal, StudentT, LaplaceNRS,
                GaussianNRS, GaussianTCDP)
}


def smooth_sensitivity_mechanism(
    value: np.ndarray, smooth_sensitivity: np.ndarray,
    calibration: Calibration | Sequence[Calibration], rng: np.random.Generator, *,
    ledger: PrivacyLedger, stage: str,
) -> np.ndarray:
    """Release ``value + (smooth_sensitivity / s) Z``, one independent Z per coordinate.

    ``calibration`` is one for every coordinate, or a sequence of one per coordinate.

    Privacy: for each coordinate whose ``smooth_sensitivity`` is a t-smooth upper bound on the
    local sensitivity (replace-one) of ``value`` at that coordinate, with t = calibration.t, the
    release meets the guarantee its calibration was made for (see its noise class); the
    coordinates compose, so the release costs the sum of their ``cost``, charged to ``stage``
    before anything is drawn.
    """
    value = np.asarray(value, dtype=np.float64)
    per_coordinate = ([calibration] * value.size if isinstance(calibration, Calibration)
                      else list(calibration))
    if len(per_coordinate) != value.size:
        raise InvalidParameterError(
            f"got {len(per_coordinate)} calibrations for {value.size} coordinates"
        )
    for cal in dict.fromkeys(per_coordinate):
        if not math.isfinite(cal.variance_factor):
            raise InvalidParameterError(
                f"the privacy budget is too small for the {cal.noise.name} noise at smoothing "
                f"t={cal.t:g}: its scale is infinite in floating point; give a larger budget "
                f"or another noise"
            )
    ledger.charge(stage, math.fsum(cal.cost for cal in per_coordinate))
    flat = value.reshape(-1)
    scale = np.asarray(smooth_sensitivity, dtype=np.float64).reshape(-1)
    out = np.empty_like(flat)
    # In order of first appearance, so a seeded run draws the same noise every time.
    for cal in dict.fromkeys(per_coordinate):
        cols = np.array([j for j, c in enumerate(per_coordinate) if c == cal])
        out[cols] = flat[cols] + scale[cols] / cal.s * cal.noise.sample(cols.shape, rng)
    return out.reshape(value.shape)
