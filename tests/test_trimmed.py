"""The trimmed mean with smooth sensitivity (Bun-Steinke 2019): exact smooth sensitivity against
the formula of Prop. 11, smoothness, the estimator from the API and the CLI, and the paper's
headline excess variances reproduced with fixed seeds."""

from __future__ import annotations

import json
import math
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpmean
from dpmean.cli import main
from dpmean.engines import make_engine
from dpmean.errors import InsufficientDataWarning, InvalidParameterError
from dpmean.estimators.trimmed import TrimmedMean, gaussian_trimmed_variance
from dpmean.experiments.bun_steinke import default_tuning_excess, excess_grid, sampled_excess
from dpmean.mechanisms.smooth_noise import NOISES
from dpmean.mechanisms.smooth_sensitivity import (
    computed_smooth_sensitivity,
    trimmed_means,
    trimmed_smooth_sensitivity,
)

A, B = -1.0, 3.0


def formula(x: np.ndarray, m: int, t: float, output: bool = False) -> float:
    """Prop. 11 evaluated literally: max over k = 0..n and l = 0..k+1 (output truncation: padding
    at -inf/+inf and each distance-k term capped at b - a)."""
    n, x = len(x), np.sort(x)
    pad_lo, pad_hi = (-math.inf, math.inf) if output else (A, B)

    def order(i: int) -> float:
        return pad_lo if i <= 0 else pad_hi if i > n else float(x[i - 1])

    best = 0.0
    for k in range(n + 1):
        term = max(order(n - m + 1 + k - lag) - order(m + 1 - lag) for lag in range(k + 2))
        term /= n - 2 * m
        best = max(best, math.exp(-k * t) * (min(term, B - A) if output else term))
    return best


samples = st.lists(st.sampled_from([-1.0, -0.5, 0.0, 0.0, 0.25, 1.0, 2.0, 3.0])
                   | st.floats(-1.0, 3.0), min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(samples, st.data(), st.sampled_from([0.0, 0.01, 0.1, 0.7, 3.0, 40.0]), st.booleans())
def test_smooth_sensitivity_matches_the_formula(x, data, t, output):
    x = np.array(x)
    m = data.draw(st.integers(0, (len(x) - 1) // 2))
    if output:
        x = x * data.draw(st.sampled_from([1.0, 50.0]))  # unclamped inputs may leave [a, b]
    got = trimmed_smooth_sensitivity(np.sort(x)[:, None], m, t, A, B, output_truncation=output)
    assert got[0] == pytest.approx(formula(x, m, t, output), rel=1e-12, abs=1e-300)


def test_columns_are_independent_problems():
    rng = np.random.default_rng(0)
    x = np.sort(np.clip(rng.normal(size=(15, 6)), A, B), axis=0)
    ts = np.array([0.0, 0.05, 0.1, 0.5, 1.0, 2.0])
    got = trimmed_smooth_sensitivity(x, 3, ts, A, B)
    assert got == pytest.approx([formula(x[:, c], 3, ts[c]) for c in range(6)], rel=1e-12)


@pytest.mark.parametrize("output", [False, True])
def test_search_restricted_to_short_distances_is_exact(output):
    # n = 81 with large t: the search starts on a small corner (K << m); every (m, t) pair
    # against the literal formula, with concentrated data (small L) and spread data (large L)
    rng = np.random.default_rng(3)
    for scale in (0.01, 1.0):
        x = np.clip(rng.normal(size=81) * scale, A, B)
        for m in (0, 1, 10, 30, 40):
            for t in (0.05, 0.3, 1.0, 5.0):
                got = trimmed_smooth_sensitivity(np.sort(x)[:, None], m, t, A, B,
                                                 output_truncation=output)
                assert got[0] == pytest.approx(formula(x, m, t, output), rel=1e-12)


@pytest.mark.parametrize("output", [False, True])
def test_search_reaches_a_maximum_near_its_distance_bound(output):
    # n = 81, m = 30, t = 1: x_(1..50) = 0, x_(51..70) = eps = e^-19.5, x_(71..81) = 1. The
    # k = 0 entry is eps, so K = ceil(ln(1 / eps) / t) = 20 < m; the maximum is the step
    # x_(71) - x_(31) = 1 at distance k = 19, just inside the searched corner
    x = np.concatenate([np.zeros(50), np.full(20, math.exp(-19.5)), np.ones(11)])
    got = trimmed_smooth_sensitivity(x[:, None], 30, 1.0, A, B, output_truncation=output)
    assert got[0] == pytest.approx(math.exp(-19) / 21, rel=1e-12)
    assert got[0] == pytest.approx(formula(x, 30, 1.0, output), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1.0, 3.0), min_size=3, max_size=9), st.data())
def test_smooth_sensitivity_bounds_local_sensitivity_and_is_smooth(x, data):
    # The NRS conditions: LS(x) <= S(x) and S(y) <= e^t S(x) for neighbours y (replace-one).
    x = np.array(x)
    n, t = len(x), 0.3
    m = data.draw(st.integers(0, (n - 1) // 2))
    i = data.draw(st.integers(0, n - 1))
    y = x.copy()
    y[i] = data.draw(st.floats(-1.0, 3.0))
    sx, sy = (trimmed_smooth_sensitivity(np.sort(v)[:, None], m, t, A, B)[0] for v in (x, y))
    trim = [np.sort(v)[m:n - m].mean() for v in (x, y)]
    assert abs(trim[0] - trim[1]) <= sx * (1 + 1e-12) + 1e-15
    assert sy <= math.exp(t) * sx * (1 + 1e-12)


def test_bad_trimming_is_refused():
    with pytest.raises(InvalidParameterError, match="2m < n"):
        trimmed_smooth_sensitivity(np.zeros((4, 1)), 2, 0.1, A, B)


def test_gaussian_trimmed_variance_matches_simulation():
    # Simulated n Var(trim_m) - 1 (the notes' table, 2e4 datasets, sd ~0.015): 0.271 at n = 201,
    # m = 65; 0.041 at n = 1001, m = 80. The asymptotic formula is off by O(1/n) besides.
    assert gaussian_trimmed_variance(201, 65) - 1 == pytest.approx(0.271, abs=0.03)
    assert gaussian_trimmed_variance(1001, 80) - 1 == pytest.approx(0.041, abs=0.01)
    assert gaussian_trimmed_variance(100, 0) == 1.0


# --------------------------------------------------------------------------------------------
# The estimator
# --------------------------------------------------------------------------------------------


def budget_for(noise: str) -> dict[str, float]:
    return {"epsilon": 1.0, "delta": 1e-6} if NOISES[noise].notion == "approx-DP" else {"rho": 0.5}


@pytest.mark.parametrize("noise", sorted(NOISES))
def test_every_noise_releases_from_the_api(noise):
    rng = np.random.default_rng(1)
    x = rng.normal(3.0, 1.0, size=(3000, 2))
    result = dpmean.mean(x, method="trimmed", bounds=(-50, 50), noise=noise, assumed_std=1.0,
                         random_state=0, **budget_for(noise))
    expected = {"laplace": "approx-DP", "gaussian": "approx-DP", "gaussian-tcdp": "tCDP"}
    assert result.notion == expected.get(noise, "zCDP")
    assert result.mean.shape == (2,)
    assert result.rho_spent == pytest.approx(result.rho)
    # Every noise is well tuned at n = 3000, eps = 1 per the whole budget: error well below 0.5.
    assert np.all(np.abs(result.mean - 3.0) < 0.5)
    assert set(result.diagnostics) >= {"noise", "trim", "smoothing", "shift", "truncation"}
    assert not any("sensitivity" in key for key in result.diagnostics)
    json.dumps(result.to_dict())


def test_approx_dp_noise_needs_epsilon_and_delta_and_keeps_the_ledger_in_epsilon():
    x = np.random.default_rng(0).normal(size=500)
    with pytest.raises(InvalidParameterError, match="epsilon and delta"):
        dpmean.mean(x, rho=0.5, method="trimmed", bounds=(-10, 10), noise="laplace")
    result = dpmean.mean(x, epsilon=2.0, delta=1e-6, method="trimmed", bounds=(-10, 10),
                         noise="laplace", random_state=0)
    assert result.ledger == {"noise": 2.0} and result.delta == 1e-6


def test_multivariate_budget_is_split_evenly_and_each_coordinate_tuned_to_its_share():
    x = np.random.default_rng(0).normal(size=(1000, 4))
    one = TrimmedMean(0.5, bounds=(-50, 1050), assumed_std=1.0).settings(1000, 1100.0, 0.5)
    result = dpmean.mean(x, rho=2.0, method="trimmed", bounds=(-50, 1050), assumed_std=1.0,
                         random_state=0)
    assert result.ledger == {"noise": 2.0}
    assert np.all(result.diagnostics["trim"] == one[0])
    assert np.all(result.diagnostics["smoothing"] == one[1].t)


def test_user_settings_are_used_and_checked():
    x = np.random.default_rng(0).normal(size=201)
    result = dpmean.mean(x, rho=0.5, method="trimmed", bounds=(-50, 1050), trim=0.25,
                         smoothing=0.1, random_state=0)
    assert result.diagnostics["trim"][0] == 50 and result.diagnostics["smoothing"][0] == 0.1
    assert dpmean.mean(x, rho=0.5, method="trimmed", bounds=(-50, 1050), trim=60,
                       random_state=0).diagnostics["trim"][0] == 60
    for bad, message in [({"trim": 101}, "2 trim < n"), ({"trim": 0.5}, "below 0.5"),
                         ({"noise": "cauchy"}, "unknown noise"), ({"truncation": "both"}, "input"),
                         ({"smoothing": 0.3, "noise": "arsinh"}, "too large"),
                         ({"smoothing": -1.0}, "smoothing")]:
        with pytest.raises(InvalidParameterError, match=message):
            dpmean.mean(x, rho=0.5, method="trimmed", bounds=(-50, 1050), **bad)


def test_output_truncation_trims_unclamped_data_and_clamps_the_result():
    rng = np.random.default_rng(0)
    x = rng.normal(2.0, 1.0, size=2001)
    x[:5] = 1e9  # outliers: trimmed away, not clamped into the mean
    result = dpmean.mean(x, rho=2.0, method="trimmed", bounds=(-10, 10), truncation="output",
                         trim=100, random_state=0)
    assert abs(result.mean[0] - 2.0) < 0.3
    # Far above the box, the clamped trimmed mean sits at b (the noise is tiny next to 10^3).
    far = dpmean.mean(x + 1e3, rho=2.0, method="trimmed", bounds=(-10, 10),
                      truncation="output", trim=100, random_state=0)
    assert far.mean[0] == pytest.approx(10.0, abs=1.0)


HUGE = 1.5e308  # near the float64 maximum: two of them overflow a sum


def test_output_truncation_near_the_float_maximum_is_finite_for_neighbours():
    # A neighbouring pair (one value replaced) where the plain float64 sum of the trimmed values
    # overflowed: x released NaN every time, y a number. Both must be finite, their trimmed
    # means clamped to the box.
    x = np.array([-HUGE] * 8 + [0.0] * 8 + [1.0] * 8 + [HUGE] * 8)
    y = x.copy()
    y[-1] = 1.0
    for data in (x, y):
        estimator = TrimmedMean(rho=1.0, bounds=(-1, 1), truncation="output", trim=2,
                                random_state=0)
        release = estimator.estimate(data).mean
        assert np.isfinite(release).all()
        m, cal = estimator.settings(len(data), 2.0, 1.0)
        engine = make_engine(data[:, None], np.array([-np.inf]), np.array([np.inf]), None)
        exact, smooth = estimator._exact_and_smooth(engine, [(m, cal)], np.array([-1.0]),
                                                    np.array([1.0]))
        assert -1.0 <= exact[0] <= 1.0 and 0.0 <= smooth[0] <= 2.0 * (1 + 1e-12)


def test_trimmed_means_do_not_overflow_and_match_the_plain_mean():
    values = np.sort(np.array([HUGE, HUGE, HUGE, -HUGE, HUGE]))[:, None]
    got = trimmed_means(values, 0)[0]
    assert math.isfinite(got) and math.isclose(got, HUGE / 5 * 3, rel_tol=1e-15)
    ordinary = np.sort(np.random.default_rng(1).normal(size=(101, 3)), axis=0)
    np.testing.assert_array_equal(trimmed_means(ordinary, 7), ordinary[7:94].mean(axis=0))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([HUGE, -HUGE, np.finfo(float).max, -np.finfo(float).max, 0.0])
                | st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=40),
       st.data(), st.sampled_from(["lln", "student-t", "arsinh"]))
def test_output_truncation_releases_are_finite_for_any_finite_data(x, data, noise):
    m = data.draw(st.integers(0, (len(x) - 1) // 2))
    result = dpmean.mean(np.array(x), rho=1.0, method="trimmed", bounds=(-5, 5),
                         truncation="output", trim=m, noise=noise, random_state=0)
    assert np.isfinite(result.mean).all()


def test_the_cli_runs_trimmed_on_one_and_several_columns(tmp_path, capsys):
    rng = np.random.default_rng(0)
    for shape in [(500,), (500, 3)]:
        path = tmp_path / f"x{len(shape)}.npy"
        np.save(path, rng.normal(size=shape))
        code = main(["estimate", str(path), "--rho", "0.5", "--method", "trimmed", "--bounds",
                     "-50", "1050", "--option", "noise=student-t", "--option", "trim=0.1",
                     "--seed", "1", "--json"])
        out, _ = capsys.readouterr()
        assert code == 0
        payload = json.loads(out)
        assert len(payload["mean"]) == (shape[1] if len(shape) == 2 else 1)
        assert payload["diagnostics"]["trim"] == [50] * len(payload["mean"])


# --------------------------------------------------------------------------------------------
# The paper's headline figures (Sec. 4): N(0,1) data on [-50, 1050], eps = 1
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def grids():
    # 1000 datasets for E[S^2], 10000 for the trimming error; the grids bracket the optima.
    return {201: excess_grid(201, [50, 57, 65, 72, 80], np.geomspace(0.07, 0.16, 6),
                             trials=1000, trim_trials=10000, seed=0),
            1001: excess_grid(1001, [65, 80, 100, 150], np.geomspace(0.04, 0.1, 6),
                              trials=1000, trim_trials=10000, seed=0)}


def test_best_lln_excess_variance_matches_the_paper(grids):
    # Paper: n MSE "only a factor of two higher than non-privately" at n = 201 (the notes'
    # independent simulation: 0.54) and "down to 10%" at n = 1001 (0.105). Monte Carlo error:
    # n Var(trim) ~ 1.3 estimated from 1e4 datasets has sd 1.3 sqrt(2e-4) ~ 0.02 (0.015 at
    # n = 1001); E[S^2] from 1e3 has a few % relative error on a part of ~0.3 (~0.06). The bands
    # below are about four standard deviations.
    best201, _, _ = grids[201].best("lln", 1.0)
    best1001, _, _ = grids[1001].best("lln", 1.0)
    assert 0.44 < best201 < 0.64
    assert 0.07 < best1001 < 0.14


def test_noises_order_as_the_paper_reports(grids):
    for grid in grids.values():
        best = {noise: grid.best(noise, 1.0)[0] for noise in ("lln", "uln", "arsinh")}
        # LLN best among the CDP noises, ULN worst (by a factor > 10 at these settings).
        assert best["lln"] < best["arsinh"] < best["uln"]
        assert best["uln"] > 10 * best["lln"]


def test_drawing_the_noise_agrees_with_the_semi_analytic_excess(grids):
    value, m, t = grids[201].best("lln", 1.0)
    drawn = sampled_excess(201, 1.0, "lln", m, t, trials=20000, seed=5)
    # On fresh datasets: the trimming part (~1.27) has sd ~0.013 and the LLN noise part (~0.27,
    # E[Z^4] / E[Z^2]^2 ~ 8) sd ~0.27 sqrt(8 / 2e4) ~ 0.006; 0.1 is beyond five of both.
    assert drawn == pytest.approx(value, abs=0.1)


def test_the_default_tuning_is_close_to_the_best():
    # The data-independent (m, t) (model: Gaussian data, assumed_std = 1, true here) against the
    # best grid points of test_best_lln_excess_variance_matches_the_paper (~0.53 at n = 201,
    # ~0.11 at n = 1001; Monte Carlo sd ~0.03 and ~0.015): it should lose at most a little.
    assert default_tuning_excess(201, trials=1000, seed=0)[0] < 0.7
    assert default_tuning_excess(1001, trials=1000, seed=0)[0] < 0.15


def test_a_budget_too_small_for_the_noise_is_a_clear_error():
    # Found by the hostile-input tests: at rho = 1e-6 the LLN shape's scale overflows; the
    # release must refuse with a message, not crash with an OverflowError.
    x = np.random.default_rng(0).normal(size=(100, 1))
    with pytest.raises(InvalidParameterError, match="budget is too small"):
        dpmean.mean(x, rho=1e-6, method="trimmed", bounds=(-1, 1), random_state=0,
                    smoothing=0.1, trim=0.1)
    # The data-free tuning refuses such a budget before any shape is drawn: 100 rows are far
    # fewer than its trimming needs (Theorem 8), and the fallback is released with a warning.
    with pytest.warns(dpmean.InsufficientDataWarning, match="trimmed: n=100"):
        tuned = dpmean.mean(x, rho=1e-6, method="trimmed", bounds=(-1, 1), random_state=0)
    assert tuned.fallback and np.all(tuned.mean == 0.0)


def test_default_trimming_follows_n_and_the_budget_not_a_fixed_share():
    # An 8x8-digits-like table (1797 rows, 64 pixels in 0..16, most pixels skewed towards 0):
    # the old default trimmed 754 rows a side at every budget. Now at most n / 3 (Prop. 13),
    # fewer as the budget grows, and the bias on skewed columns stays below the old 0.19.
    rng = np.random.default_rng(0)
    x = np.minimum(16.0, np.floor(rng.exponential(rng.uniform(0.2, 8.0, 64), (1797, 64))))
    trims = []
    for rho in (1.0, 10.0):
        result = dpmean.mean(x, rho=rho, method="trimmed", bounds=(0, 16), random_state=0)
        trims.append(int(result.diagnostics["trim"][0]))
        assert np.all(result.diagnostics["trim"] < 1797 / 3)
    assert trims[1] < trims[0]
    result = dpmean.mean(x, rho=10.0, method="trimmed", bounds=(0, 16), random_state=0)
    # Bias of the chosen trimming alone (non-private check of the tuning, no noise): the
    # trimmed means of the sorted columns against the plain means.
    m = int(result.diagnostics["trim"][0])
    sorted_x = np.sort(x, axis=0)
    bias = np.abs(trimmed_means(sorted_x, m) - x.mean(axis=0))
    assert np.mean(bias) < 0.19


def test_too_few_rows_for_the_budget_refuse_as_the_other_estimators():
    with pytest.warns(dpmean.InsufficientDataWarning, match="trimmed: n=1 rows"):
        result = dpmean.mean(np.array([[3.0]]), rho=1.0, method="trimmed", bounds=(0, 16),
                             random_state=0)
    assert result.fallback and result.mean[0] == 0.0
    # A trimming the caller gives is the caller's choice: no refusal.
    assert not dpmean.mean(np.full(5, 3.0), rho=1.0, method="trimmed", bounds=(0, 16),
                           trim=1, random_state=0).fallback


def _tuned_one_by_one(n, candidates, width, assumed_std, *, output_truncation=False, trim=None,
                      symmetric=False):
    """tune_trimmed_mean's weighing as it was: every (m, candidate) on its own, in order (on
    the same expected sample and trims)."""
    from dpmean.estimators.trimmed import trimming_bias_factor, tuning_grid

    z, m_grid = tuning_grid(n, assumed_std, trim)
    best = None
    for m in m_grid:
        k = np.arange(m)
        lag = (k + 1) // 2
        gaps = z[n - m + k - lag] - z[m - lag]
        padding = width if not output_truncation else width * (n - 2 * m)
        bias = 0.0 if symmetric else trimming_bias_factor(n, m)
        trim_error = assumed_std**2 * (gaussian_trimmed_variance(n, m) / n + bias)
        for cal in candidates:
            gap_term = np.max(np.exp(-cal.t * k) * gaps, initial=0.0)
            smooth = max(gap_term, math.exp(-cal.t * m) * padding) / (n - 2 * m)
            if output_truncation:
                smooth = min(smooth, width)
            mse = trim_error + smooth * smooth * cal.variance_factor
            if best is None or mse < best[0]:
                best = (mse, m, cal)
    return best[1], best[2]


@pytest.mark.parametrize("noise", sorted(NOISES))
@pytest.mark.parametrize("n,width,truncation,symmetric,trim", [
    (20000, 255.0, False, False, None), (10000, 3e5, True, False, None),
    (500, 1.0, False, True, None), (3, 10.0, False, False, None), (2000, 4.0, False, False, 7)])
def test_tuning_all_candidates_at_once_chooses_as_one_by_one(noise, n, width, truncation,
                                                             symmetric, trim, monkeypatch):
    # The tuning weighs every candidate calibration of one m together, a block of candidates
    # at a time (blocks of 3 here for n = 10000); the same numbers, so the same (m,
    # calibration) as weighing them one at a time (including budgets so small that some
    # calibrations have an infinite variance factor).
    from dpmean.estimators import trimmed as module
    from dpmean.estimators.trimmed import tune_trimmed_mean

    if n == 10000:
        monkeypatch.setattr(module, "_TUNING_VALUES", 3 * 3333)

    for share in (1e-6, 0.5 / 784, 2.0):  # rho, or epsilon for the (epsilon, delta) noises
        budget = ({"epsilon": share, "delta": 1e-6} if NOISES[noise].notion == "approx-DP"
                  else {"rho": share})
        estimator = TrimmedMean(bounds=(0.0, width), noise=noise, **budget)
        calibrate = estimator._calibrator(share)
        candidates = []
        for t in np.geomspace(1e-4, 4.0, 64):
            try:
                candidates.append(calibrate(float(t)))
            except InvalidParameterError:
                continue
        if not candidates:
            continue
        got = tune_trimmed_mean(n, candidates, width, 1e-3 * width, output_truncation=truncation,
                                trim=trim, symmetric=symmetric)
        want = _tuned_one_by_one(n, candidates, width, 1e-3 * width,
                                 output_truncation=truncation, trim=trim, symmetric=symmetric)
        assert got[0] == want[0] and got[1] is want[1]


def test_the_fallback_names_the_rows_that_would_release():
    # The trimmed mean's minimum grows with n (its trimming, ln n / epsilon): the warning names
    # the fewest rows whose own minimum they meet (a user trial: at n = 5,101, the number the
    # warning gave at n = 2, it fell back again and asked for 10,363). That many run; one
    # fewer falls back. d = 1000, rho = 0.01 in +-10.
    estimator = TrimmedMean(rho=0.01, bounds=(-10.0, 10.0))
    lo, hi = estimator.box(2, 1000)
    plan = estimator.budget_plan(2, 1000)
    needed = int(estimator.rows_needed(2, 1000))
    assert needed >= estimator.minimum_rows(needed, lo, hi, plan)
    assert needed - 1 < estimator.minimum_rows(needed - 1, lo, hi, plan)
    rng = np.random.default_rng(0)
    for n in (2, needed // 2, needed - 1):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = dpmean.mean(rng.normal(3.0, 1.0, (n, 1000)), rho=0.01, bounds=(-10, 10),
                                 method="trimmed", random_state=0)
        assert result.fallback
        message = next(str(w.message) for w in caught
                       if issubclass(w.category, InsufficientDataWarning))
        assert re.search(r"needs at least ([\d,]+)", message).group(1) == f"{needed:,}"
    with warnings.catch_warnings():
        warnings.simplefilter("error", InsufficientDataWarning)
        result = dpmean.mean(rng.normal(3.0, 1.0, (needed, 1000)), rho=0.01, bounds=(-10, 10),
                             method="trimmed", random_state=0)
    assert not result.fallback


def test_the_noise_covers_the_rounding_of_the_computed_trimmed_mean():
    """A review: with a user's trim and smoothing, rows at 1 and 1 + 2^-52 (n = 10^4, trim
    0.1, smoothing 0.1) gave S^t = 2.8e-20, far below the ulp by which the computed trimmed
    mean of neighbours differs, so the noise rounded away and two neighbours released 1.0 and
    1.0000000000000002 in every seed. The bound the mechanism uses covers the computed
    statistic: over every neighbouring pair of this family (one row moved between the two
    values) the computed means differ by at most it, and the exact S^t alone does not."""
    n, m, ulp = 400, 40, 2.0**-52
    lo, hi = np.array([0.0]), np.array([2.0])
    exact_short = False
    for k in range(n):
        x = np.sort(np.where(np.arange(n) < k, 1.0 + ulp, 1.0))[:, None]
        y = np.sort(np.where(np.arange(n) < k + 1, 1.0 + ulp, 1.0))[:, None]
        moved = abs(trimmed_means(x, m)[0] - trimmed_means(y, m)[0])
        exact = trimmed_smooth_sensitivity(x, m, np.array([1.0]), lo, hi)  # e^-(m t) < 1e-17
        assert moved <= computed_smooth_sensitivity(exact, n, np.array([m]), lo, hi)[0]
        exact_short |= moved > exact[0]
    assert exact_short  # the family reaches the case the exact bound misses
    # The release's noise now spreads over many floats, not one value per neighbour.
    x = np.where(np.arange(10_000) < 3751, 1.0 + ulp, 1.0)
    releases = {float(dpmean.mean(x, rho=0.5, bounds=(0.0, 2.0), method="trimmed", trim=0.1,
                                  smoothing=0.1, random_state=s).mean[0]) for s in range(20)}
    assert len(releases) == 20
