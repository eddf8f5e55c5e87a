"""MeanResult as a value: pickled, copied and compared (results come back from worker processes),
its confidence methods' ``level`` checked for every method, and ``to_dict`` strict JSON."""

from __future__ import annotations

import copy
import json
import pickle
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import dpmean

BOX = (0.0, 1.0)
# Every method, with the options it needs on x below (rho 0.5, or an (epsilon, delta) budget
# where the method takes only that). The box-interval ones (coinpress, the protocols,
# iome-gaussian) never read ``level`` before the fix.
METHODS = {
    "auto": {},
    "cm": {},
    "cm-fixed": {},
    "gaussian": {},
    "iome": {},
    "plan": {},
    "plan-noscale": {},
    "trimmed": {},
    "iome-gaussian": {"mean_radius": 2.0, "sigma_min": 0.1, "sigma_max": 1.0},
    "coinpress": {"radius": 2.0},
    "coinpress-cov": {"radius": 2.0},
    "iome-local": {},
    "iome-shuffle": {"epsilon": 1.0, "delta": 1e-6},
    "grs-knownvar": {"sigma": 0.5, "epsilon": 1.0, "delta": 1e-6},
    "grs-unkvar": {"sigma_min": 0.1, "sigma_max": 1.0, "epsilon": 1.0, "delta": 1e-6},
}


def rows() -> np.ndarray:
    return np.random.default_rng(0).random((1000, 3))


def release(method: str = "gaussian", seed: int = 0) -> dpmean.MeanResult:
    options = dict(METHODS[method])
    budget = {} if "epsilon" in options else {"rho": 0.5}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # noisy-release and box warnings are not tested here
        return dpmean.mean(rows(), bounds=BOX, method=method, random_state=seed, **budget,
                           **options)


def no_box_fallback() -> dpmean.MeanResult:
    """All-zero data without bounds: the private box finds no bin and the zero vector is
    released, in no box at all."""
    with pytest.warns(dpmean.InsufficientDataWarning, match="private box"):
        return dpmean.mean(np.zeros((2000, 3)), rho=0.5, method="cm", random_state=0)


def _round_trip_in_a_worker(seed: int) -> dpmean.MeanResult:
    return release("gaussian", seed)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_result_pickles_and_deep_copies_equal(method):
    result = release(method)
    for again in (pickle.loads(pickle.dumps(result)), copy.deepcopy(result),
                  copy.copy(result)):
        assert again is not result and again == result and hash(again) == hash(result)
        # Rebuilt as a release is: read-only arrays and views.
        assert not again.mean.flags.writeable
        with pytest.raises(TypeError):
            again.ledger["extra"] = 1.0  # type: ignore[index]
        with pytest.raises(TypeError):
            again.diagnostics["extra"] = 1.0  # type: ignore[index]
        for value in again.diagnostics.values():
            if isinstance(value, np.ndarray):
                assert not value.flags.writeable


def test_fallback_and_named_results_pickle():
    result = no_box_fallback().named(["a", "b", "c"])
    again = pickle.loads(pickle.dumps(result))
    assert again == result and again.columns == ("a", "b", "c") and again.fallback


def test_results_come_back_from_worker_processes():
    with ProcessPoolExecutor(max_workers=1) as pool:
        back = pool.submit(_round_trip_in_a_worker, 3).result()
    assert back == release("gaussian", 3)


def test_results_compare_by_value():
    first, second, other = release(seed=0), release(seed=0), release(seed=1)
    assert first is not second
    assert first == second and not first != second and hash(first) == hash(second)
    assert first != other  # another noise draw
    assert first != first.named(["a", "b", "c"])
    assert {first, second, other} == {first, other}
    assert first != "a result" and first.__eq__(object()) is NotImplemented
    # A diagnostic array differing in one element makes them differ.
    diagnostics = dict(first.diagnostics)
    diagnostics["noise_std"] = diagnostics["noise_std"] + np.array([0.0, 0.0, 1e-12])
    changed = dpmean.MeanResult(first.mean, first.method, first.n, first.d, first.budget,
                                first.ledger, diagnostics, first.fallback)
    assert changed != first


def test_results_with_nan_diagnostics_equal_their_copies():
    result = release()
    with_nan = dpmean.MeanResult(result.mean, result.method, result.n, result.d, result.budget,
                                 result.ledger, {**result.diagnostics, "extra": float("nan"),
                                                 "array": np.array([np.nan, 1.0])})
    assert copy.deepcopy(with_nan) == with_nan


BAD_LEVELS = [None, "0.9", np.array([0.9, 0.5]), np.array(0.9), float("nan"), 1.5, 0, 1,
              True, -0.1, float("inf")]


@pytest.mark.parametrize("method", sorted(METHODS))
def test_level_is_refused_alike_by_every_method(method):
    result = release(method)
    for level in BAD_LEVELS:
        for ask in (result.confidence_interval, result.confidence_radius):
            with pytest.raises(dpmean.InvalidParameterError,
                               match="level must be a number strictly between 0 and 1, got"):
                ask(level)


def test_level_of_a_fallback_release_is_checked():
    result = no_box_fallback()
    with pytest.raises(dpmean.InvalidParameterError, match="level must be a number"):
        result.confidence_interval(None)  # type: ignore[arg-type]
    with pytest.raises(dpmean.InvalidParameterError, match="level must be a number"):
        result.confidence_radius("0.9")  # type: ignore[arg-type]


def test_numeric_levels_of_any_kind_are_read_alike():
    result = release()
    lo, hi = result.confidence_interval(0.9)
    for level in (np.float64(0.9), 9 / 10):
        again = result.confidence_interval(level)
        assert np.array_equal(again[0], lo) and np.array_equal(again[1], hi)
    assert np.all(result.confidence_interval(np.float32(0.9))[0] < result.mean)
    assert result.confidence_radius(np.float64(0.9)) == result.confidence_radius(0.9)
    with pytest.raises(dpmean.InvalidParameterError, match="search_share must be a number"):
        dpmean.intervals.confidence_interval(result, 0.9, search_share="half")


def test_to_dict_of_a_release_without_a_box_is_strict_json():
    result = no_box_fallback()
    out = result.to_dict()
    text = json.dumps(out, allow_nan=False)  # no Infinity or NaN tokens
    assert json.loads(text) == out
    assert out["confidence_interval"]["lo"] == [None, None, None]
    assert out["confidence_interval"]["hi"] == [None, None, None]
    assert out["confidence_radius"] is None
    assert out["mean"] == [0.0, 0.0, 0.0] and out["fallback"] is True


def test_to_dict_keeps_finite_values():
    result = release("cm")
    out = result.to_dict()
    json.dumps(out, allow_nan=False)
    lo, hi = result.confidence_interval(0.95)
    assert out["confidence_interval"]["lo"] == lo.tolist()
    assert out["confidence_interval"]["hi"] == hi.tolist()
    assert out["confidence_radius"] == result.confidence_radius(0.95)
    assert out["mean"] == result.mean.tolist()
    assert out["diagnostics"]["noise_std"] == result.diagnostics["noise_std"].tolist()


def test_a_fallback_without_a_private_box_says_so():
    """The interval's basis of a release that found no private box named the other fallback
    (n too small for the budget)."""
    with pytest.warns(dpmean.errors.InsufficientDataWarning):
        result = dpmean.mean(np.zeros((2000, 3)), rho=0.5, method="cm", random_state=0)
    assert "no private box was found" in result.to_dict()["confidence_basis"]


def test_repr_summarises_a_long_mean_and_names_the_diagnostics():
    # The dataclass's repr printed every coordinate and diagnostic array: hundreds of lines
    # at d = 1000 (a user trial). The summary holds the shape, budget, a few coordinates and
    # the diagnostics' names, on one line.
    x = np.random.default_rng(0).normal(size=(500, 1000))
    result = dpmean.mean(x, rho=1.0, bounds=(-5, 5), method="cm", random_state=0)
    text = repr(result)
    assert "\n" not in text and len(text) < 1000 and "..." in text
    assert "method='cm'" in text and "n=500, d=1000" in text and "'threshold'" in text


def test_confidence_basis_says_when_the_box_was_found_by_the_release():
    # Without bounds the interval covers the rows clamped to the private box, not the raw
    # rows (a user trial read it as the raw rows' interval; it covered them in 2-38% of
    # releases on heavy tails): the basis says so, as to_dict's does.
    x = np.random.default_rng(0).lognormal(0, 2, size=(1000, 2))
    found = dpmean.mean(x, rho=1.0, method="gaussian", random_state=0)
    given = dpmean.mean(x, rho=1.0, method="gaussian", bounds=(0, 100), random_state=0)
    assert "private box" in found.confidence_basis()
    assert found.confidence_basis() == found.to_dict()["confidence_basis"]
    assert given.confidence_basis() == "noise"
