"""Local and shuffle protocols (IOME section 5): each randomiser's output distribution against its
claimed guarantee, the privacy arithmetic, range counting, summation, and the estimators."""

import itertools
import math
import warnings

import numpy as np
import pytest
import scipy.sparse

import dpmean
from dpmean.accounting import PrivacyLedger, approx_dp_to_zcdp, zcdp_to_approx_dp
from dpmean.audit import epsilon_lower_bound
from dpmean.errors import InvalidDataError, InvalidParameterError
from dpmean.protocols.composition import (
    advanced_composition,
    local_epsilon_for_shuffle,
    shuffle_amplified_epsilon,
    split_budget,
)
from dpmean.protocols.randomisers import (
    RoundBudget,
    additive_shares,
    hadamard_epsilon_for_zcdp,
    hadamard_response_zcdp,
    keep_probability,
    local_gaussian,
    polya_noise,
    summation_randomiser,
    unary_encoding,
)
from dpmean.protocols.range_counting import (
    HierarchicalHistogram,
    heaviest_buckets,
    quantiles_from_fractions,
)
from dpmean.protocols.shuffler import shuffle, summation_analyser

ALPHAS = 1.0 + np.logspace(-6, 3, 3000)


def charges(unit="epsilon"):
    """``ledger=``, ``stage=`` for one randomiser call outside a protocol: a fresh ledger in
    ``unit`` with one stage that any single charge fits."""
    return {"ledger": PrivacyLedger.for_stages({"test": 1e12}, unit), "stage": "test"}


def renyi_over_alpha(p, q):
    """sup_a D_a(p || q) / a over a fine grid, for two exact pmfs on the same outcomes."""
    p, q = np.asarray(p), np.asarray(q)
    log = np.log(p)[None, :] * ALPHAS[:, None] + np.log(q)[None, :] * (1 - ALPHAS[:, None])
    m = log.max(axis=1, keepdims=True)
    divergence = (np.log(np.exp(log - m).sum(axis=1)) + m[:, 0]) / (ALPHAS - 1)
    return float(np.max(divergence / ALPHAS))


def tree_pmf(tree, bucket, epsilon):
    """The exact pmf of ``HierarchicalHistogram.randomise`` over (level, index, bit)."""
    keep = keep_probability(epsilon)
    out = {}
    for level in range(1, tree.height + 1):
        size = tree.branching**level
        node = bucket // tree.branching ** (tree.height - level)
        for j in range(size):
            truth = -1 if bin(node & j).count("1") % 2 else 1
            for bit in (-1, 1):
                out[level, j, bit] = (keep if bit == truth else 1 - keep) / (tree.height * size)
    return out


def test_tree_randomiser_has_its_exact_pmf_and_guarantee():
    tree, epsilon, draws = HierarchicalHistogram(branching=2, height=2), 0.7, 200_000
    rng = np.random.default_rng(0)
    pmfs = {v: tree_pmf(tree, v, epsilon) for v in range(tree.buckets)}
    outcomes = sorted(pmfs[0])
    for v in (0, 3):
        messages = tree.randomise(np.full(draws, v), np.zeros(draws, int),
                                  RoundBudget(epsilon, "epsilon"), rng, **charges())
        seen = {o: 0 for o in outcomes}
        for o in zip(messages.level, messages.index, messages.bit, strict=True):
            seen[tuple(int(t) for t in o)] += 1
        for o in outcomes:
            p = pmfs[v][o]
            # A binomial count deviates from draws p by more than 5 standard deviations with
            # probability below 1e-6 per outcome.
            assert abs(seen[o] - draws * p) <= 5 * math.sqrt(draws * p * (1 - p)) + 1
    for v, w in itertools.permutations(range(tree.buckets), 2):
        p = np.array([pmfs[v][o] for o in outcomes])
        q = np.array([pmfs[w][o] for o in outcomes])
        # eps-LDP exactly (the bound is attained), and no more zCDP than Hadamard response.
        assert np.max(p / q) <= math.exp(epsilon) * (1 + 1e-12)
        assert renyi_over_alpha(p, q) <= hadamard_response_zcdp(epsilon) * (1 + 1e-9)
    assert np.isclose(np.max([pmfs[0][o] / pmfs[3][o] for o in outcomes]), math.exp(epsilon))


def test_hadamard_zcdp_is_the_exact_renyi_curve_and_inverts():
    for epsilon in (0.05, 0.3, 2.0):
        keep = keep_probability(epsilon)
        # Two Hadamard rows of size 4 agree on two indices and disagree on two.
        p = np.array([keep, 1 - keep] * 4) / 4
        q = np.array([keep, 1 - keep, keep, 1 - keep, 1 - keep, keep, 1 - keep, keep]) / 4
        exact = renyi_over_alpha(p, q)
        # The function's bound is rigorous (>=) and tight to the grid's resolution. (Up to
        # eps = 3 it is the exact supremum, the KL limit at a -> 1; this float reference's sum
        # at a = 1 + 1e-6 carries about 1e-7 of relative rounding, hence the 1e-6.)
        assert exact <= hadamard_response_zcdp(epsilon) * (1 + 1e-6)
        assert hadamard_response_zcdp(epsilon) <= exact * 1.01
        # Half the generic eps^2/2 for small eps.
        assert hadamard_response_zcdp(epsilon) < epsilon**2 / 2
    for rho in (1e-3, 0.05, 1.0):
        assert math.isclose(hadamard_response_zcdp(hadamard_epsilon_for_zcdp(rho)), rho,
                            rel_tol=1e-6)


def test_unary_encoding_pmf_is_eps_ldp_exactly():
    size, epsilon, draws = 3, 1.2, 100_000
    flip = 1 - keep_probability(epsilon / 2)
    patterns = list(itertools.product([False, True], repeat=size))

    def pmf(v):
        return np.array([math.prod((1 - flip) if b == (i == v) else flip
                                   for i, b in enumerate(pattern)) for pattern in patterns])

    rng = np.random.default_rng(1)
    bits = unary_encoding(np.full(draws, 1), size, RoundBudget(epsilon, "epsilon"), rng,
                          **charges())
    codes = bits @ (1 << np.arange(size)[::-1])
    counts = np.bincount(codes, minlength=2**size)
    expected = pmf(1) * draws
    # 5 standard deviations per outcome (see above).
    assert np.all(np.abs(counts - expected) <= 5 * np.sqrt(expected) + 1)
    ratios = [np.max(pmf(v) / pmf(w)) for v, w in itertools.permutations(range(size), 2)]
    assert np.isclose(max(ratios), math.exp(epsilon))


def test_unary_encoding_of_several_coordinates_draws_the_bits_of_one_call_each():
    """GRS KnownVar encodes a block of coordinates in one call (a call per coordinate took
    minutes at d = 10^5): the bits must be those of one call per coordinate, in order, from
    the same generator, so releases keep their seeds' values."""
    values = np.random.default_rng(0).integers(0, 7, (50, 9))
    budget = RoundBudget(1.0, "epsilon")
    together = unary_encoding(values, 7, budget, np.random.default_rng(5), **charges())
    rng = np.random.default_rng(5)
    apart = [unary_encoding(values[:, j], 7, budget, rng, **charges()) for j in range(9)]
    assert together.shape == (9, 50, 7)
    np.testing.assert_array_equal(together, np.stack(apart))


def test_local_gaussian_passes_the_audit_and_a_broken_copy_fails():
    rho, radius, draws, delta = 0.5, 1.0, 200_000, 1e-6
    rng = np.random.default_rng(2)
    epsilon = zcdp_to_approx_dp(rho, delta)
    def draw(value, sensitivity):
        return local_gaussian(np.full((draws, 1), value), sensitivity, RoundBudget(rho, "rho"),
                              rng, **charges("rho"))[:, 0]

    here, there = draw(-radius, 2 * radius), draw(radius, 2 * radius)
    assert epsilon_lower_bound(here, there, delta) <= epsilon
    # A copy that forgets the factor 2 of the replace-one sensitivity (2C, not C).
    broken_here, broken_there = draw(-radius, radius), draw(radius, radius)
    assert epsilon_lower_bound(broken_here, broken_there, delta) > epsilon


def test_polya_shares_sum_to_discrete_laplace():
    n, epsilon, sensitivity, trials = 50, 1.0, 10, 40_000
    rng = np.random.default_rng(3)
    total = polya_noise((trials, n), n, RoundBudget(epsilon, "epsilon"), sensitivity, rng,
                        **charges()).sum(axis=1)
    a = math.exp(-epsilon / sensitivity)
    variance = 2 * a / (1 - a) ** 2
    # The sample variance of a discrete Laplace has relative standard error about
    # sqrt((kurtosis - 1) / trials) = sqrt(5 / trials) ~ 1.1%: allow 6%.
    assert abs(total.var() / variance - 1) < 0.06
    assert abs(total.mean()) < 5 * math.sqrt(variance / trials)
    # The exact pmf P(z) = (1 - a)/(1 + a) a^|z| at 0.
    assert abs(np.mean(total == 0) - (1 - a) / (1 + a)) < 5 * math.sqrt(0.05 / trials)


def test_summation_protocol_audit_catches_the_reference_codes_parameter():
    n, epsilon, trials, delta = 20, 1.0, 100_000, 1e-6
    rng = np.random.default_rng(4)
    precision = 4

    def run(first_value, randomiser):
        values = np.zeros((n, trials))
        values[0] = first_value
        shares = randomiser(values, precision, RoundBudget(epsilon, "epsilon"), n, 3, rng,
                            **charges())
        batch = shares.transpose(1, 0, 2).reshape(trials, -1)
        return summation_analyser(shuffle(batch, rng), precision)

    here, there = run(0.0, summation_randomiser), run(1.0, summation_randomiser)
    assert epsilon_lower_bound(here, there, delta) <= epsilon

    def reference_code_copy(values, precision, budget, n, parts, rng, **charge):
        # BBGN20's experiment code: success probability a = e^(-eps/p) instead of 1 - a.
        a = math.exp(-budget.report_epsilon / precision)
        noise = (rng.negative_binomial(1 / n, a, values.shape)
                 - rng.negative_binomial(1 / n, a, values.shape))
        return additive_shares(np.rint(values * precision).astype(np.int64) + noise, parts, rng)

    here, there = run(0.0, reference_code_copy), run(1.0, reference_code_copy)
    assert epsilon_lower_bound(here, there, delta) > epsilon


def test_shares_hide_values_and_add_up():
    rng = np.random.default_rng(5)
    values = np.array([-3, 0, 7, 2**40])
    shares = additive_shares(values, 4, rng)
    assert np.array_equal(shares.sum(axis=-1, dtype=np.uint64).view(np.int64), values)
    # The first parts - 1 shares are uniform: their top bit is a fair coin.
    many = additive_shares(np.zeros(20_000, dtype=np.int64), 3, rng)[:, :2] >> np.uint64(63)
    assert abs(many.mean() - 0.5) < 5 * math.sqrt(0.25 / many.size)


def test_shuffler_permutes_and_the_sum_is_unchanged():
    rng = np.random.default_rng(6)
    shares = additive_shares(np.arange(10), 3, rng).reshape(1, -1)
    shuffled = shuffle(shares, rng)
    assert not np.array_equal(shuffled, shares)
    assert np.array_equal(np.sort(shuffled), np.sort(shares))
    assert summation_analyser(shuffled, 1)[0] == 45


def test_composition_round_trips():
    for epsilon, delta, k in ((1.0, 1e-9, 8), (1.0, 1e-9, 1024), (0.3, 1e-6, 3)):
        step, step_delta = split_budget(epsilon, delta, k)
        assert advanced_composition(step, k, delta / 2) <= epsilon
        assert advanced_composition(step * 1.001, k, delta / 2) > epsilon
        assert k * step_delta + delta / 2 <= delta * (1 + 1e-12)
    local = local_epsilon_for_shuffle(0.5, 1e-9, 100_000)
    assert local > 0.5
    assert shuffle_amplified_epsilon(local, 100_000, 1e-9) <= 0.5
    assert shuffle_amplified_epsilon(local * 1.01, 100_000, 1e-9) > 0.5


def test_range_counting_answers_quantiles_and_finds_the_bulk():
    tree = HierarchicalHistogram(branching=4, height=5)
    rng = np.random.default_rng(7)
    n, epsilon = 200_000, 1.0
    values = np.clip(rng.normal(500, 50, size=n), 0, tree.buckets - 1).astype(int)
    messages = tree.randomise(values, np.zeros(n, int), RoundBudget(epsilon, "epsilon"), rng,
                              **charges())
    fractions = tree.leaf_fractions(messages, 1, epsilon)
    assert np.isclose(fractions.sum(), 1.0)
    error = tree.rank_error(n, epsilon, 1e-3)
    for q in (0.1, 0.5, 0.9):
        found = quantiles_from_fractions(fractions, q)[0]
        # Within the public rank-error bound (z_0.0005 times the prefix standard deviation).
        assert np.mean(values <= found) >= q - error
        assert np.mean(values < found) <= q + error
    assert abs(heaviest_buckets(fractions, 4)[0] - 500) < 100


@pytest.fixture(scope="module")
def figure10():
    """IOME Figure 10's setting: N(mu, I_8), n = 100,000, eps = 1, delta = 1e-9, R = 20 sqrt(d)."""
    d, n = 8, 100_000
    rng = np.random.default_rng(10)
    radius = 20 * math.sqrt(d)
    mu = rng.normal(size=d)
    mu *= 0.9 * radius / np.linalg.norm(mu)
    x = rng.normal(size=(n, d)) + mu
    return x, (-radius - 10, radius + 10)


def _error(x, bounds, method, seed, **options):
    result = dpmean.mean(x, epsilon=1.0, delta=1e-9, method=method, bounds=bounds,
                         random_state=seed, **options)
    return float(np.linalg.norm(result.mean - x.mean(axis=0))), result


def test_local_iome_beats_grs_knownvar(figure10):
    x, bounds = figure10
    for seed in range(3):
        iome, result = _error(x, bounds, "iome-local", seed)
        grs, baseline = _error(x, bounds, "grs-knownvar", seed)
        # IOME's local noise has l2 norm about 2 C sqrt(d) / sqrt(2 rho_noise n) ~ 0.17 C with
        # rho = 0.015 (eps = 1 at delta = 1e-9), rho_noise = 3 rho / 8; C is a few units.
        assert iome < 3.0
        assert iome < grs
        assert result.notion == "local-zCDP" and result.diagnostics["model"] == "local"
        assert math.isclose(result.rho_spent, approx_dp_to_zcdp(1.0, 1e-9), rel_tol=1e-9)
        assert baseline.notion == "local-approx-DP" and baseline.epsilon_spent == 1.0
        assert baseline.rho is None and baseline.rho_spent is None


def test_shuffle_error_is_within_a_log_factor_of_the_central_model(figure10):
    x, bounds = figure10
    n, d, delta = x.shape[0], x.shape[1], 1e-9
    for seed in range(2):
        shuffled, result = _error(x, bounds, "iome-shuffle", seed)
        central, _ = _error(x, bounds, "iome", seed)
        # Lemma 5.4 against the central clipped mean: the shuffle noise is larger by the
        # coordinate clip's sqrt(log(nd)) and advanced composition's sqrt(log(d/delta)).
        assert shuffled <= math.sqrt(math.log(n * d) * math.log(d / delta)) * central
        assert result.notion == "shuffle-approx-DP" and result.diagnostics["model"] == "shuffle"
        assert result.epsilon_spent <= 1.0 * (1 + 1e-12) and result.delta == delta
        assert result.rho is None and result.rho_spent is None


def test_grs_unkvar_runs_and_rho_converts_at_default_delta(figure10):
    x, bounds = figure10
    result = dpmean.mean(x[:20_000], rho=0.5, method="grs-unkvar", bounds=bounds,
                         random_state=0)
    assert result.delta == 1e-9
    assert math.isclose(result.epsilon, zcdp_to_approx_dp(0.5, 1e-9))
    assert result.mean.shape == (8,) and np.all(np.isfinite(result.mean))


def test_protocols_reject_bad_options_and_sparse_input():
    x = np.zeros((100, 2))
    with pytest.raises(InvalidParameterError):
        dpmean.mean(x, rho=1.0, method="iome-local", bounds=(0, 1), centre_rule="mode")
    with pytest.raises(InvalidParameterError):
        dpmean.mean(x, rho=1.0, epsilon=1.0, method="iome-shuffle", bounds=(0, 1))
    with pytest.raises(InvalidParameterError):
        dpmean.mean(x, epsilon=1.0, method="grs-knownvar", bounds=(0, 1))
    with pytest.raises(InvalidDataError, match="at least 4 users"):
        dpmean.mean(x[:3], epsilon=1.0, delta=1e-6, method="iome-shuffle", bounds=(0, 1))
    with pytest.raises(InvalidDataError, match="sparse"):
        dpmean.mean(scipy.sparse.csr_matrix(x), rho=1.0, method="iome-local", bounds=(0, 1))


@pytest.mark.parametrize("bounds", [(-1e100, 1e100), (0.0, 1e6)])
def test_knownvar_refuses_a_box_too_many_sigmas_wide(bounds):
    """KnownVar's unary encoding has a bin per sigma of the box: a box 1e6 sigmas wide asked
    for 7.45 GiB, one of 1e100 overflowed int64 and released -9.2e18 with numpy's warnings.
    Refused from the public box and sigma."""
    x = np.random.default_rng(0).random((500, 3))
    with pytest.raises(InvalidParameterError, match="bins per coordinate"):
        dpmean.mean(x, rho=0.5, bounds=bounds, method="grs-knownvar", random_state=0)


def test_shuffle_summation_shares_cover_the_coordinate_delta():
    # A sum within statistical distance T = 2^-sigma of an eps'-DP one is only
    # (eps', (1 + e^eps') T)-DP, so the shares must reach T = delta' / (1 + e^eps') for each
    # coordinate's (eps', delta') (an adversarial review: T = delta' stated delta' 1.5-2x too
    # low). n = 300, d = 8: the parts that T needs (BBGN20's bound, written out here) are one
    # more than those T = delta' would give.
    n, d = 300, 8
    x = np.random.default_rng(0).uniform(0.2, 0.8, size=(n, d))
    result = dpmean.mean(x, epsilon=4.0, delta=1e-6, method="iome-shuffle", bounds=(0, 1),
                         random_state=1)
    diagnostics = result.diagnostics
    eps, delta = diagnostics["coordinate_epsilon"], diagnostics["coordinate_delta"]
    k = 8  # the rotated coordinates: d padded to a power of two

    def parts(distance):
        sigma = math.log2(1.0 / distance)
        return max(3, math.ceil((2.0 * sigma + 64.0) / (math.log2(n) - math.log2(math.e)) + 1))

    needed = parts(delta / (1.0 + math.exp(eps)))
    assert needed > parts(delta)
    assert diagnostics["messages_per_user"] == k * needed + 2


def test_iome_protocols_run_a_table_of_own_ranges_in_units_of_each_range():
    # A user trial: a survey's age, flag, 1-5 scale and visits beside an income in (0, 10^6)
    # came out at their ranges' faces (age 0 or 120, the flag 1), the users' randomisers
    # working in the data's units, where the income's range swamps the rest. Now each column
    # runs in units of its range (box_scale), as the central estimators do. Each column's
    # release is nearer its mean than half the mean's distance from the nearer face (a release
    # at a face errs by that whole distance; the local protocol's clipping at its quantile,
    # about a third of the rows here, and its noise take the rest).
    rng = np.random.default_rng(0)
    n = 20000
    x = np.column_stack([rng.normal(53, 15, n).clip(0, 120),
                         rng.lognormal(10.5, 0.8, n).clip(0, 1e6),
                         (rng.uniform(size=n) < 0.22).astype(float),
                         rng.integers(1, 6, n).astype(float)])
    lo, hi = np.array([0.0, 0.0, 0.0, 1.0]), np.array([120.0, 1e6, 1.0, 5.0])
    truth = x.mean(0)
    room = np.minimum(truth - lo, hi - truth) / 2.0
    for method in ("iome-local", "iome-shuffle"):
        result = dpmean.mean(x, method=method, rho=0.5, bounds=(lo, hi), random_state=5)
        np.testing.assert_allclose(result.diagnostics["box_scale"], 1.0 / (hi - lo))
        assert np.all(np.abs(result.mean - truth) < room), method


def test_iome_local_states_its_noise_and_gets_the_release_warnings():
    # A trial: rows in cents (about 5,000) in a box in dollars (0, 100) came out at 100 from
    # iome-local without the BoxFaceWarning the central estimators give, and a release whose
    # noise filled the box said nothing. iome-local now states its noise per coordinate
    # (user_noise_std / sqrt(n)), which the warnings read; the rows a local protocol needs
    # grow as the square of the noise's excess (its noise falls as 1 / sqrt(n)).
    from dpmean.errors import BoxFaceWarning, NoisyReleaseWarning

    rng = np.random.default_rng(0)
    cents = rng.normal(5000, 500, (20000, 3))
    with pytest.warns(BoxFaceWarning, match="faces in 3 of 3"):
        result = dpmean.mean(cents, method="iome-local", rho=0.5, bounds=(0, 100),
                             random_state=1)
    np.testing.assert_allclose(result.diagnostics["noise_std"],
                               result.diagnostics["user_noise_std"] / np.sqrt(20000))
    x = rng.normal(1, 1, (2000, 100))
    with pytest.warns(NoisyReleaseWarning, match="noise's 95% interval") as caught:
        result = dpmean.mean(x, method="iome-local", rho=0.1, bounds=(-20, 20),
                             random_state=1)
    std = float(np.median(result.diagnostics["noise_std"]))
    factor = 2 * 1.959963984540054 * std / (0.5 * 40)
    # (Its centre round is told too: 16 users a coordinate cannot place a median.)
    (message,) = [str(w.message) for w in caught if "noise's 95% interval" in str(w.message)]
    assert f"n >= {math.ceil(2000 * factor**2):,} rows" in message


@pytest.mark.parametrize("method", ["grs-knownvar", "grs-unkvar"])
def test_grs_states_its_noise(method):
    # The last stage's Gaussian noise per coordinate: sensitivity 2 half_j, rho0 from each
    # coordinate's (eps0, delta0), averaged over the last group's users.
    x = np.random.default_rng(0).normal(0.3, 0.1, size=(20000, 2))
    result = dpmean.mean(x, method=method, bounds=(0, 1), epsilon=1, delta=1e-6,
                         random_state=0, **({"sigma": 0.1} if method == "grs-knownvar" else {}))
    std = result.diagnostics["noise_std"]
    assert std.shape == (2,) and np.all(std > 0)
    # The release is within 5 sd of the mean, coordinate by coordinate (its clamping to
    # GRS's window costs rows at 3+ sigma only).
    assert np.all(np.abs(result.mean - x.mean(0)) < 5 * std)


def test_a_grs_release_of_noise_says_so():
    # A trial: sigma = 1 (the default) for a column in (0, 1) released 0 in a third of the
    # runs, silently. The warning names the rows that would help (a local protocol's noise
    # falls as 1 / sqrt(n): the factor squared) and a larger epsilon, with no figure for it
    # (a review: epsilon times the factor left the noise above half the box: the budget is
    # split over the coordinates and converted per share). Rerun at the advised n, the noise
    # is within half the box.
    from dpmean.errors import NoisyReleaseWarning

    rng = np.random.default_rng(0)
    x = rng.normal(0.3, 0.1, size=(20000, 1))
    with pytest.warns(NoisyReleaseWarning, match="a larger epsilon or n >=") as caught:
        dpmean.mean(x, method="grs-knownvar", bounds=(0, 1), epsilon=1, delta=1e-6,
                    random_state=0)
    advised = int(str(caught[0].message).split("n >= ")[1].split(" rows")[0].replace(",", ""))
    more = rng.normal(0.3, 0.1, size=(advised, 1))
    result = dpmean.mean(more, method="grs-knownvar", bounds=(0, 1), epsilon=1, delta=1e-6,
                         random_state=0)
    assert 2 * 1.959963984540054 * result.diagnostics["noise_std"][0] <= 0.5 * 1.0001


@pytest.mark.parametrize("method, options", [
    ("iome-shuffle", {"bounds": (-5, 5)}), ("trimmed", {"bounds": (-5, 5)}),
    ("coinpress-cov", {"radius": 10, "sigma_max": 10}),
    ("iome-gaussian", {"mean_radius": 10, "sigma_max": 10, "sigma_min": 0.1}),
])
def test_a_subnormal_row_raises_no_numpy_warning_a_neighbour_would_not(method, options):
    # With numpy's floating-point errors turned into warnings (or raised), a subnormal value's
    # underflow in the rotation, a matmul or a division warned: whether some row held one
    # (two reviews). A release runs with them ignored.
    x = np.random.default_rng(0).normal(0.0, 1.0, size=(2000, 3))
    neighbour = x.copy()
    neighbour[7] = 5e-324
    for data in (x, neighbour):
        with np.errstate(all="raise"), warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            dpmean.mean(data, rho=0.5, method=method, random_state=4, **options)


def test_a_centre_round_too_large_to_analyse_is_refused_before_any_charge():
    # iome-shuffle's default centre tree (4^6 buckets) for 32,768 rotated coordinates is 2^27
    # counts, whose analyser holds about four times that in float64 (a trial: 2^28 counts
    # peaked at 9.5 GB and failed after the users were randomised). Refused from the plan.
    x = np.zeros((8, 20_000))
    with pytest.raises(InvalidParameterError, match="smaller centre_height"):
        dpmean.mean(x, rho=0.5, method="iome-shuffle", bounds=(-1, 1))
    # At 16,384 coordinates (2^26 counts) the plan is accepted.
    estimator = dpmean.api.build_estimator("iome-shuffle", rho=0.5, bounds=(-1, 1))
    estimator._check_centre_tree(16_384)


def test_grs_knownvar_reports_its_coarse_centre_group_after_the_blocked_encoding():
    # The blocked unary encoding's loop variable overwrote the group's size, so the public
    # diagnostic (and the debiasing's constant) read 0 (the stop 56 diff review).
    x = np.random.default_rng(0).normal(size=(2000, 7))
    result = dpmean.mean(x, epsilon=1.0, delta=1e-6, method="grs-knownvar", bounds=(-5, 5),
                         random_state=1)
    assert result.diagnostics["first_group"] == 1000


@pytest.mark.parametrize("method", ["iome-local", "iome-shuffle"])
def test_a_centre_round_too_thin_to_place_medians_is_told(method):
    # n = 20,000, d = 256: 78 users a rotated coordinate, a rank-error bound of 2.3, and
    # iome-shuffle erred 0.39 against central iome's 0.0045 without a word (a review).
    from dpmean.errors import NoisyReleaseWarning
    from dpmean.registry import ESTIMATORS

    estimator = ESTIMATORS[method](rho=1.0, bounds=(-1.0, 1.0))
    with pytest.warns(NoisyReleaseWarning, match="too few to place a median"):
        estimator.warn_if_centre_unresolved(20_000, 256)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoisyReleaseWarning)
        estimator.warn_if_centre_unresolved(20_000, 32)  # bound 0.82: the centre held
    if method == "iome-local":  # a release says it (the local protocol is quick)
        x = np.clip(np.random.default_rng(0).normal(0.01, 0.05, (2000, 64)), -1, 1)
        with pytest.warns(NoisyReleaseWarning, match="too few to place a median"):
            dpmean.mean(x, rho=1.0, method=method, bounds=(-1, 1), random_state=0)
