"""Confidence intervals (dpmean.intervals): the Gaussian mechanism's exact coverage, the
clipping- and trimming-bias bounds against the exact clipped or trimmed mean, the smooth noises'
quantiles, the box where no bound exists, and the a priori accuracy. Coverage of every
estimator on four kinds of data: tests/test_interval_coverage.py."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import binom

import dpmean
from dpmean.intervals import DiscretisedNoise, error_model, noise_quantile
from dpmean.mechanisms import NOISES
from dpmean.mechanisms.discrete_gaussian import discrete_gaussian_pmf

LEVEL = 0.9
RELEASES = 300
N, D = 500, 4
BOX = (-5.0, 5.0)
CASES = {
    "cm": ("cm", {}),
    "iome": ("iome", {}),
    "iome-quantized": ("iome", {"quantized": True}),
    "plan": ("plan", {}),
    "plan-bs": ("plan", {"quantile": "binary-search"}),
    "plan-noscale": ("plan-noscale", {}),
    "cm-profile": ("cm", {"interval_share": 0.05}),
    "iome-profile": ("iome", {"interval_share": 0.05}),
}


def gaussian_rows(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.5, 1.0, size=(N, D))


def outlier_rows(seed: int) -> np.ndarray:
    """Gaussian rows and 5 % of rows far out (8 in every coordinate, clamped to the box's 5):
    the clipped family clips them."""
    x = gaussian_rows(seed)
    x[: N // 20] = 8.0
    return x


def releases(x: np.ndarray, method: str, options: dict, level: float = LEVEL) -> np.ndarray:
    """Per coordinate, how many of RELEASES releases' intervals cover the clamped mean."""
    truth = np.clip(x, *BOX).mean(axis=0)  # the estimand: the clamped data's mean
    covered = np.zeros(D, dtype=int)
    for seed in range(RELEASES):
        result = dpmean.mean(x, rho=1.0, method=method, bounds=BOX, random_state=seed,
                             **options)
        lo, hi = result.confidence_interval(level)
        covered += (lo <= truth) & (truth <= hi)
    return covered


def test_gaussian_interval_is_exact():
    """The Gaussian mechanism's interval is the exact noise interval: coverage is level, not
    more (checked two-sided), and its half-width is z * noise_std."""
    x = gaussian_rows(2)
    covered = releases(x, "gaussian", {})
    low = binom.ppf(1e-3 / D, RELEASES, LEVEL)
    high = binom.isf(1e-3 / D, RELEASES, LEVEL)
    assert (covered >= low).all() and (covered <= high).all(), covered
    result = dpmean.mean(x, rho=1.0, method="gaussian", bounds=BOX, random_state=0)
    lo, hi = result.confidence_interval(0.95)
    assert np.allclose((hi - lo) / 2, 1.959963984540054 * result.diagnostics["noise_std"])


def exact_clipping_bias(x: np.ndarray, result) -> np.ndarray:
    """NON-PRIVATE: |clipped mean - mean| per coordinate, with the release's own radius C and
    centre c, the rows clipped where the estimator clips them: in its view u = f (x - c) (the
    rotation of IOME's real path is orthogonal, so it changes no norm)."""
    diagnostics = result.diagnostics
    lo, hi = diagnostics["bounds_lo"], diagnostics["bounds_hi"]
    clamped = np.clip(x, lo, hi)
    centre = np.asarray(diagnostics.get("centre", np.zeros(x.shape[1])))
    if result.method == "cm":
        centre = np.zeros(x.shape[1])
    factor = np.asarray(diagnostics.get("scale", 1.0)) * np.asarray(
        diagnostics.get("box_scale", 1.0))
    norms = np.linalg.norm((clamped - centre) * factor, axis=1, keepdims=True)
    shrink = np.minimum(1.0, diagnostics["threshold"] / np.maximum(norms, 1e-300))
    clipped = centre + shrink * (clamped - centre)
    return np.abs(clipped.mean(axis=0) - clamped.mean(axis=0))


@pytest.mark.parametrize("case", ["cm", "iome", "plan", "plan-bs", "plan-noscale", "cm-profile",
                                  "iome-profile"])
def test_bias_bound_holds_for_the_exact_clipped_mean(case):
    """Non-private check of the per-coordinate clipping-bias bound (and its l2 bound) against
    the exact clipped mean, on data whose outliers are clipped. The bound holds with
    probability >= 1 - beta per release; its failures over 20 releases are at most the
    1 - 1e-3 quantile of Binomial(20, beta)."""
    method, options = CASES[case]
    x = outlier_rows(3)
    beta = 0.05
    failures = 0
    for seed in range(20):
        result = dpmean.mean(x, rho=1.0, method=method, bounds=BOX, random_state=seed, **options)
        bias = error_model(result).bias.bounds(beta)
        assert bias is not None
        per, l2 = bias
        assert (per >= 0).all() and l2 <= np.linalg.norm(per) + 1e-12
        exact = exact_clipping_bias(x, result)
        assert exact.max() > 0  # the outliers are clipped
        failures += int((exact > per + 1e-12).any() or np.linalg.norm(exact) > l2 + 1e-12)
    assert failures <= binom.ppf(1 - 1e-3, 20, beta)


def test_per_coordinate_bias_is_tighter_than_the_l2_bound():
    """Goal 1 of issue 19: the bias bound per coordinate is (1 - C / B) reach_j, about
    1 / sqrt(d) of the view's l2 move B - C when every coordinate has the same reach (the
    radius search's bound alone: no interval share)."""
    result = dpmean.mean(gaussian_rows(3), rho=1.0, method="cm", bounds=BOX, random_state=0,
                         interval_share=0)
    bias = error_model(result).bias
    ((_, k),) = bias.clipping.clipped(0.05)
    radius, bound = bias.clipping.radius, bias.clipping.norm_bound
    per, _ = bias.bounds(0.05)
    assert np.all(per < k / N * (bound - radius) / np.sqrt(D) * 1.01)


@pytest.mark.parametrize("sigma2", [0.3, 1.0, 2.5, 10.0, 400.0])
@pytest.mark.parametrize("beta", [0.1, 0.01, 1e-4])
def test_discrete_gaussian_excess_bounds_its_exact_tail(sigma2, beta):
    """``DiscretisedNoise.excess`` of a count's noise (grid 1, no rounding) against the exact
    probabilities of N_Z(0, sigma2): one draw and the sum of three (the profile's tails) exceed
    the bound with probability at most beta; never wider than the sub-Gaussian bound, and at
    the noise scales of releases (sigma >= 1 / (GRID_SLACK sqrt(2 rho)), 20 here) at least 10%
    narrower."""
    span = int(12 * np.sqrt(sigma2)) + 10
    support = np.arange(-span, span + 1)
    pmf = discrete_gaussian_pmf(support, sigma2)
    count = DiscretisedNoise.count(np.sqrt(sigma2))
    one = float(count.excess(beta))
    assert pmf[support > one].sum() <= beta
    three = np.convolve(np.convolve(pmf, pmf), pmf)
    sums = np.arange(-3 * span, 3 * span + 1)
    assert three[sums > float(count.times(3).excess(beta))].sum() <= beta
    sub_gaussian = count.sub * np.sqrt(2.0 * np.log(1.0 / beta))
    assert one <= sub_gaussian
    if sigma2 >= 400:
        assert one < 0.9 * sub_gaussian


def test_secure_noise_half_widths_cover_their_discretised_draws():
    """The secure release's noise interval (one discretised Gaussian per coordinate, and the
    sum with a clip residual's) holds at its level over many exact draws: 20,000 draws, at
    least 1 - alpha of them inside, less a binomial margin (P < 1e-6 of failing by chance)."""
    from dpmean.intervals import GaussianNoise
    from dpmean.mechanisms.gaussian import gaussian_noise

    rng = np.random.default_rng(7)
    draws, alpha, rho = 20_000, 0.1, 0.5
    value = np.full(draws, 0.3)
    noise = gaussian_noise(value, 1.0, rho, rng, secure=True) - value
    added = gaussian_noise(value, 4.0, rho, rng, secure=True) - value
    std = np.full(draws, 1.0 / np.sqrt(2 * rho))
    floor = binom.ppf(1e-6, draws, 1 - alpha)
    alone = GaussianNoise(std, rho).half_widths(alpha)
    assert np.sum(np.abs(noise) <= alone) >= floor
    both = GaussianNoise(std, rho, added=4.0 * std).half_widths(alpha)
    assert np.sum(np.abs(noise + added) <= both) >= floor
    # and they are the normal quantile's widths, give or take the grid (GRID_SLACK = 0.1%)
    assert alone[0] < 1.005 * 1.645 * std[0]
    assert both[0] < 1.005 * 1.645 * np.hypot(1, 4) * std[0]


def test_trimming_bias_and_noise_bound():
    """The trimmed mean's interval: its noise scale bound (hi - lo) / ((n - 2m) s) is at least
    the exact smooth sensitivity over s, and the exact mean lies in (1 - p) T + p [lo, hi]."""
    from dpmean.mechanisms.smooth_sensitivity import trimmed_means, trimmed_smooth_sensitivity

    x = outlier_rows(4)
    result = dpmean.mean(x, rho=1.0, method="trimmed", bounds=BOX, random_state=0,
                         trim=0.1, smoothing=0.05)
    model = error_model(result)
    m = int(result.diagnostics["trim"][0])
    columns = np.sort(np.clip(x, *BOX), axis=0)
    exact = trimmed_smooth_sensitivity(columns, m, 0.05, BOX[0], BOX[1])
    assert np.all(exact / result.diagnostics["shift"] <= model.scale)
    trimmed = trimmed_means(columns, m)
    mean = np.clip(x, *BOX).mean(axis=0)
    p = m / N
    assert np.all((1 - p) * trimmed + p * BOX[0] <= mean)
    assert np.all(mean <= (1 - p) * trimmed + p * BOX[1])
    assert result.to_dict()["confidence_basis"] == "noise and trimming bias"


@pytest.mark.parametrize("noise, options", [
    ("lln", {"sigma": 0.7}), ("uln", {"sigma": 1.5}), ("arsinh", {}),
    ("student-t", {"dof": 3}), ("laplace", {}), ("gaussian", {}),
])
def test_noise_quantile_is_exact(noise, options):
    """P(|Z| > q) = alpha, checked on 200,000 draws of the noise's own sampler: the count
    beyond q is Binomial(200000, alpha), within its 1e-4 two-sided quantiles."""
    draws = 200_000
    kind = NOISES[noise]
    sampler = kind(options["sigma"]) if "sigma" in options else (
        kind(options["dof"]) if "dof" in options else kind())
    z = np.abs(sampler.sample(draws, np.random.default_rng(11)))
    for alpha in (0.1, 0.01):
        q = noise_quantile(noise, alpha, **options)
        beyond = int(np.count_nonzero(z > q))
        assert binom.ppf(5e-5, draws, alpha) <= beyond <= binom.isf(5e-5, draws, alpha)


def test_auto_delegates_to_the_chosen_estimator():
    x = gaussian_rows(4)
    result = dpmean.mean(x, rho=1.0, method="auto", bounds=BOX, random_state=0)
    lo, hi = result.confidence_interval()
    assert lo.shape == hi.shape == (D,)
    assert ((hi - lo) < (BOX[1] - BOX[0])).all()
    assert result.to_dict()["confidence_basis"] != "noise"  # a clipped estimator was chosen


@pytest.mark.parametrize("method, options", [
    ("trimmed", {"truncation": "output"}),
    ("coinpress", {"radius": 10.0, "interval_share": 0}),
    ("plan", {"interval_share": 0}),
    ("iome-local", {}),
])
def test_box_and_warning_where_no_honest_interval(method, options):
    """The box the data was clamped to (unbounded for output truncation, which clamps only
    the trimmed mean: its raw data's mean can lie anywhere)."""
    x = gaussian_rows(5)
    result = dpmean.mean(x, rho=1.0, method=method, bounds=BOX, random_state=0, **options)
    with pytest.warns(dpmean.BoxIntervalWarning, match="public box"):
        lo, hi = result.confidence_interval()
    box_lo, box_hi = (np.full(D, -np.inf), np.full(D, np.inf)) if options.get(
        "truncation") == "output" else (np.full(D, BOX[0]), np.full(D, BOX[1]))
    assert np.array_equal(lo, box_lo) and np.array_equal(hi, box_hi)
    with pytest.warns(dpmean.BoxIntervalWarning):
        radius = result.confidence_radius()
    assert radius >= np.linalg.norm(np.full(D, BOX[1] - BOX[0])) / 2
    assert result.to_dict()["confidence_basis"].startswith("public box")


def test_fallback_release_gives_the_box():
    x = gaussian_rows(6)[:5]
    with pytest.warns(dpmean.InsufficientDataWarning):
        result = dpmean.mean(x, rho=0.01, method="cm", bounds=BOX, random_state=0)
    assert result.fallback
    with pytest.warns(dpmean.BoxIntervalWarning, match="fallback"):
        lo, hi = result.confidence_interval()
    assert np.array_equal(lo, np.full(D, BOX[0]))


def test_to_dict_carries_the_interval():
    result = dpmean.mean(gaussian_rows(7), rho=1.0, method="cm", bounds=BOX, random_state=0)
    out = result.to_dict()
    lo, hi = result.confidence_interval(0.95)
    assert out["confidence_interval"]["level"] == 0.95
    assert np.allclose(out["confidence_interval"]["lo"], lo)
    assert np.allclose(out["confidence_interval"]["hi"], hi)
    assert out["confidence_radius"] == pytest.approx(result.confidence_radius(0.95))
    assert out["confidence_basis"] == "noise and clipping bias"


def test_level_is_checked():
    result = dpmean.mean(gaussian_rows(8), rho=1.0, method="gaussian", bounds=BOX,
                         random_state=0)
    with pytest.raises(dpmean.InvalidParameterError):
        result.confidence_interval(1.0)


@pytest.mark.parametrize("rho", [0.1, 1.0])
def test_accuracy_is_exact_for_the_gaussian_mechanism(rho):
    x = gaussian_rows(9)
    result = dpmean.mean(x, rho=rho, method="gaussian", bounds=BOX, random_state=0)
    planned = dpmean.accuracy("gaussian", N, D, BOX, rho, level=0.95)
    lo, hi = result.confidence_interval(0.95)
    assert planned == pytest.approx(1.959963984540054 * result.diagnostics["noise_std"],
                                    rel=1e-12)
    assert planned == pytest.approx(((hi - lo) / 2).max(), rel=1e-9)


@pytest.mark.parametrize("method", ["cm", "cm-fixed", "iome", "plan-noscale"])
@pytest.mark.parametrize("data", ["gaussian", "outliers"])
def test_accuracy_bounds_the_noise_of_clipped_releases(method, data):
    x = gaussian_rows(10) if data == "gaussian" else outlier_rows(10)
    options = {"quantile": "binary-search"} if method == "plan-noscale" else {}
    planned = dpmean.accuracy(method, N, D, BOX, 1.0, level=0.9, **options)
    for seed in range(10):
        result = dpmean.mean(x, rho=1.0, method=method, bounds=BOX, random_state=seed,
                             **options)
        assert np.all(planned >= 1.6448536269514722 * result.diagnostics["noise_std"])


@pytest.mark.parametrize("method", ["cm", "cm-fixed", "iome", "plan-noscale"])
def test_accuracy_plans_a_far_box_where_the_release_runs(method):
    # A box far from the origin runs moved to it (``box_offset``): cm's search tops out at
    # the moved box's reach, 10 here, not 2 x 10^6 (a trial: planned 9,098 for a release
    # whose noise half-width was 0.0071, and rho_for_accuracy asked for 10^10).
    bounds = (1e6, 1e6 + 10.0)
    x = 1e6 + 10.0 * np.random.default_rng(12).random((N, D))
    options = {"quantile": "binary-search"} if method == "plan-noscale" else {}
    planned = dpmean.accuracy(method, N, D, bounds, 1.0, level=0.9, **options)
    assert planned <= 1.6448536269514722 * 2.0 * 10.0 * math.sqrt(D) / N / math.sqrt(2 * 0.5)
    for seed in range(3):
        result = dpmean.mean(x, rho=1.0, method=method, bounds=bounds, random_state=seed,
                             **options)
        assert result.diagnostics["box_offset"] is not None
        assert np.all(planned >= 1.6448536269514722 * result.diagnostics["noise_std"])


@pytest.mark.parametrize("method", ["cm", "cm-fixed", "iome", "plan-noscale"])
@pytest.mark.parametrize("box", ["equal", "per column"])
def test_accuracy_at_a_releases_own_radius_is_its_noise(method, box):
    """The worst case is far above a release's noise in a loose box (a user trial: 5-18x);
    planned at the radius the release's search returned (``clip_radius``, in the space it
    runs in, as its "threshold" reports), the half-width is its own noise's, to rounding."""
    x = gaussian_rows(11)
    bounds = BOX if box == "equal" else (np.full(D, BOX[0]), np.linspace(BOX[1], 3 * BOX[1], D))
    options = {"quantile": "binary-search"} if method == "plan-noscale" else {}
    for seed in range(3):
        result = dpmean.mean(x, rho=1.0, method=method, bounds=bounds, random_state=seed,
                             **options)
        radius = result.diagnostics["threshold"]
        planned = dpmean.accuracy(method, N, D, bounds, 1.0, level=0.9, clip_radius=radius,
                                  **options)
        np.testing.assert_allclose(planned, 1.6448536269514722 * result.diagnostics[
            "noise_std"], rtol=1e-12)
        worst = dpmean.accuracy(method, N, D, bounds, 1.0, level=0.9, **options)
        assert np.all(planned < worst)
    # A radius beyond the box's largest is the worst case; the inverse takes it too.
    assert dpmean.accuracy(method, N, D, bounds, 1.0, clip_radius=1e9, **options) == (
        pytest.approx(dpmean.accuracy(method, N, D, bounds, 1.0, **options)))
    rho = dpmean.rho_for_accuracy(method, N, D, bounds, 0.05, clip_radius=radius, **options)
    assert np.max(dpmean.accuracy(method, N, D, bounds, rho, clip_radius=radius,
                                  **options)) <= 0.05


def test_accuracy_refuses_a_clip_radius_it_cannot_use():
    with pytest.raises(dpmean.InvalidParameterError, match="clips nothing"):
        dpmean.accuracy("gaussian", N, D, BOX, 1.0, clip_radius=1.0)
    for bad in (0.0, -1.0, float("nan"), float("inf"), "3"):
        with pytest.raises(dpmean.InvalidParameterError, match="clip_radius"):
            dpmean.accuracy("cm", N, D, BOX, 1.0, clip_radius=bad)


def test_accuracy_with_epsilon_delta_and_refusals():
    by_eps = dpmean.accuracy("gaussian", N, D, BOX, epsilon=1.0, delta=1e-6)
    rho = dpmean.GaussianMean(epsilon=1.0, delta=1e-6, bounds=BOX).rho
    assert by_eps == pytest.approx(dpmean.accuracy("gaussian", N, D, BOX, rho))
    with pytest.raises(dpmean.InvalidParameterError, match="no a priori"):
        dpmean.accuracy("plan", N, D, BOX, 1.0)
    with pytest.raises(dpmean.InvalidParameterError, match="fallback"):
        dpmean.accuracy("cm", 5, D, BOX, 0.01)


def test_accuracy_takes_ranges_by_name_as_mean_does():
    # A user trial: dpmean.mean and `dpmean budget --range` take ranges by name, accuracy did
    # not. One (lo, hi) per column, in the mapping's order; a count other than d is refused.
    named = {"amount": (0, 1e5), "age": (0, 120)}
    by_name = dpmean.accuracy("cm", 5000, 2, named, 0.1)
    by_position = dpmean.accuracy("cm", 5000, 2, ([0, 0], [1e5, 120]), 0.1)
    np.testing.assert_array_equal(by_name, by_position)
    with pytest.raises(dpmean.InvalidParameterError, match="2 columns by name but d is 3"):
        dpmean.accuracy("cm", 5000, 3, named, 0.1)
    # A half-width no rho reaches names the column that binds (a user trial: it did not).
    wide = {**named, "ts": (1.6e9, 1.8e9)}
    with pytest.raises(dpmean.InvalidParameterError, match="column 'ts' comes no nearer than"):
        dpmean.rho_for_accuracy("cm", 500, 3, wide, 1.0)
    # The Gaussian mechanism is not advised to be itself (a user trial).
    with pytest.raises(dpmean.InvalidParameterError, match="range sets its sensitivity") as raised:
        dpmean.rho_for_accuracy("gaussian", 10, 2, (0.0, 1.0), 1e-30)
    assert "method='gaussian'" not in str(raised.value)


@pytest.mark.parametrize("method", ["gaussian", "cm", "iome"])
def test_rho_for_accuracy_inverts_accuracy(method):
    target = 0.05
    rho = dpmean.rho_for_accuracy(method, N, D, BOX, target, level=0.9)
    assert dpmean.accuracy(method, N, D, BOX, rho, level=0.9) <= target
    if method == "gaussian":  # monotone: just below, the target is missed
        assert dpmean.accuracy(method, N, D, BOX, rho * (1 - 1e-6), level=0.9) > target


def test_quantiles_without_scipy_stats_are_scipy_stats_values():
    # intervals.py (and the searches' and planning's normal_isf) take their normal, t and
    # chi-square quantiles from scipy.special (scipy.stats costs a command 0.6 s of start-up):
    # the very values scipy.stats gives.
    from scipy import special
    from scipy.stats import chi2, norm
    from scipy.stats import t as student_t

    from dpmean import intervals
    from dpmean.mechanisms.gaussian import normal_isf

    p = np.r_[1e-300, 1e-30, 1e-9, 1e-4, 0.0125, 0.05, 0.1, 0.3, 0.5, 0.9, 1 - 1e-9]
    np.testing.assert_array_equal(normal_isf(p), norm.isf(p))
    y = np.linspace(-12.0, 12.0, 97)
    np.testing.assert_allclose(intervals._normal_pdf(y), norm.pdf(y), rtol=1e-15, atol=0)
    for dof in (1, 3.5, 30):
        np.testing.assert_array_equal(-special.stdtrit(dof, p[2:-1]), student_t.isf(p[2:-1], dof))
    for k in (1, 8, 784):
        np.testing.assert_array_equal(special.chdtri(k, p[2:-1]), chi2.isf(p[2:-1], k))
    from dpmean.estimators.variance import chi2_quantile_factor

    for q, k in [(0.5, 1), (0.75, 1), (0.75, 4), (0.9, 30)]:
        assert chi2_quantile_factor(q, k) == float(chi2.ppf(q, k) / k)


def test_a_release_and_its_interval_do_not_import_scipy_stats():
    # The command's start-up: scipy.stats and scipy.optimize are imported only where a release
    # needs them (epsilon-delta conversions, the trimmed mean's smooth noise, a private box).
    # (scipy.linalg comes with numba's kernels.)
    import subprocess
    import sys

    code = ("import sys, numpy as np, dpmean; x = np.random.default_rng(0).normal(size=(500, 4));"
            "r = dpmean.mean(x, rho=1.0, bounds=(-5, 5), method='{}', random_state=0);"
            "r.confidence_interval(0.9); "
            "print(sorted(m for m in ('scipy.stats', 'scipy.optimize')"
            " if m in sys.modules))")
    for method in ("iome", "plan", "cm"):
        out = subprocess.run([sys.executable, "-c", code.format(method)], capture_output=True,
                             text=True, check=True).stdout.strip()
        assert out == "[]", (method, out)


def test_accuracy_tells_an_unknown_method_from_one_without_a_bound():
    with pytest.raises(dpmean.InvalidParameterError,
                       match="unknown method 'GAUSSIAN'.*gaussian, cm, cm-fixed, iome"):
        dpmean.accuracy("GAUSSIAN", N, D, BOX, 1.0)
    with pytest.raises(dpmean.InvalidParameterError, match="unknown method None"):
        dpmean.accuracy(None, N, D, BOX, 1.0)  # type: ignore[arg-type]
    with pytest.raises(dpmean.InvalidParameterError, match="unknown method"):
        dpmean.rho_for_accuracy("Gaussian", N, D, BOX, 0.05)
    with pytest.raises(dpmean.InvalidParameterError, match="'plan' has no a priori"):
        dpmean.accuracy("plan", N, D, BOX, 1.0)


@pytest.mark.parametrize("bad", [None, float("nan"), float("inf"), "1000", True, 500.0, 0, -3,
                                 np.array([500])])
@pytest.mark.parametrize("name", ["n", "d"])
def test_accuracy_refuses_a_shape_that_is_not_positive_integers(bad, name):
    shape = {"n": N, "d": D, name: bad}
    message = f"{name} must be a positive integer, got {bad!r}"
    with pytest.raises(dpmean.InvalidParameterError) as caught:
        dpmean.accuracy("gaussian", shape["n"], shape["d"], BOX, 1.0)
    assert str(caught.value) == message
    with pytest.raises(dpmean.InvalidParameterError) as caught:
        dpmean.rho_for_accuracy("gaussian", shape["n"], shape["d"], BOX, 0.05)
    assert str(caught.value) == message


def test_accuracy_reads_numpy_integers_and_checks_level():
    assert dpmean.accuracy("gaussian", np.int64(N), np.int32(D), BOX, 1.0) == dpmean.accuracy(
        "gaussian", N, D, BOX, 1.0)
    for level in (None, "0.9", np.array([0.9]), float("nan"), 1.0):
        with pytest.raises(dpmean.InvalidParameterError, match="level must be a number"):
            dpmean.accuracy("gaussian", N, D, BOX, 1.0, level=level)


@pytest.mark.parametrize("bad", [None, "0.01", np.array([0.01, 0.02]), float("nan"),
                                 float("inf"), 0.0, -1.0, True])
def test_rho_for_accuracy_refuses_a_half_width_that_is_not_a_positive_number(bad):
    with pytest.raises(dpmean.InvalidParameterError, match="^half_width must be"):
        dpmean.rho_for_accuracy("gaussian", N, D, BOX, bad)


@pytest.mark.parametrize("method", ["gaussian", "cm", "iome"])
def test_a_plan_without_bounds_says_the_box_is_what_is_missing(method):
    """Without bounds, accuracy told "a differentially private mean needs a public range ...
    reading the range from the data would leak it", where a release without bounds finds a
    private box: for a plan, the public box is what is missing, and it says so."""
    for plan in (lambda: dpmean.accuracy(method, N, D, None, 1.0),
                 lambda: dpmean.rho_for_accuracy(method, N, D, None, 0.1)):
        with pytest.raises(dpmean.InvalidParameterError,
                           match=r"no bounds given: the noise is planned in the release's "
                                 r"public box.*private box found from the data"):
            plan()
    # gaussian's norm_bound is a public box of its own.
    assert dpmean.accuracy("gaussian", N, D, None, 1.0, norm_bound=1.0) > 0


def test_radius_of_a_loose_box_does_not_overflow():
    # The noise's l2 radius for unequal scales (Laurent-Massart) summed fourth powers of the
    # standard deviations: 1e98 for bounds of 1e100 overflowed to inf, with a RuntimeWarning.
    x = np.random.default_rng(0).random((1000, 3))
    result = dpmean.mean(x, rho=0.5, bounds=(-1e100, 1e100), method="plan", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        radius = result.confidence_radius(0.9)
        lo, hi = result.confidence_interval(0.9)
    assert np.isfinite(radius) and 0 < radius <= np.linalg.norm(np.full(3, 2e100))
    assert np.all(hi - lo > 0)


def test_noise_radius_is_unchanged_where_it_did_not_overflow():
    from dpmean.intervals import noise_radius

    def unscaled(std, alpha):  # the formula as it was computed before scaling
        var = std**2
        x = math.log(1.0 / alpha)
        return float(np.sqrt(var.sum() + 2.0 * np.sqrt(x * np.sum(var**2))
                             + 2.0 * x * var.max()))

    rng = np.random.default_rng(11)
    for _ in range(200):
        std = np.exp(rng.normal(0.0, 10.0, size=int(rng.integers(2, 40))))
        alpha = float(rng.uniform(1e-6, 0.5))
        assert noise_radius(std, alpha, False) == unscaled(std, alpha)  # bit for bit
        # and scaling by a power of two scales it exactly, far beyond where squares overflow
        assert noise_radius(std * 2.0**900, alpha, False) == unscaled(std, alpha) * 2.0**900
        assert noise_radius(std * 2.0**-900, alpha, False) == unscaled(std, alpha) * 2.0**-900


def test_an_interval_in_a_private_box_says_it_is_about_the_clamped_rows():
    # A user trial: without bounds, a Gaussian release's 95% interval missed the raw mean in
    # every run (lengths of stay: truth 5.32, interval [4.9, 5.1]) and the command line called
    # it "(noise)": the interval is about the rows clamped to the private box, whose clamping
    # bias it does not bound. The basis now says so; with public bounds it does not.
    x = np.random.default_rng(0).lognormal(1.0, 1.0, size=(3000, 2))
    private = dpmean.mean(x, rho=0.5, method="gaussian", random_state=0).to_dict()
    assert private["confidence_basis"].startswith("noise; of the rows clamped to the private box")
    assert "clamping bias is not included" in private["confidence_basis"]
    public = dpmean.mean(x, rho=0.5, method="gaussian", bounds=(0, 200), random_state=0)
    assert public.to_dict()["confidence_basis"] == "noise"


def test_an_interval_in_a_private_box_is_told_to_be_of_the_clamped_rows():
    # Without bounds a lognormal column's interval missed its mean in 30 of 30 releases, and
    # only confidence_basis said why (a user trial): the methods warn; to_dict does not (it
    # carries the basis).
    import warnings

    from dpmean import PrivateBoxIntervalWarning

    rng = np.random.default_rng(0)
    x = np.column_stack([rng.integers(18, 90, 2000), rng.lognormal(20, 2, 2000)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = dpmean.mean(x, rho=0.5, method="gaussian", random_state=0)
    for ask in (result.confidence_interval, result.confidence_radius):
        with pytest.warns(PrivateBoxIntervalWarning, match="rows clamped to the private box"):
            ask()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivateBoxIntervalWarning)
        assert "private box" in result.to_dict()["confidence_basis"]
        boxed = dpmean.mean(x, rho=0.5, method="gaussian", bounds=(0, 1e12), random_state=0)
        boxed.confidence_interval()
