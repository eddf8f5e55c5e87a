"""IOME's local-model experiments (section 6.2, Figures 10-12), shared by the reproduction specs
and benchmarks/bench_protocols.py: N(mu, I_d) with ||mu|| = 0.9 R, n = 100,000, delta = 1e-9,
the public box [-(R + 10), R + 10]^d, the local protocols against the shuffle and central IOME.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .data import Dataset, gaussian

N = 100_000
DELTA = 1e-9  # the paper's delta for every protocol (section 6.2)
# (method, curve label): the local IOME and GRS's coordinate-wise KnownVar / UnkVar (the paper's
# comparison), plus the shuffle and central IOME as reference curves (ours).
METHODS = (("iome-local", "IOME local"), ("grs-knownvar", "GRS KnownVar"),
           ("grs-unkvar", "GRS UnkVar"), ("iome-shuffle", "IOME shuffle"),
           ("iome", "IOME central"))
# The swept variable and its values per figure (eps = 1, d = 8, R = 20 sqrt(d) elsewhere).
SWEEPS = {10: ("d", (2, 8, 32, 128)), 11: ("epsilon", (0.5, 1.0, 2.0, 4.0)),
          12: ("R_per_sqrt_d", (5, 20, 100, 500))}


def settings(figure: int, n: int = N) -> list[dict[str, Any]]:
    """Every point of Figure ``figure`` (10: vary d, 11: vary epsilon, 12: vary R)."""
    key, values = SWEEPS[figure]
    base = {"n": n, "d": 8, "epsilon": 1.0, "delta": DELTA, "R_per_sqrt_d": 20}
    return [{**base, key: v} for v in values]


def radius(setting: dict[str, Any]) -> float:
    return setting["R_per_sqrt_d"] * math.sqrt(setting["d"])


def box(setting: dict[str, Any]) -> tuple[float, float]:
    """The public box: the prior ball's coordinate range widened by 10 (about 10 sigma)."""
    r = radius(setting)
    return (-r - 10.0, r + 10.0)


def data(setting: dict[str, Any], rng: np.random.Generator) -> Dataset:
    """n rows of N(mu, I_d), mu of norm 0.9 R in a uniformly random direction (far from the
    centre of the prior ball, our choice); judged against mu."""
    d = setting["d"]
    mu = rng.normal(size=d)
    mu *= 0.9 * radius(setting) / np.linalg.norm(mu)
    return gaussian(setting["n"], mu, rng)
