"""Smooth-sensitivity noises (Bun-Steinke 2019): samplers against densities, variances, the
privacy claims checked numerically (and the check shown to catch a wrong claim), calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ledgers import stage
from scipy import integrate, stats

from dpmean.budget import Budget
from dpmean.errors import InvalidParameterError
from dpmean.mechanisms.smooth_noise import (
    NOISES,
    ArsinhNormal,
    GaussianNRS,
    GaussianTCDP,
    LaplaceLogNormal,
    LaplaceNRS,
    StudentT,
    UniformLogNormal,
    gaussian_renyi,
    smooth_sensitivity_mechanism,
)

# A grid z = sinh(u): dense near 0, reaching |z| ~ 1.5e4, where every density below has mass
# far below 1e-6 of its total (checked by test_densities_integrate_to_one).
U = np.linspace(-10.3, 10.3, 40001)
Z = np.sinh(U)
DZ = np.cosh(U)

EXAMPLES = {
    "lln": LaplaceLogNormal(0.4),
    "uln": UniformLogNormal(math.sqrt(2.0)),
    "arsinh": ArsinhNormal(),
    "student-t": StudentT(3),
    "laplace": LaplaceNRS(),
    "gaussian": GaussianNRS(),
    "gaussian-tcdp": GaussianTCDP(),
}



def cdp(epsilon):
    """The rho-zCDP budget that (1/2) epsilon^2-CDP is."""
    return Budget.zcdp(epsilon**2 / 2.0)

def integral(values: np.ndarray) -> float:
    return float(integrate.trapezoid(values * DZ, U))


def test_every_noise_has_an_example():
    assert set(EXAMPLES) == set(NOISES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_densities_integrate_to_one_and_give_the_stated_variance(name):
    noise = EXAMPLES[name]
    pdf = noise.pdf(Z)
    assert integral(pdf) == pytest.approx(1.0, abs=1e-5)
    # Student's T(3) has tails ~ z^-4, so z^2 p(z) leaves 2 * int_{>1.5e4} 6 sqrt(3)/pi z^-2 dz
    # ~ 1.4e-4 of the variance outside the grid; the others leave far less.
    assert integral(Z * Z * pdf) == pytest.approx(noise.variance, rel=2e-4)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_sampler_matches_density(name):
    noise = EXAMPLES[name]
    cdf_values = integrate.cumulative_trapezoid(noise.pdf(Z) * DZ, U, initial=0.0)
    draws = noise.sample(20000, np.random.default_rng(7))
    p_value = stats.kstest(draws, lambda x: np.interp(x, Z, cdf_values)).pvalue
    # Under the null the p-value is uniform; 1e-3 fails a correct sampler once in 1000 seeds.
    assert p_value > 1e-3
    # ... and the test has power: the draws scaled by 1.2 (a 20% wrong scale) fail it.
    assert stats.kstest(1.2 * draws, lambda x: np.interp(x, Z, cdf_values)).pvalue < 1e-6


def renyi(noise, alphas, s: float, t: float) -> np.ndarray:
    """D_alpha(Z || e^t Z + s) for each alpha, by quadrature on the grid, in logs (where either
    density underflows to 0 the integrand is far below 1e-300 for these light tails)."""
    with np.errstate(divide="ignore"):
        log_p = np.log(noise.pdf(Z))
        log_q = -t + np.log(noise.pdf((Z - s) * np.exp(-t)))
    keep = np.isfinite(log_p) & np.isfinite(log_q)
    out = []
    for alpha in np.atleast_1d(alphas):
        values = np.exp(alpha * log_p[keep] + (1.0 - alpha) * log_q[keep])
        total = float(integrate.trapezoid(values * DZ[keep], U[keep]))
        out.append(math.log(total) / (alpha - 1.0))
    return np.array(out)


ALPHAS = (1.5, 2.0, 4.0, 8.0)
SHIFTS = [(0.3, 0.0), (0.0, 0.1), (0.0, -0.1), (0.2, 0.05), (-0.2, -0.05)]


@pytest.mark.parametrize("noise, epsilon", [
    (LaplaceLogNormal(0.4), lambda s, t: LaplaceLogNormal.epsilon(0.4, s, t)),
    (LaplaceLogNormal(1.0), lambda s, t: LaplaceLogNormal.epsilon(1.0, s, t)),
    (UniformLogNormal(math.sqrt(2.0)),
     lambda s, t: UniformLogNormal.epsilon(math.sqrt(2.0), s, t)),
    (ArsinhNormal(), ArsinhNormal.epsilon),
])
def test_cdp_claims_hold_numerically(noise, epsilon):
    # (1/2) eps^2-CDP means D_alpha <= alpha eps^2 / 2 for every alpha > 1 and every shift |s'|
    # <= s, dilation |t'| <= t; the claims are stated for |s|, |t|. Quadrature error is ~1e-6.
    for s, t in SHIFTS:
        eps = epsilon(abs(s), abs(t))
        alphas = np.array(ALPHAS)
        assert np.all(renyi(noise, alphas, s, t) <= alphas * eps**2 / 2 + 1e-6)


@pytest.mark.parametrize("noise, epsilon, s, t", [
    (LaplaceLogNormal(0.4), lambda s, t: LaplaceLogNormal.epsilon(0.4, s, t), 0.05, 0.0),
    (UniformLogNormal(math.sqrt(2.0)),
     lambda s, t: UniformLogNormal.epsilon(math.sqrt(2.0), s, t), 0.0, 0.1),
])
def test_the_renyi_check_catches_a_wrong_claim(noise, epsilon, s, t):
    # Where a claim is nearly tight (LLN(0.4) for a small shift: D_alpha / alpha ~ 0.72 of the
    # bound; ULN for a dilation: ~ 0.96), claiming half the epsilon (a quarter of the bound)
    # must fail the same check that the true claims pass.
    eps = epsilon(s, t) / 2.0
    alphas = np.array(ALPHAS)
    assert np.any(renyi(noise, alphas, s, t) > alphas * eps**2 / 2)


def test_student_t_is_pure_dp_and_a_wrong_epsilon_is_caught():
    for dof in (3, 5):
        noise = StudentT(dof)
        for s, t in SHIFTS:
            q = np.exp(-t) * noise.pdf((Z - s) * np.exp(-t))
            worst = np.max(np.abs(np.log(noise.pdf(Z)) - np.log(q)))
            eps = StudentT.epsilon(dof, abs(s), abs(t))
            assert worst <= eps + 1e-9
        # The shift part is tight at z = sqrt(dof): half the claimed epsilon is exceeded.
        q = noise.pdf(Z - 0.3)
        assert np.max(np.abs(np.log(noise.pdf(Z)) - np.log(q))) > StudentT.epsilon(dof, 0.3, 0) / 2


def test_gaussian_renyi_closed_form_matches_quadrature():
    noise = GaussianTCDP()
    for alpha, s, t in [(2.0, 0.3, 0.0), (5.0, 0.2, -0.04), (3.0, -0.1, 0.05)]:
        assert gaussian_renyi(alpha, s, t) == pytest.approx(renyi(noise, alpha, s, t)[0],
                                                            rel=1e-6)
    assert gaussian_renyi(20.0, 0.1, -0.05) == np.inf  # alpha e^{2t} + 1 - alpha <= 0


def test_tcdp_calibration_is_tight_at_the_largest_order():
    cal = GaussianTCDP.calibrate(Budget("tCDP", rho=0.5, omega=10.0), 0.03)
    alphas = np.linspace(1.001, 10.0, 500)
    for tp in (-0.03, 0.0, 0.03):
        assert np.all(gaussian_renyi(alphas, cal.s, tp) <= 0.5 * alphas + 1e-12)
    # The binding case is a narrower noise (t' = -t) at alpha = omega.
    assert gaussian_renyi(10.0, cal.s, -0.03) == pytest.approx(5.0, rel=1e-5)
    with pytest.raises(InvalidParameterError, match="too large"):
        # needs t < ln(10/9)/2 ~ 0.0527
        GaussianTCDP.calibrate(Budget("tCDP", rho=0.5, omega=10.0), 0.06)


def test_lln_calibration_solves_the_cubic_and_minimises_the_variance():
    eps, t = 1.0, 0.1
    cal = LaplaceLogNormal.calibrate(cdp(eps), t)
    sigma = cal.noise.sigma
    assert 5 * (eps / t) * sigma**3 - 5 * sigma**2 - 1 == pytest.approx(0.0, abs=1e-9)
    assert LaplaceLogNormal.epsilon(sigma, cal.s, t) == pytest.approx(eps)
    # The notes' worked example: sigma ~ 0.31, variance factor ~ 7.
    assert sigma == pytest.approx(0.31, abs=0.005)
    assert cal.variance_factor == pytest.approx(7.0, rel=0.02)
    grid = np.linspace(t / eps + 1e-3, 1.0, 2000)
    factors = 2 * np.exp(5 * grid**2) / (eps - t / grid) ** 2
    assert cal.variance_factor <= factors.min() * (1 + 1e-6)


def test_other_calibrations_meet_their_epsilon():
    uln = UniformLogNormal.calibrate(cdp(1.0), 0.1)
    assert uln.noise.sigma == pytest.approx(math.sqrt(2.0))
    assert UniformLogNormal.epsilon(uln.noise.sigma, uln.s, 0.1) == pytest.approx(1.0)
    ars = ArsinhNormal.calibrate(cdp(1.0), 0.1)
    assert ArsinhNormal.epsilon(ars.s, 0.1) == pytest.approx(1.0)
    st = StudentT.calibrate(Budget("pure-DP", epsilon=1.0), 0.1, dof=3)
    assert StudentT.epsilon(3, st.s, 0.1) == pytest.approx(1.0)
    lap = LaplaceNRS.calibrate(Budget.approx_dp(1.0, 1e-6))
    assert (lap.s, lap.t) == pytest.approx((0.5, math.log1p(1 / (2 * math.log(2e6)))))
    gauss = GaussianNRS.calibrate(Budget.approx_dp(1.0, 1e-6))
    assert (gauss.s, gauss.t) == pytest.approx((1 / (5 * math.sqrt(2 * math.log(2e6))),
                                                1 / (4 * (1 + math.log(2e6)))))


def _laplace_hockey_stick(epsilon: float, s: float, t: float, forward: bool) -> float:
    """The hockey-stick divergence at e^epsilon of Lap(1) against e^t Lap(1) - s (or the
    reverse): the release of a neighbour whose statistic moved by its whole smooth
    sensitivity S and whose S grew by e^t, in units of S / s."""
    p = lambda z: 0.5 * math.exp(-abs(z))  # noqa: E731
    q = lambda z: 0.5 * math.exp(-t - abs(z + s) * math.exp(-t))  # noqa: E731
    a, b = (p, q) if forward else (q, p)
    edges = sorted({-400.0, -100.0, -40.0, -20.0, -s - 5.0, -s, 0.0, 5.0, 20.0, 40.0, 100.0,
                    400.0})
    return sum(integrate.quad(lambda z: max(0.0, a(z) - math.exp(epsilon) * b(z)), lo, hi,
                              limit=400, epsabs=1e-300, epsrel=1e-10)[0]
               for lo, hi in zip(edges[:-1], edges[1:], strict=False))


@pytest.mark.parametrize("epsilon, delta", [(14.0, 1e-3), (20.0, 1e-6), (30.0, 1e-6),
                                            (16.0, 1e-9), (1.0, 1e-6)])
def test_laplace_nrs_keeps_its_delta_at_large_epsilon(epsilon, delta):
    """A review: at NRS's t = eps / (2 ln(2 / delta)) the dilation's tail breaks delta above
    eps of about 13 per coordinate (1.6e-3 for delta = 1e-3 at eps = 14; 4.6e-5 for 1e-6 at
    30). With t = ln(1 + eps / (2 ln(2 / delta))) it is at most delta / 2 (the docstring)."""
    cal = LaplaceNRS.calibrate(Budget.approx_dp(epsilon, delta))
    worst = max(_laplace_hockey_stick(epsilon, cal.s, cal.t, forward)
                for forward in (True, False))
    assert worst <= delta
    naive = epsilon / (2 * math.log(2 / delta))
    if epsilon >= 14:  # the check catches NRS's own t there
        assert max(_laplace_hockey_stick(epsilon, cal.s, naive, forward)
                   for forward in (True, False)) > delta


@pytest.mark.parametrize("call, message", [
    (lambda: UniformLogNormal(1.0), "sqrt"),
    (lambda: ArsinhNormal.calibrate(cdp(1.0), 0.3), "too large"),
    (lambda: StudentT.calibrate(Budget("pure-DP", epsilon=1.0), 0.4), "too large"),
    (lambda: StudentT(2), "dof"),
    (lambda: LaplaceNRS.calibrate(Budget.approx_dp(1.0, 1e-6), t=0.1), "too large"),
    (lambda: LaplaceNRS.calibrate(Budget.approx_dp(1.0, 1.5)), "delta"),
    (lambda: LaplaceLogNormal.calibrate(Budget.zcdp(-0.5), 0.1), "rho"),
    (lambda: LaplaceLogNormal.calibrate(Budget.approx_dp(1.0, 1e-6), 0.1), "not approx-DP"),
    (lambda: LaplaceLogNormal.calibrate(cdp(1.0)), "needs the smoothing"),
    (lambda: LaplaceNRS.calibrate(cdp(1.0)), "approx-DP budget"),
])
def test_bad_parameters_are_refused(call, message):
    with pytest.raises(InvalidParameterError, match=message):
        call()


def test_mechanism_scales_noise_by_sensitivity_over_shift():
    cal = LaplaceNRS.calibrate(Budget.approx_dp(1.0, 1e-6))
    rng = np.random.default_rng(3)
    out = smooth_sensitivity_mechanism(np.zeros(200000), np.full(200000, 2.0), cal, rng, **stage())
    # Var = (2 / 0.5)^2 * 2 = 32; the sample variance of 2e5 Laplace draws has relative sd
    # sqrt((6 - 1) / 2e5) = 0.5%, so 3% is six standard deviations.
    assert np.var(out) == pytest.approx(32.0, rel=0.03)
    assert np.array_equal(smooth_sensitivity_mechanism(np.ones(3), np.zeros(3), cal, rng,
                                                       **stage()),
                          np.ones(3))
