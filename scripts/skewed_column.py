"""auto and its candidates on tables with one skewed column among normal ones (a user trial):
does the choice see IOME's clipping bias? (NON-PRIVATE evaluation: reads the true means.)

    PYTHONPATH=src python scripts/skewed_column.py RUNS [ages]

With "ages": a second trial's table instead, four N(50, 10) ages in (0, 120) and an income
lognormal(10, 1) in (0, 10^6), n = 50,000, each column its own range, the error in box widths
(each coordinate's error divided by its range), and IOME also at threshold_share 0.25.

Prints, per table and budget, each method's RMSE of the l2 error (against the mean of the rows
clamped to the box) over RUNS releases (noise seeds 100 .. 100 + RUNS - 1), auto's ratio to the
best of the others and its choices. Before/after a change: run it with the other checkout's src
on PYTHONPATH.
"""

import sys
import warnings

import numpy as np

import dpmean

warnings.simplefilter("ignore")
R = int(sys.argv[1]) if len(sys.argv) > 1 else 10


def run(name, X, bounds, rho, methods=("gaussian", "cm", "iome", "plan", "auto")):
    truth = np.clip(X, *bounds).mean(0)
    out, ch = {}, {}
    for m in methods:
        e = []
        for s in range(R):
            r = dpmean.mean(X, rho=rho, bounds=bounds, method=m, random_state=100 + s)
            e.append(np.sum((r.mean - truth) ** 2))
            if m == "auto":
                c = r.diagnostics.get("chosen")
                ch[c] = ch.get(c, 0) + 1
        out[m] = np.sqrt(np.mean(e))
    best = min(v for k, v in out.items() if k != "auto")
    print(f"{name:34s} rho={rho:<4} " + " ".join(f"{k}={v:.4f}" for k, v in out.items()),
          f"auto/best={out['auto']/best:.2f} chosen={ch}", flush=True)


def ages_table():
    rng = np.random.default_rng(7)
    n = 50_000
    x = np.column_stack([rng.normal(50, 10, (n, 4)), rng.lognormal(10, 1.0, n)])
    lo, hi = np.zeros(5), np.array([120.0, 120, 120, 120, 1e6])
    truth = np.clip(x, lo, hi).mean(0)
    for rho in (0.2, 2.0):
        row = []
        for name, options in (("gaussian", {}), ("cm", {}), ("iome", {}),
                              ("iome share 0.25", {"threshold_share": 0.25}), ("plan", {}),
                              ("auto", {})):
            errors, chosen = [], {}
            for s in range(R):
                r = dpmean.mean(x, rho=rho, bounds=(lo, hi), method=name.split()[0],
                                random_state=100 + s, **options)
                errors.append(np.sum(((r.mean - truth) / (hi - lo)) ** 2))
                if name == "auto":
                    c = r.diagnostics["chosen"]
                    chosen[c] = chosen.get(c, 0) + 1
            row.append(f"{name}={np.sqrt(np.mean(errors)):.3g}")
        print(f"ages + income, n = 50,000, rho={rho}: " + " ".join(row), chosen, flush=True)


if len(sys.argv) > 2 and sys.argv[2] == "ages":
    ages_table()
    sys.exit()

rng = np.random.default_rng(0)
for n in [5000, 50000]:
    d = 10
    X = rng.normal(loc=np.linspace(-3, 10, d), scale=np.linspace(0.5, 4, d), size=(n, d))
    X[:, -1] = rng.lognormal(1.0, 0.8, n)
    for rho in [0.2, 2.0]:
        run(f"n={n} 9 gauss+lognormal (-20,50)", X, (-20, 50), rho)
    Y = rng.normal(0, 1, size=(n, d))
    Y[:, 0] = rng.lognormal(1.0, 1.0, n)
    run(f"n={n} 9 N(0,1)+lognormal (-10,100)", Y, (-10, 100), 1.0)
