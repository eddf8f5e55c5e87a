"""An infinity, or a number too large for a float64, is a number beyond the box: clamped like any
other, as the largest float64 of its sign (then the box's bound). It was refused after the
charge, so that a release told 1e300 from 1e400 with certainty (a review); a NaN, which has no
value, is still refused (a file's reader can fill it: tests/test_fill.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dpmean
from dpmean.errors import InvalidDataError
from dpmean.registry import ESTIMATORS

LARGEST = np.finfo(np.float64).max
RNG = np.random.default_rng(12)
BASE = RNG.uniform(0.0, 1.0, size=(3000, 3))


def with_row(values) -> np.ndarray:
    x = BASE.copy()
    x[7] = values
    return x


def release(x, method, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpmean.mean(x, rho=1.0, method=method, random_state=5, **kw)


# The public options some methods require.
REQUIRED = {"coinpress": {"radius": 2.0}, "coinpress-cov": {"radius": 2.0},
            "iome-gaussian": {"mean_radius": 2.0, "sigma_min": 0.1, "sigma_max": 1.0}}


@pytest.mark.parametrize("method", sorted(ESTIMATORS))
def test_an_infinity_is_released_as_the_largest_float(method):
    infinite = with_row([np.inf, -np.inf, 0.5])
    largest = with_row([LARGEST, -LARGEST, 0.5])
    options = REQUIRED.get(method, {})
    got = release(infinite, method, bounds=(0.0, 1.0), **options)
    expected = release(largest, method, bounds=(0.0, 1.0), **options)
    np.testing.assert_array_equal(got.mean, expected.mean)
    assert got.rho_spent == expected.rho_spent


@pytest.mark.parametrize("method", ["auto", "cm", "iome", "plan", "trimmed", "gaussian"])
def test_without_bounds_too(method):
    # The private box counts the row in its top bin, as it counts the largest float.
    got = release(with_row([np.inf, 0.5, 0.5]), method)
    expected = release(with_row([LARGEST, 0.5, 0.5]), method)
    np.testing.assert_array_equal(got.mean, expected.mean)
    assert np.isfinite(got.mean).all()


def test_float32_infinity_is_its_types_largest():
    x32 = with_row([np.inf, 0.5, 0.5]).astype(np.float32)
    same = with_row([np.finfo(np.float32).max, 0.5, 0.5]).astype(np.float32)
    np.testing.assert_array_equal(release(x32, "cm", bounds=(0.0, 1.0)).mean,
                                  release(same, "cm", bounds=(0.0, 1.0)).mean)


def test_the_callers_array_is_not_changed():
    x = with_row([np.inf, 0.5, 0.5])
    release(x, "cm", bounds=(0.0, 1.0))
    assert x[7, 0] == np.inf


def test_a_nan_is_still_refused_naming_its_column():
    with pytest.raises(InvalidDataError, match=r"NaN values \(the first in column 1"):
        release(with_row([np.inf, np.nan, 0.5]), "cm", bounds=(0.0, 1.0))


@pytest.mark.parametrize("engine", ["chunked", "dask"])
def test_every_engine_clamps_it_alike(tmp_path, engine):
    if engine == "dask":
        pytest.importorskip("dask")
    path = tmp_path / "x.csv"
    text = "a,b,c\n" + "".join(",".join(repr(float(v)) for v in row) + "\n" for row in BASE)
    lines = text.splitlines(keepends=True)
    lines[8] = "1e400,-1e400,0.5\n"  # row 7: beyond float64's range, read as inf
    path.write_text("".join(lines))
    memory = release(with_row([LARGEST, -LARGEST, 0.5]), "cm", bounds=(0.0, 1.0))
    got = release(str(path), "cm", bounds=(0.0, 1.0), engine=engine)
    np.testing.assert_allclose(got.mean, memory.mean, rtol=1e-12)
