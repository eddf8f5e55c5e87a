"""Steps shared by the clipped-mean family (IOME sections 3.1-3.3): private centre, private
clipping radius, noisy clipped mean. Each step's mechanism charges the ledger for exactly what
it spends, before it draws."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from ..accounting import PrivacyLedger
from ..diagnostics import Diagnostic, Kind
from ..engines import Engine
from ..engines.grid_sums import exact_clipped_sums
from ..errors import NoisyReleaseWarning
from ..events import gaussian_event
from ..mechanisms import (
    gaussian_mechanism,
    gaussian_noise_std,
    integer_search_steps,
    private_quantile_integer,
    private_quantile_octaves,
    private_quantile_real,
    rank_error_bound,
    reliable_search_steps,
)
from ..mechanisms.gaussian import FINEST_FRACTION, secure_grid
from ..mechanisms.quantiles import (
    check_octave_search,
    noisy_count,
    octave_search,
    octave_search_lowest,
    search_cost_event,
)
from ..transforms import View
from ..validation import user_stacklevel

# The failure probability the radius search's margin below n is sized for. A search over many
# halvings decides at many midpoints above all the data, where the true count is n; a single
# count that the noise pushes below the target there sends the radius to that midpoint, far
# above every norm, and multiplies the noise. At the default beta = 0.05 that happened in 6 of
# 400 IOME releases (n = 2000, d = 2, rho = 0.05, box +-1000; tests/test_radius_escape.py) and
# in 1 of 2,500 at n = 10^4, d = 512, rho = 1 (7,000 times the usual error). A rank error of
# beta is mild, that escape is not: its margin gets a smaller failure probability. Smaller
# still costs bias where n is small (the mean error of cm and iome at n = 500 and 2000, d = 2
# and 4: 3-8% more than at beta with 1e-3, 12-35% more with 1e-6).
ESCAPE_BETA = 1e-3


def optimal_clip_rank(n: int, d: int, rho_noise: float, rank_error: float) -> float:
    """Target rank of the clipping radius among the n row norms (IOME section 3.1).

    The bias/variance optimum clips sqrt(2 d / rho_noise) rows. The private search's rank error
    moves the target down further. We subtract the high-probability bound tau of Theorem 3.3
    (not one standard deviation of the counts, as the authors' code does) at failure
    probability ``ESCAPE_BETA`` (``escape_rank_error``): then no count at a midpoint above all
    the data sends the radius there, except with that probability.
    """
    return n - np.sqrt(2.0 * d / rho_noise) - rank_error


def escape_rank_error(steps: int, rho_search: float, beta: float) -> float:
    """Theorem 3.3's tau for a radius search of ``steps`` noisy counts sharing ``rho_search``,
    at failure probability min(beta, ``ESCAPE_BETA``): the margin below n that keeps the
    search from escaping above the data (public: steps, budget, beta)."""
    return rank_error_bound(steps, rho_search, escape_beta(beta))


def escape_beta(beta: float) -> float:
    """The failure probability a search's escape margin is sized for: min(beta, ``ESCAPE_BETA``).

    A rank error of beta is mild; a search that leaves the data is not (a median or a reach far
    from every row, a radius above every norm). Public: beta."""
    return min(beta, ESCAPE_BETA)


def box_reach(lo: np.ndarray, hi: np.ndarray) -> float:
    """The largest norm a row clamped to the box [lo, hi] can have: the distance from the
    origin to the box's farthest corner (cm's norm bound). Public: the box."""
    return float(np.linalg.norm(np.maximum(np.abs(lo), np.abs(hi))))


def reliable_median_steps(n: int, k: int, rho: float, beta: float, most: int) -> int:
    """The halvings each of k median searches sharing ``rho`` (rho / k each) makes: the most, up
    to ``most``, whose counts all stay within n/2 with probability 1 - beta (``beta / k`` per
    search). Public: n, k, rho, beta."""
    return reliable_search_steps(n / 2.0, rho / k, beta / k, most)


def private_centre(
    engine: Engine, view: View, lo: np.ndarray, hi: np.ndarray, *, steps: int | None,
    rho: float, ledger: PrivacyLedger, rng: np.random.Generator, secure: bool = False,
    beta: float = 0.05, toward: np.ndarray | None = None,
) -> np.ndarray:
    """Coordinate-wise private medians of the view on the public domains [lo_j, hi_j].

    Budget: ``rho`` in total, rho / k per coordinate for k coordinates (k searches, each of
    sensitivity-1 counts). ``steps=None`` runs the exact integer search of Algorithm 1. Either
    search stops after ``reliable_median_steps`` halvings: with probability 1 - beta no count
    of the k searches is off by n/2, so no median lands outside the data (with a small budget
    for its n and k, the last interval is wider instead).

    ``toward`` (real path): where this point lies within half an interval of a median's last
    interval, the median is the interval's point nearest it, not the middle (post-processing
    of the search and a point that is public or privately chosen before it). Given the
    interval holds the true median m_j, that point is within min(|m_j - toward_j|, the
    interval's width) of it. Where few halvings are reliable the last interval is wide, and
    its middle lies a quarter of it from rows that sit at ``toward`` (the point the domain was
    narrowed about, its first midpoint): n = 50, d = 10, rho = 2, N(1, 1) in the box +-10^4,
    IOME's centre was 9,300 from the rows and its error 673 against cm's 0.45 (a user trial;
    docs/results.md, "Medians toward the anchor").
    """
    rho_each = rho / lo.shape[0]
    most = integer_search_steps(lo, hi) if steps is None else steps
    reliable = reliable_median_steps(engine.n, lo.shape[0], rho, beta, most)
    count = lambda t: engine.coordinate_counts(view, t)  # noqa: E731
    # Where every count is a slow pass (files, clusters), one pass counts several halvings.
    table = ((lambda edges: engine.coordinate_count_table(view, edges))
             if engine.counts_by_table else None)
    if steps is None:
        return private_quantile_integer(count, engine.n / 2.0, lo, hi, rho_per_search=rho_each,
                                        rng=rng, ledger=ledger, stage="centre", secure=secure,
                                        max_steps=reliable, count_table=table)
    middles = private_quantile_real(count, engine.n / 2.0, lo, hi, steps=reliable,
                                    rho_per_search=rho_each, rng=rng, ledger=ledger,
                                    stage="centre", secure=secure, count_table=table)
    if toward is None:
        return middles
    half = np.ldexp(hi - lo, -(reliable + 1))  # the last intervals' half-widths
    nearest = np.clip(toward, middles - half, middles + half)
    # Where ``toward`` lies more than half an interval beyond it, the median is not near it:
    # the middle is then nearer the median on average (a quarter of the width, not a half).
    return np.where(np.abs(nearest - toward) <= half, nearest, middles)


def private_reach(
    engine: Engine, anchors: Sequence[tuple[View, float]], *, steps: int, rho: float,
    ledger: PrivacyLedger, rng: np.random.Generator, secure: bool = False, beta: float = 0.05,
    apart: float | None = None,
) -> tuple[int, float]:
    """Of k public anchors (views shifted to a point, each with a ``top`` that bounds every
    row's norm in it), the one the rows lie nearest, and a private distance r from it that
    more than half the rows lie within, with probability 1 - beta: (its index, r).

    Each anchor's search looks over [0, top] for the 3n/4-th row norm, with at most the
    halvings whose counts all stay within n/4 (``reliable_search_steps``, at beta / k), by
    octaves (``octave_search``: its resolution follows the rows' distance, not ``top``; a
    linear search could not return less than top / 2^steps, so a loose box left the median
    domains as wide as the box over 2^20), and gives the top of its last interval: that end
    is either ``top`` or a point whose noisy count exceeded 3n/4, so its true count exceeds
    n/2. The anchor with the smallest such r is chosen (post-processing). Budget: ``rho``,
    rho / k per search of sensitivity-1 counts (rho / (k steps) each), charged once to the
    stage "centre domain".

    Where each search could make only one reliable halving (small n rho), it asks only whether
    the rows lie within top / 2 of its point: about a point near the rows and one as far again,
    both answer their top, and the tie went to the first anchor (the box's middle) whatever the
    data (N(100, 1) in (0, 10^6)^10, n = 50, rho = 1: PLAN's centre at 31,250 and its error
    7.8e4 against cm's 33). Given ``apart``, the distance between two anchors, the second
    anchor's one count is then asked at apart / 2 (rows within it are nearer the second than
    the first), and the anchor whose count is larger is kept: the second with r = apart / 2
    where its count exceeds 3n/4, else its top; the first with its own one halving as before.
    The same two counts at rho / 2 each; rows at either anchor win by n against noise of sd
    1 / sqrt(rho) (the first version, one count at 3n/4 with the whole rho, sent ~1% of those
    releases back to the middle, and dropped the middle's halving: a review). docs/results.md,
    "One question at small budgets".
    """
    n, k = engine.n, len(anchors)
    # At beta, not at the escape margin's smaller failure probability: a wrong turn here moves
    # the median domains (wider or off centre), it does not send a release away from the data,
    # and at small n rho the margin left one or two halvings (a mixed-scale table, n = 569 at
    # epsilon = 1: iome's and plan's errors 2.4x).
    steps = reliable_search_steps(n / 4.0, rho / k, beta / k, steps)

    def counts(view: View) -> Callable[[np.ndarray], np.ndarray]:
        return lambda t: engine.norm_counts(view, t)

    if k == 2 and steps <= 1 and apart is not None:
        (first, first_top), (second, second_top) = anchors
        for top in (first_top, apart):
            check_octave_search(1, rho / 2, top, secure)
        ledger.charge("centre domain", *search_cost_event(np.zeros(2), rho / 2, secure))
        near_first, near_second = (
            noisy_count(counts(view), top / 2.0, rho=rho / 2, rng=rng, secure=secure)
            for view, top in ((first, first_top), (second, apart)))
        if near_second > near_first:
            return 1, (apart / 2.0 if near_second > 0.75 * n else second_top)
        return 0, (first_top / 2.0 if near_first > 0.75 * n else first_top)
    for _, top in anchors:
        check_octave_search(steps, rho / k, top, secure)
    ledger.charge("centre domain", *search_cost_event(np.zeros(k), rho / k, secure))
    reaches = [octave_search(counts(view), 0.75 * n, top, steps=steps, rho=rho / k, rng=rng,
                             secure=secure)[1] for view, top in anchors]
    nearest = int(np.argmin(reaches))
    return nearest, reaches[nearest]


def private_radius(
    engine: Engine, view: View, rank: float, norm_bound: float, *, steps: int | None,
    rho: float, ledger: PrivacyLedger, rng: np.random.Generator, secure: bool = False,
) -> float:
    """A private ``rank``-th smallest row norm of the view, on [0, norm_bound].

    ``steps=None`` searches the integer squared norms as IOME section 3.2 does (for integer
    views) and returns the square root; otherwise the octave search on the norms with
    ``steps`` noisy counts (``private_quantile_octaves``), returning the top of its last
    interval. The search asks norm_bound / 2 and / 4 as a linear search does, then finds the
    rows' octave in about 2 log2 of its depth below the bound, so the radius's resolution
    follows the rows (a linear search's last interval is norm_bound / 2^steps wide: with a
    box 10^5 times wider than the data, the radius, and the noise with it, grew with the
    box). The top, not the middle: where the norms lie within the last interval's width of
    each other (rows far from the centre, a concentrated shell), a middle below them clipped
    every row by up to half that width; the top only adds that width to the radius (2^-21
    of it in a tight box). Budget: ``rho`` (one search of ``steps`` sensitivity-1 counts,
    rho / steps each: the same counts and cost as a linear search, only their thresholds
    differ).
    """
    if steps is None:
        top = np.array([np.ceil(norm_bound**2)])
        count = lambda t: engine.norm_counts(view, np.sqrt(t))  # noqa: E731
        squared = private_quantile_integer(count, rank, np.zeros(1), top, rho_per_search=rho,
                                           rng=rng, ledger=ledger, stage="threshold",
                                           secure=secure)
        return float(np.sqrt(squared[0]))
    count = lambda t: engine.norm_counts(view, t)  # noqa: E731
    _, right = private_quantile_octaves(count, rank, norm_bound, steps=steps, rho=rho,
                                        rng=rng, ledger=ledger, stage="threshold",
                                        secure=secure)
    if right <= octave_search_lowest(norm_bound, steps):
        warn_radius_at_the_bottom(right, norm_bound)
    return right


def warn_radius_at_the_bottom(radius: float, norm_bound: float) -> None:
    """Say that a radius search ended at the smallest radius it can reach: every noisy count
    found its target of rows within each radius asked, so the rows sit at the centre, and any
    row away from it (fewer than the search's margin, too few to see) was clipped onto it. A
    0/1 column with 1% ones (n = 5000, rho = 0.05) was released as 1e-83 by cm so, silently (a
    user trial). Post-processing of the released radius and public values."""
    warnings.warn(
        f"the clipping radius is the smallest its search can reach ({radius:.3g}, against a "
        f"norm bound of {norm_bound:.3g}): the rows sit at one point, and any row away from it, "
        f"too few for the search to see, was clipped onto it. For a column of a rare value "
        f"(a 0/1 flag), name method='gaussian'", NoisyReleaseWarning,
        stacklevel=user_stacklevel())


def noisy_clipped_mean(
    engine: Engine, view: View, radius: float, *, rho: float, ledger: PrivacyLedger,
    rng: np.random.Generator, secure: bool = False, stage: str = "noise",
    clipped_sum: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """The clipped mean of the view rows plus Gaussian noise (IOME eq. (2)).

    Sensitivity: replacing one row moves the clipped sum by at most 2 * radius in l2, so the
    mean moves by 2 radius / n. Budget: ``rho``, charged to ``stage``. ``clipped_sum``: the
    view's clipped sum at ``radius`` when the caller has it. Returns (noisy mean in view
    space, noise std).
    """
    sensitivity = 2.0 * radius / engine.n
    total = clipped_sum if clipped_sum is not None else release_sums(
        engine, view, [(0.0, radius)], [(sensitivity, rho)], secure=secure)[0]
    noisy = gaussian_mechanism(total / engine.n, sensitivity, rho, rng,
                               ledger=ledger, stage=stage, secure=secure)
    return noisy, gaussian_noise_std(sensitivity, rho)


# The clip profile's shells above the radius C: fine ones at C (1 + 2^-k), k = FINE_SHELLS..1
# (rows clipped by design lie just above C), then (``doublings``) 2C, 4C, ... below the norm
# bound. Measured on the interval widths (iome at 5% and PLAN's default on N(0.5, 1), n = 2000,
# d = 8, box [-5, 5]; iome on MNIST): 3 fine shells were 5-23% wider than 6, 9 only 1-5%
# narrower. The doublings help only where many rows lie beyond 1.5 C (a radius at a fixed
# quantile); where few do, the rows above 1.5 C are one noisy count instead of a sum of
# several: docs/results.md, "The profile's far shells".
FINE_SHELLS = 6
PROFILE_STAGE = "clip profile"
RESIDUAL_STAGE = "clip residual"
# The clip residual measures the rows' moves up to RESIDUAL_REACH * C (a profile edge) and takes
# RESIDUAL_SHARE of the interval's budget (the rest buys the profile). Measured on the interval
# widths (N(0.5, 1), n = 2000, d = 8, box [-5, 5]; cm, iome, plan at 1-25%; docs/results.md,
# "The clip residual"): reach 1.25 / 2 / 3 were up to 24% / 23% / 74% wider than 1.5, shares
# 0.5 / 0.75 up to 6% / 32% wider than 0.25 (and 0.25 costs cm 6% at 1-5%, MNIST 2-5%).
RESIDUAL_REACH = 1.5
RESIDUAL_SHARE = 0.25
# The share of rho the estimators that clip (cm, cm-fixed, iome, PLAN with either threshold;
# auto gives it to each candidate) spend by default on the interval's stages (a clip profile
# and a clip residual): every other stage keeps 99% of its budget (the mean's noise grows by
# 0.5%). PLAN's default since the clip profile; cm and IOME's since 2026-11-26, when their 90%
# intervals measured 7.2 -> 5.8 (cm) and 18.7 -> 6.8 (iome) times the RMSE on MNIST, 44 -> 38
# and 299 -> 73 on N(0.5, 1) in a loose box, for 0.5% more error (docs/results.md, "A default
# interval share for every estimator that clips").
INTERVAL_SHARE = 0.01
PROFILE_DIAGNOSTICS = {
    "clip_profile": Diagnostic(Kind.SERIES, "The private (noisy) numbers of rows in each shell "
                               "of view norms beyond the radius (absent when interval_share "
                               "is 0)."),
    "clip_profile_edges": Diagnostic(Kind.SERIES, "The shells' lower edges (view units; "
                                     "public given the radius)."),
    "clip_profile_rho": Diagnostic(Kind.FLOAT, "The rho the clip profile spent."),
    "clip_residual": Diagnostic(Kind.VECTOR, "The private (noisy) mean move the clip took from "
                                "the rows up to the residual's edge: the clipped mean at the "
                                "edge minus the clipped mean at the radius, in the data's "
                                "units (absent when interval_share is 0)."),
    "clip_residual_std": Diagnostic(Kind.VECTOR, "The standard deviation of clip_residual's "
                                    "noise, per coordinate, in noise_std's units."),
    "clip_residual_edge": Diagnostic(Kind.FLOAT, "The view norm up to which clip_residual "
                                     "measures the moves (public given the radius)."),
    "clip_residual_rho": Diagnostic(Kind.FLOAT, "The rho the clip residual spent."),
}


def clip_profile_edges(radius: float, norm_bound: float,
                       doublings: int | None = 0) -> np.ndarray:
    """The lower edges of the clip profile's shells: C, C (1 + 2^-6), ..., 1.5 C, then the
    first ``doublings`` of 2 C, 4 C, ... (None: all), every one below the norm bound B (just C
    when C >= B or C = 0). Shell s holds the rows of view norm in (e_s, e_s+1], the last one
    those above its edge. Public: a function of the released radius, the public bound and the
    estimator's public ``doublings`` only."""
    if not radius > 0 or radius >= norm_bound:
        return np.array([float(radius)])
    fine = radius * (1.0 + 2.0 ** -np.arange(FINE_SHELLS, 0, -1, dtype=np.float64))
    far = radius * 2.0 ** np.arange(1, max(1, int(np.ceil(np.log2(norm_bound / radius)))))
    edges = np.concatenate([[radius], fine, far if doublings is None else far[:doublings]])
    return edges[edges < norm_bound]


def clip_residual_edge(radius: float, norm_bound: float) -> float:
    """How far out the clip residual measures: RESIDUAL_REACH C, at most the norm bound B (B
    itself when C = 0). Public given the released radius."""
    if not radius > 0:
        return float(norm_bound)
    return float(min(norm_bound, RESIDUAL_REACH * radius))


def with_interval_stages(rho: float, share: float,
                         stages: Callable[[float], dict[str, float]], *,
                         residual: bool = True) -> dict[str, float]:
    """A budget plan with the interval's stages taken off the top: ``share`` of ``rho`` first
    (none when ``share`` is 0), ``RESIDUAL_SHARE`` of it to "clip residual" (unless
    ``residual`` is False) and the rest to "clip profile"; ``stages`` split what is left.
    Public."""
    interval = rho * share
    plan = stages(rho - interval)
    if not interval:
        return plan
    measured = interval * RESIDUAL_SHARE if residual else 0.0
    if not measured:
        return {**plan, PROFILE_STAGE: interval}
    return {**plan, PROFILE_STAGE: interval - measured, RESIDUAL_STAGE: measured}


def planned_clipped_sums(
    engine: Engine, view: View, radius: float, norm_bound: float, budget: dict[str, float], *,
    secure: bool = False,
) -> tuple[np.ndarray, np.ndarray | None]:
    """The view's clipped sum at ``radius``, and the clip residual's sum (the rows' moves from
    the radius to its edge, ``clip_residual``) when the plan has the stage "clip residual"
    (else None, as where the edge is the radius: ``clip_residual`` then sums nothing): one
    pass where the engine can (``release_sums``, for the plan's noise and residual stages)."""
    edge = clip_residual_edge(radius, norm_bound)
    n = engine.n
    bands, steps = [(0.0, radius)], [(2.0 * radius / n, budget["noise"])]
    if RESIDUAL_STAGE in budget and edge > radius:
        bands.append((radius, edge))
        steps.append((2.0 * (edge - radius) / n, budget[RESIDUAL_STAGE]))
    sums = release_sums(engine, view, bands, steps, secure=secure)
    return sums[0], sums[1] if len(sums) > 1 else None


def release_sums(
    engine: Engine, view: View, bands: Sequence[tuple[float, float]],
    releases: Sequence[tuple[float, float]], *, secure: bool, rows: int = 1,
    bound: float | None = None, size: int | None = None,
) -> list[np.ndarray]:
    """The sums behind releases: for each band (inner, outer) of radii, the rows' moves
    between the two clips (inner 0: the clipped rows; outer inf: the rows, each coordinate at
    most ``bound``). With ``secure``, sums whose rounding does not grow with n
    (``grid_sums.exact_clipped_sums``), split down to an eighth of each release's grid step
    over ``rows`` (1 for a release of the sum over n, n for the sum itself); ``releases``:
    each band's release's (l2 sensitivity, rho), public; ``size``: the releases' coordinates,
    where not the view's. Otherwise, or for a release of sensitivity 0 (a zero radius or a
    box of zero width: a public value), the engine's clipped sums, every radius in one pass
    (each radius's bits as the engine gives them alone; a band is their difference)."""
    bands = [(float(inner), float(outer)) for inner, outer in bands]  # (released radii: arrays)
    k = view.output_dim(engine.d) if size is None else size
    finest = [secure_grid(sensitivity, rho, k) * FINEST_FRACTION / rows
              if secure and sensitivity > 0 else math.inf for sensitivity, rho in releases]
    exact = [i for i, step in enumerate(finest) if math.isfinite(step)]
    sums = exact_clipped_sums(engine, view, [bands[i] for i in exact],
                              finest=[finest[i] for i in exact], bound=bound) if exact else []
    radii = sorted({r for i, (inner, outer) in enumerate(bands) if i not in exact
                    for r in ((inner, outer) if inner else (outer,))})
    plain = dict(zip(radii, engine.clipped_sums(view, radii), strict=True)) if radii else {}
    return [sums[exact.index(i)] if i in exact
            else plain[outer] - plain[inner] if inner else plain[outer]
            for i, (inner, outer) in enumerate(bands)]


def planned_interval_stages(
    engine: Engine, view: View, radius: float, norm_bound: float, budget: dict[str, float], *,
    ledger: PrivacyLedger, rng: np.random.Generator, secure: bool = False,
    sums: tuple[np.ndarray, np.ndarray | None] | None = None, std_factor: float = 1.0,
    doublings: int | None = 0,
) -> dict[str, object]:
    """``clip_profile`` and ``clip_residual`` on their planned budgets where the plan has those
    stages, else nothing. ``sums``: ``planned_clipped_sums`` when the caller has them;
    ``std_factor`` maps the view's noise std to ``noise_std``'s units (``clip_residual``);
    ``doublings``: the profile's shells beyond 1.5 C (``clip_profile_edges``)."""
    out: dict[str, object] = {}
    if PROFILE_STAGE in budget:
        out.update(clip_profile(engine, view, radius, norm_bound, rho=budget[PROFILE_STAGE],
                                ledger=ledger, rng=rng, secure=secure, doublings=doublings))
    if RESIDUAL_STAGE in budget:
        out.update(clip_residual(engine, view, radius, norm_bound, rho=budget[RESIDUAL_STAGE],
                                 ledger=ledger, rng=rng, secure=secure, sums=sums,
                                 std_factor=std_factor))
    return out


def clip_profile(
    engine: Engine, view: View, radius: float, norm_bound: float, *, rho: float,
    ledger: PrivacyLedger, rng: np.random.Generator, secure: bool = False,
    doublings: int | None = 0,
) -> dict[str, object]:
    """Stage "clip profile": how many rows lie how far beyond the radius, for confidence
    intervals (``dpmean.intervals``, "A clip profile").

    Releases the numbers of rows whose view norm falls in each shell above ``radius``
    (``clip_profile_edges`` with ``doublings``), plus Gaussian noise. A row lies in at most
    one shell (rows within the radius in none), so replacing one row changes at most two
    counts by 1: l2 sensitivity sqrt(2), cost ``rho``. The view (its centre and scale), the
    radius and the edges are earlier releases or public. Returns the diagnostics it adds."""
    edges = clip_profile_edges(radius, norm_bound, doublings)
    above = engine.n - engine.norm_counts(view, edges).astype(np.float64)
    shells = above - np.append(above[1:], 0.0)
    noisy = gaussian_mechanism(shells, np.sqrt(2.0), rho, rng, ledger=ledger,
                               stage=PROFILE_STAGE, secure=secure)
    return {"clip_profile": noisy, "clip_profile_edges": edges, "clip_profile_rho": rho}


def clip_residual(
    engine: Engine, view: View, radius: float, norm_bound: float, *, rho: float,
    ledger: PrivacyLedger, rng: np.random.Generator, secure: bool = False,
    sums: tuple[np.ndarray, np.ndarray | None] | None = None, std_factor: float = 1.0,
) -> dict[str, object]:
    """Stage "clip residual": which way the clip moved the rows just beyond the radius, for
    confidence intervals (``dpmean.intervals``, "A clip residual").

    Releases (1/n) sum_i (clip_E(u_i) - clip_C(u_i)) for the edge E = ``clip_residual_edge``
    plus Gaussian noise, mapped back to the data's units (``view.restore`` is affine: the
    move is restore(v) - restore(0)). Each row's term is u_i (min(1, E/|u_i|) - min(1,
    C/|u_i|)), of norm at most E - C, so replacing one row moves the mean by at most
    2 (E - C) / n in l2: cost ``rho``. The view, the radius and the edge are earlier releases
    or public. ``sums``: the clipped sum at C and the sum of the terms
    (``planned_clipped_sums``) when the caller has them. Returns the diagnostics it adds;
    ``clip_residual_std`` is the noise's std times ``std_factor``."""
    n = engine.n
    edge = clip_residual_edge(radius, norm_bound)
    if not edge > radius:
        # C >= B: no row is clipped, the residual is exactly zero. The stage is still
        # charged (its plan is public); nothing is drawn.
        ledger.charge(RESIDUAL_STAGE, rho, gaussian_event(rho, secure))
        moved = np.zeros(view.output_dim(engine.d))
        std = 0.0
    else:
        sensitivity = 2.0 * (edge - radius) / n
        total = sums[1] if sums is not None and sums[1] is not None else release_sums(
            engine, view, [(radius, edge)], [(sensitivity, rho)], secure=secure)[0]
        moved = gaussian_mechanism(total / n, sensitivity, rho, rng, ledger=ledger,
                                   stage=RESIDUAL_STAGE, secure=secure)
        std = gaussian_noise_std(sensitivity, rho)
    origin = view.restore(np.zeros_like(moved))
    return {"clip_residual": view.restore(moved) - origin, "clip_residual_std": std * std_factor,
            "clip_residual_edge": edge, "clip_residual_rho": rho}
