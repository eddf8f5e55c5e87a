"""90% interval coverage at loose boxes with the octave search (threshold_right in intervals).
  PYTHONPATH=src /work/main/.venv/bin/python scripts/octave_search/coverage_loose.py"""
import warnings

import numpy as np

import dpmean

warnings.simplefilter("ignore")
for mu, B in ((0.0, 1e8), (5.0, 1e4), (1000.0, 1e8)):
    x = np.random.default_rng(3).normal(mu, 1.0, (2000, 3))
    true = np.clip(x, -B, B).mean(0)
    for m in ("cm", "iome", "auto"):
        hits, widths, errs = [], [], []
        for s in range(200):
            r = dpmean.mean(x, method=m, rho=1.0, bounds=(-B, B), random_state=s)
            lo, hi = r.confidence_interval(0.9)
            hits.append(np.mean((lo <= true) & (true <= hi)))
            widths.append(np.mean(hi - lo))
            errs.append(np.linalg.norm(r.mean - true))
        print(f"N({mu:g},1) box +-{B:g} {m}: coverage {np.mean(hits):.3f} mean width "
              f"{np.mean(widths):.3g} mean l2 err {np.mean(errs):.3g}", flush=True)
