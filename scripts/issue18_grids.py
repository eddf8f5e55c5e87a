"""Accuracy without bounds on the Gaussian grids of docs/results.md at rho >= 1/4 (issue 18,
goal 9): each setting's own data (experiments.figures) and its own user box, against the same
release with bounds omitted (a private box on BOUNDS_SHARE of rho). Mean l2 error against the
true mean over RUNS trials (NON-PRIVATE evaluation), the ratio, and the releases that fell
back to the zero vector (a fallback's error says nothing about the method: counted apart).
Each cell: ratio (error with the user box / error without bounds).

    python scripts/issue18_grids.py RUNS SPEC [SPEC ...] [--max-d D]

SPEC: plan-gaussian-a, plan-gaussian-b, plan-gaussian-c, iome-fig1, iome-fig2, iome-fig3,
iome-fig6, iome-fig7 (MNIST digits, box [0, 255]). Methods: iome (the default), plan (p = 2, as
the grids run it), cm.
"""
import argparse
import warnings

import numpy as np

import dpmean
from dpmean.experiments.figures import MNIST_IOME, SPECS, _box, _plan_box

METHODS = {"iome": {}, "plan": {"p": 2.0}, "cm": {}}


def user_box(spec: str, setting: dict, data) -> tuple[float, float]:
    """The box the grid gives its bounded methods (PLAN's, IOME's CM cube, MNIST's pixels)."""
    if spec.startswith("plan"):
        return _plan_box(setting)["bounds"]
    return MNIST_IOME.options["bounds"] if "digit" in setting else _box(setting, data)["bounds"]


def setting_label(setting: dict) -> str:
    keys = ("digit", "d", "alpha", "kappa", "R_per_sqrt_d", "rho")
    return ", ".join(f"{k} = {setting[k]:g}" for k in keys if k in setting)


def measure(spec_name: str, index: int, setting: dict, runs: int) -> dict[str, list]:
    spec = SPECS[spec_name]
    out: dict[str, list] = {m: [] for m in METHODS}
    for trial in range(runs):
        rng = np.random.default_rng([index, trial])
        data = spec.data(setting, rng)
        box = user_box(spec_name, setting, data)
        for method, options in METHODS.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # fallbacks are counted below
                given = dpmean.mean(data.x, rho=setting["rho"], method=method, bounds=box,
                                    random_state=trial, **options)
                found = dpmean.mean(data.x, rho=setting["rho"], method=method,
                                    random_state=trial, **options)
            out[method].append((float(np.linalg.norm(given.mean - data.truth)),
                                float(np.linalg.norm(found.mean - data.truth)),
                                given.fallback, found.fallback))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", type=int)
    parser.add_argument("specs", nargs="+")
    parser.add_argument("--max-d", type=int, default=None)
    args = parser.parse_args()
    print("| grid | setting | runs | " + " | ".join(METHODS) + " | fallbacks (box / none) |")
    print("| --- | --- | ---: | " + "---: | " * len(METHODS) + "---: |")
    for name in args.specs:
        for index, setting in enumerate(SPECS[name].settings):
            if setting["rho"] < 0.25 or (args.max_d and setting.get("d", 0) > args.max_d):
                continue
            cells, fell = [], np.zeros(2)
            for rows in measure(name, index, setting, args.runs).values():
                given, found, fell_given, fell_found = np.array(rows, dtype=float).T
                cells.append(f"{found.mean() / given.mean():.2f} ({given.mean():.4g} / "
                             f"{found.mean():.4g})")
                fell += fell_given.sum(), fell_found.sum()
            print(f"| {name} | {setting_label(setting)} | {args.runs} | {' | '.join(cells)} | "
                  f"{fell[0]:.0f} / {fell[1]:.0f} |", flush=True)


if __name__ == "__main__":
    main()
