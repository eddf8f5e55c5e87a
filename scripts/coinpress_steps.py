"""CoinPress's number of steps: t = "auto" (``coinpress.public_steps``) against fixed t.

For each setting (Gaussian rows N(mu, sd^2 I_d), n, rho, the a priori ball's radius about the
origin, the public sigma), the mean l2 error of the release against the rows' mean over SEEDS
releases at t = 1, 2, 3, 4, 10 and the t "auto" takes (marked *), with the public recursion's
predicted l2 noise (the last step's std times sigma sqrt(d)) in brackets. Non-private
evaluation (the rows' mean is read to measure error).

    PYTHONPATH=src python scripts/coinpress_steps.py [SEEDS]
"""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np

import dpmean
from dpmean.estimators import coinpress

# (mu, sd, d, n, rho, radius, sigma)
SETTINGS = [
    (100.0, 10.0, 10, 1000, 0.5, 1e6 * math.sqrt(10), 10.0),  # a user trial's loose ball
    (100.0, 10.0, 10, 1000, 0.5, 1e3, 10.0),
    (0.0, 1.0, 100, 2000, 0.5, 10.0 * math.sqrt(100), 1.0),    # CoinPress's ball
    (0.0, 1.0, 100, 2000, 0.5, 1e4, 1.0),
    (5.0, 1.0, 10, 200, 0.1, 50.0, 1.0),
    (0.0, 1.0, 784, 70000, 0.5, 50.0 * 28, 1.0),               # IOME's ball at MNIST's shape
    (5.0, 3.0, 100, 5000, 0.5, 15.0, 3.0),  # radius 0.3 ||mu||: misses the mean (a review)
]


def predicted(radius: float, d: int, n: int, rho: float, t: int) -> float:
    *_, (_, std, _) = coinpress.mvm_steps(radius, d, n, coinpress.step_budgets(rho, t), 0.01)
    return std


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    warnings.simplefilter("ignore")
    print("| mu, sd, d, n, rho, radius, sigma | t: mean l2 error (predicted noise) |")
    print("| --- | --- |")
    for mu, sd, d, n, rho, radius, sigma in SETTINGS:
        auto = coinpress.public_steps(radius / sigma, d, n, rho, 0.01)
        cells = []
        for t in sorted({1, 2, 3, 4, 10, auto}):
            errors = []
            for seed in range(seeds):
                x = np.random.default_rng(seed).normal(mu, sd, size=(n, d))
                result = dpmean.mean(x, method="coinpress", rho=rho, radius=radius,
                                     sigma=sigma, t=t, random_state=seed)
                errors.append(np.linalg.norm(result.mean - x.mean(axis=0)))
            noise = predicted(radius / sigma, d, n, rho, t) * sigma * math.sqrt(d)
            cells.append(f"{t}{'*' if t == auto else ''}: {np.mean(errors):.3g} ({noise:.3g})")
        print(f"| {mu:g}, {sd:g}, {d}, {n}, {rho:g}, {radius:.3g}, {sigma:g} | "
              f"{'; '.join(cells)} |")


if __name__ == "__main__":
    main()
