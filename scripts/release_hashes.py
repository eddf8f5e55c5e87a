"""Fingerprints of releases, to check that a change of speed changed no release: the hash of
the released mean of plan, trimmed, iome, auto, cm and plan-noscale on a 6,000-row MNIST slice,
a Gaussian C slice (n = 4000, d = 512) and a mixed table, for one seed each.

    PYTHONPATH=src python scripts/release_hashes.py > after.txt
    PYTHONPATH=/path/to/old/checkout/src python scripts/release_hashes.py > before.txt
    diff before.txt after.txt

``--engines`` adds the chunked engine.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np

import dpmean

DATA = Path(__file__).resolve().parents[1] / "data" / "mnist-70k.npz"
METHODS = ("plan", "trimmed", "iome", "auto", "cm", "plan-noscale")


def datasets() -> dict[str, tuple[np.ndarray, tuple]]:
    rng = np.random.default_rng(5)
    with np.load(DATA) as archive:
        mnist = archive["images"][:6000]
    n, d = 4000, 512
    gaussian_c = rng.normal(10.0, d / np.arange(1, d + 1), size=(n, d))
    mixed = np.column_stack([rng.normal(0, 1, (3000, 20)), rng.lognormal(3, 1, (3000, 10)),
                             rng.integers(0, 2, (3000, 5))])
    mixed_box = (np.r_[np.full(20, -10.0), np.zeros(15)],
                 np.r_[np.full(20, 10.0), np.full(10, 1e3), np.ones(5)])
    return {"mnist": (mnist, (0.0, 255.0)),
            "gaussian-C": (gaussian_c, (10.0 - 50.0 * d**1.5, 10.0 + 50.0 * d**1.5)),
            "mixed": (mixed, mixed_box)}


def main() -> None:
    engines = ["memory", "chunked"] if "--engines" in sys.argv[1:] else ["memory"]
    for name, (x, bounds) in datasets().items():
        for method in METHODS:
            for engine in engines:
                release = dpmean.mean(x, bounds=bounds, rho=0.5, method=method,
                                      random_state=3, engine=engine)
                digest = hashlib.sha1(np.asarray(release.mean).tobytes()).hexdigest()[:12]
                print(name, method, engine, digest)


if __name__ == "__main__":
    main()
