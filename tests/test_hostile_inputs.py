"""Hostile inputs through the public API: every call ends in a clear DPMeanError or a finite,
correctly accounted release, never a crash, a hang or a silently wrong budget."""

import collections
import math
import warnings

import numpy as np
import pytest
import scipy.sparse
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

import dpmean
from dpmean.errors import DPMeanError, InvalidDataError

METHODS = ["cm", "cm-fixed", "gaussian", "iome", "plan", "plan-noscale", "trimmed", "coinpress"]
# Options a method needs besides bounds (a public prior), and tuning fixed so runs stay fast.
OPTIONS = {"coinpress": {"radius": 10.0}, "trimmed": {"smoothing": 0.1, "trim": 0.1}}

floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
extreme_ints = st.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max)
datasets = st.one_of(
    arrays(np.float64, array_shapes(min_dims=1, max_dims=3, max_side=40), elements=floats),
    arrays(np.int64, array_shapes(min_dims=1, max_dims=2, max_side=40), elements=extreme_ints),
    arrays(np.uint64, array_shapes(min_dims=1, max_dims=2, max_side=40)),
    arrays(np.float32, array_shapes(min_dims=2, max_dims=2, max_side=40),
           elements=st.floats(width=32)),
    arrays(np.bool_, array_shapes(min_dims=2, max_dims=2, max_side=40)),
)
magnitudes = st.sampled_from([1e-300, 1e-12, 1.0, 255.0, 1e12, 1e150, 1e300])


@given(x=datasets, method=st.sampled_from(METHODS), scale=magnitudes,
       rho=st.floats(1e-6, 100.0), seed=st.integers(0, 2**32))
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_mean_never_crashes_and_never_overspends(x, method, scale, rho, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = dpmean.mean(x, rho=rho, method=method, bounds=(-scale, scale),
                                 random_state=seed, **OPTIONS.get(method, {}))
        except DPMeanError as exc:
            assert str(exc)  # a message the user can read
            event(type(exc).__name__)
            return
    event("released (fallback)" if result.fallback else "released")
    assert result.mean.shape == (result.d,)
    assert np.all(np.isfinite(result.mean))
    assert result.rho_spent <= rho * (1 + 1e-9)
    assert math.fsum(result.ledger.values()) == result.rho_spent


@given(bounds=st.tuples(st.one_of(floats, st.lists(floats, min_size=1, max_size=4)),
                        st.one_of(floats, st.lists(floats, min_size=1, max_size=4))),
       method=st.sampled_from(METHODS))
@settings(max_examples=100, deadline=None)
def test_any_bounds_give_a_clear_error_or_a_release(bounds, method):
    x = np.random.default_rng(0).normal(size=(200, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = dpmean.mean(x, rho=1.0, method=method, bounds=bounds, random_state=0,
                                 **OPTIONS.get(method, {}))
        except DPMeanError as exc:
            assert str(exc)
            return
    assert np.all(np.isfinite(result.mean))



def _methods_with_required_options():
    from dpmean.api import _keyword_options
    from dpmean.registry import ESTIMATORS

    return {name: sorted(_keyword_options(cls)[1]) for name, cls in ESTIMATORS.items()
            if _keyword_options(cls)[1]}


def test_a_method_missing_its_required_options_says_which():
    # Methods with public inputs that have no default (a prior, a radius) refuse a call without
    # them with the library's error naming them, not Python's TypeError.
    required = _methods_with_required_options()
    assert "iome-gaussian" in required
    for method, names in required.items():
        try:
            dpmean.mean(np.zeros((10, 2)), rho=1.0, method=method, bounds=(0, 1))
        except dpmean.InvalidParameterError as error:
            assert all(name in str(error) for name in names), (method, str(error))
        else:
            raise AssertionError(f"{method} ran without {names}")


def test_coinpress_without_bounds_clips_a_row_at_the_float_limit():
    """CoinPress without bounds has only its ball: a finite row near the float64 limit once
    overflowed the view's norms, giving a NaN coordinate (dense, sigma < 1), numpy's
    LinAlgError after the budget was spent (coinpress-cov), or a sparse row whose NaN norm let
    it into the mean unclipped (5e304), and an overflow warning (|x| > 1e154): each told the
    neighbouring datasets apart with certainty. Now the row is clamped to the public safety
    box and clipped like any far row: the same seed gives nearly the same release, with no
    warning."""
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    dense = rng.normal(0.0, 0.3, size=(1000, 3))
    tiny = rng.normal(0.0, 0.01, size=(4000, 3))
    baskets = 10.0 * (rng.random((2000, 5)) < 0.3)
    cases = [
        (dense, (0, 0), 1e308, "coinpress", {"radius": 10.0, "sigma": 0.5}, 0.1),
        (tiny, (0, 0), 1.7e308, "coinpress-cov", {"radius": 1.0}, 0.1),
        (baskets, (0, 0), 1e308, "coinpress", {"radius": 50.0}, 1.0),
        (baskets, (0, 0), 1e200, "coinpress", {"radius": 50.0}, 1.0),
    ]
    for x, at, value, method, options, close in cases:
        neighbour = x.copy()
        neighbour[at] = value
        releases = []
        for data in (x, neighbour):
            if method == "coinpress" and x is baskets:
                data = sp.csr_matrix(data)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                releases.append(dpmean.mean(data, rho=0.5, method=method, random_state=4,
                                            **options).mean)
        assert np.all(np.isfinite(releases[1])), (method, value)
        # One row of n clipped to a ball of radius about R + sigma tau_d moves each step's
        # mean by at most 2 kappa / n: far below ``close`` at these n.
        assert np.max(np.abs(releases[1] - releases[0])) < close, (method, value, releases)


def test_coinpress_without_bounds_refuses_a_ball_beyond_float_arithmetic():
    """A radius (or centre) so large against the scale that the safety box's norms would
    overflow is a clear error about the public parameters, before any data is read."""
    x = np.zeros((100, 3))
    for options in ({"radius": 1e200}, {"radius": 1.0, "centre": 1e300},
                    {"radius": 1e10, "sigma": 1e-150}):
        try:
            dpmean.mean(x, rho=0.5, method="coinpress", **options)
        except DPMeanError as exc:
            assert "without bounds" in str(exc) and "give bounds" in str(exc)
        else:
            raise AssertionError(f"accepted {options}")


FAR = 1e15  # float64 spacing 0.125 here: far below the noise of a box of width 1


def test_a_box_far_from_the_origin_runs_at_its_centre():
    """Rows in [1e15, 1e15 + 1] and a neighbour (one row moved across the box): the release
    summed and noised at 1e15 rounded the noise (std 0.0005) away, so each dataset gave one
    fixed number, a different one for each (0.125 and 0.0 above 1e15 over 100 seeds), with
    or without secure noise. Now every estimator runs on the rows moved by the box's centre
    (public): the same seed gives exactly the release of the moved data, moved back."""
    u = np.random.default_rng(92).random((2000, 1))
    x = FAR + u
    neighbour = x.copy()
    neighbour[0, 0] = FAR + 1.0 if u[0, 0] < 0.5 else FAR
    centre = FAR + 0.5
    for method in ["gaussian", "cm", "iome", "plan", "trimmed", "auto"]:
        for secure in (False, True):
            options = {"rho": 0.5, "method": method, "secure_noise": secure}
            seen = [{float(dpmean.mean(data, bounds=(FAR, FAR + 1.0), random_state=seed,
                                       **options).mean[0]) for seed in range(5)}
                    for data in (x, neighbour)]
            assert seen[0] == seen[1], (method, secure, seen)
            result = dpmean.mean(x, bounds=(FAR, FAR + 1.0), random_state=3, **options)
            moved = dpmean.mean(x - centre, bounds=(-0.5, 0.5), random_state=3, **options)
            assert result.mean[0] == moved.mean[0] + centre, (method, secure)
            assert result.diagnostics["box_offset"][0] == centre
            assert result.diagnostics["bounds_lo"][0] == FAR


def test_a_far_box_is_moved_on_every_engine_and_a_near_one_is_not():
    """The chunked and dask engines move the rows alike (clamped first: a row beyond the box
    cannot overflow); a box within 1024 widths of the origin runs as before, unmoved."""
    da = pytest.importorskip("dask.array")
    from dpmean.engines.chunked import ArraySource

    x = FAR + np.random.default_rng(1).random((3000, 3))
    x[5, 1] = 1.7e308  # clamped to the box before it is moved
    expected = dpmean.mean(x, rho=0.5, bounds=(FAR, FAR + 1.0), method="iome",
                           random_state=2).mean
    for data in (ArraySource(x), da.from_array(x, chunks=(700, 3))):
        got = dpmean.mean(data, rho=0.5, bounds=(FAR, FAR + 1.0), method="iome",
                          random_state=2).mean
        np.testing.assert_allclose(got, expected, rtol=0, atol=0.25)
    near = dpmean.mean(np.random.default_rng(1).random((300, 2)) + 1000.0, rho=0.5,
                       bounds=(1000.0, 1001.0), method="cm", random_state=0)
    assert "box_offset" not in near.diagnostics


def test_a_far_box_moves_the_trimmed_means_output_truncation_and_a_one_column_dask_array():
    """Review of the far-box change: the trimmed mean with output truncation (rows not clamped,
    box infinite) was never moved (D_266 released 0.0 above 1e15 on every seed, D_267 0.125);
    a 1-D dask array's blocks became (m, 1, 1) after the move and the release failed."""
    da = pytest.importorskip("dask.array")
    n = 2000
    seen = []
    for k in (266, 267):
        x = np.full((n, 1), FAR)
        x[:k] = FAR + 1.0
        seen.append({float(dpmean.mean(x, rho=0.5, bounds=(FAR, FAR + 1.0), method="trimmed",
                                       truncation="output", random_state=seed).mean[0])
                     for seed in range(5)})
    assert seen[0] == seen[1]
    one = np.random.default_rng(0).random(2000) + 1e6
    result = dpmean.mean(da.from_array(one, chunks=500), rho=0.5, method="iome",
                         bounds=(1e6, 1e6 + 1.0), random_state=0)
    expected = dpmean.mean(one, rho=0.5, method="iome", bounds=(1e6, 1e6 + 1.0),
                           random_state=0)
    np.testing.assert_allclose(result.mean, expected.mean, rtol=0, atol=1e-9)


@pytest.mark.parametrize("method", ["gaussian", "cm", "plan"])
def test_a_far_boxs_interval_covers_the_exact_mean(method):
    """At 1e15 the spacing of floats (0.125) exceeds the noise: the interval, release plus or
    minus a half-width of about 0.001, collapsed to the release and missed the exact mean
    (1e15 + 0.43625, not a float) in 200 of 200 runs. Its ends now allow for the rounding of
    the release and of themselves (two spacings a side), and so does the l2 radius."""
    x = np.r_[np.full(980, FAR + 0.5), np.full(1020, FAR + 0.375)][:, None]
    for seed in range(20):
        result = dpmean.mean(x, rho=0.5, bounds=(FAR, FAR + 1.0), method=method,
                             random_state=seed)
        lo, hi = result.confidence_interval(0.9)
        # Exact: the interval's ends and the data are floats; the mean is 1e15 + 0.43625.
        assert lo[0] - FAR <= 0.43625 <= hi[0] - FAR, (seed, lo - FAR, hi - FAR)
        assert abs(result.mean[0] - FAR - 0.43625) <= result.confidence_radius(0.9)


@pytest.mark.parametrize("huge", [2**64, 2**70, -(2**63) - 1])
def test_a_list_is_read_as_float64_whatever_its_values(huge):
    # numpy read a list's dtype off its values: one integer beyond int64/uint64 made it an
    # object array, refused, where a list with 7 in its place was released (review).
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        small = dpmean.mean([[1, 2], [3, 7]], rho=1.0, method="gaussian", bounds=(0, 10),
                            random_state=0)
        large = dpmean.mean([[1, 2], [3, huge]], rho=1.0, method="gaussian", bounds=(0, 10),
                            random_state=0)
    # The huge value is clamped to the box like any other: the releases differ by its
    # clamped contribution only.
    clamped = 10.0 if huge > 0 else 0.0
    np.testing.assert_allclose(large.mean - small.mean, [0.0, (clamped - 7.0) / 2], atol=1e-12)


@pytest.mark.parametrize("values", [[1, 2, 7], [1, 2, 2**63], [1, True, 3]])
def test_a_pandas_object_column_is_refused_by_its_dtype_not_its_values(values):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": pd.Series(values, dtype=object), "b": [1.0, 2.0, 3.0]})
    with pytest.raises(InvalidDataError, match="column 'a' has type object"):
        dpmean.mean(frame, rho=1.0, method="gaussian", bounds=(0, 10), random_state=0)
    # Not chosen, it is not converted at all.
    result = dpmean.mean(frame, rho=1.0, method="gaussian", bounds=(0, 10), random_state=0,
                         columns=["b"])
    assert result.columns == ("b",)


@pytest.mark.parametrize("dtype", ["m8[s]", "M8[s]"])
def test_times_are_not_quantities(dtype):
    with pytest.raises(InvalidDataError, match="numeric"):
        dpmean.mean(np.array([1, 2, 3], dtype=dtype), rho=1.0, method="gaussian",
                    bounds=(0, 10))


def test_a_pandas_arrow_decimal_column_is_numeric_by_its_declared_type():
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    from decimal import Decimal

    values = pd.array([Decimal("1.25"), Decimal("2.50")] * 50,
                      dtype=pd.ArrowDtype(pa.decimal128(12, 2)))
    result = dpmean.mean(pd.DataFrame({"a": values}), rho=1.0, method="gaussian",
                         bounds=(0, 10), random_state=0)
    assert result.columns == ("a",)
    text = pd.DataFrame({"a": pd.array(["x"] * 100, dtype=pd.ArrowDtype(pa.string()))})
    with pytest.raises(InvalidDataError, match="column 'a' has type"):
        dpmean.mean(text, rho=1.0, method="gaussian", bounds=(0, 10))


@pytest.mark.parametrize("method", ["cm", "cm-fixed", "auto"])
def test_a_box_whose_squared_reach_overflows_is_refused_before_the_charge(method, tmp_path):
    """(6e153, 1.2e154)^2: the squared diameter is finite, but the farthest corner's squared
    distance from the origin is not, so the clipped mean's norms about the origin are inf.
    The radius search refused it after a session's or a ledger's charge (a review); it is
    public, so it is refused before. Methods that centre the rows first still run it."""
    from dpmean.cli import main
    from dpmean.ledger_file import read as read_ledger

    x = np.random.default_rng(0).uniform(6e153, 1.2e154, (500, 2))
    session = dpmean.Session(rho=10.0)
    with pytest.raises(dpmean.InvalidParameterError, match="farthest corner lies too far"):
        session.mean(x, rho=1.0, method=method, bounds=(6e153, 1.2e154), random_state=1)
    assert session.spent == 0.0 and session.ledger == []
    path, ledger = tmp_path / "far.npy", tmp_path / "ledger.json"
    np.save(path, x)
    assert main(["ledger", "init", str(ledger), "--rho", "1"]) == 0
    assert main(["estimate", str(path), "--method", method, "--rho", "0.5", "--bounds",
                 "6e153", "1.2e154", "--ledger", str(ledger), "--seed", "1"]) == 2
    assert read_ledger(ledger).spent == 0.0 and read_ledger(ledger).ledger == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        released = session.mean(x, rho=1.0, method="iome", bounds=(6e153, 1.2e154),
                                random_state=1)
    assert np.all((released.mean >= 6e153) & (released.mean <= 1.2e154))
    if method == "auto":
        # Where n and rho place no choice and no near-origin count, IOME, PLAN or the
        # Gaussian mechanism runs, none measuring norms about the origin: released, as
        # before the check (the diff review).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            few = session.mean(x[:60], rho=0.05, method="auto", bounds=(6e153, 1.2e154),
                               random_state=2)
        assert few.diagnostics["chosen"] == "gaussian"


@pytest.mark.parametrize("sequence", [collections.deque, collections.UserList, tuple])
@pytest.mark.parametrize("last", [[10**309, 0.5], [2**64, 0.5], ["0.5", 0.5]])
def test_any_sequence_of_rows_is_read_as_a_list_is(sequence, last):
    # A deque or a UserList went through numpy's dtype guess: one row holding 10**309, 2**64
    # beside floats or a numeric string made the array object or text, refused after the
    # session's charge, where its neighbour was released (a review).
    rows = [[0.5, 0.5]] * 199
    session = dpmean.Session(rho=1.0)
    result = session.mean(sequence(rows + [last]), rho=0.1, method="gaussian", bounds=(0, 1),
                          random_state=0)
    assert [entry.status for entry in session.ledger] == ["released"]
    listed = dpmean.mean(rows + [last], rho=0.1, method="gaussian", bounds=(0, 1),
                         random_state=0)
    np.testing.assert_array_equal(result.mean, listed.mean)


def test_a_dask_array_of_sparse_blocks_is_refused_before_the_charge():
    # Charged, then refused as its blocks were read (a review).
    da = pytest.importorskip("dask.array")
    x = da.from_array(scipy.sparse.random(2000, 16, density=0.2, format="csr",
                                          random_state=0), chunks=(500, 16), asarray=False)
    session = dpmean.Session(rho=1.0)
    with pytest.raises(InvalidDataError, match="dask array of scipy.sparse blocks"):
        session.mean(x, rho=0.1, method="plan", bounds=(0, 1))
    assert session.spent == 0.0 and session.ledger == []


@pytest.mark.parametrize("big", [10**309, -10**309])
def test_a_python_integer_beyond_float64_in_a_list_is_clamped_like_infinity(big):
    """numpy refuses to convert a Python int beyond float64's range to float64, and that
    refusal came after a session's charge, where x' (one row holding it) failed and x was
    released: one row's magnitude told with certainty (a side-channel review). It is now a
    value beyond the range, as inf is: clamped to the box."""
    rows = [[0.5, 0.5]] * 199
    released = {}
    for name, last in (("big", [big, 1.0]), ("inf", [math.inf if big > 0 else -math.inf, 1.0])):
        session = dpmean.Session(rho=1.0)
        result = session.mean(rows + [last], rho=0.01, method="gaussian", bounds=(0, 1),
                              random_state=1)
        assert [entry.status for entry in session.ledger] == ["released"]
        released[name] = result.mean
    np.testing.assert_array_equal(released["big"], released["inf"])
    # A None cell is a NaN, refused alike whether another row holds such an integer or inf.
    messages = set()
    for last in ([big, 0.5], [math.inf, 0.5]):
        with pytest.raises(InvalidDataError) as refused:
            dpmean.mean([[None, 1.0], last], rho=1.0, method="gaussian", bounds=(0, 1))
        messages.add(str(refused.value))
    assert len(messages) == 1 and "NaN" in messages.pop()


@pytest.mark.parametrize("cells", [
    [[np.datetime64("2020-01-01"), 0.5]], [[np.timedelta64(3, "D"), 0.5]],
    [[np.complex64(0.5 + 2j), 0.5]], [[np.complex128(0.5 + 2j), 0.5]], [[0.5 + 2j, 0.5]],
    [[True, 0.5], ["0.25", 0.5]], [[np.float32(0.1), 0.5], ["0.25", 0.5]],
    [["0.5\x00", 0.5]], [[b"0.25", 0.5]], [["abc", 0.5]], [[2**64, 0.5]],
    # Rows given as numpy arrays, which a cast to Python objects unpacked (a fourth review).
    [np.array([1 + 2j, 0.5], dtype=np.complex64)],
    [np.array(["2020-01-01", "2020-01-02"], dtype="M8[D]")]])
def test_a_lists_cells_read_the_same_whatever_other_rows_hold(cells):
    # A row with an integer beyond float64 sends the list down a cell-by-cell cast; every
    # other cell must read as numpy's cast of the whole list reads it, or one row decides
    # another's fate after the charge. Two reviews found it did not: a date released as its
    # day number, refused beside such an integer; then (reading the list by numpy's guess of
    # its kind) True turned to text beside a string row, and np.complex64 refused or not.
    def outcome(rows):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # numpy's ComplexWarning, alike both ways
                result = dpmean.mean(rows, rho=1.0, method="gaussian", bounds=(0, 1),
                                     random_state=1)
            return tuple(result.mean)
        except InvalidDataError as refused:
            return str(refused)

    rows = [[0.5, 0.5]] * 50 + cells
    assert outcome(rows + [[math.inf, 0.5]]) == outcome(rows + [[10**309, 0.5]])


def test_a_series_is_refused_by_its_declared_type_before_the_charge():
    # An unnamed category Series of one text category was charged, then refused ("object
    # values"), where its neighbour with a number there was released (a review): its dtype
    # declares no numbers, whatever its categories.
    pd = pytest.importorskip("pandas")
    rows = list(np.linspace(0.0, 1.0, 200))
    for series in (pd.Series(pd.Categorical(rows[:-1] + ["x"])), pd.Series(pd.Categorical(rows)),
                   pd.Series(["0.5"] * 200, dtype="string")):
        session = dpmean.Session(rho=1.0)
        with pytest.raises(InvalidDataError, match="declares no numbers"):
            session.mean(series, rho=0.5, bounds=(0, 1), random_state=0)
        assert session.spent == 0.0 and session.ledger == []
        with pytest.raises(InvalidDataError, match="declares no numbers"):
            dpmean.mean(series, rho=0.5, bounds=(0, 1), random_state=0)
    released = dpmean.mean(pd.Series(rows, dtype="Float64"), rho=0.5, bounds=(0, 1),
                           random_state=0)
    assert released.n == 200
