"""Edge cases a stress trial found ending in raw tracebacks (exceptions that are not dpmean's):
each now releases, or is refused with a clear DPMeanError before anything is charged.

Fixed seeds throughout; no test asserts a time.
"""

import math
import warnings

import numpy as np
import pytest

import dpmean
from dpmean.errors import InvalidDataError, InvalidParameterError
from dpmean.estimators.coinpress import (
    COVARIANCE_MATRICES,
    LARGEST_COVARIANCE_BYTES,
    check_covariance_dimension,
    largest_covariance_dimension,
)
from dpmean.intervals import noise_quantile
from dpmean.protocols.composition import (
    LARGEST_LOCAL_EPSILON,
    advanced_composition,
    clone_pair_delta,
    local_epsilon_for_shuffle,
    shuffle_amplified_epsilon,
    split_budget,
)
from dpmean.protocols.randomisers import (
    DRAWN_EPSILON_CAP,
    hadamard_epsilon_for_zcdp,
    hadamard_response_zcdp,
    keep_probability,
)
from dpmean.registry import ESTIMATORS
from dpmean.validation import check_data, intersected_box, sequence_shape


@pytest.fixture(scope="module")
def x():
    return np.random.default_rng(0).normal(0.0, 1.0, (500, 3))


# 1. Huge budgets: "almost no privacy", so a release close to the truth (the protocols'
# error here is their sampling: GRS averages half of the users, IKOS rounds to sqrt(n) levels).

HUGE = [
    ("grs-knownvar", {"sigma": 1.0, "rho": 1000.0}),
    ("grs-knownvar", {"sigma": 1.0, "rho": 1e300}),
    ("grs-unkvar", {"sigma_min": 0.1, "sigma_max": 10.0, "epsilon": 800.0, "delta": 1e-6}),
    ("iome-shuffle", {"rho": 1000.0}),
    ("iome-shuffle", {"epsilon": 1e300, "delta": 1e-9}),
    ("iome-local", {"rho": 1e3}),
    ("iome-local", {"rho": 1e300}),
]


@pytest.mark.parametrize(("method", "options"), HUGE)
def test_huge_budgets_release_near_the_truth(x, method, options):
    with warnings.catch_warnings():
        # numpy's "overflow encountered in exp" (iome-local past rho = 1000) is an error here.
        warnings.simplefilter("error", RuntimeWarning)
        result = dpmean.mean(x, method=method, bounds=(-10, 10), random_state=1, **options)
    assert np.all(np.isfinite(result.mean))
    assert np.max(np.abs(result.mean - x.mean(axis=0))) < 0.5


def test_composition_at_huge_epsilon_is_basic_composition():
    # Equal to the old formula where it was finite: at epsilon >= 1 the min is k epsilon.
    assert advanced_composition(2.0, 3, 1e-7) == 6.0
    assert advanced_composition(800.0, 3, 1e-7) == 2400.0
    assert advanced_composition(0.5, 3, 0.0) == 1.5  # delta' = 0: advanced is infinite
    step, step_delta = split_budget(800.0, 1e-6, 3)
    assert advanced_composition(step, 3, 1e-6 / 2) <= 800.0
    assert step == pytest.approx(800.0 / 3, rel=1e-9)
    assert 3 * step_delta + 1e-6 / 2 <= 1e-6 * (1 + 1e-12)


def test_shuffle_amplification_past_its_limit_claims_none_and_stays_valid():
    n, delta = 500, 1e-9
    # At or past the limit eps0 itself is returned: shuffling is post-processing.
    assert local_epsilon_for_shuffle(1000.0, delta, n) == 1000.0
    assert shuffle_amplified_epsilon(800.0, n, delta) == 800.0
    with pytest.raises(InvalidParameterError, match="local epsilon up to"):
        clone_pair_delta(1.0, 800.0, n)
    # Below it the search stops at the limit, still feasible (conservative).
    for epsilon in (100.0, 200.0, 300.0):
        local = local_epsilon_for_shuffle(epsilon, delta, n)
        assert epsilon <= local <= LARGEST_LOCAL_EPSILON
        assert shuffle_amplified_epsilon(local, n, delta) <= epsilon


def test_randomisers_draw_at_most_the_cap_and_stay_finite():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        # A bit is still flipped with positive probability (1.0 meant never: not DP at all).
        assert keep_probability(1e300) == keep_probability(DRAWN_EPSILON_CAP) < 1.0
        assert keep_probability(DRAWN_EPSILON_CAP / 2) == 1.0 / (
            1.0 + math.exp(-DRAWN_EPSILON_CAP / 2))
        assert math.isfinite(hadamard_response_zcdp(1e3))
        assert hadamard_response_zcdp(1e300) == 1e300  # D_a / a <= D_inf = eps
        for rho in (1e3, 1e300):
            epsilon = hadamard_epsilon_for_zcdp(rho)
            assert epsilon == DRAWN_EPSILON_CAP
            assert hadamard_response_zcdp(epsilon) <= rho


@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("method", ["grs-knownvar", "grs-unkvar", "iome-shuffle"])
def test_a_delta_too_small_to_split_is_refused_before_the_charge(x, method, d):
    options = {"sigma": 1.0} if method == "grs-knownvar" else {}
    estimator = ESTIMATORS[method](epsilon=1.0, delta=5e-324, bounds=(-10, 10), **options)
    # budget_plan runs before any charge or read: the refusal comes from it (one column
    # takes no split, and its subnormal delta made IKOS's 1 / delta infinite).
    with pytest.raises(InvalidParameterError, match="too small") as caught:
        estimator.budget_plan(500, d)
    assert "use delta >=" in str(caught.value)
    with pytest.raises(InvalidParameterError, match="too small"):
        dpmean.mean(x[:, :d], method=method, epsilon=1.0, delta=5e-324, bounds=(-10, 10),
                    random_state=1, **options)


# 2. Non-native byte order and long doubles: converted where the data is validated.

@pytest.mark.parametrize("method", ["auto", "plan"])
@pytest.mark.parametrize("dtype", [">f8", np.longdouble])
def test_big_endian_and_long_double_release_as_native_float64(x, method, dtype):
    native = dpmean.mean(x, method=method, rho=1.0, bounds=(-10, 10), random_state=1,
                         engine="memory")
    other = dpmean.mean(x.astype(dtype), method=method, rho=1.0, bounds=(-10, 10),
                        random_state=1, engine="memory")
    # float64 values survive both conversions exactly: the same release, bit for bit.
    assert other.mean.tobytes() == native.mean.tobytes()


def test_big_endian_integers_release_as_native(x):
    ints = np.rint(x * 3).astype(np.int32)
    native = dpmean.mean(ints, method="plan", rho=1.0, bounds=(-10, 10), random_state=1)
    swapped = dpmean.mean(ints.astype(">i4"), method="plan", rho=1.0, bounds=(-10, 10),
                          random_state=1)
    assert swapped.mean.tobytes() == native.mean.tobytes()


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint8, np.bool_])
def test_native_inputs_are_validated_in_place(dtype):
    # Native arrays are returned as they are (no copy, no conversion): their releases are
    # the ones they were before byte-order conversion was added.
    data = np.ones((6, 2), dtype=dtype)
    assert check_data(data) is data


def test_long_doubles_beyond_float64_are_clamped_not_refused():
    data = np.array([[1.0], [2.0]], dtype=np.longdouble)
    if np.finfo(np.longdouble).max <= np.finfo(np.float64).max:
        pytest.skip("long double is float64 on this platform")
    data[0, 0] = np.longdouble("1e400")
    checked = check_data(data)
    assert checked.dtype == np.float64
    assert checked[0, 0] == np.finfo(np.float64).max
    release = dpmean.mean(data, rho=1.0, bounds=(0, 5), random_state=1)
    assert np.all(np.isfinite(release.mean))


def test_cli_reads_a_big_endian_file(tmp_path, capsys, x):
    from dpmean.cli import main

    path = tmp_path / "big_endian.npy"
    np.save(path, x.astype(">f8"))
    assert main(["estimate", str(path), "--rho", "1", "--bounds", "-100", "100",
                 "--seed", "1"]) == 0
    capsys.readouterr()


# 3. Ragged lists.

def test_ragged_rows_are_a_data_error_without_values():
    with pytest.raises(InvalidDataError, match="rows of different lengths") as caught:
        sequence_shape([[1.0, 2.0], [3.0]])
    assert "3.0" not in str(caught.value)
    assert sequence_shape([[1.0, 2.0], [3.0, 4.0]]) == (2, 2)
    with pytest.raises(InvalidDataError, match="rows of different lengths"):
        check_data([[1.0, 2.0], [3.0]])


def test_ragged_list_release_is_a_data_error():
    with pytest.raises(InvalidDataError, match="rows of different lengths"):
        dpmean.mean([[1.0, 2.0], [3.0]], rho=1.0, bounds=(0, 5))
    # A cell numpy cannot make a real number of is named too (a user trial read a text cell's
    # refusal as a ragged row). (An integer beyond float64 is clamped like inf since
    # 2026-11-28: test_hostile_inputs.)
    for cell in ("x", 1j):
        with pytest.raises(InvalidDataError, match="a cell that is not a real number"):
            dpmean.mean([[1.0, 2.0], [3.0, cell]], rho=1.0, bounds=(0, 5))


# 4. Bounds beyond float64, and bool bounds.

def test_bounds_beyond_float64_are_refused_as_not_finite(x):
    with pytest.raises(InvalidParameterError, match="bounds lo must be finite"):
        dpmean.mean(x, rho=1.0, bounds=(-10**400, 10**400))
    with pytest.raises(InvalidParameterError, match="bounds hi must be finite"):
        dpmean.mean(x, rho=1.0, bounds=(0, [1, 2, 10**400]))


@pytest.mark.parametrize("bounds", [
    (False, True), (0, True), (np.bool_(False), 1.0), (np.zeros(3), np.ones(3, dtype=bool)),
    ([0, False, 0], 1.0),
])
def test_bool_bounds_are_refused_as_rho_is(x, bounds):
    with pytest.raises(InvalidParameterError, match="not True or False"):
        dpmean.mean(x, rho=1.0, bounds=bounds)


def test_bounds_by_name_refuse_bools_and_huge_integers():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": [0.1, 0.2], "b": [0.3, 0.4]})
    with pytest.raises(InvalidParameterError, match="bounds\\['a'\\]"):
        dpmean.mean(frame, rho=1.0, bounds={"a": (False, True), "b": (0, 1)})
    with pytest.raises(InvalidParameterError, match="must be finite"):
        dpmean.mean(frame, rho=1.0, bounds={"a": (0, 10**400), "b": (0, 1)})


# 5. CoinPress's radius.

def test_coinpress_huge_radius_runs_where_float64_can(x):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # "overflow in scalar power" before
        for radius, t in ((1e200, 1), (1e300, 1), (1e100, 3)):
            result = dpmean.mean(x, method="coinpress", radius=radius, rho=1.0,
                                 bounds=(-10, 10), random_state=1, t=t)
            assert np.all(np.isfinite(result.mean))
            assert np.all(np.abs(result.mean) <= 10)


@pytest.mark.parametrize(("radius", "t"), [(1e308, 1), (1e308, 2), (1e200, 2)])
def test_coinpress_radius_past_float64_is_refused_before_the_charge(x, radius, t):
    session = dpmean.Session(rho=2.0)
    with pytest.raises(InvalidParameterError, match="radius is too large"):
        session.mean(x, method="coinpress", radius=radius, rho=1.0, bounds=(-10, 10),
                     random_state=1, t=t)
    assert session.spent == 0.0


def test_coinpress_cov_radius_past_its_public_bound_is_refused_before_the_charge(x):
    session = dpmean.Session(rho=2.0)
    with pytest.raises(InvalidParameterError, match="radius is too large"):
        session.mean(x, method="coinpress-cov", radius=1e300, sigma_max=1e-10, rho=1.0,
                     bounds=(-10, 10), random_state=1)
    assert session.spent == 0.0


# 6. coinpress-cov's dimension.

def test_coinpress_cov_refuses_a_d_whose_matrices_exceed_its_bound():
    largest = largest_covariance_dimension()
    assert COVARIANCE_MATRICES * 8 * largest**2 <= LARGEST_COVARIANCE_BYTES
    assert COVARIANCE_MATRICES * 8 * (largest + 1) ** 2 > LARGEST_COVARIANCE_BYTES
    check_covariance_dimension("coinpress-cov", largest)
    with pytest.raises(InvalidParameterError, match=f"d <= {largest:,}"):
        check_covariance_dimension("coinpress-cov", largest + 1)
    # d = 20,000 reached 18.9 GB: refused from d alone, before a charge (8 MB of zeros here).
    session = dpmean.Session(rho=2.0)
    with pytest.raises(InvalidParameterError, match="use method 'coinpress'"):
        session.mean(np.zeros((50, 20_000)), method="coinpress-cov", radius=100.0, rho=1.0,
                     bounds=(-10, 10), random_state=1)
    assert session.spent == 0.0
    estimator = ESTIMATORS["coinpress-cov"](rho=1.0, radius=100.0)
    with pytest.raises(InvalidParameterError, match="d x d covariance"):
        estimator.check_columns(20_000)


# 7. The trimmed mean's intervals at tiny levels.

@pytest.mark.parametrize(("noise", "level"), [
    ("lln", 1e-12), ("uln", 1e-20), ("lln", 1e-300), ("student-t", 1e-20), ("arsinh", 1e-12),
])
def test_trimmed_intervals_at_tiny_levels_are_narrow(x, noise, level):
    result = dpmean.mean(x, method="trimmed", noise=noise, rho=1.0, bounds=(-10, 10),
                         random_state=1)
    lo, hi = result.confidence_interval(level)
    wide_lo, wide_hi = result.confidence_interval(0.95)
    assert np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))
    assert np.all(lo <= result.mean) and np.all(result.mean <= hi)
    assert np.all(hi - lo <= wide_hi - wide_lo)
    assert math.isfinite(result.confidence_radius(level))


@pytest.mark.parametrize("noise", ["lln", "uln"])
def test_log_normal_quantiles_near_alpha_one_are_conservative(noise):
    # The quantile q solves P(|Z| > q) = alpha; near alpha = 1 it is below 1e-12, and the
    # returned value is at or above it (the interval covers at least the level).
    q = noise_quantile(noise, 1.0 - 1e-12, sigma=0.5)
    assert 0.0 < q <= 1e-12
    assert noise_quantile(noise, 1.0, sigma=0.5) in (0.0, 1e-12)


# 8. iome-gaussian's box against the bounds.

def test_intersected_box_refuses_disjoint_boxes():
    lo, hi = np.full(2, -5.0), np.full(2, 5.0)
    cut = intersected_box(lo, hi, np.array([0.0, -10.0]), np.array([10.0, 1.0]),
                          method="m", own="its ball's cube")
    assert np.array_equal(cut[0], [0.0, -5.0]) and np.array_equal(cut[1], [5.0, 1.0])
    with pytest.raises(InvalidParameterError, match="do not overlap its ball's cube: in "
                                                    "coordinate 1"):
        intersected_box(lo, hi, np.array([0.0, 6.0]), np.array([1.0, 9.0]), method="m",
                        own="its ball's cube")


def test_iome_gaussian_refuses_bounds_beside_its_ball():
    data = np.random.default_rng(0).normal(0.0, 1.0, (500, 3)) + 1e6
    session = dpmean.Session(rho=2e6)
    with pytest.raises(InvalidParameterError, match="do not overlap"):
        session.mean(data, method="iome-gaussian", rho=1e6, bounds=(1e6 - 10, 1e6 + 10),
                     random_state=1, mean_radius=100.0, sigma_min=0.1, sigma_max=10.0)
    assert session.spent == 0.0


# iome-local at rho = 1e-20 was refused here too; its reports (eps = 1.4e-10) are now drawn and
# debiased exactly, and it releases (tests/test_absurd_budgets.py).
@pytest.mark.parametrize("method, budget", [("iome-shuffle", {"epsilon": 1e-100,
                                                              "delta": 0.5})])
def test_a_budget_whose_reports_carry_nothing_is_refused_before_the_charge(method, budget):
    """A range-count report whose epsilon rounds to 0 carries nothing; its analyser divided by
    zero (ZeroDivisionError) after the rounds were charged. Refused from the plan
    (``budget_plan``, which runs before any charge)."""
    from dpmean.registry import ESTIMATORS

    x = np.random.default_rng(0).normal(size=(2000, 4))
    with pytest.raises(InvalidParameterError, match="reports would carry nothing"):
        dpmean.mean(x, bounds=(-5, 5), method=method, random_state=0, **budget)
    with pytest.raises(InvalidParameterError, match="reports would carry nothing"):
        ESTIMATORS[method](bounds=(-5, 5), **budget).budget_plan(2000, 4)
