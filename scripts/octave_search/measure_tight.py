"""Tight-box regression check (grid 2): MNIST and PLAN-paper Gaussians, mean l2 error.

  cd REPO (the checkout)
  PYTHONPATH=OLD/src /work/main/.venv/bin/python scripts/octave_search/measure_tight.py old
  PYTHONPATH=src /work/main/.venv/bin/python scripts/octave_search/measure_tight.py new
  /work/main/.venv/bin/python scripts/octave_search/measure_tight.py compare
"""
import json
import sys
import time
import warnings

import numpy as np

label = sys.argv[1]
if label == "compare":
    old = json.load(open("scripts/octave_search/results/tight_old.json"))
    new = json.load(open("scripts/octave_search/results/tight_new.json"))
    print("| case | method | releases | old | new | new/old | paired ratio (mean of per-seed "
          "ratios) |")
    print("|---|---|---|---|---|---|---|")
    for k in old:
        o, w = np.array(old[k]), np.array(new[k])
        case, m = k.rsplit("|", 1)
        print(f"| {case} | {m} | {len(o)} | {o.mean():.4g} | {w.mean():.4g} | "
              f"{w.mean() / o.mean():.3f} | {np.mean(w / o):.3f} |")
    sys.exit()

import dpmean  # noqa: E402 - after "compare", which needs no dpmean
from dpmean.experiments.data import zipf_variances  # noqa: E402

warnings.simplefilter("ignore")
out = {}
t0 = time.time()
mnist = np.load("/work/main/data/mnist-70k.npz")["images"].reshape(70000, -1).astype(np.float64)
cases = []
for rho in (0.5, 0.02):
    cases.append((f"MNIST n=70000 d=784 box (0,255) rho={rho}", mnist, (0.0, 255.0), rho, 10))
rng = np.random.default_rng(7)
for alpha in (0.0, 2.0):
    d = 512
    x = 10.0 + rng.standard_normal((10000, d)) * np.sqrt(zipf_variances(d, alpha))
    half = 50 * d ** (1 + alpha / 4)
    for rho in (0.0625, 0.5):
        cases.append((f"PLAN Gaussian B alpha={alpha:g} n=1e4 d=512 mean 10 box +-{half:.0f} "
                       f"rho={rho}",
                      x, (-half, half), rho, 10))
d = 512
x = rng.standard_normal((4000, d))
for rho in (0.125, 0.5):
    cases.append((f"PLAN Gaussian A n=4000 d=512 N(0,I) box +-{25 * np.sqrt(d):.0f} rho={rho}",
                  x, (-25 * np.sqrt(d), 25 * np.sqrt(d)), rho, 10))
    cases.append((f"N(0,I) n=1e4 d=512 box +-50 rho={rho}", rng.standard_normal((10000, d)),
                  (-50.0, 50.0), rho, 10))
for name, x, bounds, rho, releases in cases:
    true = np.clip(x, *bounds).mean(0)
    for m in ("cm", "iome", "auto", "plan"):
        out[f"{name}|{m}"] = [float(np.linalg.norm(
            dpmean.mean(x, method=m, rho=rho, bounds=bounds, random_state=s).mean - true))
            for s in range(releases)]
    print(f"{name} {time.time() - t0:.0f}s", flush=True)
json.dump(out, open(f"scripts/octave_search/results/tight_{label}.json", "w"))
print(dpmean.__file__)
