"""Speed and memory of cm, iome and plan at scale, on each engine, against the non-private mean.

Settings (issue 8): (a) MNIST, in memory; (b) Gaussian n = 1,000,000, d = 256 from a
memory-mapped .npy file, chunked engine; (c) the Kosarak-scale sparse matrix (990,000 x 41,270,
about 8M non-zeros, bench_plan.zipf_baskets), sparse engine; (d) the file of (b) through Dask
with a LocalCluster of 2 worker processes. For each: wall time (best of --repeat), peak memory
and the ratio to the non-private mean on the same engine in the same run (the engine's exact
sum / n, which reads the data the same way). In-process peaks are what the run allocates
(tracemalloc; memory-mapped pages are the OS's cache, not allocations); Dask peaks are the
workers' peak RSS (workers restarted before each run) plus the client's allocations.

IOME on the sparse matrix needs rotated coordinate counts, which rotate every undecided row
(O(d_pad log d_pad) each, d_pad = 65,536): the full run takes hours, so it runs on the first
--iome-sparse-rows rows (all 41,270 columns) and the table gives that time and its linear
extrapolation to all rows. Not a test.

    python benchmarks/bench_scale.py            # the full table (a 2 GB scratch file)
    python benchmarks/bench_scale.py --quick    # n / 10 and fewer rows for sparse IOME
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np
from bench_plan import zipf_baskets
from measure import best_time, peak_memory

import dpmean
from dpmean.engines import make_engine, open_source
from dpmean.transforms import IDENTITY

MNIST = Path(__file__).resolve().parents[1] / "data" / "mnist-70k.npz"
METHODS = ("cm", "iome", "plan")
RHO = 1.0


def gaussian_file(folder: Path, n: int, d: int = 256) -> Path:
    """n rows of N(0, I_d) shifted by 10, written in blocks to a .npy file (not held whole)."""
    path = folder / f"gaussian-{n}x{d}.npy"
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(n, d))
    rng = np.random.default_rng(0)
    for start in range(0, n, 50_000):
        stop = min(start + 50_000, n)
        out[start:stop] = rng.normal(10.0, 1.0, size=(stop - start, d))
    out.flush()
    del out
    return path


def measure(name: str, engine: str, make_input, bounds, repeat: int, rows: list,
            methods=METHODS, memory=peak_memory, shown: str | None = None) -> None:
    """One table block: the non-private mean, then each method, on ``engine``."""
    shown = shown or engine

    def plain():
        x = make_input()
        shape = x.shape
        lo, hi = np.full(shape[1], bounds[0]), np.full(shape[1], bounds[1])
        return make_engine(x, lo, hi, engine).clipped_sum(IDENTITY, np.inf) / shape[0]

    base = best_time(plain, repeat)
    rows.append((name, shown, "non-private mean", base, memory(plain), 1.0))
    for method in methods:
        def run(method=method):
            return dpmean.mean(make_input(), rho=RHO, method=method, bounds=bounds,
                               random_state=0, engine=engine)
        seconds = best_time(run, repeat)
        rows.append((name, shown, method, seconds, memory(run), seconds / base))
        print(f"  {name} / {shown} / {method}: {seconds:.2f} s", file=sys.stderr)


def dask_memory(client):
    """Peak RSS of the workers (restarted first) plus the client's allocations, in MiB."""
    def measure_run(fn) -> float:
        client.restart()
        tracemalloc.start()
        fn()
        local = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        peaks = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        workers = [kib / 1024 for kib in peaks.values()]
        print(f"    workers' peak RSS {', '.join(f'{w:.0f}' for w in workers)} MiB, client "
              f"{local / 2**20:.0f} MiB", file=sys.stderr)
        return sum(workers) + local / 2**20

    return measure_run


def print_table(rows: list) -> None:
    print("| data | engine | method | wall time (s) | peak memory (MiB) | x non-private mean |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    for name, engine, method, seconds, mib, ratio in rows:
        print(f"| {name} | {engine} | {method} | {seconds:.3f} | {mib:.0f} | {ratio:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n / 10, 500 sparse IOME rows")
    parser.add_argument("--repeat", type=int, default=1, help="timed runs (best is shown)")
    parser.add_argument("--iome-sparse-rows", type=int, default=None,
                        help="rows of the Kosarak-scale matrix IOME runs on (default 2000)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["mnist", "gaussian", "sparse",
                                                                  "dask"])
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    rows: list = []

    if "mnist" not in args.skip:
        images = np.load(MNIST)["images"]
        measure("MNIST 70,000 x 784", "memory", lambda: images, (0, 255), args.repeat, rows)

    with tempfile.TemporaryDirectory() as folder:
        path = None
        if "gaussian" not in args.skip or "dask" not in args.skip:
            path = gaussian_file(Path(folder), 1_000_000 // scale)
        label = f"Gaussian {1_000_000 // scale:,} x 256 (.npy)"
        if "gaussian" not in args.skip:
            measure(label, "chunked", lambda: open_source(path), (-50, 50), args.repeat, rows)

        if "sparse" not in args.skip:
            n = 990_000 // scale
            baskets = zipf_baskets(n, 41_270, mean_size=8.5)
            sparse_label = f"Kosarak-scale {n:,} x 41,270, {baskets.nnz:,} nnz"
            # PLAN on baskets: its sparse defaults (mean centre, binary variances).
            measure(sparse_label, "sparse", lambda: baskets, (0, 1), args.repeat, rows,
                    methods=("cm", "plan"))
            iome_rows = args.iome_sparse_rows or (500 if args.quick else 2000)
            head = baskets[:iome_rows]
            part: list = []
            measure(f"first {iome_rows:,} rows of it", "sparse", lambda: head, (0, 1), 1, part,
                    methods=("iome",))
            rows.extend(part)
            seconds = part[-1][3]
            print(f"IOME sparse: {seconds:.1f} s on {iome_rows} rows -> about "
                  f"{seconds * n / iome_rows / 60:.0f} min on all {n:,} rows (linear in n)",
                  file=sys.stderr)

        if "dask" not in args.skip:
            from distributed import Client, LocalCluster

            from dpmean.engines.dask import dask_array_from_file

            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster, Client(cluster) as client:
                measure(label, "dask", lambda: dask_array_from_file(str(path)), (-50, 50),
                        args.repeat, rows, memory=dask_memory(client), shown="dask, 2 workers")
    print_table(rows)


if __name__ == "__main__":
    main()
