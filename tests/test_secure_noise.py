"""secure_noise=True on every central estimator: every Gaussian stage draws the exact discrete
Gaussian, the ledger still adds up, and the release is a finite vector of the right shape."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import dpmean
from dpmean.accounting import PrivacyLedger
from dpmean.errors import InvalidParameterError, SecureNoiseWarning
from dpmean.mechanisms import discrete_gaussian as dg
from dpmean.mechanisms import gaussian as gaussian_module
from dpmean.mechanisms import quantiles as quantiles_module
from dpmean.mechanisms.matrix import symmetric_gaussian_mechanism
from dpmean.protocols.base import ProtocolEstimator
from dpmean.registry import ESTIMATORS

N, D, RHO = 1500, 5, 1.0
CENTRAL = sorted(m for m, cls in ESTIMATORS.items() if not issubclass(cls, ProtocolEstimator))


def options(method: str) -> dict:
    if method == "iome-gaussian":
        return {"mean_radius": 20.0, "sigma_min": 0.5, "sigma_max": 2.0}
    if method.startswith("coinpress"):
        return {"radius": 20.0, "bounds": (-10, 10)}
    return {"bounds": (-10, 10)}


@pytest.fixture
def x():
    return np.random.default_rng(3).normal(2.0, 1.0, size=(N, D))


def test_the_sweep_covers_every_central_method():
    assert set(CENTRAL) == {"auto", "cm", "cm-fixed", "coinpress", "coinpress-cov", "gaussian",
                            "iome", "iome-gaussian", "plan", "plan-noscale", "trimmed"}


def _release(method, x, **extra):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SecureNoiseWarning)
        return dpmean.mean(x, rho=RHO, method=method, random_state=0, secure_noise=True,
                           **options(method), **extra)


@pytest.mark.parametrize("method", CENTRAL)
def test_every_central_method_runs_with_secure_noise(method, x):
    result = _release(method, x)
    assert result.mean.shape == (D,)
    assert np.isfinite(result.mean).all()
    assert math.fsum(result.ledger.values()) == pytest.approx(result.spent)
    assert result.spent == pytest.approx(RHO)
    # Secure noise is rho-zCDP, not the continuous Gaussian's exact curve: no (eps, delta)
    # calibration through it (checked in test_estimators); the request is kept as given.
    assert result.rho == RHO


def _count_discrete_draws(monkeypatch):
    """Count the discrete Gaussian draws and make any floating-point Gaussian draw fail."""
    calls = {"discrete": 0}
    real = dg.discrete_gaussian

    def counted(*args, **kwargs):
        calls["discrete"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(gaussian_module, "discrete_gaussian", counted)
    monkeypatch.setattr(quantiles_module, "discrete_gaussian", counted)

    class NoFloatNormal:
        def __init__(self, rng):
            self._rng = rng

        def normal(self, *args, **kwargs):
            raise AssertionError("a Gaussian stage drew floating-point noise")

        def __getattr__(self, name):
            return getattr(self._rng, name)

    return calls, NoFloatNormal


@pytest.mark.parametrize("method, extra", [
    ("gaussian", {}), ("cm", {}), ("cm-fixed", {}), ("iome", {}), ("iome-gaussian", {}),
    ("coinpress", {}), ("coinpress-cov", {}),
    ("plan", {"quantile": "binary-search"}),
    ("plan", {"quantile": "binary-search", "pairings": 2}),
    ("plan-noscale", {"quantile": "binary-search"}),
    ("plan-noscale", {"centre": "mean"}),
    ("plan", {"centre": "mean", "variance": "binary"}),
])
def test_no_gaussian_stage_draws_floating_point_noise(method, extra, x, monkeypatch):
    """With secure_noise=True, every Gaussian mechanism goes through the discrete Gaussian: a
    generator whose normal() fails proves no stage drew float Gaussian noise (the exponential
    mechanism draws Gumbel and uniform variates, which are not Gaussian stages)."""
    calls, wrap = _count_discrete_draws(monkeypatch)
    import dpmean.estimators.base as base

    real_make_rng = base.make_rng
    monkeypatch.setattr(base, "make_rng", lambda state: wrap(real_make_rng(state)))
    if extra.get("variance") == "binary":
        x = (x > 2.0).astype(float)
        extra = {**extra, "bounds": (0, 1)}
    kwargs = {**options(method), **extra}
    result = dpmean.mean(x, rho=RHO, method=method, random_state=0, secure_noise=True, **kwargs)
    assert calls["discrete"] > 0
    assert np.isfinite(result.mean).all()
    # ... and without secure_noise the same run does draw floating-point Gaussians.
    with pytest.raises(AssertionError, match="floating-point"):
        dpmean.mean(x, rho=RHO, method=method, random_state=0, **kwargs)


def test_plan_on_sparse_baskets_with_secure_noise():
    rng = np.random.default_rng(0)
    baskets = sp.random(2000, 40, density=0.1, format="csr", random_state=rng)
    baskets.data[:] = 1.0
    result = dpmean.mean(baskets, rho=RHO, method="plan", bounds=(0, 1), random_state=0,
                         secure_noise=True)
    assert result.mean.shape == (40,) and np.isfinite(result.mean).all()
    assert result.spent == pytest.approx(RHO)


def test_trimmed_accepts_secure_noise_and_says_it_covers_nothing(x):
    with pytest.warns(SecureNoiseWarning, match="no(ne)?:? .*floating point"):
        result = dpmean.mean(x[:, 0], rho=RHO, method="trimmed", bounds=(-10, 10),
                             random_state=0, secure_noise=True)
    assert np.isfinite(result.mean).all()


def test_protocols_still_refuse_secure_noise():
    with pytest.raises(InvalidParameterError, match="no secure-noise mode"):
        dpmean.mean(np.zeros((100, 2)), rho=1.0, method="iome-local", bounds=(0, 1),
                    secure_noise=True)


def test_secure_counts_with_sensitivity_two_stay_integers():
    rng = np.random.default_rng(0)
    noisy = quantiles_module._noisy_counts(lambda t: np.array([7, 9]), np.zeros(2), 4, 0.5,
                                           rng, True, 2.0)
    assert noisy.dtype.kind == "i"
    # Variance sensitivity^2 / (2 rho_step) = 4 / (2 * 0.125) = 16: a spread far above 1.
    draws = np.concatenate([quantiles_module._noisy_counts(
        lambda t: np.zeros(50, dtype=np.int64), np.zeros(50), 4, 0.5, rng, True, 2.0)
        for _ in range(40)])
    assert 3.0 < draws.std() < 5.0


def test_secure_symmetric_matrix_mechanism_is_symmetric_and_on_a_grid():
    value = np.arange(16, dtype=float).reshape(4, 4)
    value = value + value.T
    ledger = PrivacyLedger(1.0, "rho")
    ledger.plan({"cov": 1.0})
    out = symmetric_gaussian_mechanism(value, 0.5, 1.0, np.random.default_rng(0),
                                       ledger=ledger, stage="cov", secure=True)
    np.testing.assert_array_equal(out, out.T)
    k = 10  # entries on and above the diagonal
    gamma = 2.0 ** math.floor(math.log2(1e-3 * 0.5 / (2 * math.sqrt(k))))
    np.testing.assert_array_equal(out / gamma, np.rint(out / gamma))
    assert ledger.spent == {"cov": 1.0}


def test_secure_symmetric_matrix_mechanism_refuses_an_undrawable_variance_before_the_charge():
    # A variance beyond the exact sampler's is refused from public values, as
    # ``gaussian_mechanism`` refuses it, before anything is charged (an adversarial review).
    ledger = PrivacyLedger(1.0, "rho")
    ledger.plan({"cov": 1e-30})
    with pytest.raises(InvalidParameterError):
        symmetric_gaussian_mechanism(np.eye(3), 1.0, 1e-30, np.random.default_rng(0),
                                     ledger=ledger, stage="cov", secure=True)
    assert ledger.spent == {}


@pytest.mark.parametrize("method, options, warns", [
    ("auto", {}, True),
    ("plan", {}, True),
    ("plan-noscale", {}, True),
    # PLAN's spread of pair distances stays an exponential mechanism with binary search (the
    # warning and docs/privacy.md said every stage was exact: a docs review); plan-noscale
    # has no spread.
    ("plan", {"quantile": "binary-search"}, True),
    ("plan-noscale", {"quantile": "binary-search"}, False),
    ("cm", {}, False),
    ("iome", {}, False),
])
def test_floating_point_stages_are_said_with_secure_noise(method, options, warns):
    # auto's pair medians and PLAN's default stages are exponential mechanisms drawn in
    # floating point; with secure_noise=True that went unsaid (a review), as the trimmed
    # mean's smooth-sensitivity noise already was not.
    x = np.random.default_rng(4).normal(size=(3000, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dpmean.mean(x, rho=0.5, method=method, bounds=(-5, 5), secure_noise=True,
                    random_state=0, **options)
    said = [w for w in caught if issubclass(w.category, SecureNoiseWarning)]
    assert len(said) == (1 if warns else 0), [str(w.message) for w in caught]


def test_the_floating_point_warning_follows_the_plan_and_comes_once():
    # Without bounds the estimator runs again in its private box: one warning, not two. And
    # where auto's plan has no pair medians and PLAN cannot run first (one column, n = 300,
    # rho = 0.02: IOME runs), every stage is exact and nothing is said (a user trial).
    def said(x, **options):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dpmean.mean(x, rho=options.pop("rho", 0.5), secure_noise=True, random_state=0,
                        **options)
        return [w for w in caught if issubclass(w.category, SecureNoiseWarning)]

    rows = np.random.default_rng(5).normal(size=(2000, 20))
    assert len(said(rows)) == 1
    flag = (np.random.default_rng(0).random((300, 1)) < 0.05).astype(float)
    assert said(flag, rho=0.02, bounds=(0, 1)) == []


def test_coinpress_covariance_steps_are_checked_before_the_first_charge():
    # A step whose secure draw the sampler cannot make is refused before any step is charged
    # (public values: m, d, beta and the budgets; a review: the last step was refused after
    # the first was charged).
    from dpmean.engines import InMemoryEngine
    from dpmean.estimators.coinpress import mvc_rec

    rows = np.random.default_rng(0).normal(size=(200, 3))
    paired = InMemoryEngine(rows, np.full(3, -10.0), np.full(3, 10.0))
    ledger = PrivacyLedger(1.0, "rho")
    ledger.plan({"cov-step-1": 0.5, "cov-step-2": 1e-30})
    with pytest.raises(InvalidParameterError):
        mvc_rec(paired, 5.0, [0.5, 1e-30], beta=0.1, ledger=ledger,
                rng=np.random.default_rng(1), secure=True)
    assert ledger.spent == {}


def _said_and_drawn(x, **options):
    """The stages a secure release's warning names, and those charged as exponential
    mechanisms (``PureDPEvent``, drawn in floating point)."""
    import re

    from dpmean.events import PureDPEvent

    drawn = set()
    charge = PrivacyLedger.charge

    def recording(self, stage, amount, event=None):
        if isinstance(event, PureDPEvent):
            drawn.add(stage)
        return charge(self, stage, amount, event)

    with warnings.catch_warnings(record=True) as caught, \
            pytest.MonkeyPatch.context() as patch:
        warnings.simplefilter("always")
        patch.setattr(PrivacyLedger, "charge", recording)
        dpmean.mean(x, secure_noise=True, random_state=0, **options)
    said = [str(w.message) for w in caught if issubclass(w.category, SecureNoiseWarning)]
    named = set(re.findall(r'"([a-z ]+)"', said[0])) if said else set()
    return said, named, drawn


@pytest.mark.parametrize("options", [
    {"method": "plan"}, {"method": "plan", "quantile": "binary-search"},
    {"method": "plan-noscale"}, {"method": "plan", "centre": "median"},
    {"method": "plan", "rho": 0.003},  # too little to resolve the variances: none run
])
def test_plans_warning_names_exactly_the_stages_drawn_in_floating_point(options):
    # The warning named PLAN's centre (exact by default) and not the spread under binary
    # search (a docs review), then variance stages a plan without them never runs (a diff
    # review). Here what it names is what was charged as exponential mechanisms.
    options = {"rho": 0.5, "bounds": (-5, 5), **options}
    n, d = (500, 50) if options["rho"] < 0.01 else (3000, 8)
    x = np.random.default_rng(4).normal(size=(n, d))
    said, named, drawn = _said_and_drawn(x, **options)
    assert named == drawn and bool(said) == bool(drawn), (said, drawn)


def test_baskets_read_densely_and_auto_on_baskets_name_no_stage_they_do_not_draw(tmp_path):
    # A .dat file read in dense chunks keeps PLAN's basket stages (binary variances, no
    # spread), and auto on baskets measures its choice by Gaussian counts, with no pair
    # medians: both warnings named stages that never ran (a diff review).
    rng = np.random.default_rng(2)
    path = tmp_path / "b.dat"
    path.write_text("\n".join(" ".join(map(str, np.flatnonzero(row)))
                              for row in rng.random((3000, 30)) < 0.2) + "\n")
    for engine in ("chunked", "memory"):
        said, named, drawn = _said_and_drawn(str(path), rho=0.5, method="plan", n_items=30,
                                             engine=engine)
        assert named == drawn == {"threshold"}, (said, drawn)
    baskets = sp.csr_matrix((rng.random((3000, 30)) < 0.2) * 1.0)
    said, _, drawn = _said_and_drawn(baskets, rho=0.5, bounds=(0, 1))
    # (Said before the choice: PLAN's stages "where PLAN runs", whichever it chose.)
    assert said and "pair distances" not in said[0] and drawn <= {"threshold"}, (said, drawn)


def test_auto_says_nothing_where_its_plan_fixes_the_gaussian_mechanism():
    # A table of columns in their own ranges, too few rows for the choice and no spread
    # count: auto runs the Gaussian mechanism, every stage exact, and warned of PLAN's stages
    # "where PLAN runs" (a review of the fixes).
    x = np.random.default_rng(0).normal(0, 0.3, (200, 2))
    said, _, drawn = _said_and_drawn(x, rho=0.03, method="auto", bounds=([-1, -2], [1, 2]))
    assert said == [] and drawn == set()
