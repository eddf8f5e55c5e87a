"""IOME's local-model experiments (section 6.2, Figures 10-12) plus the shuffle and central models.

The settings, data and box come from dpmean.experiments.local (shared with
``dpmean reproduce iome-fig10`` .. ``iome-fig12``): N(mu, I_d), n = 100,000, ||mu|| = 0.9 R,
box [-(R + 10), R + 10]^d; l2 error against the non-private empirical mean (a NON-PRIVATE
evaluation), trimmed mean over trials (10% each side, as IOME), and the time of one run. Not a
test.

    python benchmarks/bench_protocols.py --figure 10    # vary d (eps = 1, R = 20 sqrt(d))
    python benchmarks/bench_protocols.py --figure 11    # vary eps (d = 8, R = 20 sqrt(d))
    python benchmarks/bench_protocols.py --figure 12    # vary R (d = 8, eps = 1)
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.stats import trim_mean

import dpmean
from dpmean.experiments import local


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figure", type=int, choices=sorted(local.SWEEPS), default=10)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--n", type=int, default=local.N)
    parser.add_argument("--methods", nargs="+", default=[m for m, _ in local.METHODS])
    args = parser.parse_args()
    key = local.SWEEPS[args.figure][0]
    print(f"Figure {args.figure}: n={args.n}, delta={local.DELTA}, {args.trials} trials; "
          f"l2 error (trimmed mean) / seconds per run")
    print("setting".ljust(16) + "".join(m.rjust(22) for m in args.methods))
    for setting in local.settings(args.figure, args.n):
        data = local.data(setting, np.random.default_rng(setting["d"]))
        truth = data.x.mean(axis=0)
        row = f"{key}={setting[key]:g}".ljust(16)
        for method in args.methods:
            errors, seconds = [], []
            for trial in range(args.trials):
                start = time.perf_counter()
                result = dpmean.mean(data.x, epsilon=setting["epsilon"], delta=local.DELTA,
                                     method=method, bounds=local.box(setting),
                                     random_state=trial)
                seconds.append(time.perf_counter() - start)
                errors.append(np.linalg.norm(result.mean - truth))
            row += f"{trim_mean(errors, 0.1):12.4g} /{np.median(seconds):6.2f}s".rjust(22)
        print(row, flush=True)


if __name__ == "__main__":
    main()
