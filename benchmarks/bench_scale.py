"""Speed and memory of cm, iome, plan and trimmed on each engine, against the non-private mean.

Settings (issue 8): (a) MNIST, in memory; (b) Gaussian n = 1,000,000, d = 256 from a
memory-mapped .npy file, chunked engine; (c) the Kosarak-scale sparse matrix (990,000 x 41,270,
about 8M non-zeros, bench_plan.zipf_baskets), sparse engine; (d) the file of (b) through Dask
with a scheduler and 2 single-threaded worker processes (``dask_cluster``). For each: wall time
(best of --repeat), peak memory and the ratio to the non-private mean on the same engine in the
same run (the engine's exact sum / n, which reads the data the same way). ``trimmed`` runs on the
dense engines only (the sparse engine refuses order statistics). In-process peaks are what the
run allocates (tracemalloc; memory-mapped pages are the OS's cache, not allocations); Dask peaks
are the workers' peak RSS (workers restarted before each run) plus the client's allocations.

IOME on the sparse matrix answers its rotated coordinate counts from a table of lattice values
built once (engines/lattice_counts.py), so it runs on all rows. Not a test.

    python benchmarks/bench_scale.py                 # the full table (a 2 GB scratch file)
    python benchmarks/bench_scale.py --quick         # n / 10 and fewer rows for sparse IOME
    python benchmarks/bench_scale.py --size smoke    # tiny sizes: checks it runs (< 1 minute)
"""

from __future__ import annotations

import argparse
import resource
import socket
import subprocess
import sys
import tempfile
import tracemalloc
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from bench_plan import zipf_baskets
from measure import best_time, peak_memory

import dpmean
from dpmean.engines import make_engine, open_source
from dpmean.transforms import IDENTITY

MNIST = Path(__file__).resolve().parents[1] / "data" / "mnist-70k.npz"
METHODS = ("cm", "iome", "plan", "trimmed")
SPARSE_METHODS = ("cm", "iome", "plan")
RHO = 1.0


@dataclass(frozen=True)
class Sizes:
    """Rows of each data set: MNIST, the Gaussian file and the Kosarak-scale matrix."""

    mnist: int
    gaussian: int
    sparse: int


SIZES = {
    "full": Sizes(70_000, 1_000_000, 990_000),
    "quick": Sizes(70_000, 100_000, 99_000),
    "smoke": Sizes(2_000, 5_000, 9_900),
}


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
    """One table block: the non-private mean, then each method, on ``engine``. One untimed
    run of the mean first, so that no timed run pays for imports, worker start-up or a cold
    file cache."""
    shown = shown or engine

    def plain():
        x = make_input()
        shape = x.shape
        lo, hi = np.full(shape[1], bounds[0]), np.full(shape[1], bounds[1])
        return make_engine(x, lo, hi, engine).clipped_sum(IDENTITY, np.inf) / shape[0]

    plain()
    base = best_time(plain, repeat)
    rows.append((name, shown, "non-private mean", base, memory(plain), 1.0))
    for method in methods:
        def run(method=method):
            return dpmean.mean(make_input(), rho=RHO, method=method, bounds=bounds,
                               random_state=0, engine=engine)
        seconds = best_time(run, repeat)
        rows.append((name, shown, method, seconds, memory(run), seconds / base))
        print(f"  {name} / {shown} / {method}: {seconds:.2f} s", file=sys.stderr)


@contextmanager
def dask_cluster(workers: int):
    """A client of a scheduler and ``workers`` single-threaded worker processes, all started
    as separate processes (``python -m dask scheduler`` / ``worker``), as on a real cluster.

    Not a LocalCluster: its nannies live in this process, and after a run traced by
    tracemalloc here (the client's share of the peak memory) they fail to bring restarted
    workers back (the restart times out after 120 s)."""
    from distributed import Client

    with socket.socket() as probe:  # a free port for the scheduler
        probe.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    dask = [sys.executable, "-m", "dask"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    processes = [subprocess.Popen([*dask, "scheduler", "--host", "127.0.0.1", "--port",
                                   address.rsplit(":", 1)[1], "--no-dashboard"], **quiet)]
    try:
        processes.append(subprocess.Popen([*dask, "worker", address, "--nworkers", str(workers),
                                           "--nthreads", "1", "--no-dashboard"], **quiet))
        with Client(address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)
            yield client
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait()


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
    parser.add_argument("--size", choices=SIZES, default="full",
                        help="full (the issue's sizes), quick (n / 10) or smoke (tiny: checks "
                             "that every block runs, in under a minute)")
    parser.add_argument("--quick", action="store_const", const="quick", dest="size",
                        help="the same as --size quick")
    parser.add_argument("--repeat", type=int, default=1, help="timed runs (best is shown)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["mnist", "gaussian", "sparse",
                                                                  "dask"])
    args = parser.parse_args()
    sizes = SIZES[args.size]
    rows: list = []

    if "mnist" not in args.skip:
        images = np.load(MNIST)["images"][: sizes.mnist]
        measure(f"MNIST {len(images):,} x 784", "memory", lambda: images, (0, 255), args.repeat,
                rows)

    with tempfile.TemporaryDirectory() as folder:
        path = None
        if "gaussian" not in args.skip or "dask" not in args.skip:
            path = gaussian_file(Path(folder), sizes.gaussian)
        label = f"Gaussian {sizes.gaussian:,} x 256 (.npy)"
        if "gaussian" not in args.skip:
            measure(label, "chunked", lambda: open_source(path), (-50, 50), args.repeat, rows)

        if "sparse" not in args.skip:
            n = sizes.sparse
            baskets = zipf_baskets(n, 41_270, mean_size=8.5)
            sparse_label = f"Kosarak-scale {n:,} x 41,270, {baskets.nnz:,} nnz"
            # PLAN on baskets: its sparse defaults (mean centre, binary variances).
            measure(sparse_label, "sparse", lambda: baskets, (0, 1), args.repeat, rows,
                    methods=SPARSE_METHODS)

        if "dask" not in args.skip:
            from dpmean.engines.dask import dask_array_from_file

            with dask_cluster(workers=2) as client:
                measure(label, "dask", lambda: dask_array_from_file(str(path)), (-50, 50),
                        args.repeat, rows, memory=dask_memory(client), shown="dask, 2 workers")
    print_table(rows)


if __name__ == "__main__":
    main()
