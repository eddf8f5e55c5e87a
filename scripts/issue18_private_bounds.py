"""Accuracy without bounds (private box, 10% of rho) against a generous user box (+-50 sqrt(d)):
N(0, I) and N(mu, I) (||mu|| = R/2 as IOME Fig. 1), n = 4000, mean l2 error over runs.

    python scripts/issue18_private_bounds.py RUNS [D,D,...]   (default d = 8, 32, 128)"""
import sys

import numpy as np

import dpmean

runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
dims = tuple(int(v) for v in sys.argv[2].split(",")) if len(sys.argv) > 2 else (8, 32, 128)
print("| data | d | rho | method | user box | no bounds | ratio |")
print("|---|---|---|---|---|---|---|")
for shifted in (False, True):
    for d in dims:
        for rho in (0.25, 0.5):
            n, R = 4000, 50 * np.sqrt(d)
            for m in ("iome", "cm", "plan"):
                rng = np.random.default_rng(d)
                e1, e2 = [], []
                for s in range(runs):
                    mu = np.full(d, R / 2 / np.sqrt(d)) if shifted else np.zeros(d)
                    x = rng.normal(0, 1, (n, d)) + mu
                    a = dpmean.mean(x, rho=rho, method=m, bounds=(-R, R), random_state=s)
                    b = dpmean.mean(x, rho=rho, method=m, random_state=s)
                    e1.append(np.linalg.norm(a.mean - x.mean(0)))
                    e2.append(np.linalg.norm(b.mean - x.mean(0)))
                name = "N(mu, I)" if shifted else "N(0, I)"
                print(f"| {name} | {d} | {rho} | {m} | {np.mean(e1):.4f} | {np.mean(e2):.4f} "
                      f"| {np.mean(e2) / np.mean(e1):.2f} |", flush=True)
