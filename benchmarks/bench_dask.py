"""PLAN and the trimmed mean on Dask without a funnel (issue 20): a Gaussian dask.array generated
on the workers of a local cluster (2 worker processes, 1 thread each), never materialised on
the client.

Prints, for the non-private mean (the array's ``.mean(axis=0)`` on the same cluster), cm, plan
and trimmed: wall time (one run each), the ratio to cm and to the non-private mean, the client's
peak resident memory after the run (getrusage: the client process only; the workers are other
processes), and the temporary-directory check: the client runs with TMPDIR set to a fresh empty
directory, every ``tempfile`` call of the client process is counted, and the directory must be
empty afterwards. The cluster keeps its scratch space elsewhere (``--worker-dir``). Not a test.

    python benchmarks/bench_dask.py --gigabytes 10    # the issue's size
    python benchmarks/bench_dask.py --gigabytes 0.2   # a smoke run
    python benchmarks/bench_dask.py --gigabytes 2 --methods plan --calls  # time by question
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from measure import timed_calls, wrapped

METHODS = ("cm", "plan", "trimmed")
# The Dask engine's aggregate questions, each timed with ``--calls``.
ENGINE_QUESTIONS = ("row_norms", "clipped_sum", "clipped_sums", "coordinate_counts",
                    "coordinate_count_table", "pair_distances", "pair_value_order",
                    "column_order", "clipped_outer_sum")


def client_peak_mib() -> float:
    """The client process's peak resident set so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@contextmanager
def counted_tempfiles() -> Iterator[Counter]:
    """Count every call of the ``tempfile`` functions that create files or directories in this
    process's temporary directory (anonymous files included, which never show in a directory
    listing). A call given another ``dir`` is counted under "elsewhere: NAME": numba checks
    that its cache directory (the package's ``__pycache__``) is writable by opening and
    closing an anonymous file there, which is not the temporary directory."""
    calls: Counter = Counter()
    temporary = Path(tempfile.gettempdir()).resolve()

    def counting(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            where = kwargs.get("dir")
            inside = where is None or Path(where).resolve().is_relative_to(temporary)
            calls[name if inside else f"elsewhere: {name}"] += 1
            return original(*args, **kwargs)
        return call

    with wrapped(tempfile, ("TemporaryFile", "NamedTemporaryFile", "SpooledTemporaryFile",
                            "mkstemp", "mkdtemp", "TemporaryDirectory"), counting):
        yield calls


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gigabytes", type=float, default=1.0,
                        help="size of the float64 array (default 1)")
    parser.add_argument("--d", type=int, default=1024, help="columns (default 1024)")
    parser.add_argument("--rho", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--worker-dir", default=None,
                        help="the workers' scratch space (default: a directory next to this "
                             "script's working directory, not the client's TMPDIR)")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--calls", action="store_true",
                        help="also print each method's engine calls and their seconds (the "
                             "column questions' selection passes run inside the draws, "
                             "after the calls that return their order statistics)")
    args = parser.parse_args(argv)

    # The client's temporary directory: fresh and empty, so anything written there shows.
    client_tmp = Path(tempfile.mkdtemp(prefix="bench-dask-client-tmp-"))
    os.environ["TMPDIR"] = str(client_tmp)
    tempfile.tempdir = str(client_tmp)
    worker_dir = Path(args.worker_dir or Path.cwd() / "bench-dask-workers")
    worker_dir.mkdir(exist_ok=True)

    import dask
    import dask.array as da
    from distributed import Client, LocalCluster

    # The cluster's scheduler and nannies start from this process: their scratch space goes
    # with the workers', not into the client's TMPDIR.
    dask.config.set({"temporary-directory": str(worker_dir)})

    import dpmean
    from dpmean.engines.dask import DaskEngine

    n = int(args.gigabytes * 1e9 / (8 * args.d))
    rows = max(1, (64 << 20) // (8 * args.d))
    print(f"n = {n:,}, d = {args.d} ({8 * n * args.d / 1e9:.1f} GB float64), chunks of "
          f"{rows:,} rows; 2 workers x 1 thread; rho = {args.rho}")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, local_directory=str(worker_dir)) as cluster, \
            Client(cluster):
        x = da.random.default_rng(args.seed).normal(2.0, 1.5, size=(n, args.d),
                                                    chunks=(rows, args.d))
        times: dict[str, float] = {}
        peaks: dict[str, float] = {}
        with counted_tempfiles() as calls:
            start = time.perf_counter()
            x.mean(axis=0).compute()
            times["mean"] = time.perf_counter() - start
            peaks["mean"] = client_peak_mib()
            for method in args.methods:
                start = time.perf_counter()
                with timed_calls({DaskEngine: ENGINE_QUESTIONS}) as engine_calls:
                    dpmean.mean(x, rho=args.rho, method=method, bounds=(-20.0, 20.0),
                                random_state=args.seed)
                times[method] = time.perf_counter() - start
                peaks[method] = client_peak_mib()
                print(f"  {method} done in {times[method]:.1f} s", flush=True)
                if args.calls:
                    print("    " + ", ".join(f"{name} {seconds:.1f} s"
                                             for name, seconds in engine_calls
                                             if seconds >= 0.05))
                    print(f"    elsewhere (draws, selection passes, the client's work): "
                          f"{times[method] - sum(t for _, t in engine_calls):.1f} s")
        left = sorted(p.name for p in client_tmp.iterdir())

    cm = times.get("cm")
    print(f"\n{'method':<8} {'seconds':>8} {'x cm':>6} {'x mean':>7} {'client peak MiB':>16}")
    for name, seconds in times.items():
        versus_cm = f"{seconds / cm:.2f}" if cm else "-"
        print(f"{name:<8} {seconds:8.1f} {versus_cm:>6} {seconds / times['mean']:7.1f} "
              f"{peaks[name]:16.0f}")
    inside = {name: k for name, k in calls.items() if not name.startswith("elsewhere")}
    elsewhere = {name: k for name, k in calls.items() if name.startswith("elsewhere")}
    print(f"\nclient tempfile calls in its TMPDIR: {inside or 'none'}; files left in the "
          f"client's TMPDIR ({client_tmp}): {left or 'none'}"
          + (f"; calls in other directories: {elsewhere}" if elsewhere else ""))
    client_tmp.rmdir() if not left else None
    sys.exit(0 if not inside and not left else 1)


if __name__ == "__main__":
    main()
