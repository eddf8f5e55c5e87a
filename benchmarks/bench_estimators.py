"""Speed of the estimators against the non-private mean on the same data in the same run.

Prints a table: wall time (best of --repeat runs), the ratio to ``numpy.mean`` on the same
array, and the peak memory the estimator allocated (tracemalloc, a separate run). Not a test.

    python benchmarks/bench_estimators.py            # MNIST and Gaussian n=100000, d=1024
    python benchmarks/bench_estimators.py --quick    # smaller Gaussian data
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from measure import best_time, peak_memory

import dpmean

DATA = Path(__file__).resolve().parents[1] / "data" / "mnist-70k.npz"




def datasets(quick: bool):
    with np.load(DATA) as archive:
        yield "MNIST (uint8)", archive["images"], (0, 255)
    n, d = (20_000, 256) if quick else (100_000, 1024)
    x = np.random.default_rng(0).normal(loc=3.0, size=(n, d))
    yield f"Gaussian N(3, I) n={n} d={d}", x, (-50, 50)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller Gaussian data")
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing (best is kept)")
    parser.add_argument("--methods", nargs="+", default=["cm", "iome"])
    args = parser.parse_args()

    # Warm up imports and caches so the first timing is not charged for them.
    dpmean.mean(np.zeros((4000, 4)), rho=1.0, bounds=(0, 1), random_state=0)
    print(f"{'data':32} {'method':8} {'seconds':>9} {'x numpy.mean':>13} {'peak MiB':>9}")
    for name, x, bounds in datasets(args.quick):
        floor = best_time(lambda x=x: np.mean(x, axis=0), args.repeat)
        print(f"{name:32} {'np.mean':8} {floor:9.3f} {1.0:13.1f} "
              f"{peak_memory(lambda x=x: np.mean(x, axis=0)):9.0f}")
        for method in args.methods:
            def run(method=method, x=x, bounds=bounds):
                return dpmean.mean(x, rho=0.5, method=method, bounds=bounds, random_state=0)

            seconds = best_time(run, args.repeat)
            print(f"{name:32} {method:8} {seconds:9.3f} {seconds / floor:13.1f} "
                  f"{peak_memory(run):9.0f}")


if __name__ == "__main__":
    main()
