"""auto on one column in its public range: 0/1 flags, answers on a scale, bimodal, uniform,
counts and concentrated or skewed rows, over n and rho (NON-PRIVATE evaluation: reads the true
means).

    PYTHONPATH=src python scripts/one_column.py KINDS [RUNS]

KINDS is comma-separated (see ``rows``); prints, for n = 50 ... 5000 and rho = 0.1 and 1, the
mean absolute error over RUNS releases (seed 500 + s for the rows, s for the noise) and which
estimator ``auto`` ran how often. Before/after a change: the same command with the other
checkout's src on PYTHONPATH. docs/results.md, "One column at both ends of its range" and "A
rare value at a face".
"""

import sys
import warnings

import numpy as np

import dpmean


def rows(kind: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, tuple]:
    """One column of n rows and its public range."""
    if kind == "N0wide":
        return rng.normal(0, 1, n), (-1e6, 1e6)
    if kind == "N100one":
        return rng.normal(100, 1, n), (0, 1e6)
    if kind == "N50tight":
        return np.clip(rng.normal(50, 5, n), 0, 100), (0, 100)
    if kind == "lognorm":
        return np.clip(10 * rng.lognormal(0, 1.5, n), 0, 1000), (0, 1000)
    if kind == "uniform":
        return rng.uniform(0, 10, n), (0, 10)
    if kind == "pois":
        return rng.poisson(2, n).astype(float), (0, 50)
    if kind == "likert":
        return rng.choice([1, 2, 3, 4, 5], n, p=[.1, .15, .2, .3, .25]).astype(float), (1, 5)
    if kind == "flag3":
        return (rng.random(n) < 0.03).astype(float), (0, 1)
    if kind == "flag1":
        return (rng.random(n) < 0.01).astype(float), (0, 1)
    if kind == "ones99":
        return (rng.random(n) < 0.99).astype(float), (0, 1)
    if kind == "zeroinfl":
        return np.where(rng.random(n) < 0.9, 0.0, rng.uniform(0, 0.2, n)), (0, 1)
    if kind == "pois05":
        return rng.poisson(0.05, n).astype(float), (0, 20)
    if kind == "flag30":
        return (rng.random(n) < 0.3).astype(float), (0, 1)
    if kind == "bimodal":
        return np.where(rng.random(n) < 0.7, rng.normal(20, 2, n), rng.normal(80, 2, n)), (0, 100)
    if kind == "age18":
        return np.clip(np.round(rng.normal(45, 15, n)), 18, 99), (0, 120)
    if kind == "capped":
        return np.minimum(rng.lognormal(10.5, 1, n), 1e6), (0, 1e6)
    if kind == "age":
        return np.clip(rng.normal(45, 15, n), 0, 120), (0, 120)
    raise SystemExit(f"unknown kind {kind!r}")


def main() -> None:
    kinds = sys.argv[1].split(",")
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    warnings.simplefilter("ignore")
    for kind in kinds:
        for n in (50, 100, 200, 500, 2000, 5000):
            cells = []
            for rho in (0.1, 1.0):
                errors, chosen = [], {}
                for seed in range(runs):
                    x, box = rows(kind, n, np.random.default_rng(500 + seed))
                    release = dpmean.mean(x, rho=rho, bounds=box, random_state=seed)
                    errors.append(abs(release.mean[0] - x.mean()))
                    name = release.diagnostics["chosen"]
                    chosen[name] = chosen.get(name, 0) + 1
                cells.append(f"rho={rho:g}: {np.mean(errors):.3g} {dict(sorted(chosen.items()))}")
            print(f"{kind:9s} n={n:<5d}", " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
