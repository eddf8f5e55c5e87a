"""The binary searches' count tables on the chunked engine: the same release with one pass per
halving and with the counts of several halvings read from one pass (``counts_by_table``).

Writes a Gaussian float64 ``.npy`` file (n x d) to a temporary directory, then times each
method on the chunked engine with the tables off, then on (``--repeat`` runs each, best kept),
and prints seconds and the ratio to the non-private mean of the same file in the same run
(``numpy.mean`` of the memory-mapped array, best of 3). Checks that both ways release the same
numbers. Not a test.

    python benchmarks/bench_count_tables.py                  # 200,000 x 128 (205 MB)
    python benchmarks/bench_count_tables.py --n 20000 --d 32 # a smoke run
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from measure import best_time

import dpmean
from dpmean.engines import chunked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--d", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=2, help="rounds (best is shown)")
    parser.add_argument("--methods", nargs="+", default=["iome", "plan"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.npy"
        np.save(path, np.random.default_rng(0).normal(1.0, 2.0, size=(args.n, args.d)))
        x = np.load(path, mmap_mode="r")
        floor = best_time(lambda: np.mean(x, axis=0), 3)
        print(f"{args.n:,} x {args.d} .npy, chunked engine, rho = 1, bounds (-20, 20)")
        print(f"{'method':8} {'tables':>7} {'seconds':>9} {'x mean':>8}")
        print(f"{'mean':8} {'':>7} {floor:9.3f} {1.0:8.1f}")
        releases: dict[tuple[str, bool], np.ndarray] = {}
        for method in args.methods:

            def run(tables: bool, method: str = method) -> None:
                chunked.ChunkedEngine.counts_by_table = tables
                releases[method, tables] = dpmean.mean(
                    chunked.open_source(path), rho=1.0, bounds=(-20.0, 20.0), method=method,
                    random_state=0).mean

            seconds = {tables: best_time(lambda t=tables: run(t), args.repeat)
                       for tables in (False, True)}
            assert np.array_equal(releases[method, False], releases[method, True]), method
            for tables, took in seconds.items():
                print(f"{method:8} {'on' if tables else 'off':>7} {took:9.3f} "
                      f"{took / floor:8.1f}", flush=True)
        chunked.ChunkedEngine.counts_by_table = True


if __name__ == "__main__":
    main()
