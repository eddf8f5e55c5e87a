"""Mechanisms: the Gaussian mechanism's scale and PrivQuant's rank error against Theorem 3.3."""

import numpy as np
import pytest
from ledgers import stage
from scipy import stats

from dpmean.errors import InvalidParameterError
from dpmean.mechanisms import (
    count_noise_std,
    gaussian_mechanism,
    gaussian_noise_std,
    integer_search_steps,
    private_quantile_integer,
    private_quantile_real,
    rank_error_bound,
    reliable_search_steps,
)

TRIALS = 400


def test_gaussian_noise_std_formula():
    assert gaussian_noise_std(2.0, 0.5) == pytest.approx(2.0 / np.sqrt(1.0))
    assert gaussian_noise_std(1.0, 0.125) == pytest.approx(2.0)


def test_gaussian_mechanism_distribution():
    rng = np.random.default_rng(0)
    value = np.full(20000, 3.0)
    out = gaussian_mechanism(value, 1.5, 0.2, rng, **stage())
    sigma = 1.5 / np.sqrt(0.4)
    # Kolmogorov-Smirnov against N(3, sigma^2) at the 0.1% level.
    assert stats.kstest((out - 3.0) / sigma, "norm").pvalue > 1e-3


@pytest.mark.parametrize("rho", [0.0, -1.0, np.inf, np.nan])
def test_gaussian_mechanism_rejects_bad_rho(rho):
    with pytest.raises(InvalidParameterError):
        gaussian_mechanism(np.zeros(2), 1.0, rho, np.random.default_rng(0), **stage())


def _rank_error(values: np.ndarray, x: float, m: float) -> float:
    """tau such that x_(m - tau) <= x <= x_(m + tau): distance of m from [#{< x}, #{<= x}]."""
    below = np.count_nonzero(values < x)
    upto = np.count_nonzero(values <= x)
    return max(0.0, below - m, m - upto)


def _tau(steps: int, rho: float, beta: float) -> float:
    # Theorem 3.3: all `steps` noisy counts are within tau with probability 1 - beta (union bound
    # over two-sided Gaussian tails), and then the rank error is at most tau (Lemma 3.2).
    return count_noise_std(steps, rho) * stats.norm.isf(beta / (2 * steps))


def _allowed_failures(beta: float) -> int:
    return int(stats.binom.ppf(1 - 1e-4, TRIALS, beta))


@pytest.mark.parametrize("m", [1, 250, 500, 999])
def test_integer_privquant_rank_error_within_theorem(m):
    rng = np.random.default_rng(m)
    values = rng.integers(0, 1 << 12, size=1000)
    rho, beta = 0.05, 0.1
    steps = integer_search_steps(np.array([0]), np.array([(1 << 12) - 1]))
    assert steps == 12
    tau = _tau(steps, rho, beta)
    count = lambda t: np.array([np.count_nonzero(values <= t[0])])  # noqa: E731
    errors = []
    for _ in range(TRIALS):
        x = private_quantile_integer(count, m, np.array([0]), np.array([(1 << 12) - 1]),
                                     rho_per_search=rho, rng=rng, **stage())[0]
        assert x == int(x) and 0 <= x < 1 << 12
        errors.append(_rank_error(values, x, m))
    errors = np.array(errors)
    assert np.count_nonzero(errors > tau) <= _allowed_failures(beta)
    # The noise is real: the errors are not all zero, and exceed a quarter of tau often.
    assert np.count_nonzero(errors > tau / 4) > _allowed_failures(beta)


def test_integer_privquant_is_exact_without_noise():
    # With an enormous budget Algorithm 1 returns the smallest v with count(<= v) > m (ranks
    # are offset by 1/2 so that no count ties with m, where the sign of the noise would decide).
    values = np.array([3, 3, 7, 10, 10, 10, 42])
    count = lambda t: np.array([np.count_nonzero(values <= t[0])])  # noqa: E731
    for m, expected in [(0.5, 3), (1.5, 3), (2.5, 7), (5.5, 10), (6.5, 42), (7.5, 63)]:
        got = private_quantile_integer(count, m, np.array([0]), np.array([63]),
                                       rho_per_search=1e12, rng=np.random.default_rng(0), **stage())
        assert got[0] == expected


def test_real_privquant_rank_error_within_theorem():
    rng = np.random.default_rng(7)
    values = rng.normal(size=2000)
    rho, beta, steps, m = 0.1, 0.1, 16, 1000
    tau = _tau(steps, rho, beta)
    count = lambda t: np.array([np.count_nonzero(values <= t[0])])  # noqa: E731
    errors = np.array([
        _rank_error(values, private_quantile_real(count, m, np.array([-8.0]), np.array([8.0]),
                                                  steps=steps, rho_per_search=rho, rng=rng,
        **stage())[0], m)
        for _ in range(TRIALS)
    ])
    # The final interval has width 16 / 2**16; at this density it holds at most a few values.
    resolution = np.count_nonzero(np.abs(values) < 16 / 2**16) + 2
    assert np.count_nonzero(errors > tau + resolution) <= _allowed_failures(beta)


def test_reliable_steps_keep_every_count_within_the_margin():
    # the largest T <= most with tau(T) < margin: all of it with a large budget, fewer as the
    # budget shrinks, never below 1
    margin, beta, most = 2000.0, 0.05 / 128, 22
    steps = [reliable_search_steps(margin, rho, beta, most) for rho in (1e-3, 2e-5, 4e-6, 1e-7)]
    assert steps == sorted(steps, reverse=True) and steps[0] == most and steps[-1] == 1
    for rho, t in zip((1e-3, 2e-5, 4e-6, 1e-7), steps, strict=True):
        assert t == 1 or rank_error_bound(t, rho, beta) < margin
        assert t == most or rank_error_bound(t + 1, rho, beta) >= margin


@pytest.mark.parametrize("steps", [None, 40])
def test_medians_stay_inside_the_data_on_a_small_budget(steps):
    # Theorem 3.3 with a union over k searches: once no count is off by n/2, no median search
    # turns away from every row, so each final interval holds a point of its column's range
    # and its midpoint is within half the interval's width of it. d = 128 searches at
    # rho = 0.001 over a domain 2000 wide: with all 40 real (or 11 integer) halvings, counts
    # have sd ~ 1600 (~ 840 integer) against n/2 = 2000, and searches end far outside the
    # data (as before the cap); reliable_search_steps stops them in time.
    from dpmean.accounting import PrivacyLedger
    from dpmean.engines import InMemoryEngine
    from dpmean.estimators.clipped import private_centre
    from dpmean.transforms import View

    rng = np.random.default_rng(4)
    x = np.round(rng.normal(size=(4000, 128)) * 3.0)  # integers, for the exact integer search
    lo, hi = np.full(128, -1000.0), np.full(128, 1000.0)
    most = integer_search_steps(lo, hi) if steps is None else steps
    halvings = reliable_search_steps(2000, 0.001 / 128, 0.05 / 128, most)
    half_width = 2001 / 2 ** (halvings + 1)
    engine = InMemoryEngine(x, lo, hi)
    for seed in range(5):
        centre = private_centre(engine, View(), lo, hi, steps=steps, rho=0.001,
                                ledger=PrivacyLedger.for_stages({"centre": 0.001}),
                                rng=np.random.default_rng(seed))
        outside = np.maximum(x.min(axis=0) - centre, centre - x.max(axis=0))
        assert np.all(outside <= half_width + 1)


def test_private_reach_holds_more_than_half_the_rows():
    # private_reach's contract, with probability 1 - beta per search: more than n/2 rows lie
    # within r, and the bottom of its last interval is below the (3n/4 + tau)-th norm (it went
    # right there). A small budget leaves few halvings, a large one many; both must hold.
    from dpmean.accounting import PrivacyLedger
    from dpmean.engines import InMemoryEngine
    from dpmean.estimators.clipped import private_reach
    from dpmean.transforms import View

    rng = np.random.default_rng(6)
    x = rng.normal(size=(2000, 16)) * rng.uniform(0.5, 3.0, size=(2000, 1))
    norms = np.sort(np.linalg.norm(x, axis=1))
    engine = InMemoryEngine(x, np.full(16, -30.0), np.full(16, 30.0))
    top, beta = 30.0 * np.sqrt(16), 1e-3
    for rho, seeds in ((3e-4, range(40)), (1.0, range(40, 60))):
        steps = reliable_search_steps(500.0, rho, beta, 20)
        tau = rank_error_bound(steps, rho, beta)
        assert 1 < steps and (steps < 20) == (rho < 1)
        for seed in seeds:
            ledger = PrivacyLedger.for_stages({"centre domain": rho})
            nearest, r = private_reach(engine, [(View(), top)], steps=20, rho=rho,
                                       ledger=ledger, rng=np.random.default_rng(seed),
                                       beta=beta)
            assert nearest == 0
            assert np.count_nonzero(norms <= r) > 1000
            assert np.count_nonzero(norms <= r - top / 2**steps) < 1500 + tau
            assert ledger.spent == {"centre domain": rho}
    # With the large budget the answer is close to the 3n/4-th norm, not just somewhere above
    # the median: within tau = 3.3 ranks, at a resolution of top / 2**20.
    assert norms[1500 - 10] < r < norms[1500 + 10]


def test_private_reach_keeps_the_anchor_the_rows_lie_nearest():
    # Rows in [0, 100]^8 in the box (0, 10^12)^8: from the box's middle every row lies about
    # 5e11 sqrt(8) away, from the origin within 100 sqrt(8). Two searches of rho / 2 each,
    # charged once; the origin's reach is about the 3n/4-th norm (4 ranks at this budget).
    from dpmean.accounting import PrivacyLedger
    from dpmean.engines import InMemoryEngine
    from dpmean.estimators.clipped import private_reach
    from dpmean.transforms import View

    x = np.random.default_rng(2).uniform(0.0, 100.0, size=(2000, 8))
    lo, hi = np.zeros(8), np.full(8, 1e12)
    engine = InMemoryEngine(x, lo, hi)
    mid = View().with_shift((lo + hi) / 2.0)
    anchors = [(mid, float(np.linalg.norm(hi - lo)) / 2.0),
               (View(), float(np.linalg.norm(hi)))]
    norms = np.sort(np.linalg.norm(x, axis=1))
    for seed in range(10):
        ledger = PrivacyLedger.for_stages({"centre domain": 1.0})
        nearest, r = private_reach(engine, anchors, steps=20, rho=1.0, ledger=ledger,
                                   rng=np.random.default_rng(seed))
        assert nearest == 1
        assert norms[1500 - 10] < r < norms[1500 + 10] * (1 + 2.0**-10)
        assert ledger.spent == {"centre domain": 1.0}


def test_private_reach_asks_one_question_where_its_searches_cannot_halve():
    # n = 200, rho = 0.004: each anchor's search (rho / 2) could make one reliable halving
    # (steps 2 would need tau < n/4 = 50 at rho / 2 and beta / 2: tau = 56), so both answered
    # their top and the tie went to the box's middle whatever the rows. Given the anchors'
    # distance, the second anchor's count is asked at apart / 2, and the larger count keeps its
    # anchor: rows at one anchor win by n = 200 against a difference of sd sqrt(2 / rho) = 22
    # (9 sd). Each r is a top or the point where its count passed 3n/4 (3.2 sd here: either).
    from dpmean.accounting import PrivacyLedger
    from dpmean.engines import InMemoryEngine
    from dpmean.estimators.clipped import private_reach
    from dpmean.transforms import View

    n, rho, lo, hi = 200, 0.004, np.zeros(10), np.full(10, 1e6)
    assert reliable_search_steps(n / 4.0, rho / 2, 0.05 / 2, 20) == 1
    mid = (lo + hi) / 2.0
    top_mid, apart = float(np.linalg.norm(hi - lo)) / 2.0, float(np.linalg.norm(mid))
    top_origin = float(np.linalg.norm(hi))
    anchors = [(View().with_shift(mid), top_mid), (View(), top_origin)]
    rng = np.random.default_rng(4)
    for centre, nearest, reaches in ((100.0, 1, (apart / 2.0, top_origin)),
                                     (5e5, 0, (top_mid / 2.0, top_mid))):
        engine = InMemoryEngine(rng.normal(centre, 1.0, size=(n, 10)), lo, hi)
        answers = []
        for seed in range(20):
            ledger = PrivacyLedger.for_stages({"centre domain": rho})
            answers.append(private_reach(engine, anchors, steps=20, rho=rho, ledger=ledger,
                                         rng=np.random.default_rng(seed), apart=apart))
            assert ledger.spent == {"centre domain": rho}
        assert {index for index, _ in answers} == {nearest}
        assert {r for _, r in answers} <= set(reaches)
        assert sum(r == reaches[0] for _, r in answers) >= 15
    # Without the distance: the two searches, whose tie keeps the middle whatever the rows.
    engine = InMemoryEngine(rng.normal(100.0, 1.0, size=(n, 10)), lo, hi)
    answers = {private_reach(engine, anchors, steps=20, rho=rho,
                             ledger=PrivacyLedger.for_stages({"centre domain": rho}),
                             rng=np.random.default_rng(seed))[0] for seed in range(20)}
    assert 0 in answers


def test_privquant_vectorised_matches_independent_searches():
    rng = np.random.default_rng(3)
    data = rng.normal(loc=[0.0, 5.0, -3.0], size=(3000, 3))
    count = lambda t: np.count_nonzero(data <= t, axis=0)  # noqa: E731
    medians = private_quantile_real(count, 1500, np.full(3, -20.0), np.full(3, 20.0), steps=20,
                                    rho_per_search=10.0, rng=rng, **stage())
    np.testing.assert_allclose(medians, np.median(data, axis=0), atol=0.05)


@pytest.mark.parametrize("table_counts,width", [(7, 1), (30, 7), (3 << 20, (1 << 20) - 1)],
                         ids=["1-level", "3-levels", "one-table"])
@pytest.mark.parametrize("secure", [False, True])
def test_privquant_from_count_tables_is_the_same_release(table_counts, width, secure,
                                                         monkeypatch):
    # A search reading its counts from tables (several halvings a pass) asks the same counts,
    # so it draws the same noise and ends at the same point: tables of 1 and 3 levels over 3
    # searches, and one table for all 20 halvings. The searches include an empty interval and
    # one so narrow that its midpoints stop moving (floats between 1 and 1 + 2^-40).
    from dpmean.mechanisms import quantiles

    monkeypatch.setattr(quantiles, "TABLE_COUNTS", table_counts)
    rng = np.random.default_rng(9)
    data = np.column_stack([rng.normal(size=2000), rng.integers(0, 3, size=2000),
                            1.0 + rng.integers(0, 4, size=2000) * 2.0**-42])
    lo, hi = np.array([-8.0, 2.0, 1.0]), np.array([8.0, 2.0, 1.0 + 2.0**-40])
    count = lambda t: np.count_nonzero(data <= t, axis=0)  # noqa: E731
    columns = np.sort(data, axis=0)
    widths = []

    def table(edges):
        widths.append(edges.shape[1])
        return np.stack([np.searchsorted(columns[:, j], edges[j], side="right")
                         for j in range(3)])

    def search(**extra):
        generator = np.random.default_rng(4)
        found = quantiles.real_search(count, 1000, lo, hi, steps=20, rho_per_search=50.0,
                                      rng=generator, secure=secure, **extra)
        return found, generator.random()

    plain, after_plain = search()
    tabled, after_tabled = search(count_table=table)
    np.testing.assert_array_equal(tabled, plain)
    assert after_tabled == after_plain  # the same number of draws
    levels = int(np.log2(width + 1))
    assert widths == [width] * (20 // levels) + ([(1 << 20 % levels) - 1] if 20 % levels else [])


def test_reachable_midpoints_are_the_searchs_midpoints():
    from dpmean.mechanisms.quantiles import _INTEGER, _REAL, reachable_midpoints

    left, right = np.array([0.0, -1.0]), np.array([8.0, 0.2])
    mids = reachable_midpoints(_REAL, left, right, 3)
    # Heap order: the root, its two halves, their four.
    np.testing.assert_array_equal(mids[0], [4, 2, 6, 1, 3, 5, 7])
    # The right half [-0.4, 0.2] and its left half [-0.4, -0.1], as the search computes them.
    root = (-1.0 + 0.2) / 2.0
    assert mids[1, 2] == (root + 0.2) / 2.0
    assert mids[1, 5] == (root + (root + 0.2) / 2.0) / 2.0
    # Algorithm 1 on [0, 5]: mid 2, then [0, 2] (mid 1) or [3, 5] (mid 4), and so on; [0, 0]
    # is finished and asks about 0 again.
    mids = reachable_midpoints(_INTEGER, np.array([0, 0]), np.array([5, 0]), 3)
    np.testing.assert_array_equal(mids, [[2, 1, 4, 0, 2, 3, 5], [0] * 7])


@pytest.mark.parametrize("table_counts", [7, 30])
def test_integer_privquant_from_count_tables_is_the_same_release(table_counts, monkeypatch):
    # Algorithm 1's integer search, whose searches finish at different halvings: the same.
    from dpmean.mechanisms import quantiles

    monkeypatch.setattr(quantiles, "TABLE_COUNTS", table_counts)
    rng = np.random.default_rng(10)
    data = np.column_stack([rng.integers(-300, 700, size=2000), rng.integers(0, 3, size=2000),
                            np.full(2000, 4)])
    lo, hi = np.array([-1000, 0, 0]), np.array([1000, 6, 4])
    count = lambda t: np.count_nonzero(data <= t, axis=0)  # noqa: E731
    columns = np.sort(data, axis=0)

    def table(edges):
        assert np.all(np.diff(edges, axis=1) >= 0)
        return np.stack([np.searchsorted(columns[:, j], edges[j], side="right")
                         for j in range(3)])

    def search(**extra):
        generator = np.random.default_rng(4)
        found = private_quantile_integer(count, 1000, lo, hi, rho_per_search=50.0,
                                         rng=generator, **stage(), **extra)
        return found, generator.random()

    plain, after_plain = search()
    np.testing.assert_allclose(plain, np.median(data, axis=0), atol=3)
    assert search(count_table=table) == (pytest.approx(plain, abs=0), after_plain)


def test_privquant_rejects_bad_parameters():
    count = lambda t: np.zeros(1)  # noqa: E731
    with pytest.raises(InvalidParameterError):
        private_quantile_real(count, 1, np.zeros(1), np.ones(1), steps=0, rho_per_search=1.0,
                              rng=np.random.default_rng(0), **stage())
    with pytest.raises(InvalidParameterError):
        private_quantile_integer(count, 1, np.zeros(1), np.ones(1), rho_per_search=-1.0,
                                 rng=np.random.default_rng(0), **stage())


def test_secure_gaussian_mechanism_releases_on_a_grid_with_the_right_spread():
    rng = np.random.default_rng(4)
    value = np.linspace(-3.0, 3.0, 4000)
    out = gaussian_mechanism(value, 2.0, 0.5, rng, secure=True, **stage())
    # gamma = 2^floor(log2(1e-3 * 2 / (2 sqrt(4000)))): every output is an exact multiple of it.
    gamma = 2.0 ** np.floor(np.log2(1e-3 * 2.0 / (2 * np.sqrt(4000))))
    np.testing.assert_array_equal(out / gamma, np.rint(out / gamma))
    # Noise std: (Delta + gamma sqrt(k)) / sqrt(2 rho) = 2.002 (discrete Gaussian variance is
    # within 1e-9 of sigma^2 at this width). The sample variance of 4000 draws has relative
    # standard error sqrt(2/4000) = 2.2%; allow 5 of them.
    sigma = (2.0 + gamma * np.sqrt(4000)) / 1.0
    assert abs(np.var(out - value) / sigma**2 - 1) < 5 * np.sqrt(2 / 4000)


def test_secure_privquant_finds_the_median():
    rng = np.random.default_rng(5)
    data = rng.normal(size=(2000, 2))
    count = lambda t: np.count_nonzero(data <= t, axis=0)  # noqa: E731
    found = private_quantile_real(count, 1000, np.full(2, -8.0), np.full(2, 8.0), steps=12,
                                  rho_per_search=5.0, rng=rng, secure=True, **stage())
    # Counts noised with std sqrt(12 / 10) ~ 1.1 ranks: the result is within a few ranks of the
    # median, i.e. within 0.05 here (density ~0.4 * 2000 = 800 rows per unit).
    np.testing.assert_allclose(found, np.median(data, axis=0), atol=0.05)


def test_symmetric_gaussian_mechanism_noise():
    from dpmean.mechanisms import symmetric_gaussian_mechanism

    value = np.diag(np.arange(40.0))
    out = symmetric_gaussian_mechanism(value, 2.0, 0.5, np.random.default_rng(3), **stage())
    np.testing.assert_array_equal(out, out.T)
    # The 820 entries on and above the diagonal are i.i.d. N(0, Delta^2 / (2 rho)) = N(0, 4).
    # Their sample variance has relative sd sqrt(2 / 820) = 0.049; 4 sd = 0.2 still catches a
    # std off by 10% (variance off by 21%). The KS test checks the shape.
    noise = (out - value)[np.triu_indices(40)]
    assert abs(np.mean(noise**2) / 4.0 - 1.0) < 0.2
    assert stats.kstest(noise, stats.norm(scale=2.0).cdf).pvalue > 1e-3
    with pytest.raises(InvalidParameterError, match="square"):
        symmetric_gaussian_mechanism(np.ones((2, 3)), 1.0, 1.0, np.random.default_rng(0), **stage())
