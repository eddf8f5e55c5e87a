"""Wide rows in memory (a user trial: per-user vectors of d = 100,000): each method's wall time,
its ratio to the non-private mean of the same array in the same process, and its peak resident
memory above the data, each method in a fresh process (the peak is per process). Rows this
wide are blocks of one row in the in-memory engine. Not a test.

    python benchmarks/bench_wide.py                       # n = 2000, d = 100,000 float64
    python benchmarks/bench_wide.py --n 500 --d 20000     # a smoke run
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import warnings

METHODS = ("gaussian", "gaussian norm_bound", "cm", "iome", "auto no bounds")


def peak_mib() -> float:
    """This process's peak resident set so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one(method: str, n: int, d: int) -> dict[str, float]:
    """Time ``method`` on a fresh N(0, 0.003^2) array of n x d (one run after one warm-up
    on a small array), against ``numpy.mean`` of the same array."""
    import numpy as np

    import dpmean

    name, _, variant = method.partition(" ")
    options = ({"norm_bound": 1.0} if variant == "norm_bound" else
               {} if variant == "no bounds" else {"bounds": (-1.0, 1.0)})
    warnings.simplefilter("ignore")
    dpmean.mean(np.zeros((50, 8)), rho=0.1, method=name, random_state=1,
                **({"bounds": (-1.0, 1.0)} if options.get("bounds") else options))
    x = np.random.default_rng(0).standard_normal((n, d))
    x *= 0.003
    before = peak_mib()
    start = time.perf_counter()
    dpmean.mean(x, rho=0.1, method=name, random_state=1, **options)
    seconds = time.perf_counter() - start
    start = time.perf_counter()
    np.mean(x, axis=0)
    floor = time.perf_counter() - start
    return {"seconds": seconds, "mean": floor, "above": peak_mib() - before,
            "data": x.nbytes / 2**20}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--d", type=int, default=100_000)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # run one method here, print JSON
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.n, args.d)))
        return
    print(f"n = {args.n:,}, d = {args.d:,} float64 ({8 * args.n * args.d / 2**20:,.0f} MiB); "
          f"rho = 0.1; each method in a fresh process")
    print(f"{'method':<22} {'seconds':>8} {'x mean':>7} {'peak above data, MiB':>21}")
    for method in args.methods:
        out = subprocess.run([sys.executable, __file__, "--n", str(args.n), "--d", str(args.d),
                              "--one", method], capture_output=True, text=True, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{method:<22} {row['seconds']:8.2f} {row['seconds'] / row['mean']:7.1f} "
              f"{row['above']:21.0f}", flush=True)


if __name__ == "__main__":
    main()
