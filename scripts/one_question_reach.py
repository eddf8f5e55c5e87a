"""PLAN, IOME, auto and CM on small tables in boxes loose on one side and in tight boxes, at
budgets where the reach searches make one reliable halving (NON-PRIVATE evaluation: reads
the true means).

    PYTHONPATH=src python scripts/one_question_reach.py KINDS NS D RHOS METHODS RUNS

KINDS, NS, RHOS and METHODS are comma-separated (kinds: see ``rows``); prints the mean l2
error over RUNS releases (seed 1000 + s for the rows, s for the noise). Before/after a change:
the same command with the other checkout's src on PYTHONPATH. docs/results.md, "One question
at small budgets".
"""

import sys
import warnings

import numpy as np

import dpmean


def rows(kind: str, n: int, d: int, rng: np.random.Generator) -> tuple[np.ndarray, tuple]:
    """The rows of one dataset and its public box."""
    if kind == "N100":  # near the lower face of a box loose on one side
        return rng.normal(100, 1, (n, d)), (0, 1e6)
    if kind == "Nmid":  # at the middle of that box
        return rng.normal(5e5, 1, (n, d)), (0, 1e6)
    if kind == "Nhigh":  # near its upper face
        return rng.normal(1e6 - 100, 1, (n, d)), (0, 1e6)
    if kind == "N100at1e3":
        return rng.normal(100, 1, (n, d)), (0, 1e3)
    if kind == "N30":
        return np.clip(rng.normal(30, 5, (n, d)), 0, 1000), (0, 1000)
    if kind == "N50tight":
        return np.clip(rng.normal(50, 5, (n, d)), 0, 100), (0, 100)
    if kind == "N1sym":
        return rng.normal(1, 1, (n, d)), (-1e4, 1e4)
    if kind == "onehot":
        return np.eye(d)[rng.integers(0, d, n)], (0, 1)
    if kind == "pois2":
        return rng.poisson(2, (n, d)).astype(float), (0, 50)
    if kind == "N0sym":  # at the middle of a symmetric box
        return rng.normal(0, 1, (n, d)), (-1e4, 1e4)
    if kind == "N1wide":  # near the middle of a box 10^12 wide
        return rng.normal(1, 1, (n, d)), (-1e12, 1e12)
    if kind == "N100wide":  # near the lower face of a box 10^12 wide
        return rng.normal(100, 1, (n, d)), (0, 1e12)
    if kind == "clinical":  # a user trial's table (d is 5 whatever is asked), boxes per column
        table = np.column_stack([rng.normal(60, 12, n), rng.normal(130, 15, n),
                                 rng.normal(200, 40, n), rng.normal(27, 5, n),
                                 rng.poisson(5, n)])
        return table, (np.array([0, 50, 100, 10, 0.0]), np.array([120, 250, 400, 60, 60.0]))
    raise SystemExit(f"unknown kind {kind!r}")


def main() -> None:
    kinds, ns, d, rhos, methods, runs = sys.argv[1:7]
    warnings.simplefilter("ignore")
    for kind in kinds.split(","):
        for n in map(int, ns.split(",")):
            for rho in map(float, rhos.split(",")):
                cells = []
                for method in methods.split(","):
                    errors = []
                    for seed in range(int(runs)):
                        x, box = rows(kind, n, int(d), np.random.default_rng(1000 + seed))
                        release = dpmean.mean(x, rho=rho, bounds=box, method=method,
                                              random_state=seed)
                        errors.append(np.linalg.norm(release.mean - x.mean(axis=0)))
                    cells.append(f"{method} {np.mean(errors):.3g}")
                print(f"{kind:10s} n={n:<5d} rho={rho:<5g}", " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
