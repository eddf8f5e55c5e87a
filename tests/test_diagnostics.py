"""Diagnostics have stable types (issue 17): every method in the registry declares its keys, and
each result carries only declared keys, each of its declared kind, whatever the path (dense,
a box of unequal widths, sparse input, a private box, a fallback)."""

import json
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import dpmean
from dpmean.diagnostics import Diagnostic, Kind, normalise
from dpmean.estimators import MeanEstimator
from dpmean.registry import ESTIMATORS

N, D = 600, 3
WIDE = (np.full(D, -4.0), np.array([4.0, 16.0, 1.0]))  # unequal widths: box-normalised

# The options each method needs beyond a budget and a box (public a priori bounds).
OPTIONS = {
    "iome-gaussian": {"mean_radius": 10.0, "sigma_min": 0.5, "sigma_max": 2.0},
    "coinpress": {"radius": 10.0},
    "coinpress-cov": {"radius": 10.0},
}
# Extra settings that reach keys the default path does not: IOME's quantized path, the
# trimmed mean's Student-t noise and tCDP budget, PLAN's exponential threshold.
VARIANTS = [
    ("iome", {"quantized": True}),
    ("plan", {"quantile": "exponential"}),
    ("trimmed", {"noise": "student-t"}),
    ("trimmed", {"noise": "gaussian-tcdp"}),
]


def has_kind(value: object, kind: Kind, d: int) -> bool:
    """Whether ``value`` is of ``kind`` exactly (no subclasses: bool is not an int here)."""
    if kind is Kind.VECTOR:
        return (type(value) is np.ndarray and value.dtype == np.float64
                and value.shape == (d,))
    if kind is Kind.COUNTS:
        return type(value) is np.ndarray and value.dtype == np.int64 and value.shape == (d,)
    if kind is Kind.SERIES:
        return type(value) is np.ndarray and value.dtype == np.float64 and value.ndim == 1
    if kind is Kind.AMOUNTS:
        return type(value) is dict and all(type(k) is str and type(v) is float
                                           for k, v in value.items())
    return type(value) is {Kind.FLOAT: float, Kind.INT: int, Kind.BOOL: bool,
                           Kind.TEXT: str}[kind]


def check(result: dpmean.MeanResult, cls: type[MeanEstimator]) -> None:
    declared = cls.diagnostic_declarations()
    undeclared = set(result.diagnostics) - set(declared)
    assert not undeclared, f"{cls.method}: undeclared diagnostics {sorted(undeclared)}"
    for key, value in result.diagnostics.items():
        kind = declared[key].kind
        assert has_kind(value, kind, result.d), \
            f"{cls.method}: {key} is {type(value).__name__} {np.shape(value)}, not {kind.value}"
    json.dumps(result.to_dict())  # arrays and mappings stay JSON-ready


def release(method: str, x: object, bounds: object, **options: object) -> dpmean.MeanResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # noisy releases and fallbacks warn; types are checked
        return dpmean.mean(x, rho=1.0, method=method, bounds=bounds, random_state=0,
                           **{**OPTIONS.get(method, {}), **options})


def data(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.5, 1.0, size=(N, D))


@pytest.mark.parametrize("method", list(ESTIMATORS))
def test_every_key_is_declared_and_of_its_kind(method):
    cls = ESTIMATORS[method]
    check(release(method, data(), (-4.0, 4.0)), cls)
    check(release(method, data(), WIDE), cls)
    if cls.finds_bounds:
        check(release(method, data(), None), cls)


@pytest.mark.parametrize("method,options", VARIANTS, ids=str)
def test_other_paths_have_the_same_kinds(method, options):
    check(release(method, data(), (-4.0, 4.0), **options), ESTIMATORS[method])


@pytest.mark.parametrize("method", [m for m in ESTIMATORS if ESTIMATORS[m].supports_sparse])
def test_sparse_releases_have_the_same_kinds(method):
    baskets = sp.random(N, D, density=0.3, format="csr", random_state=1, data_rvs=np.ones)
    check(release(method, baskets, (0.0, 1.0)), ESTIMATORS[method])


@pytest.mark.parametrize("method", ["cm", "iome", "plan", "trimmed"])
def test_fallbacks_carry_only_declared_kinds(method):
    # Two rows are too few for a tiny budget: the zero vector, with the public settings only.
    with pytest.warns(dpmean.InsufficientDataWarning):
        result = dpmean.mean(data()[:2], rho=1e-6, method=method, bounds=WIDE,
                             random_state=0)
    assert result.fallback
    check(result, ESTIMATORS[method])


def test_noise_std_is_per_coordinate_whatever_the_widths():
    # Equal widths: isotropic, the same value d times; unequal: each column's own, in the
    # data's units (the normalised space's sigma times the width).
    equal = release("gaussian", data(), (-4.0, 4.0))
    assert np.all(equal.diagnostics["noise_std"] == equal.diagnostics["noise_std"][0])
    wide = release("gaussian", data(), WIDE)
    widths = WIDE[1] - WIDE[0]
    np.testing.assert_allclose(wide.diagnostics["noise_std"] / widths,
                               wide.diagnostics["noise_std"][0] / widths[0], rtol=1e-12)


def test_normalise_refuses_an_undeclared_key_and_drops_none():
    declared = {"radius": Diagnostic(Kind.FLOAT, "a radius")}
    assert normalise({"radius": np.float64(2), "reach": None}, declared, 3) == {"radius": 2.0}
    with pytest.raises(TypeError, match="not declared"):
        normalise({"radius": 1.0, "secret": 3.0}, declared, 3)
    with pytest.raises(TypeError, match="whole number"):
        normalise({"steps": 2.5}, {"steps": Diagnostic(Kind.INT, "steps")}, 3)


@pytest.mark.parametrize("method", sorted(ESTIMATORS))
def test_each_estimator_documents_its_keys(method):
    cls = ESTIMATORS[method]
    doc = cls.__doc__ or ""
    common = MeanEstimator.diagnostic_declarations()
    for key, item in cls.diagnostic_declarations().items():
        where = MeanEstimator.__doc__ if key in common else doc
        assert f"{key} : {item.kind.value}" in (where or ""), f"{method}: {key} undocumented"
