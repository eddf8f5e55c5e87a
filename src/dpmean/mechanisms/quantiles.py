"""Private quantiles by binary search with Gaussian-noised counts: PrivQuant (IOME Algorithm 1).

Vectorised: k independent searches (one per coordinate, or one for row norms) run together.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..accounting import PrivacyLedger
from ..errors import InvalidParameterError
from ..events import Event, gaussian_event
from .discrete_gaussian import check_variance, discrete_gaussian
from .gaussian import gaussian_noise, normal_isf

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
    # The upper beta/(2 steps) Gaussian quantile.
    return count_noise_std(steps, rho_per_search) * float(normal_isf(beta / (2.0 * steps)))


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
    counts = count_le(thresholds)
    if secure:
        variance = _count_variance(steps, rho_per_search, sensitivity)
        return counts + discrete_gaussian(variance, rng, size=np.size(counts))
    return gaussian_noise(counts, sensitivity, rho_per_search / steps, rng)


def _count_variance(steps: int, rho_per_search: float, sensitivity: float) -> float:
    """The variance of each secure count's discrete Gaussian: sensitivity^2 / (2 rho), rho =
    rho_per_search / steps per count. One expression for the draw and the pre-charge check
    (``_check_search``), so the check sees the variance the sampler will get."""
    rho = rho_per_search / steps
    return sensitivity * sensitivity / (2.0 * rho)


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
    _check_search(steps, rho_per_search, secure)
    ledger.charge(stage, *search_cost_event(lo, rho_per_search, secure))
    return real_search(count_le, rank, lo, hi, steps=steps, rho_per_search=rho_per_search,
                       rng=rng, secure=secure, count_table=count_table)


# How far below its top the octave search gallops: 256 octaves (77 decades), then it halves
# [0, top 2^-256] linearly. A box 10^77 times wider than the data's spread is beyond any use;
# a floor lower still would let a radius (of constant rows) reach where its square, and the
# clip profile's ratios to the bound, leave the normal doubles. Public: a constant.
OCTAVE_FLOOR = 256


def private_quantile_octaves(
    count_le: CountFunction,
    rank: float,
    top: float,
    *,
    steps: int,
    rho: float,
    rng: np.random.Generator,
    ledger: PrivacyLedger,
    stage: str,
    secure: bool = False,
) -> tuple[float, float]:
    """PrivQuant for one non-negative value (a row norm) on [0, top], scale-free: the last
    interval [left, right] of a search of ``steps`` noisy counts, each the count of values <=
    a threshold that depends only on the noisy counts before it.

    The thresholds (``octave_threshold``): while nothing is known below, top / 2, top / 4,
    top / 16, top / 256, ... (the exponent doubles: the octave of a value 2^-u below top is
    bracketed after about log2 u counts, not after u); once bracketed across more than one
    octave, the middle octave (bisection of the exponent); within one octave [a, 2a], the
    midpoint, as a linear search. Data in the top octave or two see the thresholds of the
    linear search of [0, top] (top / 2, top / 4, then halvings), every other octave one or
    two counts more to find its octave; a linear search ends at width top / 2^steps, this
    one at about 2^-(steps - 2 log2 u) times the value: its resolution follows the data,
    not the box.

    Privacy: exactly that of ``private_quantile_real`` with k = 1: ``steps`` Gaussian counts
    of sensitivity 1 (one row moves any count |{v <= t}| by at most 1), each
    ``rho / steps``, adaptively composed (each threshold a function of the earlier noisy
    counts and public values only, as in any binary search): ``rho``-zCDP, charged to
    ``stage`` before the first count. The number of counts is ``steps``, public, whatever
    the path. Theorem 3.3's rank bound holds unchanged: on the event that every count is
    within tau, the right end (if it moved) has more than rank - tau values at or below it
    and the left end at most rank + tau. ``secure=True``: discrete Gaussian counts.
    """
    check_octave_search(steps, rho, top, secure)
    ledger.charge(stage, *search_cost_event(np.zeros(1), rho, secure))
    return octave_search(count_le, rank, top, steps=steps, rho=rho, rng=rng, secure=secure)


def check_octave_search(steps: int, rho: float, top: float, secure: bool) -> None:
    """Refuse, before any charge, an octave search ``octave_search`` could not run."""
    _check_search(steps, rho, secure)
    if not (np.isfinite(top) and top > 0):
        raise InvalidParameterError(f"an octave search needs a finite top > 0, got {top}")


def octave_search(count_le: CountFunction, rank: float, top: float, *, steps: int, rho: float,
                  rng: np.random.Generator, secure: bool = False) -> tuple[float, float]:
    """``private_quantile_octaves``'s search without its charge, for a caller that charges
    several searches once; the caller charges (and checks ``steps``, ``rho`` and ``top``)."""
    left, right = 0.0, float(top)
    # Exponents of the ends as powers of two below top while they are exact octaves (None
    # once the search halves linearly); left's is None while nothing is known below.
    left_exp: int | None = None
    right_exp: int | None = 0
    floor_exp = octave_floor(top)
    for _ in range(steps):
        mid, mid_exp = octave_threshold(left, right, left_exp, right_exp, floor_exp, top)
        count = _noisy_counts(count_le, np.array([mid]), steps, rho, rng, secure)
        if float(np.asarray(count).reshape(-1)[0]) <= rank:
            left, left_exp = mid, mid_exp
        else:
            right, right_exp = mid, mid_exp
    return left, right


def noisy_count(count_le: CountFunction, threshold: float, *, rho: float,
                rng: np.random.Generator, secure: bool = False) -> float:
    """One noisy count of the values <= ``threshold`` (sensitivity 1): a search of one step
    at ``rho``, the same draw (the discrete Gaussian with ``secure``). The caller charges
    (``search_cost_event``) and checks (``check_octave_search``)."""
    counts = _noisy_counts(count_le, np.array([threshold]), 1, rho, rng, secure)
    return float(np.asarray(counts).reshape(-1)[0])


def octave_search_lowest(top: float, steps: int) -> float:
    """The smallest right end ``private_quantile_octaves`` can return over [0, top] in
    ``steps`` counts: the one reached when every count lands above the rank (public: top and
    steps)."""
    right, floor_exp = float(top), octave_floor(top)
    right_exp: int | None = 0
    for _ in range(steps):
        right, right_exp = octave_threshold(0.0, right, None, right_exp, floor_exp, top)
    return right


def octave_floor(top: float) -> int:
    """How many octaves below ``top`` the octave search may gallop (``OCTAVE_FLOOR``, fewer
    where top is so small that top 2^-256 would leave the normal doubles). Public given top."""
    return int(max(1, min(OCTAVE_FLOOR, np.floor(np.log2(top)) + 1022 - 64)))


def octave_threshold(left: float, right: float, left_exp: int | None, right_exp: int | None,
                     floor_exp: int, top: float) -> tuple[float, int | None]:
    """The octave search's next threshold and its exponent below ``top`` (None: a linear
    midpoint). A function of the current interval and public values only."""
    if left_exp is None and left == 0.0 and right_exp is not None and right_exp < floor_exp:
        # Nothing known below: gallop, the exponent doubling (1, 2, 4, 8, ...).
        exp = min(floor_exp, max(1, 2 * right_exp))
        return float(np.ldexp(top, -exp)), exp
    if left_exp is not None and right_exp is not None and left_exp - right_exp > 1:
        # Bracketed across octaves: bisect the exponent.
        exp = (left_exp + right_exp) // 2
        return float(np.ldexp(top, -exp)), exp
    return (left + right) / 2.0, None


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
    _check_search(steps, rho_per_search, secure, sensitivity)
    return _bisect(_REAL, count_le, rank, np.array(lo, dtype=np.float64, ndmin=1),
                   np.array(hi, dtype=np.float64, ndmin=1), steps=steps,
                   rho_per_search=rho_per_search, rng=rng, secure=secure,
                   sensitivity=sensitivity, count_table=count_table)


def _bisect(
    halving: _Halving, count_le: CountFunction, rank: float | np.ndarray, left: np.ndarray,
    right: np.ndarray, *, steps: int, rho_per_search: float, rng: np.random.Generator,
    secure: bool, sensitivity: float = 1.0, count_table: CountTable | None = None,
) -> np.ndarray:
    """The halvings both searches share: each step counts the values <= its midpoints (from
    ``count_le``, or from ``count_table``'s tables), noises the counts for ``steps`` counts of
    ``rho_per_search``, and keeps the half ``halving`` says. Returns the last midpoints."""
    lookup = None if count_table is None else _TableLookup(count_table, halving, steps)
    for _ in range(steps):
        if halving.finished(left, right):
            break
        mid = halving.midpoint(left, right)
        count = count_le if lookup is None else lookup.counter(left, right, mid)
        go_right = _noisy_counts(count, np.asarray(mid, dtype=np.float64), steps,
                                 rho_per_search, rng, secure, sensitivity) <= rank
        if lookup is not None:
            lookup.descend(go_right)
        left, right = halving.halve(left, right, mid, go_right)
    return halving.midpoint(left, right)


class _Halving:
    """How a binary search splits [left, right] (k intervals at once) and which half it keeps:
    the one place each search's arithmetic is written, so a table of counts built ahead
    (``_TableLookup``) holds exactly the thresholds the search will ask about."""

    def __init__(self, integer: bool) -> None:
        self.integer = integer

    def finished(self, left: np.ndarray, right: np.ndarray) -> bool:
        """Whether no search has anything left to halve: Algorithm 1 stops there; the real
        search always makes its fixed number of halvings (and draws)."""
        return self.integer and not (left < right).any()

    def midpoint(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        return (left + right) // 2 if self.integer else (left + right) / 2.0

    def halve(self, left: np.ndarray, right: np.ndarray, mid: np.ndarray,
              go_right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not self.integer:  # PrivQuant on reals: [mid, right] or [left, mid]
            return np.where(go_right, mid, left), np.where(go_right, right, mid)
        # Algorithm 1: [mid + 1, right] or [left, mid]; a finished search (left = right) stays.
        active = left < right
        return (np.where(active & go_right, mid + 1, left),
                np.where(active & ~go_right, mid, right))


_REAL, _INTEGER = _Halving(integer=False), _Halving(integer=True)


def reachable_midpoints(halving: _Halving, left: np.ndarray, right: np.ndarray,
                        levels: int) -> np.ndarray:
    """Every midpoint the next ``levels`` halvings of [left_j, right_j] can ask about, in heap
    order (node h's halves are 2 h + 1 and 2 h + 2): (k, 2**levels - 1), computed by the
    search's own arithmetic, so they are the same numbers."""
    k = left.size
    out = np.empty((k, (1 << levels) - 1), dtype=left.dtype)
    lefts, rights = left.reshape(k, 1), right.reshape(k, 1)
    for level in range(levels):
        mids = halving.midpoint(lefts, rights)
        out[:, (1 << level) - 1:(2 << level) - 1] = mids
        below = halving.halve(lefts, rights, mids, np.zeros_like(mids, dtype=bool))
        above = halving.halve(lefts, rights, mids, np.ones_like(mids, dtype=bool))
        lefts = np.stack([below[0], above[0]], axis=2).reshape(k, -1)
        rights = np.stack([below[1], above[1]], axis=2).reshape(k, -1)
    return out


class _TableLookup:
    """The counts of a binary search's next halvings from one table: at each table's start the
    search's intervals give every midpoint it can reach in the next halvings
    (``reachable_midpoints``, as many levels as ``TABLE_COUNTS`` allows), counted in one pass
    (``count_table``, on each row's midpoints in ascending order); each halving then reads its
    own midpoint's count and descends to the half it kept."""

    def __init__(self, count_table: CountTable, halving: _Halving, steps: int) -> None:
        self._count_table = count_table
        self._halving = halving
        self._steps_left = steps
        self._levels_left = 0  # levels of the current table not yet read

    def counter(self, left: np.ndarray, right: np.ndarray, mid: np.ndarray) -> CountFunction:
        k = left.size
        if self._levels_left == 0:
            most = max(1, int(np.log2(TABLE_COUNTS // k + 1)))
            self._levels_left = min(self._steps_left, most)
            mids = reachable_midpoints(self._halving, left, right, self._levels_left)
            order = np.argsort(mids, axis=1, kind="stable")
            ascending = np.take_along_axis(mids, order, axis=1).astype(np.float64)
            table = np.empty(mids.shape, dtype=np.int64)
            np.put_along_axis(table, order, self._count_table(ascending), axis=1)
            self._mids, self._table = mids, table
            self._node = np.zeros(k, dtype=np.int64)
        rows = np.arange(k)
        # The search's own midpoints are the table's: a mismatch would be a bug here.
        assert np.array_equal(self._mids[rows, self._node], mid)
        counts = self._table[rows, self._node]
        return lambda _: counts

    def descend(self, go_right: np.ndarray) -> None:
        self._steps_left -= 1
        self._levels_left -= 1
        self._node = 2 * self._node + 1 + go_right


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
    count_table: CountTable | None = None,
) -> np.ndarray:
    """PrivQuant exactly as IOME Algorithm 1 on integer domains [lo_j, hi_j].

    ``while left < right: mid = floor((left + right) / 2); if NoisyRC([lo, mid]) <= m then
    left = mid + 1 else right = mid``; returns floor((left + right) / 2). The loop runs at most
    T = ceil(log2(hi - lo + 1)) times (at most ``max_steps`` if given, leaving a wider last
    interval), and every count is noised for T steps, so a search that ends early spends less
    than it was charged, never more.

    Privacy: ``rho_per_search``-zCDP per search (T counts of sensitivity 1, rho/T each); the
    k searches cost k * rho_per_search, charged to ``stage`` before the first count.
    ``secure=True`` and ``count_table`` as for ``private_quantile_real``.
    """
    lo = np.array(lo, dtype=np.int64, ndmin=1)
    hi = np.array(hi, dtype=np.int64, ndmin=1)
    steps = integer_search_steps(lo, hi)
    if max_steps is not None:
        steps = min(steps, max_steps)
    _check_search(steps, rho_per_search, secure)
    ledger.charge(stage, *search_cost_event(lo, rho_per_search, secure))
    return _bisect(_INTEGER, count_le, rank, lo.copy(), hi.copy(), steps=steps,
                   rho_per_search=rho_per_search, rng=rng, secure=secure,
                   count_table=count_table).astype(np.float64)


def _check_search(steps: int, rho_per_search: float, secure: bool = False,
                  sensitivity: float = 1.0) -> None:
    if int(steps) != steps or steps < 1:
        raise InvalidParameterError(f"a quantile search needs steps >= 1, got {steps}")
    if not (np.isfinite(rho_per_search) and rho_per_search > 0):
        raise InvalidParameterError(f"a quantile search needs rho > 0, got {rho_per_search}")
    if secure:  # each count's discrete Gaussian within the exact sampler's range, pre-charge
        check_variance(_count_variance(steps, rho_per_search, sensitivity))
