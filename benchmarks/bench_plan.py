"""Speed and memory of PLAN on sparse basket data against the non-private sparse column mean.

Data: the bundled retail baskets (88,162 x 16,471 CSR; ids are 1-based, so column 0 is empty)
and a synthetic matrix of Kosarak's scale (990,000 rows, 41,270 items, about 8 million
non-zeros, Zipf item popularity). Prints wall time (best of --repeat runs), the ratio to the
non-private column mean ``X.mean(axis=0)`` on the same matrix in the same run, and the peak
memory each allocated (tracemalloc, a separate run). Not a test.

``--accuracy`` instead prints the paper's accuracy settings (NON-PRIVATE evaluation against
the true and empirical means): PLAN, PLAN without scaling and IOME on Gaussian data with
variances (d/i)^2 and without skew (d = 256, n = 10,000, rho = 1), and the relative errors of
the pair-based variance estimator next to the paper's Table 2 (Appendix D.2).

    python benchmarks/bench_plan.py              # retail and the Kosarak-scale matrix
    python benchmarks/bench_plan.py --quick      # retail and a 10x smaller synthetic matrix
    python benchmarks/bench_plan.py --accuracy   # Gaussian C / no skew, and Table 2
    python benchmarks/bench_plan.py --dense      # dense Gaussian 1,000,000 x 256 in memory
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import scipy.sparse
from measure import best_time, peak_memory

import dpmean
from dpmean.experiments import plan_variance
from dpmean.io import load_data
from dpmean.mechanisms import exponential_quantile

RETAIL = Path(__file__).resolve().parents[1] / "data" / "retail.dat"
# Public: retail's 1-based ids run 1..16,470 (data/README.md), so 16,471 columns, 0 empty.
RETAIL_ITEMS = 16_471




def zipf_baskets(n: int, d: int, mean_size: float, seed: int = 0) -> scipy.sparse.csr_matrix:
    """n baskets over d items: basket sizes geometric with mean ``mean_size``, items drawn with
    probability proportional to 1 / rank (Zipf, exponent 1), repeats within a basket merged."""
    rng = np.random.default_rng(seed)
    sizes = rng.geometric(1.0 / mean_size, size=n)
    weights = 1.0 / np.arange(1, d + 1)
    items = rng.choice(d, size=int(sizes.sum()), p=weights / weights.sum()).astype(np.int32)
    indptr = np.concatenate([[0], np.cumsum(sizes)])
    x = scipy.sparse.csr_matrix((np.ones(len(items)), items, indptr), shape=(n, d))
    x.sum_duplicates()
    x.data[:] = 1.0
    return x


def datasets(quick: bool):
    yield "retail (bundled)", load_data(RETAIL, n_items=RETAIL_ITEMS)
    n = 99_000 if quick else 990_000
    yield f"Zipf synthetic n={n} d=41270", zipf_baskets(n, 41_270, mean_size=8.5)


def gaussian_accuracy(seeds: int) -> None:
    """Gaussian C (variances (d/i)^2, box 10 +- 50 d^1.5) and Gaussian A-like data (variances
    1, box 10 +- 25 sqrt(d)), d = 256, n = 10,000, rho = 1, the reference experiments' boxes."""
    d, n = 256, 10_000
    methods = ("plan", "plan-noscale", "iome")
    print(f"l2 error, mean over {seeds} seeds (vs true mean / vs empirical mean)")
    for label, std, half in (("skewed (d/i)^2", d / np.arange(1, d + 1), 50 * d**1.5),
                             ("no skew", np.ones(d), 25 * np.sqrt(d))):
        errors = {m: [] for m in ("empirical mean", *methods)}
        for seed in range(seeds):
            x = np.random.default_rng(1000 + seed).normal(10.0, std, size=(n, d))
            empirical = x.mean(axis=0)
            errors["empirical mean"].append((np.linalg.norm(empirical - 10.0), 0.0))
            for method in methods:
                est = dpmean.mean(x, rho=1.0, method=method, bounds=(10 - half, 10 + half),
                                  random_state=seed).mean
                errors[method].append((np.linalg.norm(est - 10.0),
                                       np.linalg.norm(est - empirical)))
        for method, values in errors.items():
            true_err, emp_err = np.mean(values, axis=0)
            print(f"  {label:16} {method:15} {true_err:9.4f} {emp_err:9.4f}")


def median_time(rng: np.random.Generator, rows: int, repeat: int) -> float:
    """Seconds (best of ``repeat``) for the private medians of a (rows x 64) Gaussian block."""
    block = rng.normal(size=(rows, 64))
    return best_time(lambda: exponential_quantile(block, 0.5, -50.0, 50.0, rho=1.0 / 256,
                                                  rng=np.random.default_rng(1)), repeat)


def dense_speed(rows: int, repeat: int, seeds: int) -> None:
    """Dense PLAN in memory: the exponential-mechanism medians of one (rows x 64) column block
    (PLAN's per-coordinate budget at d = 256, rho = 1), then PLAN on Gaussian rows x 256 data,
    bounds -50..50, against ``x.mean(axis=0)`` (best of ``repeat``), and its l2 error against
    the true mean 0 over ``seeds`` seeds (NON-PRIVATE evaluation)."""
    rng = np.random.default_rng(0)
    print(f"exponential_quantile, ({rows} x 64) block: {median_time(rng, rows, repeat):.3f} s")
    x = rng.normal(size=(rows, 256))
    floor = best_time(lambda: x.mean(axis=0), repeat)
    seconds = best_time(lambda: dpmean.mean(x, method="plan", rho=1.0, bounds=(-50, 50),
                                            random_state=0), repeat)
    print(f"x.mean(axis=0) {floor:.3f} s, plan {seconds:.3f} s ({seconds / floor:.1f}x)")
    errors = [np.linalg.norm(dpmean.mean(x, method="plan", rho=1.0, bounds=(-50, 50),
                                         random_state=seed).mean) for seed in range(seeds)]
    print(f"plan l2 error vs the true mean, seeds 0..{seeds - 1}: "
          + " ".join(f"{e:.5f}" for e in errors) + f" (mean {np.mean(errors):.5f}; "
          f"empirical mean {np.linalg.norm(x.mean(axis=0)):.5f})")


def variance_accuracy(trials: int = 100) -> None:
    """Appendix D.2 (settings in dpmean.experiments.plan_variance, shared with the plan-table2
    spec): one column per trial."""
    print(f"pair_std mean relative error over {trials} trials (paper's Table 2 in brackets; "
          f"pairings = 2k is the notebook's 'fill', charged at its true sensitivity 2k)")
    for (rho, sigma), paper in plan_variance.TABLE2.items():
        errors = plan_variance.relative_errors(rho, sigma, trials, np.random.default_rng(42))
        cells = [f"{plan_variance.cell_label(k, pairings)}: {np.mean(errors[k, pairings]):.3f} "
                 f"[{paper[0] if k == 1 else paper[1]}]" for k, pairings in errors]
        print(f"  rho={rho:<6} sigma={sigma:<6} " + "  ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 10x smaller synthetic matrix")
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing (best is kept)")
    parser.add_argument("--accuracy", action="store_true",
                        help="print the accuracy settings instead of timings")
    parser.add_argument("--seeds", type=int, default=5, help="seeds for --accuracy, --dense")
    parser.add_argument("--dense", action="store_true",
                        help="dense Gaussian data in memory instead of baskets")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows for --dense")
    args = parser.parse_args()
    if args.dense:
        dense_speed(args.rows, args.repeat, args.seeds)
        return
    if args.accuracy:
        gaussian_accuracy(args.seeds)
        variance_accuracy()
        return

    runs = {
        "plan p=1": dict(method="plan", p=1),
        "plan p=2": dict(method="plan", p=2),
        "plan-noscale": dict(method="plan-noscale"),
    }
    print(f"{'data':34} {'nnz':>10} {'method':13} {'seconds':>8} {'x col mean':>11} "
          f"{'peak MiB':>9} {'l1 error':>9}")
    for name, x in datasets(args.quick):
        truth = np.asarray(x.mean(axis=0)).ravel()
        floor = best_time(lambda x=x: x.mean(axis=0), args.repeat)
        print(f"{name:34} {x.nnz:>10} {'column mean':13} {floor:8.3f} {1.0:11.1f} "
              f"{peak_memory(lambda x=x: x.mean(axis=0)):9.1f} {'(exact)':>9}")
        for label, options in runs.items():
            def release(x=x, options=options):
                return dpmean.mean(x, rho=1.0, bounds=(0, 1), random_state=0, **options)

            seconds = best_time(release, args.repeat)
            error = np.abs(release().mean - truth).sum()  # NON-PRIVATE evaluation
            print(f"{'':34} {'':>10} {label:13} {seconds:8.3f} {seconds / floor:11.1f} "
                  f"{peak_memory(release):9.1f} {error:9.3f}")


if __name__ == "__main__":
    main()
