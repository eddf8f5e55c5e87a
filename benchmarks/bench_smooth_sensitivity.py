"""Speed of the trimmed mean's exact smooth sensitivity on the Bun-Steinke grids (Figs. 2-4).

Run: .venv/bin/python benchmarks/bench_smooth_sensitivity.py [--datasets 500] [--repeat 3]
For each n, ``datasets`` sorted samples of N(0, 1)^n clamped to [-50, 1050]; per trimming m of
the figure's grid, the smooth sensitivity at all 24 smoothings t (one call per t, as the
experiment does), against the floor: the non-private trimmed means of the same sorted data.
"""

from __future__ import annotations

import argparse
from functools import partial

import numpy as np
from measure import best_time

from dpmean.experiments.bun_steinke import BOUNDS, gaussian_datasets
from dpmean.experiments.figures import BS_M, BS_T
from dpmean.mechanisms.smooth_sensitivity import trimmed_means, trimmed_smooth_sensitivity


def _trimmed_means(data: np.ndarray, ms) -> list[np.ndarray]:
    return [trimmed_means(data, m) for m in ms]


def _smooth_sensitivities(data: np.ndarray, ms) -> list[np.ndarray]:
    return [trimmed_smooth_sensitivity(data, m, t, *BOUNDS) for m in ms for t in BS_T]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'n':>5} {'trimmed means (s)':>18} {'smooth sensitivity (s)':>23} "
          f"{'per dataset, m and t (us)':>26}")
    for n, ms in BS_M.items():
        data = gaussian_datasets(n, args.datasets, seed=0)
        floor = best_time(partial(_trimmed_means, data, ms), args.repeat)
        smooth = best_time(partial(_smooth_sensitivities, data, ms), args.repeat)
        calls = args.datasets * len(ms) * len(BS_T)
        print(f"{n:>5} {floor:>18.4f} {smooth:>23.3f} {1e6 * smooth / calls:>26.2f}")


if __name__ == "__main__":
    main()
