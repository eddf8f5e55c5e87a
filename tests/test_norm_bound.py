"""``method="gaussian", norm_bound=R``: the Gaussian mechanism on rows clipped to a public l2
bound, its noise following R instead of the box (a user trial: unit-norm embeddings in the box
(-1, 1)^1000 came out at 30 times the known bound's error)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.sparse
from scipy.special import ndtri

import dpmean
from dpmean import InvalidParameterError
from dpmean.estimators.baselines import clipped_sensitivity


def rows(n: int = 400, d: int = 6, seed: int = 0) -> np.ndarray:
    """Rows of norms 0.2 to 3 in +-2.5, a few beyond the norm bound 1 and the box."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True) * rng.uniform(0.2, 3.0, (n, 1))


def clipped_mean(x: np.ndarray, lo: float, hi: float, radius: float) -> np.ndarray:
    """NON-PRIVATE: the mean the release estimates, rows clamped to the box then scaled to
    norm at most ``radius``."""
    y = np.clip(x, lo, hi)
    norms = np.linalg.norm(y, axis=1, keepdims=True)
    return (y * np.minimum(1.0, radius / np.maximum(norms, 1e-300))).mean(axis=0)


def test_the_release_is_the_clipped_rows_mean_plus_noise_of_the_bound():
    x = rows()
    n, d = x.shape
    result = dpmean.mean(x, rho=0.5, method="gaussian", norm_bound=1.0, bounds=(-2.5, 2.5),
                         random_state=0)
    sigma = 2.0 / n / math.sqrt(2 * 0.5)  # 2R / n, the box's diameter 5 sqrt(6) larger
    np.testing.assert_allclose(result.diagnostics["noise_std"], sigma)
    # Each coordinate within 5 sd of the clipped mean (1 in 1.7 million each).
    assert np.all(np.abs(result.mean - clipped_mean(x, -2.5, 2.5, 1.0)) < 5 * sigma)
    assert result.ledger == {"noise": 0.5}


def test_without_bounds_the_box_is_the_ball_s_and_no_private_box_is_bought():
    x = rows()
    alone = dpmean.mean(x, rho=0.5, method="gaussian", norm_bound=1.0, random_state=3)
    boxed = dpmean.mean(x, rho=0.5, method="gaussian", norm_bound=1.0, bounds=(-1, 1),
                        random_state=3)
    assert alone == boxed
    assert "bounds" not in alone.ledger and "private_bounds" not in alone.diagnostics
    # What the interval covers says the rows were scaled to R (a user trial set R too small
    # and read a "noise" interval that missed the raw rows' mean).
    assert alone.diagnostics["row_norm_bound"] == 1.0
    assert alone.confidence_basis().startswith("noise; of the rows scaled to l2 norm at most 1")


@pytest.mark.parametrize("lo, hi, radius, expected", [
    (-2.5, 2.5, 1.0, 2.0),                       # the ball inside the box: 2R
    (-0.1, 0.1, 1.0, 0.2 * math.sqrt(6)),        # the box inside the ball: its diameter
    (0.0, 3.0, 1.0, math.sqrt(2)),               # one orthant: a right angle at most
    (-3.0, 0.0, 1.0, math.sqrt(2)),
    (-3.0, 0.5, 10.0, 3.5 * math.sqrt(6)),
])
def test_sensitivity_is_the_largest_move_of_a_clipped_row(lo, hi, radius, expected):
    d = 6
    bound = clipped_sensitivity(np.full(d, lo), np.full(d, hi), radius)
    assert bound == pytest.approx(expected)
    # No pair of rows (the box's corners, points beyond it, random rows) moves further once
    # clamped and clipped.
    rng = np.random.default_rng(1)
    corners = np.array([[lo if (k >> j) & 1 else hi for j in range(d)] for k in range(2 ** d)])
    points = np.vstack([corners, rng.uniform(lo - 5, hi + 5, (500, d))])
    y = np.clip(points, lo, hi)
    y *= np.minimum(1.0, radius / np.maximum(np.linalg.norm(y, axis=1, keepdims=True), 1e-300))
    gaps = np.linalg.norm(y[:, None, :] - y[None, :, :], axis=2)
    assert gaps.max() <= bound * (1 + 1e-12)


def test_one_column_on_one_side_of_the_origin_moves_by_r_at_most():
    assert clipped_sensitivity(np.zeros(1), np.full(1, 5.0), 2.0) == 2.0
    assert clipped_sensitivity(np.full(1, -5.0), np.full(1, 5.0), 2.0) == 4.0
    # Counts in (0, 50) with a known norm bound: noise sqrt(2) R / n, not 2R / n.
    x = np.random.default_rng(0).poisson(1.0, (1000, 4)).astype(float)
    result = dpmean.mean(x, rho=0.5, method="gaussian", norm_bound=5.0, bounds=(0, 50),
                         random_state=0)
    np.testing.assert_allclose(result.diagnostics["noise_std"], math.sqrt(2) * 5.0 / 1000)


def test_accuracy_plans_the_bound_s_noise():
    n, d, rho = 1000, 50, 0.2
    sigma = 2.0 / n / math.sqrt(2 * rho)
    z = float(ndtri(0.975))
    assert dpmean.accuracy("gaussian", n, d, (-1, 1), rho, norm_bound=1.0) == pytest.approx(
        z * sigma)
    half = z * sigma
    assert dpmean.rho_for_accuracy("gaussian", n, d, (-1, 1), half,
                                   norm_bound=1.0) == pytest.approx(rho, rel=1e-6)


def test_ranges_of_different_widths_run_in_the_data_s_units():
    x = rows()
    lo, hi = np.full(6, -2.5), np.array([2.5, 2.5, 2.5, 25.0, 25.0, 25.0])
    result = dpmean.mean(x, rho=0.5, method="gaussian", norm_bound=1.0, bounds=(lo, hi),
                         random_state=0)
    assert "box_scale" not in result.diagnostics
    np.testing.assert_allclose(result.diagnostics["noise_std"], 2.0 / 400)


def test_sparse_rows_and_the_chunked_engine_give_the_same_release(tmp_path):
    x = rows()
    path = tmp_path / "rows.npy"
    np.save(path, x)
    options = {"rho": 0.5, "method": "gaussian", "norm_bound": 1.0, "bounds": (-2.5, 2.5),
               "random_state": 5}
    memory = dpmean.mean(x, **options)
    assert dpmean.mean(str(path), **options).mean.tolist() == memory.mean.tolist()
    baskets = scipy.sparse.random(300, 8, density=0.3, format="csr", random_state=1)
    baskets.data[:] = 1.0
    sparse = dpmean.mean(baskets, rho=0.5, method="gaussian", norm_bound=2.0, bounds=(0, 1),
                         random_state=2)
    dense = dpmean.mean(baskets.toarray(), rho=0.5, method="gaussian", norm_bound=2.0,
                        bounds=(0, 1), random_state=2)
    np.testing.assert_allclose(sparse.mean, dense.mean, rtol=0, atol=1e-12)


@pytest.mark.parametrize("bad", [0, -1.0, math.inf, math.nan, True, "1", 1e-320, 1e-101,
                                 1e151, 1e308])
def test_a_bound_that_is_not_a_number_one_can_compute_with_is_refused(bad):
    # A subnormal bound's sensitivity 2R / n rounded to 0 and released the clipped mean
    # without noise; a huge one's overflowed after a session's charge (a review).
    with pytest.raises(InvalidParameterError, match="norm_bound"):
        dpmean.mean(rows(), rho=0.5, method="gaussian", norm_bound=bad, bounds=(-1, 1))


def test_a_box_without_the_origin_is_refused_before_the_charge():
    # Rows scaled toward an origin outside the box leave it, and the release was projected
    # onto its faces whatever the data (rows in (1, 3)^2, R = 1: (1, 1); a review). Refused
    # from the public box, before a session charges anything.
    x = np.random.default_rng(0).uniform(1, 3, (500, 2))
    session = dpmean.Session(rho=1.0)
    for bounds in ((1, 3), {"a": (1, 3), "b": (-1, 1)}):
        data = x if not isinstance(bounds, dict) else pd.DataFrame(x, columns=["a", "b"])
        with pytest.raises(InvalidParameterError, match="must hold"):
            session.mean(data, rho=0.5, method="gaussian", norm_bound=1.0, bounds=bounds)
    assert session.spent == 0.0
