"""zCDP conversions against published numbers and brute force; the ledger's refusals; budgets."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpmean
from dpmean.accounting import (
    PrivacyLedger,
    approx_dp_to_zcdp,
    classic_zcdp_to_approx_dp,
    exponential_mechanism_zcdp,
    gaussian_mechanism_zcdp,
    gaussian_sigma,
    pure_dp_to_zcdp,
    resolve_budget,
    zcdp_to_approx_dp,
)
from dpmean.errors import BudgetExceededError, InvalidParameterError, PrivacyAccountingError

RHOS = np.logspace(-4, 1, 21)
DELTAS = np.logspace(-12, -2, 11)
EPSILONS = np.logspace(-3, 1.5, 19)


def brute_force_cks(rho: float, delta: float) -> float:
    """The CKS objective on a dense grid of alpha, in plain numpy, no optimiser."""
    alpha = 1.0 + np.logspace(-8, 8, 400_001)
    value = alpha * rho + (
        np.log(1 / delta) + (alpha - 1) * np.log1p(-1 / alpha) - np.log(alpha)
    ) / (alpha - 1)
    return max(0.0, float(value.min()))


# ------------------------------------------------------------------------------------------
# Conversions
# ------------------------------------------------------------------------------------------


def test_published_cross_check_numbers():
    assert round(zcdp_to_approx_dp(0.08, 1e-6), 4) == 1.8974
    assert round(classic_zcdp_to_approx_dp(0.08, 1e-6), 4) == 2.1826


def test_classic_formula():
    rho, delta = 0.3, 1e-5
    assert classic_zcdp_to_approx_dp(rho, delta) == pytest.approx(
        rho + 2 * math.sqrt(rho * math.log(1 / delta)), rel=1e-15
    )


@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("rho", RHOS)
def test_tight_is_never_above_classic_and_never_negative(rho, delta):
    tight = zcdp_to_approx_dp(rho, delta)
    assert 0.0 <= tight <= classic_zcdp_to_approx_dp(rho, delta)


def test_tight_is_strictly_better_than_classic_in_the_usual_range():
    assert zcdp_to_approx_dp(0.5, 1e-6) < 0.95 * classic_zcdp_to_approx_dp(0.5, 1e-6)


@pytest.mark.parametrize("delta", [1e-12, 1e-6, 1e-2, 0.3])
@pytest.mark.parametrize("rho", [1e-4, 1e-3, 0.01, 0.08, 0.5, 2.0, 10.0])
def test_optimiser_matches_brute_force_grid(rho, delta):
    grid = brute_force_cks(rho, delta)
    found = zcdp_to_approx_dp(rho, delta)
    assert found <= grid + 1e-6
    # and it is a real minimum, not something below the true infimum
    assert found >= grid - 1e-4 * max(grid, 1.0)


def test_zero_rho_and_tiny_rho():
    assert zcdp_to_approx_dp(0.0, 1e-6) == 0.0
    # rho so small that the two output distributions are within delta in total variation:
    # (0, delta)-DP holds, and the clip at 0 must not produce a negative epsilon
    assert zcdp_to_approx_dp(1e-300, 1e-6) == 0.0
    assert zcdp_to_approx_dp(1e-3, 0.9) >= 0.0


@pytest.mark.parametrize("delta", DELTAS)
def test_epsilon_is_increasing_in_rho(delta):
    eps = [zcdp_to_approx_dp(float(r), float(delta)) for r in RHOS]
    assert all(b > a for a, b in zip(eps, eps[1:], strict=False))


@pytest.mark.parametrize("rho", RHOS)
def test_epsilon_is_decreasing_in_delta(rho):
    eps = [zcdp_to_approx_dp(float(rho), float(d)) for d in DELTAS]
    assert all(b < a for a, b in zip(eps, eps[1:], strict=False))


@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_approx_dp_to_zcdp_round_trip(epsilon, delta):
    rho = approx_dp_to_zcdp(epsilon, delta)
    assert rho > 0
    back = zcdp_to_approx_dp(rho, delta)
    assert back <= epsilon + 1e-9
    assert abs(back - epsilon) <= 1e-6
    # the returned rho is (nearly) the largest: a slightly larger one overshoots
    assert zcdp_to_approx_dp(rho * (1 + 1e-6), delta) > epsilon


@pytest.mark.parametrize("delta", [1e-9, 1e-6, 1e-3])
def test_approx_dp_to_zcdp_is_increasing_in_epsilon(delta):
    rhos = [approx_dp_to_zcdp(float(e), delta) for e in EPSILONS]
    assert all(b > a for a, b in zip(rhos, rhos[1:], strict=False))


def test_approx_dp_to_zcdp_beats_inverting_the_classic_bound():
    eps, delta = 1.0, 1e-6
    log_inv = math.log(1 / delta)
    classic_rho = (math.sqrt(log_inv + eps) - math.sqrt(log_inv)) ** 2
    assert approx_dp_to_zcdp(eps, delta) > classic_rho
    assert classic_zcdp_to_approx_dp(classic_rho, delta) == pytest.approx(eps)


def test_mechanism_conversions():
    assert pure_dp_to_zcdp(1.0) == 0.5
    assert pure_dp_to_zcdp(0.2) == pytest.approx(0.02)
    assert exponential_mechanism_zcdp(1.0) == 0.125
    assert exponential_mechanism_zcdp(2.0) == 0.5
    assert gaussian_mechanism_zcdp(2.0, 4.0) == pytest.approx(4.0 / 32.0)
    assert gaussian_sigma(3.0, 0.5) == pytest.approx(3.0)
    for sens, rho in [(1.0, 0.1), (0.3, 2.0), (5.0, 1e-4)]:
        assert gaussian_mechanism_zcdp(sens, gaussian_sigma(sens, rho)) == pytest.approx(rho)


@pytest.mark.parametrize(
    "call",
    [
        lambda: zcdp_to_approx_dp(-0.1, 1e-6),
        lambda: zcdp_to_approx_dp(0.1, 0.0),
        lambda: zcdp_to_approx_dp(0.1, 1.0),
        lambda: zcdp_to_approx_dp(float("nan"), 1e-6),
        lambda: approx_dp_to_zcdp(0.0, 1e-6),
        lambda: approx_dp_to_zcdp(float("inf"), 1e-6),
        lambda: approx_dp_to_zcdp(1.0, 2.0),
        lambda: pure_dp_to_zcdp(-1.0),
        lambda: gaussian_mechanism_zcdp(1.0, 0.0),
        lambda: gaussian_sigma(1.0, 0.0),
        lambda: gaussian_sigma(True, 1.0),
    ],
)
def test_conversions_reject_bad_values(call):
    with pytest.raises(InvalidParameterError):
        call()


# ------------------------------------------------------------------------------------------
# resolve_budget
# ------------------------------------------------------------------------------------------


def test_resolve_budget_passes_rho_through():
    assert resolve_budget(0.5) == 0.5
    assert resolve_budget(rho=2) == 2.0
    assert isinstance(resolve_budget(rho=np.float32(0.25)), float)


def test_resolve_budget_converts_epsilon_delta():
    rho = resolve_budget(epsilon=1.0, delta=1e-6)
    assert rho == approx_dp_to_zcdp(1.0, 1e-6)
    assert zcdp_to_approx_dp(rho, 1e-6) <= 1.0


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({}, "no privacy budget given"),
        ({"rho": 1.0, "epsilon": 1.0, "delta": 1e-6}, "not both"),
        ({"rho": 1.0, "epsilon": 1.0}, "not both"),
        ({"rho": 1.0, "delta": 1e-6}, "not both"),
        ({"epsilon": 1.0}, r"without delta.*zCDP \(Gaussian noise\).*pure epsilon-DP"),
        ({"epsilon": 1.0}, r"delta=1e-6.*or give rho"),
        ({"delta": 1e-6}, "delta was given without epsilon"),
        ({"rho": 0.0}, "rho must be positive"),
        ({"rho": -1.0}, "rho must be positive"),
        ({"rho": float("nan")}, "rho must be a number, got NaN"),
        ({"rho": float("inf")}, "rho must be finite"),
        ({"rho": "0.5"}, "rho must be a number.*str"),
        ({"rho": True}, "rho must be a number.*bool"),
        ({"epsilon": 0.0, "delta": 1e-6}, "epsilon must be positive"),
        ({"epsilon": -1.0, "delta": 1e-6}, "epsilon must be positive"),
        ({"epsilon": float("inf"), "delta": 1e-6}, "epsilon must be finite"),
        ({"epsilon": float("nan"), "delta": 1e-6}, "epsilon must be a number, got NaN"),
        ({"epsilon": [1.0], "delta": 1e-6}, "epsilon must be a number.*list"),
        ({"epsilon": 1.0, "delta": 0.0}, "delta must be positive"),
        ({"epsilon": 1.0, "delta": 1.0}, r"delta must be in \(0, 1\)"),
        ({"epsilon": 1.0, "delta": 5.0}, r"delta must be in \(0, 1\)"),
        ({"epsilon": 1.0, "delta": float("nan")}, "delta must be a number, got NaN"),
        ({"epsilon": 1.0, "delta": False}, "delta must be a number.*bool"),
    ],
)
def test_resolve_budget_errors(kwargs, message):
    with pytest.raises(InvalidParameterError, match=message):
        resolve_budget(**kwargs)


def test_invalid_parameter_error_is_a_value_error():
    with pytest.raises(ValueError):
        resolve_budget()


# ------------------------------------------------------------------------------------------
# PrivacyLedger
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [0.0, -1.0, float("nan"), float("inf"), "1", True, None])
def test_ledger_rejects_bad_budget(budget):
    with pytest.raises(InvalidParameterError, match="budget"):
        PrivacyLedger(budget)


def test_overspending_plan_raises_before_anything_is_charged():
    ledger = PrivacyLedger(1.0)
    with pytest.raises(BudgetExceededError, match=r"centre=0\.5.*noise=0\.6.*1\.1.*budget rho=1"):
        ledger.plan({"centre": 0.5, "noise": 0.6})
    assert ledger.spent == {}
    assert ledger.total_spent == 0.0
    assert ledger.remaining == 1.0
    # the failed plan left no reservation behind: a plan that fits still works
    assert ledger.plan({"centre": 0.4, "noise": 0.6}) == {"centre": 0.4, "noise": 0.6}


def test_plan_returns_a_float_copy_and_tolerates_rounding():
    rho = 0.7
    stages = {"a": rho * 0.1, "b": rho * 0.2, "c": rho * 0.7}
    ledger = PrivacyLedger(rho)
    planned = ledger.plan(stages)
    assert planned == stages and planned is not stages
    planned["a"] = 100.0
    ledger.charge("a", rho * 0.1)  # the ledger kept its own copy
    assert all(isinstance(v, float) for v in PrivacyLedger(1).plan({"x": 1}).values())


@pytest.mark.parametrize(
    "stages",
    [
        {"a": -0.1},
        {"a": float("nan")},
        {"a": float("inf")},
        {"a": "0.1"},
        {1: 0.1},
        {"": 0.1},
    ],
)
def test_plan_rejects_bad_stages(stages):
    with pytest.raises(InvalidParameterError):
        PrivacyLedger(1.0).plan(stages)


def test_planning_twice_must_fit_together():
    ledger = PrivacyLedger(1.0)
    ledger.plan({"a": 0.5})
    ledger.plan({"b": 0.4})
    ledger.plan({"a": 0.5})  # restating the same amount is fine
    with pytest.raises(BudgetExceededError, match="budget"):
        ledger.plan({"c": 0.2})
    with pytest.raises(InvalidParameterError, match="already planned"):
        ledger.plan({"a": 0.1})
    ledger.plan({"c": 0.1})


def test_charges_are_recorded_in_charge_order():
    ledger = PrivacyLedger(1.0)
    ledger.plan({"noise": 0.3, "threshold": 0.2})
    assert ledger.charge("threshold", 0.2) == 0.2
    ledger.charge("noise", 0.3)
    assert list(ledger.spent) == ["threshold", "noise"]
    assert ledger.total_spent == math.fsum(ledger.spent.values())
    assert ledger.total_spent == pytest.approx(0.5, rel=1e-15)
    assert ledger.remaining == pytest.approx(0.5)
    copy = ledger.spent
    copy["noise"] = 0.0
    assert ledger.spent["noise"] == 0.3


def test_an_unplanned_stage_is_refused():
    # The review's example: planning 'centre' and charging a misspelt 'centr' succeeded.
    ledger = PrivacyLedger(1.0)
    ledger.plan({"centre": 0.25, "noise": 0.75})
    with pytest.raises(PrivacyAccountingError, match="'centr' was never planned"):
        ledger.charge("centr", 0.25)
    assert ledger.spent == {}
    with pytest.raises(PrivacyAccountingError, match="never planned"):
        PrivacyLedger(1.0).charge("a", 0.1)


def test_a_stage_charged_twice_is_refused_and_records_nothing_more():
    ledger = PrivacyLedger(1.0)
    ledger.plan({"threshold": 0.2, "noise": 0.8})
    ledger.charge("threshold", 0.1)
    with pytest.raises(PrivacyAccountingError, match="'threshold' was charged already"):
        ledger.charge("threshold", 0.1)
    assert ledger.spent == {"threshold": 0.1}


def test_over_charging_a_planned_stage_raises_and_records_nothing():
    ledger = PrivacyLedger(1.0)
    ledger.plan({"threshold": 0.2, "noise": 0.8})
    with pytest.raises(BudgetExceededError, match="'threshold'.*0.25.*0.2 planned"):
        ledger.charge("threshold", 0.25)
    assert ledger.spent == {}
    ledger.charge("threshold", 0.2)  # exactly the plan is fine
    ledger.charge("noise", 0.8)
    assert ledger.total_spent == pytest.approx(1.0)
    assert ledger.remaining == pytest.approx(0.0, abs=1e-15)
    ledger.verify()


def test_verify_refuses_a_ledger_that_does_not_add_up_to_its_plan():
    ledger = PrivacyLedger(1.0)
    ledger.plan({"centre": 0.25, "noise": 0.75, "unused": 0.0})
    ledger.charge("centre", 0.25)
    with pytest.raises(PrivacyAccountingError, match="'noise' was planned at rho=0.75 but "
                                                     "charged rho=0"):
        ledger.verify()
    ledger.charge("noise", 0.5)
    with pytest.raises(PrivacyAccountingError, match="does not add up"):
        ledger.verify()


def test_an_estimator_whose_mechanism_skips_its_charge_cannot_release(monkeypatch):
    import dpmean

    def uncharged(engine, view, radius, *, rho, ledger, rng, secure=False, stage="noise",
                  clipped_sum=None):
        return np.zeros(engine.d), 1.0

    monkeypatch.setattr("dpmean.estimators.iome.noisy_clipped_mean", uncharged)
    x = np.random.default_rng(0).normal(size=(500, 3))
    with pytest.raises(PrivacyAccountingError, match="'noise'"):
        dpmean.mean(x, rho=1.0, bounds=(-5, 5), method="cm", random_state=0)


@pytest.mark.parametrize("rho", [-0.1, float("nan"), float("inf"), "0.1", True])
def test_charge_rejects_bad_rho(rho):
    ledger = PrivacyLedger(1.0)
    ledger.plan({"a": 1.0})
    with pytest.raises(InvalidParameterError):
        ledger.charge("a", rho)
    assert ledger.spent == {}


def test_total_is_fsum_of_many_small_charges():
    ledger = PrivacyLedger(1.0)
    ledger.plan({f"s{i}": 1e-3 for i in range(1000)})
    for i in range(1000):
        ledger.charge(f"s{i}", 1e-3)
    assert ledger.total_spent == math.fsum(ledger.spent.values())
    assert ledger.total_spent == pytest.approx(1.0)
    assert ledger.remaining >= 0.0
    ledger.verify()


def test_ledger_in_epsilon_names_its_unit():
    ledger = PrivacyLedger(2.0, unit="epsilon")
    with pytest.raises(BudgetExceededError, match="epsilon=2.5.*budget epsilon=2"):
        ledger.plan({"a": 2.5})
    with pytest.raises(InvalidParameterError, match="unit"):
        PrivacyLedger(1.0, unit="delta")


def test_repr_is_readable():
    ledger = PrivacyLedger(1.0)
    ledger.plan({"noise": 0.25})
    ledger.charge("noise", 0.25)
    text = repr(ledger)
    assert text.startswith("PrivacyLedger(rho:")
    assert "budget=1" in text and "noise=0.25" in text and "remaining=0.75" in text


plans = st.lists(
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False, allow_infinity=False),
    min_size=1,
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(
    budget=st.floats(min_value=1e-8, max_value=1e4, allow_nan=False, allow_infinity=False),
    weights=plans,
    pieces=st.integers(min_value=1, max_value=5),
    extra=st.floats(min_value=0.0, max_value=2.0, allow_nan=False, allow_infinity=False),
)
def test_ledger_total_never_exceeds_budget(budget, weights, pieces, extra):
    total_weight = math.fsum(weights)
    shares = [w / total_weight if total_weight > 0 else 0.0 for w in weights]
    plan = {f"stage{i}": budget * share for i, share in enumerate(shares)}
    ledger = PrivacyLedger(budget)
    # A plan that fits up to rounding is accepted, lowered by that rounding: the amounts it
    # returns (which an estimator draws with) sum to at most the budget exactly.
    granted = ledger.plan(plan)
    assert all(granted[name] <= plan[name] * (1 + 1e-9) for name in plan)
    limit = budget
    for name, rho in granted.items():
        ledger.charge(name, rho)
        assert ledger.total_spent <= limit
    ledger.verify()
    # anything more, planned stage or not, is refused
    for name in [*plan, "unplanned"]:
        with pytest.raises((BudgetExceededError, PrivacyAccountingError)):
            ledger.charge(name, extra * budget / pieces)
        assert ledger.total_spent <= limit
        assert ledger.total_spent == math.fsum(ledger.spent.values())
        assert ledger.remaining >= 0.0


@pytest.mark.parametrize("method, options", [
    ("cm", {}),  # no bounds: the box's share and the rest
    ("iome", {}),
    ("gaussian", {}),
    ("auto", {"bounds": (-1, 1)}),  # the choice's share and the chosen plan
    ("plan", {"bounds": (-1, 1)}),
    ("trimmed", {"bounds": (-1, 1)}),  # d equal shares, each charged 0.5 eps^2
    ("iome-shuffle", {"bounds": (-1, 1)}),  # three rounds' shares
])
def test_a_release_spends_at_most_its_budget_not_an_ulp_more(method, options):
    # Shares of the total summed an ulp above it (0.7000000000000001 for cm at 0.7, the
    # trimmed mean in 20-25 of 90 random budgets): a session charged the budget while the
    # release spent more (two reviews). The exact sum, not a rounded one, is compared.
    rng = np.random.default_rng(0)
    x = rng.normal(0.3, 0.2, size=(3000, 5))
    for seed in range(12):
        rho = float(rng.uniform(0.05, 2.0))
        result = dpmean.mean(x, method=method, rho=rho, random_state=seed, **options)
        assert math.fsum([*result.ledger.values(), -result.budget.total]) <= 0.0, rho


def test_a_plan_an_ulp_over_is_lowered_to_the_budget_and_returned():
    ledger = PrivacyLedger(0.7)
    granted = ledger.plan({"a": 0.7 * 0.05, "b": 0.7 - 0.7 * 0.05 + 2e-16})
    assert math.fsum(granted.values()) <= 0.7
    assert granted["b"] == pytest.approx(0.665, rel=1e-12)
    assert ledger.planned == granted
