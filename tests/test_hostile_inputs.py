"""Hostile inputs through the public API: every call ends in a clear DPMeanError or a finite,
correctly accounted release, never a crash, a hang or a silently wrong budget."""

import math
import warnings

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

import dpmean
from dpmean.errors import DPMeanError

METHODS = ["cm", "cm-fixed", "gaussian", "iome", "plan", "plan-noscale", "trimmed", "coinpress"]
# Options a method needs besides bounds (a public prior), and tuning fixed so runs stay fast.
OPTIONS = {"coinpress": {"radius": 10.0}, "trimmed": {"smoothing": 0.1, "trim": 0.1}}

floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
extreme_ints = st.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max)
datasets = st.one_of(
    arrays(np.float64, array_shapes(min_dims=1, max_dims=3, max_side=40), elements=floats),
    arrays(np.int64, array_shapes(min_dims=1, max_dims=2, max_side=40), elements=extreme_ints),
    arrays(np.uint64, array_shapes(min_dims=1, max_dims=2, max_side=40)),
    arrays(np.float32, array_shapes(min_dims=2, max_dims=2, max_side=40),
           elements=st.floats(width=32)),
    arrays(np.bool_, array_shapes(min_dims=2, max_dims=2, max_side=40)),
)
magnitudes = st.sampled_from([1e-300, 1e-12, 1.0, 255.0, 1e12, 1e150, 1e300])


@given(x=datasets, method=st.sampled_from(METHODS), scale=magnitudes,
       rho=st.floats(1e-6, 100.0), seed=st.integers(0, 2**32))
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_mean_never_crashes_and_never_overspends(x, method, scale, rho, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = dpmean.mean(x, rho=rho, method=method, bounds=(-scale, scale),
                                 random_state=seed, **OPTIONS.get(method, {}))
        except DPMeanError as exc:
            assert str(exc)  # a message the user can read
            event(type(exc).__name__)
            return
    event("released (fallback)" if result.fallback else "released")
    assert result.mean.shape == (result.d,)
    assert np.all(np.isfinite(result.mean))
    assert result.rho_spent <= rho * (1 + 1e-9)
    assert math.fsum(result.ledger.values()) == result.rho_spent


@given(bounds=st.tuples(st.one_of(floats, st.lists(floats, min_size=1, max_size=4)),
                        st.one_of(floats, st.lists(floats, min_size=1, max_size=4))),
       method=st.sampled_from(METHODS))
@settings(max_examples=100, deadline=None)
def test_any_bounds_give_a_clear_error_or_a_release(bounds, method):
    x = np.random.default_rng(0).normal(size=(200, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = dpmean.mean(x, rho=1.0, method=method, bounds=bounds, random_state=0,
                                 **OPTIONS.get(method, {}))
        except DPMeanError as exc:
            assert str(exc)
            return
    assert np.all(np.isfinite(result.mean))



def _methods_with_required_options():
    from dpmean.api import _keyword_options
    from dpmean.registry import ESTIMATORS

    return {name: sorted(_keyword_options(cls)[1]) for name, cls in ESTIMATORS.items()
            if _keyword_options(cls)[1]}


def test_a_method_missing_its_required_options_says_which():
    # Methods with public inputs that have no default (a prior, a radius) refuse a call without
    # them with the library's error naming them, not Python's TypeError.
    required = _methods_with_required_options()
    assert "iome-gaussian" in required
    for method, names in required.items():
        try:
            dpmean.mean(np.zeros((10, 2)), rho=1.0, method=method, bounds=(0, 1))
        except dpmean.InvalidParameterError as error:
            assert all(name in str(error) for name in names), (method, str(error))
        else:
            raise AssertionError(f"{method} ran without {names}")
