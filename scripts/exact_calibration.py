"""The rho an (epsilon, delta) request grants PLAN and auto when calibrated to its plan by privacy
loss distributions (``MeanEstimator.granted``), against the generic CKS conversion.

Usage: python scripts/exact_calibration.py [n]
"""

import sys

from dpmean.accounting import approx_dp_to_zcdp
from dpmean.api import build_estimator
from dpmean.pld import gaussian_rho_for_approx_dp


def main(n: int = 4000) -> None:
    print(f"n = {n}, box +-20; rho granted (noise std relative to CKS's)")
    print("epsilon  delta   method        d     CKS      exact    all-Gaussian  std ratio")
    for epsilon in (0.5, 1.0, 4.0):
        delta = 1e-6
        cks = approx_dp_to_zcdp(epsilon, delta)
        gaussian = gaussian_rho_for_approx_dp(epsilon, delta)
        for method in ("plan", "plan-noscale", "auto"):
            for d in (16, 512, 2048):
                estimator = build_estimator(
                    method, None, epsilon=epsilon, delta=delta, bounds=(-20.0, 20.0)
                )
                rho = estimator.granted(n, d).budget.rho
                print(
                    f"{epsilon:<8g} {delta:<7g} {method:<13} {d:<5} {cks:<8.5f} {rho:<8.5f} "
                    f"{gaussian:<13.5f} {(cks / rho) ** 0.5:.3f}"
                )


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
