"""The trimmed mean and its exact t-smooth sensitivity (Bun-Steinke 2019, Prop. 11).

Mechanism-level algorithms, on sorted columns: ``trimmed_means`` (the statistic, computed
without overflow) and ``trimmed_smooth_sensitivity`` (the scale ``smooth_sensitivity_mechanism``
needs, in O(n log n)). The ``trimmed`` estimator (``estimators/trimmed.py``) and the paper's
experiments use them; neither releases the smooth sensitivity itself, which is as sensitive as
the data.
"""

from __future__ import annotations

import math
import numbers
from functools import partial
from typing import Any

import numpy as np

from ..errors import InvalidParameterError


def trimmed_smooth_sensitivity(
    sorted_values: np.ndarray, m: int, t: Any, lo: Any, hi: Any, *,
    output_truncation: bool = False,
) -> np.ndarray:
    """The t-smooth sensitivity of trim_m on [a, b]^n (Prop. 11), for each column.

    ``sorted_values`` is (n, P), each column sorted ascending (P problems: coordinates, or one
    column repeated for several t); ``t``, ``lo``, ``hi`` are scalars or length-P arrays.

    Prop. 11: S = max_{k=0..n} e^{-kt} max_{l=0..k+1} (x_(n-m+1+k-l) - x_(m+1-l)) / (n - 2m),
    x_(i) = a for i <= 0 and b for i > n. Writing i = m+1-l, j = n-m+1+k-l, it is the largest
    entry of the matrix V(i, j) = e^{-t (j - i - (n-2m))} (x_(j) - x_(i)) / (n - 2m) over
    i <= m+1, j >= n-m, except (m+1, n-m). Padding makes i < 0 and j > n+1 dominated (same value,
    larger k), so 0 <= i <= m+1 and n-m <= j <= n+1: an (m+2) x (m+2) matrix, all with k <= n.
    The difference of row values between columns j < j', (x_j' - c) e^{-tj'} - (x_j - c) e^{-tj},
    is non-decreasing in c = x_(i), so the largest maximiser j*(i) is non-decreasing in i; divide
    and conquer over rows (middle row scanned within its parent's bracket) finds every row's
    maximum in O(m log m), for all P problems at once, level by level. Entries at distance
    k > K = ln(U/L) / t cannot win (U bounds every difference, L is the k = 0 entry), so only a
    (K + 2) x (K + 2) corner is searched: O(min(m, K) log) per problem, whatever n is.

    ``output_truncation``: the trimmed mean of unbounded inputs, clamped to [a, b]. Padding is
    then -inf/+inf and each distance-k bound is capped at b - a (clamping is 1-Lipschitz into an
    interval of that width): B^(k) = min(A^(k), b - a), still non-decreasing along neighbours, so
    max_k e^{-kt} B^(k) is a t-smooth upper bound on the local sensitivity (NRS 2007, Lemma 2.3).
    The cap keeps the monotone-maximiser property (the row difference stays non-decreasing in c).
    """
    values = np.asarray(sorted_values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    n = values.shape[0]
    _check_trim(m, n)
    return tails_smooth_sensitivity(values[:m + 1], values[n - m - 1:], n, int(m), t, lo, hi,
                                    output_truncation=output_truncation)


def _check_trim(m: int, n: int) -> None:
    if isinstance(m, bool) or not isinstance(m, numbers.Integral) or not 0 <= 2 * m < n:
        raise InvalidParameterError(f"trimming m must be an integer with 0 <= 2m < n={n}, got {m}")


def tails_smooth_sensitivity(
    lowest: np.ndarray, highest: np.ndarray, n: int, m: int, t: Any, lo: Any, hi: Any, *,
    output_truncation: bool = False,
) -> np.ndarray:
    """``trimmed_smooth_sensitivity`` from the only order statistics it reads (for engines that
    select them instead of sorting whole columns).

    Parameters
    ----------
    lowest, highest : numpy.ndarray
        (m + 1, P): sorted positions 0..m and n-m-1..n-1 of each of P columns.
    n : int
        Values per column.
    m, t, lo, hi, output_truncation
        As ``trimmed_smooth_sensitivity``.

    Returns
    -------
    numpy.ndarray
        (P,) the t-smooth sensitivity of trim_m of each column.
    """
    _check_trim(m, n)
    problems = lowest.shape[1]
    m = int(m)
    width = n - 2 * m
    t = np.broadcast_to(np.asarray(t, dtype=np.float64), (problems,))
    lo = np.broadcast_to(np.asarray(lo, dtype=np.float64), (problems,))
    hi = np.broadcast_to(np.asarray(hi, dtype=np.float64), (problems,))
    if output_truncation:
        pad_lo, pad_hi = np.full(problems, -np.inf), np.full(problems, np.inf)
        cap = width * (hi - lo)
    else:
        pad_lo, pad_hi, cap = lo, hi, np.full(problems, np.inf)

    # Only distances k <= K can hold the maximum: an entry at distance k is at most U e^{-tk}
    # (U the widest difference), and the k = 0 entry x_(n-m+1) - x_(m+1) is at least L, so
    # k > ln(U/L) / t loses. Rows i < m - K and columns q > K + 1 have k > K: the search runs on
    # the (K + 2) x (K + 2) corner, which keeps the monotone maximisers (a submatrix does).
    # When K < m the padding (all at k >= m) is out, and the data's own range bounds the rest.
    # Differences of unclamped values may overflow to +inf: above the cap, so min() is exact.
    with np.errstate(over="ignore"):
        lower = np.minimum((pad_hi if m == 0 else highest[1]) - lowest[m], cap)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        widest = np.maximum(pad_hi, highest[-1]) - np.minimum(pad_lo, lowest[0])
        reach = _distance_reach(np.minimum(widest, cap), lower, t)
        unpadded = _distance_reach(np.minimum(highest[-1] - lowest[0], cap), lower, t)
    reach = np.where(reach < m, np.minimum(reach, unpadded), m).astype(int)

    # The corner every problem needs: rows i = m-K..m+1 (x_(i), x_(0) the padding) and columns
    # q = 0..K+1 (j = n-m+q: x_(j), x_(n+1) the padding); local row r is i = m - K + r.
    corner = int(reach.max(initial=0))
    low, high = np.empty((problems, corner + 2)), np.empty((problems, corner + 2))
    if corner == m:
        low[:, 0], low[:, 1:] = pad_lo, lowest.T
        high[:, -1], high[:, :-1] = pad_hi, highest.T
    else:
        low[:] = lowest[m - corner - 1:m + 1].T
        high[:] = highest[:corner + 2].T

    # Nodes of the divide and conquer: problem, row range [r0, r1] and column bracket [q0, q1]
    # (entry (r, q) is at distance k = q - r + K).
    prob = np.arange(problems)
    r0, r1 = corner - reach, np.full(problems, corner + 1)
    q0, q1 = np.zeros(problems, int), reach + 1
    best = np.full(problems, -np.inf)  # log of the largest entry so far, times (n - 2m)
    flat_high = high.ravel()
    while prob.size:
        mid = (r0 + r1) // 2
        lengths = q1 - q0 + 1
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        spread = partial(np.repeat, repeats=lengths)  # a value per node, over its bracket
        q = np.arange(starts[-1] + lengths[-1]) - spread(starts - q0)
        # A difference of two finite values can overflow to +inf (never NaN: the padding is
        # -inf below and +inf above); it is then above any cap, so min(diff, cap) stays exact.
        with np.errstate(over="ignore"):
            diff = flat_high[q + spread(prob * (corner + 2))] - spread(low[prob, mid])
        if output_truncation:
            diff = np.minimum(diff, spread(cap[prob]))
        with np.errstate(divide="ignore"):
            log_value = np.log(diff) - spread(t[prob]) * (q + spread(corner - mid))
        # k = -1 (i = m+1, q = 0) is not a distance
        log_value[starts[(mid == corner + 1) & (q0 == 0)]] = -np.inf
        row_max = np.maximum.reduceat(log_value, starts)
        arg = np.maximum.reduceat(np.where(log_value == spread(row_max), q, -1), starts)
        np.maximum.at(best, prob, row_max)
        left, right = r0 <= mid - 1, mid + 1 <= r1
        prob = np.concatenate((prob[left], prob[right]))
        r0, r1 = np.concatenate((r0[left], mid[right] + 1)), np.concatenate((mid[left] - 1,
                                                                            r1[right]))
        q0, q1 = np.concatenate((q0[left], arg[right])), np.concatenate((arg[left], q1[right]))
    return np.exp(best) / width


def _distance_reach(upper: np.ndarray, lower: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The distance k beyond which upper e^{-tk} <= lower (inf where nothing is known)."""
    reach = np.ceil((np.log(upper) - np.log(lower)) / t)
    return np.where(np.isnan(reach), np.inf, reach)


def trimmed_means(sorted_values: np.ndarray, m: int) -> np.ndarray:
    """trim_m of each column of ``sorted_values`` (n, P): the mean of x_(m+1), ..., x_(n-m).

    Finite values always give a finite mean, even near the float64 maximum (unclamped values
    with ``truncation="output"``): a plain sum would overflow to inf, or to NaN where +inf meets
    -inf, so that one dataset released NaN and its neighbour a number. The values are summed
    divided by 2^k, k fixed by the public count n - 2m so that every partial sum stays below
    half the float64 maximum; scaling by a power of two is exact (bar subnormals), so ordinary
    data give the same bits as ``mean``.
    """
    n = sorted_values.shape[0]
    scale = trimmed_sum_scale(n, m)
    return (sorted_values[m:n - m] / scale).sum(axis=0) / (n - 2 * m) * scale


# Float64's unit roundoff, and the relative excess allowed for the smooth sensitivity's own
# arithmetic (a brute force over every neighbour found at most 4e-16).
_UNIT_ROUNDOFF = 2.0**-53
_SMOOTH_ROUNDING = 2.0**-40


def computed_smooth_sensitivity(smooth: np.ndarray, n: int, m: np.ndarray, lo: np.ndarray,
                                hi: np.ndarray) -> np.ndarray:
    """A t-smooth upper bound on the local sensitivity of the trimmed mean as computed in
    float64 (``trimmed_means``, or any order of the same sum), from ``smooth``, the exact
    one's (``trimmed_smooth_sensitivity``), for values in [lo, hi] (public: n, m, the box).

    Why: the analysis bounds |f(x) - f(y)| for the exact f, but the release adds noise to the
    rounded one, which may differ from it by an ulp. Where the middle order statistics lie
    within a few ulps of each other and the smoothing has decayed the padding term, the exact
    bound falls below that ulp, the noise rounds away and neighbours' releases differ with
    certainty (a review: n = 10^4, trim 0.1, smoothing 0.1, rows at 1 and 1 + 2^-52, S^t =
    2.8e-20: 1.0 against 1.0000000000000002 in 200 seeds of 200). A sum of N = n - 2m values
    of magnitude at most M = max(|lo|, |hi|) (scaled by a power of two, exact) is off by at
    most gamma_(N-1) N M in any order (Higham, Thm 4.3), and the division by N rounds once
    more: the computed mean is within c = (gamma_(N-1) + 2u) M of the exact one, so
    |f~(x) - f~(y)| <= S^t(x) + 2c. A constant added to a t-smooth bound, and a factor,
    keep it t-smooth. With output truncation the values are not clamped to the box: c, read
    from the box, covers middle values within it, and is not proved beyond it."""
    count = (n - 2 * np.asarray(m)).astype(np.float64)
    gamma = (count - 1.0) * _UNIT_ROUNDOFF / (1.0 - (count - 1.0) * _UNIT_ROUNDOFF)
    rounding = (gamma + 2.0 * _UNIT_ROUNDOFF) * np.maximum(np.abs(lo), np.abs(hi))
    return np.asarray(smooth, dtype=np.float64) * (1.0 + _SMOOTH_ROUNDING) + 2.0 * rounding


def trimmed_sum_scale(n: int, m: int) -> float:
    """The power of two ``trimmed_means`` divides every value by before summing the n - 2m
    middle ones (public: n and m only)."""
    return 2.0 ** (math.ceil(math.log2(n - 2 * m)) + 1)


__all__ = ["computed_smooth_sensitivity", "tails_smooth_sensitivity", "trimmed_means",
           "trimmed_smooth_sensitivity", "trimmed_sum_scale"]
