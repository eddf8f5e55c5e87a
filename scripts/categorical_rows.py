"""PLAN, auto and their candidates on categorical rows (one-hot groups, Bernoulli columns):
ties in the row norms and pair distances (NON-PRIVATE evaluation: reads the true means).

    PYTHONPATH=src python scripts/categorical_rows.py RUNS [RHO] [METHODS]

Prints, per dataset, each method's RMSE of the l2 error over RUNS releases (seeds 0..RUNS-1,
box [0, 1]) and auto's choices. Before/after a change: run it with the other checkout's src
on PYTHONPATH.
"""

import collections
import sys
import warnings

import numpy as np

import dpmean


def one_hot(n, k, alpha, rng):
    """n rows, one of k categories each, Zipf(alpha) frequencies."""
    p = 1.0 / np.arange(1, k + 1) ** alpha
    return np.eye(k)[rng.choice(k, size=n, p=p / p.sum())]


DATASETS = {
    "one-hot k=8 Zipf 1, n=5000": lambda r: one_hot(5000, 8, 1.0, r),
    "one-hot k=32 Zipf 1.5, n=5000": lambda r: one_hot(5000, 32, 1.5, r),
    "four one-hot groups (4, 8, 16, 3), n=5000": lambda r: np.hstack(
        [one_hot(5000, k, a, r) for k, a in [(4, 1), (8, 1), (16, 1.5), (3, 0.5)]]),
    "Bernoulli(0.02..0.5) d=64, n=5000": lambda r: (
        r.random((5000, 64)) < r.uniform(0.02, 0.5, 64)).astype(float),
    "one-hot k=100 Zipf 1, n=20000": lambda r: one_hot(20000, 100, 1.0, r),
}


def main():
    warnings.simplefilter("ignore")
    runs = int(sys.argv[1])
    rho = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
    methods = (sys.argv[3] if len(sys.argv) > 3 else "plan,iome,cm,gaussian,auto").split(",")
    for name, make in DATASETS.items():
        x = make(np.random.default_rng(1))
        truth = x.mean(axis=0)
        cells, chosen = [], collections.Counter()
        for method in methods:
            errors = []
            for seed in range(runs):
                result = dpmean.mean(x, method=method, bounds=(0, 1), rho=rho,
                                     random_state=seed)
                errors.append(np.linalg.norm(result.mean - truth))
                if method == "auto":
                    chosen[result.diagnostics["chosen"]] += 1
            cells.append(f"{method} {np.sqrt(np.mean(np.square(errors))):.4g}")
        print(f"{name:44} " + "  ".join(cells), dict(chosen) if chosen else "", flush=True)


if __name__ == "__main__":
    main()
