"""method="auto" sees the clipping bias of a heavy, one-sided tail (the tail histogram,
``auto.private_tail`` and ``auto.clip_bias``), and nothing where the tail is light."""

import math

import numpy as np
import pytest
from scipy.special import ndtri

import dpmean
from dpmean.accounting import PrivacyLedger
from dpmean.engines import InMemoryEngine
from dpmean.estimators import auto as auto_module
from dpmean.estimators.auto import (
    TAIL_BETA,
    TAIL_FAR_BETA,
    TAIL_FAR_SHELL,
    TAIL_RATIO,
    TAIL_SHELLS,
    TAIL_STAGE,
    centred_clip_bias,
    clip_bias,
    one_sided_share,
    private_tail,
    radius_floor,
    tail_edges,
    tail_pair_std,
)


def test_edges_grow_geometrically_from_the_median_norm_below_the_reach():
    edges = tail_edges(3.0, 100.0)
    assert edges[0] == 3.0 and edges[-1] < 100.0 <= edges[-1] * TAIL_RATIO * (1 + 1e-12)
    assert np.allclose(edges[1:] / edges[:-1], TAIL_RATIO)
    assert tail_edges(0.0, 100.0).tolist() == [100.0]      # no median norm: one empty shell
    assert tail_edges(200.0, 100.0).tolist() == [100.0]    # the median beyond the reach
    assert tail_edges(1e-300, 1e300).size == TAIL_SHELLS    # at most TAIL_SHELLS


# A budget at which the histogram's noise margin is nothing: the shares are exact.
EXACT = 1e18


def sided(totals, one_sided):
    """(up, down) counts whose pooled one-sided share is ``one_sided``."""
    return totals * (1 + one_sided) / 2, totals * (1 - one_sided) / 2


def test_clip_bias_counts_the_one_sided_far_tail_above_the_radius_at_lower_edges():
    edges = 2.0 ** (np.arange(8) / 2.0)                     # r0 = 1, ratio sqrt(2)
    totals = np.array([500.0, 200, 100, 60, 30, 10, 0, 0])
    n = 1000

    def bias(one_sided, clipped, counts=totals):
        return clip_bias(edges, *sided(counts, one_sided), clipped, n, EXACT)

    # 15 clipped rows: the 16th largest norm lies in shell 4 (rows in shells 4 and up: 40 >
    # 15; in 5 and up: 10), so the radius is edges[4] = 4 and shell 5 alone lies above it.
    assert bias(1.0, 15) == pytest.approx(10 * (edges[5] - 4.0) / n)
    # Half the far tail one-sided: half the move.
    assert bias(0.5, 15) == pytest.approx(5 * (edges[5] - 4.0) / n)
    # 5 clipped rows: the 6th largest lies in shell 5, the last one holding rows: nothing
    # lies in a shell above the radius's.
    assert bias(1.0, 5) == 0.0
    # 150 clipped rows: radius edges[2] = 2 (shells 2.. hold 200 > 150); the far tail starts at
    # shell TAIL_FAR_SHELL = 3, so shells 3, 4, 5 count, each at its lower edge.
    assert TAIL_FAR_SHELL == 3
    expected = sum(totals[s] * (edges[s] - edges[2]) for s in (3, 4, 5)) / n
    assert bias(1.0, 150) == pytest.approx(expected)
    # More clipped rows than the shells hold: the radius is taken as the first edge, and the
    # rows below the far tail still add nothing (light tails' moves cancel).
    expected = sum(totals[s] * (edges[s] - edges[0]) for s in (3, 4, 5)) / n
    assert bias(1.0, 5000) == pytest.approx(expected)
    # A symmetric far tail (nothing one-sided) or no rows beyond the radius: nothing.
    assert bias(0.0, 150) == 0.0
    assert bias(1.0, 5, np.zeros(8)) == 0.0


def test_a_shell_holds_the_radius_only_where_its_rows_clear_the_clip_count_beyond_noise():
    # A 1% subgroup carrying the mean (200 rows of 20,000 at 30 times the others' norm, d =
    # 1000) against IOME's 202 clipped rows: where the far shell's noisy count came out above
    # 202, the radius was placed in it, the subgroup's move predicted 0, and IOME ran, erasing
    # 90-96% of the mean (a user trial). The radius lies in a shell only where the rows
    # beyond its lower edge exceed the clip count by their noise's margin at TAIL_BETA.
    edges = 2.0 ** (np.arange(8) / 2.0)
    totals = np.array([19000.0, 500, 0, 0, 0, 0, 210, 0])
    n, rho, clipped = 20000, 0.005, 202.5
    margin = float(ndtri(1.0 - TAIL_BETA)) * tail_pair_std(rho)
    assert 210 - margin < clipped < 210                    # clears it by its noise only
    up, down = sided(totals, 1.0)
    # With exact counts the 210 rows hold the radius and nothing lies above it ...
    assert clip_bias(edges, up, down, clipped, n, EXACT) == 0.0
    # ... with these counts' noise the radius lies below them (shell 1, whose 710 rows clear
    # the clip count), and the subgroup's move is counted at its shell's lower edge, less the
    # one-sided share's own margin.
    full = 210 * (edges[6] - edges[1]) / n
    assert 0.8 * full < clip_bias(edges, up, down, clipped, n, rho) < full
    assert radius_floor(edges, totals, rho, clipped) == edges[1]
    assert centred_clip_bias(edges, up, down, clipped, n, rho, 0.0) > 0.8 * full


def test_the_centred_bias_counts_every_one_sided_row_beyond_the_radius():
    """About a centre: the m rows of the radius's shell beyond it spread over the shell's
    width (which places the radius) and move half the rest of it; the rows of each shell
    above it lie at its middle; the one-sided share pooled over the rows beyond it."""
    edges = 2.0 ** (np.arange(8) / 2.0)
    totals = np.array([500.0, 200, 100, 60, 30, 10, 0, 0])
    n = 1000
    # 25 clipped rows: shell 4 holds the 26th largest (40 rows from shell 4 up, 10 from 5);
    # 15 of its 30 rows lie beyond the radius, half-way up the shell.
    top = edges[4] * TAIL_RATIO
    radius = top - 0.5 * (top - edges[4])
    move = 10 * (edges[5] * (1 + TAIL_RATIO) / 2 - radius) + 15 * (top - radius) / 2
    up, down = sided(totals, 1.0)
    assert centred_clip_bias(edges, up, down, 25, n, EXACT, 0.0) == pytest.approx(move / n)
    # Half one-sided, or a tilt of 0.3 off a fully one-sided tail: that share of the move.
    up, down = sided(totals, 0.5)
    assert centred_clip_bias(edges, up, down, 25, n, EXACT, 0.0) == pytest.approx(
        0.5 * move / n)
    up, down = sided(totals, 1.0)
    assert centred_clip_bias(edges, up, down, 25, n, EXACT, 0.3) == pytest.approx(
        0.7 * move / n)
    # The share pools the rows beyond the radius only: the bulk's balanced sides below it
    # do not dilute it.
    up, down = sided(totals, 0.0)
    up[4:], down[4:] = totals[4:], 0.0
    assert centred_clip_bias(edges, up, down, 25, n, EXACT, 0.0) == pytest.approx(move / n)
    # Symmetric rows, or fewer rows than the clip count: nothing, or the first shell's.
    up, down = sided(totals, 0.0)
    assert centred_clip_bias(edges, up, down, 25, n, EXACT, 0.0) == 0.0
    assert centred_clip_bias(edges, np.zeros(8), np.zeros(8), 25, n, EXACT, 0.0) == 0.0


def test_the_histogram_about_a_centre_is_the_origins_of_the_shifted_rows():
    x = 10.0 * np.random.default_rng(3).lognormal(0.0, 1.0, size=(2000, 4))
    centre = np.array([5.0, -3.0, 2.0, 7.0])
    edges = tail_edges(8.0, 1e4)
    about = tail_of(x + centre, edges, 0.5, seed=4, centre=centre)
    shifted = tail_of(x, edges, 0.5, seed=4)
    for mine, theirs in zip(about, shifted, strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-6)


def test_the_radius_floor_is_the_last_edge_with_surely_more_rows_beyond():
    edges = 2.0 ** (np.arange(8) / 2.0)
    totals = np.array([5000.0, 2000, 1000, 600, 300, 100, 0, 0])   # six shells kept
    rho = 0.5
    pair_std = math.sqrt(2.0) / math.sqrt(rho)                    # two counts' noise
    z = ndtri(1 - TAIL_BETA)
    above = np.cumsum(totals[::-1])[::-1]
    for clipped in (0, 50, 99, 150, 399, 1000, 9000):
        sure = [above[j] - z * pair_std * math.sqrt(6 - j) > clipped for j in range(6)]
        expected = edges[max(j for j in range(6) if sure[j])] if any(sure) else 0.0
        assert radius_floor(edges, totals, rho, clipped) == expected
    assert radius_floor(edges, totals, rho, 100) == edges[4]      # 400 rows beyond edges[4]
    assert radius_floor(edges, np.zeros(8), rho, 0) == 0.0


def test_a_heavy_tail_raises_the_clipping_candidates_noise_prediction():
    """Lognormal amounts, n = 200,000: cm's radius lies near 2,500 against a median norm of
    20; its noise was predicted at a few times the median (0.0033 against a released noise
    std of 0.1, a user trial). The histogram shows hundreds of rows beyond 1,000: the noise
    prediction is at least the noise at that radius."""
    x = np.random.default_rng(0).lognormal(3.0, 1.5, size=(200_000, 1))
    result = dpmean.mean(x, rho=0.5, bounds=(0, 1e4), random_state=0)
    # cm's noise at a radius of 1,000 with all of rho on its noise: below what it is given.
    floor = 2.0 * 1000.0 / (200_000 * math.sqrt(2.0 * 0.5))
    assert result.diagnostics["predicted_noise"]["cm"] > floor


def tail_of(x, edges, rho, seed, centre=None):
    """The tail histogram's (up, down) of rows ``x`` about ``centre`` (default the origin)."""
    engine = InMemoryEngine(x, np.full(x.shape[1], -1e4), np.full(x.shape[1], 1e4))
    ledger = PrivacyLedger(rho)
    ledger.plan({TAIL_STAGE: rho})
    up, down = private_tail(engine, edges, float(edges[0]), rho=rho, ledger=ledger,
                            rng=np.random.default_rng(seed), stage=TAIL_STAGE, centre=centre)
    ledger.verify()
    assert ledger.spent == {TAIL_STAGE: rho}
    return up, down


def far_share(up, down, rho):
    """The far tail's pooled one-sided share, as ``clip_bias`` takes it."""
    far = (np.arange(up.size) >= TAIL_FAR_SHELL).astype(float)
    return one_sided_share(up, down, far, rho)


def test_the_tail_histogram_keeps_the_first_clear_shells_and_measures_one_sidedness():
    rng = np.random.default_rng(0)
    x = 10.0 * rng.lognormal(0.0, 1.5, size=(3000, 5))
    norms = np.linalg.norm(x, axis=1)
    edges = tail_edges(float(np.median(norms)), float(np.sqrt(5) * 1e4))
    rho = 0.5
    up, down = tail_of(x, edges, rho, seed=1)
    totals, one_sided = up + down, far_share(up, down, rho)
    exact = np.array([np.sum((norms > lo) & (norms <= hi))
                      for lo, hi in zip(edges, np.append(edges[1:], np.inf), strict=True)])
    # Each total is two counts plus noise: std sqrt(2) / sqrt(rho) (sensitivity sqrt(2)).
    pair_std = math.sqrt(2.0) / math.sqrt(rho)
    cut = ndtri(1 - TAIL_BETA / edges.size) * pair_std
    # Kept: a prefix of the shells, each within 5 std of its count (seeded), each above the
    # cut; after the first one dropped, only shells above the far cut.
    first_dropped = int(np.argmin(totals > 0)) if not (totals > 0).all() else totals.size
    assert first_dropped > TAIL_FAR_SHELL        # a heavy tail clears the far shells
    assert np.all(totals[:first_dropped] > cut)
    assert np.all(np.abs(totals[:first_dropped] - exact[:first_dropped]) < 5 * pair_std)
    far_cut = ndtri(1 - TAIL_FAR_BETA / edges.size) * pair_std
    assert np.all((totals[first_dropped:] == 0.0) | (totals[first_dropped:] > far_cut))
    # Every row lies on the positive side: the far tail is one-sided, up to its margin.
    assert 0.8 < one_sided <= 1.0
    # The same rows, each mirrored through the origin by a fair coin: the same norms, a
    # symmetric tail.
    signs = np.where(np.random.default_rng(2).random(3000) < 0.5, -1.0, 1.0)[:, None]
    assert far_share(*tail_of(signs * x, edges, rho, seed=1), rho) < 0.2


def far_outliers(seed, n=20_000, d=10):
    """N(1, 1) rows, 1% of them moved by 1,000 in every coordinate (a user trial)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(1.0, 1.0, (n, d))
    x[rng.choice(n, n // 100, replace=False)] += 1000.0
    return x


def test_far_outliers_past_empty_shells_are_kept():
    # The bulk's norms lie near sqrt(20) = 4.5, the 200 outliers' near 3,162: dozens of empty
    # shells between. At rho = 0.005 a pair's noise std is 20 and the far cut about 86 (z at
    # 1e-3 over the shells): the outliers' 200 clear it by 5 stds.
    x = far_outliers(0)
    edges = tail_edges(float(np.median(np.linalg.norm(x, axis=1))), 1e4 * math.sqrt(10))
    up, down = tail_of(x, edges, 0.005, seed=1)
    totals = up + down
    outliers = int(np.searchsorted(edges, math.sqrt(10) * 1001.0)) - 1
    gap = np.arange(edges.size)[(np.arange(edges.size) < outliers) & (totals == 0.0)]
    assert gap.size > 5                             # the empty shells the prefix stopped at
    assert abs(totals[outliers] - 200.0) < 5 * math.sqrt(2.0 / 0.005)  # 5 pair stds
    assert up[outliers] > 150.0 and totals[outliers + 1:].sum() == 0.0  # all on one side


@pytest.mark.parametrize("seed", range(3))
def test_far_outliers_steer_the_choice_to_cm(seed):
    # IOME and PLAN clip the 1% (a move of 1000 sqrt(10) / 100 = 31.6), cm's radius holds
    # them (its error 1.2): auto chose IOME at 23 times cm's error, its histogram having
    # stopped at the first empty shell. The kept far shell predicts IOME's bias.
    result = dpmean.mean(far_outliers(seed), rho=0.5, bounds=(-1e4, 1e4), method="auto",
                         random_state=seed)
    assert result.diagnostics["chosen"] == "cm"
    assert result.diagnostics["predicted_bias"]["iome"] > 10.0


@pytest.mark.parametrize("seed", range(4))
def test_a_heavy_one_sided_tail_steers_the_choice_off_iome(seed):
    """Lognormal rows (income-like), n = 3000, d = 5, box (0, 1e4): IOME's radius search
    aims to clip hundreds of rows here (its threshold share is 1%: a rank error of about n / 5),
    and their aligned moves cost it 2.4x CM's error (8.8 against 3.6, 10 runs; RMSE of the l2
    error, `scripts/heavy_tails.py`). Predicted from noise alone, auto chose IOME or PLAN in 4
    of 10 releases (6.0); with the tail's bias it chooses CM, and IOME's predicted bias is
    many times its predicted noise (a lower bound of its real bias)."""
    x = 10.0 * np.random.default_rng(seed).lognormal(0.0, 1.5, size=(3000, 5))
    result = dpmean.mean(x, rho=0.5, method="auto", bounds=(0, 1e4), random_state=100 + seed)
    bias, noise = result.diagnostics["predicted_bias"], result.diagnostics["predicted_noise"]
    assert result.diagnostics["chosen"] == "cm"
    assert bias["iome"] > 3 * noise["iome"]
    assert bias["gaussian"] == 0.0


@pytest.mark.parametrize("case", ["isotropic", "far", "zipf variances", "one column",
                                  "symmetric one column"])
def test_light_tails_predict_no_bias(case):
    """Gaussian rows have no far tail (beyond 2 sqrt(2) times the median norm) in the first
    four shapes; in the last it is symmetric (a standard normal column: 5.7% of its rows lie
    beyond 2 sqrt(2) times its median magnitude), so no bias is predicted and the choice is
    the noise's alone. (A symmetric heavy tail's few far rows are lopsided by chance, and so
    is their real clipping move: it may be predicted some, see the histogram's test.)"""
    rng = np.random.default_rng(7)
    x, box = {
        "isotropic": (rng.normal(0, 1, (4000, 64)), (-400, 400)),
        "far": (rng.normal(50, 5, (3000, 16)), (0, 100)),
        "zipf variances": (10 + rng.normal(0, 1, (10000, 64)) * (64 / np.arange(1, 65)),
                           (-25600, 25600)),
        "one column": (rng.normal(5, 1, (3000, 1)), (0, 10)),
        "symmetric one column": (rng.normal(0, 1, (3000, 1)), (-10, 10)),
    }[case]
    result = dpmean.mean(x, rho=0.5, method="auto", bounds=box, random_state=7)
    assert set(result.diagnostics["predicted_bias"].values()) == {0.0}


def test_baskets_predict_no_bias_and_spend_the_tail_share_on_the_median_norm():
    import scipy.sparse

    rng = np.random.default_rng(2)
    x = scipy.sparse.csr_matrix((rng.random((5000, 40)) < 0.1).astype(float))
    result = dpmean.mean(x, rho=0.5, method="auto", bounds=(0, 1), random_state=2)
    assert "predicted_bias" not in result.diagnostics
    assert TAIL_STAGE in result.ledger and TAIL_STAGE in auto_module.norm_stages(True)


def mixed_table(skewed: bool) -> np.ndarray:
    """A user trial's table: ten normal columns of various means and spreads, n = 50,000, the
    last one lognormal where ``skewed``."""
    rng = np.random.default_rng(0)
    d = 10
    x = rng.normal(np.linspace(-3, 10, d), np.linspace(0.5, 4, d), size=(50_000, d))
    if skewed:
        x[:, -1] = rng.lognormal(1.0, 0.8, 50_000)
    return x


@pytest.mark.parametrize("seed", range(3))
def test_a_skewed_column_among_normal_ones_shows_iome_its_bias(seed):
    """IOME clips about a hundred rows about its centre, most of them the lognormal column's
    tail, short of the far shells about the origin: it was predicted no bias and chosen at
    3-4x CM's error (a user trial). The histogram about the centre sees their move; on the
    same table with the column normal it sees none, and IOME is chosen."""
    skewed = dpmean.mean(mixed_table(True), rho=2, bounds=(-20, 50), method="auto",
                         random_state=seed).diagnostics
    assert skewed["predicted_bias"]["iome"] > skewed["predicted_noise"]["iome"]
    assert skewed["chosen"] != "iome"
    normal = dpmean.mean(mixed_table(False), rho=2, bounds=(-20, 50), method="auto",
                         random_state=seed).diagnostics
    assert normal["predicted_bias"]["iome"] == 0.0 and normal["chosen"] == "iome"


def ages_and_income() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A second trial's table: four N(50, 10) ages in (0, 120) beside an income
    lognormal(10, 1) in (0, 10^6), n = 50,000."""
    rng = np.random.default_rng(7)
    x = np.column_stack([rng.normal(50, 10, (50_000, 4)), rng.lognormal(10, 1.0, 50_000)])
    return x, np.zeros(5), np.array([120.0, 120, 120, 120, 1e6])


@pytest.mark.parametrize("seed", range(2))
def test_iome_over_a_one_sided_tail_it_cannot_see_clips_fewer_rows(seed):
    """IOME's default search clips 108 rows there, the income's far tail, which the histogram
    about the centre cannot resolve (its noise hides shells of tens of rows): predicted best,
    it ran at 5x the Gaussian mechanism's error. The rows beyond its radius lean one way, so
    IOME runs with ROBUST_IOME_SHARE (about sqrt(n) rows clipped), within 2x of it. The same
    table with a normal fifth column keeps IOME's default."""
    x, lo, hi = ages_and_income()
    result = dpmean.mean(x, rho=2, bounds=(lo, hi), method="auto", random_state=seed)
    assert result.diagnostics.get("robust_iome") and result.diagnostics["chosen"] == "iome"
    assert result.n - result.diagnostics["target_rank"] < 40
    normal = x.copy()
    normal[:, 4] = np.random.default_rng(1).normal(5e5, 1e5, x.shape[0])
    plain = dpmean.mean(normal, rho=2, bounds=(lo, hi), method="auto", random_state=seed)
    assert "robust_iome" not in plain.diagnostics


def test_an_epsilon_delta_choice_declares_iome_with_its_robust_share():
    """An (epsilon, delta) request where the centre is bought: IOME with its robust share runs
    (the choice's event lists its plan too; its stages are all Gaussian, so it composes as
    IOME's default does) and the ledger adds up to the granted rho."""
    x, lo, hi = ages_and_income()
    result = dpmean.mean(x, epsilon=4, delta=1e-6, bounds=(lo, hi), method="auto",
                         random_state=0)
    assert result.diagnostics.get("robust_iome") and result.diagnostics["chosen"] == "iome"
    assert math.fsum(result.ledger.values()) == pytest.approx(result.budget.rho, rel=1e-9)
