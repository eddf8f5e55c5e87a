"""Speed of the estimators that ask order statistics (PLAN's medians and variances, the trimmed
mean's sorted columns) against the non-private mean on the same data in the same run.

Data: MNIST (70,000 x 784 uint8, 74 % zeros: tie-heavy columns) and PLAN's Gaussian C
(n = 10^4, d = 2048, Zipf variances (d/i)^2, mean 10, the paper's box). Prints wall time (best
of --repeat runs) and the ratio to ``numpy.mean(x, axis=0)`` of the same array. Not a test.

    python benchmarks/bench_order_statistics.py
    python benchmarks/bench_order_statistics.py --methods plan --repeat 1
    python benchmarks/bench_order_statistics.py --methods plan:centre=median plan:centre=mean

A method may carry options after a colon (``plan:centre=median``, comma-separated): PLAN's
default centre on dense data is IOME's rotated medians (not an order statistic); ``median``
asks the exponential-mechanism medians of the raw columns, ``mean`` leaves only the variances
and the threshold.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from measure import best_time

import dpmean
from dpmean.experiments.data import gaussian, zipf_variances

DATA = Path(__file__).resolve().parents[1] / "data" / "mnist-70k.npz"


def datasets():
    with np.load(DATA) as archive:
        yield "MNIST (uint8)", archive["images"], (0, 255)
    d, alpha = 2048, 2.0
    x = gaussian(10_000, np.full(d, 10.0), np.random.default_rng(0),
                 variances=zipf_variances(d, alpha)).x
    half = 50 * d ** (1 + alpha / 4)  # the PLAN experiments' box (experiments.figures)
    yield f"Gaussian C n=10000 d={d}", x, (-half, half)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing (best is kept)")
    parser.add_argument("--methods", nargs="+",
                        default=["plan", "plan:centre=median", "plan:centre=mean", "trimmed"])
    parser.add_argument("--rho", type=float, default=0.5)
    args = parser.parse_args()

    # Warm up imports and caches so the first timing is not charged for them.
    dpmean.mean(np.zeros((4000, 4)), rho=1.0, bounds=(0, 1), random_state=0)
    print(f"{'data':28} {'method':20} {'seconds':>9} {'x numpy.mean':>13}")
    for name, x, bounds in datasets():
        floor = best_time(lambda x=x: np.mean(x, axis=0), args.repeat)
        print(f"{name:28} {'np.mean':20} {floor:9.3f} {1.0:13.1f}", flush=True)
        for spec in args.methods:
            method, _, given = spec.partition(":")
            options = dict(option.split("=", 1) for option in given.split(",") if option)

            def run(method=method, options=options, x=x, bounds=bounds):
                return dpmean.mean(x, rho=args.rho, method=method, bounds=bounds,
                                   random_state=0, **options)

            seconds = best_time(run, args.repeat)
            print(f"{name:28} {spec:20} {seconds:9.3f} {seconds / floor:13.1f}", flush=True)


if __name__ == "__main__":
    main()
