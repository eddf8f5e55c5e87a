"""Session: releases composed against one budget, refused before the data is read."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpmean
from dpmean import BudgetExceededError, InvalidParameterError, Session
from dpmean.accounting import zcdp_to_approx_dp
from dpmean.budget import Budget
from dpmean.estimators import MeanEstimator


class Untouchable:
    """Data that fails the test the moment anything looks at it."""

    def __getattribute__(self, name):
        raise AssertionError(f"the data was read (attribute {name!r})")

    def __array__(self, *args, **kwargs):
        raise AssertionError("the data was read (__array__)")

    def __len__(self):
        raise AssertionError("the data was read (__len__)")


@pytest.fixture
def x():
    return np.random.default_rng(0).uniform(0, 1, size=(400, 3))


def test_zcdp_session_composes_three_thirds_and_refuses_a_fourth_before_reading(x):
    session = Session(rho=1.0)
    for seed in range(3):
        result = session.mean(x, rho=1 / 3, method="cm", bounds=(0, 1), random_state=seed)
        assert result.budget.rho == pytest.approx(1 / 3)
    assert session.spent == pytest.approx(1.0)
    assert session.remaining == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(BudgetExceededError, match="before reading the data"):
        session.mean(Untouchable(), rho=1e-3, method="cm", bounds=(0, 1))
    assert len(session.ledger) == 3


def test_refusal_never_calls_estimate(monkeypatch, x):
    session = Session(rho=0.5)
    session.mean(x, rho=0.4, method="gaussian", bounds=(0, 1), random_state=1)

    def boom(self, data):
        raise AssertionError("estimate was called")

    monkeypatch.setattr(MeanEstimator, "estimate", boom)
    with pytest.raises(BudgetExceededError):
        session.mean(x, rho=0.2, method="gaussian", bounds=(0, 1))


def test_ledger_and_remaining_contents(x):
    session = Session(rho=1.0)
    result = session.mean(x, rho=0.25, method="cm", bounds=(0, 1), random_state=0)
    session.mean(x, rho=0.5, method="gaussian", bounds=(0, 1), random_state=0)
    ledger = session.ledger
    assert [r.index for r in ledger] == [0, 1]
    assert [r.method for r in ledger] == ["cm", "gaussian"]
    assert ledger[0].budget == Budget.zcdp(0.25)
    assert ledger[0].spent == pytest.approx(result.spent)
    assert all(r.status == "released" for r in ledger)
    assert session.budget == Budget.zcdp(1.0)
    assert session.unit == "rho"
    assert session.spent == pytest.approx(0.75)
    assert session.remaining == pytest.approx(0.25)
    ledger.clear()  # a copy: the session is unchanged
    assert len(session.ledger) == 2


def test_a_failed_release_stays_charged(x):
    session = Session(rho=1.0)
    with pytest.raises(AssertionError, match="the data was read"):
        session.mean(Untouchable(), rho=0.4, method="cm", bounds=(0, 1))
    (release,) = session.ledger
    assert release.status == "failed" and release.spent == pytest.approx(0.4)
    assert session.remaining == pytest.approx(0.6)


def test_per_release_budget_is_required(x):
    with pytest.raises(InvalidParameterError, match="own budget"):
        Session(rho=1.0).mean(x, method="cm", bounds=(0, 1))


def test_epsilon_delta_release_in_zcdp_session_is_granted_as_zcdp(x):
    session = Session(rho=1.0)
    result = session.mean(x, epsilon=1.0, delta=1e-6, method="cm", bounds=(0, 1),
                          random_state=0)
    assert session.spent == pytest.approx(result.budget.rho)


def test_pure_dp_adds_half_epsilon_squared():
    session = Session(rho=1.0)
    session.reserve("m", Budget("pure-DP", epsilon=1.0))
    assert session.spent == pytest.approx(0.5)
    session.reserve("m", Budget("pure-DP", epsilon=1.0))
    with pytest.raises(BudgetExceededError):
        session.reserve("m", Budget.zcdp(0.01))


@pytest.mark.parametrize("budget, why", [
    (Budget.approx_dp(1.0, 1e-6), "does not imply zCDP"),
    (Budget("tCDP", rho=0.1, omega=10), "omega"),
    (Budget("local-zCDP", rho=0.1), "trust model"),
    (Budget("shuffle-approx-DP", epsilon=1.0, delta=1e-6), "trust model"),
])
def test_zcdp_session_refuses_incompatible_notions(budget, why):
    session = Session(rho=10.0)
    with pytest.raises(InvalidParameterError, match=why):
        session.reserve("m", budget)
    assert session.ledger == []


def test_incompatible_method_refused_before_reading():
    with pytest.raises(InvalidParameterError, match="does not imply zCDP"):
        Session(rho=10.0).mean(Untouchable(), epsilon=1.0, delta=1e-6, method="trimmed",
                               noise="laplace", bounds=(0, 1))
    with pytest.raises(InvalidParameterError, match="trust model"):
        Session(epsilon=5.0, delta=1e-5).mean(Untouchable(), rho=0.1, method="iome-local",
                                               bounds=(0, 1))


def test_approx_session_converts_the_summed_rho_once(x):
    session = Session(epsilon=2.0, delta=1e-6)
    session.mean(x, rho=0.02, method="cm", bounds=(0, 1), random_state=0)
    session.mean(x, rho=0.03, method="cm", bounds=(0, 1), random_state=1)
    expected = zcdp_to_approx_dp(0.05, 1e-6)
    assert session.spent == pytest.approx(expected)
    # Converting once beats converting each release and adding.
    assert expected < zcdp_to_approx_dp(0.02, 1e-6) + zcdp_to_approx_dp(0.03, 1e-6)
    assert session.unit == "epsilon"
    assert session.remaining == pytest.approx(2.0 - expected)


def test_approx_session_splits_delta_and_adds_epsilons():
    session = Session(epsilon=3.0, delta=1e-5)
    session.reserve("a", Budget.approx_dp(0.5, 4e-6))
    session.reserve("z", Budget.zcdp(0.05))
    expected = 0.5 + zcdp_to_approx_dp(0.05, 1e-5 - 4e-6)
    assert session.spent == pytest.approx(expected)
    session.reserve("p", Budget("pure-DP", epsilon=0.25))
    assert session.spent == pytest.approx(expected + 0.25)
    # The approximate-DP releases' deltas may not exceed the session's delta ...
    with pytest.raises(BudgetExceededError):
        session.reserve("a", Budget.approx_dp(0.01, 7e-6))
    # ... nor leave no delta for the zCDP part.
    other = Session(epsilon=3.0, delta=1e-5)
    other.reserve("a", Budget.approx_dp(0.5, 1e-5))
    with pytest.raises(BudgetExceededError):
        other.reserve("z", Budget.zcdp(1e-6))


def test_approx_session_refuses_overspend_before_reading(x):
    session = Session(epsilon=1.0, delta=1e-6)
    with pytest.raises(BudgetExceededError):
        session.mean(Untouchable(), epsilon=1.5, delta=1e-7, method="trimmed",
                     noise="laplace", bounds=(0, 1))
    session.mean(x, epsilon=0.9, delta=1e-7, method="trimmed", noise="laplace",
                 bounds=(0, 1), random_state=0)
    with pytest.raises(BudgetExceededError):
        session.mean(Untouchable(), rho=0.01, method="cm", bounds=(0, 1))
    assert session.spent == pytest.approx(0.9)


def test_approx_session_refuses_tcdp():
    with pytest.raises(InvalidParameterError, match="tCDP"):
        Session(epsilon=5.0, delta=1e-6).reserve("t", Budget("tCDP", rho=0.1, omega=10))


def test_session_constructor_checks():
    with pytest.raises(InvalidParameterError):
        Session()
    with pytest.raises(InvalidParameterError):
        Session(rho=1.0, epsilon=1.0, delta=1e-6)
    with pytest.raises(InvalidParameterError):
        Session(epsilon=1.0)
    with pytest.raises(InvalidParameterError):
        Session(rho=-1.0)


def test_round_trip_and_tamper_detection(x):
    session = Session(epsilon=3.0, delta=1e-5)
    session.reserve("a", Budget.approx_dp(0.5, 4e-6))
    session.mean(x, rho=0.05, method="cm", bounds=(0, 1), random_state=0)
    data = session.to_dict()
    again = Session.from_dict(data)
    assert again.to_dict() == data
    assert math.isclose(again.spent, session.spent)

    def broken(edit):
        copy = Session(epsilon=3.0, delta=1e-5).to_dict() | {"releases": [
            dict(r, budget=dict(r["budget"])) for r in data["releases"]], "spent": data["spent"]}
        edit(copy)
        return copy

    for edit in (
        lambda d: d.update(version=2),
        lambda d: d.update(spent=0.1),
        lambda d: d["releases"].pop(),
        lambda d: d["releases"][0].update(spent=-1.0),
        lambda d: d["releases"][0].update(index=3),
        lambda d: d["releases"][0].update(status="done"),
        lambda d: d["releases"][1]["budget"].update(rho=0.01),
        lambda d: d.update(budget={"notion": "approx-DP", "epsilon": 0.1, "delta": 1e-5}),
        lambda d: d.update(extra=1),
    ):
        with pytest.raises(InvalidParameterError):
            Session.from_dict(broken(edit))


def test_session_is_exported():
    assert dpmean.Session is Session
    assert "Session" in dpmean.__all__
