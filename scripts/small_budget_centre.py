"""IOME's rotated centre at small budgets (NON-PRIVATE evaluation: reads the true mean).

N(mu, I) rows with mu = 0.5 (near the box's middle) or 0.3 B ("offset"), box +-B, rho = 0.1;
then rows near a box's lower face (one-hot, Bernoulli, counts, exponential; n = 300, d = 64,
rho = 0.1) and MNIST's digit 0 at rho = 0.005. The median l2 error over SEEDS releases of iome,
plan, cm and auto, per cell.

    PYTHONPATH=src python scripts/small_budget_centre.py [SEEDS]
"""

import sys
import warnings

import numpy as np

import dpmean
from dpmean.experiments.data import mnist

warnings.simplefilter("ignore")
seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
CELLS = [(300, 64, 10.0, "middle"), (300, 64, 10.0, "offset"), (300, 64, 1e4, "middle"),
         (300, 64, 1e4, "offset"), (300, 256, 10.0, "middle"), (300, 256, 10.0, "offset"),
         (600, 256, 10.0, "middle"), (600, 256, 10.0, "offset"), (1000, 64, 10.0, "middle"),
         (1000, 256, 10.0, "middle")]



def row(name, x, box, rho=0.1, offset=100):
    cells = []
    for method in ("iome", "plan", "cm", "auto"):
        errors = [np.linalg.norm(dpmean.mean(x, method=method, rho=rho, bounds=box,
                                             random_state=offset + seed).mean - x.mean(0))
                  for seed in range(seeds)]
        cells.append(f"{method} {np.median(errors):.3g}")
    print(f"{name:36s} | " + "  ".join(cells), flush=True)


for n, d, box, where in CELLS:
    shift = 0.5 if where == "middle" else 0.3 * box
    x = np.clip(np.random.default_rng(1).normal(shift, 1.0, size=(n, d)), -box, box)
    row(f"n={n} d={d} B={box:g} {where}", x, (-box, box))

rng = np.random.default_rng(0)
row("one-hot, d=64, box [0, 1]", np.eye(64)[rng.integers(0, 64, 300)], (0, 1), offset=0)
row("Bernoulli(0.1), box [0, 1]", (rng.random((300, 64)) < 0.1).astype(float), (0, 1), offset=0)
row("Bernoulli(0.5), box [0, 1]", (rng.random((300, 64)) < 0.5).astype(float), (0, 1), offset=0)
row("Poisson(2), box [0, 50]", np.minimum(rng.poisson(2, (300, 64)), 50).astype(float), (0, 50),
    offset=0)
row("Exponential(1), box [0, 100]", np.minimum(rng.exponential(1, (300, 64)), 100), (0, 100),
    offset=0)
images, labels = mnist()
row("MNIST digit 0, rho = 0.005", images[labels == 0], (0, 255), rho=0.005, offset=0)
