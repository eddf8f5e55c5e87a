"""PLAN Appendix D.2 / Table 2: relative error of the private pair-based standard deviation,
shared by the ``plan-table2`` spec and benchmarks/bench_plan.py --accuracy. A NON-PRIVATE
evaluation (it knows sigma).

Setting (the authors' notebook): n = 10,000 rows of N(10, sigma^2), the public box
10 +- 5 sigma, budget rho / 16 for the estimate (half of the rho / 8 PLAN gives its
preprocessing).
"""

from __future__ import annotations

import numpy as np

from ..accounting import PrivacyLedger
from ..engines import InMemoryEngine
from ..estimators.variance import pair_std

N = 10_000
MEAN = 10.0
# Table 2 of the paper (mean relative error), keyed by (rho, sigma): (k = 1, k = 4).
TABLE2 = {(0.001, 0.001): (0.027, 0.017), (0.001, 1.0): (0.025, 0.012),
          (0.01, 0.001): (0.011, 0.007), (0.01, 1.0): (0.020, 0.006)}
# (group size k, pairings): the paper's k = 1 and k = 4 with one pairing, and the notebook's
# "fill" (2k pairings), charged at its true sensitivity 2k.
CELLS = ((1, 1), (4, 1), (1, 2), (4, 8))


def cell_label(k: int, pairings: int) -> str:
    return f"k={k} pairings={pairings}"


def relative_errors(rho: float, sigma: float, columns: int,
                    rng: np.random.Generator) -> dict[tuple[int, int], np.ndarray]:
    """|sigma_hat - sigma| / sigma of ``columns`` independent datasets (one per column, each
    estimated at rho / 16) for every cell of CELLS."""
    x = rng.normal(MEAN, sigma, size=(N, columns))
    engine = InMemoryEngine(x, np.full(columns, MEAN - 5 * sigma),
                            np.full(columns, MEAN + 5 * sigma))
    # pair_std spends rho / columns per column: rho / 16 each
    total = rho / 16 * columns
    errors = {}
    for k, pairings in CELLS:
        ledger = PrivacyLedger.for_stages({"variance": total})
        estimate = pair_std(engine, rho=total, ledger=ledger, rng=rng, group_size=k,
                            pairings=pairings)
        errors[k, pairings] = np.abs(estimate - sigma) / sigma
    return errors
