"""Small survey tables in their own ranges (user trials, 2026-11-27): age U(18, 90) in (18, 90),
income lognormal(10.8, 0.9) with five rows of 2.5e6 to 3e7 in (0, 10^6) (or a loose (0, 10^8)),
a 1-5 scale, an 18% flag in (0, 1) and hours N(38, 10) in (0, 80), at n sqrt(rho) below the
choice's reach (about 174); and a table in ranges far looser than its rows (N(50, 5), N(3,
0.5), N(1000, 50), N(0.5, 0.1) in (0, 10^4), (0, 100), (0, 10^6), (0, 10)); and a survey in
generous ranges (ages N(45, 12) in (0, 120), incomes lognormal(10.5, 0.8) in (0, 10^6), a
20% flag in (0, 1): a trial's, which the spread count's first version took for loose rows).
Prints each
method's RMSE per column over SEEDS releases, in thousandths of the column's width, the l2 of
those, and `auto`'s choices.

NON-PRIVATE evaluation (the clamped data's exact means). Usage:
``PYTHONPATH=src python scripts/small_tables.py [SEEDS]`` (default 20)."""

import collections
import sys
import warnings

import numpy as np

import dpmean

seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
rng = np.random.default_rng(0)
N = 1000
income = rng.lognormal(10.8, 0.9, N)
income[rng.choice(N, 5, replace=False)] = [2.5e6, 4e6, 8e6, 1.5e7, 3e7]
survey = np.column_stack([rng.integers(18, 91, N), income, rng.integers(1, 6, N),
                          rng.uniform(size=N) < 0.18, np.clip(np.round(rng.normal(38, 10, N)),
                                                              0, 80)])
loose = np.column_stack([rng.normal(50, 5, N), rng.normal(3, 0.5, N), rng.normal(1000, 50, N),
                         rng.normal(0.5, 0.1, N)])
generous = np.column_stack([np.clip(rng.normal(45, 12, N), 0, 120), rng.lognormal(10.5, 0.8, N),
                            rng.uniform(size=N) < 0.2])
cases = [(500, 0.1, 1e6), (300, 0.1, 1e6), (500, 0.1, 1e8), (1000, 0.02, 1e6), (200, 0.5, 1e6),
         (500, 0.1, None), (300, 0.1, None), (1000, 0.02, None),
         (500, 0.1, "generous"), (300, 0.1, "generous"), (1000, 0.02, "generous")]
for n, rho, income_top in cases:
    if income_top is None:
        x, what = loose[:n], "the loose table"
        lo, hi = np.zeros(4), np.array([1e4, 100, 1e6, 10])
    elif income_top == "generous":
        x, what = generous[:n], "the survey in generous ranges"
        lo, hi = np.zeros(3), np.array([120, 1e6, 1])
    else:
        x, what = survey[:n], f"the survey, income in (0, {income_top:g})"
        lo, hi = np.array([18, 0, 1, 0, 0.0]), np.array([90, income_top, 5, 1, 80])
    truth = np.clip(x, lo, hi).mean(axis=0)
    print(f"n = {n}, rho = {rho}, {what}, n sqrt(rho) = {n * rho**0.5:.0f}: RMSE per column "
          f"in widths x 1000, their l2")
    for method in ("auto", "gaussian", "iome", "plan", "cm"):
        releases, chosen = [], collections.Counter()
        for seed in range(seeds):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = dpmean.mean(x, rho=rho, bounds=(lo, hi), method=method,
                                     random_state=seed)
            releases.append(result.mean)
            chosen[result.diagnostics.get("chosen", method)] += 1
        rmse = np.sqrt(((np.array(releases) - truth) ** 2).mean(axis=0)) / (hi - lo) * 1000
        print(f"  {method:9s} {np.round(rmse, 2)}  l2 {np.sqrt((rmse**2).sum()):5.2f}  "
              f"{dict(chosen) if method == 'auto' else ''}")
