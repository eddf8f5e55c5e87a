"""Privacy arithmetic of the local and shuffle protocols: advanced composition (IOME Lemma 2.2)
and amplification by shuffling (Feldman-McMillan-Talwar 2021, Theorem 3.1 and its numerical
form, section 4 / Appendix E), with their inverses.

All functions are pure and public: they map privacy parameters to privacy parameters.
"""

from __future__ import annotations

import functools
import math
import sys

import numpy as np
from scipy.optimize import brentq
from scipy.stats import binom

from ..errors import InvalidParameterError


def advanced_composition(epsilon: float, k: int, delta_slack: float) -> float:
    """Total epsilon of k (epsilon, delta)-DP steps: the min of basic composition, k epsilon, and
    advanced composition, sqrt(2 k ln(1/delta')) epsilon + k epsilon (e^epsilon - 1) (IOME
    Lemma 2.2); the total delta is k delta + delta' (``delta_slack`` = delta')."""
    if epsilon >= 1.0 or delta_slack <= 0.0:
        # Mathematically equal, not an approximation: at epsilon >= 1, e^epsilon - 1 > 1 makes
        # the advanced bound exceed k epsilon, and at delta' = 0 (a tiny delta halved to
        # underflow) it is infinite, so the min is basic composition. Its terms overflowed
        # past epsilon = 709 (a huge budget) and divided by zero at delta' = 0.
        return k * epsilon
    advanced = (math.sqrt(2.0 * k * math.log(1.0 / delta_slack)) * epsilon
                + k * epsilon * math.expm1(epsilon))
    return min(k * epsilon, advanced)


# The smallest per-step delta ``split_budget`` hands out: float64's smallest normal number.
# Below it a share delta / (2 k) loses precision and then underflows to 0, which no step that
# needs delta > 0 (a Gaussian answer, IKOS summation) can use.
SMALLEST_STEP_DELTA = sys.float_info.min


def split_budget(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """The per-step (epsilon', delta') whose k-fold composition is (epsilon, delta)-DP.

    Our split of delta (the paper leaves it open): half to the slack delta' of advanced
    composition, half shared by the k steps. epsilon' is the largest value whose composition
    (``advanced_composition``) stays within ``epsilon``.
    """
    step_delta = delta if k == 1 else delta / (2.0 * k)
    if delta > 0 and step_delta < SMALLEST_STEP_DELTA:
        # delta = 5e-324 halved to 0 divided by zero in ``advanced_composition``; a subnormal
        # delta of one step made 1 / delta infinite (IKOS's parts, an OverflowError).
        raise InvalidParameterError(
            f"delta={delta:.3g} is too small to split over {k} step(s) in floating point (each "
            f"step's share, delta / (2 k) or delta itself for one step, falls below "
            f"{SMALLEST_STEP_DELTA:.3g}); use delta >= "
            f"{(1.0 if k == 1 else 2.0 * k) * SMALLEST_STEP_DELTA:.3g}")
    if k == 1:
        return epsilon, delta
    slack = delta / 2.0

    def excess(e: float) -> float:
        return advanced_composition(e, k, slack) - epsilon

    # The root to a relative tolerance: an absolute one (1e-14, before) let the steps compose
    # to more than epsilon wherever epsilon / k is near it (50% more at epsilon = 1e-14, k = 3;
    # 4.7% at 1e-12, k = 1024) and gave 0 below it. The composition of k >= 2 steps of epsilon
    # exceeds epsilon, so [0, epsilon] brackets the root.
    xtol = epsilon / k * 2.0**-50
    try:
        if not xtol > 0.0:
            raise ValueError("no tolerance")
        step = brentq(excess, 0.0, epsilon, xtol=xtol, rtol=4.0 * 2.0**-52)
    except (RuntimeError, ValueError):
        # Near float64's smallest numbers the root cannot be found (scipy's error reached the
        # user at epsilon = 1e-300, k = 3: a review); no such budget buys a usable release.
        raise InvalidParameterError(
            f"epsilon={epsilon:.3g} is too small to split over {k} steps in floating point; "
            f"use a larger epsilon") from None
    step *= 1.0 - 1e-12
    # The guarantee must hold as computed, not only up to the root's tolerance: step down.
    while step > 0.0 and excess(step) > 0.0:
        step = math.nextafter(step, 0.0)
    return step, step_delta


# Amplification by shuffling (Feldman, McMillan, Talwar, FOCS 2021, "Hiding among the clones",
# arXiv 2012.12803). Replace-one neighbours, n public, every user runs an eps0-DP local
# randomiser (adaptively chosen ones allowed) and the analyser sees the shuffled messages.
#
# The clone reduction (section 3): for neighbours differing in user 1's value, the shuffled
# output is a post-processing of one draw from P or from Q, where C ~ Bin(n - 1, e^-eps0) counts
# the other users whose report is a "clone" of user 1's, A ~ Bin(C, 1/2) how many clones copy
# x_1^0, Delta ~ Bern(e^eps0 / (e^eps0 + 1)), P = (A + Delta, C - A + 1 - Delta) and
# Q = (A + 1 - Delta, C - A + Delta). So if P and Q are (eps, delta)-indistinguishable, the
# shuffled protocol is (eps, delta)-DP; this holds for every eps0, n and delta (no range
# condition). Theorem 3.1's closed form bounds that pair analytically; the numerical method of
# the paper (Appendix E) computes the hockey-stick divergence of the pair instead.

# Bisection steps for epsilon in [0, eps0]: the answer is at most eps0 * 2^-_EPS_STEPS above the
# exact smallest epsilon of the pair.
_EPS_STEPS = 40
# Slack on a computed delta for floating-point rounding (the sums below lose about 1e-17).
_DELTA_SLACK_ABS = 1e-15
_DELTA_SLACK_REL = 1e-9
# The clone count C outside the central window [lo, hi] has probability at most this fraction
# of the target delta, and is charged in full (as if P and Q were disjoint there).
_TAIL_FRACTION = 1e-4


# The largest local epsilon the amplification bounds are computed at: ``clone_pair_delta``
# takes e^(epsilon + eps0) with epsilon < eps0, finite for eps0 <= 354 (2 x 354 < 709.78, the
# log of float64's largest number). Past it a clone occurs with probability n e^-354 < 1e-140:
# shuffling amplifies nothing measurable, and eps0 itself is claimed (post-processing).
LARGEST_LOCAL_EPSILON = 354.0


def _check_shuffle_args(local_epsilon: float, n: int, delta: float) -> None:
    if not local_epsilon > 0 or not math.isfinite(local_epsilon):
        raise InvalidParameterError(f"need a finite local epsilon > 0, got {local_epsilon}")
    if int(n) != n or n < 1:
        raise InvalidParameterError(f"need an integer number of users n >= 1, got {n}")
    if not 0 < delta < 1:
        raise InvalidParameterError(f"need 0 < delta < 1, got {delta}")


def clone_pair_delta(epsilon: float, local_epsilon: float, n: int, tail: float = 0.0) -> float:
    """An upper bound on the hockey-stick divergence sup_S P(S) - e^epsilon Q(S) of FMT21's
    clone pair (P, Q) for n users with eps0 = ``local_epsilon`` (exact up to floating point when
    ``tail`` = 0).

    Given C = c, the first coordinate a of P has mass p_c(a) = alpha b_c(a-1) + (1-alpha) b_c(a)
    and of Q q_c(a) = (1-alpha) b_c(a-1) + alpha b_c(a) (b_c the Bin(c, 1/2) mass, alpha =
    e^eps0 / (e^eps0 + 1)); the second coordinate is c + 1 - a, so C is seen. The ratio p_c / q_c
    increases with a, so p_c > e^eps q_c exactly for a >= t_c, the first integer above
    (c + 1) (e^(eps+eps0) - 1) / ((e^eps + 1)(e^eps0 - 1)), and the divergence is
    sum_c Pr[C = c] (u S_c(t_c - 1) + w S_c(t_c)), u = alpha - e^eps (1-alpha),
    w = 1 - alpha - e^eps alpha, S_c(k) = Pr[Bin(c, 1/2) >= k]. Each t in {t_c - 1, t_c, t_c + 1}
    gives a lower bound of the c-term and the largest is exact, so rounding in t_c cannot
    under-count. The mirror map a -> c + 1 - a swaps P and Q, so the divergence of Q from P is
    the same number. Values of c whose total probability is at most ``tail`` (outside a central
    window) are charged 1 each.
    """
    if epsilon >= local_epsilon:
        return 0.0  # p_c / q_c <= e^eps0 everywhere
    if local_epsilon > LARGEST_LOCAL_EPSILON:
        raise InvalidParameterError(
            f"the clone pair's divergence is computed for a local epsilon up to "
            f"{LARGEST_LOCAL_EPSILON:g} (e^(epsilon + eps0) overflows beyond), got "
            f"{local_epsilon:g}")
    e0 = math.exp(local_epsilon)
    ee = math.exp(epsilon)
    # u = alpha - e^eps (1 - alpha) and w = 1 - alpha - e^eps alpha, written without cancellation
    u = (e0 - ee) / (e0 + 1.0)
    w = -math.expm1(epsilon + local_epsilon) / (e0 + 1.0)
    c, weights, outside = _clone_counts(local_epsilon, n, tail)
    ratio = math.expm1(epsilon + local_epsilon) / ((ee + 1.0) * math.expm1(local_epsilon))
    t0 = np.floor(ratio * (c + 1.0)) + 1.0
    # S_c(k) = Pr[Bin(c, 1/2) >= k] = sf(k - 1) at k = t - 1 and t for t = t0 - 1, t0, t0 + 1:
    # four distinct tails, each computed once.
    tails = [binom.sf(t0 + k, c, 0.5) for k in (-3.0, -2.0, -1.0, 0.0)]
    per_c = np.zeros_like(c)
    for shift in range(3):
        per_c = np.maximum(per_c, u * tails[shift] + w * tails[shift + 1])
    total = float(np.dot(weights, per_c)) + outside
    return min(1.0, total * (1.0 + _DELTA_SLACK_REL) + _DELTA_SLACK_ABS)


@functools.lru_cache(maxsize=64)
def _clone_counts(local_epsilon: float, n: int, tail: float) -> tuple[np.ndarray, np.ndarray,
                                                                       float]:
    """The clone counts c of ``clone_pair_delta``'s window, their probabilities Pr[C = c]
    (C ~ Bin(n - 1, e^-eps0)) and the probability outside the window (charged in full). They do
    not depend on the central epsilon, so a search over it computes them once (read-only
    arrays: they are shared)."""
    trials, p = n - 1, math.exp(-local_epsilon)
    if tail > 0:
        lo = max(int(binom.ppf(tail / 2.0, trials, p)) - 1, 0)
        hi = min(int(binom.isf(tail / 2.0, trials, p)) + 1, trials)
    else:
        lo, hi = 0, trials
    c = np.arange(lo, hi + 1, dtype=np.float64)
    outside = (binom.cdf(lo - 1, trials, p) if lo > 0 else 0.0) + binom.sf(hi, trials, p)
    weights = binom.pmf(c, trials, p)
    c.flags.writeable = weights.flags.writeable = False
    return c, weights, float(outside)


def _numerical_epsilon(local_epsilon: float, n: int, delta: float) -> float:
    """The smallest epsilon on a dyadic grid of [0, eps0] at which the clone pair's divergence
    (``clone_pair_delta``, the window's tail charged) is at most ``delta``: never below the exact
    smallest epsilon of the pair, at most eps0 2^-40 above it."""
    tail = _TAIL_FRACTION * delta
    lo, hi = 0.0, local_epsilon  # clone_pair_delta(eps0) = 0 <= delta
    for _ in range(_EPS_STEPS):
        mid = 0.5 * (lo + hi)
        if clone_pair_delta(mid, local_epsilon, n, tail) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def fmt_closed_form_epsilon(local_epsilon: float, n: int, delta: float) -> float | None:
    """FMT21's closed form, in its conservative reading, or None outside its range.

    Theorem 3.1 as published: for any delta in [0, 1] with eps0 <= ln(n / (16 ln(2/delta))),
    the shuffled protocol is (eps, delta)-DP with
    eps <= ln(1 + (e^eps0 - 1)/(e^eps0 + 1) (8 sqrt(e^eps0 ln(4/delta)) / sqrt(n) + 8 e^eps0 / n)).
    The authors' reference implementation (apple/ml-shuffling-amplification,
    ``closedformanalysis``) requires eps0 <= ln(n / (16 ln(4/delta))) instead (issue #1 there,
    a user report without a maintainer answer, calls the paper's ln(2/delta) a typo in
    Lemma 3.5, Theorem 3.8 and Proposition 5.3)
    and uses the larger factor (e^eps0 - 1)/(e^eps0 + e^-eps1), eps1 = ln(1 + a + b), in place
    of (e^eps0 - 1)/(e^eps0 + 1), where a = 8 sqrt(e^eps0 ln(4/delta) / n), b = 8 e^eps0 / n.
    We take the stricter range and the larger value (the reference code's: e^-eps1 <= 1), so
    this is never below either version.
    """
    _check_shuffle_args(local_epsilon, n, delta)
    if n <= 16.0 * math.log(4.0 / delta) or local_epsilon > math.log(
            n / (16.0 * math.log(4.0 / delta))):
        return None
    e0 = math.exp(local_epsilon)
    a = 8.0 * math.sqrt(e0 * math.log(4.0 / delta) / n)
    b = 8.0 * e0 / n
    eps1 = math.log1p(a + b)
    # expm1, not e0 - 1: the difference cancels at small eps0 (to 0 below 1.1e-16, and by a
    # relative 1e-16 / eps0 either way above), which could understate the amplified epsilon.
    return math.log1p(math.expm1(local_epsilon) / (e0 + math.exp(-eps1)) * (a + b))


def shuffle_amplified_epsilon(local_epsilon: float, n: int, delta: float,
                              bound: str = "numerical") -> float:
    """The central epsilon of n shuffled ``local_epsilon``-LDP reports at ``delta``.

    ``bound="numerical"`` (the default): the paper's numerical method (FMT21 Appendix E, our own
    implementation from the reduction): the smallest epsilon, on a 2^-40 grid of [0, eps0]
    rounded up, at which the clone pair (P, Q) of the reduction is (epsilon, delta)-
    indistinguishable, its hockey-stick divergence computed in closed form per clone count
    (``clone_pair_delta``) with floating-point slack and the far tails of C charged in full. It is
    valid for every eps0 and n and cross-checked against the closed form: the smaller of the two
    is returned (both are proven bounds).

    ``bound="closed-form"``: ``fmt_closed_form_epsilon`` (Theorem 3.1, conservative reading);
    outside its range eps0 itself is returned (no amplification claimed).

    Never above ``local_epsilon`` (shuffling is post-processing of eps0-DP reports), which is
    returned as it is above ``LARGEST_LOCAL_EPSILON`` (no amplification claimed: conservative).
    """
    _check_shuffle_args(local_epsilon, n, delta)
    if bound not in ("numerical", "closed-form"):
        raise InvalidParameterError(f"bound must be 'numerical' or 'closed-form', got {bound!r}")
    if local_epsilon > LARGEST_LOCAL_EPSILON:
        # The numerical bound's e^(epsilon + eps0) overflows here; eps0 is always valid.
        return local_epsilon
    closed = fmt_closed_form_epsilon(local_epsilon, n, delta)
    if bound == "closed-form":
        return local_epsilon if closed is None else min(local_epsilon, closed)
    numerical = _numerical_epsilon(local_epsilon, n, delta)
    return min(local_epsilon, numerical, math.inf if closed is None else closed)


@functools.lru_cache(maxsize=256)
def local_epsilon_for_shuffle(epsilon: float, delta: float, n: int,
                              bound: str = "numerical") -> float:
    """The largest eps0 (to within a relative 1e-9) whose n shuffled eps0-LDP reports are
    (epsilon, delta)-DP by ``shuffle_amplified_epsilon(eps0, n, delta, bound)``; at least
    ``epsilon`` itself, which needs no amplification.

    Conservative by construction, not up to a root-finder's tolerance: a bisection keeps its
    lower end feasible, and the value returned satisfies
    ``shuffle_amplified_epsilon(eps0, n, delta, bound) <= epsilon`` as computed. Results are
    cached (the numerical bound takes up to a few seconds at n = 10^6 and the protocols ask once
    per round).

    The search stops at ``LARGEST_LOCAL_EPSILON`` (354): an ``epsilon`` at or above it is
    returned as it is (no amplification claimed), and no larger eps0 is returned below it.
    Both are conservative: a smaller eps0 than the largest feasible one is still feasible.
    """
    if not epsilon > 0 or not math.isfinite(epsilon) or not 0 < delta < 1:
        raise InvalidParameterError(f"need epsilon > 0 and 0 < delta < 1, got {epsilon}, {delta}")
    _check_shuffle_args(epsilon, n, delta)
    if epsilon >= LARGEST_LOCAL_EPSILON:
        # A huge budget (rho = 1000 asks about 300 a round): amplification at such eps0 is
        # nil, and computing it overflowed (e^(epsilon + eps0) past 709).
        return epsilon

    def feasible(eps0: float) -> bool:
        return shuffle_amplified_epsilon(eps0, n, delta, bound) <= epsilon

    lo, hi = epsilon, 2.0 * epsilon  # amplified(eps0) <= eps0, so lo is feasible
    while feasible(hi):
        lo, hi = hi, 2.0 * hi
        if hi > LARGEST_LOCAL_EPSILON:
            # Every doubling up to here ran as before (354 is the largest eps0 whose bound
            # did not overflow); the search goes no further.
            if feasible(LARGEST_LOCAL_EPSILON):
                return LARGEST_LOCAL_EPSILON
            hi = LARGEST_LOCAL_EPSILON
            break
    while hi - lo > 1e-9 * lo:
        mid = 0.5 * (lo + hi)
        if feasible(mid):
            lo = mid
        else:
            hi = mid
    return lo
