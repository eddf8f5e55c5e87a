"""auto, plan, iome and cm on dense 0/1 columns (NON-PRIVATE evaluation: l2 errors against the
exact mean), the table "Found while trying the new default on dense 0/1 data" of
docs/results.md.

    python scripts/issue16/dense_binary.py [SEEDS]
"""
import sys
import warnings

import numpy as np

import dpmean

warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
CASES = {
    "3000 x 6, Bernoulli(0.2), box (0, 1)": (rng.random((3000, 6)) < 0.2, (0, 1)),
    "the same in the box (-10, 10)": (rng.random((3000, 6)) < 0.2, (-10, 10)),
    "5000 x 50, Bernoulli(0.05), box (0, 1)": (rng.random((5000, 50)) < 0.05, (0, 1)),
}
seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 4
for name, (x, box) in CASES.items():
    errors, chosen = {}, set()
    for method in ("auto", "plan", "iome", "cm"):
        runs = [dpmean.mean(x, rho=0.5, bounds=box, random_state=s, method=method)
                for s in range(seeds)]
        errors[method] = np.mean([np.linalg.norm(r.mean - x.mean(axis=0)) for r in runs])
        if method == "auto":
            chosen = {r.diagnostics["chosen"] for r in runs}
    print(name, {k: round(float(v), 4) for k, v in errors.items()}, "auto chose", sorted(chosen))
