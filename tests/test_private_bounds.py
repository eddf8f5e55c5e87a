"""The sign-aware private box a release buys when bounds are omitted (issue 18, goal 9)."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import dpmean
from dpmean.accounting import PrivacyLedger
from dpmean.engines import make_engine
from dpmean.errors import InsufficientDataWarning, NoisyReleaseWarning
from dpmean.estimators.private_bounds import (
    BOUNDS_BETA,
    LEVELS,
    SIGN_BETA,
    private_box,
    signed_counts,
)

RHO_BOX = 0.025  # 10% of rho = 1/4


def box(x: np.ndarray, seed: int, rho: float = RHO_BOX) -> tuple[np.ndarray, np.ndarray]:
    """The private box of ``x`` on ``rho``, checking that its one stage spends all of it."""
    d = x.shape[1]
    ledger = PrivacyLedger(rho)
    ledger.plan({"bounds": rho})
    engine = make_engine(x, np.full(d, -np.inf), np.full(d, np.inf), None)
    lo, hi, _, _ = private_box(engine, rho, np.random.default_rng(seed), ledger=ledger)
    ledger.verify()
    assert ledger.spent == {"bounds": pytest.approx(rho)}
    return lo, hi


def pixels(seed: int, n: int = 2000, d: int = 64) -> np.ndarray:
    """Integers 0 to 255; a quarter of the columns are 0 in every row (as MNIST's border)."""
    x = np.random.default_rng(seed).integers(0, 256, size=(n, d)).astype(np.float64)
    x[:, : d // 4] = 0.0
    return x


def test_nonnegative_data_get_a_one_sided_box():
    # No value is negative: the negative sign is declared present only through a spurious
    # loud bin (probability at most BOUNDS_BETA, all bins of both signs together) or a window
    # test (at most SIGN_BETA), so a box misses lo = 0 with probability at most 1.01%; 20 fixed
    # seeds. The values reach the bin [128, 256) (pooled: the zero columns share it), one
    # power of two of margin: [0, 512]. The mirror image gives [-512, 0] (zeros, counted on
    # neither side, make no sign present).
    assert BOUNDS_BETA + SIGN_BETA <= 0.0101
    x = pixels(0)
    for seed in range(20):
        lo, hi = box(x, seed)
        assert np.all(lo == 0.0) and np.all(hi == 512.0), seed
        lo, hi = box(-x, seed)
        assert np.all(lo == -512.0) and np.all(hi == 0.0), seed


def test_data_of_both_signs_get_both_sides():
    # N(0, 1), d = 16, n = 4000: each sign's summed bin [2, 4) holds about 1,450 values
    # against a threshold of 560 (sigma sqrt(d) z(1e-4 / (3 x 2098)), sigma = sqrt(d / rho)
    # = 25.3), [4, 8) about 2: the reach tops at 4, the box is [-8, 8] in every column.
    x = np.random.default_rng(1).normal(size=(4000, 16))
    for seed in range(10):
        lo, hi = box(x, seed)
        assert np.all(lo == -8.0) and np.all(hi == 8.0), seed


def test_a_negative_tail_in_one_column_gets_its_reach():
    # Values in [0, 1) and, in column 0, a tenth of the rows at -1000 (the bin [512, 1024)):
    # 400 values against the column's own threshold tau = 219 (sigma = 35.8, z(1e-4 /
    # (3 x 32 x 2098))), so column 0 reaches -2048; the summed bin's threshold is 1,119 (noise
    # 202), so the other columns keep their own reach. The sign is decided for all columns at once
    # (a per-column decision clamped Gaussian B's thinly spread negative values): the other
    # columns' boxes are symmetric about their own reach, [-2, 2].
    x = np.random.default_rng(2).uniform(size=(4000, 32))
    x[:400, 0] = -1000.0
    for seed in range(10):
        lo, hi = box(x, seed)
        assert (lo[0], hi[0]) == (-2048.0, 2048.0), seed
        assert np.all(lo[1:] == -2.0) and np.all(hi[1:] == 2.0), seed


def test_negative_values_spread_thinly_over_many_columns_are_found():
    # Gaussian B at alpha = 1 in small (PLAN's Zipf variances, mean 10, d = 512, n = 10^4):
    # 23,000 negative values in 74 columns, most under their columns' own thresholds; with a
    # per-column decision they were clamped (a bias of 2.4 in l2). Found, every column's box
    # reaches below 0; what its edges clamp (column 2's +-64 is 3.4 of its standard deviations
    # of 16 from its mean of 10: about 16 E(Z - 3.4)+ = 0.0013) is under 1% of that bias.
    from dpmean.experiments.figures import SPECS

    setting = {"n": 10000, "mean": 10.0, "d": 512, "alpha": 1.0, "rho": 0.25}
    x = SPECS["plan-gaussian-b"].data(setting, np.random.default_rng(0)).x
    lo, hi = box(x, 0)
    def clamping_bias(lo: np.ndarray) -> float:
        return float(np.linalg.norm(np.clip(x, lo, hi).mean(axis=0) - x.mean(axis=0)))

    assert np.all(lo < 0.0)
    assert clamping_bias(lo) < 0.01 * clamping_bias(np.zeros_like(lo))


def test_too_few_rows_find_no_box_and_the_release_falls_back():
    x = np.ones((3, 4))
    lo, hi = box(x, 0, rho=1e-4)
    assert np.isnan(lo).all() and np.isnan(hi).all()
    with pytest.warns(InsufficientDataWarning, match="too few"):
        result = dpmean.mean(x, rho=1e-3, random_state=0)
    assert result.fallback and np.all(result.mean == 0.0)


def test_a_release_without_bounds_on_nonnegative_data_spends_its_budget_in_a_one_sided_box():
    x = pixels(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NoisyReleaseWarning)
        result = dpmean.mean(x, rho=0.5, random_state=0)
    assert result.ledger["bounds"] == pytest.approx(0.05)
    assert sum(result.ledger.values()) == pytest.approx(0.5)
    assert np.all(result.diagnostics["bounds_lo"] == 0.0)
    # The release is projected onto the box: the zero columns cannot go below 0.
    assert np.all(result.mean >= 0.0)


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=200, deadline=None)
@given(x=st.integers(1, 6).flatmap(lambda d: arrays(np.float64, st.tuples(st.integers(1, 8),
                                                                          st.just(d)),
                                                     elements=finite)),
       row=st.data())
def test_replacing_a_row_moves_the_counts_at_most_sqrt_2d(x, row):
    n, d = x.shape
    i = row.draw(st.integers(0, n - 1))
    other = x.copy()
    other[i] = row.draw(arrays(np.float64, d, elements=finite))
    counts, moved = signed_counts(x), signed_counts(other)
    assert counts.shape == (d, 2, LEVELS)
    np.testing.assert_array_equal(counts.sum(axis=(1, 2)), (x != 0.0).sum(axis=0))
    assert np.linalg.norm(counts - moved) <= np.sqrt(2 * d) * (1 + 1e-12)


def test_columns_of_far_apart_scales_keep_their_own_reach():
    # A user trial: ages, incomes, 0/1 flags and timestamps near 1.7e9 without bounds: the
    # pooled reach gave every column [0, 2^32] and the age's mean came out 3,766, silently.
    # A column whose own reach lies more than 10 powers of two below the pooled one keeps its
    # own (ages: [0, 256]; flags: [0, 4]); columns of near scales (sd 1..8) are still lifted to
    # the pooled reach (sd 1's own would be 8; the widest column's own lifts it one more level).
    rng = np.random.default_rng(0)
    n = 5000
    table = np.column_stack([rng.uniform(18, 90, n), rng.lognormal(10.5, 1, n).clip(0, 1e6),
                             rng.random(n) < 0.3, rng.uniform(1.6e9, 1.7e9, n)])
    lo, hi = box(table, 0)
    np.testing.assert_array_equal(lo, 0.0)
    assert hi[0] <= 2.0**9 and hi[2] <= 2.0**3 and 1e6 <= hi[1] <= 2.0**22 and hi[3] >= 1.7e9
    result = dpmean.mean(table, rho=0.5, method="cm", random_state=2)
    assert abs(result.mean[0] - table[:, 0].mean()) < 1.0  # was 3,766 off
    alike = rng.normal(0.0, 1.0, (4000, 8)) * np.arange(1, 9)
    lo, hi = box(alike, 0)
    assert np.all(hi >= hi.max() / 2) and np.all(lo == -hi)


def test_a_column_that_borrowed_the_widest_box_is_named_in_a_warning():
    """A 3% fraud flag beside timestamps near 1.7e9 and ages, n = 5000, rho = 0.1 without
    bounds (a user trial): too few of the flag's ones clear the noise to place its own box, so
    it gets the timestamps' +-2^32, and its release carries that noise (10^5-10^6). The box is
    unchanged; the warning names the column and the diagnostic marks it. A table of one scale
    with columns too thin to measure alone (their box is their peers') says nothing."""
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 5000
    frame = pd.DataFrame({
        "amount": rng.lognormal(3, 1.5, n), "latency_ms": rng.lognormal(5, 1.0, n),
        "n_events": rng.poisson(7, n), "is_fraud": (rng.random(n) < 0.03).astype(int),
        "is_mobile": (rng.random(n) < 0.6).astype(int),
        "ts": (1.7e9 + rng.uniform(0, 3e7, n)).astype(np.int64),
        "balance_delta": rng.normal(-20, 300, n), "pnl": rng.standard_t(3, n) * 50 - 5,
        "age": rng.integers(18, 90, n), "items": rng.integers(0, 40, n)})
    with pytest.warns(NoisyReleaseWarning, match=r"column 'is_fraud' got the widest columns'"):
        result = dpmean.mean(frame, rho=0.1, random_state=0)
    assert result.diagnostics["private_bounds_borrowed"].tolist() == [
        name == "is_fraud" for name in frame.columns]
    assert result.diagnostics["bounds_hi"][3] == result.diagnostics["bounds_hi"].max()
    x = rng.normal(0, 1, (500, 64))
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoisyReleaseWarning)
        quiet = dpmean.mean(x, rho=0.1, random_state=1)
    assert "private_bounds_borrowed" not in quiet.diagnostics


@pytest.mark.parametrize("values", [
    np.random.default_rng(0).normal(0, 1, (1000, 7)),
    np.random.default_rng(1).normal(0, 1e-40, (300, 3)).astype(np.float32),  # subnormal float32
    np.random.default_rng(2).integers(-5, 5, (1000, 3)),
    np.random.default_rng(3).integers(0, 255, (200, 5)).astype(np.uint8),
    np.random.default_rng(4).random((500, 4)) < 0.5,
    np.array([[0.0, -0.0, 5e-324, -5e-324, 2.0**-1022, 1e308, -1.7976931348623157e308, 1.0,
               -1.0, 0.75]]).T,
])
def test_signed_counts_are_the_signed_levels_histogram(values):
    """The compiled counts (``signed_counts``) are numpy's histogram of ``signed_levels``
    exactly, at every dtype and at the grid's ends (zeros of either sign in no bin, the
    smallest subnormals and the largest floats in the end bins); and the same however the rows
    are split between threads."""
    from dpmean.estimators.private_bounds import LEVELS, signed_counts, signed_levels

    k = values.shape[1]
    flat = signed_levels(np.asarray(values)) + (2 * LEVELS + 1) * np.arange(k)
    reference = np.bincount(flat.ravel(), minlength=k * (2 * LEVELS + 1))
    reference = reference.reshape(k, 2 * LEVELS + 1)[:, :-1].reshape(k, 2, LEVELS)
    np.testing.assert_array_equal(signed_counts(values), reference)
    halves = signed_counts(values[: len(values) // 2]) + signed_counts(values[len(values) // 2:])
    np.testing.assert_array_equal(halves, reference)


@pytest.mark.parametrize("method", ["cm", "gaussian", "plan"])
def test_a_private_box_too_wide_to_compute_in_is_the_fallback_not_an_error(method):
    """Values near 1e308: the private box's squared diameter overflows float64. The release
    was refused after the box's charge with "bounds are too wide ... rescale", of bounds the
    user never gave (review); it is the fallback now, decided by the noisy box alone."""
    x = np.full((4000, 3), 1.5e308)
    x[::2] *= -1
    with pytest.warns(InsufficientDataWarning, match="squared diameter overflows"):
        result = dpmean.mean(x, rho=1.0, method=method, random_state=1)
    assert result.fallback and not result.mean.any()
    assert set(result.ledger) == {"bounds"}


@pytest.mark.parametrize("method", ["cm", "gaussian", "iome", "auto"])
def test_a_private_box_narrower_than_any_box_may_be_is_widened_not_refused(method):
    """Columns whose values all lie below 1e-100 (here 3e-120; negative in the second): their
    private box is narrower than NARROWEST_WIDTH, and the release was refused ("bounds are
    too narrow") after the box's charge (a review). The box's sides are widened to that width
    (post-processing of the noisy box), the release goes on in it, spends the whole budget,
    and a warning names the columns."""
    rng = np.random.default_rng(3)
    x = np.column_stack([np.full(4000, 3e-120), np.full(4000, -3e-120),
                         rng.normal(5, 1, 4000)])
    session = dpmean.Session(rho=2.0)
    with pytest.warns(NoisyReleaseWarning,
                      match=r"boxes of columns 0, 1 were narrower than 1e-100"):
        result = session.mean(x, rho=1.0, method=method, random_state=1)
    assert not result.fallback
    assert result.diagnostics["private_bounds_widened"].tolist() == [1, 1, 0]
    # Both signs are present in the table (a sign is decided for all columns at once).
    np.testing.assert_array_equal(result.diagnostics["bounds_lo"][:2], [-1e-100, -1e-100])
    np.testing.assert_array_equal(result.diagnostics["bounds_hi"][:2], [1e-100, 1e-100])
    assert np.all(np.abs(result.mean[:2]) <= 1e-100)
    assert abs(sum(result.ledger.values()) - 1.0) <= 1e-12
    assert abs(session.spent - 1.0) <= 1e-12
    # A box of its own width at 1e-90: nothing widened, nothing said.
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoisyReleaseWarning)
        quiet = dpmean.mean(np.full((4000, 2), 1e-90), rho=1.0, method=method, random_state=1)
    assert "private_bounds_widened" not in quiet.diagnostics
    # One sign only: the widened box keeps its one side.
    with pytest.warns(NoisyReleaseWarning, match=r"box of column 0 was narrower"):
        positive = dpmean.mean(np.full((4000, 1), 3e-120), rho=1.0, method=method,
                               random_state=1)
    assert (positive.diagnostics["bounds_lo"][0], positive.diagnostics["bounds_hi"][0]) == (
        0.0, 1e-100)


def test_a_column_lifted_far_above_its_own_values_is_named_in_a_warning():
    """Ages beside lognormal incomes, n = 3500, rho = 0.05 without bounds (a user trial): where
    the incomes' pooled reach lies exactly 10 powers of two above the ages' (here seed 5; 1
    seed of 8 at d = 3, 9 of 10 in the trial's table of 4 columns), the ages share their box,
    2^10 times their own reach, and were released as 0 to 165 for a mean of 56.
    The box is the same as before; the warning names the column and the diagnostic says by
    how much each column was lifted. Columns within 2^4 of each other say nothing."""
    import pandas as pd

    rng = np.random.default_rng(7)
    n = 3500
    frame = pd.DataFrame({
        "age": np.clip(np.round(rng.gamma(4, 10, n) + 18), 18, 90),
        "income": np.clip(np.round(rng.lognormal(10.6, 0.9, n)), 0, 500000),
        "smoker": (rng.random(n) < 0.23).astype(int)})
    with pytest.warns(NoisyReleaseWarning, match=r"column 'age' got the private box of wider "
                                                  r"columns \(\[0, 2\.62e\+05\], 2\^10 times"):
        result = dpmean.mean(frame, rho=0.05, random_state=5)
    assert result.diagnostics["private_bounds_lifted"].tolist() == [10, 0, 0]
    assert result.diagnostics["bounds_hi"][0] == 2.0 ** 18
    # Standard deviations 16 to 1 (Gaussian C at d = 16): lifted by at most 4, no warning.
    x = rng.normal(0, 16 / np.arange(1, 17), (4000, 16))
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoisyReleaseWarning)
        quiet = dpmean.mean(x, rho=0.25, random_state=1, method="cm")
    assert "private_bounds_lifted" not in quiet.diagnostics


def test_a_private_box_is_cut_to_the_range_a_dtype_declares():
    # Flags without bounds got the box [0, 4] (a power of two beyond their rows) and 4 times
    # the noise a flag's [0, 1] carries; uint8 values [0, 512] (a user trial). The dtype is
    # public and the data lie within its range: the cut is post-processing and clamps nothing.
    rng = np.random.default_rng(0)
    flags = np.column_stack([rng.random(5000) < 0.3, rng.random(5000) < 0.03])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        as_bool = dpmean.mean(flags, rho=0.1, method="gaussian", random_state=0)
        as_float = dpmean.mean(flags.astype(float), rho=0.1, method="gaussian", random_state=0)
        small = dpmean.mean((rng.random((5000, 3)) * 200).astype(np.uint8), rho=0.1,
                            method="gaussian", random_state=0)
    np.testing.assert_array_equal(as_bool.diagnostics["bounds_hi"], [1.0, 1.0])
    np.testing.assert_array_equal(as_bool.diagnostics["bounds_lo"], [0.0, 0.0])
    assert (as_float.diagnostics["bounds_hi"] > 1.0).all()  # no dtype declares a range
    np.testing.assert_allclose(as_bool.diagnostics["noise_std"] * 4.0,
                               as_float.diagnostics["noise_std"], rtol=1e-12)
    assert (small.diagnostics["bounds_hi"] <= 255.0).all()
