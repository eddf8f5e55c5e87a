"""auto, plan and cm on scipy.sparse rows (NON-PRIVATE evaluation: reads the true means).

    PYTHONPATH=src python scripts/sparse_auto.py [RUNS]

Prints the mean l2 error over RUNS releases (seeds 0..RUNS-1, default 3) at rho = 0.5 of
auto, plan and cm, and what auto ran, on: real-valued sparse rows (n = 20,000, d = 2,000,
1% dense, values N(0.05, 0.1)) in boxes of +-1 to +-1000 (a user trial's case), small
real values (uniform in (0, 0.1), "tf-idf") in (0, 1), 0/1 rows in (0, 1), word counts in
boxes of 20 to 100 (``word_counts``), and the two basket files in (0, 1) at rho = 0.05, 0.5
and 2. docs/results.md, "auto on sparse rows".
"""

import sys
import warnings
from collections import Counter

import numpy as np
import scipy.sparse

import dpmean
from dpmean.experiments.data import basket_data


def synthetic(values) -> scipy.sparse.csr_matrix:
    return scipy.sparse.random(20_000, 2_000, density=0.01, format="csr", random_state=2,
                               data_rvs=values)


def word_counts() -> scipy.sparse.csr_matrix:
    """n = 20,000 rows of Poisson(50) + 1 words over d = 5,000 Zipf(1.1) items, each count
    capped at 20 (an adversarial review's case)."""
    rng = np.random.default_rng(1)
    n, d = 20_000, 5_000
    p = 1.0 / np.arange(1, d + 1) ** 1.1
    p /= p.sum()
    sizes = rng.poisson(50, n) + 1
    rows = np.repeat(np.arange(n), sizes)
    x = scipy.sparse.csr_matrix((np.ones(sizes.sum()), (rows, rng.choice(d, sizes.sum(), p=p))),
                                shape=(n, d))
    x.sum_duplicates()
    x.data = np.minimum(x.data, 20.0)
    return x


def report(name: str, x, bounds, rho: float, runs: int) -> None:
    truth = np.asarray(x.mean(axis=0)).ravel()
    errors, chosen = {}, Counter()
    for method in ("auto", "plan", "cm"):
        found = []
        for seed in range(runs):
            result = dpmean.mean(x, rho=rho, bounds=bounds, method=method, random_state=seed)
            found.append(np.linalg.norm(result.mean - truth))
            if method == "auto":
                chosen[result.diagnostics["chosen"]] += 1
        errors[method] = float(np.mean(found))
    shown = ", ".join(f"{m} {e:.4g}" for m, e in errors.items())
    print(f"{name:38s} rho={rho:<5g} {shown}   auto ran {dict(chosen)}")


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(2)
    real = synthetic(lambda k: rng.normal(0.05, 0.1, k))
    for width in (1.0, 10.0, 100.0, 1000.0):
        report(f"real-valued in +-{width:g}", real, (-width, width), 0.5, runs)
    report("tf-idf-like in (0, 1)", synthetic(lambda k: rng.uniform(0.0, 0.1, k)), (0.0, 1.0),
           0.5, runs)
    report("0/1 in (0, 1)", synthetic(np.ones), (0.0, 1.0), 0.5, runs)
    counts = word_counts()
    for box, rho in (((0.0, 20.0), 0.3), ((0.0, 30.0), 0.5), ((0.0, 60.0), 0.3),
                     ((0.0, 100.0), 0.3)):
        report(f"word counts <= 20 in {box}", counts, box, rho, runs)
    for name in ("kosarak-first-36682.dat", "retail.dat"):
        baskets = basket_data(name).x
        for rho in (0.05, 0.5, 2.0):
            report(name, baskets, (0.0, 1.0), rho, runs)


if __name__ == "__main__":
    main()
