"""Grid 1 of the log-search study: mean l2 error over 20 releases as the box widens.

Run once per source tree (the label names the output):
  cd REPO (the checkout)
  PYTHONPATH=OLD/src /work/main/.venv/bin/python scripts/octave_search/measure_box.py old
  PYTHONPATH=src /work/main/.venv/bin/python scripts/octave_search/measure_box.py new
(OLD/src = `git archive main src`, the code before the change.)
Then scripts/octave_search/compare.py old new.
"""
import json
import sys
import time
import warnings

import numpy as np

import dpmean

warnings.simplefilter("ignore")
label = sys.argv[1]
methods = sys.argv[2].split(",") if len(sys.argv) > 2 else ["cm", "iome", "auto", "plan"]
extra = {"iome-when-short": ("iome", {"narrow_medians": "when-short"})}
RELEASES = 20
out = {}
t0 = time.time()
for mu in (0.0, 5.0):
    for n in (500, 20000):
        for d in (3, 64):
            x = np.random.default_rng(1000 + 10 * n + d).normal(mu, 1.0, (n, d))
            for B in (5.0, 50.0, 1e4, 1e8, 1e12):
                true = np.clip(x, -B, B).mean(0)
                for rho in (0.1, 1.0, 1e6):
                    for m in methods:
                        meth, kw = extra.get(m, (m, {}))
                        errs = []
                        for s in range(RELEASES):
                            r = dpmean.mean(x, method=meth, rho=rho, bounds=(-B, B),
                                            random_state=s, **kw)
                            errs.append(float(np.linalg.norm(r.mean - true)))
                        out[f"{mu}|{n}|{d}|{B:g}|{rho:g}|{m}"] = errs
            print(f"mu={mu} n={n} d={d} done {time.time() - t0:.0f}s", flush=True)
json.dump(out, open(f"scripts/octave_search/results/box_{label}.json", "w"))
print(dpmean.__file__)
