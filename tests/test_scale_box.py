"""Scale-aware releases (issue 18, items 1 and 2): per-column boxes of different widths are
normalised before the estimator runs and mapped back; every release lies in its box."""

import re
import warnings

import numpy as np
import pytest
import scipy.sparse
from scipy.stats import binom, norm

import dpmean
from dpmean.engines import open_source
from dpmean.errors import NoisyReleaseWarning

# A table like the public one (569 rows, 30 measurements from 0.001 to 4000), generated
# here: column j is Gamma(4) scaled to mean s_j, its public box [0, the order of magnitude of
# 3 s_j] (from the column's public scale, never from the data).
N, D = 569, 30
SCALES = np.geomspace(0.001, 4000.0, D)
HI = 10.0 ** np.ceil(np.log10(3.0 * SCALES))


def mixed_scale_table(seed=0):
    rng = np.random.default_rng(seed)
    return rng.gamma(4.0, 1.0, size=(N, D)) * SCALES / 4.0


def clamped_mean(x, lo, hi):
    return np.clip(x, lo, hi).mean(axis=0)


def test_default_method_is_accurate_on_a_mixed_scale_table():
    # The goal: median per-column relative error at most 0.3 at epsilon 1, delta 1e-6
    # (it was 150 with noise isotropic in raw units), for the typical release: the median over
    # 3 tables x 5 seeds of each release's median relative error.
    errors = []
    for seed in range(3):
        x = mixed_scale_table(seed)
        truth = clamped_mean(x, 0.0, HI)
        for run in range(5):
            result = dpmean.mean(x, epsilon=1.0, delta=1e-6, bounds=(0.0, HI),
                                 random_state=10 * seed + run)
            errors.append(np.median(np.abs(result.mean - truth) / truth))
    assert np.median(errors) <= 0.3


CENTRAL = [("cm", {}), ("iome", {}), ("gaussian", {}), ("cm-fixed", {}), ("plan", {}),
           ("plan-noscale", {}), ("auto", {}), ("trimmed", {}),
           ("trimmed", {"truncation": "output", "noise": "student-t"})]
# GRS KnownVar's first round has a bin per sigma of box width: sigma = 100 keeps the widest
# column (4000) at 40 bins instead of 4000 (16 s of the suite), and the test is about the box.
PROTOCOLS = [("iome-local", {}), ("iome-shuffle", {}), ("grs-knownvar", {"sigma": 100.0}),
             ("grs-unkvar", {"sigma_min": 0.1, "sigma_max": 10.0})]


@pytest.mark.parametrize("method,options", CENTRAL + PROTOCOLS,
                         ids=[m + ("-output" if o.get("truncation") else "")
                              for m, o in CENTRAL + PROTOCOLS])
def test_no_release_falls_outside_its_box(method, options):
    # A budget small enough that the noise alone would leave the box on most coordinates.
    x = mixed_scale_table()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(3):
            result = dpmean.mean(x, rho=0.02, method=method, bounds=(0.0, HI),
                                 random_state=seed, **options)
            assert np.all((result.mean >= 0.0) & (result.mean <= HI))
            # Intervals lie in the box the data was clamped to (the whole line for the trimmed
            # mean's output truncation, which clamps no value: its estimand may lie outside).
            lo, hi = result.confidence_interval(0.9)
            box_lo, box_hi = result.diagnostics["bounds_lo"], result.diagnostics["bounds_hi"]
            assert np.all((lo >= box_lo) & (hi <= box_hi) & (lo <= hi))


def test_fallback_is_projected_onto_the_box():
    with pytest.warns(dpmean.InsufficientDataWarning):
        result = dpmean.mean(np.full((3, 2), 7.0), rho=0.01, method="cm",
                             bounds=([5.0, -1.0], [10.0, 1.0]), random_state=0)
    assert result.fallback
    np.testing.assert_array_equal(result.mean, [5.0, 0.0])


@pytest.mark.parametrize("method", ["cm", "iome", "gaussian", "plan", "auto", "trimmed"])
def test_a_scalar_box_changes_nothing(method):
    # Equal widths need no normalisation: a scalar box and the same box per coordinate give the
    # same release, bit for bit, and carry no box_scale.
    x = mixed_scale_table()[:, :6] / SCALES[:6]
    scalar = dpmean.mean(x, rho=0.5, method=method, bounds=(0.0, 10.0), random_state=3)
    vector = dpmean.mean(x, rho=0.5, method=method, bounds=(np.zeros(6), np.full(6, 10.0)),
                         random_state=3)
    np.testing.assert_array_equal(scalar.mean, vector.mean)
    assert "box_scale" not in scalar.diagnostics


@pytest.mark.parametrize("method", ["cm", "iome", "gaussian", "plan", "plan-noscale", "auto"])
def test_release_is_the_normalised_release_scaled_back(method):
    # Running on x with box [0, HI] is running on x / HI with box [0, 1] and multiplying back
    # (same seed: same decisions, same draws). Only the rounding of x * (1 / HI) against
    # x / HI differs: relative 1e-9 leaves room for it through every stage.
    x = mixed_scale_table()
    raw = dpmean.mean(x, rho=1.0, method=method, bounds=(0.0, HI), random_state=5)
    unit = dpmean.mean(x / HI, rho=1.0, method=method, bounds=(0.0, 1.0), random_state=5)
    np.testing.assert_allclose(raw.mean, unit.mean * HI, rtol=1e-9, atol=0)
    np.testing.assert_allclose(raw.diagnostics["box_scale"], 1.0 / HI)
    # The noise's standard deviation is per coordinate, in the data's units.
    noise = np.broadcast_to(unit.diagnostics["noise_std"], (D,)) * HI
    np.testing.assert_allclose(raw.diagnostics["noise_std"], noise, rtol=1e-9)
    if "centre" in unit.diagnostics:
        np.testing.assert_allclose(raw.diagnostics["centre"], unit.diagnostics["centre"] * HI,
                                   rtol=1e-9, atol=1e-12)


def test_gaussian_interval_is_per_coordinate_in_the_data_units():
    x = mixed_scale_table()
    rho = 1.0
    result = dpmean.mean(x, rho=rho, method="gaussian", bounds=(0.0, HI), random_state=1)
    # In the normalised box the sensitivity is sqrt(D) / N; column j's noise is that times HI_j.
    std = np.sqrt(D) / N / np.sqrt(2.0 * rho) * HI
    lo, hi = result.confidence_interval(0.95)
    expected_lo = np.clip(result.mean - norm.isf(0.025) * std, 0.0, HI)
    expected_hi = np.clip(result.mean + norm.isf(0.025) * std, 0.0, HI)
    np.testing.assert_allclose(lo, expected_lo, rtol=1e-12)
    np.testing.assert_allclose(hi, expected_hi, rtol=1e-12)


@pytest.mark.parametrize("method", ["cm", "iome", "plan"])
def test_intervals_cover_on_the_mixed_scale_table(method):
    # 200 releases at level 0.9 (PLAN with the binary-search threshold, which has a bias
    # bound). Each coordinate's coverage count is Binomial(200, >= 0.9): below its 1e-4
    # quantile with probability at most 1e-4 per coordinate (30 x 3 coordinates: a false
    # alarm with probability below 1 %).
    x = mixed_scale_table()
    truth = clamped_mean(x, 0.0, HI)
    runs, level = 200, 0.9
    options = {"quantile": "binary-search"} if method == "plan" else {}
    covered = np.zeros(D)
    for seed in range(runs):
        result = dpmean.mean(x, rho=0.5, method=method, bounds=(0.0, HI), random_state=seed,
                             **options)
        lo, hi = result.confidence_interval(level)
        covered += (lo <= truth) & (truth <= hi)
    assert covered.min() >= binom.ppf(1e-4, runs, level)


def test_a_release_that_is_mostly_noise_warns_with_what_would_help():
    x = mixed_scale_table()[:40]
    with pytest.warns(NoisyReleaseWarning, match=r"rho >= .* or n >= [\d,]+ rows") as said:
        dpmean.mean(x, rho=1e-4, method="gaussian", bounds=(0.0, HI), random_state=0)
    # The budget it names brings the noise's 95% interval within the box (the Gaussian
    # mechanism's noise is public: what it names is the arithmetic's, up to its 3 digits).
    enough = float(re.search(r"rho >= ([\d.e+-]+)", str(said[0].message)).group(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoisyReleaseWarning)
        dpmean.mean(x, rho=enough * 1.01, method="gaussian", bounds=(0.0, HI), random_state=0)
    with pytest.warns(NoisyReleaseWarning):
        dpmean.mean(x, rho=enough * 0.9, method="gaussian", bounds=(0.0, HI), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoisyReleaseWarning)
        dpmean.mean(mixed_scale_table(), rho=1.0, method="gaussian", bounds=(0.0, HI),
                    random_state=0)


@pytest.mark.parametrize("method", ["cm", "iome", "plan", "gaussian"])
def test_every_engine_gives_the_same_normalised_release(method, tmp_path, dask_client):
    # As tests/test_engines_equal.py, with a box of unequal widths: the rescaling happens where
    # each engine clamps (memory, chunked, Dask), to the same bits up to summation order.
    da = pytest.importorskip("dask.array")
    x = mixed_scale_table()
    path = tmp_path / "x.npy"
    np.save(path, x)
    expected = dpmean.mean(x, rho=1.0, method=method, bounds=(0.0, HI), random_state=2).mean
    for data in (open_source(path), da.from_array(x, chunks=(100, D))):
        got = dpmean.mean(data, rho=1.0, method=method, bounds=(0.0, HI), random_state=2).mean
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=0)


@pytest.mark.parametrize("method,options", [("gaussian", {}), ("cm", {}),
                                            ("plan", {"centre": "mean", "variance": "binary"})])
def test_sparse_input_is_rescaled_without_densifying(method, options):
    # Counts per item with public caps of different widths (lo = 0): the sparse engine scales
    # the stored values only, and agrees with the dense run.
    rng = np.random.default_rng(3)
    x = scipy.sparse.random(2000, 40, density=0.05, format="csr", random_state=4)
    x.data = np.ceil(x.data * 5.0)
    hi = rng.choice([1.0, 5.0, 50.0], size=40)
    expected = dpmean.mean(x.toarray(), rho=1.0, method=method, bounds=(0.0, hi),
                           random_state=6, **options).mean
    got = dpmean.mean(x, rho=1.0, method=method, bounds=(0.0, hi), random_state=6,
                      engine="sparse", **options).mean
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_accuracy_plans_each_column_in_its_own_units():
    # The a priori half-width of a box-normalised release is per coordinate, and agrees with
    # the noise the release reports (gaussian: exact).
    x = mixed_scale_table()
    planned = dpmean.accuracy("gaussian", N, D, (0.0, HI), 1.0, level=0.95)
    result = dpmean.mean(x, rho=1.0, method="gaussian", bounds=(0.0, HI), random_state=0)
    np.testing.assert_allclose(planned, norm.isf(0.025) * result.diagnostics["noise_std"],
                               rtol=1e-12)
    rho = dpmean.rho_for_accuracy("gaussian", N, D, (0.0, HI), 5.0, level=0.95)
    assert np.max(dpmean.accuracy("gaussian", N, D, (0.0, HI), rho)) <= 5.0


def test_magnitude_levels_are_monotone_and_their_tops_hold_the_values():
    from dpmean.estimators.private_bounds import level_top, magnitude_levels

    values = np.array([0.0, 5e-324, 1e-300, 0.3, 0.75, 1.0, 2.0, 3.0, 1e300, 1.7e308])
    levels = magnitude_levels(np.concatenate([values, -values]))
    assert np.all(np.diff(levels[:values.size]) >= 0)
    np.testing.assert_array_equal(levels[:values.size], levels[values.size:])
    assert np.all(np.abs(values) < level_top(levels[:values.size]))
    assert np.all(level_top(levels[1:values.size] - 1) <= values[1:])


def test_without_bounds_a_private_box_is_bought_and_stated():
    rng = np.random.default_rng(0)
    x = rng.normal(1000.0, 1.0, size=(4000, 8))
    result = dpmean.mean(x, rho=0.5, random_state=0)
    # The stage is in the ledger, the whole budget is spent, and the box is a DP output.
    assert result.ledger["bounds"] == pytest.approx(0.05)
    assert result.rho_spent == pytest.approx(0.5)
    assert result.diagnostics["private_bounds"]
    lo, hi = result.diagnostics["bounds_lo"], result.diagnostics["bounds_hi"]
    # N(1000, 1) lies in the bin [512, 1024) (no row reaches 1024 at 24 sigma): with one
    # power of two of margin, 2048; no value is negative, and no test says otherwise here (a
    # sign without values is found with probability at most SIGN_BETA + BOUNDS_BETA): [0, 2048].
    assert np.all((lo == 0.0) & (hi == 2048.0))
    assert sum(result.ledger.values()) == pytest.approx(0.5)
    assert np.linalg.norm(result.mean - x.mean(axis=0)) < 0.1


def test_the_private_box_is_neither_stretched_nor_missing():
    # Both ways the threshold can be wrong (BOUNDS_BETA): a spurious loud bin anywhere in
    # float64 stretches a column's box to it (seen at beta = 0.01 in 1 release of 60: a box to
    # 2e62), and a threshold above the data's own bins finds no box (at 1e-9 every box below
    # fell back). N(0, 1) data's bins reach |v| < 8 (one margin bin: 16); 300 boxes at d = 32
    # all stay within [-64, 64] (at 0.01 all 300 would with probability 0.99^300 = 5%; at
    # 1e-4 a spurious bin among them has probability at most 3%), and 100 at d = 128 all find
    # a box (with the per-column boxes of signed bins and no pooled reach, the largest bins
    # held about 600 rows against tau = 448 there, and a fifth of the boxes missed one sign).
    from dpmean.accounting import PrivacyLedger
    from dpmean.engines import make_engine
    from dpmean.estimators.private_bounds import private_box

    for d, boxes in ((32, 300), (128, 100)):
        x = np.random.default_rng(5).normal(size=(4000, d))
        engine = make_engine(x, np.full(d, -np.inf), np.full(d, np.inf), None)
        for seed in range(boxes):
            ledger = PrivacyLedger(1.0)
            ledger.plan({"bounds": 0.025})
            lo, hi, _, _ = private_box(engine, 0.025, np.random.default_rng(seed), ledger=ledger)
            assert not np.isnan(lo).any(), (d, seed)
            assert np.all(lo >= -64.0) and np.all(hi <= 64.0), (d, seed)
            assert np.all(lo < 0.0) and np.all(hi > 0.0), (d, seed)


def test_columns_alike_share_the_pooled_box_and_a_wider_column_keeps_its_own():
    # At d = 512, n = 4000 few columns' own bins clear tau = 912 (the largest hold about 1100
    # rows, 600 a sign on the earlier signed grid, where every such box fell back to zero).
    # The sum of the 512 histograms clears its noise up to |v| < 4, so every column gets the
    # one box [-8, 8] (a power of two of margin), not boxes a bin apart as the noise falls.
    # At d = 64 a column 1000x wider than the others is 1/64 of the pooled values (below the
    # pooled threshold) but clears its own: its box reaches 4096, the others keep [-8, 8].
    from dpmean.accounting import PrivacyLedger
    from dpmean.engines import make_engine
    from dpmean.estimators.private_bounds import private_box

    for d, wide in ((512, 1.0), (64, 1000.0)):
        x = np.random.default_rng(5).normal(size=(4000, d))
        x[:, 0] *= wide
        engine = make_engine(x, np.full(d, -np.inf), np.full(d, np.inf), None)
        for seed in range(20):
            ledger = PrivacyLedger(1.0)
            ledger.plan({"bounds": 0.025})
            lo, hi, _, _ = private_box(engine, 0.025, np.random.default_rng(seed), ledger=ledger)
            assert np.all(lo[1:] == -8.0) and np.all(hi[1:] == 8.0), (d, seed)
            assert (lo[0], hi[0]) == ((-8.0, 8.0) if wide == 1.0 else (-4096.0, 4096.0))


def test_without_bounds_where_no_box_can_be_found_the_error_says_so():
    with pytest.raises(dpmean.InvalidParameterError, match="sparse input needs bounds"):
        dpmean.mean(scipy.sparse.random(50, 4, density=0.5, format="csr"), rho=1.0,
                    method="plan")
    with pytest.raises(dpmean.InvalidParameterError, match="zCDP budget"):
        dpmean.mean(np.ones((50, 2)), epsilon=1.0, delta=1e-6, method="trimmed",
                    noise="laplace")
    with pytest.raises(dpmean.InvalidParameterError, match="bounds"):
        dpmean.mean(np.ones((50, 2)), rho=1.0, method="iome-local")


@pytest.mark.parametrize("method,options", [("coinpress", {"radius": 1e6}),
                                            ("coinpress-cov", {"radius": 1e6,
                                                               "sigma_max": 1e6}),
                                            ("grs-unkvar", {"sigma_max": 1e6})])
def test_one_scale_estimators_say_a_table_of_own_ranges_runs_at_the_widest(method, options):
    # A survey's age, flag and 1-5 scale beside an income in (0, 10^6) came out at their
    # faces, silently: CoinPress's ball and covariance bound, and GRS's sigma, are one scale
    # in the data's units. A NoisyReleaseWarning says so (public: the box); one range, or
    # widths within ONE_SCALE_RATIO of each other (rounding: 0.3 and 0.30000000000000004, a
    # review), say nothing of it.
    rng = np.random.default_rng(0)
    x = np.column_stack([rng.uniform(18, 90, 2000), rng.lognormal(10.5, 0.8, 2000),
                         rng.uniform(size=2000) < 0.2])
    with pytest.warns(dpmean.NoisyReleaseWarning, match="one scale for every column"):
        dpmean.mean(x, rho=0.5, method=method, bounds=([0, 0, 0], [120, 1e6, 1]),
                    random_state=0, **options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dpmean.mean(x, rho=0.5, method=method, bounds=(0, 1e6), random_state=0, **options)
        dpmean.mean(x, rho=0.5, method=method, bounds=([0, 0.1, 0], [0.3, 0.4, 0.5]),
                    random_state=0, **options)
    assert not [w for w in caught if "one scale" in str(w.message)]
