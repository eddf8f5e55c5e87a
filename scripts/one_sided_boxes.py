"""IOME, PLAN, auto and CM in boxes loose on one side, (0, B) for data near 0, against tight
boxes (NON-PRIVATE evaluation: reads the true means).

    PYTHONPATH=src python scripts/one_sided_boxes.py RUNS METHODS ["NAME|NAME"]

Prints the RMSE of the l2 error over RUNS releases (seeds 0..RUNS-1) per dataset and box
(METHODS comma-separated, e.g. iome,plan,auto,cm; the optional third argument picks datasets
by their exact names, separated by |). Before/after a change: the same command with the other
checkout's src on PYTHONPATH.
"""

import sys
import warnings

import numpy as np

import dpmean
from dpmean.experiments.data import mnist


def cases() -> dict:
    rng = np.random.default_rng(0)
    images, _ = mnist()
    return {
        "u(0,100) d20 box(0,1e12) rho.5": (rng.uniform(0, 100, (10000, 20)), (0, 1e12), 0.5),
        "u(0,100) d20 box(0,1e9) rho.5": (rng.uniform(0, 100, (10000, 20)), (0, 1e9), 0.5),
        "u(0,100) d20 box(0,100) rho.5": (rng.uniform(0, 100, (10000, 20)), (0, 100), 0.5),
        "N(50,5) d20 n2000 box(0,100) rho.1": (
            np.clip(rng.normal(50, 5, (2000, 20)), 0, 100), (0, 100), 0.1),
        "N(50,5) d64 n1000 box(0,100) rho.05": (
            np.clip(rng.normal(50, 5, (1000, 64)), 0, 100), (0, 100), 0.05),
        "N(50,5) d20 n2000 box(0,1e6) rho.5": (
            np.clip(rng.normal(50, 5, (2000, 20)), 0, 100), (0, 1e6), 0.5),
        "poisson2 d64 n300 box(0,50) rho.1": (
            rng.poisson(2, (300, 64)).astype(float), (0, 50), 0.1),
        "poisson20 d64 n3000 box(0,1000) rho.5": (
            rng.poisson(20, (3000, 64)).astype(float), (0, 1000), 0.5),
        "mnist rho.5": (images, (0, 255), 0.5),
        "mnist rho.02": (images, (0, 255), 0.02),
        "mnist box(0,1e12) rho.5": (images, (0, 1e12), 0.5),
    }


def main() -> None:
    warnings.simplefilter("ignore")
    runs, methods = int(sys.argv[1]), sys.argv[2].split(",")
    only = sys.argv[3].split("|") if len(sys.argv) > 3 else None
    for name, (x, bounds, rho) in cases().items():
        if only and name not in only:
            continue
        truth = x.mean(axis=0)
        cells = []
        for method in methods:
            errors = [np.linalg.norm(dpmean.mean(x, method=method, bounds=bounds, rho=rho,
                                                 random_state=seed).mean - truth)
                      for seed in range(runs)]
            cells.append(f"{method} {np.sqrt(np.mean(np.square(errors))):.4g}")
        print(f"{name:40}", "  ".join(cells), flush=True)


if __name__ == "__main__":
    main()
