"""Constructors store and validate their budget request; the conversion to the granted budget
(exact Gaussian calibration through ``dpmean.pld``, Canonne-Kamath-Steinke, tCDP, or a rho
protocol's epsilon) happens on first use (issue 17: "conversion happens in estimate")."""

import sys

import numpy as np
import pytest

import dpmean.accounting
import dpmean.pld
from dpmean.errors import InvalidParameterError
from dpmean.estimators.base import MeanEstimator
from dpmean.registry import ESTIMATORS

X = np.random.default_rng(0).uniform(0.0, 1.0, size=(400, 2))
BOX = (0.0, 1.0)


def test_constructing_with_epsilon_delta_loads_no_accountant(monkeypatch):
    """Any import of the PLD accountant (``dpmean.pld``, dp_accounting) fails while the
    estimators are built: one per kind of conversion (exact Gaussian, CKS, tCDP, a rho
    protocol's epsilon, a local zCDP protocol). Estimating then needs it."""
    for name in ("dpmean.pld", "dp_accounting"):
        monkeypatch.setitem(sys.modules, name, None)  # ``import`` raises ImportError
    gaussian = ESTIMATORS["gaussian"](epsilon=1.0, delta=1e-6, bounds=BOX, random_state=0)
    ESTIMATORS["plan"](epsilon=1.0, delta=1e-6, bounds=BOX)
    ESTIMATORS["trimmed"](epsilon=2.0, delta=1e-6, noise="gaussian-tcdp", bounds=BOX)
    ESTIMATORS["grs-knownvar"](0.5, bounds=BOX)
    ESTIMATORS["iome-local"](epsilon=1.0, delta=1e-6, bounds=BOX)
    with pytest.raises(ImportError):
        gaussian.estimate(X)


class Conversion(Exception):
    """Raised by a conversion that must not run yet."""


def _refuse(*args, **kwargs):
    raise Conversion


@pytest.mark.parametrize("method, request_, conversion", [
    ("gaussian", {"epsilon": 1.0, "delta": 1e-6}, (dpmean.pld, "gaussian_rho_for_approx_dp")),
    ("cm", {"epsilon": 1.0, "delta": 1e-6}, (dpmean.pld, "gaussian_rho_for_approx_dp")),
    ("plan", {"epsilon": 1.0, "delta": 1e-6}, (dpmean.accounting, "approx_dp_to_zcdp")),
    ("gaussian", {"epsilon": 1.0, "delta": 1e-6, "secure_noise": True},
     (dpmean.accounting, "approx_dp_to_zcdp")),
])
def test_the_conversion_runs_on_estimate_not_on_construction(monkeypatch, method, request_,
                                                             conversion):
    monkeypatch.setattr(*conversion, _refuse)
    estimator = ESTIMATORS[method](bounds=BOX, random_state=0, **request_)  # converts nothing
    assert "budget" not in vars(estimator)
    with pytest.raises(Conversion):
        estimator.estimate(X)


def test_the_budget_is_granted_once_on_first_use(monkeypatch):
    calls = []
    grant = MeanEstimator.grant

    def counted(self, *request):
        calls.append(request)
        return grant(self, *request)

    monkeypatch.setattr(MeanEstimator, "grant", counted)
    estimator = ESTIMATORS["gaussian"](epsilon=1.0, delta=1e-6, bounds=BOX, random_state=0)
    assert calls == []
    first = estimator.estimate(X)
    second = estimator.estimate(X)
    assert calls == [(None, 1.0, 1e-6)]
    assert first.budget == second.budget == estimator.budget
    assert first.budget.epsilon == 1.0 and first.budget.rho > 0
    # shown as given, before and after the grant
    assert repr(estimator) == "GaussianMean(epsilon=1.0, delta=1e-06, bounds=(0.0, 1.0), " \
                              "random_state=0)"
    assert estimator.get_params()["rho"] is None


@pytest.mark.parametrize("method, request_, message", [
    ("gaussian", {}, "no privacy budget"),
    ("gaussian", {"rho": -1.0}, "rho must be positive"),
    ("gaussian", {"rho": True}, "rho must be a number"),
    ("plan", {"rho": 1.0, "epsilon": 1.0}, "not both"),
    ("cm", {"epsilon": 1.0}, "without delta"),
    ("iome", {"delta": 1e-6}, "without epsilon"),
    ("coinpress", {"epsilon": 1.0, "delta": 2.0}, "delta must be in"),
    ("trimmed", {"rho": 0.5, "noise": "laplace"}, "not rho"),
    ("trimmed", {"epsilon": 0.5, "delta": 1e-6, "noise": "gaussian-tcdp"}, "omega"),
    ("trimmed", {"rho": 0.5, "epsilon": 1.0, "noise": "gaussian-tcdp"}, "not both"),
    ("grs-knownvar", {"rho": 0.5, "epsilon": 1.0}, "not both"),
    ("grs-knownvar", {"rho": 0.5, "delta": 1.5}, "delta"),
    ("grs-unkvar", {"epsilon": 1.0}, "without delta"),
    ("iome-local", {"rho": 0.0}, "rho must be positive"),
])
def test_bad_budgets_fail_at_construction(method, request_, message):
    cls = ESTIMATORS[method]
    extra = {"radius": 1.0} if method == "coinpress" else {}
    with pytest.raises(InvalidParameterError, match=message):
        cls(bounds=BOX, **extra, **request_)
