import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
warnings.simplefilter("ignore")

from run import SETS, box, data  # noqa: E402 (beside this file, on the path above)

import dpmean  # noqa: E402
from dpmean.experiments.data import mnist  # noqa: E402

methods = os.environ.get("METHODS", "auto,plan,iome,cm,gaussian").split(",")
runs = int(sys.argv[1])
which = sys.argv[2].split(",")


def cases():
    for name in which:
        if name in SETS:
            s = SETS[name]
            yield (
                name,
                s["rho"],
                box(s),
                (
                    lambda r, s=s: (lambda x: (x, np.full(s["d"], s["mean"])))(
                        data(s, np.random.default_rng(1000 + r))
                    )
                ),
            )
        elif name in ("kosarak", "retail"):
            from dpmean.experiments.data import basket_data

            fname = {"kosarak": "kosarak-first-36682.dat", "retail": "retail.dat"}[name]
            ds = basket_data(fname)
            yield name, 0.5, (0.0, 1.0), (lambda r, ds=ds: (ds.x, ds.truth))
        elif name.startswith("mnist"):
            imgs, _ = mnist()
            rho = 0.5
            yield name, rho, (0.0, 255.0), (lambda r, imgs=imgs: (imgs, imgs.mean(0)))
        elif name.startswith("iso"):  # n=4000 isotropic near origin, CM's home
            yield (
                name,
                0.5,
                (-50 * 8, 50 * 8),
                (
                    lambda r: (lambda x: (x, np.zeros(64)))(
                        np.random.default_rng(r).normal(0, 1, (4000, 64))
                    )
                ),
            )
        elif name.startswith("small"):  # n=569, d=30 epsilon=1 (breast cancer like) mixed scale
            sc = np.geomspace(0.1, 100, 30)
            yield (
                name,
                None,
                (list(-5 * sc), list(15 * sc)),
                (
                    lambda r, sc=sc: (lambda x: (x, sc * 5))(
                        sc * 5 + sc * np.random.default_rng(r).normal(0, 1, (569, 30))
                    )
                ),
            )


for name, rho, bnds, gen in cases():
    out = {}
    chosen = []
    for m in methods:
        errs = []
        for r in range(runs):
            x, truth = gen(r)
            kw = dict(rho=rho) if rho else dict(epsilon=1.0, delta=1e-6)
            if name in ("kosarak", "retail") and m in ("cm", "gaussian", "iome"):
                kw = dict(kw, engine="sparse")
            res = dpmean.mean(x, method=m, bounds=bnds, random_state=r, **kw)
            errs.append(
                0.5 * np.abs(res.mean - truth).sum()
                if name in ("kosarak", "retail")
                else np.linalg.norm(res.mean - truth)
            )
            if m == "auto":
                chosen.append(res.diagnostics.get("chosen"))
        out[m] = np.mean(errs)
    best = min(v for k, v in out.items() if k != "auto")
    metric = "TVD" if name in ("kosarak", "retail") else "l2"
    print(
        f"{name:10s} "
        + " ".join(f"{k} {v:.4g}" for k, v in out.items())
        + f" | auto/best {out['auto'] / best:.3f} chose {','.join(sorted(set(chosen)))}",
        flush=True,
    )
