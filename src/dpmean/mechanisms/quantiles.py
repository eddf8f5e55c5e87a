"""Private quantiles by binary search with Gaussian-noised counts: PrivQuant (IOME Algorithm 1).

Vectorised: k independent searches (one per coordinate, or one for row norms) run together.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import ndtri

from ..accounting import PrivacyLedger
from ..errors import InvalidParameterError
from ..events import Event, gaussian_event
from .discrete_gaussian import discrete_gaussian
from .gaussian import gaussian_noise

# count_le(thresholds) -> for each search j, the number of data values <= thresholds[j].
CountFunction = Callable[[np.ndarray], np.ndarray]
# count_table(edges) -> for each search j and each l, the number of its values <= edges[j, l]
# (edges (k, m), each row ascending): one pass answering several halvings (``real_search``).
CountTable = Callable[[np.ndarray], np.ndarray]
# The most counts a table holds (k x m): its halvings per pass are as many as this allows.
TABLE_COUNTS = 1 << 20


def integer_search_steps(lo: np.ndarray, hi: np.ndarray) -> int:
    """Iterations Algorithm 1 needs at most on the integer domain [lo, hi]: ceil(log2(size))."""
    size = int(np.max(np.asarray(hi) - np.asarray(lo))) + 1
    return max(1, (size - 1).bit_length())


def count_noise_std(steps: int, rho_per_search: float) -> float:
    """Standard deviation of each noisy count: every count has sensitivity 1 and gets rho/T."""
    return float(np.sqrt(steps / (2.0 * rho_per_search)))


def rank_error_bound(steps: int, rho_per_search: float, beta: float) -> float:
    """Theorem 3.3's tau: with probability 1 - beta all ``steps`` noisy counts are within tau of
    the truth (two-sided Gaussian tails and a union bound), so the rank error is at most tau."""
    # The upper beta/(2 steps) Gaussian quantile, -ndtri(q): the same number as
    # scipy.stats.norm.isf(q), without scipy.stats' per-call overhead (searches call this often).
    return count_noise_std(steps, rho_per_search) * float(-ndtri(beta / (2.0 * steps)))


def reliable_search_steps(margin: float, rho_per_search: float, beta: float, most: int) -> int:
    """The most halvings, up to ``most``, whose noisy counts all stay within ``margin`` of the
    truth with probability 1 - beta (Theorem 3.3's tau < margin); at least 1.

    Every extra halving splits the search's budget thinner. A median search (margin n/2) whose
    counts can be off by n/2 may turn away from every row at a midpoint far from the data (a
    count of 0 read as more than n/2) and end outside it; stopping earlier keeps the answer
    among the rows, at the cost of a wider last interval. Public: margin, budget, beta."""
    for steps in range(int(most), 1, -1):
        if rank_error_bound(steps, rho_per_search, beta) < margin:
            return steps
    return 1


def _noisy_counts(count_le, thresholds, steps, rho_per_search, rng, secure, sensitivity=1.0):
    # Each count |{x <= t}| changes by at most `sensitivity` (1 unless a caller feeds each
    # person into several values) when one row is replaced; rho_per_search / steps per count, so
    # a search of `steps` counts costs rho_per_search. Counts are integers, so secure mode adds
    # exact discrete Gaussian noise of the same variance (CKS 2020: the same zCDP cost) to the
    # integer count itself, never to a rescaled one (a count / sensitivity plus integer noise
    # would put neighbours on different lattices).
    rho = rho_per_search / steps
    counts = count_le(thresholds)
    if secure:
        variance = sensitivity * sensitivity / (2.0 * rho)
        return counts + discrete_gaussian(variance, rng, size=np.size(counts))
    return gaussian_noise(counts, sensitivity, rho, rng)


def private_quantile_real(
    count_le: CountFunction,
    rank: float | np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    *,
    steps: int,
    rho_per_search: float,
    rng: np.random.Generator,
    ledger: PrivacyLedger,
    stage: str,
    secure: bool = False,
    count_table: CountTable | None = None,
) -> np.ndarray:
    """PrivQuant on real intervals [lo_j, hi_j] with a fixed number of halvings.

    Each step halves [left, right] at its midpoint: if the noisy count of values <= mid is at
    most ``rank``, the answer lies right of mid. Returns the midpoints of the final intervals,
    which have width (hi - lo) / 2**steps.

    Privacy: each of the k searches is ``rho_per_search``-zCDP (``steps`` Gaussian counts of
    sensitivity 1 under replace-one, each rho_per_search / steps); the k searches together
    cost k * rho_per_search, charged to ``stage`` before the first count. ``secure=True``
    noises the counts with the exact discrete Gaussian (same cost). ``count_table``: as for
    ``real_search`` (the same release, fewer passes over the data).
    """
    _check_search(steps, rho_per_search)
    ledger.charge(stage, *search_cost_event(lo, rho_per_search, secure))
    return real_search(count_le, rank, lo, hi, steps=steps, rho_per_search=rho_per_search,
                       rng=rng, secure=secure, count_table=count_table)


def search_cost(lo: np.ndarray | float, rho_per_search: float) -> float:
    """What k searches (one per entry of ``lo``) of ``rho_per_search`` each cost together."""
    return float(np.size(lo)) * rho_per_search


def search_cost_event(lo: np.ndarray | float, rho_per_search: float,
                      secure: bool) -> tuple[float, Event]:
    """``search_cost`` and its event: every count of a search is a Gaussian mechanism (the
    discrete Gaussian with ``secure``)."""
    cost = search_cost(lo, rho_per_search)
    return cost, gaussian_event(cost, secure)


def real_search(
    count_le: CountFunction, rank: float | np.ndarray, lo: np.ndarray, hi: np.ndarray, *,
    steps: int, rho_per_search: float, rng: np.random.Generator, secure: bool = False,
    sensitivity: float = 1.0, count_table: CountTable | None = None,
) -> np.ndarray:
    """``private_quantile_real``'s searches without its charge, for a mechanism that charges
    all its columns once and then searches them block by block; the caller charges.

    ``sensitivity``: how much one person moves each count (``count_le`` returns the integer
    counts themselves; the noise is scaled to it, so each search still costs
    ``rho_per_search``). ``count_table``, if given, answers the counts instead of ``count_le``:
    one table for as many halvings as ``TABLE_COUNTS`` allows, the same counts (exact), so the
    same noise draws and the same answer."""
    _check_search(steps, rho_per_search)
    left = np.array(lo, dtype=np.float64, ndmin=1)
    right = np.array(hi, dtype=np.float64, ndmin=1)
    lookup = None if count_table is None else _TableLookup(count_table, left.size, steps)
    for _ in range(steps):
        mid = (left + right) / 2.0
        count = count_le if lookup is None else lookup.counter(left, right, mid)
        go_right = _noisy_counts(count, mid, steps, rho_per_search, rng, secure,
                                 sensitivity) <= rank
        if lookup is not None:
            lookup.descend(go_right)
        left = np.where(go_right, mid, left)
        right = np.where(go_right, right, mid)
    return (left + right) / 2.0


def dyadic_midpoints(left: np.ndarray, right: np.ndarray, levels: int) -> np.ndarray:
    """Every midpoint the next ``levels`` halvings of [left_j, right_j] can ask about, in
    ascending order: (k, 2**levels - 1), computed as ``real_search`` computes them
    ((left + right) / 2 of the halves), so they are the same floats."""
    k = left.size
    out = np.empty((k, (1 << levels) - 1))
    lefts, rights = left.reshape(k, 1), right.reshape(k, 1)
    for level in range(levels):
        mids = (lefts + rights) / 2.0
        # The i-th midpoint of this level sits at (2 i + 1) 2^(levels - 1 - level) - 1.
        gap = 1 << (levels - 1 - level)
        out[:, gap - 1::2 * gap] = mids
        lefts, rights = (np.stack([lefts, mids], axis=2).reshape(k, -1),
                         np.stack([mids, rights], axis=2).reshape(k, -1))
    return out


class _TableLookup:
    """The counts of ``real_search``'s next halvings from one table: at each table's start the
    search's intervals give every midpoint it can reach in ``levels`` halvings
    (``dyadic_midpoints``), counted in one pass; each halving then reads its midpoint's count
    and descends (left or right child) in that table's in-order positions."""

    def __init__(self, count_table: CountTable, k: int, steps: int) -> None:
        self._count_table = count_table
        self._k = k
        self._steps_left = steps
        self._most_levels = max(1, int(np.log2(TABLE_COUNTS // max(k, 1) + 1)))
        self._gap = 0  # half the distance to the children's positions; 0: no table yet

    def counter(self, left: np.ndarray, right: np.ndarray, mid: np.ndarray) -> CountFunction:
        if self._gap == 0:
            levels = min(self._steps_left, self._most_levels)
            edges = dyadic_midpoints(left, right, levels)
            self._table = self._count_table(edges)
            self._position = np.full(self._k, (1 << (levels - 1)) - 1)
            self._gap = 1 << (levels - 1)
            self._edges = edges
        rows = np.arange(self._k)
        # The search's own midpoints are the table's: a mismatch would be a bug here.
        assert np.array_equal(self._edges[rows, self._position], mid)
        counts = self._table[rows, self._position]
        return lambda _: counts

    def descend(self, go_right: np.ndarray) -> None:
        self._steps_left -= 1
        self._gap //= 2
        self._position = self._position + np.where(go_right, self._gap, -self._gap)


def private_quantile_integer(
    count_le: CountFunction,
    rank: float | np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    *,
    rho_per_search: float,
    rng: np.random.Generator,
    ledger: PrivacyLedger,
    stage: str,
    secure: bool = False,
    max_steps: int | None = None,
) -> np.ndarray:
    """PrivQuant exactly as IOME Algorithm 1 on integer domains [lo_j, hi_j].

    ``while left < right: mid = floor((left + right) / 2); if NoisyRC([lo, mid]) <= m then
    left = mid + 1 else right = mid``; returns floor((left + right) / 2). The loop runs at most
    T = ceil(log2(hi - lo + 1)) times (at most ``max_steps`` if given, leaving a wider last
    interval), and every count is noised for T steps, so a search that ends early spends less
    than it was charged, never more.

    Privacy: ``rho_per_search``-zCDP per search (T counts of sensitivity 1, rho/T each); the
    k searches cost k * rho_per_search, charged to ``stage`` before the first count.
    ``secure=True`` as for ``private_quantile_real``.
    """
    lo = np.array(lo, dtype=np.int64, ndmin=1)
    hi = np.array(hi, dtype=np.int64, ndmin=1)
    steps = integer_search_steps(lo, hi)
    if max_steps is not None:
        steps = min(steps, max_steps)
    _check_search(steps, rho_per_search)
    ledger.charge(stage, *search_cost_event(lo, rho_per_search, secure))
    left, right = lo.copy(), hi.copy()
    for _ in range(steps):
        active = left < right
        if not active.any():
            break
        mid = (left + right) // 2
        go_right = _noisy_counts(count_le, mid.astype(np.float64), steps, rho_per_search, rng,
                                 secure)
        go_right = go_right <= rank
        left = np.where(active & go_right, mid + 1, left)
        right = np.where(active & ~go_right, mid, right)
    return ((left + right) // 2).astype(np.float64)


def _check_search(steps: int, rho_per_search: float) -> None:
    if int(steps) != steps or steps < 1:
        raise InvalidParameterError(f"a quantile search needs steps >= 1, got {steps}")
    if not (np.isfinite(rho_per_search) and rho_per_search > 0):
        raise InvalidParameterError(f"a quantile search needs rho > 0, got {rho_per_search}")
