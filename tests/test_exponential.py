"""The exponential-mechanism quantile: exact output distribution, privacy ratio, numerics."""

import numpy as np
import pytest
from ledgers import stage
from scipy.stats import chisquare

from dpmean.accounting import PrivacyLedger
from dpmean.errors import InvalidParameterError
from dpmean.mechanisms import exponential_epsilon, exponential_quantile


def gap_probabilities(values, q, lo, hi, eps, sensitivity=1.0):
    """Exact probabilities of the n + 1 gaps, then of the atoms at lo and at hi (n + 3
    outcomes), from the mechanism's definition: base measure Lebesgue on [lo, hi] plus mass
    (hi - lo) / (n + 1) at each end, utility -dist(q n, [#{x < t}, #{x <= t}])."""
    n, target = len(values), q * len(values)
    edges = np.concatenate([[lo], np.clip(np.sort(values), lo, hi), [hi]])
    widths = np.diff(edges)
    utility = -np.abs(np.arange(n + 1) - target)
    at_lo, at_hi = np.sum(np.asarray(values) <= lo), np.sum(np.asarray(values) >= hi)
    atom_utility = np.array([-max(0.0, target - at_lo), -max(0.0, n - at_hi - target)])
    weights = np.concatenate([widths, np.full(2, (hi - lo) / (n + 1))]) * np.exp(
        eps * np.concatenate([utility, atom_utility]) / (2.0 * sensitivity))
    return edges, weights / weights.sum()


def sample(values, q, lo, hi, rho, draws, seed, sensitivity=1.0):
    # One call with `draws` identical columns: the mechanism is vectorised over columns.
    tiled = np.tile(np.sort(values)[:, None], (1, draws))
    return exponential_quantile(tiled, q, lo, hi, rho=rho, rng=np.random.default_rng(seed),
                                sensitivity=sensitivity, **stage())


@pytest.mark.parametrize("q,sensitivity", [(0.5, 1.0), (0.25, 1.0), (0.5, 2.0)])
def test_output_distribution_matches_exact_probabilities(q, sensitivity):
    values = np.array([0.0, 1.0, 1.0, 3.0, 3.5])
    lo, hi, rho = -1.0, 5.0, 0.125  # eps = 1
    edges, probs = gap_probabilities(values, q, lo, hi, 1.0, sensitivity)
    gaps, atoms = probs[:-2], probs[-2:]
    draws = 40_000
    out = sample(values, q, lo, hi, rho, draws, seed=7, sensitivity=sensitivity)
    # The tie at 1.0 is a zero-width gap: probability exactly 0, so no output equals 1.0
    # (a uniform draw inside a neighbouring gap hits it with probability 0 too).
    assert not np.any(out == 1.0)
    assert np.all((out >= lo) & (out <= hi))
    # Bins: each positive-width gap split in halves, each half with probability p_i / 2
    # (the output is uniform inside its gap), and the atoms: outputs exactly lo and hi. A
    # chi-square test at level 1e-4 with 40,000 draws detects any error in the exponent (a
    # factor 2, as the add/remove sensitivity max(q, 1-q) = 1/2 would give, moves some bins by
    # > 10 %, i.e. > 20 standard deviations).
    keep = gaps > 0
    lefts, rights = edges[:-1][keep], edges[1:][keep]
    cuts = np.sort(np.concatenate([lefts, (lefts + rights) / 2, [hi]]))
    inner = out[(out != lo) & (out != hi)]
    observed = np.concatenate([np.histogram(inner, bins=cuts)[0],
                               [np.sum(out == lo), np.sum(out == hi)]])
    expected = np.concatenate([np.repeat(gaps[keep] / 2, 2), atoms]) * draws
    assert chisquare(observed, expected).pvalue > 1e-4


def output_density(values, q, lo, hi, eps, t):
    """The output's density at the points t inside (lo, hi), then its masses at lo and hi."""
    edges, probs = gap_probabilities(values, q, lo, hi, eps)
    widths = np.diff(edges)
    gap = np.searchsorted(edges, t, side="right") - 1
    return np.concatenate([probs[gap] / widths[gap], probs[-2:]])


def test_density_ratio_of_replace_one_neighbours_is_at_most_e_to_the_eps():
    """The stated sensitivity (1 under replace-one) makes the mechanism eps-DP: on any grid
    point the densities of neighbouring inputs differ by a factor of at most e^eps."""
    rng = np.random.default_rng(3)
    eps, lo, hi = 0.7, 0.0, 10.0
    grid = np.linspace(0.013, 9.987, 997)  # avoids the integer data values below
    worst = 0.0
    for _ in range(300):
        values = rng.integers(0, 11, size=9).astype(float)
        other = values.copy()
        other[rng.integers(9)] = rng.integers(0, 11)
        q = rng.choice([0.1, 0.5, 0.9])
        ratio = np.log(output_density(values, q, lo, hi, eps, grid)
                       / output_density(other, q, lo, hi, eps, grid))
        worst = max(worst, np.abs(ratio).max())
    assert worst <= eps + 1e-9
    assert worst > 0.5 * eps  # the bound is approached: the test can fail


def test_vectorised_columns_use_their_own_bounds_and_concentrate_at_high_budget():
    rng = np.random.default_rng(0)
    x = np.sort(rng.normal([0.0, 100.0, -5.0], [1.0, 10.0, 0.1], size=(50_001, 3)), axis=0)
    lo, hi = np.array([-10.0, 0.0, -6.0]), np.array([10.0, 200.0, -4.0])
    out = exponential_quantile(x, 0.5, lo, hi, rho=50.0, rng=rng, **stage())
    # eps = 20: ranks more than ~ (2/eps) ln(n) = 1.1 away from the median are exponentially
    # unlikely; the order statistics within 10 ranks of the median differ from it by < 0.01 sd.
    median = x[25_000]
    assert np.all(np.abs(out - median) < 0.01 * np.array([1.0, 10.0, 0.1]))


def test_all_values_tied_never_produces_nan_and_avoids_zero_width_gaps():
    values = np.zeros((1000, 2000))
    out = exponential_quantile(values, 0.5, -1.0, 1.0, rho=1e4, rng=np.random.default_rng(1),
                               **stage())
    assert np.isfinite(out).all()
    # Only the outer gaps have width; each is equally likely for the median.
    assert not np.any(out == 0.0)
    assert 0.45 < np.mean(out > 0) < 0.55  # 2000 fair coins: sd 0.011


def test_values_outside_the_interval_are_clamped():
    values = np.array([[-50.0], [0.5], [70.0]])
    out = exponential_quantile(values, 0.5, 0.0, 1.0, rho=1.0, rng=np.random.default_rng(2),
                               **stage())
    assert 0.0 <= out[0] <= 1.0


def test_epsilon_and_parameter_checks():
    assert exponential_epsilon(0.125) == pytest.approx(1.0)
    with pytest.raises(InvalidParameterError):
        exponential_quantile(np.zeros(3), 1.5, 0.0, 1.0, rho=1.0, rng=np.random.default_rng(),
                             **stage())
    with pytest.raises(InvalidParameterError):
        exponential_quantile(np.zeros(3), 0.5, 1.0, 1.0, rho=1.0, rng=np.random.default_rng(),
                             **stage())
    with pytest.raises(InvalidParameterError):
        exponential_quantile(np.zeros(3), 0.5, 0.0, 1.0, rho=0.0, rng=np.random.default_rng(),
                             **stage())


# The sampler weighs only the gaps near the target exactly and the rest by rejection
# (mechanisms.exponential._draw). These tests check the gap probabilities it produces against
# the exact pmf, with the window forced small so that the rejection branch runs often.
TIES_AND_OUTLIERS = np.array([-3.0, -0.5, 0.0, 0.0, 0.0, 0.2, 0.4, 0.4, 0.7, 1.0, 1.1, 1.3, 1.3,
                              1.6, 2.0, 2.2, 2.5, 2.5, 2.5, 2.9, 3.0, 3.3, 3.6, 3.9, 4.2, 4.4,
                              4.8, 5.5, 7.0, 12.0])  # n = 30; lo, hi below clamp 3 of them


def gap_counts(out, values, lo, hi):
    """How many outputs fell in each of the n + 1 gaps (a tie's zero-width gaps get none: an
    output on a tied value is counted in the positive-width gap to its right), then how many
    were exactly lo and exactly hi (the atoms; a draw inside a gap is never an end)."""
    edges = np.concatenate([[lo], np.clip(np.sort(values), lo, hi), [hi]])
    inner = out[(out != lo) & (out != hi)]
    gap = np.searchsorted(edges, inner, side="right") - 1
    return np.concatenate([np.bincount(np.minimum(gap, len(values)),
                                       minlength=len(values) + 1),
                           [np.sum(out == lo), np.sum(out == hi)]])


def chi_square_pvalue(counts, probs):
    """Chi-square of gap counts against a pmf; gaps expected fewer than 20 times are pooled
    into one bin (zero-probability gaps must be empty: checked by the caller)."""
    expected = probs * counts.sum()
    small = expected < 20
    observed, expected = counts[~small], expected[~small]
    if probs[small].sum() > 0:
        observed = np.append(observed, counts[small].sum())
        expected = np.append(expected, probs[small].sum() * counts.sum())
    return chisquare(observed, expected).pvalue


@pytest.mark.parametrize("q,half_width", [(0.5, None), (0.5, 2), (0.2, 3), (0.9, 1)])
def test_gap_probabilities_with_ties_outliers_and_small_windows(q, half_width, monkeypatch):
    from dpmean.mechanisms import exponential as module

    if half_width is not None:  # forces the rejection branch on both sides of the window
        monkeypatch.setattr(module, "window_half_width", lambda n, decay: half_width)
    lo, hi, rho, draws = -1.0, 6.0, 0.125, 40_000  # eps = 1
    shuffled = np.random.default_rng(5).permutation(TIES_AND_OUTLIERS)
    out = exponential_quantile(np.tile(shuffled[:, None], (1, draws)), q, lo, hi, rho=rho,
                               rng=np.random.default_rng(17), **stage())
    assert np.all((out >= lo) & (out <= hi))
    counts = gap_counts(out, shuffled, lo, hi)
    _, probs = gap_probabilities(shuffled, q, lo, hi, 1.0)
    assert counts[probs == 0].sum() == 0  # ties: zero-width gaps are never chosen
    # Level 1e-4 against the exact pmf. Power against an exponent only 10 % off (eps = 1.1):
    # the chi-square's noncentrality N sum (p - p')^2 / p is at least 167 for these four
    # settings at N = 40,000 draws (11-21 pooled degrees of freedom), so a sampler that far off
    # passes at level 1e-4 with probability below 1e-13 (noncentral chi-square). (It was
    # 200,000 draws against eps = 2, a pmf dozens of standard deviations away.)
    assert chi_square_pvalue(counts, probs) > 1e-4
    _, wrong = gap_probabilities(shuffled, q, lo, hi, 1.1)
    assert chi_square_pvalue(counts, wrong) < 1e-4


def test_rejection_branch_is_taken_and_outside_gaps_are_drawn(monkeypatch):
    from dpmean.mechanisms import exponential as module

    calls = []
    original = module._outside_regions

    def counting(rows, keys, *args):
        calls.extend(side for _, side in keys)
        return original(rows, keys, *args)

    monkeypatch.setattr(module, "window_half_width", lambda n, decay: 2)
    monkeypatch.setattr(module, "_outside_regions", counting)
    lo, hi = -1.0, 6.0
    out = exponential_quantile(np.tile(TIES_AND_OUTLIERS[:, None], (1, 2000)), 0.5, lo, hi,
                               rho=0.125, rng=np.random.default_rng(2), **stage())
    assert {0, 1} <= set(calls)  # both sides were sorted on demand
    edges = np.clip(np.sort(TIES_AND_OUTLIERS), lo, hi)
    assert np.any(out < edges[13]) and np.any(out > edges[17])  # outputs outside the window


def test_outside_regions_together_are_each_region_alone():
    # All regions of an attempt are computed at once; each must hold the numbers of computing
    # it alone with numpy (the sampler's former form), bit for bit: the gaps of positive width
    # (ties and values clipped together give none), their left edges and widths, the running
    # totals of exp(log weight - the region's largest) and the log of the exact total.
    from dpmean.mechanisms import exponential as module

    rng = np.random.default_rng(12)
    n, k = 400, 7
    values = np.sort(np.round(rng.standard_cauchy(size=(k, n)), 1), axis=1)
    values[2] = 0.0  # all tied: each side has one gap of width, the one at the box's end
    lo, hi = np.full(k, -3.0), np.linspace(2.0, 30.0, k)
    window, target, decay = (150, 260), 0.4 * n, 0.07
    rows = module._SortedWindow.of_sorted(values, window)
    keys = [(r, side) for r in range(k) for side in (0, 1)]
    got = module._outside_regions(rows, keys, lo, hi, target, decay, window)
    first, last = window
    for row, side in keys:
        if side == 0:
            edges = np.concatenate([[lo[row]], np.clip(values[row, :first], lo[row], hi[row])])
            ranks = np.arange(first)
        else:
            edges = np.concatenate([np.clip(values[row, last:], lo[row], hi[row]), [hi[row]]])
            ranks = np.arange(last + 1, n + 1)
        widths = np.diff(edges)
        wide = np.flatnonzero(widths > 0.0)
        log_weights = np.log(widths[wide]) - decay * np.abs(ranks[wide] - target)
        totals = np.cumsum(np.exp(log_weights - log_weights.max()))
        starts, sizes, running, log_total = got[row, side]
        np.testing.assert_array_equal(starts, edges[wide])
        np.testing.assert_array_equal(sizes, widths[wide])
        np.testing.assert_array_equal(running, totals)
        assert log_total == log_weights.max() + np.log(totals[-1])


def test_outside_regions_of_byte_runs_are_those_of_the_positions():
    # A column of bytes read as one run per byte (CountedOrder.runs) gives the regions of the
    # same column read position by position, bit for bit: byte values that map to the same
    # number (the floor), runs cut by the window's edges, bytes clipped by the box.
    from dpmean.engines.counted_order import CountedOrder
    from dpmean.mechanisms import exponential as module

    rng = np.random.default_rng(3)
    k, n = 6, 900
    counts = rng.multinomial(n, rng.dirichlet(np.full(256, 0.05), size=k)[0], size=k)
    counts[1] = 0
    counts[1, 0] = n  # one byte: every position tied
    table = np.log(np.maximum(np.arange(256.0) ** 2 / 2.0, 3.0))[:, None] * np.linspace(
        1.0, 2.0, k)
    order = CountedOrder(counts, table)
    expanded = order.positions(0, n, slice(0, k))
    window = (300, 520)
    lo, hi = np.full(k, np.log(3.0)), np.full(k, 9.0)  # hi cuts the largest values
    by_runs = module._SortedWindow(expanded[:, 299:521], 299, n,
                                   lambda row, a, b: order.runs(a, b, row))
    by_positions = module._SortedWindow.of_sorted(expanded, window)
    # The sides with a gap of positive width (the sampler asks for no other).
    keys = [(row, side) for row in range(k) for side in (0, 1)
            if (expanded[row, window[0] - 1] > lo[row] if side == 0
                else expanded[row, window[1]] < hi[row])]
    assert {side for _, side in keys} == {0, 1}
    got = module._outside_regions(by_runs, keys, lo, hi, 0.45 * n, 0.02, window)
    want = module._outside_regions(by_positions, keys, lo, hi, 0.45 * n, 0.02, window)
    for key in keys:
        for a, b in zip(got[key], want[key], strict=True):
            np.testing.assert_array_equal(a, b)


def test_output_does_not_depend_on_row_order_and_input_is_not_written():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(20_000, 5))
    x_sorted = np.sort(x, axis=0)
    fortran = np.asfortranarray(x)
    before = fortran.copy()
    for rho in (1e-4, 1.0, 1e3):  # windows from all ranks to a few
        expected = exponential_quantile(x_sorted, 0.3, -4.0, 4.0, rho=rho,
                                        rng=np.random.default_rng(9), **stage())
        got = exponential_quantile(fortran, 0.3, -4.0, 4.0, rho=rho,
                                   rng=np.random.default_rng(9), **stage())
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(fortran, before)


def test_blocks_of_whole_draw_units_draw_what_one_call_draws(monkeypatch):
    from dpmean.mechanisms import exponential as module

    monkeypatch.setattr(module, "_BLOCK_VALUES", 3 * 1002)  # 3 columns per draw for n = 1000
    monkeypatch.setattr(module, "window_half_width", lambda n, decay: 4)  # rejections too
    x = np.random.default_rng(6).standard_cauchy(size=(1000, 10))
    whole = exponential_quantile(x, 0.5, -5.0, 5.0, rho=0.01, rng=np.random.default_rng(1),
                                 **stage())
    rng = np.random.default_rng(1)
    parts = [exponential_quantile(x[:, cols], 0.5, -5.0, 5.0, rho=0.01, rng=rng, **stage())
             for cols in (slice(0, 6), slice(6, 9), slice(9, 10))]
    np.testing.assert_array_equal(np.concatenate(parts), whole)


def test_a_window_of_tied_values_draws_outside_it_with_the_exact_probabilities(monkeypatch):
    # Every gap within 2 ranks of the median lies between two copies of 1.0 (width 0): the
    # window's weight is 0, so every draw comes from LEFT or RIGHT, by rejection.
    from dpmean.mechanisms import exponential as module

    monkeypatch.setattr(module, "window_half_width", lambda n, decay: 2)
    values = np.concatenate([[-0.5, 0.1, 0.3, 0.6], np.ones(23), [2.0, 3.0, 4.5, 5.5]])
    lo, hi, draws = -1.0, 6.0, 20_000
    shuffled = np.random.default_rng(1).permutation(values)
    out = exponential_quantile(np.tile(shuffled[:, None], (1, draws)), 0.5, lo, hi, rho=0.125,
                               rng=np.random.default_rng(3), **stage())
    counts = gap_counts(out, shuffled, lo, hi)
    _, probs = gap_probabilities(shuffled, 0.5, lo, hi, 1.0)
    assert counts[probs == 0].sum() == 0
    assert chi_square_pvalue(counts, probs) > 1e-4
    _, wrong = gap_probabilities(shuffled, 0.5, lo, hi, 2.0)
    assert chi_square_pvalue(counts, wrong) < 1e-12


@pytest.mark.parametrize("first,last", [(0, 40), (0, 12), (7, 40), (7, 30), (3, 3)])
def test_compiled_window_weights_are_numpys_bits(first, last):
    # The sampler's running weights (exponential_kernels.window_weights) against the numpy
    # steps they replaced, bit for bit: windows reaching either end (lo, hi as edges) or
    # neither, values outside [lo, hi] (clamped), a row of ties (span 0 -> 1).
    from dpmean.mechanisms.exponential_kernels import first_above, window_weights

    n, rng = 40, np.random.default_rng(4)
    rows = np.sort(rng.normal(0.0, 2.0, size=(5, n)), axis=1)
    rows[3] = 0.5
    lo, hi = np.full(5, -3.0), np.r_[3.0, 3.0, 3.0, 3.0, 0.5]
    start, stop = max(first - 1, 0), min(last, n - 1) + 1
    inside = np.ascontiguousarray(rows[:, start:stop])
    factors = np.exp(-0.3 * np.abs(np.arange(first, last + 1) - 20.0))
    edges = np.concatenate(([lo[:, None]] if first == 0 else [])
                           + [np.clip(inside, lo[:, None], hi[:, None])]
                           + ([hi[:, None]] if last == n else []), axis=1)
    span = edges[:, -1] - edges[:, 0]
    span[span == 0.0] = 1.0
    expected = np.cumsum(np.diff(edges, axis=1) * factors / span[:, None], axis=1)
    out, edge_first, edge_last = np.empty((5, last - first + 1)), np.empty(5), np.empty(5)
    window_weights(inside, lo, hi, factors, first == 0, last == n, out, edge_first,
                   edge_last, 0, 5)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(edge_first, edges[:, 0])
    np.testing.assert_array_equal(edge_last, edges[:, -1])
    u = rng.uniform(size=5)
    every = np.arange(5)
    np.testing.assert_array_equal(first_above(out, every, u),
                                  np.count_nonzero(out <= (u * out[:, -1])[:, None], axis=1))


@pytest.mark.parametrize("q,end", [(0.75, 0.5), (0.2, 0.0)])
def test_a_target_inside_a_run_tied_at_an_end_releases_that_end(q, end):
    """Pair values of a fair coin: half 0, half 1/2, the domain [0, 1/2]. The upper quartile
    lies inside the run at 1/2, the 20% quantile inside the run at 0: every gap there has width
    0, and the draw fell in the one gap of positive width, (0, 1/2), far in rank from either
    (PLAN's spread of the coin came out near 0). The ends are atoms of the base measure now:
    at eps = 20 (rho = 50) every draw is the end whose run holds the target."""
    values = np.repeat([0.0, 0.5], 500)
    out = exponential_quantile(np.tile(values[:, None], (1, 200)), q, 0.0, 0.5, rho=50.0,
                               rng=np.random.default_rng(0), **stage())
    assert np.all(out == end)


def test_plan_releases_a_fair_coin_at_large_budgets():
    """0/1 columns at rho = 10^6 (a stress trial): PLAN released 0.26 for a coin whose mean
    is 0.495, at any rho from 3 up, since its private spreads and clipping radius landed in the
    gaps beside runs of ties. With the ends as atoms the error falls with the budget: at
    rho = 10^6 the noise is ~1e-6 and no row is clipped."""
    import dpmean

    x = np.random.default_rng(24).random((10_000, 3)) < 0.5
    for rho in (10.0, 1e6):
        got = dpmean.mean(x, method="plan", rho=rho, bounds=(0, 1), random_state=0).mean
        assert np.abs(got - x.mean(axis=0)).max() < (1e-2 if rho == 10.0 else 1e-4), rho


def test_a_domain_whose_width_overflows_is_refused_not_looped():
    """(-1e308, 1e308): finite ends, infinite width; the ends' atoms weighed inf and the
    sampler retried for ever (the final review). Refused now."""
    with pytest.raises(InvalidParameterError, match="finite width"):
        exponential_quantile(np.zeros((5, 1)), 0.5, -1e308, 1e308, rho=1.0,
                             rng=np.random.default_rng(0), **stage())


@pytest.mark.parametrize("n, top", [(5, 1e-323), (5, 5e-324), (10**4, 1e-306)])
def test_a_domain_too_narrow_for_its_atoms_is_refused_before_the_charge(n, top):
    """(0, 1e-323): the ends' atoms, (hi - lo) / (n + 1), underflowed to 0, their logs to
    -inf, the weights to NaN, and the sampler looped for ever after charging (a review). Now
    refused from the public domain and n, with nothing charged."""
    ledger = PrivacyLedger.for_stages({"q": 1.0})
    with pytest.raises(InvalidParameterError, match="smallest normal double"):
        exponential_quantile(np.zeros(n), 0.5, 0.0, top, rho=1.0,
                             rng=np.random.default_rng(0), ledger=ledger, stage="q")
    assert not ledger.spent
