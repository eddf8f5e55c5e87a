"""IOME's rotated centre at small budgets (NON-PRIVATE evaluation: reads the true mean).

N(mu, I) rows with mu = 0.5 (near the box's middle) or 0.3 B ("offset"), box +-B, rho = 0.1;
the median l2 error over SEEDS releases of iome, plan, cm and auto, per cell.

    PYTHONPATH=src python scripts/small_budget_centre.py [SEEDS]
"""

import sys
import warnings

import numpy as np

import dpmean

warnings.simplefilter("ignore")
seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
CELLS = [(300, 64, 10.0, "middle"), (300, 64, 10.0, "offset"), (300, 64, 1e4, "middle"),
         (300, 64, 1e4, "offset"), (300, 256, 10.0, "middle"), (300, 256, 10.0, "offset"),
         (600, 256, 10.0, "middle"), (600, 256, 10.0, "offset"), (1000, 64, 10.0, "middle"),
         (1000, 256, 10.0, "middle")]

for n, d, box, where in CELLS:
    shift = 0.5 if where == "middle" else 0.3 * box
    x = np.clip(np.random.default_rng(1).normal(shift, 1.0, size=(n, d)), -box, box)
    cells = []
    for method in ("iome", "plan", "cm", "auto"):
        errors = [np.linalg.norm(dpmean.mean(x, method=method, rho=0.1, bounds=(-box, box),
                                             random_state=100 + seed).mean - x.mean(0))
                  for seed in range(seeds)]
        cells.append(f"{method} {np.median(errors):.3g}")
    print(f"n={n} d={d} B={box:g} {where:6s} | " + "  ".join(cells), flush=True)
