"""Start-up time of the command line: ``dpmean --help`` against a bare ``import numpy``.

Each command runs ``--runs`` times in a fresh interpreter (the same Python as this script,
with this checkout's ``src`` first on the path); the best and median wall times are printed,
and their ratio to numpy's, measured in the same run. Issue 20's goal: at most 2x. Not a test.

    python benchmarks/bench_startup.py --runs 10
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
COMMANDS = {
    "python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
    "dpmean --help": [sys.executable, "-m", "dpmean", "--help"],
}


def wall_times(command: list[str], runs: int) -> list[float]:
    """Seconds of each of ``runs`` runs of ``command``, output discarded."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(SRC), os.environ.get("PYTHONPATH")) if p)}
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per command (default 10)")
    args = parser.parse_args()
    # Interleaved would be fairer under changing load; one warm-up run each fills the OS cache.
    results = {}
    for name, command in COMMANDS.items():
        wall_times(command, 1)
        results[name] = wall_times(command, args.runs)
    base = results["python -c 'import numpy'"]
    print(f"{'command':<26} {'best s':>8} {'median s':>9} {'best x':>7} {'median x':>9}")
    for name, times in results.items():
        best, median = min(times), statistics.median(times)
        print(f"{name:<26} {best:8.3f} {median:9.3f} {best / min(base):7.2f} "
              f"{median / statistics.median(base):9.2f}")


if __name__ == "__main__":
    main()
