"""One far-tailed column in a table (a user trial, 2026-11-27): transfer sizes lognormal(12, 2.5)
in (0, 1e9) beside a uniform (0, 100) and a lognormal(3, 1) column in (0, 5000), per-column
bounds, rho = 1. Prints each method's mean relative error per column over SEEDS releases and
`auto`'s choice. PLAN clips in its variance-scaled space and cuts the far tail, which `auto`'s
histograms (box-normalised norms) do not see: auto chose PLAN and the sizes came out 12% low.

NON-PRIVATE evaluation (the clamped data's exact means). Usage:
``PYTHONPATH=src python scripts/skewed_table.py [N] [SEEDS]`` (defaults 500000, 3)."""

import sys
import warnings

import numpy as np

import dpmean

n = int(sys.argv[1]) if len(sys.argv) > 1 else 500_000
seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
rng = np.random.default_rng(0)
x = np.column_stack([np.minimum(rng.lognormal(12, 2.5, n), 1e9), rng.uniform(0, 100, n),
                     rng.lognormal(3, 1.0, n)])
lo, hi = np.zeros(3), np.array([1e9, 100.0, 5000.0])
truth = np.clip(x, lo, hi).mean(axis=0)
print(f"n = {n}, rho = 1, {seeds} seeds: mean relative error per column (sizes, uniform, "
      f"lognormal)")
for method in ("auto", "plan", "iome", "cm", "gaussian"):
    errors, chosen = [], []
    for seed in range(seeds):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = dpmean.mean(x, rho=1.0, bounds=(lo, hi), method=method, random_state=seed)
        errors.append((result.mean - truth) / truth)
        chosen.append(result.diagnostics.get("chosen"))
    note = f"  chose {chosen}" if method == "auto" else ""
    print(f"{method:9} {np.round(np.mean(errors, axis=0), 4)}{note}", flush=True)
