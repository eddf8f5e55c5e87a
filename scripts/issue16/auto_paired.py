"""auto against its candidates on fresh datasets, paired by seed (NON-PRIVATE evaluation).

    python scripts/issue16/auto_paired.py CASE RUNS

CASE: GA16 (Appendix G, Gaussian A, d = 16, rho = 1/16), GC32 (Appendix G, Gaussian C, d = 32,
rho = 1/16), EC2048r8 (Appendix E, C', d = 2048, rho = 1/8). Run r draws its dataset from seed
7000 + r and every method's noise from seed r. Prints the mean errors, the best candidate and
auto / best with its delta-method standard error.
"""

import sys
import warnings

import numpy as np

import dpmean
from dpmean.experiments.data import constant_correlation, gaussian, zipf_variances

CASES = {  # n, d, rho, box half-width, candidates
    "GA16": (4000, 16, 1 / 16, 100.0, ("cm", "iome", "plan")),
    "GC32": (10000, 32, 1 / 16, 50 * 32 ** 1.5, ("plan", "iome", "cm")),
    "EC2048r8": (10000, 2048, 1 / 8, 50 * 2048 ** 1.5, ("plan",)),
}


def dataset(case: str, rng: np.random.Generator):
    n, d = CASES[case][:2]
    if case == "GA16":
        return gaussian(n, np.zeros(d), rng)
    if case == "GC32":
        return gaussian(n, np.full(d, 10.0), rng, variances=zipf_variances(d, 2.0))
    return constant_correlation(n, np.full(d, 10.0), zipf_variances(d, 2.0), 0.5, rng)


def main() -> None:
    warnings.simplefilter("ignore")
    case, runs = sys.argv[1], int(sys.argv[2])
    _, _, rho, half, candidates = CASES[case]
    methods = ("auto", *candidates)
    errors = np.empty((runs, len(methods)))
    for r in range(runs):
        data = dataset(case, np.random.default_rng(7000 + r))
        for j, method in enumerate(methods):
            result = dpmean.mean(data.x, rho=rho, method=method, bounds=(-half, half),
                                 random_state=r)
            errors[r, j] = np.linalg.norm(result.mean - data.truth)
    means = errors.mean(axis=0)
    best = 1 + int(np.argmin(means[1:]))
    ratio = means[0] / means[best]
    residual = errors[:, 0] - ratio * errors[:, best]
    se = residual.std(ddof=1) / np.sqrt(runs) / means[best]
    print(case, runs, dict(zip(methods, means.round(5), strict=True)),
          f"best {methods[best]} auto/best {ratio:.4f} se {se:.4f}")


if __name__ == "__main__":
    main()
