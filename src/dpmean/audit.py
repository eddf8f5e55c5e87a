"""Statistical privacy auditing: lower bounds on epsilon from samples of a mechanism's output on
two neighbouring datasets (threshold events with Clopper-Pearson bounds, as in StatDP and in
Jagielski-Ullman-Oprea 2020). A tool for tests and researchers; it never touches a release.

If M is (eps, delta)-DP then P[M(D) in E] <= e^eps P[M(D') in E] + delta for every event E. For
events E_t = {x >= t} and {x <= t} on a 1-D statistic of the output, we bound P[M(D) in E] from
below and P[M(D') in E] from above with exact binomial confidence bounds; any event whose bounds
violate the inequality proves, at the stated confidence, that M is not (eps, delta)-DP.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import beta as beta_distribution


def _clopper_pearson(successes: np.ndarray, trials: int, alpha: float
                     ) -> tuple[np.ndarray, np.ndarray]:
    """One-sided (1 - alpha) lower and upper bounds on binomial probabilities."""
    lower = np.where(successes > 0,
                     beta_distribution.ppf(alpha, successes, trials - successes + 1), 0.0)
    upper = np.where(successes < trials,
                     beta_distribution.ppf(1 - alpha, successes + 1, trials - successes), 1.0)
    return lower, upper


def epsilon_lower_bound(outputs: np.ndarray, neighbour_outputs: np.ndarray, delta: float, *,
                        confidence: float = 0.999, thresholds: int = 64) -> float:
    """The largest epsilon the samples prove to be violated at ``delta`` (0 when none is).

    ``outputs`` and ``neighbour_outputs`` are 1-D samples of a statistic of M(D) and M(D'), the
    same number of each. Events are {x >= t} and {x <= t} for ``thresholds`` quantiles t of the
    pooled samples, in both directions (D vs D' and D' vs D); the confidence holds for all
    events at once (Bonferroni).
    """
    a = np.asarray(outputs, dtype=np.float64)
    b = np.asarray(neighbour_outputs, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape or len(a) == 0:
        raise ValueError("give two 1-D samples of the same, non-zero size")
    cuts = np.unique(np.quantile(np.concatenate([a, b]), np.linspace(0, 1, thresholds + 2)))
    sorted_a, sorted_b = np.sort(a), np.sort(b)
    n = len(a)
    # Counts of {x >= t} and {x <= t} for every cut, in each sample.
    events = []
    for ordered in (sorted_a, sorted_b):
        at_least = n - np.searchsorted(ordered, cuts, side="left")
        at_most = np.searchsorted(ordered, cuts, side="right")
        events.append(np.concatenate([at_least, at_most]))
    count_a, count_b = events
    # Two directions x 2 kinds of event x cuts, two bounds each.
    alpha = (1 - confidence) / (4 * len(count_a))
    low_a, high_a = _clopper_pearson(count_a, n, alpha)
    low_b, high_b = _clopper_pearson(count_b, n, alpha)
    best = 0.0
    for low, high in ((low_a, high_b), (low_b, high_a)):
        useful = (low - delta > 0) & (high > 0)
        if useful.any():
            best = max(best, float(np.max(np.log((low[useful] - delta) / high[useful]))))
    return best
