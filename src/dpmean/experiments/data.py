"""Seeded data generators for the paper experiments (IOME section 6, PLAN section 7 and
appendices, Bun-Steinke section 4), each returning the rows and the truth they are judged by."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from scipy import sparse

DATA_DIR = Path(__file__).resolve().parents[3] / "data"


@dataclass(frozen=True)
class Dataset:
    """Rows ``x`` (n, d) and the NON-PRIVATE truth for the error metric: the distribution mean
    (synthetic) or the full-data mean (real data), plus the true covariance where known."""

    x: np.ndarray | sparse.csr_matrix
    truth: np.ndarray
    covariance: np.ndarray | None = None


def random_rotation(d: int, rng: np.random.Generator) -> np.ndarray:
    """A Haar-random orthogonal matrix (QR of a Gaussian matrix, signs fixed by R's diagonal)."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def sigma_kappa(d: int, kappa: float, rng: np.random.Generator) -> np.ndarray:
    """IOME/CoinPress Sigma(kappa) = A Lambda A^T: A a random rotation, Lambda_jj ~ U[1, kappa]."""
    a = random_rotation(d, rng)
    return (a * rng.uniform(1.0, kappa, d)) @ a.T


def zipf_variances(d: int, alpha: float) -> np.ndarray:
    """PLAN's skewed profile var_i = (d / i)^alpha, i = 1..d."""
    return (d / np.arange(1, d + 1)) ** alpha


def mean_in_ball(d: int, radius: float, rng: np.random.Generator) -> np.ndarray:
    """A mean of norm radius / 2 in a uniformly random direction, inside IOME's prior ball
    ||mu|| <= R and far from its centre (the setting is silent on mu; this is our choice)."""
    direction = rng.standard_normal(d)
    return 0.5 * radius * direction / np.linalg.norm(direction)


def gaussian(n: int, mean: np.ndarray, rng: np.random.Generator, *,
             variances: np.ndarray | None = None,
             covariance: np.ndarray | None = None) -> Dataset:
    """n rows of N(mean, diag(variances)) or N(mean, covariance) (identity if neither)."""
    d = mean.shape[0]
    z = rng.standard_normal((n, d))
    if covariance is not None:
        x = mean + z @ np.linalg.cholesky(covariance).T
        return Dataset(x, mean, covariance)
    variances = np.ones(d) if variances is None else variances
    return Dataset(mean + z * np.sqrt(variances), mean, np.diag(variances))


def skewed_binary(n: int, d: int, ratio: float, rng: np.random.Generator) -> Dataset:
    """PLAN Figure 5a: the first floor(ratio d) items Bernoulli(1/2), the rest Bernoulli(0.01)."""
    probabilities = np.where(np.arange(d) < math.floor(ratio * d), 0.5, 0.01)
    return Dataset((rng.random((n, d)) < probabilities).astype(np.float64), probabilities)


def index_rows(n: int, d: int) -> Dataset:
    """IOME Figure 9: the rows i * 1_d for i = 1..n, judged against their own mean."""
    x = np.arange(1, n + 1, dtype=np.float64)[:, None] * np.ones(d)
    return Dataset(x, x.mean(axis=0))


@cache
def mnist() -> tuple[np.ndarray, np.ndarray]:
    """The bundled MNIST digits: images (70000, 784) as float64 in 0..255 and their labels."""
    with np.load(DATA_DIR / "mnist-70k.npz") as f:
        return f["images"].astype(np.float64), f["digits"].astype(int)


def mnist_digit(digit: int) -> Dataset:
    """All bundled images of one digit, judged against their own (full-data) mean."""
    images, digits = mnist()
    x = images[digits == digit]
    return Dataset(x, x.mean(axis=0))


# The number of items of each bundled basket file: public facts of the published datasets
# (data/README.md: retail uses exactly the ids 1..16,470, the Kosarak prefix 1..17,034), never
# read from the files at run time. d must be public: one basket could change a data-derived d.
BASKET_ITEMS = {"retail.dat": 16_470, "kosarak-first-36682.dat": 17_034}
# Their row counts, for titles that compare a --quick run's first rows with the full file
# (tested against the files).
BASKET_ROWS = {"retail.dat": 88_162, "kosarak-first-36682.dat": 36_682}


@cache
def baskets(name: str) -> sparse.csr_matrix:
    """A bundled transaction file as a sparse 0/1 matrix of shape (n, items): its 1-based ids
    1..items become columns 0..items-1 (the item count is the public BASKET_ITEMS, so as PLAN's
    loader, which relabels the items that occur, on these files where every id occurs);
    cached per process."""
    from ..io import load_data

    items = BASKET_ITEMS[name]
    # Ids are 1-based: read with n_items = items + 1 and drop the always-empty column 0.
    return sparse.csr_matrix(load_data(DATA_DIR / name, n_items=items + 1)[:, 1:])


def basket_data(name: str, rows: int | None = None) -> Dataset:
    """The first ``rows`` baskets (all if None) judged against their own item frequencies."""
    x = baskets(name)[:rows]
    return Dataset(x, np.asarray(x.mean(axis=0)).ravel())


def random_correlations(n: int, d: int, mean: np.ndarray, rng: np.random.Generator) -> Dataset:
    """Our reading of PLAN's Gaussian A' (Appendix E; the formula is lost in our copy of the
    text): unit variances with random correlations, Sigma = D^-1/2 (B B^T + I) D^-1/2 with
    B_ij ~ U[-1, 1] and D its diagonal. Drawn as D^-1/2 (B g + z), g, z ~ N(0, I): O(n d^2)
    without forming Sigma or its Cholesky factor."""
    b = rng.uniform(-1.0, 1.0, (d, d))
    scale = 1.0 / np.sqrt(1.0 + np.einsum("ij,ij->i", b, b))
    x = (rng.standard_normal((n, d)) @ b.T + rng.standard_normal((n, d))) * scale
    return Dataset(mean + x, mean)


def constant_correlation(n: int, mean: np.ndarray, variances: np.ndarray, correlation: float,
                         rng: np.random.Generator) -> Dataset:
    """PLAN's Gaussian C' (Appendix E, the authors' code): Sigma_ij = c sigma_i sigma_j off the
    diagonal, sigma_i^2 on it, drawn as sigma * (sqrt(1 - c) z + sqrt(c) g) with one shared
    g ~ N(0, 1) per row."""
    d = mean.shape[0]
    shared = rng.standard_normal((n, 1))
    z = rng.standard_normal((n, d))
    x = np.sqrt(variances) * (math.sqrt(1.0 - correlation) * z + math.sqrt(correlation) * shared)
    return Dataset(mean + x, mean)
