"""Private coordinate-wise standard deviations for PLAN's scaling, each mechanism charging its
stage.

PLAN (Aumuller, Lebeda, Nelson, Pagh) sec. 7.1 "Estimating sigma" and Appendix D (Algorithm 2).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..accounting import PrivacyLedger
from ..engines import Engine
from ..errors import InvalidParameterError
from ..mechanisms import gaussian_mechanism, log_domain_quantile
from ..mechanisms.column_quantiles import column_quantiles
from ..mechanisms.exponential import columns_per_draw
from ..parallel import over_row_ranges
from ..transforms import IDENTITY
from ..validation import length_d_array
from .clipped import release_sums


def quantile_width(engine: Engine, values: int, held: int | None = None) -> int:
    """Columns per block for quantiles of ``values`` values per column, while the engine holds
    ``held`` values per column (default ``values``): a multiple of the exponential mechanism's
    draw block (``columns_per_draw``), so blocking never changes its draws."""
    return engine.column_width(held or values, unit=columns_per_draw(values))


def wilson_hilferty_factor(k: int) -> float:
    """Median of chi^2_k / k by the Wilson-Hilferty approximation, (1 - 2/(9k))^3: the ratio of
    the median of an average of k values sigma^2 chi^2_1 to its mean sigma^2 (Johnson et al.
    1994, (18.24)). 0.4705 for k = 1 (exact: 0.4549, so sigma^2 comes out 3.3 % low)."""
    return (1.0 - 2.0 / (9.0 * k)) ** 3


def pair_std(
    engine: Engine, *, rho: float, ledger: PrivacyLedger, rng: np.random.Generator,
    group_size: int = 1, pairings: int = 1, wilson_hilferty: bool = True,
    quantile: str = "exponential", steps: int = 20, stage: str = "variance",
    log_range: float | None = None, spread_rho: float | None = None,
    secure: bool = False, q: float = 0.5,
) -> np.ndarray:
    """Private standard deviation of every coordinate from differences of random row pairs.

    Rows are paired by a random permutation (drawn here, independent of the data); each pair
    (a, b) gives (a - b)^2 / 2 per coordinate, whose mean is the variance. Averages of
    ``group_size`` = k consecutive pair values form the groups of Algorithm 2, and a private
    median of the group averages per coordinate estimates the variance: for Gaussian data
    (``wilson_hilferty=True``, PLAN sec. 7.1) an average is sigma^2 chi^2_k / k, whose median is
    ``wilson_hilferty_factor(k)`` sigma^2, so the median is divided by it; the generic
    Algorithm 2 (``wilson_hilferty=False``) returns the median of the group averages as it is.
    ``pairings`` > 1 repeats the pairing with fresh permutations (the reference code's "fill")
    and pools all group averages. ``q`` other than 1/2 targets that quantile of the group
    averages instead of the median, divided (Gaussian data) by the exact q-quantile of
    chi^2_k / k (``chi2_quantile_factor``); the spread then bounds that quantile.

    Sensitivity under replace-one: a row sits in one pair per pairing, hence in one group per
    pairing, so each coordinate's ranks move by at most ``pairings``; the exponential
    mechanism's exponent is divided by ``pairings`` (a cost of pairings^2 at equal noise in
    zCDP). The reference code divided the budget by the multiplicity instead of its square
    (and ran on 3 "spread" copies of every row, also charged /3 instead of /9); we use no spread
    rows: the continuous exponential mechanism does not need them. Pair values lie in
    [0, (hi - lo)^2 / 2] for data clamped to the box, the public search domain.

    Budget: ``rho`` charged to ``stage``, rho / d per coordinate.
    """
    if group_size < 1 or pairings < 1:
        raise InvalidParameterError("group_size and pairings must be >= 1")
    groups = (engine.n // 2) // group_size
    if groups < 1:
        raise InvalidParameterError(
            f"pair_std needs at least {2 * group_size} rows for group_size={group_size}"
        )
    # The permutations are drawn first, as before any noise; then each block of coordinates
    # is paired, grouped and privately summarised on its own (all per-coordinate operations).
    orders = [rng.permutation(engine.n) for _ in range(pairings)]
    per_column = groups * pairings

    width = quantile_width(engine, per_column, engine.n * (1 + pairings))
    # The exponential mechanism reads only each column's order statistics, and with groups of
    # one pair v = diff^2 / 2 is a monotone map of |diff|: the engine sorts the magnitudes
    # (by radix for small integers) and the map keeps them sorted, bit for bit the values a
    # sort of v would give.
    presorted = quantile == "exponential" and group_size == 1

    def pooled_blocks():
        if presorted:
            for cols, magnitudes in engine.sorted_pair_magnitude_blocks(orders, width):
                yield cols, _half_squares(magnitudes)
            return
        for cols, diffs in engine.pair_difference_blocks(IDENTITY, orders, width):
            pooled = [_group_means(_half_squares(diff[: groups * group_size]), group_size)
                      for diff in diffs]
            yield cols, pooled[0] if pairings == 1 else np.concatenate(pooled)

    top = 0.5 * (engine.hi - engine.lo) ** 2
    if spread_rho is not None:
        top = np.minimum(top, pair_spread(engine, orders[0], rho=spread_rho, ledger=ledger,
                                          rng=rng, log_range=log_range,
                                          q=max(0.75, (1.0 + q) / 2.0),
                                          stage=f"{stage} spread"))
    lo, floor = 0.0, None
    blocks: Any = pooled_blocks()
    if log_range is not None:
        # The median of log(max(v, floor)) is log of the median of v (a monotone map keeps
        # every rank, so the sensitivity and the cost do not change); only the search measure
        # changes, from uniform in v to uniform in log v.
        floor = top * np.exp(-log_range)
        lo, top = np.log(floor), np.log(top)
        blocks = ((cols, _log_above(v, floor[cols])) for cols, v in blocks)

    def values_of(diffs: np.ndarray) -> np.ndarray:
        # Consecutive pairs' differences (whole groups, all coordinates): their pair values.
        values = _group_means(_half_squares(diffs), group_size)
        return values if floor is None else _log_above(values, floor)

    if quantile == "exponential":
        # Engines whose rows live apart answer by rank where the rows are (None: in blocks).
        k = engine.d
        order = engine.pair_value_order(orders, groups * group_size, group_size, values_of,
                                         np.broadcast_to(lo, (k,)), np.broadcast_to(top, (k,)))
        blocks = blocks if order is None else order
    median = column_quantiles(blocks, engine.d, q, lo, top,
                              rho_each=rho / engine.d, rng=rng, ledger=ledger, stage=stage,
                              method=quantile, steps=steps, sensitivity=pairings,
                              secure=secure, presorted=presorted)
    if log_range is not None:
        median = np.exp(median)
    if wilson_hilferty:
        median = median / (wilson_hilferty_factor(group_size) if q == 0.5
                           else chi2_quantile_factor(q, group_size))
    return np.sqrt(median)


def chi2_quantile_factor(q: float, k: int) -> float:
    """The q-quantile of chi^2_k / k: the ratio of the q-quantile of an average of k values
    sigma^2 chi^2_1 to its mean sigma^2 (exact; 1.3233 for q = 3/4 and k = 1)."""
    # scipy.stats.chi2.ppf's own formula, without importing scipy.stats (0.6 s of start-up).
    from scipy.special import gammaincinv

    return float(2.0 * gammaincinv(k / 2.0, q) / k)


def _half_squares(diff: np.ndarray) -> np.ndarray:
    """diff^2 / 2, written into ``diff`` (a fresh block of the engine's: ours to overwrite),
    its columns shared among the cores (value by value: the same bits however split)."""
    def part(cols: slice) -> None:
        np.square(diff[:, cols], out=diff[:, cols])
        diff[:, cols] *= 0.5

    over_row_ranges(diff.shape[1], part, values=diff.size)
    return diff


def _group_means(values: np.ndarray, size: int) -> np.ndarray:
    """Means of ``size`` consecutive rows of ``values`` (a multiple of ``size`` rows); the rows
    themselves when size is 1 (a mean of one value is that value, bit for bit)."""
    if size == 1:
        return values
    return values.reshape(-1, size, values.shape[1]).mean(axis=1)


def _log_above(values: np.ndarray, floor: np.ndarray) -> np.ndarray:
    """log(max(values, floor)) (``floor`` one per column), written into ``values``, its
    columns shared among the cores (value by value: the same bits however split)."""
    floor = np.broadcast_to(floor, values.shape[-1:])

    def part(cols: slice) -> None:
        np.maximum(values[..., cols], floor[cols], out=values[..., cols])
        np.log(values[..., cols], out=values[..., cols])

    over_row_ranges(values.shape[-1], part, values=values.size)
    return values


def pair_quantile_resolves(n: int, d: int, rho: float, q: float, *, log_range: float,
                           beta: float, group_size: int = 1, pairings: int = 1) -> bool:
    """``pair_median_resolves`` for the q-quantile (q >= 1/2): the empty top of the domain
    lies at rank distance (1 - q) m from the target instead of m / 2, so the same bound asks
    eps (1 - q) m / 2 >= ln(log_range / beta) + ln(d) / 4 (twice the median's budget at
    q = 3/4)."""
    eps = np.sqrt(8.0 * rho / d) / pairings
    m = pairings * ((n // 2) // group_size)
    return bool(eps * (1.0 - q) * m / 2.0 >= np.log(log_range / beta) + 0.25 * np.log(d))


def pair_median_resolves(n: int, d: int, rho: float, *, log_range: float, beta: float,
                         group_size: int = 1, pairings: int = 1) -> bool:
    """Whether ``pair_std`` on log pair values can place its d medians: public (n, d, rho).

    Each coordinate's exponential mechanism (eps = sqrt(8 rho / d), exponent divided by
    ``pairings``) over m = pairings * floor(n / 2 / group_size) group values puts at most
    (W / w) exp(-eps m / 4) of its mass, relative to the nat-wide middle of the data, on the
    empty ends of its domain (W = ``log_range`` nats wide, at rank distance >= m / 2 from the
    median), so the expected number of the d coordinates whose search lands there is at most
    d (W / w) exp(-eps m / 4). We ask that to be at most beta d^(3/4):
    eps m / 4 >= ln(log_range / beta) + ln(d) / 4. Below that, noisy variances cost more than
    scaling by them gains where there is no skew. The d^(3/4) is a choice measured on PLAN's
    grids, not a theorem: d^(1/2) also skipped the variances of Gaussian C at d = 2048,
    rho = 1/16 (eps m / 4 = 8.2), where they halve the error; d^1 kept them at Gaussian A,
    d = 1024, rho = 1/8 (6.6), where they cost 30 %.
    """
    return pair_quantile_resolves(n, d, rho, 0.5, log_range=log_range, beta=beta,
                                  group_size=group_size, pairings=pairings)


def pair_spread(
    engine: Engine, order: np.ndarray, *, rho: float, ledger: PrivacyLedger,
    rng: np.random.Generator, log_range: float | None = None, q: float = 0.75,
    stage: str = "variance spread",
) -> float:
    """A private upper bound on every coordinate's median pair value: the private q-quantile
    (q = 3/4) of the pairs' half squared distances s = ||a - b||^2 / 2 (pairs of ``order``).

    Each coordinate's pair value (a_j - b_j)^2 / 2 is at most s, so its median is at most the
    median of s, and the 3/4-quantile leaves a margin of n/8 ranks for the mechanism's error.
    Bounding the per-coordinate searches by it (instead of the box's (hi - lo)^2 / 2) takes
    the empty top of a loose box out of their domains, and caps any noisy variance by the
    total variance of the data. One exponential mechanism on [0, ||hi - lo||^2 / 2] (on log s
    over ``log_range`` nats below the top when given): a row sits in one pair, so replacing
    it moves one value, sensitivity 1. Budget: ``rho`` charged to ``stage``.
    """
    _, squared = pair_distances(engine, order)
    top = 0.5 * float(np.sum((engine.hi - engine.lo) ** 2))
    return log_domain_quantile(0.5 * squared, q, top, log_range, rho=rho, rng=rng,
                               ledger=ledger, stage=stage)


def pair_distances(engine: Engine, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For the disjoint row pairs (a, b) of ``order``: ||a - b||_1 and ||a - b||_2^2 of the
    clamped rows, each of length n // 2 (``Engine.pair_distances``), in one pass over the
    columns. Exact statistics: only a mechanism may release anything computed from them."""
    return engine.pair_distances(order)


def noisy_mean(
    engine: Engine, *, rho: float, ledger: PrivacyLedger, rng: np.random.Generator, stage: str,
    secure: bool = False,
) -> np.ndarray:
    """The Gaussian mechanism on the plain mean of the clamped rows (for binary data: the item
    frequencies). Sensitivity under replace-one: ||hi - lo||_2 / n (sqrt(d) / n for baskets in
    {0, 1}^d), the most one row can move the mean. Budget: ``rho`` charged to ``stage``."""
    sensitivity = float(np.linalg.norm(engine.hi - engine.lo)) / engine.n
    total = box_sum(engine, np.inf, sensitivity, rho, secure=secure)
    return gaussian_mechanism(total / engine.n, sensitivity, rho, rng, ledger=ledger,
                              stage=stage, secure=secure)


def box_sum(engine: Engine, radius: float, sensitivity: float, rho: float, *,
            secure: bool) -> np.ndarray:
    """The sum of the clamped rows, each clipped to l2 ``radius`` (inf: not clipped), for a
    release of their mean at ``sensitivity`` and ``rho`` (``clipped.release_sums``; each
    coordinate at most the box's largest magnitude)."""
    bound = float(np.max(np.maximum(np.abs(engine.lo), np.abs(engine.hi))))
    return release_sums(engine, IDENTITY, [(0.0, radius)], [(sensitivity, rho)],
                        secure=secure, bound=bound)[0]


def pooled_noisy_mean(
    engine: Engine, budget: dict[str, float], stages: tuple[str, ...], *,
    ledger: PrivacyLedger, rng: np.random.Generator, secure: bool = False,
) -> np.ndarray:
    """``noisy_mean`` released once for each of ``stages`` that ``budget`` plans, averaged with
    inverse-variance weights (noise variance ~ 1 / rho): as accurate as one release with their
    summed budget (post-processing). Each stage is charged its own plan."""
    stages = tuple(stage for stage in stages if stage in budget)
    releases = np.array([noisy_mean(engine, rho=budget[stage], ledger=ledger, rng=rng,
                                    stage=stage, secure=secure) for stage in stages])
    weights = np.array([budget[stage] for stage in stages])
    return np.tensordot(weights / weights.sum(), releases, axes=1)


def bernoulli_floor(d: int) -> float:
    """How far from 0 and 1 the private frequencies are clamped: d^-0.4, the reference code's
    value for the minimum probability of PLAN's Lemma 5.3 (capped at 1/4 for tiny d)."""
    return min(float(d) ** -0.4, 0.25)


def bernoulli_std(
    frequencies: np.ndarray, lo: np.ndarray, hi: np.ndarray, floor: float,
) -> np.ndarray:
    """Standard deviations of two-valued coordinates (values lo_j or hi_j) from private
    frequencies: p = (f - lo) / (hi - lo) clamped to [floor, 1 - floor], sigma = (hi - lo)
    sqrt(p (1 - p)). Post-processing, no budget. The clamp keeps noisy frequencies of rare items
    (which may come out negative) from giving sigma = 0 and an infinite scale."""
    p = np.clip((frequencies - lo) / (hi - lo), floor, 1.0 - floor)
    return (hi - lo) * np.sqrt(p * (1.0 - p))


def binary_std(
    engine: Engine, *, rho: float, ledger: PrivacyLedger, rng: np.random.Generator,
    floor: float | None = None, stage: str = "variance", secure: bool = False,
) -> np.ndarray:
    """Private standard deviations for binary data (PLAN sec. 7.1): per-item frequencies by the
    Gaussian mechanism (``noisy_mean``, budget ``rho`` on ``stage``), then ``bernoulli_std``
    with ``floor`` (default ``bernoulli_floor(d)``). Works on the SparseEngine in O(nnz + d)."""
    frequencies = noisy_mean(engine, rho=rho, ledger=ledger, rng=rng, stage=stage, secure=secure)
    floor = bernoulli_floor(engine.d) if floor is None else floor
    return bernoulli_std(frequencies, engine.lo, engine.hi, floor)


def known_std(std: Any, d: int) -> np.ndarray:
    """Caller-supplied standard deviations (public knowledge, no budget spent): a positive
    number or a length-d array of positive finite numbers."""
    arr = length_d_array(std, d, "std must be a positive number")
    if not (np.isfinite(arr).all() and (arr > 0).all()):
        raise InvalidParameterError("std must be finite and > 0 in every coordinate")
    return arr
