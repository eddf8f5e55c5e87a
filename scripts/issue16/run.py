import json
import math
import sys
import time
import warnings

import numpy as np

import dpmean
from dpmean.experiments.data import zipf_variances

warnings.simplefilter("ignore")

SETS = {
    "A2048r1": dict(n=4000, d=2048, mean=0.0, alpha=None, rho=1.0),
    "A2048r16": dict(n=4000, d=2048, mean=0.0, alpha=None, rho=1 / 16),
    "A256r8": dict(n=4000, d=256, mean=0.0, alpha=None, rho=1 / 8),
    "A2048r2": dict(n=4000, d=2048, mean=0.0, alpha=None, rho=0.5),
    "A1024r8": dict(n=4000, d=1024, mean=0.0, alpha=None, rho=1 / 8),
    "A2048r4": dict(n=4000, d=2048, mean=0.0, alpha=None, rho=1 / 4),
    "A128r2": dict(n=4000, d=128, mean=0.0, alpha=None, rho=0.5),
    "A1024r1": dict(n=4000, d=1024, mean=0.0, alpha=None, rho=1.0),
    "A16r8": dict(n=4000, d=16, mean=0.0, alpha=None, rho=1 / 8),
    "B2r16": dict(n=10000, d=512, mean=10.0, alpha=2.0, rho=1 / 16),
    "B0r16": dict(n=10000, d=512, mean=10.0, alpha=0.0, rho=1 / 16),
    "B1r1": dict(n=10000, d=512, mean=10.0, alpha=1.0, rho=1.0),
    "B1r16": dict(n=10000, d=512, mean=10.0, alpha=1.0, rho=1 / 16),
    "B1r8": dict(n=10000, d=512, mean=10.0, alpha=1.0, rho=1 / 8),
    "B1r4": dict(n=10000, d=512, mean=10.0, alpha=1.0, rho=1 / 4),
    "B05r4": dict(n=10000, d=512, mean=10.0, alpha=0.5, rho=1 / 4),
    "B05r1": dict(n=10000, d=512, mean=10.0, alpha=0.5, rho=1.0),
    "C2048r1": dict(n=10000, d=2048, mean=10.0, alpha=2.0, rho=1.0),
    "C2048r8": dict(n=10000, d=2048, mean=10.0, alpha=2.0, rho=1 / 8),
    "C2048r16": dict(n=10000, d=2048, mean=10.0, alpha=2.0, rho=1 / 16),
    "C256r1": dict(n=10000, d=256, mean=10.0, alpha=2.0, rho=1.0),
    "C16r8": dict(n=10000, d=16, mean=10.0, alpha=2.0, rho=1 / 8),
}
AUTH = {
    "A2048r2": 1.5784,
    "A1024r8": 1.6265,
    "A2048r4": 2.5856,
    "A128r2": 0.2041,
    "A1024r1": 0.7177,
    "A2048r1": 1.2312,
    "A2048r16": None,
    "A256r8": 0.4494,
    "A16r8": 0.0675,
    "B2r16": 7.9029,
    "B0r16": 0.4729,
    "B1r1": 0.6136,
    "B1r16": 1.058,
    "B1r8": 0.8529,
    "B1r4": 0.7332,
    "B05r4": 0.422,
    "B05r1": 0.3407,
    "C2048r1": 27.1476,
    "C2048r8": 74.1788,
    "C2048r16": None,
    "C256r1": 2.9991,
    "C16r8": 0.1956,
}


def box(s):
    d, a = s["d"], s["alpha"]
    half = 25 * math.sqrt(d) if a is None else 50 * d ** (1 + a / 4)
    if a is None and d == 16:
        half = 100.0
    return (-half, half)


def data(s, rng):
    d = s["d"]
    sd = np.ones(d) if s["alpha"] is None else np.sqrt(zipf_variances(d, s["alpha"]))
    return s["mean"] + rng.standard_normal((s["n"], d)) * sd


def main():
    method = sys.argv[1]
    names = sys.argv[2].split(",")
    runs = int(sys.argv[3])
    opts = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    for name in names:
        s = SETS[name]
        errs = []
        emp = []
        t = time.time()
        for r in range(runs):
            rng = np.random.default_rng(1000 + r)
            x = data(s, rng)
            res = dpmean.mean(x, rho=s["rho"], method=method, bounds=box(s), random_state=r, **opts)
            errs.append(float(np.linalg.norm(res.mean - s["mean"])))
            emp.append(float(np.linalg.norm(x.mean(0) - s["mean"])))
        e = np.array(errs)
        a = AUTH[name]
        print(
            f"{name:10s} {method:12s} mean {e.mean():9.4g} med {np.median(e):9.4g} "
            f"m/med {e.mean() / np.median(e):5.2f} emp {np.mean(emp):.4g} auth {a} "
            f"ratio {e.mean() / a if a else float('nan'):.2f} ({time.time() - t:.0f}s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
