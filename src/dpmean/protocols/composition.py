"""Privacy arithmetic of the local and shuffle protocols: advanced composition (IOME Lemma 2.2)
and amplification by shuffling (Feldman-McMillan-Talwar 2021), with their inverses.

All functions are pure and public: they map privacy parameters to privacy parameters.
"""

from __future__ import annotations

import math

from scipy.optimize import brentq

from ..errors import InvalidParameterError


def advanced_composition(epsilon: float, k: int, delta_slack: float) -> float:
    """Total epsilon of k (epsilon, delta)-DP steps: the min of basic composition, k epsilon, and
    advanced composition, sqrt(2 k ln(1/delta')) epsilon + k epsilon (e^epsilon - 1) (IOME
    Lemma 2.2); the total delta is k delta + delta' (``delta_slack`` = delta')."""
    advanced = (math.sqrt(2.0 * k * math.log(1.0 / delta_slack)) * epsilon
                + k * epsilon * math.expm1(epsilon))
    return min(k * epsilon, advanced)


def split_budget(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """The per-step (epsilon', delta') whose k-fold composition is (epsilon, delta)-DP.

    Our split of delta (the paper leaves it open): half to the slack delta' of advanced
    composition, half shared by the k steps. epsilon' is the largest value whose composition
    (``advanced_composition``) stays within ``epsilon``.
    """
    if k == 1:
        return epsilon, delta
    slack = delta / 2.0
    step_delta = delta / (2.0 * k)
    top = epsilon  # the composition of k >= 2 steps of epsilon exceeds epsilon
    step = brentq(lambda e: advanced_composition(e, k, slack) - epsilon, 0.0, top, xtol=1e-14)
    return step * (1.0 - 1e-12), step_delta


def shuffle_amplified_epsilon(local_epsilon: float, n: int, delta: float) -> float:
    """The central epsilon of n shuffled local_epsilon-LDP reports at ``delta``.

    Feldman, McMillan, Talwar (FOCS 2021), "Hiding among the clones", Theorem 3.1 (formula as
    recalled from the paper; not checked against its text here): for eps0 <=
    ln(n / (16 ln(2/delta))), eps <= ln(1 + (e^eps0 - 1)/(e^eps0 + 1) (8 sqrt(e^eps0 ln(4/delta))
    / sqrt(n) + 8 e^eps0 / n)). Above that range we return eps0 (no amplification claimed).
    """
    if local_epsilon > math.log(n / (16.0 * math.log(2.0 / delta))):
        return local_epsilon
    e0 = math.exp(local_epsilon)
    gain = (e0 - 1.0) / (e0 + 1.0) * (8.0 * math.sqrt(e0 * math.log(4.0 / delta) / n)
                                      + 8.0 * e0 / n)
    return min(local_epsilon, math.log1p(gain))


def local_epsilon_for_shuffle(epsilon: float, delta: float, n: int) -> float:
    """The largest eps0 whose n shuffled eps0-LDP reports are (epsilon, delta)-DP
    (``shuffle_amplified_epsilon`` inverted; at least ``epsilon`` itself, which needs no
    amplification)."""
    if epsilon <= 0 or not 0 < delta < 1:
        raise InvalidParameterError(f"need epsilon > 0 and 0 < delta < 1, got {epsilon}, {delta}")
    cap = math.log(n / (16.0 * math.log(2.0 / delta))) if n > 16.0 * math.log(2.0 / delta) else 0
    if cap <= epsilon or shuffle_amplified_epsilon(cap, n, delta) <= epsilon:
        return max(epsilon, cap)
    found = brentq(lambda e: shuffle_amplified_epsilon(e, n, delta) - epsilon, epsilon, cap,
                   xtol=1e-12)
    return found * (1.0 - 1e-9)
