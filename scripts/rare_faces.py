"""auto against the Gaussian mechanism on one column whose rows sit mostly on a face of its
range: rare 0/1 flags, their mirror, zero-inflated and tight columns, capped incomes
(NON-PRIVATE evaluation: reads the true means).

    PYTHONPATH=src python scripts/rare_faces.py [SEEDS]

Prints, per case (n = 5000 unless it says), which estimator ``auto`` ran how often over SEEDS
releases (default 15; seed 100 + s for the rows, s for the noise) and its RMSE over the
Gaussian mechanism's on the same rows and seeds. docs/results.md, "A rare value at a face".
"""

import collections
import sys
import warnings

import numpy as np

import dpmean

N = 5000


def compare(name: str, make, box: tuple[float, float], rho: float, seeds: int,
            n: int = N) -> None:
    chosen: collections.Counter = collections.Counter()
    auto_sq, gaussian_sq = [], []
    for seed in range(seeds):
        x = make(np.random.default_rng(100 + seed), n)
        truth = x.mean(axis=0)
        release = dpmean.mean(x, rho=rho, bounds=box, random_state=seed)
        chosen[release.diagnostics.get("chosen")] += 1
        auto_sq.append(np.sum((release.mean - truth) ** 2))
        plain = dpmean.mean(x, rho=rho, bounds=box, method="gaussian", random_state=seed)
        gaussian_sq.append(np.sum((plain.mean - truth) ** 2))
    ratio = np.sqrt(np.mean(auto_sq) / np.mean(gaussian_sq))
    print(f"{name:34s} n={n:<5} rho={rho:<5} {dict(chosen)} auto / gaussian RMSE {ratio:.2f} "
          f"(gaussian RMSE {np.sqrt(np.mean(gaussian_sq)):.3g})", flush=True)


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    warnings.simplefilter("ignore")
    for share in (0.01, 0.03, 0.22):
        for rho in (0.05, 0.5):
            compare(f"0/1, {share:.0%} ones", lambda g, n, p=share: (
                g.uniform(size=(n, 1)) < p).astype(float), (0, 1), rho, seeds)
    compare("0/1, 99% ones", lambda g, n: (g.uniform(size=(n, 1)) < 0.99).astype(float),
            (0, 1), 0.05, seeds)
    compare("incomes capped at 10^6", lambda g, n: np.minimum(
        g.lognormal(10.5, 1, size=(n, 1)), 1e6), (0, 1e6), 0.5, seeds)
    compare("incomes, half 0", lambda g, n: np.where(g.uniform(size=(n, 1)) < 0.5, 0.0, np.minimum(
        g.lognormal(10.5, 1, size=(n, 1)), 1e6)), (0, 1e6), 0.5, seeds)
    compare("N(0.1, 0.01) in (0, 1)", lambda g, n: g.normal(0.1, 0.01, size=(n, 1)), (0, 1),
            0.5, seeds)
    compare("90% 0, 10% U(0, 0.2) in (0, 1)", lambda g, n: np.where(
        g.uniform(size=(n, 1)) < 0.9, 0.0, g.uniform(0, 0.2, size=(n, 1))), (0, 1), 0.5, seeds)
    compare("Poisson(0.05) in (0, 20)", lambda g, n: g.poisson(0.05, size=(n, 1)).astype(float),
            (0, 20), 0.5, seeds)
    compare("Poisson(0.05) in (0, 20)", lambda g, n: g.poisson(0.05, size=(n, 1)).astype(float),
            (0, 20), 0.1, seeds)
    compare("Poisson(0.01) in (0, 100)", lambda g, n: g.poisson(0.01, size=(n, 1)).astype(float),
            (0, 100), 0.5, seeds)
    for top in (10, 1000):
        compare(f"99% 0, 1% U(0, 1) in (0, {top})", lambda g, n: np.where(
            g.uniform(size=(n, 1)) < 0.99, 0.0, g.uniform(0, 1, size=(n, 1))), (0, top), 0.1,
            seeds)
    # Rare rows mid-range: no far rows to count, but far from the face (a review).
    for rho in (0.02, 0.05):
        compare("97% 0, 3% U(5, 10) in (0, 10)", lambda g, n: np.where(
            g.uniform(size=(n, 1)) < 0.97, 0.0, g.uniform(5, 10, size=(n, 1))), (0, 10), rho,
            seeds)
        compare("95% 0, 5% U(2, 5) in (0, 10)", lambda g, n: np.where(
            g.uniform(size=(n, 1)) < 0.95, 0.0, g.uniform(2, 5, size=(n, 1))), (0, 10), rho,
            seeds)
    # The smallest n rho a review measured (flags, a scale mostly at its lowest answer).
    compare("0/1, 1% ones", lambda g, n: (g.uniform(size=(n, 1)) < 0.01).astype(float), (0, 1),
            0.02, seeds)
    compare("0/1, 3% ones", lambda g, n: (g.uniform(size=(n, 1)) < 0.03).astype(float), (0, 1),
            0.02, seeds, n=2000)
    compare("0/1, 97% ones", lambda g, n: (g.uniform(size=(n, 1)) < 0.97).astype(float),
            (0, 1), 0.3, seeds, n=500)
    compare("1-5 scale, 70% at 1", lambda g, n: g.choice(
        [1.0, 2, 3, 4, 5], size=(n, 1), p=[0.7, 0.1, 0.1, 0.05, 0.05]), (1, 5), 0.1, seeds, n=200)
    compare("97% 0, 3% U(5, 10) in (0, 10)", lambda g, n: np.where(
        g.uniform(size=(n, 1)) < 0.97, 0.0, g.uniform(5, 10, size=(n, 1))), (0, 10), 0.1, seeds,
        n=2000)
    compare("95% 0, 5% U(0, 1) in (0, 100)", lambda g, n: np.where(
        g.uniform(size=(n, 1)) < 0.95, 0.0, g.uniform(0, 1, size=(n, 1))), (0, 100), 0.01, seeds)


if __name__ == "__main__":
    main()
