"""Confidence intervals (dpmean.intervals): empirical coverage over repeated releases with fixed
seeds, the clipping-bias bound against the exact clipped mean, the box where no bound exists,
and the width against the empirical error (printed with -s)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import binom

import dpmean
from dpmean.intervals import error_model

LEVEL = 0.9
RELEASES = 300
N, D = 500, 4
BOX = (-5.0, 5.0)
CASES = {
    "gaussian": ("gaussian", {}),
    "cm": ("cm", {}),
    "iome": ("iome", {}),
    "plan-bs": ("plan", {"quantile": "binary-search"}),
    "plan-noscale-bs": ("plan-noscale", {"quantile": "binary-search"}),
}


def min_covered(releases: int, level: float, d: int, false_alarm: float = 1e-3) -> int:
    """The smallest count of covering releases a coordinate may show: the false_alarm / d
    quantile of Binomial(releases, level) (one-sided, Bonferroni over the d coordinates), so a
    method whose per-coordinate coverage is exactly ``level`` fails the case with probability
    at most ``false_alarm``."""
    return int(binom.ppf(false_alarm / d, releases, level))


def gaussian_rows(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.5, 1.0, size=(N, D))


def outlier_rows(seed: int) -> np.ndarray:
    """Gaussian rows and 5 % of rows far out (8 in every coordinate, clamped to the box's 5):
    the clipped family clips them."""
    x = gaussian_rows(seed)
    x[: N // 20] = 8.0
    return x


def releases(x: np.ndarray, method: str, options: dict, level: float = LEVEL):
    truth = np.clip(x, *BOX).mean(axis=0)  # the estimand: the clamped data's mean
    covered = np.zeros(D, dtype=int)
    covered_l2 = 0
    widths, errors = [], []
    for seed in range(RELEASES):
        result = dpmean.mean(x, rho=1.0, method=method, bounds=BOX, random_state=seed,
                             **options)
        lo, hi = result.confidence_interval(level)
        covered += (lo <= truth) & (truth <= hi)
        covered_l2 += np.linalg.norm(result.mean - truth) <= result.confidence_radius(level)
        widths.append(hi - lo)
        errors.append(result.mean - truth)
    return covered, covered_l2, np.array(widths), np.array(errors)


@pytest.mark.parametrize("data", ["gaussian", "outliers"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_coverage(case, data):
    method, options = CASES[case]
    x = gaussian_rows(1) if data == "gaussian" else outlier_rows(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpmean.BoxIntervalWarning)  # no release gives the box
        covered, covered_l2, widths, errors = releases(x, method, options)
    floor = min_covered(RELEASES, LEVEL, D)
    assert covered.min() >= floor, (case, data, covered, floor)
    assert covered_l2 >= int(binom.ppf(1e-3, RELEASES, LEVEL))
    rmse = float(np.sqrt(np.mean(errors**2)))
    print(f"\n{case:16s} {data:9s} coverage {covered / RELEASES} (floor {floor / RELEASES:.3f}) "
          f"l2 {covered_l2 / RELEASES:.3f}; mean width {widths.mean():.4g}, RMSE {rmse:.4g}, "
          f"width / RMSE {widths.mean() / rmse:.1f}")


def test_gaussian_interval_is_exact():
    """The Gaussian mechanism's interval is the exact noise interval: coverage is level, not
    more (checked two-sided), and its half-width is z * noise_std."""
    x = gaussian_rows(2)
    covered, _, widths, _ = releases(x, "gaussian", {})
    low = binom.ppf(1e-3 / D, RELEASES, LEVEL)
    high = binom.isf(1e-3 / D, RELEASES, LEVEL)
    assert (covered >= low).all() and (covered <= high).all(), covered
    result = dpmean.mean(x, rho=1.0, method="gaussian", bounds=BOX, random_state=0)
    lo, hi = result.confidence_interval(0.95)
    assert np.allclose((hi - lo) / 2, 1.959963984540054 * result.diagnostics["noise_std"])


@pytest.mark.parametrize("case", ["cm", "iome", "plan-bs"])
def test_bias_bound_holds_for_the_exact_clipped_mean(case):
    """Non-private check of the clipping-bias bound itself: with the release's own radius, the
    exact clipped mean of the view is within the bound of the exact mean (for cm, where the
    view is the identity, computed directly)."""
    method, options = CASES[case]
    x = outlier_rows(3)
    for seed in range(20):
        result = dpmean.mean(x, rho=1.0, method=method, bounds=BOX, random_state=seed, **options)
        model = error_model(result)
        bound = model.clip.view_bias(0.05)
        assert bound is not None and bound >= 0.0
        if case != "cm":
            continue
        radius = result.diagnostics["threshold"]
        norms = np.linalg.norm(x.clip(*BOX), axis=1, keepdims=True)
        clipped = x.clip(*BOX) * np.minimum(1.0, radius / norms)
        assert np.linalg.norm(clipped.mean(axis=0) - x.clip(*BOX).mean(axis=0)) <= bound


def test_auto_delegates_to_the_chosen_estimator():
    x = gaussian_rows(4)
    result = dpmean.mean(x, rho=1.0, method="auto", bounds=BOX, random_state=0)
    lo, hi = result.confidence_interval()
    assert lo.shape == hi.shape == (D,)
    assert ((hi - lo) < (BOX[1] - BOX[0])).all()
    assert result.to_dict()["confidence_basis"] != "noise"  # a clipped estimator was chosen


@pytest.mark.parametrize("method, options", [
    ("plan", {}),
    ("trimmed", {}),
    ("cm", {"secure_noise": True}),
    ("iome", {"quantized": True}),
    ("iome-local", {}),
])
def test_box_and_warning_where_no_honest_interval(method, options):
    x = gaussian_rows(5)
    result = dpmean.mean(x, rho=1.0, method=method, bounds=BOX, random_state=0, **options)
    with pytest.warns(dpmean.BoxIntervalWarning, match="public box"):
        lo, hi = result.confidence_interval()
    assert np.array_equal(lo, np.full(D, BOX[0])) and np.array_equal(hi, np.full(D, BOX[1]))
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
        assert planned >= 1.6448536269514722 * result.diagnostics["noise_std"]


def test_accuracy_with_epsilon_delta_and_refusals():
    by_eps = dpmean.accuracy("gaussian", N, D, BOX, epsilon=1.0, delta=1e-6)
    rho = dpmean.GaussianMean(epsilon=1.0, delta=1e-6, bounds=BOX).rho
    assert by_eps == pytest.approx(dpmean.accuracy("gaussian", N, D, BOX, rho))
    with pytest.raises(dpmean.InvalidParameterError, match="no a priori"):
        dpmean.accuracy("plan", N, D, BOX, 1.0)
    with pytest.raises(dpmean.InvalidParameterError, match="fallback"):
        dpmean.accuracy("cm", 5, D, BOX, 0.01)


@pytest.mark.parametrize("method", ["gaussian", "cm", "iome"])
def test_rho_for_accuracy_inverts_accuracy(method):
    target = 0.05
    rho = dpmean.rho_for_accuracy(method, N, D, BOX, target, level=0.9)
    assert dpmean.accuracy(method, N, D, BOX, rho, level=0.9) <= target
    if method == "gaussian":  # monotone: just below, the target is missed
        assert dpmean.accuracy(method, N, D, BOX, rho * (1 - 1e-6), level=0.9) > target
