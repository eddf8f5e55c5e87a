import sys
import warnings

import numpy as np

import dpmean
from dpmean.experiments.data import mnist_digit

warnings.simplefilter("ignore")

runs = int(sys.argv[1])


def gauss_case(d, rho, n=4000):
    R = 50 * np.sqrt(d)

    def gen(r):
        rng = np.random.default_rng(r)
        mu = rng.standard_normal(d)
        mu *= (R / 2) / np.linalg.norm(mu)
        return mu + rng.standard_normal((n, d)), mu

    return (
        f"fig1/2 d={d} rho={rho}",
        rho,
        "iome-gaussian",
        dict(mean_radius=R, sigma_min=0.1, sigma_max=R / np.sqrt(d)),
        gen,
    )


cases = [
    gauss_case(8, 0.5),
    gauss_case(128, 0.5),
    gauss_case(512, 0.5),
    gauss_case(128, 0.01),
    gauss_case(128, 0.1),
    gauss_case(128, 1.0),
]
ds = mnist_digit(3)
for rho in (0.1, 0.5):
    cases.append(
        (
            f"fig7 MNIST 3 rho={rho}",
            rho,
            "iome",
            dict(bounds=(0.0, 255.0)),
            lambda r: (ds.x, ds.truth),
        )
    )
for name, rho, method, opts, gen in cases:
    res = {}
    for share in ("auto", 0.25):
        errs = []
        for r in range(runs):
            x, truth = gen(r)
            out = dpmean.mean(
                x, rho=rho, method=method, random_state=r, threshold_share=share, **opts
            )
            errs.append(np.linalg.norm(out.mean - truth))
        res[share] = (np.mean(errs), np.median(errs))
    print(
        f"{name:24s} auto {res['auto'][0]:.4g} (med {res['auto'][1]:.4g})  "
        f"paper 0.25 {res[0.25][0]:.4g} (med {res[0.25][1]:.4g})  "
        f"ratio {res['auto'][0] / res[0.25][0]:.3f}",
        flush=True,
    )
