"""Confidence intervals against the error they bound (issue 19): per estimator, the mean
per-coordinate width of the ``level`` interval over the empirical root-mean-square error of
the release, on Gaussian data where clipping is rare (N(0.5, 1), box [-5, 5]^d).

NON-PRIVATE evaluation: the exact (clamped) mean is read to measure the error. Usage:
``PYTHONPATH=src python scripts/interval_widths.py [releases] [n] [d] [CASE;CASE...]``
(defaults 100, 2000, 8, every case); ``... interval_widths.py mnist [releases]`` (default 10)
for a short table on the bundled MNIST. The cases named "profile" spend their share on a clip
profile and (since 2026-11-26) a clip residual; ``--residual-share=S`` and
``--residual-reach=R`` (anywhere) replace ``clipped.RESIDUAL_SHARE`` and ``RESIDUAL_REACH``
(``--residual-share=0``: the profile alone, as before).
A release whose interval is the public box is reported as such ("box").
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

import dpmean

LEVEL = 0.9
BOX = (-5.0, 5.0)
RHO = 1.0
CASES = {
    "gaussian": ("gaussian", {}),
    # Every estimator that clips spends 1% on the interval's stages by default since
    # 2026-11-26 (cm, cm-fixed, iome and PLAN's binary search spent none before: "no share").
    "cm": ("cm", {}),
    "cm (no share)": ("cm", {"interval_share": 0}),
    "cm-fixed": ("cm-fixed", {}),
    "cm-fixed (no share)": ("cm-fixed", {"interval_share": 0}),
    "iome": ("iome", {}),
    "iome (no share)": ("iome", {"interval_share": 0}),
    "plan (exponential)": ("plan", {}),
    "plan (binary-search)": ("plan", {"quantile": "binary-search"}),
    "plan (binary-search, no share)": ("plan", {"quantile": "binary-search",
                                                "interval_share": 0}),
    "plan-noscale (exponential)": ("plan-noscale", {}),
    "trimmed": ("trimmed", {}),
    "trimmed (symmetric)": ("trimmed", {"symmetric": True}),
    "cm (secure noise)": ("cm", {"secure_noise": True}),
    "iome (secure noise)": ("iome", {"secure_noise": True}),
    "plan (secure noise)": ("plan", {"secure_noise": True}),
    "iome (quantized)": ("iome", {"quantized": True}),
    "cm + profile 5%": ("cm", {"interval_share": 0.05}),
    "cm-fixed + profile 5%": ("cm-fixed", {"interval_share": 0.05}),
    "iome + profile 5%": ("iome", {"interval_share": 0.05}),
    "iome + profile 2%": ("iome", {"interval_share": 0.02}),
    "iome (quantized) + profile 5%": ("iome", {"quantized": True, "interval_share": 0.05}),
    "plan + profile 1%": ("plan", {"interval_share": 0.01}),
    "plan + profile 5%": ("plan", {"interval_share": 0.05}),
    "plan (binary-search) + profile 5%": ("plan", {"quantile": "binary-search",
                                                   "interval_share": 0.05}),
    "plan-noscale + profile 5%": ("plan-noscale", {"interval_share": 0.05}),
    "coinpress": ("coinpress", {"radius": 5.0}),
    "coinpress + profile 5%": ("coinpress", {"radius": 5.0, "interval_share": 0.05}),
    "coinpress + profile 1%": ("coinpress", {"radius": 5.0, "interval_share": 0.01}),
    "coinpress (no share)": ("coinpress", {"radius": 5.0, "interval_share": 0}),
    "auto": ("auto", {}),  # its candidates that clip get a 1% profile by default
    "auto (no share)": ("auto", {"interval_share": 0}),
    "auto + profile 5%": ("auto", {"interval_share": 0.05}),
    "iome + profile 1%": ("iome", {"interval_share": 0.01}),
    "cm + profile 1%": ("cm", {"interval_share": 0.01}),
    # The trade-off: a larger share narrows the bias part (its count noise ~ 1 / sqrt(share))
    # and widens the noise part (~ 1 / sqrt(1 - share)).
    "cm + profile 25%": ("cm", {"interval_share": 0.25}),
    "cm + profile 50%": ("cm", {"interval_share": 0.5}),
    "iome + profile 25%": ("iome", {"interval_share": 0.25}),
    "iome + profile 50%": ("iome", {"interval_share": 0.5}),
    "plan + profile 25%": ("plan", {"interval_share": 0.25}),
    "plan + profile 50%": ("plan", {"interval_share": 0.5}),
}


def measure(x: np.ndarray, method: str, options: dict, releases: int,
            box: tuple[float, float] = BOX, rho: float = RHO) -> str:
    truth = np.clip(x, *box).mean(axis=0)
    widths, errors, covered = [], [], 0
    boxed = False
    for seed in range(releases):
        try:
            result = dpmean.mean(x, rho=rho, method=method, bounds=box, random_state=seed,
                                 **options)
        except dpmean.DPMeanError as error:  # a method this version does not offer
            return f"n/a ({error})"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lo, hi = result.confidence_interval(LEVEL)
        boxed |= any(issubclass(w.category, dpmean.BoxIntervalWarning) for w in caught)
        widths.append(hi - lo)
        errors.append(result.mean - truth)
        covered += int(np.sum((lo <= truth) & (truth <= hi)))
    width = float(np.mean(widths))
    rmse = float(np.sqrt(np.mean(np.square(errors))))
    coverage = covered / (releases * x.shape[1])
    note = " (box)" if boxed else ""
    return f"{width:.4g} | {rmse:.4g} | {width / rmse:.1f}{note} | {coverage:.3f}"


MNIST_CASES = ("gaussian", "cm (no share)", "cm", "cm + profile 5%", "cm-fixed (no share)",
               "cm-fixed", "iome (no share)", "iome", "iome + profile 5%",
               "plan (exponential)", "plan (binary-search, no share)", "plan (binary-search)",
               "plan + profile 5%", "auto", "auto + profile 5%", "cm (secure noise)",
               "iome (secure noise)", "plan (secure noise)")


def mnist(releases: int) -> None:
    """The same table on the bundled MNIST (70,000 x 784, box [0, 255], rho = 0.5)."""
    from pathlib import Path

    with np.load(Path(__file__).resolve().parents[1] / "data" / "mnist-70k.npz") as archive:
        x = archive["images"].reshape(len(archive["images"]), -1)
    print(f"MNIST n = {x.shape[0]}, d = {x.shape[1]}, rho = 0.5, box (0, 255), level {LEVEL}, "
          f"{releases} releases")
    print("| estimator | mean width | RMSE | width / RMSE | coverage |")
    print("|---|---|---|---|---|")
    for name in MNIST_CASES:
        method, options = CASES[name]
        print(f"| {name} | {measure(x, method, options, releases, (0.0, 255.0), 0.5)} |",
              flush=True)


def main() -> None:
    from dpmean.estimators import clipped

    for flag, name in (("--residual-share=", "RESIDUAL_SHARE"),
                       ("--residual-reach=", "RESIDUAL_REACH")):
        for arg in [a for a in sys.argv if a.startswith(flag)]:
            sys.argv.remove(arg)
            setattr(clipped, name, float(arg[len(flag):]))  # read when each release plans
    if len(sys.argv) > 1 and sys.argv[1] == "mnist":
        mnist(int(sys.argv[2]) if len(sys.argv) > 2 else 10)
        return
    releases = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    d = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    x = np.random.default_rng(0).normal(0.5, 1.0, size=(n, d))
    print(f"n = {n}, d = {d}, rho = {RHO}, box {BOX}, level {LEVEL}, {releases} releases")
    print("| estimator | mean width | RMSE | width / RMSE | coverage |")
    print("|---|---|---|---|---|")
    chosen = sys.argv[4].split(";") if len(sys.argv) > 4 else list(CASES)
    for name in chosen:
        method, options = CASES[name]
        print(f"| {name} | {measure(x, method, options, releases)} |", flush=True)


if __name__ == "__main__":
    main()
