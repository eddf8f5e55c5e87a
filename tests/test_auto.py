"""method="auto": a private choice between plan, iome, cm and gaussian."""

import itertools

import numpy as np
import pytest
import scipy.sparse

import dpmean
from dpmean.errors import InvalidParameterError
from dpmean.estimators import auto as auto_module
from dpmean.estimators.auto import (
    CHOICE_RANK_ERROR,
    CHOICE_SHARE,
    CHOICE_STAGES,
    TAIL_SHARE,
    TAIL_STAGE,
    TAIL_STAGES,
    AutoMean,
)
from dpmean.events import exponential_event, gaussian_event
from dpmean.mechanisms.quantiles import rank_error_bound, reliable_search_steps


def skewed(seed, n=10000, d=256):
    """Zipf variances (d / i)^2 (PLAN's Gaussian C), mean 10, box +-50 d^1.5."""
    rng = np.random.default_rng(seed)
    std = d / np.arange(1, d + 1)
    return 10.0 + rng.standard_normal((n, d)) * std, (-50 * d**1.5, 50 * d**1.5)


def test_ledger_adds_up_and_the_release_spends_the_rest():
    x, box = skewed(0, n=4000, d=32)
    result = dpmean.mean(x, rho=0.5, method="auto", bounds=box, random_state=1)
    # n rho = 2000: below 10^4 no centre and no histogram about it (reads_centred_tail)
    assert set(result.ledger) == {*CHOICE_STAGES, TAIL_STAGE, "release"}
    assert not AutoMean(0.5).reads_centred_tail(4000) and AutoMean(0.5).reads_centred_tail(
        20_000)
    assert set(AutoMean(0.5).choice_plan(20_000)) == {*CHOICE_STAGES, *TAIL_STAGES, "release"}
    assert sum(result.ledger.values()) == pytest.approx(0.5, rel=1e-12)
    # n = 4000 at rho = 1/2: 3 / ((2% of 2000)^2 rho) = 0.375% buys the medians' precision
    assert sum(result.ledger[s] for s in CHOICE_STAGES) == pytest.approx(0.5 * 0.00375)
    # and the tail 1%, its cap: 1 / (0.1^2 n rho) = 5% would buy more precision than it needs
    # only above n rho = 10^4
    assert result.ledger[TAIL_STAGE] == pytest.approx(0.5 * TAIL_SHARE)
    plan = AutoMean(0.5).choice_plan(20_000)
    for stage in TAIL_STAGES:
        assert plan[stage] == pytest.approx(0.5 * TAIL_SHARE)
    assert AutoMean(0.5).tail_share(70_000) == pytest.approx(1 / (0.01 * 70_000 * 0.5))
    inner = result.diagnostics["release_ledger"]
    assert sum(inner.values()) == pytest.approx(result.ledger["release"], rel=1e-12)
    assert result.diagnostics["chosen"] in {"plan", "iome", "cm", "gaussian"}


@pytest.mark.parametrize("case,expected", [
    ("skewed", "plan"),        # a few coordinates carry the variance: PLAN's scaling pays
    ("far", "iome"),           # isotropic, far from the origin, in a loose box: centre first
    ("tight", "gaussian"),     # the box is the data's own range: nothing to clip
])
def test_clear_cases_choose_the_method_built_for_them(case, expected, monkeypatch):
    rng = np.random.default_rng(3)
    if case == "skewed":
        x, box = skewed(3)
    elif case == "far":
        x, box = rng.normal(300.0, 1.0, size=(4000, 64)), (-1000.0, 1000.0)
    else:
        x, box = rng.uniform(0.0, 1.0, size=(100000, 4)), (0.0, 1.0)
    result = dpmean.mean(x, rho=0.5, method="auto", bounds=box, random_state=3)
    assert result.diagnostics["chosen"] == expected
    # No coin flip: each private median is within its rank error at failure probability 1e-3
    # of the middle of its m values (the pairs' exponential mechanisms: tau = ln(m / 1e-3) /
    # sqrt(2 rho_stage); the row norms' search of Gaussian counts: Theorem 3.3's tau for its
    # steps), and the choice stays the same with every median moved to either end of that
    # range, in all 8 combinations.
    norms = np.sort(np.linalg.norm(x, axis=1))
    for ends in itertools.product((-1, 1), repeat=len(CHOICE_STAGES)):
        moved = dict(zip(CHOICE_STAGES, ends, strict=True))

        def at(ordered, tau, stage, moved=moved):
            rank = int(np.clip(ordered.size / 2 + moved[stage] * tau, 0, ordered.size - 1))
            return float(ordered[rank])

        def pair_median(values, top, *, rho, ledger, rng, stage, at=at):
            ledger.charge(stage, rho, exponential_event(rho))
            return at(np.sort(values), np.log(values.size / 1e-3) / np.sqrt(2 * rho), stage)

        def norm_median(engine, top, *, rho, ledger, rng, stage, secure, at=at):
            ledger.charge(stage, rho, gaussian_event(rho))
            steps = reliable_search_steps(norms.size / 4, rho, auto_module.CHOICE_BETA,
                                          auto_module.CHOICE_NORM_STEPS)
            return at(norms, rank_error_bound(steps, rho, 1e-3), stage)

        monkeypatch.setattr(auto_module, "_private_median_pair", pair_median)
        monkeypatch.setattr(auto_module, "private_median_norm", norm_median)
        result = dpmean.mean(x, rho=0.5, method="auto", bounds=box, random_state=3)
        assert result.diagnostics["chosen"] == expected, moved


def test_the_choice_depends_on_the_data_only_through_private_medians(monkeypatch):
    """With the private medians and tail histograms fixed, two unrelated data sets of one
    shape get the same choice and the same predictions: nothing else read from the data
    enters the decision. (Each stand-in charges its stage as the mechanism does. Before, the
    stand-ins returned the charge, not the values meant, and the histogram was left to the
    data, whose counts happened to predict nothing for either set until far shells past empty
    ones were kept.)"""
    fixed = iter([2.0, 3.0, 40.0] * 2)

    def median_pair(values, top, *, rho, ledger, rng, stage):
        ledger.charge(stage, rho, exponential_event(rho))
        return next(fixed)

    def median_norm(engine, top, *, rho, ledger, rng, stage, secure):
        ledger.charge(stage, rho, gaussian_event(rho))
        return next(fixed)

    def tail(engine, edges, r0, *, rho, ledger, rng, stage, centre=None, secure=False):
        ledger.charge(stage, rho, gaussian_event(rho))
        return np.zeros(edges.size), np.zeros(edges.size)

    monkeypatch.setattr(auto_module, "_private_median_pair", median_pair)
    monkeypatch.setattr(auto_module, "private_median_norm", median_norm)
    monkeypatch.setattr(auto_module, "private_tail", tail)
    rng = np.random.default_rng(5)
    answers = []
    for x in (rng.normal(0.0, 1.0, size=(3000, 16)), rng.exponential(50.0, size=(3000, 16))):
        result = dpmean.mean(x, rho=0.5, method="auto", bounds=(-100, 100), random_state=5)
        answers.append((result.diagnostics["chosen"], result.diagnostics["predicted_noise"]))
    assert answers[0] == answers[1]


def test_predictions_follow_their_formulas():
    x, box = skewed(1, n=4000, d=16)
    result = dpmean.mean(x, rho=0.5, method="auto", bounds=box, random_state=1)
    predicted = result.diagnostics["predicted_noise"]
    rho_rest = 0.5 * (1 - AutoMean(0.5).choice_share(4000) - TAIL_SHARE)
    assert rho_rest == pytest.approx(AutoMean(0.5).choice_plan(4000)["release"])
    width = np.linalg.norm(np.full(16, box[1] - box[0]))
    # The Gaussian mechanism's noise is public: sqrt(d) ||hi - lo|| / (n sqrt(2 rho)).
    assert predicted["gaussian"] == pytest.approx(4 * width / (4000 * np.sqrt(2 * rho_rest)))
    # PLAN is predicted from IOME's noise, never above IOME / PLAN_MARGIN.
    assert predicted["plan"] <= predicted["iome"] / auto_module.PLAN_MARGIN * (1 + 1e-12)


@pytest.mark.parametrize("n,rho", [(4000, 1 / 16), (10_000, 1 / 8), (1000, 1.0), (200, 5.0)])
def test_the_choice_spends_what_its_precision_needs_and_no_more_than_its_cap(n, rho):
    share = AutoMean(rho).choice_share(n)
    assert share <= CHOICE_SHARE
    # Each median's exponential mechanism, eps = sqrt(8 rho share / 3): its rank error's
    # standard deviation, 2 sqrt(2) / eps, is at most CHOICE_RANK_ERROR of the n / 2 pairs
    # wherever the cap leaves room, and exactly that where the share is below the cap.
    eps = np.sqrt(8 * rho * share / len(CHOICE_STAGES))
    rank_sd = 2 * np.sqrt(2) / eps / (n // 2)
    if share < CHOICE_SHARE:
        assert rank_sd == pytest.approx(CHOICE_RANK_ERROR)
    else:
        assert rank_sd >= CHOICE_RANK_ERROR * (1 - 1e-12)
    # n = 4000 at rho = 1/16 is where the cap and the precision meet (the grids' hardest choice)
    if (n, rho) == (4000, 1 / 16):
        assert share == CHOICE_SHARE


def test_sparse_baskets_choose_between_gaussian_cm_and_plan():
    rng = np.random.default_rng(2)
    x = scipy.sparse.random(3000, 50, density=0.05, format="csr", random_state=2)
    x.data[:] = 1.0
    result = dpmean.mean(x, rho=0.5, method="auto", bounds=(0.0, 1.0),
                         random_state=int(rng.integers(9)))
    assert set(result.diagnostics["predicted_noise"]) == {"gaussian", "cm", "plan"}
    assert sum(result.ledger.values()) == pytest.approx(0.5, rel=1e-12)
    assert result.mean.shape == (50,)


def test_epsilon_delta_requests_and_bad_options():
    x = np.random.default_rng(0).normal(0.0, 1.0, size=(2000, 4))
    result = dpmean.mean(x, epsilon=1.0, delta=1e-6, method="auto", bounds=(-10, 10),
                         random_state=0)
    assert result.epsilon == 1.0 and result.delta == 1e-6
    assert sum(result.ledger.values()) == pytest.approx(result.rho, rel=1e-12)
    with pytest.raises(InvalidParameterError, match="unknown option"):
        dpmean.mean(x, rho=1.0, method="auto", bounds=(-10, 10), threshold_share=0.1)


def test_plan_is_not_chosen_for_a_skew_its_budget_cannot_use():
    # Skewed variances, but a budget at which PLAN's variance stage cannot place its medians
    # (variance.pair_median_resolves, a public check): PLAN then runs without scaling, so the
    # skew promises nothing and its larger preprocessing share makes it IOME with less noise
    # budget; auto must not choose it on the skew alone.
    from dpmean.api import build_estimator

    x, box = skewed(4, n=4000, d=256)
    rho = 0.002
    rest = rho * (1 - CHOICE_SHARE)
    assert "variance" not in build_estimator("plan", rest, bounds=box).budget_plan(4000, 256)
    assert "variance" in build_estimator("plan", 1.0, bounds=box).budget_plan(4000, 256)
    result = dpmean.mean(x, rho=rho, method="auto", bounds=box, random_state=2)
    predicted = result.diagnostics["predicted_noise"]
    assert predicted["plan"] > predicted["iome"]
    assert result.diagnostics["chosen"] != "plan"


def test_a_choice_the_budget_cannot_place_spends_nothing_and_runs_plan():
    """At n = 569 and epsilon = 1 the choice's medians would be noise (choice_resolves, a public
    check): auto then is PLAN on the whole budget, and says so."""
    from dpmean.estimators.auto import AutoMean

    rng = np.random.default_rng(3)
    x = rng.normal(0.0, 1.0, size=(569, 30))
    estimator = dpmean.api.build_estimator("auto", None, epsilon=1.0, delta=1e-6,
                                           bounds=(-5, 5), random_state=1)
    assert not estimator.granted(569, 30).choice_resolves(569)
    assert AutoMean(0.5, bounds=(-5, 5)).choice_resolves(4000)
    result = estimator.estimate(x)
    assert result.diagnostics["chosen"] == "plan"
    assert list(result.ledger) == ["release"]
    assert "predicted_noise" not in result.diagnostics
    same = dpmean.mean(x, rho=result.budget.rho, bounds=(-5, 5), method="plan", random_state=1)
    np.testing.assert_allclose(result.mean, same.mean)


@pytest.mark.parametrize("rows,box,expected", [
    (lambda rng: rng.normal(0.0, 1.0, (100, 1)), (-1e6, 1e6), "cm"),
    (lambda rng: rng.normal(100.0, 10.0, (100, 1)), (0.0, 1e6), "cm"),
    (lambda rng: np.clip(rng.normal(50.0, 5.0, (100, 1)), 0, 100), (0.0, 100.0), "gaussian"),
    (lambda rng: rng.normal(1e6 - 100, 1.0, (100, 1)), (0.0, 1e6), "gaussian"),
], ids=["loose-symmetric", "loose-one-sided", "tight", "at-the-far-face"])
def test_below_plans_minimum_one_count_asks_whether_the_rows_lie_near_the_origin(
        rows, box, expected):
    # A user trial: n = 100, d = 1, rho = 0.1 in +-10^6, the choice unplaced and PLAN's
    # minimum n not met: auto ran the Gaussian mechanism, whose noise follows the box (error
    # 4.4e4, cm's 0.085). One count of the rows within half the Gaussian mechanism's predicted
    # error from the origin (2.4e4 here), at the smallest share whose sd is at most n/4 / 3
    # (10%: sd 7.1, a margin of 25 for rows all near, 3.5 sd), runs cm where it exceeds 3n/4,
    # else the Gaussian mechanism as before (rows all far: 75 above, 10 sd). The count's
    # stage is in the ledger, which adds up to rho.
    from dpmean.estimators.auto import NEAR_ORIGIN_STAGE

    auto = AutoMean(0.1, bounds=box)
    assert not auto.choice_resolves(100) and auto.near_origin_share(100, 1) == 0.1
    for seed in range(10):
        x = rows(np.random.default_rng(seed))
        result = dpmean.mean(x, rho=0.1, bounds=box, random_state=seed)
        assert result.diagnostics["chosen"] == expected
        assert list(result.ledger) == [NEAR_ORIGIN_STAGE, "release"]
        assert result.ledger[NEAR_ORIGIN_STAGE] == pytest.approx(0.01)
        assert sum(result.ledger.values()) == pytest.approx(0.1)
    # Where PLAN runs, or with a private box, nothing is asked.
    assert AutoMean(1.0, bounds=box).near_origin_share(1000, 1) is None
    assert AutoMean(0.1).near_origin_share(100, 1) is None


def test_an_unplaced_choice_runs_iome_where_plan_would_spend_on_variances():
    # A user trial: N(100, 10), n = 500, d = 10 in +-10^6 at rho = 0.1. The choice cannot be
    # placed, and PLAN, run in its place, spent three quarters of its preprocessing on
    # variances: its centre (rho / 256 over 16 medians) stayed at 0, 316 from the rows
    # (median error 13.3 against IOME's 1.3; one release in 40 erred 4,735). IOME now runs
    # first there (a public check: n, d, rho); where PLAN buys no variances it still runs.
    x = np.random.default_rng(1).normal(100.0, 10.0, size=(500, 10))
    auto = AutoMean(0.1, bounds=(-1e6, 1e6))
    assert not auto.choice_resolves(500)
    assert auto.unresolved_choice(500, 10, sparse=False) == ("iome", "plan", "gaussian")
    assert auto.unresolved_choice(500, 10, sparse=True) == ("plan", "gaussian")
    result = dpmean.mean(x, rho=0.1, bounds=(-1e6, 1e6), random_state=0)
    assert result.diagnostics["chosen"] == "iome"
    same = dpmean.mean(x, rho=0.1, bounds=(-1e6, 1e6), method="iome", random_state=0)
    np.testing.assert_allclose(result.mean, same.mean)
    assert AutoMean(0.028, bounds=(-5, 5)).unresolved_choice(569, 30, False) == (
        "plan", "gaussian")
    # Nor below PLAN's minimum n, where IOME would take the place of cm or the Gaussian
    # mechanism (a review: an MNIST pixel, n = 30, rho = 2, 9x worse).
    small = AutoMean(2.0, bounds=(0, 255))
    plan = small.candidate("plan", 2.0)
    assert 30 < plan.minimum_rows(30, *small.unit_box(30, 1), plan.budget_plan(30, 1))
    assert small.unresolved_choice(30, 1, False) == ("plan", "gaussian")


def test_a_choice_that_would_cost_plan_its_scaling_spends_nothing_and_runs_plan():
    """Gaussian C, d = 2048, n = 10^4: just above the budget at which PLAN resolves its
    variances (its own public guard), the choice's share would take PLAN below it, so auto
    spends nothing on the choice and runs PLAN with scaling. At rho = 1/16 (where the flat 3%
    share did that, docs/results.md) the choice's 0.48% leaves PLAN its scaling, and at rho = 1
    the choice costs PLAN nothing."""
    n, d, half = 10_000, 2048, 50 * 2048**1.5
    box = (-half, half)
    scales = lambda rho: "variance" in AutoMean(rho, bounds=box).candidate(  # noqa: E731
        "plan", rho).budget_plan(n, d)
    lo, hi = 1e-4, 1 / 16  # PLAN's guard: no scaling at lo, scaling at hi
    assert not scales(lo) and scales(hi)
    for _ in range(60):
        mid = np.sqrt(lo * hi)
        lo, hi = (mid, hi) if not scales(mid) else (lo, mid)
    auto = AutoMean(hi * (1 + 1e-6), bounds=box)
    assert auto.choice_resolves(n) and auto.choice_costs_plan_its_scaling(n, d)
    assert auto.budget_plan(n, d) == {"release": auto.rho}
    for rho in (1 / 16, 1.0):
        rich = AutoMean(rho, bounds=box)
        assert not rich.choice_costs_plan_its_scaling(n, d)
        plan = rich.budget_plan(n, d)
        assert "choice norms" in plan and scales(plan["release"])


def test_rows_far_from_the_origin_against_their_spread_do_not_choose_cm():
    """Timestamps near 1.7e9 +- 10^3 in the box [0, 2e9]: the row norms fill a band 10^-8
    nats wide. The median norm was an exponential mechanism on log norms, whose mass then lay
    on the empty nats below the band: in one release of 20 it came out below 10^-10 of its
    value, CM was predicted no noise and chosen, at an error of 2.6e7 (CM clips about the
    origin, 3e9 from the rows). The median norm is now a search of noisy counts."""
    x = 1.7e9 + np.random.default_rng(2).normal(0.0, 1e3, size=(1000, 3))
    for seed in range(20):
        result = dpmean.mean(x, rho=0.1, bounds=(0, 2e9), random_state=seed)
        predicted = result.diagnostics["predicted_noise"]
        # CM's radius is at least the rows' distance from the origin, about 2.9e9
        assert predicted["cm"] > 1e6, seed
        assert result.diagnostics["chosen"] != "cm", seed


def test_one_column_at_both_ends_of_its_range_runs_the_gaussian_mechanism():
    # A user trial: one 0/1 column (22.5% ones), n = 200, rho = 0.1: auto (IOME) and cm, whose
    # radius searches at this budget clip up to a quarter of the rows, clipped the ones onto
    # the zeros and released 1e-81 to 0.06. For one column with public bounds two counts
    # (the rows in the lowest and the highest quarter of the range; sensitivity sqrt(2)) come
    # first, at the smallest share whose sd lets a face of 20% of the rows clear 3 sd by 2
    # (sd <= 0.2 n / 5 = 8: 20% here, sd 7.07), and the Gaussian mechanism runs where both
    # exceed 3 sd (21.2; the ones' 32-60 rows are 1.5-5.5 sd above it: each release misses
    # with probability at most 6.3%, at most 1.3 of 20 expected; 4 or more misses, 4%). Its
    # error is then its noise: sd 1 / (n sqrt(2 rho_release)) = 0.0129, within 4 sd in every
    # release (1 in 16,000 each). The ledger adds up to rho.
    from dpmean.estimators.auto import FACE_MASS_STAGE, FACES_STAGE

    auto = AutoMean(0.1, bounds=(0, 1))
    assert auto.faces_share(200, 1) == pytest.approx(0.2)
    # (The release gets the rest after the faces' 20% and the face mass's 5%.)
    sd = 1.0 / (200 * np.sqrt(2 * 0.075))
    missed = 0
    for seed in range(20):
        x = (np.random.default_rng(seed).random((200, 1)) < 0.225).astype(float)
        result = dpmean.mean(x, rho=0.1, bounds=(0, 1), random_state=seed)
        assert list(result.ledger) == [FACES_STAGE, FACE_MASS_STAGE, "release"]
        assert sum(result.ledger.values()) == pytest.approx(0.1)
        if result.diagnostics["chosen"] != "gaussian":
            missed += 1
            continue
        assert abs(result.mean[0] - x.mean()) <= 4 * sd
    assert missed <= 3


def test_one_column_near_one_end_is_not_sent_to_the_gaussian_mechanism():
    # The counts see no rows at the far end (the highest quarter's count is its noise, above
    # 3 sd with probability 0.13%): the choice runs as before, here a clipping candidate,
    # whose error (rows N(100, 1) in (0, 10^6)) is far below the Gaussian mechanism's noise
    # (10^6 / (n sqrt(2 rho)) = 3,300).
    from dpmean.estimators.auto import FACES_STAGE

    for seed in range(10):
        x = np.random.default_rng(seed).normal(100.0, 1.0, size=(500, 1))
        result = dpmean.mean(x, rho=0.1, bounds=(0, 1e6), random_state=seed)
        assert FACES_STAGE in result.ledger
        assert result.diagnostics["chosen"] != "gaussian"
        assert abs(result.mean[0] - x.mean()) < 10.0


def test_the_faces_counts_are_asked_for_one_column_with_public_bounds_only():
    # Public: n, d, rho, the box. Not for two or more columns, a private box, an unbounded
    # range, or where the counts' noise would exceed 0.2 n / 5 at the largest share (n = 100,
    # rho = 0.1: sd 7.1 against 4).
    assert AutoMean(0.1, bounds=(0, 1)).faces_share(200, 2) is None
    assert AutoMean(0.1).faces_share(200, 1) is None
    assert AutoMean(0.1, bounds=(0, 1)).faces_share(100, 1) is None
    assert AutoMean(1.0, bounds=(0, 1)).faces_share(2000, 1) == pytest.approx(0.02)
    plan = AutoMean(1.0, bounds=(0, 1)).budget_plan(2000, 1)
    assert plan["choice faces"] == pytest.approx(0.02) and sum(plan.values()) == pytest.approx(1.0)


def test_both_ends_are_closed_and_a_private_box_asks_nothing():
    # Answers 2 and 4 on a 1-5 scale sit on the quarters of the range: the lowest quarter is
    # [1, 2] and the highest [4, 5], both closed (a review: 4 fell outside an open top). A
    # private box (no bounds) is a power of two beyond the rows, its top quarter empty: the
    # counts are not asked there (a review: they cost their share and never fired).
    x = np.repeat([2.0, 4.0], 150)[:, None]
    result = dpmean.mean(x, rho=1.0, bounds=(1, 5), random_state=0)
    assert result.diagnostics["chosen"] == "gaussian"
    inner = AutoMean(0.1).in_box(0.09, (0.0, 4.0))
    assert inner.box_is_private and inner.faces_share(300, 1) is None
    assert "choice faces" not in dpmean.mean(x, rho=0.1, random_state=0).ledger


@pytest.mark.parametrize("share, ones, rho", [(0.01, True, 0.5), (0.03, True, 0.05),
                                              (0.01, False, 0.5)])
def test_a_rare_value_at_a_face_is_not_clipped_onto_the_other(share, ones, rho):
    # A 0/1 flag with 1% ones (n = 5000, rho = 0.05) was released as 1e-83 by cm and by auto,
    # which chose it: cm's search aims to clip 126 rows, and the 50 ones were clipped onto the
    # zeros (a user trial). The face counts see most rows on one face, fewer off it than a
    # candidate clips, and the ones at the far face (``far_from_the_face``): at rho = 0.5 the
    # weighted estimate of their distance (noise 4.4 rows) less the Gaussian mechanism's
    # noise (1.04) clears 1.8 sd by 8.3 sd, and the far quarter's count (noise 10) clears 3 sd
    # by 2 sd; at rho = 0.05, 150 ones clear 1.8 sd (of 14.0) by 7.7 sd. So the Gaussian
    # mechanism runs; its error is its noise, sd 1 / (n sqrt(2 rho_release)), within 4 sd in
    # every release (1 in 16,000 each). The same with the faces swapped (99% ones). (A 1% flag
    # at rho = 0.05, 50 ones against noise 14.0, is missed in about 12% of releases:
    # docs/results.md, "A rare value at a face".)
    n = 5000
    sd = 1.0 / (n * np.sqrt(2 * (1 - 0.02 - 0.05) * rho))
    for seed in range(5):
        rare = np.random.default_rng(seed).random((n, 1)) < share
        x = (rare if ones else ~rare).astype(float)
        result = dpmean.mean(x, rho=rho, bounds=(0, 1), random_state=seed)
        if result.diagnostics["chosen"] == "gaussian":
            assert abs(result.mean[0] - x.mean()) <= 4 * sd
            # The diagnostics say which candidates the face counts left out.
            assert set(result.diagnostics["left_out_at_face"].split(", ")) <= {
                "cm", "iome", "plan"}
        else:
            # Only where the rows off the face outnumber the candidate's clip count and 2 sd
            # (the 3% flag, 150 ones against cm's 129 at noise 24.5: a release in about 13%
            # leaves cm in, and the far quarter's count then misses 3 sd in 4%): its radius then
            # lies among the ones (0.94 in seed 3), not on the zeros, and clips each by little.
            assert result.diagnostics["chosen"] == "cm" and share == 0.03
            assert result.diagnostics["threshold"] >= 0.5


def test_rare_rows_mid_range_are_not_clipped_onto_the_face():
    # Rows off the face but mid-range (5% at U(2, 5) in (0, 10)): no row in the far quarter or
    # on the far face, so counts of the far end cannot see them, and cm clipped them onto the
    # face at 6.4x the Gaussian mechanism's error (a review). The rule reads their distance
    # from the face (``face_mass``'s third value). On given counts (post-processing: the rule
    # is a function of them), n = 5000, rho = 0.05 (the plan's shares), a candidate that
    # clips 129 rows: 120 rows off the face at distance 0.5 each (60 widths) clear 1.8 sd
    # (24.5) beyond the Gaussian mechanism's noise (3.3): left out; the same rows near the
    # face (distance 0.01 each, 1.2 widths), or more rows off it than the candidate clips and
    # two sd, are not.
    n, rho = 5000, 0.05
    auto = AutoMean(rho, bounds=(0, 10))
    plan = auto.budget_plan(n, 1)
    shares = (plan["choice faces"], plan["choice face mass"], plan["release"])

    def loses(off, distance, far=0.0):
        faces = np.array([n - off, far, distance])
        ends = np.array([n - far, far])
        return auto.loses_to_the_face(ends, faces, n, *shares, 129.0)

    assert loses(120, 60.0)
    assert not loses(120, 1.2)
    assert not loses(300, 150.0)
    # 40 ones of a flag at the far face: their distance alone (40 less 3.3, against 1.8 sd of
    # 24.5) would not clear, the far face's and far quarter's counts with it do.
    assert loses(40, 40.0, far=40.0)
    assert not loses(40, 40.0)


def test_one_column_in_its_own_range_needs_a_clear_gain_to_clip():
    # Ages floored at 18 in (0, 120), n = 2000, rho = 1: IOME was predicted 1.25x better than
    # the Gaussian mechanism, with no bias, and was 6x worse (0.24 against 0.039 over 20
    # seeds: it clips the long upper tail, nothing balances it below; a user trial). For one
    # column with public bounds a clipping candidate must be predicted ONE_COLUMN_MARGIN (2)
    # times better: the Gaussian mechanism runs, its error its noise, sd 120 / (n sqrt(2
    # rho_release)), within 4 sd in every release (1 in 16,000 each). A loose range still
    # clips (``test_one_column_near_one_end_is_not_sent_to_the_gaussian_mechanism``).
    n = 2000
    auto = AutoMean(1.0, bounds=(0, 120))
    rho_release = auto.budget_plan(n, 1)["release"]
    sd = 120.0 / (n * np.sqrt(2 * rho_release))
    for seed in range(5):
        rng = np.random.default_rng(seed)
        x = np.clip(np.round(rng.normal(45, 15, (n, 1))), 18, 99)
        result = dpmean.mean(x, rho=1.0, bounds=(0, 120), random_state=seed)
        assert result.diagnostics["chosen"] == "gaussian"
        assert abs(result.mean[0] - x.mean()) <= 4 * sd


def test_a_table_of_columns_in_their_own_ranges_needs_a_clear_gain_to_clip():
    # A survey table (age 18-99, income lognormal(10.8, 0.9) capped at 10^6, a 1-5 scale, a
    # 3% flag, Poisson(2.5) visits; per-column ranges), n = 3000, rho = 0.5: PLAN was
    # predicted 1.2x better than the Gaussian mechanism and ran in every seed, its clip taking
    # the flag's ones for outliers: the flag came out 61% low, 10x the Gaussian mechanism's
    # l2 error (a user trial). With ranges of different widths (box-normalised) a clipping
    # candidate must be predicted ONE_COLUMN_MARGIN (2) times better: the Gaussian mechanism
    # runs, the flag's error its noise, sd sqrt(5) / (n sqrt(2 rho_release)) in widths,
    # within 4 sd in every release (1 in 16,000 each).
    n = 3000
    bounds = {"age": (18, 99), "income": (0, 1e6), "likert": (1, 5), "flag": (0, 1),
              "visits": (0, 20)}
    rng = np.random.default_rng(7)
    table = {"age": rng.integers(18, 100, n).astype(float),
             "income": np.minimum(rng.lognormal(10.8, 0.9, n), 1e6),
             "likert": rng.choice([1.0, 2, 3, 4, 5], n, p=[.1, .2, .3, .25, .15]),
             "flag": (rng.random(n) < 0.03).astype(float),
             "visits": rng.poisson(2.5, n).astype(float)}
    x = np.column_stack(list(table.values()))
    box = (np.array([b[0] for b in bounds.values()], dtype=float),
           np.array([b[1] for b in bounds.values()], dtype=float))
    rho_release = AutoMean(0.5, bounds=box).budget_plan(n, 5)["release"]
    sd = np.sqrt(5) / (n * np.sqrt(2 * rho_release))
    for seed in range(5):
        result = dpmean.mean(x, rho=0.5, bounds=box, random_state=seed)
        assert result.diagnostics["chosen"] == "gaussian"
        assert abs(result.mean[3] - table["flag"].mean()) <= 4 * sd
    # Ranges of one width are not a table of own ranges: Gaussian C's rows still run PLAN.
    c = rng.normal(10.0, 64 / np.arange(1, 65), size=(4000, 64))
    assert dpmean.mean(c, rho=0.5, bounds=(-1e4, 1e4),
                       random_state=0).diagnostics["chosen"] == "plan"


def test_iome_runs_one_column_with_its_robust_search_share():
    # Poisson(2.5) visits in (0, 20), n = 3000, rho = 0.1: IOME's 1% search share aims to clip
    # a sixth of the rows at this budget, the count's upper tail with them, which the tail
    # histogram cannot see (its bias predicted 0): auto ran it in 16 of 40 releases at 7.7x
    # the Gaussian mechanism's error (a user trial). For one column with bounds IOME is a
    # candidate with ROBUST_IOME_SHARE, which clips about sqrt(n) rows: wherever it runs, it
    # runs so (its error over 40 releases 1.4x the Gaussian mechanism's, not 7.7x).
    n = 3000
    x = np.random.default_rng(1).poisson(2.5, (n, 1)).astype(float)
    auto = AutoMean(0.1, bounds=(0, 20))
    plain = auto.candidate("iome", 0.09).budget_plan(n, 1)
    robust = auto.candidate("iome", 0.09, robust=True).budget_plan(n, 1)
    assert robust["threshold"] > 10 * plain["threshold"]
    ran = 0
    for seed in range(10):
        result = dpmean.mean(x, rho=0.1, bounds=(0, 20), random_state=seed)
        if result.diagnostics["chosen"] == "iome":
            ran += 1
            assert result.diagnostics["robust_iome"] is True
            # About sqrt(n) and its rank error (106 rows), where the 1% share aims at 500.
            assert n - result.diagnostics["target_rank"] < 0.05 * n
    assert ran > 0


def test_rows_near_a_face_off_it_still_choose_a_clipping_candidate():
    # 90% zeros and 10% spread over (0, 0.2) in (0, 1): 500 rows off the face, far more than
    # any candidate clips, and none in the far quarter: the choice runs as before (cm, at
    # about half the Gaussian mechanism's error), and so do tight rows off every face.
    n = 5000
    for seed in range(3):
        rng = np.random.default_rng(seed)
        zero_inflated = np.where(rng.random((n, 1)) < 0.9, 0.0, rng.uniform(0, 0.2, (n, 1)))
        tight = rng.normal(0.1, 0.01, (n, 1))
        for x in (zero_inflated, tight):
            result = dpmean.mean(x, rho=0.5, bounds=(0, 1), random_state=seed)
            assert result.diagnostics["chosen"] != "gaussian"
            assert "left_out_at_face" not in result.diagnostics


def test_a_small_table_in_its_own_ranges_weighs_its_spread_before_a_clip():
    # Below the choice's n (n sqrt(rho) of about 174) a table of columns in ranges of
    # different widths ran IOME or PLAN unweighed, which clipped a survey's 20% flag to about
    # 15% in every release (four user trials). Now one count of close row pairs (2% of rho)
    # decides: rows spread over their ranges get the Gaussian mechanism, rows in ranges far
    # looser than they are the clipping candidate (IOME was 40x better there). A table in one
    # range still runs the unresolved choice, without the count.
    rng = np.random.default_rng(12)
    n = 500
    survey = np.column_stack([rng.uniform(18, 90, n), rng.lognormal(10.5, 0.8, n),
                              rng.integers(1, 6, n), rng.uniform(size=n) < 0.2])
    ranges = ([18, 0, 1, 0], [90, 1e6, 5, 1])
    plan = AutoMean(rho=0.1, bounds=ranges).budget_plan(n, 4)
    assert plan == pytest.approx({"choice spread": 0.002, "release": 0.098})
    loose = np.column_stack([rng.normal(50, 5, n), rng.normal(3, 0.5, n),
                             rng.normal(1000, 50, n), rng.normal(0.5, 0.1, n)])
    loose_ranges = ([0, 0, 0, 0], [1e4, 100, 1e6, 10])
    for seed in range(5):
        result = dpmean.mean(survey, rho=0.1, bounds=ranges, random_state=seed)
        assert result.diagnostics["chosen"] == "gaussian"
        assert result.diagnostics["rows_spread"] is True
        assert set(result.ledger) == {"choice spread", "release"}
        result = dpmean.mean(loose, rho=0.1, bounds=loose_ranges, random_state=seed)
        assert result.diagnostics["chosen"] in ("iome", "plan")
        assert result.diagnostics["rows_spread"] is False
    one_range = dpmean.mean(survey / [90, 1e6, 5, 1], rho=0.1, bounds=(0, 1), random_state=3)
    assert one_range.diagnostics["chosen"] in ("iome", "plan")
    assert "choice spread" not in one_range.ledger
    # An (epsilon, delta) budget is calibrated with the count among the choice's stages.
    approx = dpmean.mean(survey, epsilon=1.0, delta=1e-6, bounds=ranges, random_state=0)
    assert set(approx.ledger) == {"choice spread", "release"}


def test_the_spread_count_runs_on_sparse_input():
    # A review: on scipy.sparse input in ranges of different widths the count's pair
    # distances were refused by the sparse engine, after the charge. The sparse engine answers
    # them (O(nnz)), within rounding of the dense engines'.
    from dpmean.engines.memory import InMemoryEngine
    from dpmean.engines.sparse import SparseEngine

    rng = np.random.default_rng(5)
    x = (rng.uniform(size=(500, 4)) < 0.3) * rng.uniform(0, 3, size=(500, 4))
    x[:, 1] *= 1e5
    lo, hi = np.zeros(4), np.array([2.0, 1e5, 5.0, 1.0])
    order = rng.permutation(500)
    sparse = SparseEngine(scipy.sparse.csr_matrix(x), lo, hi, 1 / hi).pair_distances(order)
    dense = InMemoryEngine(x, lo, hi, 1 / hi).pair_distances(order)
    for got, expected in zip(sparse, dense, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    result = dpmean.mean(scipy.sparse.csr_matrix(x), rho=0.1, bounds=(lo, hi), random_state=0)
    assert set(result.ledger) == {"choice spread", "release"}
    assert "rows_spread" in result.diagnostics


def test_the_spread_count_is_bought_only_where_a_clip_could_run():
    # A trial: at n = 200, rho = 0.02 IOME and PLAN miss their minimum n, and the count took
    # 10% of rho to choose the Gaussian mechanism, the only candidate left.
    ranges = (np.zeros(4), np.array([1e3, 1e4, 1e5, 1e6]))
    estimator = AutoMean(rho=0.02, bounds=ranges)
    assert not any(estimator.runs(name, 0.8 * 0.02, 200, 4) for name in ("iome", "plan"))
    assert estimator.budget_plan(200, 4) == {"release": 0.02}
    assert "choice spread" in AutoMean(rho=0.1, bounds=ranges).budget_plan(200, 4)


def test_a_flag_beside_generous_ranges_is_not_taken_for_loose_rows():
    # A trial: ages N(45, 12) in (0, 120), incomes in (0, 10^6) and a 20% flag, n = 500,
    # rho = 0.1: half the row pairs lay within 1/8 of the box's diagonal, so the count ran
    # IOME, which released the flag at 0.03-0.06. Pairs now count as near within 1/8 of the
    # narrowest width, and IOME needs three quarters of them: the flag parts a third.
    rng = np.random.default_rng(500)
    n = 500
    x = np.column_stack([rng.normal(45, 12, n).clip(0, 120), rng.lognormal(10.5, 0.8, n),
                         rng.uniform(size=n) < 0.2])
    for seed in range(5):
        result = dpmean.mean(x, rho=0.1, bounds=([0, 0, 0], [120, 1e6, 1]), random_state=seed)
        assert result.diagnostics["chosen"] == "gaussian"


def test_a_flag_in_a_table_of_own_ranges_is_not_clipped_onto_its_zeros():
    # A trial: a 10% flag beside a lognormal amount, N(30, 5) and an exponential column (n =
    # 1000, rho = 0.3) came out 85% low in 57 releases of 100: the tail histogram cannot see
    # its ones, and IOME and PLAN, predicted 4x better on the other columns, clipped them.
    # One release of the columns' end counts (stage "choice column ends", sensitivity
    # sqrt(2 d)) now leaves out a candidate that would clip a column's smaller end.
    n, box = 1000, ([0, 0, 0, 0], [200, 100, 50, 1])
    auto = AutoMean(rho=0.3, bounds=box)
    plan = auto.budget_plan(n, 4)
    assert plan["choice column ends"] == pytest.approx(0.05 * 0.3)
    assert sum(plan.values()) == pytest.approx(0.3)
    assert AutoMean(rho=0.3, bounds=(0, 1)).budget_plan(n, 4).get("choice column ends") is None
    flags, stds = [], []
    for seed in range(10):
        rng = np.random.default_rng(100 + seed)
        x = np.column_stack([rng.lognormal(2, 1, n), rng.normal(30, 5, n),
                             rng.exponential(3, n), rng.random(n) < 0.1]).astype(float)
        result = dpmean.mean(x, rho=0.3, bounds=box, random_state=seed)
        assert sum(result.ledger.values()) == pytest.approx(0.3)
        assert "choice column ends" in result.ledger
        flags.append(result.mean[3] - x[:, 3].mean())
        stds.append(result.diagnostics["noise_std"][3])
    # A clip of the ones was 0.074 low; the ten releases' mean error is within 4 of the sd of
    # a mean of ten releases' noise (each release's stated noise on the flag).
    assert abs(np.mean(flags)) < 4 * np.sqrt(np.mean(np.square(stds)) / 10)
    # The rule: a two-sided column (both ends above 3 sd, at most half the rows between),
    # its smaller end within 3x the clip count (less 2 sd).
    from dpmean.mechanisms.gaussian import gaussian_noise_std

    sd = gaussian_noise_std(np.sqrt(8.0), 0.015)
    ends = np.array([[500.0, 10.0, 900.0, 913.0], [0.0, 0.0, 20.0, 87.0]])
    assert AutoMean.clips_a_column_end(ends, n, 0.015, 54.0)
    assert not AutoMean.clips_a_column_end(ends, n, 0.015, (87.0 - 2 * sd) / 3 - 1.0)
    ends[1, 3] = 2.0 * sd  # a flag's ones under the noise: not seen
    assert not AutoMean.clips_a_column_end(ends, n, 0.015, 283.0)
    # A bell's light tails put about 1% of the rows at each end, with most between: not
    # two-sided (a review: N(50, 11) in (0, 100) at n = 20,000 had IOME left out at 1.8x).
    bell = np.array([[230.0], [220.0]])
    assert not AutoMean.clips_a_column_end(bell, 20000, 0.02, 283.0)


def test_a_table_of_bells_keeps_its_clipping_candidates():
    # A review of the column ends: nine N(50, 11) columns in (0, 100) beside N(500, 100) in
    # (0, 1000), n = 20,000, rho = 1: each column's tails put about 1% of the rows at each end,
    # which the first rule took for a flag, and IOME (0.126e-3 widths) was left out for the
    # Gaussian mechanism (0.360e-3). A bell is not two-sided: most rows lie between its ends.
    rng = np.random.default_rng(100)
    x = rng.normal(50, 11, (20000, 10))
    x[:, 0] = rng.normal(500, 100, 20000)
    hi = np.full(10, 100.0)
    hi[0] = 1000.0
    for seed in range(2):
        result = dpmean.mean(x, rho=1.0, bounds=(np.zeros(10), hi), random_state=seed)
        assert "choice column ends" in result.ledger
        assert "left_out_at_column_end" not in result.diagnostics
        assert "left_out_at_face" not in result.diagnostics  # where the first rule said so
