"""Empirical coverage of the confidence intervals (issue 19): for every estimator that claims
one, on Gaussian data, data with outliers that are clipped (and clamped), an MNIST-like table
and a mixed-scale table with per-column boxes, each coordinate's interval covers the exact
mean of the clamped data in at least the binomial floor of the releases (fixed seeds).

NON-PRIVATE evaluation: the tests read the exact mean. Small n and d keep the 200 releases of
each case cheap; the trimmed mean gets fixed public settings (``trim``, ``smoothing``) so that
its data-independent tuning does not run per release (the interval does not depend on how
they were chosen)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import binom

import dpmean

LEVEL = 0.9
RELEASES = 200
N = 300
METHODS = {
    "cm": ("cm", {}),
    "iome": ("iome", {}),
    "plan": ("plan", {}),
    "trimmed": ("trimmed", {"trim": 0.05, "smoothing": 0.05}),
    "auto": ("auto", {}),
    "coinpress": ("coinpress", {"radius": 50.0}),  # the public box: covers trivially
}
# Other paths of the same models, each on one data set.
EXTRA = {
    "plan-binary-search": ("plan", {"quantile": "binary-search"}, "outliers"),
    "plan-noscale": ("plan-noscale", {}, "mixed"),
    "cm-secure": ("cm", {"secure_noise": True}, "gaussian"),
    "iome-quantized": ("iome", {"quantized": True}, "outliers"),
    "cm-profile": ("cm", {"interval_share": 0.05}, "outliers"),
    "iome-profile": ("iome", {"interval_share": 0.05}, "mixed"),
    "iome-quantized-profile": ("iome", {"quantized": True, "interval_share": 0.05}, "outliers"),
    "coinpress-profile": ("coinpress", {"radius": 50.0, "interval_share": 0.05}, "outliers"),
    "plan-secure": ("plan", {"secure_noise": True}, "outliers"),  # its default profile, on a grid
    # A larger share: the clip residual's bound is the narrower on every coordinate here.
    "iome-residual": ("iome", {"interval_share": 0.25}, "gaussian"),
    "plan-residual": ("plan", {"interval_share": 0.25}, "outliers"),
    "cm-secure-residual": ("cm", {"secure_noise": True, "interval_share": 0.25}, "mixed"),
    "trimmed-student-t": ("trimmed", {"noise": "student-t", "trim": 0.05, "smoothing": 0.02},
                          "mnist"),
    # Without the interval's share (the papers' algorithms): the radius search's rank
    # guarantee alone bounds the clipped rows.
    "cm-no-share": ("cm", {"interval_share": 0}, "outliers"),
    "iome-no-share": ("iome", {"interval_share": 0}, "gaussian"),
    "plan-binary-search-no-share": ("plan", {"quantile": "binary-search", "interval_share": 0},
                                    "gaussian"),
    # The median radius, whose profile keeps the shell at 2 C (``profile_doublings``).
    "cm-fixed": ("cm-fixed", {}, "outliers"),
}
CASES = len(METHODS) * 4 + len(EXTRA)
D_MOST = 16  # the widest table (MNIST-like)


def coverage_floor(releases: int, level: float, d: int) -> int:
    """The fewest covering releases a coordinate may show. Each coordinate's count of covering
    releases is Binomial(releases, p) with p >= level (releases are independent), so it falls
    below the q-quantile of Binomial(releases, level) with probability at most q. With
    q = 1e-3 / (d * CASES) (Bonferroni over every coordinate of every case), a correct
    implementation fails this file with probability at most 1e-3; at 200 releases and level 0.9
    the floor is 0.80 for d = 16 (the margin, level - floor, is about 4.6 binomial standard
    deviations), so a coordinate far below the level fails."""
    return int(binom.ppf(1e-3 / (d * CASES), releases, level))


def gaussian(rng: np.random.Generator) -> tuple[np.ndarray, tuple]:
    return rng.normal(0.5, 1.0, size=(N, 4)), (-5.0, 5.0)


def outliers(rng: np.random.Generator) -> tuple[np.ndarray, tuple]:
    """5 % of the rows at 8 in every coordinate, clamped to the box's 5 and then clipped."""
    x, box = gaussian(rng)
    x[: N // 20] = 8.0
    return x, box


def mnist(rng: np.random.Generator) -> tuple[np.ndarray, tuple]:
    """4 x 4 "digits": three stroke templates of 0 / 255 pixels, strokes dimmed at random and
    a few pixels dropped; most pixels are 0, the box is [0, 255] (integers, as MNIST)."""
    templates = (rng.random((3, 16)) < 0.35) * 255.0
    rows = templates[rng.integers(0, 3, size=N)]
    rows *= rng.uniform(0.5, 1.0, size=(N, 16)) * (rng.random((N, 16)) > 0.1)
    return np.rint(rows), (0.0, 255.0)


def mixed(rng: np.random.Generator) -> tuple[np.ndarray, tuple]:
    """Columns of different scales, each with its own public box: a 0/1 flag, a score in
    [-100, 100], a skewed amount in [0, 10^4] (a few clamped) and a small Gaussian."""
    x = np.column_stack([
        rng.random(N) < 0.3,
        rng.normal(20.0, 15.0, N),
        rng.lognormal(6.5, 1.0, N),
        rng.normal(0.0, 1.0, N),
    ]).astype(np.float64)
    return x, ([0.0, -100.0, 0.0, -5.0], [1.0, 100.0, 1e4, 5.0])


DATA = {"gaussian": gaussian, "outliers": outliers, "mnist": mnist, "mixed": mixed}


def coverage(data: str, method: str, options: dict) -> tuple[np.ndarray, int]:
    x, box = DATA[data](np.random.default_rng(7))
    truth = np.clip(x, *box).mean(axis=0)  # the estimand: the clamped data's mean
    covered = np.zeros(x.shape[1], dtype=int)
    covered_l2 = 0
    for seed in range(RELEASES):
        result = dpmean.mean(x, rho=1.0, method=method, bounds=box, random_state=seed,
                             **options)
        lo, hi = result.confidence_interval(LEVEL)
        covered += (lo <= truth) & (truth <= hi)
        covered_l2 += int(np.linalg.norm(result.mean - truth)
                          <= result.confidence_radius(LEVEL))
    return covered, covered_l2


def check(data: str, method: str, options: dict, box_allowed: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpmean.InsufficientDataWarning)
        if not box_allowed:  # an estimator that claims an interval never falls back to the box
            warnings.simplefilter("error", dpmean.BoxIntervalWarning)
        else:
            warnings.simplefilter("ignore", dpmean.BoxIntervalWarning)
        covered, covered_l2 = coverage(data, method, options)
    floor = coverage_floor(RELEASES, LEVEL, covered.size)
    assert covered.min() >= floor, (data, method, covered, floor)
    assert covered_l2 >= coverage_floor(RELEASES, LEVEL, 1)


@pytest.mark.parametrize("data", sorted(DATA))
@pytest.mark.parametrize("name", sorted(METHODS))
def test_coverage(name, data):
    method, options = METHODS[name]
    check(data, method, options, box_allowed=name == "coinpress")


@pytest.mark.parametrize("name", sorted(EXTRA))
def test_coverage_of_other_paths(name):
    method, options, data = EXTRA[name]
    check(data, method, options, box_allowed=False)


def test_floor_is_a_real_margin():
    """The floor is below the level but not vacuous: 0.75 to 0.85 of the releases."""
    for d in (1, 4, D_MOST):
        floor = coverage_floor(RELEASES, LEVEL, d) / RELEASES
        assert 0.75 <= floor < LEVEL
