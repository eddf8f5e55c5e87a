"""CoinPress against IOME: time of MVMRec and MVCRec-MVMRec next to IOME (n = 4000), and errors.

IOME section 6 settings. Timing: N(0, Sigma(10)) rows, d = 128 and 512, best of --repeat runs.
Accuracy (--accuracy): n = 4000, d = 128, rho = 0.5, mean over --seeds seeds of the l2 and
Mahalanobis errors (NON-PRIVATE evaluation, dpmean.metrics) for
  N(mu, I), ||mu|| = R/2, R = 50 sqrt(d) (IOME Figure 1), and
  N(0, Sigma(10)), R = 100 sqrt(d) (IOME Figures 4-5),
with IOME given the box +-(R + 4 sigma_max), sigma_max = R / sqrt(d) (IOME's a priori bound).
Not a test.

    python benchmarks/bench_coinpress.py                 # timing
    python benchmarks/bench_coinpress.py --accuracy      # timing and the error tables
"""

from __future__ import annotations

import argparse

import numpy as np
from measure import best_time
from scipy.stats import ortho_group

import dpmean
from dpmean.metrics import l2_error, mahalanobis_error

N, RHO = 4000, 0.5


def sigma_kappa(d: int, kappa: float, rng: np.random.Generator, seed: int) -> np.ndarray:
    """IOME's Sigma(kappa) = A diag(sigma_j^2) A^T, A a random rotation, sigma_j^2 ~ U[1, kappa]."""
    rotation = ortho_group.rvs(d, random_state=seed)
    return (rotation * rng.uniform(1.0, kappa, size=d)) @ rotation.T


def iome_bounds(radius: float, d: int) -> tuple[float, float]:
    half = radius + 4.0 * radius / np.sqrt(d)
    return -half, half


def methods(radius: float, d: int, coinpress_t: list[int], t_covs: list[int]) -> dict:
    """Name -> function of (x, seed) returning a private mean."""
    out = {}
    for t in coinpress_t:
        out[f"coinpress t={t}"] = lambda x, s, t=t: dpmean.mean(
            x, rho=RHO, method="coinpress", radius=radius, t=t, random_state=s).mean
    for t_cov in t_covs:
        out[f"coinpress-cov t_cov={t_cov}"] = lambda x, s, t_cov=t_cov: dpmean.mean(
            x, rho=RHO, method="coinpress-cov", radius=radius, t_cov=t_cov, random_state=s).mean
    out["iome"] = lambda x, s: dpmean.mean(x, rho=RHO, method="iome",
                                           bounds=iome_bounds(radius, d), random_state=s).mean
    return out



def timing(repeat: int) -> None:
    print(f"time, n = {N}, N(0, Sigma(10)), best of {repeat}")
    print(f"{'d':>5} {'method':24} {'seconds':>9} {'x numpy.mean':>13}")
    for d in (128, 512):
        rng = np.random.default_rng(d)
        x = rng.multivariate_normal(np.zeros(d), sigma_kappa(d, 10.0, rng, d), size=N)
        radius = 100 * np.sqrt(d)
        floor = best_time(lambda x=x: np.mean(x, axis=0), repeat)
        for name, fn in methods(radius, d, [2], [2, 5]).items():
            fn(x, 0)  # warm-up: imports, caches, BLAS threads
            seconds = best_time(lambda fn=fn, x=x: fn(x, 0), repeat)
            print(f"{d:>5} {name:24} {seconds:>9.3f} {seconds / floor:>13.0f}")


def accuracy(seeds: int, d: int = 128) -> None:
    for title, radius, kappa in (("N(mu, I), R = 50 sqrt(d)", 50 * np.sqrt(d), None),
                                 ("N(0, Sigma(10)), R = 100 sqrt(d)", 100 * np.sqrt(d), 10.0)):
        errors: dict[str, list[tuple[float, float]]] = {}
        for seed in range(seeds):
            rng = np.random.default_rng(1000 + seed)
            if kappa is None:
                sigma, mu = np.eye(d), rng.normal(size=d)
                mu *= radius / 2 / np.linalg.norm(mu)
                x = mu + rng.normal(size=(N, d))
            else:
                sigma, mu = sigma_kappa(d, kappa, rng, seed), np.zeros(d)
                x = rng.multivariate_normal(mu, sigma, size=N)
            estimates = {"non-private mean": x.mean(axis=0)}
            for name, fn in methods(radius, d, [1, 2, 3, 4, 10],
                                    [1, 2, 3, 4, 5] if kappa else []).items():
                estimates[name] = fn(x, seed)
            for name, estimate in estimates.items():
                errors.setdefault(name, []).append(
                    (l2_error(estimate, mu), mahalanobis_error(estimate, mu, sigma)))
        print(f"\nerrors (NON-PRIVATE evaluation), {title}, n = {N}, d = {d}, rho = {RHO}, "
              f"mean over {seeds} seeds")
        print(f"{'method':24} {'l2':>9} {'Mahalanobis':>12}")
        for name, values in errors.items():
            l2, maha = np.mean(values, axis=0)
            print(f"{name:24} {l2:>9.3f} {maha:>12.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing (best is kept)")
    parser.add_argument("--accuracy", action="store_true", help="also print the error tables")
    parser.add_argument("--seeds", type=int, default=10, help="seeds for the error tables")
    args = parser.parse_args()
    timing(args.repeat)
    if args.accuracy:
        accuracy(args.seeds)


if __name__ == "__main__":
    main()
