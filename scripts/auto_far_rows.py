"""auto on rows far from the origin against their spread (NON-PRIVATE evaluation: reads the
true mean). Timestamp-like columns near 1.7e9 in the box [0, 2e9], and N(0.3 B, 1) rows in a
box +-B: how often auto chose each candidate and its l2 error (median, max) over seeds.

    PYTHONPATH=src python scripts/auto_far_rows.py [SEEDS]
"""

import sys
import warnings

import numpy as np

import dpmean

warnings.simplefilter("ignore")
seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 20


def cases():
    rng = np.random.default_rng(2)
    for n, d, spread in [(1000, 1, 1e3), (1000, 3, 1e3), (5000, 2, 1e5)]:
        x = 1.7e9 + rng.normal(0, spread, (n, d))
        yield f"timestamps n={n} d={d} sd={spread:g}", x, (0, 2e9)
    for n, d, box in [(1000, 8, 1e8), (1000, 64, 1e4)]:
        x = np.clip(np.random.default_rng(1).normal(0.3 * box, 1, (n, d)), -box, box)
        yield f"N(0.3 B, 1) n={n} d={d} B={box:g}", x, (-box, box)


for name, x, box in cases():
    errors, chosen = [], []
    for seed in range(seeds):
        result = dpmean.mean(x, rho=0.1, bounds=box, random_state=seed)
        errors.append(np.linalg.norm(result.mean - x.mean(0)))
        chosen.append(result.diagnostics["chosen"])
    counts = {c: chosen.count(c) for c in sorted(set(chosen))}
    print(f"{name:40s} median {np.median(errors):.3g} max {max(errors):.3g} chose {counts}",
          flush=True)
