"""PLAN and auto where values tie at a domain's end (NON-PRIVATE evaluation: l2 errors against
the exact mean): MNIST, the mixed table of scripts/release_hashes.py (errors in box widths) and
coin columns, the table "the exponential mechanism's ends as atoms" of docs/results.md.

    PYTHONPATH=src python scripts/ties_at_ends.py
"""
import warnings

import numpy as np

import dpmean

warnings.simplefilter("ignore")


def error(x, box, method, rho, seeds, width=1.0):
    truth = np.clip(x, *box).mean(axis=0)
    return float(np.mean([np.linalg.norm((dpmean.mean(x, rho=rho, bounds=box, method=method,
                                                 random_state=s).mean - truth) / width)
                    for s in range(seeds)]))


mnist = np.load("data/mnist-70k.npz")["images"]
rng = np.random.default_rng(5)
mixed = np.column_stack([rng.normal(0, 1, (3000, 20)), rng.lognormal(3, 1, (3000, 10)),
                         rng.integers(0, 2, (3000, 5))])
mixed_box = (np.r_[np.full(20, -10.0), np.zeros(15)],
             np.r_[np.full(20, 10.0), np.full(10, 1e3), np.ones(5)])
coins = np.random.default_rng(1).random((10000, 20)) < np.linspace(0.05, 0.5, 20)
for method in ("plan", "auto"):
    print(method, "MNIST rho 0.02 / 0.5:",
          [round(error(mnist, (0, 255), method, rho, 8), 3) for rho in (0.02, 0.5)])
    print(method, "mixed rho 0.1 / 1:",
          [round(error(mixed, mixed_box, method, rho, 20, mixed_box[1] - mixed_box[0]), 5)
           for rho in (0.1, 1.0)])
    print(method, "coins rho 0.1 / 1:",
          [round(error(coins, (0, 1), method, rho, 20), 5) for rho in (0.1, 1.0)])
