"""Private quantiles by the exponential mechanism over the gaps between order statistics.

Smith (2011), in the form of Kaplan, Schnapp and Stemmer (2022); PLAN (Aumuller et al.) sec. 7.1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..accounting import PrivacyLedger
from ..errors import InvalidParameterError
from ..events import exponential_event
from ..parallel import over_row_ranges, sort_columns


def exponential_epsilon(rho: float) -> float:
    """The epsilon of an exponential mechanism that is ``rho``-zCDP: an epsilon-DP exponential
    mechanism is epsilon^2/8-zCDP (accounting.exponential_mechanism_zcdp), so sqrt(8 rho)."""
    if not (np.isfinite(rho) and rho > 0):
        raise InvalidParameterError(f"the exponential mechanism needs rho > 0, got {rho}")
    return float(np.sqrt(8.0 * rho))


def as_columns(values: np.ndarray, lo, hi) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Values as an (m, k) float array of columns (a 1-D array is one column) and the domain
    bounds broadcast to length k: the shape every column-wise quantile takes."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    k = values.shape[1]
    lo = np.broadcast_to(np.asarray(lo, dtype=np.float64), (k,))
    hi = np.broadcast_to(np.asarray(hi, dtype=np.float64), (k,))
    return values, lo, hi


def exponential_quantile(
    values: np.ndarray,
    q: float,
    lo: np.ndarray | float,
    hi: np.ndarray | float,
    *,
    rho: float,
    rng: np.random.Generator,
    ledger: PrivacyLedger,
    stage: str,
    sensitivity: float = 1.0,
) -> np.ndarray:
    """A private q-quantile of each column of ``values`` (shape (n, k), or (n,) for k = 1; the
    rows in any order), column j on the public interval [lo_j, hi_j]; returns shape (k,).

    The values are clamped to [lo, hi] and, with lo and hi at the ends, cut the interval into
    n + 1 gaps; gap i (between the i-th and (i+1)-th smallest value) is chosen with probability
    proportional to width_i * exp(eps * u(i) / (2 * sensitivity)), u(i) = -|i - q n|, and the
    output is uniform inside it; besides the gaps, the ends lo and hi themselves are outputs,
    each with weight (hi - lo) / (n + 1) (one average gap) times exp(eps * u / (2 *
    sensitivity)), u = -dist(q n, [#{x < t}, #{x <= t}]) at t = lo or hi. That is the
    exponential mechanism with the public base measure Lebesgue on [lo, hi] plus those two
    atoms, and utility u(t) = -dist(q n, [#{x < t}, #{x <= t}]) (-|#{x < t} - q n| almost
    everywhere). The atoms answer where the target rank lies inside a run of values tied at an
    end (0/1 columns, values clamped to the box, pair values of 0 at a log search's floor):
    every gap there has width 0, and without them the draw fell in the nearest gap of positive
    width, however far in rank (PLAN's spread of a fair coin came out near 0, not 1/2, and its
    release of the coin's mean 0.26 instead of 0.5 at any budget).

    Sensitivity under replace-one neighbours: replacing one value changes #{x < t} and
    #{x <= t} by at most 1 for every t, so the utility changes by at most 1 (``sensitivity=1``,
    the default); the base measure depends on n and the domain only (public). The
    add/remove bound max(q, 1 - q) that the reference code uses belongs to a different neighbour
    relation (n changes there). A caller that feeds each person into s values passes
    ``sensitivity=s``: ranks then move by up to s, and the mechanism stays rho-zCDP only with
    the exponent divided by s, i.e. an s^2 times larger cost at equal noise.

    Privacy: each column's quantile is eps-DP with eps = sqrt(8 rho), hence ``rho``-zCDP; the k
    columns together cost k * rho, charged to ``stage`` before the first draw.

    Sampling: exact in distribution, in O(n) per column without sorting it (``_draw``): only
    the gaps within ``window_half_width`` ranks of q n are weighed exactly, the rest by
    rejection. A zero-width gap (tied values) has probability exactly 0, as in the mechanism's
    definition (the reference code floors widths at 1e-30 instead, which gives such gaps
    positive probability). ``values`` is read, never written (the reference wrapper sorted its
    input in place, reordering the caller's columns).
    """
    checked = as_columns(values, lo, hi)
    _check_exponential(rho, q, sensitivity)
    _check_domain(checked[0].shape[0], checked[1], checked[2])  # before the charge
    # Each column: an eps-DP exponential mechanism with eps = sqrt(8 rho), whose zCDP cost
    # eps^2 / 8 (bounded range) is rho: k columns cost k rho.
    ledger.charge(stage, checked[0].shape[1] * rho,
                  exponential_event(rho, checked[0].shape[1]))
    return exponential_draws(*checked, q, rho=rho, rng=rng, sensitivity=sensitivity)


# The buckets of ``log_domain_quantile``: 1/1024 of a nat wide (a value's resolution 0.1 %), and
# at most 2^16 of them, so that a very wide log range (a public option) costs bounded memory.
LOG_BUCKET = 1.0 / 1024.0
MAX_LOG_BUCKETS = 1 << 16


def log_bucket_count(log_range: float) -> int:
    """How many buckets ``log_bucket_quantile`` chooses among over ``log_range`` nats: the
    mechanism's outputs, whose number its rank error bound grows with. Public."""
    return min(int(np.ceil(log_range / LOG_BUCKET)), MAX_LOG_BUCKETS)


def log_domain_quantile(
    values: np.ndarray, q: float, top: float, log_range: float | None, *, rho: float,
    rng: np.random.Generator, ledger: PrivacyLedger, stage: str, buckets: int | None = None,
    middle: bool = False,
) -> float:
    """A private q-quantile of non-negative ``values`` (one per person: sensitivity 1) by the
    exponential mechanism on [0, top], or, with ``log_range``, on log v over
    [log(top) - log_range, log(top)] in public buckets (``log_bucket_quantile``; ``buckets``
    of them, by default ``log_bucket_count(log_range)``; ``middle``: the chosen bucket's
    geometric middle rather than its top).

    log is monotone, so every rank, the utility and its sensitivity are the mechanism's on v;
    only the base measure changes, from uniform in v to uniform in log v: the empty stretch
    between the data and a loose ``top`` then weighs its width in nats, not in units of v.
    Budget: ``rho`` (eps = sqrt(8 rho)), charged to ``stage``.
    """
    if log_range is None:
        return float(exponential_quantile(values, q, 0.0, top, rho=rho, rng=rng,
                                          ledger=ledger, stage=stage)[0])
    return log_bucket_quantile(values, q, top, log_range, rho=rho, rng=rng, ledger=ledger,
                               stage=stage, buckets=buckets, middle=middle)


def log_bucket_quantile(
    values: np.ndarray, q: float, top: float, log_range: float, *, rho: float,
    rng: np.random.Generator, ledger: PrivacyLedger, stage: str, buckets: int | None = None,
    middle: bool = False,
) -> float:
    """A private q-quantile of the m non-negative ``values`` (one per person) on log v over
    [log(top) - log_range, log(top)], cut into K public buckets of ``LOG_BUCKET`` nats (fewer
    and wider where log_range / LOG_BUCKET exceeds ``MAX_LOG_BUCKETS``), or into ``buckets``
    equal ones (a public count: PLAN's ``threshold_buckets``).

    Values below the floor top e^-log_range count in the first bucket, values above ``top`` in
    the last. Bucket b, holding the ranks (L_b, U_b] (L_b values in the buckets below it, U_b
    in it and below), is chosen with probability proportional to exp(eps u_b / 2), u_b =
    -dist(q m, [L_b, U_b]); the output is its top, e^edges_b+1 (the callers ask for upper
    bounds: PLAN's clipping threshold, the spread that bounds its coordinates' pair values;
    rounding up moves a median by at most ``LOG_BUCKET``, 0.1 %).

    Why buckets and not the gaps between order statistics (``exponential_quantile`` on log v,
    Smith's mechanism, used here before): a run of tied values is a gap of width 0, which that
    mechanism never chooses, so where the target rank lay inside a tie in the middle of the
    data (the row norms of one-hot rows, the pair distances of categorical rows: a few distinct
    values each) its draw fell in the nearest gap of positive width, up to tens of nats away.
    PLAN's threshold on one-hot rows of 32 Zipf categories (n = 5000, rho = 0.5) came out up
    to 4.5 times the norm it targets (RMSE 0.0106 -> 0.0039 over 20 releases,
    scripts/categorical_rows.py), and auto's pair medians fell tens of nats below the data and
    predicted IOME and PLAN no noise. A bucket holding the tie holds the target rank (u = 0).
    On data without ties the buckets are finer than the mechanism's rank error, and PLAN's
    errors on its Gaussian grids stayed within 10 releases' spread (docs/results.md, "Ties and
    the log-domain quantile").

    Privacy: replacing one value moves L_b and U_b by at most 1 for every b, so u_b by at most
    1 (sensitivity 1); the buckets depend on ``top`` and ``log_range`` only (public). An
    eps-DP, eps-bounded-range exponential mechanism with eps = sqrt(8 rho): ``rho``-zCDP,
    charged to ``stage``.
    """
    _check_exponential(rho, q, 1.0)
    if not (np.isfinite(top) and top > 0 and np.isfinite(log_range) and log_range > 0):
        raise InvalidParameterError(f"the log-domain quantile needs a finite top > 0 and "
                                    f"log_range > 0, got {top} and {log_range}")
    buckets = log_bucket_count(log_range) if buckets is None else buckets
    edges = np.log(top) - log_range + (log_range / buckets) * np.arange(buckets + 1)
    edges[-1] = np.log(top)  # the last edge is the top's, not a rounding above it
    ledger.charge(stage, rho, exponential_event(rho))
    return min(bucket_draw(values, q, edges, rho=rho, rng=rng, middle=middle), float(top))


def bucket_draw(values: np.ndarray, q: float, edges: np.ndarray, *, rho: float,
                rng: np.random.Generator, middle: bool = False) -> float:
    """``log_bucket_quantile``'s draw without its charge: the buckets [edges_b, edges_b+1) of
    log v (public, ascending), the first also holding every value below it, the last every
    value above it; the bucket chosen by the exponential mechanism (eps = sqrt(8 rho), utility
    -dist(q m, [L_b, U_b])), and its top as v (with ``middle``, its geometric middle: post-
    processing of the choice). Its utility is a function of the
    counts #{v < e^edges_b}, which replacing one value moves by at most 1."""
    floor = edges[0]
    buckets = edges.size - 1
    logs = np.log(np.maximum(np.asarray(values, dtype=np.float64).ravel(), np.exp(floor)))
    which = np.clip(np.searchsorted(edges, logs, side="right") - 1, 0, buckets - 1)
    counts = np.bincount(which, minlength=buckets)
    upper = np.cumsum(counts)  # U_b
    lower = upper - counts  # L_b
    target = q * logs.size
    utility = -np.maximum(0.0, np.maximum(lower - target, target - upper))
    totals = _cumulative_weights(exponential_epsilon(rho) / 2.0 * utility[None, :])[0]
    chosen = min(int(np.searchsorted(totals, rng.uniform() * totals[-1], side="right")),
                 buckets - 1)
    if middle:
        return float(np.exp(edges[chosen] / 2.0 + edges[chosen + 1] / 2.0))
    return float(np.exp(edges[chosen + 1]))


def _check_exponential(rho: float, q: float, sensitivity: float) -> None:
    exponential_epsilon(rho)  # validates rho
    if not (np.isfinite(sensitivity) and sensitivity > 0):
        raise InvalidParameterError(f"sensitivity must be finite and > 0, got {sensitivity}")
    if not 0.0 <= q <= 1.0:
        raise InvalidParameterError(f"the quantile q must lie in [0, 1], got {q}")


@runtime_checkable
class OrderStatistics(Protocol):
    """Columns read by sorted position, without handing them over whole: what an engine that
    cannot bring n-long columns to one place (Dask) gives the exponential mechanism, which
    reads only the ranks near its target (and, rarely, one column's whole side).

    ``shape`` is (n, k): n values in each of k columns."""

    shape: tuple[int, int]

    def positions(self, start: int, stop: int, cols: slice) -> np.ndarray:
        """The values at sorted positions start..stop-1 (0-based, ascending) of each column in
        ``cols``: (len(cols), stop - start), one column per row."""
        ...

    def runs(self, start: int, stop: int, col: int) -> tuple[np.ndarray, np.ndarray]:
        """Sorted positions start..stop-1 of column ``col`` as runs of one value: (values,
        firsts), run r holding ``values[r]`` at positions firsts[r] up to the next run's first
        (or stop); firsts[0] = start. Neighbouring runs may hold equal values (a run may be
        one position: ``positions_as_runs``)."""
        ...


def positions_as_runs(values: np.ndarray, start: int) -> tuple[np.ndarray, np.ndarray]:
    """The sorted positions start.. holding ``values``, as ``OrderStatistics.runs`` of one
    position each: for holders of sorted values that know no shorter form."""
    return values, np.arange(start, start + values.size)


@dataclass(frozen=True)
class _SortedWindow:
    """What ``_draw`` reads of b sorted columns of n values: ``values`` (b, w), their sorted
    positions start..start+w-1, and ``runs(row, start, stop)`` (``OrderStatistics.runs``) for
    any other positions of one column (the outside of the window, read only when a draw lands
    there)."""

    values: np.ndarray
    start: int
    n: int
    runs: Callable[[int, int, int], tuple[np.ndarray, np.ndarray]]

    @classmethod
    def of_sorted(cls, rows: np.ndarray, window: tuple[int, int]) -> _SortedWindow:
        """The window of rows (b, n), each sorted ascending, held whole in memory."""
        n = rows.shape[1]
        start, stop = _window_positions(n, window)
        return cls(rows[:, start:stop], start, n,
                   lambda row, a, b: positions_as_runs(rows[row, a:b], a))


def _window_positions(n: int, window: tuple[int, int]) -> tuple[int, int]:
    """The sorted positions [start, stop) that the gaps first..last of ``window`` border."""
    first, last = window
    return max(first - 1, 0), min(last, n - 1) + 1


def exponential_draws(
    values: np.ndarray | OrderStatistics, lo: np.ndarray, hi: np.ndarray, q: float, *,
    rho: float, rng: np.random.Generator, sensitivity: float = 1.0, presorted: bool = False,
) -> np.ndarray:
    """``exponential_quantile``'s draws without its charge, on columns already shaped by
    ``as_columns``: for a mechanism that charges all its columns once and then draws them block
    by block; the caller charges. ``presorted``: every column is sorted ascending already (the
    draws depend on the order statistics alone, so they are the same).

    ``values`` may also be an ``OrderStatistics``: the window's ranks of all k columns are read
    at once (k x O(window) values), and a column's outside only when a draw lands there; the
    draws are those of the same columns given whole."""
    _check_exponential(rho, q, sensitivity)
    eps = exponential_epsilon(rho)
    n, k = values.shape
    _check_domain(n, lo, hi)
    decay = eps / (2.0 * sensitivity)
    target = q * n
    window = gap_window(n, target, window_half_width(n, decay))
    out = np.empty(k)
    # Blocks of columns, sorted into a copy one column per row (the caller's array is never
    # written): temporaries stay about _BLOCK_VALUES doubles. Sorted whole, not selected around
    # the target (sort_columns says why): at PLAN's budgets the window covers whole columns.
    step = columns_per_draw(n)
    if isinstance(values, OrderStatistics):
        order = values
        start, stop = _window_positions(n, window)
        inside = order.positions(start, stop, slice(0, k))
        for first in range(0, k, step):
            cols = slice(first, min(first + step, k))
            column = partial(_column_runs, order, cols.start)
            out[cols] = _draw(_SortedWindow(inside[cols], start, n, column), lo[cols],
                              hi[cols], target, decay, window, rng)
        return out
    assert isinstance(values, np.ndarray)
    for start in range(0, k, step):
        cols = slice(start, min(start + step, k))
        rows = (np.ascontiguousarray(values[:, cols].T) if presorted
                else sort_columns(values[:, cols]))
        out[cols] = _draw(_SortedWindow.of_sorted(rows, window), lo[cols], hi[cols], target,
                          decay, window, rng)
    return out


def _column_runs(order: OrderStatistics, offset: int, row: int, start: int,
                 stop: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted positions start..stop-1 of column ``offset + row`` of ``order``, as runs."""
    return order.runs(start, stop, offset + row)


_BLOCK_VALUES = 1 << 21


def columns_per_draw(n: int) -> int:
    """How many columns of n values ``exponential_quantile`` draws for at once. Calling it on
    consecutive column blocks whose widths are multiples of this (the last one excepted) draws
    exactly what one call on all the columns draws, from the same generator."""
    return max(1, _BLOCK_VALUES // (n + 2))


# ln of the margin by which the gaps outside the window are outweighed (see window_half_width).
_WINDOW_LOG_ODDS = 30.0


def window_half_width(n: int, decay: float) -> int:
    """How many ranks on each side of the target the sampler weighs exactly, for the exponent
    ``decay`` = eps / (2 sensitivity): W = (ln(n + 1) + 30) / decay, at most n + 1.

    Public (n, eps and the sensitivity only), and it only sets the speed, never the output's
    distribution. A gap more than W ranks away has weight at most e^-30 / (n + 1) times its
    width, so the outside is weighed with probability below 1e-9 unless the gaps next to the
    target are more than 10^4 times narrower than the average gap (hi - lo) / (n + 1)."""
    return int(min(n + 1.0, np.ceil((np.log(n + 1.0) + _WINDOW_LOG_ODDS) / decay)))


def gap_window(n: int, target: float, half_width: int) -> tuple[int, int]:
    """First and last gap (of gaps 0..n) within ``half_width`` ranks of ``target``."""
    return (max(0, int(np.floor(target)) - half_width),
            min(n, int(np.ceil(target)) + half_width))


# The parts of a row's outputs the sampler chooses between first: the window's gaps, the gaps
# LEFT and RIGHT of it, and the atoms at the domain's ends (``_end_atoms``).
_WINDOW, _LEFT, _RIGHT, _AT_LO, _AT_HI = 0, 1, 2, 3, 4
_PARTS = 5


def _check_domain(n: int, lo: np.ndarray, hi: np.ndarray) -> None:
    """Refuse domains the sampler cannot weigh (public: n and the domain): lo >= hi, an
    infinite width, or an end atom (``atom_weight``) below the smallest normal double."""
    if not (lo < hi).all():
        raise InvalidParameterError("the exponential quantile needs lo < hi on every column")
    if not np.isfinite(hi - lo).all():
        # The ends' atoms weigh (hi - lo) / (n + 1): an infinite width made every part's
        # weight NaN and the sampler retry for ever (the final review: (-1e308, 1e308)).
        raise InvalidParameterError("the exponential quantile needs a finite width hi - lo on "
                                    "every column")
    if not (atom_weight(n, lo, hi) >= np.finfo(np.float64).tiny).all():
        # An atom's weight underflowed to 0, its log to -inf, the weights to NaN, and the
        # sampler retried for ever after the charge (a review: the domain (0, 1e-323)).
        raise InvalidParameterError(
            "the exponential quantile needs a domain wider than (n + 1) times the smallest "
            "normal double (2.2e-308) on every column")


def atom_weight(n: int, lo: Any, hi: Any) -> Any:
    """The base measure's mass at each end of the domain [lo, hi]: one average gap, (hi - lo) /
    (n + 1). Public (n and the domain)."""
    return (hi - lo) / (n + 1.0)


def _end_atoms(rows: _SortedWindow, lo: np.ndarray, hi: np.ndarray, target: float,
               decay: float) -> tuple[np.ndarray, np.ndarray]:
    """The log weights of the atoms at lo and at hi of each row, (b, 2), and whether each is
    exact (else an upper bound, refined by ``_exact_atom`` when the sampler lands on it).

    The atom at lo has utility -dist(q n, [0, c_lo]), c_lo = #{x <= lo}, the number of values
    clamped to lo: 0 when the target rank lies inside that run of ties. The window holds sorted
    positions start..stop-1; every position before a window value <= lo is <= lo too, so c_lo
    is start plus the window's values <= lo when there is one (or start = 0); else c_lo <= start
    bounds the utility by -(q n - start). Likewise at hi with c_hi = #{x >= hi} and the ranks
    [n - c_hi, n]. A run that fills the window reaches past the target (the window spans at
    least one rank beyond it on each side, or the column's end), so its utility is 0 exactly."""
    values, start, n = rows.values, rows.start, rows.n
    stop = start + values.shape[1]
    log_w = np.log(atom_weight(n, lo, hi))
    at_lo = np.count_nonzero(values <= lo[:, None], axis=1)
    at_hi = np.count_nonzero(values >= hi[:, None], axis=1)
    low_rank = np.where((at_lo > 0) | (start == 0), start + at_lo, start)
    high_rank = np.where((at_hi > 0) | (stop == n), stop - at_hi, stop)
    log_weights = np.stack([log_w - decay * np.maximum(0.0, target - low_rank),
                            log_w - decay * np.maximum(0.0, high_rank - target)], axis=1)
    exact = np.stack([(at_lo > 0) | (start == 0), (at_hi > 0) | (stop == n)], axis=1)
    return log_weights, exact


def _exact_atom(rows: _SortedWindow, row: int, side: int, lo: float, hi: float,
                target: float, decay: float) -> float:
    """The exact log weight of the atom at lo (``side`` 0) or hi (1) of ``row``, from the
    positions outside the window (read only when a draw lands on an atom bounded by
    ``_end_atoms``)."""
    n, stop = rows.n, rows.start + rows.values.shape[1]
    log_w = float(np.log(atom_weight(n, lo, hi)))
    if side == 0:
        values, firsts = rows.runs(row, 0, rows.start)
        above = np.flatnonzero(values > lo)
        count = int(firsts[above[0]]) if above.size else rows.start
        return log_w - decay * max(0.0, target - count)
    values, firsts = rows.runs(row, stop, n)
    below = np.flatnonzero(values < hi)
    # Positions from the first run at hi on: after the last run below hi.
    rank = stop if not below.size else (int(firsts[below[-1] + 1]) if below[-1] + 1 < firsts.size
                                        else n)
    return log_w - decay * max(0.0, rank - target)


def _draw(
    rows: _SortedWindow, lo: np.ndarray, hi: np.ndarray, target: float, decay: float,
    window: tuple[int, int], rng: np.random.Generator,
) -> np.ndarray:
    """One draw per column of ``rows`` (b columns of n values, sorted, read through their
    window), exact by rejection sampling, vectorised over the columns.

    The gaps first..last of ``window`` get their exact weights p_i = width_i e^(-decay |i -
    target|), in total S_W; the gaps left of it, together, the bound U_L = (x_(first) - lo)
    e^(-decay (target - first + 1)) >= S_L, their exact total (their widths add up to x_(first)
    - lo and each is at least that far from the target); likewise U_R >= S_R on the right. An
    attempt picks WINDOW, LEFT or RIGHT with probabilities proportional to S_W, U_L, U_R, then
    a gap of that part with probability p_i / S (S its exact total); a LEFT (RIGHT) gap is kept
    with probability S_L / U_L, else the row tries again with U_L replaced by S_L, so a row
    tries at most three times. Proof of exactness: whatever the bounds in force, an attempt
    returns each gap i with probability p_i / Z' (window gaps as (S_W / Z')(p_i / S_W), outside
    ones as (U / Z')(p_i / S)(S / U)) and otherwise restarts; so the gap it finally returns has
    probability p_i / sum_j p_j. The output is then uniform inside it.

    Each choice is an inverse-CDF draw on cumulative weights (``first_above``): a zero-width
    gap (tied values) adds nothing to them and has probability exactly 0, as in the mechanism's
    definition. The window's weights are its widths over the row's window span times the
    public factors e^(-decay |i - target|) >= e^-(ln(n + 1) + 31) (no log or exp per gap, no
    overflow); the three parts compare in logs.

    The atoms at lo and hi are two more parts, with their exact weights where the window shows
    the run at that end (or reaches it), else a bound kept with probability exact / bound as
    the sides are (``_end_atoms``, ``_exact_atom``); an atom chosen outputs its end.

    Randomness: per attempt three uniforms per row still trying (part, gap, keep), then one
    uniform per row (the position in its gap): a function of the block's columns alone, as
    ``columns_per_draw`` needs."""
    b, n = rows.values.shape[0], rows.n
    first, last = window
    factors = np.exp(-decay * np.abs(np.arange(first, last + 1) - target))
    cumulative = np.empty((b, last - first + 1))
    log_parts = np.full((b, _PARTS), -np.inf)  # log S_W, log U_L, log U_R, the two atoms
    log_parts[:, _AT_LO:], atom_exact = _end_atoms(rows, lo, hi, target, decay)

    # Imported here: numba's import costs the CLI's start-up a second.
    from .exponential_kernels import first_above, window_weights

    edge_first, edge_last = np.empty(b), np.empty(b)

    def weigh(part: slice) -> None:
        window_weights(rows.values, lo, hi, factors, first == 0, last == n, cumulative,
                       edge_first, edge_last, part.start, part.stop)
        span = edge_last[part] - edge_first[part]
        span[span == 0.0] = 1.0  # as window_weights: all the weights are 0 anyway
        with np.errstate(divide="ignore"):
            log_parts[part, _WINDOW] = np.log(cumulative[part, -1]) + np.log(span)
            if first > 0:
                log_parts[part, _LEFT] = (np.log(edge_first[part] - lo[part])
                                          - decay * (target - first + 1))
            if last < n:
                log_parts[part, _RIGHT] = (np.log(hi[part] - edge_last[part])
                                           - decay * (last + 1 - target))

    over_row_ranges(b, weigh, values=cumulative.size)
    start, width = np.empty(b), np.empty(b)
    regions: dict[tuple[int, int], tuple[Any, ...]] = {}  # built on first use
    pending = np.arange(b)
    while pending.size:
        uniform = rng.uniform(size=(pending.size, 3))
        parts = _cumulative_weights(log_parts[pending])
        chosen = first_above(parts, np.arange(pending.size), uniform[:, 0])
        retry = [pending[chosen == _PARTS]]  # u x total rounded up to the total: draw again
        for side, part in enumerate((_AT_LO, _AT_HI)):
            for k in np.flatnonzero(chosen == part):
                at = int(pending[k])
                if not atom_exact[at, side]:
                    # A bound: kept with probability exact / bound, else tried again with the
                    # exact weight (as the sides' regions below).
                    exact = _exact_atom(rows, at, side, lo[at], hi[at], target, decay)
                    keep = uniform[k, 2] < np.exp(exact - log_parts[at, part])
                    log_parts[at, part], atom_exact[at, side] = exact, True
                    if not keep:
                        retry.append(np.array([at]))
                        continue
                start[at], width[at] = (lo[at] if side == 0 else hi[at]), 0.0
        in_window = chosen == _WINDOW
        rows_in = pending[in_window]
        gaps = first_above(cumulative, rows_in, uniform[in_window, 1])
        placed = gaps < cumulative.shape[1]
        retry.append(rows_in[~placed])
        rows_in, gaps = rows_in[placed], gaps[placed]
        gap_edges = _window_edges_at(rows, lo, hi, first, rows_in, gaps)
        start[rows_in], width[rows_in] = gap_edges[0], gap_edges[1] - gap_edges[0]
        outside = (chosen == _LEFT) | (chosen == _RIGHT)
        keys = list(zip(pending[outside].tolist(), (chosen[outside] - _LEFT).tolist(),
                        strict=True))
        missing = [key for key in keys if key not in regions]
        if missing:
            regions.update(_outside_regions(rows, missing, lo, hi, target, decay, window))
        u_gap, u_keep = uniform[outside, 1], uniform[outside, 2]
        keep_odds = np.exp(np.array([regions[key][3] for key in keys])
                           - log_parts[pending[outside], chosen[outside]])
        for i, (row, side) in enumerate(keys):
            region_starts, region_widths, region, log_total = regions[row, side]
            gap = int(np.searchsorted(region, u_gap[i] * region[-1], side="right"))
            if gap < region.size and u_keep[i] < keep_odds[i]:
                start[row], width[row] = region_starts[gap], region_widths[gap]
            else:
                log_parts[row, side + 1] = log_total  # the bound, refined to the exact total
                retry.append(np.array([row]))
        pending = np.sort(np.concatenate(retry)).astype(np.intp)
    return start + rng.uniform(size=b) * width


def _cumulative_weights(log_weights: np.ndarray) -> np.ndarray:
    """Running totals along each row of the weights exp(log_weights), scaled so that each row's
    largest weight is 1 (no overflow; -inf gives weight 0)."""
    return np.cumsum(np.exp(log_weights - log_weights.max(axis=1, keepdims=True)), axis=1)


def _window_edges_at(
    rows: _SortedWindow, lo: np.ndarray, hi: np.ndarray, first: int, which: np.ndarray,
    gaps: np.ndarray,
) -> np.ndarray:
    """The left and right edges of window gap ``gaps[i]`` (0 for gap ``first``) of row
    ``which[i]``, as ``exponential_kernels.window_weights`` reads them: lo and hi where the
    window reaches an end, else the sorted values clamped to [lo, hi] (clamping is monotone:
    the clamped order statistics are the order statistics of the clamped values):
    (2, len(which))."""
    rank = first + gaps  # gap rank lies between x_(rank) and x_(rank + 1): positions rank - 1, rank
    n, inside, start = rows.n, rows.values, rows.start
    left = np.where(rank == 0, lo[which],
                    np.clip(inside[which, np.maximum(rank - 1, 0) - start], lo[which],
                            hi[which]))
    right = np.where(rank == n, hi[which],
                     np.clip(inside[which, np.minimum(rank, n - 1) - start], lo[which],
                             hi[which]))
    return np.stack([left, right])


def _outside_regions(
    rows: _SortedWindow, keys: list[tuple[int, int]], lo: np.ndarray, hi: np.ndarray,
    target: float, decay: float, window: tuple[int, int],
) -> dict[tuple[int, int], tuple[Any, ...]]:
    """For each (row, side) of ``keys``: the gaps of positive width left (``side`` 0) or right
    (1) of the window in sorted row ``row`` (their left edges and widths), the running totals
    of their weights exp(log weight - the region's largest) and the log of the region's exact
    total weight, all regions at once.

    Zero-width gaps (ties) have weight exactly 0: they add nothing to the running totals
    (x + 0.0 is x), so leaving them out picks the same gap for the same uniform, and the
    exponentials are taken only over the distinct values (a few hundred in a column of
    MNIST's pixels, not tens of thousands). The sides are read as runs of one value (a
    column of bytes: at most 256 runs, not n positions); gaps inside a run have width 0, and
    the gap that ends at a run's first position is ranked by it. Each region's numbers are
    those of computing it alone position by position (``exponential_kernels.outside_gaps``:
    the same clips and differences; then the same element-wise logs and exponentials, and
    each region's running sum from its start): MNIST's PLAN draws about 430 regions a
    release, and numpy's passes region by region cost 0.02 s of its 0.27 s."""
    from .exponential_kernels import outside_gaps, running_totals

    first, last = window
    runs = [rows.runs(row, 0, first) if side == 0 else rows.runs(row, last, rows.n)
            for row, side in keys]
    offsets = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum([values.size for values, _ in runs], out=offsets[1:])
    values = np.concatenate([values for values, _ in runs]).astype(np.float64, copy=False)
    firsts = np.concatenate([firsts for _, firsts in runs]).astype(np.int64, copy=False)
    sides = np.array([side for _, side in keys])
    which = np.array([row for row, _ in keys])
    size = values.size + len(keys)
    edges, widths, ranks = np.empty(size), np.empty(size), np.empty(size, dtype=np.int64)
    counts = outside_gaps(values, firsts, offsets, sides == 0, lo[which], hi[which], rows.n,
                          edges, widths, ranks)
    # A side is chosen only with positive weight, so it holds a gap of positive width.
    assert (counts > 0).all()
    bounds = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    edges, widths, ranks = edges[: bounds[-1]], widths[: bounds[-1]], ranks[: bounds[-1]]
    log_weights = np.log(widths) - decay * np.abs(ranks - target)
    largest = np.maximum.reduceat(log_weights, bounds[:-1])
    totals = np.empty_like(log_weights)
    running_totals(np.exp(log_weights - np.repeat(largest, counts)), bounds, totals)
    log_totals = largest + np.log(totals[bounds[1:] - 1])
    return {key: (edges[a:b], widths[a:b], totals[a:b], log_totals[i])
            for i, (key, a, b) in enumerate(zip(keys, bounds[:-1], bounds[1:], strict=True))}
