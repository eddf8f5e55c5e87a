"""PLAN and auto on small random baskets (NON-PRIVATE evaluation: reads the true mean): the
median total variation distance over 5 releases.

    PYTHONPATH=src python scripts/small_budget_baskets.py
"""
import warnings

import numpy as np
import scipy.sparse as sp

import dpmean

warnings.simplefilter("ignore")
for n, d, dens in [(400, 3000, 0.002), (1000, 3000, 0.003), (2000, 8000, 0.001)]:
    b = sp.random(n, d, density=dens, format="csr", random_state=1)
    b.data[:] = 1
    truth = np.asarray(b.mean(0)).ravel()
    for rho in [0.05, 0.5]:
        out = []
        for m in ["plan", "auto"]:
            e = [0.5 * np.abs(dpmean.mean(b, method=m, rho=rho, bounds=(0, 1),
                                          random_state=s).mean - truth).sum()
                 for s in range(5)]
            out.append(f"{m} {np.median(e):.3g}")
        print(n, d, rho, out, flush=True)
