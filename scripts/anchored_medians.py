"""IOME's and PLAN's centre where few median halvings are reliable (NON-PRIVATE evaluation:
reads the true means): small tables in loose boxes, where the medians' last intervals are wide.

First a user trial's cells, N(1, 1) rows, d = 10, in the box +-10^4 (the median l2 error over
SEEDS releases, and auto's choices); then rows far from the anchor the median domains are
narrowed about (the box's middle, or its point nearest the origin), where the middle of a last
interval is nearer the median than its end (the root-mean-square error). Before/after a change:
run it with the other checkout's src on PYTHONPATH.

    PYTHONPATH=src python scripts/anchored_medians.py [SEEDS]
"""

import sys
import warnings

import numpy as np

import dpmean

warnings.simplefilter("ignore")
seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
METHODS = ("plan", "iome", "cm", "auto")


def errors(make, n, d, rho, box, method):
    out, chosen = [], []
    for seed in range(seeds):
        x = make(np.random.default_rng(seed), n, d)
        result = dpmean.mean(x, rho=rho, bounds=box, method=method, random_state=seed)
        out.append(np.linalg.norm(result.mean - np.clip(x, *box).mean(0)))
        chosen.append(result.diagnostics.get("chosen"))
    return np.array(out), chosen


def normal(mu, sd):
    return lambda rng, n, d: rng.normal(mu, sd, (n, d))


print("N(1, 1), d = 10, box +-10^4: median l2 error")
for n, rho in [(50, 1.0), (50, 2.0), (100, 0.5), (100, 1.0), (500, 0.05), (1000, 0.05)]:
    cells, chosen = [], []
    for method in METHODS:
        e, c = errors(normal(1.0, 1.0), n, 10, rho, (-1e4, 1e4), method)
        cells.append(f"{method} {np.median(e):.3g}")
        chosen = c if method == "auto" else chosen
    picks = {name: chosen.count(name) for name in sorted(set(chosen))}
    print(f"  n = {n}, rho = {rho}: " + ", ".join(cells) + f" (auto chose {picks})", flush=True)

print("rows away from the anchor: root-mean-square l2 error")
for name, make, n, d, rho, box in [
        ("N(500, 1), box +-10^4", normal(500, 1), 100, 10, 1.0, (-1e4, 1e4)),
        ("N(500, 1), box +-10^4", normal(500, 1), 50, 10, 2.0, (-1e4, 1e4)),
        ("N(1000, 1), box +-10^4", normal(1000, 1), 1000, 10, 0.05, (-1e4, 1e4)),
        ("N(30, 5), box (0, 10^3)", normal(30, 5), 200, 20, 0.5, (0, 1e3)),
        ("N(300, 5), box (0, 10^3)", normal(300, 5), 200, 20, 0.5, (0, 1e3)),
        ("N(50, 5), box (0, 100)", normal(50, 5), 1000, 64, 0.05, (0, 100)),
        ("t3 + 1, box +-10^4", lambda rng, n, d: rng.standard_t(3, (n, d)) + 1, 500, 50, 0.05,
         (-1e4, 1e4))]:
    cells = [f"{m} {np.sqrt(np.mean(errors(make, n, d, rho, box, m)[0] ** 2)):.4g}"
             for m in METHODS]
    print(f"  {name}, n = {n}, d = {d}, rho = {rho}: " + ", ".join(cells), flush=True)
