"""The protocols' randomisers charge what they spend: each charges its round's cost to its stage
before drawing, a round drawn in many calls is charged once, every protocol's ledger adds up to
its plan, and a randomiser that skips its charge (or charges an unplanned stage) never gets a
release out."""

import numpy as np
import pytest

import dpmean
from dpmean.accounting import PrivacyLedger
from dpmean.errors import PrivacyAccountingError
from dpmean.protocols.randomisers import (
    RoundBudget,
    hadamard_response,
    local_gaussian,
    polya_noise,
    randomised_response,
    summation_randomiser,
    unary_encoding,
)
from dpmean.protocols.rounds import RoundLedger
from dpmean.registry import ESTIMATORS

EPSILON_ROUND = RoundBudget(1.0, "epsilon")
# name: (the call, given rng, ledger and stage; its round budget)
RANDOMISERS = {
    "randomised_response": (
        lambda rng, budget, **c: randomised_response(np.zeros((5, 2), bool), budget, rng, **c),
        RoundBudget(1.0, "epsilon", reports=2, delta=1e-6)),
    "hadamard_response": (
        lambda rng, budget, **c: hadamard_response(np.arange(4), 4, budget, rng, **c),
        RoundBudget(0.3, "rho")),
    "unary_encoding": (
        lambda rng, budget, **c: unary_encoding(np.arange(3), 3, budget, rng, **c),
        EPSILON_ROUND),
    "local_gaussian": (
        lambda rng, budget, **c: local_gaussian(np.zeros((5, 3)), 1.0, budget, rng, **c),
        RoundBudget(0.5, "epsilon", reports=3, delta=1e-6)),
    "polya_noise": (
        lambda rng, budget, **c: polya_noise((5,), 5, budget, 4, rng, **c), EPSILON_ROUND),
    "summation_randomiser": (
        lambda rng, budget, **c: summation_randomiser(np.zeros((5, 2)), 4, budget, 5, 3, rng,
                                                      **c),
        RoundBudget(2.0, "epsilon", reports=2, delta=1e-6)),
}


@pytest.mark.parametrize("name", sorted(RANDOMISERS))
def test_randomiser_charges_its_round_before_drawing(name):
    call, budget = RANDOMISERS[name]
    rng = np.random.default_rng(0)
    ledger = PrivacyLedger.for_stages({"round": budget.cost}, budget.unit)
    state = rng.bit_generator.state
    with pytest.raises(PrivacyAccountingError, match="never planned"):
        call(rng, budget, ledger=ledger, stage="rounds")
    assert rng.bit_generator.state == state  # refused before anything was drawn
    call(rng, budget, ledger=ledger, stage="round")
    assert ledger.spent == {"round": budget.cost}
    ledger.verify()


def test_round_ledger_charges_a_round_once_and_refuses_another_cost():
    ledger = PrivacyLedger.for_stages({"noise": 0.5})
    round_ledger = RoundLedger(ledger)
    for _ in range(3):  # three blocks of users, each stating the round's per-user cost
        round_ledger.charge("noise", 0.5)
    assert ledger.spent == {"noise": 0.5}
    with pytest.raises(PrivacyAccountingError, match="its round charged"):
        round_ledger.charge("noise", 0.25)
    with pytest.raises(PrivacyAccountingError, match="never planned"):
        RoundLedger(ledger).charge("nois", 0.5)
    with pytest.raises(PrivacyAccountingError, match="charged already"):
        RoundLedger(ledger).charge("noise", 0.5)  # a second round of the same stage


def test_round_budget_derives_each_reports_parameters_from_its_cost():
    from dpmean.accounting import approx_dp_to_zcdp
    from dpmean.protocols.composition import local_epsilon_for_shuffle, split_budget
    from dpmean.protocols.randomisers import hadamard_epsilon_for_zcdp

    coordinates = RoundBudget(1.0, "epsilon", reports=8, delta=1e-9)
    assert coordinates.report_epsilon == split_budget(1.0, 1e-9, 8)[0]
    assert coordinates.report_rho == approx_dp_to_zcdp(*split_budget(1.0, 1e-9, 8))
    assert RoundBudget(0.25, "rho").hadamard_epsilon == hadamard_epsilon_for_zcdp(0.25)
    shuffled = RoundBudget(0.25, "epsilon", delta=2.5e-10, shuffled_among=10_000)
    assert shuffled.hadamard_epsilon == local_epsilon_for_shuffle(0.25, 2.5e-10, 10_000)
    with pytest.raises(dpmean.errors.InvalidParameterError, match="charged to a ledger in"):
        RoundBudget(0.25, "rho").charge(PrivacyLedger(1.0, "epsilon"), "x")


PROTOCOLS = sorted(m for m in ESTIMATORS if ESTIMATORS[m].__module__.startswith(
    "dpmean.protocols"))


def _release(method, seed=0):
    x = np.random.default_rng(1).normal(1.0, 1.0, size=(2000, 3))
    return dpmean.mean(x, epsilon=1.0, delta=1e-6, method=method, bounds=(-8, 8),
                       random_state=seed)


@pytest.mark.parametrize("method", PROTOCOLS)
def test_protocol_ledger_is_its_plan_exactly(method):
    result = _release(method)
    estimator = ESTIMATORS[method](epsilon=1.0, delta=1e-6)
    # The randomisers charge their round budgets, derived from the plan: no rounding between.
    assert dict(result.ledger) == estimator.budget_plan(2000, 3)


def _uncharged(honest):
    """The honest randomiser, same draws, charging a throwaway ledger instead of the round's."""
    def stub(*args, ledger, stage, **options):
        elsewhere = PrivacyLedger.for_stages({"elsewhere": 1e12}, ledger.unit)
        return honest(*args, ledger=elsewhere, stage="elsewhere", **options)
    return stub


def _misnamed(honest):
    """The honest randomiser charging a misspelt stage."""
    def stub(*args, ledger, stage, **options):
        return honest(*args, ledger=ledger, stage=stage + "s", **options)
    return stub


# GRS's rounds (its disjoint groups) share one stage, so all of its randomisers are stubbed.
STUBBED = [
    ("iome-local", ["range_counting.hadamard_response"]),
    ("iome-local", ["iome.local_gaussian"]),
    ("iome-shuffle", ["range_counting.hadamard_response"]),
    ("iome-shuffle", ["iome.summation_randomiser"]),
    ("grs-knownvar", ["grs.unary_encoding", "grs.local_gaussian"]),
    ("grs-unkvar", ["grs.randomised_response", "grs.local_gaussian"]),
]


@pytest.mark.parametrize("method,targets", STUBBED)
def test_a_randomiser_without_its_charge_cannot_release(method, targets, monkeypatch):
    import dpmean.protocols as protocols

    for target in targets:
        module, name = target.split(".")
        honest = getattr(getattr(protocols, module), name)
        monkeypatch.setattr(f"dpmean.protocols.{target}", _uncharged(honest))
    with pytest.raises(PrivacyAccountingError, match="does not add up to its plan"):
        _release(method)


@pytest.mark.parametrize("method,targets", STUBBED[::2])
def test_a_randomiser_charging_an_unplanned_stage_cannot_release(method, targets, monkeypatch):
    import dpmean.protocols as protocols

    module, name = targets[0].split(".")
    honest = getattr(getattr(protocols, module), name)
    monkeypatch.setattr(f"dpmean.protocols.{targets[0]}", _misnamed(honest))
    with pytest.raises(PrivacyAccountingError, match="never planned"):
        _release(method)


def test_shuffle_summation_refuses_fewer_than_four_users_before_any_round():
    # IKOS summation needs 4 users: the check ran in round 3, after the centre and threshold
    # rounds had read every row and been charged (a review). It is now the plan's, public.
    from dpmean.errors import InvalidDataError
    from dpmean.protocols import range_counting

    calls = []
    original = range_counting.hadamard_response

    def spy(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(range_counting, "hadamard_response", spy)
        with pytest.raises(InvalidDataError, match="at least 4 users, got n=3"):
            dpmean.mean(np.zeros((3, 2)), epsilon=1.0, delta=1e-6, method="iome-shuffle",
                        bounds=(-1, 1))
        assert calls == []
        # Four users run (the plan's check is the summation's own), through the spied round.
        dpmean.mean(np.zeros((4, 2)), epsilon=1.0, delta=1e-6, method="iome-shuffle",
                    bounds=(-1, 1), random_state=0)
    assert calls
