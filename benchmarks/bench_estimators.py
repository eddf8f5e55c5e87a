"""Speed of every central estimator against the non-private mean on the same data in the same run.

Prints, for MNIST (70000 x 784 uint8), Gaussian C (n = 10^4, d = 2048, variances (d/i)^2) and
the Kosarak prefix (36,682 sparse baskets; only the methods that take sparse input), each
method's wall time (best of --repeat runs) and its ratio to the non-private mean of the same
array (``numpy.mean`` dense, ``X.mean(axis=0)`` sparse). Not a test: nothing is asserted.

    python benchmarks/bench_estimators.py                      # everything (a few minutes)
    python benchmarks/bench_estimators.py --quick              # small slices
    python benchmarks/bench_estimators.py --data mnist --methods plan --calls  # where time goes
    python benchmarks/bench_estimators.py --methods iome cm --data mnist
    python benchmarks/bench_estimators.py --data boxes --methods cm plan   # per-column boxes
    python benchmarks/bench_estimators.py --data mnist --methods cm --no-bounds   # private box
"""

from __future__ import annotations

import argparse
import inspect
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from measure import best_time, timed_calls

import dpmean
from dpmean.engines.memory import InMemoryEngine
from dpmean.engines.sparse import SparseEngine
from dpmean.errors import DPMeanError
from dpmean.experiments.data import basket_data

DATA = Path(__file__).resolve().parents[1] / "data"
# The local and shuffle protocols answer another question (each user randomises their own row).
PROTOCOLS = {"iome-local", "iome-shuffle", "grs-knownvar", "grs-unkvar"}
CENTRAL = [m for m in dpmean.available_methods() if m not in PROTOCOLS]


def public_options(lo: float, hi: float, d: int, sigma_min: float,
                   sigma_max: float) -> dict[str, dict[str, Any]]:
    """The public assumptions some methods need, from the box and a priori scales only:
    CoinPress's bound on ||mean - centre of the box|| (half the box's diagonal) and the
    Gaussian wrapper's mean radius (the box's farthest corner) and sigma bounds."""
    reach = (hi - lo) * np.sqrt(d) / 2.0
    corner = max(abs(lo), abs(hi)) * np.sqrt(d)
    return {"coinpress": {"radius": reach}, "coinpress-cov": {"radius": reach},
            "iome-gaussian": {"mean_radius": corner, "sigma_min": sigma_min,
                              "sigma_max": sigma_max}}


def datasets(quick: bool) -> Iterator[tuple[str, Any, Any, dict[str, Any]]]:
    """(name, data, bounds, per-method options) for each dataset."""
    with np.load(DATA / "mnist-70k.npz") as archive:
        images = archive["images"]
    images = images[:7000] if quick else images
    yield (f"mnist n={len(images)}", images, (0.0, 255.0),
           public_options(0.0, 255.0, 784, 1.0, 255.0))
    # The same pixels in per-column boxes of two widths, which the engine normalises (not in
    # the default --data; ask for "boxes"): the rescaled path of small integers.
    wide = np.where(np.arange(784) % 2 == 0, 255.0, 300.0)
    yield (f"boxes-mnist n={len(images)} (0..255 / 0..300)", images, (np.zeros(784), wide),
           public_options(0.0, 300.0, 784, 1.0, 300.0))
    n, d = (2_000, 512) if quick else (10_000, 2048)
    std = d / np.arange(1, d + 1)  # Gaussian C: coordinate i has variance (d / i)^2
    x = np.random.default_rng(0).normal(10.0, std, size=(n, d))
    lo, hi = 10.0 - 50.0 * d**1.5, 10.0 + 50.0 * d**1.5
    yield f"gaussian-C n={n} d={d}", x, (lo, hi), public_options(lo, hi, d, 1.0, float(d))
    baskets = basket_data("kosarak-first-36682.dat", 3_000 if quick else None).x
    # engine="sparse" for every method: those without a sparse form say so (n/a).
    options = {method: {"engine": "sparse", **extra} for method, extra in public_options(
        0.0, 1.0, baskets.shape[1], 0.01, 1.0).items()}
    yield (f"kosarak-prefix n={baskets.shape[0]} (sparse)", baskets, (0.0, 1.0),
           {method: options.get(method, {"engine": "sparse"}) for method in CENTRAL})


def engine_questions(engine: type) -> list[str]:
    """The public methods of an engine class (its questions), for ``--calls``."""
    return [name for name in dir(engine) if not name.startswith("_")
            and inspect.isfunction(inspect.getattr_static(engine, name))]


def where_time_goes(run: Callable[[], object]) -> str:
    """One more run of ``run``, its time split by engine question (outermost calls, summed
    by name, largest first; under half a millisecond left out) and the rest ("elsewhere":
    the mechanisms' draws and searches, the estimator's own arithmetic)."""
    owners = {engine: engine_questions(engine) for engine in (InMemoryEngine, SparseEngine)}
    start = time.perf_counter()
    with timed_calls(owners) as calls:
        run()
    total = time.perf_counter() - start
    by_name: dict[str, list[float]] = {}
    for name, seconds in calls:
        by_name.setdefault(name, []).append(seconds)
    parts = sorted(by_name.items(), key=lambda item: -sum(item[1]))
    # A view's first question builds what the rest reuse (a rotated copy, sorted norms).
    shown = [f"{name} {sum(times):.3f}" + (f" ({len(times)} calls, the first {times[0]:.3f})"
                                            if len(times) > 1 else "")
             for name, times in parts if sum(times) >= 0.0005]
    rest = total - sum(seconds for _, seconds in calls)
    return f"of {total:.3f} s: " + ", ".join([*shown, f"elsewhere {rest:.3f}"])


def plain_mean(x: Any) -> Callable[[], object]:
    if isinstance(x, np.ndarray):
        return lambda: np.mean(x, axis=0)
    return lambda: x.mean(axis=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small slices of every dataset")
    parser.add_argument("--repeat", type=int, default=1, help="runs per timing (best is kept)")
    parser.add_argument("--methods", nargs="+", default=CENTRAL, choices=CENTRAL)
    parser.add_argument("--data", nargs="+", default=["mnist", "gaussian-C", "kosarak-prefix"],
                        help="datasets, by the start of their name")
    parser.add_argument("--no-bounds", action="store_true",
                        help="give no bounds: each release first buys a private box (10%% of "
                        "rho); sparse data need bounds and are skipped")
    parser.add_argument("--calls", action="store_true",
                        help="also print where each method's time goes: one more run, split "
                        "by engine question (seconds; where asked more than once, the number "
                        "of calls and the first's seconds)")
    args = parser.parse_args()

    # Warm up imports, caches and compiled kernels so the first timing is not charged for them
    # (small integers take their own compiled variant: IOME's float32 rotated copy). Rows of
    # zeros draw the warning of a radius at its search's bottom: not the benchmark's output.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in ("cm", "iome"):
            dpmean.mean(np.zeros((4000, 4)), rho=1.0, bounds=(0, 1), method=method,
                        random_state=0)
        dpmean.mean(np.zeros((4000, 16), dtype=np.uint8), rho=1.0, bounds=(0, 255),
                    method="iome", random_state=0)
        if args.no_bounds:  # the private box's compiled counts
            dpmean.mean(np.ones((4000, 4)), rho=1.0, method="cm", random_state=0)
    print(f"{'data':36} {'method':14} {'seconds':>9} {'x mean':>9}")
    for name, x, bounds, method_options in datasets(args.quick):
        if not any(name.startswith(prefix) for prefix in args.data):
            continue
        if args.no_bounds:
            if not isinstance(x, np.ndarray):
                continue
            bounds = None
        floor = best_time(plain_mean(x), max(args.repeat, 5))
        print(f"{name:36} {'(plain mean)':14} {floor:9.4f} {1.0:9.1f}", flush=True)
        for method in args.methods:
            options = method_options.get(method, {})

            def run(method: str = method, options: dict = options, x: Any = x,
                    bounds: Any = bounds) -> object:
                return dpmean.mean(x, rho=0.5, method=method, bounds=bounds, random_state=0,
                                   **options)

            try:
                seconds = best_time(run, args.repeat)
            except DPMeanError as exc:  # e.g. a method without a sparse form
                print(f"{name:36} {method:14} {'n/a':>9} {'':9} {str(exc)[:60]}", flush=True)
                continue
            print(f"{name:36} {method:14} {seconds:9.3f} {seconds / floor:9.1f}", flush=True)
            if args.calls:
                print(f"    {where_time_goes(run)}", flush=True)


if __name__ == "__main__":
    main()
