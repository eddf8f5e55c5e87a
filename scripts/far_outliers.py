"""auto and its candidates on rows with 1% far outliers (NON-PRIVATE evaluation: reads the true
means): N(1, 1) rows, d = 10, 1% of them moved by 1,000 in every coordinate, box +-10^4 (a user
trial). IOME and PLAN clip the outliers (a move of 31.6); cm's radius holds them. Does the
choice see it?

    PYTHONPATH=src python scripts/far_outliers.py [SEEDS]

Prints, per n and rho, each method's RMSE of the l2 error (against the mean of the rows clamped
to the box) over SEEDS data sets and releases, and auto's choices. Before/after a change: run it
with the other checkout's src on PYTHONPATH.
"""

import sys
import warnings

import numpy as np

import dpmean

warnings.simplefilter("ignore")
seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
BOX = (-1e4, 1e4)


def rows(seed, n, d=10):
    rng = np.random.default_rng(1000 * seed + n)
    x = rng.normal(1.0, 1.0, (n, d))
    x[rng.choice(n, max(1, n // 100), replace=False)] += 1000.0
    return x


for n, rho in [(20_000, 0.05), (20_000, 0.5), (20_000, 2.0), (2000, 0.5), (2000, 5.0)]:
    cells, chosen = [], {}
    for method in ("auto", "cm", "iome", "plan", "gaussian"):
        errors = []
        for seed in range(seeds):
            x = rows(seed, n)
            result = dpmean.mean(x, rho=rho, bounds=BOX, method=method, random_state=seed)
            errors.append(np.linalg.norm(result.mean - np.clip(x, *BOX).mean(0)))
            if method == "auto":
                name = result.diagnostics["chosen"]
                chosen[name] = chosen.get(name, 0) + 1
        cells.append(f"{method} {np.sqrt(np.mean(np.square(errors))):.3g}")
    print(f"n = {n}, rho = {rho}: " + ", ".join(cells) + f" (auto chose {chosen})", flush=True)
