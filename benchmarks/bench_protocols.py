"""IOME's local-model experiments (section 6.2, Figures 10-12) plus the shuffle and central models.

Data N(mu, I_d), n = 100,000, ||mu|| = 0.9 R, box [-(R + 10), R + 10]^d; l2 error against the
non-private mean (a NON-PRIVATE evaluation), trimmed mean over trials (10% each side, as IOME),
and the time of one run. Not a test.

    python benchmarks/bench_protocols.py --figure 10    # vary d (eps = 1, R = 20 sqrt(d))
    python benchmarks/bench_protocols.py --figure 11    # vary eps (d = 8, R = 20 sqrt(d))
    python benchmarks/bench_protocols.py --figure 12    # vary R (d = 8, eps = 1)
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy.stats import trim_mean

import dpmean

METHODS = ("iome-local", "grs-knownvar", "grs-unkvar", "iome-shuffle", "iome")
DELTA = 1e-9


def settings(figure: int):
    """(label, d, epsilon, R) of each point of the figure."""
    if figure == 10:
        return [(f"d={d}", d, 1.0, 20 * math.sqrt(d)) for d in (2, 8, 32, 128)]
    if figure == 11:
        return [(f"eps={e}", 8, e, 20 * math.sqrt(8)) for e in (0.5, 1.0, 2.0, 4.0)]
    return [(f"R={r:g}sqrt(d)", 8, 1.0, r * math.sqrt(8)) for r in (5, 20, 100, 500)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figure", type=int, choices=(10, 11, 12), default=10)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    args = parser.parse_args()
    print(f"Figure {args.figure}: n={args.n}, delta={DELTA}, {args.trials} trials; "
          f"l2 error (trimmed mean) / seconds per run")
    print("setting".ljust(16) + "".join(m.rjust(22) for m in args.methods))
    for label, d, epsilon, radius in settings(args.figure):
        rng = np.random.default_rng(d)
        mu = rng.normal(size=d)
        mu *= 0.9 * radius / np.linalg.norm(mu)
        x = rng.normal(size=(args.n, d)) + mu
        truth = x.mean(axis=0)
        row = label.ljust(16)
        for method in args.methods:
            errors, seconds = [], []
            for trial in range(args.trials):
                start = time.perf_counter()
                result = dpmean.mean(x, epsilon=epsilon, delta=DELTA, method=method,
                                     bounds=(-radius - 10, radius + 10), random_state=trial)
                seconds.append(time.perf_counter() - start)
                errors.append(np.linalg.norm(result.mean - truth))
            row += f"{trim_mean(errors, 0.1):12.4g} /{np.median(seconds):6.2f}s".rjust(22)
        print(row, flush=True)


if __name__ == "__main__":
    main()
