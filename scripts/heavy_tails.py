"""auto and its candidates on heavy- and light-tailed rows: does the choice see the clipping
bias? (NON-PRIVATE evaluation: reads the true means.)

    PYTHONPATH=src python scripts/heavy_tails.py RUNS [RHO] [METHODS] [DATASETS]

Prints, per dataset, each method's RMSE of the l2 error over RUNS releases (data seed s,
noise seed 100 + s for s = 0..RUNS-1) and auto's choices. Before/after a change: run it with
the other checkout's src on PYTHONPATH. DATASETS: comma-separated name prefixes (default all).
"""

import collections
import sys
import warnings

import numpy as np

import dpmean

N = 3000
DATASETS = {
    # name: (rows for a generator, public box)
    "lognormal(0, 1.5) x 10, d=5": (lambda r: 10 * r.lognormal(0, 1.5, (N, 5)), (0, 1e4)),
    "lognormal(0, 1) x 10, d=20": (lambda r: 10 * r.lognormal(0, 1, (N, 20)), (0, 1e4)),
    "Pareto(2.5) x 10, d=5": (lambda r: 10 * (1 + r.pareto(2.5, (N, 5))), (0, 1e4)),
    "exponential x 10, d=10": (lambda r: 10 * r.exponential(1, (N, 10)), (0, 1e3)),
    "Student t(3), d=10": (lambda r: r.standard_t(3, (N, 10)), (-100, 100)),
    "N(0, I), d=64, n=4000": (lambda r: r.normal(0, 1, (4000, 64)), (-400, 400)),
    "N(0.5, 1), d=8, n=2000": (lambda r: r.normal(0.5, 1, (2000, 8)), (-5, 5)),
    "N(50, 25), d=16": (lambda r: r.normal(50, 5, (N, 16)), (0, 100)),
    "incomes: lognormal(10.5, 0.8), d=1": (lambda r: r.lognormal(10.5, 0.8, (N, 1)), (0, 1e7)),
    "N(0, 1), d=1": (lambda r: r.normal(0, 1, (N, 1)), (-10, 10)),
    "N(10, (d/j)^2), d=64, n=10^4 (Gaussian C)": (
        lambda r: 10 + r.normal(0, 1, (10000, 64)) * (64 / np.arange(1, 65)), (-25600, 25600)),
    "Student t(2) + 5, d=4": (lambda r: 5 + r.standard_t(2, (N, 4)), (-100, 100)),
}


def main():
    warnings.simplefilter("ignore")
    runs = int(sys.argv[1])
    rho = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
    methods = sys.argv[3].split(",") if len(sys.argv) > 3 else ["cm", "iome", "plan", "auto"]
    wanted = sys.argv[4].split(",") if len(sys.argv) > 4 else [""]
    print(f"rho = {rho}, {runs} runs; RMSE of the l2 error")
    print("| data | " + " | ".join(methods) + " | auto chose |")
    print("| --- |" + " ---: |" * len(methods) + " --- |")
    for name, (make, box) in DATASETS.items():
        if not any(name.startswith(w) for w in wanted):
            continue
        errors = {m: [] for m in methods}
        chosen = collections.Counter()
        for s in range(runs):
            x = make(np.random.default_rng(s))
            truth = x.mean(axis=0)
            for m in methods:
                r = dpmean.mean(x, method=m, rho=rho, bounds=box, random_state=100 + s)
                errors[m].append(float(np.sum((r.mean - truth) ** 2)))
                if m == "auto":
                    chosen[r.diagnostics.get("chosen", "?")] += 1
        cells = [f"{np.sqrt(np.mean(errors[m])):.4g}" for m in methods]
        picks = ", ".join(f"{k} {v}" for k, v in chosen.most_common())
        print(f"| {name} | " + " | ".join(cells) + f" | {picks} |")


if __name__ == "__main__":
    main()
