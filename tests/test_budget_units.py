"""Typed budgets: a field named rho only ever holds a rho (issue: the unit confusion of
``iome-shuffle``, whose result.rho held an epsilon), and Budget refuses fields that do not fit
its notion."""

import json
import math
import warnings

import numpy as np
import pytest

import dpmean
from dpmean.accounting import approx_dp_to_zcdp, zcdp_to_approx_dp
from dpmean.api import build_estimator
from dpmean.budget import NOTIONS, Budget
from dpmean.errors import InvalidParameterError
from dpmean.mechanisms.smooth_noise import NOISES
from dpmean.pld import compose_delta, gaussian_delta
from dpmean.registry import ESTIMATORS

RHO_NOTIONS = {"zCDP", "tCDP", "local-zCDP"}


def _options(method):
    if method == "iome-gaussian":
        return {"mean_radius": 10.0, "sigma_min": 0.5, "sigma_max": 2.0}
    if method.startswith("coinpress"):
        return {"radius": 20.0}
    return {"bounds": (-20, 20)}


REQUESTS = [{"rho": 0.3}, {"epsilon": 3.0, "delta": 1e-6}]
CASES = [(m, {}, r) for m in sorted(ESTIMATORS) for r in REQUESTS]
CASES += [("trimmed", {"noise": noise}, r) for noise in sorted(NOISES) for r in REQUESTS
          if noise != "lln"]


@pytest.mark.parametrize("method,extra,request_", CASES)
def test_no_field_named_rho_holds_anything_else(method, extra, request_):
    x = np.random.default_rng(0).normal(size=(2000, 4))
    options = {**_options(method), **extra}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = dpmean.mean(x, method=method, random_state=0, **request_, **options)
    except InvalidParameterError as error:
        # Only the (epsilon, delta) noises refuse a rho, with a message that says so.
        assert "rho" in request_ and "epsilon and delta" in str(error)
        return
    budget = result.budget
    assert budget.notion == result.notion and budget.notion in NOTIONS
    payload = result.to_dict()
    json.dumps(payload)
    if budget.notion in RHO_NOTIONS:
        assert result.unit == "rho" and result.rho == budget.rho
        assert result.rho_spent == pytest.approx(result.rho, rel=1e-9)
        assert result.epsilon_spent is None and "epsilon_spent" not in payload
        if "rho" in request_:
            assert result.rho == request_["rho"] and result.epsilon is None
        elif budget.notion != "tCDP":
            # The granted rho implies the requested pair: exactly for releases made only of
            # Gaussians (sqrt(2 rho)-GDP), through the zCDP conversion otherwise (tCDP's own
            # conversion is tested in test_tcdp.py).
            if ESTIMATORS[method].gaussian_stages:
                assert gaussian_delta(math.sqrt(2.0 * result.rho), 3.0) <= 1e-6
            elif result.rho > approx_dp_to_zcdp(3.0, 1e-6) * (1 + 1e-9):
                # Calibrated to its plan for this shape (MeanEstimator.granted): the events of
                # its stages compose, by the PLD accountant, to at most the requested delta.
                granted = build_estimator(method, None, epsilon=3.0, delta=1e-6,
                                          **options, **extra).granted(*x.shape)
                assert granted.budget.rho == result.rho
                assert compose_delta(granted.privacy_events(), 3.0) <= 1e-6
            else:
                assert zcdp_to_approx_dp(result.rho, 1e-6) <= 3.0 * (1 + 1e-9)
            assert (result.epsilon, result.delta) == (3.0, 1e-6)
    else:
        # Ledgers in epsilon never call it rho: neither the result nor its JSON.
        assert result.unit == "epsilon"
        assert result.rho is None and result.rho_spent is None
        assert "rho" not in payload and "rho_spent" not in payload
        assert result.epsilon_spent == pytest.approx(result.epsilon, rel=1e-9)
        assert payload["epsilon"] == result.epsilon and payload["delta"] == result.delta
    assert math.fsum(result.ledger.values()) == pytest.approx(result.spent)


def test_shuffle_with_rho_reports_the_epsilon_it_spends_as_epsilon():
    # The review's case: rho=0.5 with iome-shuffle returned result.rho == 6.47 (an epsilon).
    x = np.random.default_rng(1).normal(size=(4000, 4))
    result = dpmean.mean(x, rho=0.5, method="iome-shuffle", bounds=(-5, 5), random_state=0)
    assert result.rho is None
    assert result.epsilon == pytest.approx(zcdp_to_approx_dp(0.5, 1e-9))
    assert result.notion == "shuffle-approx-DP" and result.delta == 1e-9


@pytest.mark.parametrize("notion,fields,message", [
    ("zCDP", {}, "needs rho"),
    ("zCDP", {"rho": 0.5, "omega": 10.0}, "takes no omega"),
    ("approx-DP", {"epsilon": 1.0, "delta": 1e-6, "rho": 0.1}, "takes no rho"),
    ("approx-DP", {"epsilon": 1.0}, "needs delta"),
    ("zCDP", {"rho": 0.5, "epsilon": 1.0}, "together"),
    ("tCDP", {"rho": 0.5}, "needs omega"),
    ("tCDP", {"rho": 0.5, "omega": 1.0}, "omega must be greater than 1"),
    ("zCDP", {"rho": -1.0}, "positive"),
    ("zCDP", {"rho": float("nan")}, "positive"),
    ("approx-DP", {"epsilon": 1.0, "delta": 1.0}, r"delta must be in \(0, 1\)"),
    ("renyi", {"rho": 1.0}, "unknown privacy notion"),
    ("zCDP", {"rho": True}, "number"),
])
def test_budget_refuses_fields_that_do_not_fit_its_notion(notion, fields, message):
    with pytest.raises(InvalidParameterError, match=message):
        Budget(notion, **fields)


def test_budget_round_trips_and_names_its_unit():
    for budget in (Budget.zcdp(0.5), Budget.approx_dp(1.0, 1e-6),
                   Budget("tCDP", rho=0.2, omega=10.0),
                   Budget("zCDP", rho=approx_dp_to_zcdp(1.0, 1e-6), epsilon=1.0, delta=1e-6)):
        assert Budget.from_dict(json.loads(json.dumps(budget.to_dict()))) == budget
    assert Budget.zcdp(0.5).unit == "rho" and Budget.approx_dp(1.0, 1e-6).unit == "epsilon"
    assert Budget.approx_dp(1.0, 1e-6).total == 1.0
    with pytest.raises(InvalidParameterError, match="no field"):
        Budget.from_dict({"notion": "zCDP", "rho": 0.5, "sigma": 1.0})
    with pytest.raises(InvalidParameterError, match="mapping"):
        Budget.from_dict([("notion", "zCDP")])
