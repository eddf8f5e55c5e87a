"""``method="auto"``: a private choice between PLAN, IOME, CM and the plain Gaussian mechanism,
from a few private scalars that predict each one's noise."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
from scipy.special import ndtri

from ..accounting import PrivacyLedger
from ..diagnostics import Diagnostic, Kind
from ..engines import Engine
from ..errors import PrivacyAccountingError
from ..events import (
    ChoiceEvent,
    Event,
    equivalent_events,
    exponential_event,
    gaussian_event,
)
from ..mechanisms import gaussian_mechanism, gaussian_noise_std, log_domain_quantile
from ..mechanisms.quantiles import (
    check_octave_search,
    count_noise_std,
    noisy_count,
    octave_search_lowest,
    private_quantile_octaves,
    reliable_search_steps,
    search_cost_event,
)
from ..rng import RandomState
from ..transforms import IDENTITY, View
from ..validation import check_fraction
from .base import MeanEstimator
from .baselines import GaussianMean
from .clipped import INTERVAL_SHARE, box_reach, release_sums
from .iome import ClippedMean, ShiftedClippedMean, plans_a_centre
from .plan import CENTRE_STAGES, LOG_RANGE, VARIANCE_STAGES, PrivateLimitAdaptedNoise
from .variance import noisy_mean, pair_distances

# The most of the budget the choice spends, split evenly between its private scalars, and the
# precision it buys them (AutoMean.choice_share): where the share would buy more, it spends less.
CHOICE_SHARE = 0.03
CHOICE_RANK_ERROR = 0.02
CHOICE_STAGES = ("choice norms", "choice pair l2", "choice pair l1")
# The tail stage (``private_tail``): at most TAIL_SHARE of rho on a noisy histogram of the row
# norms in shells whose edges grow by TAIL_RATIO from TAIL_START times the median norm up to
# the box's reach (at most TAIL_SHELLS of them); a shell's count is kept where it clears its
# noise at failure probability TAIL_BETA over all the shells (else taken as 0), up to the
# first that does not. It predicts each candidate's clipping bias and radius floor
# (AutoMean.predictions).
TAIL_STAGE = "choice tail"
TAIL_SHARE = 0.01
# The tail's precision (AutoMean.tail_share): where a smaller share gives its counts a noise
# std of at most TAIL_PRECISION sqrt(n), a tenth of the rows PLAN aims to clip, it spends that.
TAIL_PRECISION = 0.1
TAIL_RATIO = math.sqrt(2.0)
TAIL_START = 1.0
TAIL_SHELLS = 128
TAIL_BETA = 0.1
# A shell past the first that does not clear its noise is kept where its count clears it at
# this failure probability over the shells (far outliers beyond empty shells; private_tail).
TAIL_FAR_BETA = 1e-3
# The far tail, whose rows' moves clip_bias counts: the shells from TAIL_FAR times the median
# norm (shell TAIL_FAR_SHELL) on.
TAIL_FAR = 2.0 * TAIL_RATIO
TAIL_FAR_SHELL = round(math.log(TAIL_FAR / TAIL_START, TAIL_RATIO))
# IOME and PLAN clip about a centre, not the origin: their bias is read from a second
# histogram (``private_tail`` about ``centre``), of the rows' distances from a private centre
# (the Gaussian mechanism on the mean, stage CENTRE_STAGE) in shells from the pairs' typical
# distance up (stage CENTRED_TAIL_STAGE), each stage ``tail_share`` of rho, as the origin's
# histogram (half of it each found IOME's tail at n = 50,000, rho = 2 in 7 releases of 10, the
# whole in 9). It is read where the centre's noise (its l2 norm's expectation, public) is at
# most CENTRE_NOISE times that distance; else the origin's histogram serves them too.
CENTRE_STAGE = "choice centre"
CENTRED_TAIL_STAGE = "choice centred tail"
CENTRE_NOISE = 0.5
# IOME's search share where the rows beyond its radius lean one way (``AutoMean.predictions``):
# the paper's 1/4, which clips about sqrt(n)-many rows rather than the hundreds its 1% share's
# escape margin allows, whose far tail the histogram cannot always see.
ROBUST_IOME_SHARE = 0.25
# The failure probability of the test that the rows lean one way (``leans_one_way``), |.|
# of a sum: a false alarm costs IOME 13-25% more noise on symmetric rows.
LEAN_BETA = 0.005
# The failure probability the choice's resolution check allows each median (see
# AutoMean.choice_resolves), and what runs when the medians cannot be placed.
CHOICE_BETA = 0.1
# The most noisy counts of the row norms' median search (``private_median_norm``).
CHOICE_NORM_STEPS = 20
UNRESOLVED_CHOICE = ("plan", "gaussian")
# Where the choice cannot be placed and PLAN's minimum n is not met, one count (stage
# NEAR_ORIGIN_STAGE) asks whether more than NEAR_ORIGIN_SHARE of the rows lie within
# NEAR_ORIGIN_REACH of the Gaussian mechanism's predicted error from the origin: then CM runs
# instead of the Gaussian mechanism, whose noise follows the box
# (``AutoMean.near_origin_share``).
NEAR_ORIGIN_STAGE = "choice near origin"
NEAR_ORIGIN_REACH = 0.5
NEAR_ORIGIN_SHARE = 0.75
# The shares of rho the count may take: the smallest whose noise keeps the count of rows all
# near the origin NEAR_ORIGIN_SDS standard deviations above the threshold (0.13%).
NEAR_ORIGIN_SHARES = (0.02, 0.05, 0.1, 0.2)
NEAR_ORIGIN_SDS = 3.0
# Where the choice cannot be placed on a table of columns in their own ranges, one count (stage
# SPREAD_STAGE) asks whether more than SPREAD_CLOSE of random row pairs lie within
# 1 / SPREAD_DIVISOR of the narrowest column's width of each other (l2, in the box-normalised
# space: every range far looser than its rows): then the unresolved choice runs (IOME or
# PLAN), else the Gaussian mechanism (``AutoMean.spread_share``). Its share is the first of
# NEAR_ORIGIN_SHARES whose noise keeps pairs all that near NEAR_ORIGIN_SDS standard deviations
# above SPREAD_CLOSE of them.
SPREAD_STAGE = "choice spread"
SPREAD_DIVISOR = 8.0
SPREAD_CLOSE = 0.75
# For one column with bounds the caller gave, two counts first (stage FACES_STAGE) ask whether
# rows lie at both ends of the box, in its lowest and highest FACES_REACH of the width, each
# count above NEAR_ORIGIN_SDS of its noise and FACES_LEAST of the rows: then the Gaussian
# mechanism runs (``AutoMean.faces_share``). Stage FACE_MASS_STAGE (FACE_MASS_SHARE of rho)
# counts the rows on each face and sums the rows' distances from the lower face, which tell
# whether most rows sit on one face with too few off it, or too many at its far end, for a
# clipping candidate to gain (``AutoMean.loses_to_the_face``). A candidate's clip count k
# grows as 1 / sqrt(rho) (about 28 / sqrt(rho) for cm at n = 2000 to 50,000), as the counts'
# noise does: 5% of rho keeps it near k / 5 at every rho (at 10% of the faces' share, 0.2-2%
# of rho, its noise let Poisson counts of mean 0.05 in (0, 20), 250 rows off the face against
# cm's k of 90, be sent to the Gaussian mechanism at 4x cm's error), and lets the rows far
# from the face show (below).
FACES_STAGE = "choice faces"
FACE_MASS_STAGE = "choice face mass"
FACE_MASS_SHARE = 0.05
# The l2 sensitivities of the two stages' releases (``AutoMean.end_counts``,
# ``AutoMean.face_mass``), which the rules reading them take their noise from.
ENDS_SENSITIVITY = math.sqrt(2.0)
FACE_MASS_SENSITIVITY = math.sqrt(3.0)
# How many standard deviations of its noise the rows' distance from the face must clear, beyond
# the Gaussian mechanism's noise, before a candidate that would clip every row off the face is
# left out (``AutoMean.far_from_the_face``): rows off the face but near it cost a clip little,
# and the Gaussian mechanism's noise grows with the range (a review: 99% zeros and 1% U(0, 1)
# in (0, 1000), n = 5000, rho = 0.1, sent to it at 51x cm's error). By the arithmetic of the
# noise (scripts/rare_faces.py measures the releases), at n = 5000 and rho = 0.05 a 1% flag
# (50 ones at the far face) clears it in 88% of releases, 5% of the rows at U(2, 5) in (0, 10)
# in 95%, rows near the face in 4% (two tests at 1.8 sd: at most the 7% one test at 1.5 sd
# allowed before).
FAR_EVIDENCE_SDS = 1.8
# How many standard deviations of its noise the count of rows off the face may exceed a
# candidate's clip count by, for the candidate to be taken to clip them all: a search that
# aims to clip k rows may clip more, and with one sd a 1% flag (27 ones, n = 2000, rho = 1)
# was taken for more than cm's 29 in 8% of releases and clipped onto the zeros all the same.
OFF_FACE_SDS = 2.0
# How much better than the Gaussian mechanism a clipping candidate must be predicted, where
# each column has its own range (one column with public bounds, or ranges of different widths:
# a table of named columns), to be chosen (``AutoMean.best_in_own_ranges``).
ONE_COLUMN_MARGIN = 2.0
FACE_STAGES = (FACES_STAGE, FACE_MASS_STAGE)
# On a table of columns in their own ranges where the choice is made, one release of 2d counts
# (stage COLUMN_ENDS_STAGE): each column's rows in the lowest and in the highest FACES_REACH of
# its range (a row is in at most one end of each column: l2 sensitivity sqrt(2 d)). A clipping
# candidate is left out where some column is two-sided: rows at both ends, the smaller end
# above NEAR_ORIGIN_SDS of the noise, at most COLUMN_MIDDLE of the rows between them (a flag,
# answers at a scale's ends, a bimodal column; not the light tails of a bell, which put about
# 1% at each end: a review saw IOME left out there at 1.8x its error), and the smaller end at
# most COLUMN_ENDS_CLIPS times the rows the candidate aims to clip, less OFF_FACE_SDS of the
# noise (``AutoMean.clips_a_column_end``): its radius search at small n rho clips far more
# than it aims (a review: 130 ones against PLAN's 100, the flag 58% low). Its share is the
# first of NEAR_ORIGIN_SHARES whose noise lets an end holding COLUMN_ENDS_SEEN of the rows
# clear NEAR_ORIGIN_SDS by FACES_POWER_SDS.
COLUMN_ENDS_STAGE = "choice column ends"
COLUMN_ENDS_SEEN = 0.1
COLUMN_MIDDLE = 0.5
COLUMN_ENDS_CLIPS = 3.0
FACES_REACH = 0.25
# The share of the rows at a face the counts should see: its count clears the threshold
# (NEAR_ORIGIN_SDS of the noise, and FACES_LEAST of the rows) by FACES_POWER_SDS (98%) at the
# share of rho taken, one of the count near the origin's shares.
FACES_SHARE = 0.2
FACES_POWER_SDS = 2.0
# Each end must hold at least this share of the rows: at large n rho a handful of rows in a
# quarter cleared 3 sd (a review: N(50, 10) in (0, 100), n = 10^4, sent to the Gaussian
# mechanism 98% of the time), which says nothing of where the rows lie.
FACES_LEAST = 0.1
# The interval's share every clipping candidate gets by default (their own default share).
AUTO_INTERVAL_SHARE = INTERVAL_SHARE
# PLAN is chosen over IOME when its predicted noise is at most this fraction of IOME's: its
# variances are estimated, not known, so a small predicted gain is not worth the risk.
PLAN_MARGIN = 0.9
# PLAN's binary instantiation's gain over CM on baskets where it scales, which the choice cannot
# see (0-11% on both basket files where its centre's error is below the rows' median norm,
# 20-26% on word counts; without a variance stage it lost 3-18% on 0/1 rows): its prediction
# is CM's times this where it scales, and times its centre's error over
# ``PLAN_BASKET_REACH`` times that norm where larger.
PLAN_BASKET_GAIN = 0.98
PLAN_BASKET_REACH = 2.0
CANDIDATES = {cls.method: cls for cls in (PrivateLimitAdaptedNoise, ShiftedClippedMean,
                                          ClippedMean, GaussianMean)}
# The candidates that clip (``AutoMean.clip_counts``).
CLIPPING = ("cm", "iome", "plan")
# How far (a factor) the pair medians may stray outside the range every pair's distances keep,
# l2 <= l1 <= sqrt(d) l2, before one of them is taken to have left its data
# (``consistent_pair_medians``): a nat, far above the rank error the choice's share buys (a few
# per cent of the values) and far below an escape into the log domain's empty end (tens of nats).
PAIR_SLACK = math.e
# The share of the rows the tail histogram may show beyond the radius R that bounds the pairs'
# median distance by 2R (``pair_median_bound``).
PAIR_BOUND_BEYOND = 0.2
# How far above that bound a median must lie to be taken as escaped (two nats): the histogram
# stops at its first shell that does not clear the noise, so a thin tail over many shells is
# not counted, and the bound is not always one (a review: 55% of rows near a point and 45%
# spread over norms 40-4000, n = 200: the true l2 median 3.6-4.8 times the bound).
PAIR_ESCAPE = math.e**2


def _private_median_pair(values: np.ndarray, top: float, *, rho: float, ledger: PrivacyLedger,
                         rng: np.random.Generator, stage: str) -> float:
    """The private median of non-negative pair distances (sensitivity 1: a row is in one pair)
    on log values over [top e^-LOG_RANGE, top] (``log_domain_quantile``). Budget: ``rho``."""
    return log_domain_quantile(values, 0.5, top, LOG_RANGE, rho=rho, rng=rng, ledger=ledger,
                               stage=stage)


def private_median_norm(engine: Engine, top: float, *, rho: float, ledger: PrivacyLedger,
                        rng: np.random.Generator, stage: str, secure: bool = False) -> float:
    """The private median of the row norms ||x_i|| on [0, ``top``] by noisy counts, by octaves
    (``private_quantile_octaves``): the middle of its last interval (its top if nothing was
    found below). Budget: ``rho`` (one search of at most ``CHOICE_NORM_STEPS`` sensitivity-1
    counts, the most whose counts all stay within n/4 at ``CHOICE_BETA``), charged to
    ``stage``.

    Not the exponential mechanism on log norms the pair medians use: where the rows lie far
    from the origin against their spread (timestamps near 1.7e9 +- 10^3), their norms fill a
    band of 10^-8 nats, and a log-domain exponential mechanism puts its mass on the tens of
    empty nats below them instead (n = 1000, d = 3, rho = 0.1: the median norm came out below
    10^-10 of its value in one release of 20, and CM, predicted no noise, was chosen at an
    error of 2.6e7). The counts' thresholds depend on nothing but earlier noisy counts, so a
    band of any width is found within its octave."""
    n = engine.n
    steps = reliable_search_steps(n / 4.0, rho, CHOICE_BETA, CHOICE_NORM_STEPS)
    left, right = private_quantile_octaves(
        lambda t: engine.norm_counts(IDENTITY, t), n / 2.0, top, steps=steps, rho=rho,
        rng=rng, ledger=ledger, stage=stage, secure=secure)
    return right if left == 0.0 else (left + right) / 2.0


def norm_stages(baskets: bool) -> tuple[str, ...]:
    """The choice stages that measure the median row norm r0 (``private_median_norm``), the
    rest being the pair medians and the tail: "choice norms", or every stage on baskets, which
    get no pair or tail questions (the sparse engine has no pairs; a .dat file read in dense
    chunks asks the same; a basket's norm is the root of its size, and the choice between CM
    and PLAN's binary instantiation there weighs r0 against PLAN's centre's error, see
    ``AutoMean.predicted_noise``). Public: the input's kind."""
    return (*CHOICE_STAGES, *TAIL_STAGES) if baskets else CHOICE_STAGES[:1]


# The stages that take ``tail_share`` of rho each.
TAIL_STAGES = (TAIL_STAGE, CENTRE_STAGE, CENTRED_TAIL_STAGE)


def tail_edges(r0: float, reach: float) -> np.ndarray:
    """The tail histogram's shell edges: ``TAIL_START`` r0 ``TAIL_RATIO``^j, j = 0, 1, ...,
    those below the box's ``reach`` (at most ``TAIL_SHELLS``), or the reach alone where none
    is (r0 = 0, or r0 beyond the reach). Shell j holds the norms in (e_j, e_j+1], the last
    one those above its edge. Public given the private median norm r0 and the box."""
    if not r0 > 0.0 or TAIL_START * r0 >= reach:
        return np.array([float(reach)])
    octaves = (math.log(reach) - math.log(TAIL_START * r0)) / math.log(TAIL_RATIO)
    count = min(TAIL_SHELLS, math.ceil(octaves))  # (a ratio of the two could overflow)
    edges = TAIL_START * r0 * TAIL_RATIO ** np.arange(max(count, 1), dtype=np.float64)
    return edges[edges < reach] if np.any(edges < reach) else np.array([float(reach)])


def private_tail(engine: Engine, edges: np.ndarray, r0: float, *, rho: float,
                 ledger: PrivacyLedger, rng: np.random.Generator, stage: str,
                 centre: np.ndarray | None = None, secure: bool = False
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The tail histogram: per shell of ``edges`` (``tail_edges``), the number of rows whose
    distance ||x_i - c|| from ``centre`` c (default the origin) lies in it, split by the side
    of the hyperplane <x - c, u> = 0 they lie on, u = (1, ..., 1) / sqrt(d), noisy.

    Mechanism: the counts of the 2 x (shells) bins (shell, side), plus Gaussian noise. The
    bins are disjoint (the rows below the first edge are in none), so replacing one row takes
    1 from at most one bin and adds 1 to at most one other: l2 sensitivity sqrt(2). Budget:
    ``rho``, charged to ``stage``. A row's side is the sign of ||y||^2 + ||a||^2 - ||y - a||^2
    = 2 <y, a> for y = x - c and a = r0 u: a function of the row alone (given c, released
    before), whichever side a row on the hyperplane falls.

    Returns (up, down): each side's noisy count per shell, kept from the first shell up to the
    first whose sum does not clear its noise (a one-sided test at failure probability
    ``TAIL_BETA`` over the shells, Bonferroni) and 0 from there (a real tail fills
    consecutive shells, as the edges grow geometrically, while an empty shell far out whose
    count cleared its noise by chance would weigh by its edge: a release in ten at TAIL_BETA on
    lognormal rows, n = 3000, d = 5, rho = 0.05, predicted IOME and PLAN a bias 60 times their
    real one), except a shell beyond that clears it at ``TAIL_FAR_BETA``: far outliers sit
    in a shell of their own past empty ones (1% of rows moved 1,000 from N(1, 1) rows, d =
    10: IOME and PLAN clipped them, 23 times cm's error, and auto chose IOME, the histogram
    having stopped at the first empty shell; a user trial)."""
    origin = np.zeros(engine.d) if centre is None else np.asarray(centre, dtype=np.float64)
    view = IDENTITY if centre is None else IDENTITY.with_shift(origin)
    norms = engine.row_norms(view)
    toward = origin + r0 / math.sqrt(engine.d)
    # 2 <y, a> = ||y||^2 + ||a||^2 - ||y - a||^2: one more pass over the rows, not two (its
    # rounding only decides the side of rows near the hyperplane, still by the row alone).
    positive = norms**2 + r0**2 > engine.row_norms(IDENTITY.with_shift(toward)) ** 2
    shell = np.searchsorted(edges, norms, side="left") - 1  # (e_s, e_s+1]; -1 below e_0
    counted = shell >= 0
    bins = np.concatenate([np.bincount(shell[counted & side], minlength=edges.size)
                           for side in (positive, ~positive)]).astype(np.float64)
    noisy = gaussian_mechanism(bins, math.sqrt(2.0), rho, rng, ledger=ledger, stage=stage,
                               secure=secure)
    up, down = noisy[:edges.size], noisy[edges.size:]
    totals, pair_std = up + down, tail_pair_std(rho)
    clear = totals > float(ndtri(1.0 - TAIL_BETA / edges.size)) * pair_std
    kept = np.arange(edges.size) < (int(np.argmin(clear)) if not clear.all() else clear.size)
    kept |= totals > float(ndtri(1.0 - TAIL_FAR_BETA / edges.size)) * pair_std
    return np.where(kept, up, 0.0), np.where(kept, down, 0.0)


def one_sided_share(up: np.ndarray, down: np.ndarray, weights: np.ndarray, rho: float,
                    tilt: float = 0.0, beta: float = TAIL_BETA) -> float:
    """The share of the tail histogram's rows that one side holds beyond the other, each
    shell's counts taken with its weight (a mask, or the part of a shell that counts),
    |sum w (up - down)| / sum w (up + down), less its noise's one-sided margin at
    ``beta`` (the kept shells' counts are independent: z sqrt(sum w^2) times a pair's
    noise), in [0, 1] (0 where the shells hold none). Pooled over the shells, not shell by
    shell: each difference carries the noise of two counts, and shell by shell they cleared it
    only where a shell held hundreds of rows (n = 3000, rho = 0.05). ``tilt``: a share of the
    rows whose side may be the centre's noise's rather than their own, subtracted too.
    Post-processing."""
    kept = (up + down != 0.0) & (weights > 0.0)  # (``private_tail`` zeroes the others)
    w = np.where(kept, weights, 0.0)
    total = float(np.sum(w * (up + down)))
    if not total > 0.0:
        return 0.0
    margin = float(ndtri(1.0 - beta)) * tail_pair_std(rho) * math.sqrt(float(np.sum(w**2)))
    lopsided = abs(float(np.sum(w * (up - down)))) - margin
    return float(np.clip(lopsided / total - tilt, 0.0, 1.0))


def gaussian_error(engine: Engine, rho: float) -> float:
    """The Gaussian mechanism's predicted l2 error at ``rho`` on the engine's box: sqrt(d)
    ||hi - lo|| / (n sqrt(2 rho)). Public: n, d, the box, rho."""
    width = float(np.linalg.norm(engine.hi - engine.lo))
    return float(np.sqrt(engine.d) * width / (engine.n * np.sqrt(2.0 * rho)))


def best_predicted(names: Iterable[str], noise: Mapping[str, float],
                   bias: Mapping[str, float]) -> str:
    """Of the candidates ``names``, the one whose predicted error sqrt(noise^2 + bias^2) is
    smallest (the first on ties; a candidate without a bias prediction is predicted none)."""
    return min(names, key=lambda name: math.hypot(noise[name], bias.get(name, 0.0)))


def tail_pair_std(rho: float) -> float:
    """The noise std of a sum or difference of two of the tail histogram's counts (Gaussian,
    l2 sensitivity sqrt(2), ``rho``): sqrt(2) sigma. Public."""
    return math.sqrt(2.0) * gaussian_noise_std(math.sqrt(2.0), rho)


def rows_beyond(totals: np.ndarray) -> np.ndarray:
    """For each shell, the histogram's rows in it and every shell above (post-processing)."""
    return np.cumsum(totals[::-1])[::-1]


def clip_bias(edges: np.ndarray, up: np.ndarray, down: np.ndarray, clipped: float, n: int,
              rho: float) -> float:
    """The mean move of clipping the ``clipped`` rows of largest norm, from the tail histogram
    about the origin (``private_tail``: its ``up`` and ``down`` counts, noise ``rho``),
    counting only the one-sided part of the far tail, beyond ``TAIL_FAR`` r0.

    The radius is taken as the lower edge of the shell holding the (clipped + 1)-th largest
    norm by the totals less their noise's margin (``radius_shell``; the first edge, r0, if the
    shells hold fewer rows). The rows of each
    far shell above it are taken to lie at the shell's lower edge, and the one-sided share of
    the far tail (``one_sided_share``, pooled over its shells) to move in one direction:
    one_sided sum_s totals_s (e_s - radius) / n. Light-tailed rows clip in every direction and
    their moves cancel, and such rows rarely lie beyond 2 sqrt(2) times the median norm, while
    rows near it lie on the side their mean does (N(0.5, 1) in d = 8 about the origin:
    counting the shells just above r0 cost auto 1.5x its error by steering it off IOME); a
    heavy tail fills shell after shell out there, and where it is one-sided (incomes,
    lognormal or Pareto rows in (0, B)) their moves add up; where it is symmetric (N(0, 1) in
    d = 1, Student t) they cancel, and counting them steered auto to the Gaussian mechanism at
    5x the error. The lower edges make it a lower bound of the aligned move given exact
    counts; counts that did not clear their noise add nothing. Post-processing of the
    histogram and public values (the candidate's public clip count, n)."""
    totals = up + down
    j = max(radius_shell(totals, rho, clipped), 0)
    shell = np.arange(edges.size)
    far = shell > max(j, TAIL_FAR_SHELL - 1)
    one_sided = one_sided_share(up, down, (shell >= TAIL_FAR_SHELL).astype(np.float64), rho)
    return float(one_sided * np.sum(totals[far] * (edges[far] - edges[j])) / n)


def centred_clip_bias(edges: np.ndarray, up: np.ndarray, down: np.ndarray, clipped: float,
                      n: int, rho: float, tilt: float) -> float:
    """The mean move of clipping the ``clipped`` rows farthest from a centre, from the tail
    histogram about it (``private_tail`` with ``centre``: ``up`` and ``down``, noise ``rho``),
    counting the one-sided part of every row beyond the radius.

    The radius R lies in the shell j holding the (clipped + 1)-th largest distance; the m
    rows of shell j beyond it (clipped less the rows above the shell) are taken to spread
    evenly over the shell's width, which places R, and to move (e_j+1 - R) / 2 on average;
    the rows of each shell above it to lie at its middle. The one-sided share is pooled over
    the rows beyond R (the shells above j, and m / c_j of shell j's counts, ``one_sided_share``
    with that weight). About a centre a symmetric bulk's sides balance, so the rows just above
    the radius can count, as they must (less the ``tilt`` the centre's noise may give them,
    ``AutoMean.centred_tail``): a skewed column among others (lognormal beside nine
    normal columns) puts its tail there, short of the far shells, and IOME, clipping a few
    hundred rows, was chosen at 2-5x CM's error (a user trial). Exact counts of such rows put
    it at 0.5-1.2 times the real move (docs/results.md). Post-processing of the histogram and
    public values (the candidate's public clip count, n)."""
    weights, move = beyond_radius(edges, up + down, clipped, rho)
    return one_sided_share(up, down, weights, rho, tilt) * move / n


def leans_one_way(up: np.ndarray, down: np.ndarray, rho: float, tilt: float) -> bool:
    """Whether the rows beyond ``TAIL_RATIO`` times the typical distance from the centre (the
    histogram's shells from the second on) lie on one side beyond their noise's margin at
    ``LEAN_BETA`` and the ``tilt`` the centre's noise may give them. Pooled over them all: a
    skewed column's rows lean one way from there on (ages beside an income: 3,360 against
    3,161 rows in that shell, six noise stds apart), where the far tail's shells hold too few
    rows to tell; the first shell's bulk would only add its noise and its tilt.
    Post-processing."""
    shells = (np.arange(up.size) >= 1).astype(np.float64)
    return one_sided_share(up, down, shells, rho, tilt, beta=LEAN_BETA) > 0.0


def beyond_radius(edges: np.ndarray, totals: np.ndarray, clipped: float, rho: float
                  ) -> tuple[np.ndarray, float]:
    """For the radius that clips ``clipped`` rows by the tail histogram's ``totals`` (noise
    ``rho``; in the shell ``radius_shell`` gives, the rows of its shell spread evenly over it,
    the others at their shells' middles; see ``centred_clip_bias``): each shell's weight among
    the rows beyond it (1 above its shell, the share of its shell's rows beyond it there, 0
    below) and their total move. Zero weights and no move where the shells surely hold no
    more than ``clipped`` rows."""
    beyond = rows_beyond(totals)
    j = radius_shell(totals, rho, clipped)
    weights = np.zeros(edges.size)
    if j < 0:
        return weights, 0.0
    above = np.arange(edges.size) > j
    rest = clipped - (beyond[j + 1] if j + 1 < edges.size else 0.0)
    share = float(np.clip(rest / totals[j], 0.0, 1.0)) if totals[j] > 0.0 else 0.0
    top = edges[j] * TAIL_RATIO
    radius = top - share * (top - edges[j])
    middles = edges[above] * (1.0 + TAIL_RATIO) / 2.0
    move = float(np.sum(totals[above] * (middles - radius))) + share * totals[j] * (
        top - radius) / 2.0
    weights[above] = 1.0
    weights[j] = share
    return weights, move


def radius_floor(edges: np.ndarray, totals: np.ndarray, rho: float, clipped: float) -> float:
    """The largest shell edge beyond which the tail histogram (``private_tail``) shows more
    than ``clipped`` rows (``radius_shell``): a radius that clips ``clipped`` rows lies above
    it. 0 where no edge qualifies. A heavy tail puts it far above the median norm (lognormal
    amounts, n = 200,000: the cm radius near 2,500 was predicted at a few times the median
    norm of 20, and cm chosen at 6-15x the Gaussian mechanism's error; a user trial).
    Post-processing of the histogram and public values."""
    j = radius_shell(totals, rho, clipped)
    return float(edges[j]) if j >= 0 else 0.0


def radius_shell(totals: np.ndarray, rho: float, clipped: float) -> int:
    """The last shell whose lower edge the tail histogram's ``totals`` (noise ``rho``) show
    more than ``clipped`` rows beyond, with their noise's one-sided margin at ``TAIL_BETA``
    (the totals above an edge carry the noise of two counts per kept shell); -1 where none
    does. A radius that clips ``clipped`` rows lies above its edge; the bias predictions
    place it there, not in a higher shell whose count clears ``clipped`` by its noise alone:
    200 rows of 20,000 at 30 times the others' norm (a 1% subgroup carrying the mean, d =
    1000), against IOME's 202 clipped, were taken in about half the releases to hold the
    radius, their move predicted 0, and IOME ran, erasing 90-96% of the mean (a user trial).
    Post-processing of the histogram and public values."""
    # The kept shells (``private_tail`` zeroes the others) at or above each edge: their
    # noise is in the rows above it.
    shells_above = np.maximum(rows_beyond((totals != 0.0).astype(np.float64)), 1.0)
    sure = rows_beyond(totals) - (float(ndtri(1.0 - TAIL_BETA)) * tail_pair_std(rho)
                                  * np.sqrt(shells_above))
    holding = np.flatnonzero(sure > clipped)
    return int(holding[-1]) if holding.size else -1


def consistent_pair_medians(l2: float, l1: float, d: int,
                            l2_bound: float = math.inf) -> tuple[float, float]:
    """The private medians of the pairs' l2 and l1 distances, made to agree where they cannot
    both hold (post-processing).

    Every pair's distances satisfy l2 <= l1 <= sqrt(d) l2, so their medians do too, up to the
    medians' rank errors. Each is an exponential mechanism over ``LOG_RANGE`` nats of log
    values, and at small n and rho it can land in the domain's empty ends (at n = 200, d = 3,
    rho = 1, in a third of the runs one of the two did: the guard ``choice_resolves`` takes
    the data's middle as a nat wide, where the mechanism's mass is on a far narrower band).
    Where the two medians lie more than ``PAIR_SLACK`` outside that range, one of them left
    its data, and the other is derived from the one kept as if there were no skew (S = 1 in
    the class notes: l1 / l2 = sqrt(2 d / pi), the ratio for equal coordinate variances).

    Which one left: below the data, an escape lands 1e-5 to 1e-20 of the other (tens of
    empty nats), and its candidate, predicted essentially no noise, was chosen for a release
    whose noise was like the others'; so the larger is kept. But above the data, in a box far
    looser than the rows, there are empty nats too (four columns N(50 (i + 1), 2) in +-10^4,
    n = 200, rho = 1: an l1 median of 5.8e4 beside an l2 of 5.5, in 6 releases of 100, and
    IOME, predicted 3000x its noise, lost to cm at 30x its error). So a median
    ``PAIR_ESCAPE`` times above its private bound (``pair_median_bound``: ``l2_bound`` for l2,
    sqrt(d) times it for l1) is the one that left, and the smaller is kept."""
    isotropic = float(np.sqrt(2.0 * d / np.pi))  # l1 / l2 for equal coordinate variances
    l2_above = l2 > PAIR_ESCAPE * l2_bound
    l1_above = l1 > PAIR_ESCAPE * np.sqrt(d) * l2_bound
    if l1 * PAIR_SLACK < l2:  # l1 below l2: the l1 median left its data, or l2 rose above
        return (l1 / isotropic, l1) if l2_above and not l1_above else (l2, l2 * isotropic)
    if l1 > PAIR_SLACK * np.sqrt(d) * l2:  # l1 above sqrt(d) l2: the l2 median left, or l1
        return (l2, l2 * isotropic) if l1_above and not l2_above else (l1 / isotropic, l1)
    return l2, l1


def pair_median_bound(edges: np.ndarray, totals: np.ndarray, rho: float, n: int) -> float:
    """A bound on the median of random row pairs' l2 distances (not always one: the histogram
    stops at its first shell under the noise, so a thin tail can go uncounted; hence
    ``PAIR_ESCAPE``), from the tail histogram of the row norms (``private_tail``: ``edges``,
    the ``totals`` of its shells, noise
    ``rho``): twice the first edge R beyond which it shows at most ``PAIR_BOUND_BEYOND`` n
    rows, with its noise's one-sided margin at ``TAIL_BETA``. Then at least 0.8 of the rows lie
    within R of the origin, so do both rows of about 0.64 of random pairs (half, with room
    for the median's rank error and the pairs' own sampling), and their distance is at most
    2R. inf where no edge qualifies. Post-processing of the histogram."""
    shells_above = np.maximum(rows_beyond((totals != 0.0).astype(np.float64)), 1.0)
    most = rows_beyond(totals) + (float(ndtri(1.0 - TAIL_BETA)) * tail_pair_std(rho)
                                  * np.sqrt(shells_above))
    within = np.flatnonzero(most <= PAIR_BOUND_BEYOND * n)
    return 2.0 * float(edges[within[0]]) if within.size else math.inf


def smallest_radius(estimator: MeanEstimator, lo: np.ndarray, hi: np.ndarray) -> float:
    """The smallest clipping radius ``estimator`` (cm or iome, on their real-valued path) can
    release in the box [lo, hi] (public): the right end its octave search
    (``private_quantile_octaves``) reaches over [0, B] when every count lands above the target,
    B being cm's norm bound (the box's reach from the origin) and, for iome, at least half the
    box's diagonal (its bound is the distance from its centre, inside the box, to the farthest
    corner). 0 on iome's quantized path (an integer search, which can end at 0)."""
    if isinstance(estimator, ShiftedClippedMean):
        if estimator.quantized:
            return 0.0
        top = float(np.linalg.norm(hi - lo)) / 2.0
    else:
        assert isinstance(estimator, ClippedMean)
        top = box_reach(lo, hi)
    # (A linear search's B / 2^(steps + 1) before the octave search, which left this floor
    # 10^5 times above the radius released in a loose box.)
    return octave_search_lowest(top, estimator.threshold_steps)


class AutoMean(MeanEstimator):
    """Choose the estimator privately, then run it on the rest of the budget.

    Where n and rho cannot place the choice's medians (``choice_resolves``, public), or where
    the choice's share would cost PLAN its scaling (``choice_costs_plan_its_scaling``, public),
    nothing is spent on a choice and PLAN runs on the whole budget (``unresolved_choice``:
    IOME first where the choice cannot be placed and PLAN would spend on variances), or the
    Gaussian mechanism where their minimum n is not met; there, with public bounds,
    where CM's minimum n is met, one count first asks whether most rows lie near the origin
    (``near_origin_share``), and CM runs if they do. For one column with bounds given, two
    counts come first in every case (``faces_share``): where a tenth of the rows or more lie
    in each end quarter of the range, the Gaussian mechanism runs; and two more count the rows
    on each face (``face_mass``): where most rows sit on one face, a clipping candidate that
    would clip every row off it, or whose interval about it meets rows in the far quarter, is
    left out (``loses_to_the_face``), and PLAN is not a candidate where the choice is made
    (its scaling of one coordinate gains nothing; IOME runs with its robust share,
    ``ROBUST_IOME_SHARE``). For one column with bounds, and for a table whose
    columns have ranges of different widths (the box-normalised space), a clipping candidate
    must be predicted ``ONE_COLUMN_MARGIN`` times better than the Gaussian mechanism to run
    (``best_in_own_ranges``).
    Otherwise the choice spends ``choice_share`` of rho (``CHOICE_STAGES``; at most
    ``CHOICE_SHARE``, less where n and rho buy its precision for less) on private medians
    (sensitivity 1: a row is in one value each) of

    - r0, the row norms ||x_i|| (how far the data lies from the origin: CM's radius), by
      noisy counts (``private_median_norm``);
    - l2 and l1, the norms ||a - b||_2 and ||a - b||_1 of differences of random row pairs
      (dense input only; exponential mechanisms on log values, ``_private_median_pair``):
      l2 / sqrt(2) is the typical distance of a row from the mean
      (IOME's radius) and S = sqrt(pi / 2) l1 / (sqrt(d) l2) estimates
      ||sigma||_1 / (sqrt(d) ||sigma||_2), which is 1 for equal coordinate variances and
      small when a few coordinates carry the variance (where PLAN's scaling pays).

    From them it predicts each candidate's l2 noise with the rest of the budget rho_r:

    - gaussian: sqrt(d) ||hi - lo|| / (n sqrt(2 rho_r)) (public: the box);
    - cm: sqrt(d) 2 k r0 / (n sqrt(2 rho_noise)), k = 1 + 3 / sqrt(d) (the clipping
      radius sits above the median norm by a few standard deviations of the norms);
    - iome: the same with l2 / sqrt(2) for r0 and IOME's noise share;
    - plan: iome's prediction times sqrt(iome's noise share / plan's) times
      min(1, S) / ``PLAN_MARGIN`` (S taken as 1 when PLAN's budget cannot resolve
      its variances and it runs without scaling: a public check). PLAN's noise
      is proportional to sqrt(sum_j sigma_j^2 / D_j * sum_j D_j), D_j = sigma_j +
      mean(sigma) (its regularised scale), IOME's to sqrt(d) ||sigma||_2; their ratio lies
      between S and sqrt(2) S (Cauchy-Schwarz below; sigma_j^2 / D_j <= sigma_j and
      <= sigma_j^2 / mean(sigma) above). It sits near the lower end on the data measured
      (1.04 S at Zipf variances with alpha = 1, 1.11 S on MNIST's pixels, 1.18 S at
      alpha = 2), and the margin covers the rest; 2^(1/4) S, the geometric middle used
      before, picked IOME at alpha = 1 where PLAN was 7-26% better;

    and, on dense input, each candidate's clipping bias (``predictions``): ``tail_share``
    of rho (at most ``TAIL_SHARE``; stage ``TAIL_STAGE``) buys a noisy histogram of the row
    norms in geometric shells from r0 up (``private_tail``), and a candidate that aims to clip
    k rows (public: cm's and iome's target rank, PLAN's ``clip_count``) is predicted the
    aligned move of the rows of the far tail above its radius (``clip_bias``), and no less
    noise than at the radius beyond which the histogram shows more than k rows
    (``radius_floor``); where n rho >= 10^4 IOME and PLAN, which clip about a centre, are
    predicted their bias from a second histogram, of the distances from a private centre
    (``centred_tail``, ``centred_clip_bias``); gaussian clips nothing. It runs the candidate
    whose predicted error sqrt(noise^2 + bias^2) is smallest (candidates whose minimum n is
    not met, a public check, are left out). Without the bias, heavy one-sided tails (incomes,
    lognormal or Pareto rows in (0, B)) chose IOME, whose search clips up to n / 4 rows at a
    small budget, at 2-3x CM's error (docs/results.md, "Heavy tails and auto's choice"). The
    pair medians are made consistent first (``consistent_pair_medians``: a median
    that left its data is replaced from the other), and no clipping candidate is predicted less
    than its noise at the smallest radius its search can return (``smallest_radius``).
    Sparse input (baskets) measures r0 only (every choice stage, the tail's too) and chooses
    between gaussian, cm and plan (PLAN's binary instantiation, predicted as cm, times
    ``PLAN_BASKET_GAIN`` where it scales, and times e / (2 r0) where its centre's l2 error e,
    the Gaussian mechanism's on the mean at PLAN's preprocessing share, public, exceeds 2 r0,
    ``PLAN_BASKET_REACH``; cm wins a tie). The choice is a
    function of the private medians and public values only; the chosen estimator's whole plan
    is charged to the stage "release" (its stages are in ``diagnostics["release_ledger"]``)
    and verified.

    Parameters
    ----------
    rho : float, optional
        The zCDP budget; the common parameters are those of :class:`MeanEstimator`.
    interval_share : float or None, default 0.01
        Passed to the candidates that clip (``cm``, ``iome``, ``plan``): the share of their
        budget spent on a clip profile and a clip residual for a narrower confidence
        interval, in [0, 1). The
        default, ``AUTO_INTERVAL_SHARE``, is the candidates' own default
        (``clipped.INTERVAL_SHARE``): on N(0.5, 1) in a loose box (n = 2000, d = 8, rho = 1) it
        narrows the 90% interval of a release that chose IOME from 305 to 58 times its RMSE for
        0.45% more error (docs/results.md). None leaves each candidate's own default (the same
        1%). The predictions read each candidate's plan, so they see what the profile takes
        from the noise.
    **common
        The parameters of :class:`MeanEstimator`.

    Raises
    ------
    InvalidParameterError
        An ``interval_share`` outside [0, 1), or a common parameter :class:`MeanEstimator`
        refuses.

    Privacy
    -------
    rho-zCDP under replace-one, by composition. "choice norms", "choice pair l2" and "choice
    pair l1" take ``choice_share(n)`` rho / 3 each (public: n and rho; nothing when the
    medians cannot resolve, ``choice_resolves``, or the choice would cost PLAN its scaling).
    "choice norms" (every choice stage on sparse input) is one search of at most
    ``CHOICE_NORM_STEPS`` Gaussian counts of sensitivity 1, each its share over the steps; the
    pair stages are exponential-mechanism medians on log values, utility sensitivity 1 (a row
    is in one pair). "choice tail" takes ``tail_share(n)`` rho whenever the choice is made
    (public: n and rho): on dense input the Gaussian mechanism on the shells' counts, l2 sensitivity
    sqrt(2) (the shells are disjoint: a replaced row leaves one and enters one), on sparse
    input one more search for r0 like "choice norms". Where n rho >= 10^4
    (``reads_centred_tail``, public) "choice centre" and "choice centred tail" take
    ``tail_share(n)`` rho each: the Gaussian mechanism on the mean of the clamped rows
    (sensitivity ||hi - lo|| / n), and the tail histogram about it (sensitivity sqrt(2));
    on sparse input two more searches for r0. Without the choice, "choice near origin"
    (``near_origin_share``, public: n, d, rho, the box) is one Gaussian count of sensitivity
    1. For one column with bounds given, "choice faces" (``faces_share``, public: n, d, rho,
    the box) comes first: the Gaussian mechanism on two counts of disjoint ranges, l2
    sensitivity sqrt(2); then "choice face mass" (``FACE_MASS_SHARE`` of rho): the
    Gaussian mechanism on the counts of the rows on each face, disjoint, and the sum of the
    rows' distances from the lower face in widths, l2 sensitivity sqrt(3); the other stages
    take their shares of the rest. "release" takes the rest: the chosen candidate's own plan,
    every stage of which is charged inside it and verified (its events are declared per
    candidate, so an (epsilon, delta) request composes the candidate that runs).
    """

    method = "auto"
    norms_about_origin = True  # the choice's norms and cm's radius, where its plan has them
    # The chosen candidate's keys, and the choice.
    declared_diagnostics = {
        **{key: item for cls in CANDIDATES.values()
           for key, item in cls.diagnostic_declarations().items()},
        "chosen": Diagnostic(Kind.TEXT, "The method that released the mean."),
        "predicted_noise": Diagnostic(Kind.AMOUNTS, "Each candidate's predicted l2 noise "
                                      "(private: from the private medians)."),
        "predicted_bias": Diagnostic(Kind.AMOUNTS, "Each candidate's predicted clipping bias "
                                     "(private: from the tail histogram; absent on baskets "
                                     "and where no choice was made)."),
        "release_ledger": Diagnostic(Kind.AMOUNTS, "The chosen estimator's stages, within the "
                                     "stage \"release\"."),
        "left_out_at_face": Diagnostic(Kind.TEXT, "The clipping candidates left out because most "
                                       "rows sit on a face of one column's range "
                                       "(``loses_to_the_face``; private: from the face "
                                       "counts), comma-separated; absent where none was."),
        "left_out_at_column_end": Diagnostic(Kind.TEXT, "The clipping candidates left out "
                                             "because a column of a table of own ranges is "
                                             "two-sided with few rows at one end "
                                             "(``clips_a_column_end``; private: from the "
                                             "column ends' counts), comma-separated; absent "
                                             "where none was."),
        "robust_iome": Diagnostic(Kind.BOOL, "IOME was a candidate with its search share "
                                  "ROBUST_IOME_SHARE, the rows beyond its radius leaning one way "
                                  "(private: from the histogram about the centre)."),
        "rows_spread": Diagnostic(Kind.BOOL, "Where the choice was not made on a table of "
                                  "columns in their own ranges: whether the noisy count of "
                                  "close row pairs (stage \"choice spread\") found the rows "
                                  "spread over their ranges, so that the Gaussian mechanism "
                                  "ran (private: from that count); absent elsewhere."),
    }
    supports_sparse = True
    supports_secure_noise = True

    def __init__(self, rho: float | None = None, *,
                 interval_share: float | None = AUTO_INTERVAL_SHARE,
                 **common: Any) -> None:
        super().__init__(rho, **common)
        self.interval_share = None if interval_share is None else check_fraction(
            interval_share, "interval_share", low_open=False)
        # Whether ``bounds`` is a private box found by this release (``in_box``), not the
        # caller's: its ends are a power of two beyond the rows, where ``faces_share``'s
        # counts see none.
        self.box_is_private = False

    def in_box(self, rho: float, bounds: Any, random_state: RandomState = None) -> AutoMean:
        inner = super().in_box(rho, bounds, random_state)
        assert isinstance(inner, AutoMean)
        inner.box_is_private = True
        return inner

    def box_stand_ins(self, d: int) -> tuple[Any, ...]:
        # A private box of columns of different widths (a table of mixed scales) gives the
        # plan of a table in its own ranges (``table_of_own_ranges``), whose stages differ
        # from those of equal widths: both are composed (before, a release whose box came out
        # so was refused after the box's charge; a review).
        if d == 1:
            return super().box_stand_ins(d)
        return (*super().box_stand_ins(d), (np.full(d, -1.0), np.append(np.ones(d - 1), 3.0)))

    def check_box_reach(self, n: int, d: int) -> None:
        # Only a plan that measures norms about the origin (the choice's norms and tail, the
        # near-origin count before cm) needs them finite; without those stages IOME, PLAN or
        # the Gaussian mechanism runs, and such a box was released before (a review).
        plan = self.budget_plan(n, d)
        if "choice norms" in plan or NEAR_ORIGIN_STAGE in plan:
            super().check_box_reach(n, d)

    def floating_point_stages(self, n: int, d: int, sparse: bool = False) -> str | None:
        # From the plan (public): the pair medians where the choice is made, PLAN's stages
        # where it is a candidate that meets its n (a false warning before: a review).
        plan = self.budget_plan(n, d)
        rest = plan["release"]
        if "choice norms" in plan:
            plan_may_run = not self.leaves_plan_out(plan) and self.runs("plan", rest, n, d)
        elif SPREAD_STAGE not in plan and self.table_of_own_ranges(n, d):
            plan_may_run = False  # the Gaussian mechanism runs (``release``; a review)
        else:  # the first candidate that meets its n runs
            first = [name for name in self.unresolved_choice(n, d, sparse=sparse)
                     if name == "gaussian" or self.runs(name, rest, n, d)][:1]
            plan_may_run = first == ["plan"]
        # On baskets every choice stage counts norms (Gaussian): no pair medians (a review).
        parts = (["auto's choice medians of pair distances (exponential mechanisms)"]
                 if "choice pair l2" in plan and not sparse else [])
        if plan_may_run:
            parts.append("PLAN's exponential-mechanism stages, where PLAN runs,")
        return " and ".join(parts) or None

    def budget_plan(self, n: int, d: int) -> dict[str, float]:
        plan = self.choice_budget_plan(n, d)
        faces = self.faces_share(n, d)
        if faces is None:
            return plan
        # The faces' counts first; every other stage keeps its share of the rest.
        return {FACES_STAGE: faces * self.rho, FACE_MASS_STAGE: FACE_MASS_SHARE * self.rho,
                **{stage: (1.0 - faces - FACE_MASS_SHARE) * rho
                   for stage, rho in plan.items()}}

    def choice_budget_plan(self, n: int, d: int) -> dict[str, float]:
        """The plan without ``FACES_STAGE``: the choice's stages (``choice_plan``), or the
        count near the origin and the release, or the release alone (public: n, d, rho)."""
        if not self.choice_resolves(n) or self.choice_costs_plan_its_scaling(n, d):
            spread = self.spread_share(n, d)
            if spread is not None:
                return {SPREAD_STAGE: spread * self.rho, "release": (1.0 - spread) * self.rho}
            share = self.near_origin_share(n, d)
            if share is None:
                return {"release": self.rho}
            return {NEAR_ORIGIN_STAGE: share * self.rho, "release": (1.0 - share) * self.rho}
        plan = self.choice_plan(n)
        ends = self.column_ends_share(n, d)
        if ends is None:
            return plan
        # The column ends' counts first; every choice stage keeps its share of the rest.
        return {COLUMN_ENDS_STAGE: ends * self.rho,
                **{stage: (1.0 - ends) * rho for stage, rho in plan.items()}}

    def column_ends_share(self, n: int, d: int) -> float | None:
        """The share of rho for ``COLUMN_ENDS_STAGE`` where the choice is made on a table of
        columns in their own ranges (public: n, d, rho, the box), or None (elsewhere, or
        where no share sees an end holding ``COLUMN_ENDS_SEEN`` of the rows, or no clipping
        candidate meets its minimum n on the rest).

        Why: a 10% flag beside a lognormal amount, N(30, 5) and an exponential column (n =
        1000, rho = 0.3) came out 85% low in 57 releases of 100 (a user trial): the tail
        histogram of the row norms, at 1% of rho, cannot see its ~90 ones, IOME and PLAN were
        predicted 4x better than the Gaussian mechanism on the other columns, and clipped the
        ones onto the zeros."""
        if not self.table_of_own_ranges(n, d):
            return None
        margin = COLUMN_ENDS_SEEN * n / (NEAR_ORIGIN_SDS + FACES_POWER_SDS)
        for share in NEAR_ORIGIN_SHARES:
            if gaussian_noise_std(math.sqrt(2.0 * d), share * self.rho) <= margin and any(
                    self.runs(name, (1.0 - share) * self.rho, n, d) for name in CLIPPING):
                return share
        return None

    def column_end_counts(self, engine: Engine, ledger: PrivacyLedger,
                          rng: np.random.Generator, stage: str = COLUMN_ENDS_STAGE
                          ) -> np.ndarray:
        """The noisy counts (2, d) of rows in the lowest and in the highest ``FACES_REACH``
        of each column's range, both ends closed, charged to ``stage`` (``COLUMN_ENDS_STAGE``
        on a table; ``FACES_STAGE`` for one column, ``end_counts``). A row lies in at most
        one end of each column, so replacing it moves at most two counts of each column by 1:
        l2 sensitivity sqrt(2 d), the Gaussian mechanism. Public: the box, the ranges."""
        width = engine.hi - engine.lo
        bottom = engine.lo + FACES_REACH * width
        # x >= hi - w / 4 is x > the float below it (answers on a scale sit on the quarters);
        # never below the lower end's threshold, so that no row is in both (a box a few
        # floats wide).
        top = np.maximum(np.nextafter(engine.hi - FACES_REACH * width, -np.inf), bottom)
        counts = np.stack([engine.coordinate_counts(IDENTITY, bottom),
                           engine.n - engine.coordinate_counts(IDENTITY, top)]).astype(float)
        return gaussian_mechanism(counts, math.sqrt(2.0 * engine.d), ledger.planned[stage], rng,
                                  ledger=ledger, stage=stage, secure=self.secure_noise)

    @staticmethod
    def clips_a_column_end(ends: np.ndarray, n: int, rho: float, clipped: float) -> bool:
        """Whether some column of the noisy ``column_end_counts`` (noise ``rho``, n rows) is
        two-sided (rows at both ends, the smaller above ``NEAR_ORIGIN_SDS`` standard
        deviations, at most ``COLUMN_MIDDLE`` of the n rows between them) with its smaller end
        at most ``COLUMN_ENDS_CLIPS`` times ``clipped``, the rows a candidate aims to clip
        (public), less ``OFF_FACE_SDS`` sd: the candidate would take that end's rows for
        outliers. Post-processing."""
        sd = gaussian_noise_std(math.sqrt(2.0 * ends.shape[1]), rho)
        smaller = np.min(ends, axis=0)
        middle = n - ends[0] - ends[1]
        return bool(np.any((smaller > NEAR_ORIGIN_SDS * sd) & (middle <= COLUMN_MIDDLE * n)
                           & (smaller - OFF_FACE_SDS * sd <= COLUMN_ENDS_CLIPS * clipped)))

    def faces_share(self, n: int, d: int) -> float | None:
        """The share of rho for ``FACES_STAGE``, or None where it is not asked (public: n, d,
        rho, the box).

        Asked for one column with bounds the caller gave (not in a private box, whose ends
        are a power of two beyond the rows): where its rows lie at both ends of the box
        (a 0/1 flag, answers on a scale, a bimodal column), the box is as wide as the rows'
        spread and the Gaussian mechanism's noise, which follows the box, is within a small
        factor of the best; a clipping candidate's radius search, which at small n rho clips
        up to a quarter of the rows, clips the ends' smaller group onto the other (a user
        trial: a 0/1 column with 22.5% ones, n = 200, rho = 0.1: auto (IOME) and CM released
        1e-81 to 0.06 in most releases, the Gaussian mechanism 0.23). The first of
        ``NEAR_ORIGIN_SHARES`` whose counts' noise (sd 1 / sqrt(share rho), sensitivity
        sqrt(2)) lets a face holding ``FACES_SHARE`` of the rows clear the threshold
        (``NEAR_ORIGIN_SDS`` sd) by ``FACES_POWER_SDS`` sd: sd <= ``FACES_SHARE`` n /
        (``NEAR_ORIGIN_SDS`` + ``FACES_POWER_SDS``)."""
        if d != 1 or self.finds_its_box() or self.box_is_private:
            # A private box is a power of two beyond the rows (a 0/1 column gets (0, 4)):
            # its top quarter is empty and the counts would only cost their share (a review).
            return None
        lo, hi = self.unit_box(n, d)
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
            return None
        margin = FACES_SHARE * n / (NEAR_ORIGIN_SDS + FACES_POWER_SDS)
        for share in NEAR_ORIGIN_SHARES:
            if gaussian_noise_std(ENDS_SENSITIVITY, share * self.rho) <= margin:
                return share
        return None

    def end_counts(self, engine: Engine, ledger: PrivacyLedger,
                   rng: np.random.Generator) -> np.ndarray:
        """The noisy counts of one column's rows in the lowest and in the highest
        ``FACES_REACH`` of the box's width (stage ``FACES_STAGE``, ``faces_share``): the
        ``column_end_counts`` of d = 1, l2 sensitivity sqrt(2) (``ENDS_SENSITIVITY``)."""
        return self.column_end_counts(engine, ledger, rng, FACES_STAGE)[:, 0]

    def rows_at_both_faces(self, ends: np.ndarray, n: int, rho: float) -> bool:
        """Whether both noisy ``end_counts`` (noise ``rho``) exceed ``NEAR_ORIGIN_SDS``
        standard deviations of their noise and ``FACES_LEAST`` of the rows.
        Post-processing."""
        sd = gaussian_noise_std(ENDS_SENSITIVITY, rho)
        return bool(np.min(ends) > max(NEAR_ORIGIN_SDS * sd, FACES_LEAST * n))

    def face_mass(self, engine: Engine, ledger: PrivacyLedger,
                  rng: np.random.Generator) -> np.ndarray:
        """Three noisy sums (stage ``FACE_MASS_STAGE``): the counts of rows on the box's lower
        face and on its upper face (x = lo, x = hi, as clamped), and the rows' distances from
        the lower face in widths of the box, sum_i (x_i - lo) / (hi - lo) (the distances from
        the upper face sum to n less it). Replacing a row moves each count by at most 1 (a
        row lies on at most one face) and the distances by at most 1 (each lies in [0, 1]):
        l2 sensitivity sqrt(3), the Gaussian mechanism. Public: the box."""
        below = engine.coordinate_counts(IDENTITY, engine.lo)[0]
        above = engine.n - engine.coordinate_counts(
            IDENTITY, np.maximum(np.nextafter(engine.hi, -np.inf), engine.lo))[0]
        # Each row's distance taken before the sum (x - lo is exact near lo, where the sum of
        # the rows less n lo would cancel in a box far from the origin).
        in_widths = View(shift=engine.lo, scale=1.0 / (engine.hi - engine.lo))
        rho = ledger.planned[FACE_MASS_STAGE]
        distance = float(release_sums(engine, in_widths, [(0.0, np.inf)],
                                      [(FACE_MASS_SENSITIVITY, rho)], secure=self.secure_noise,
                                      rows=engine.n, bound=1.0, size=3)[0][0])
        return gaussian_mechanism(np.array([below, above, distance], dtype=np.float64),
                                  FACE_MASS_SENSITIVITY, rho, rng,
                                  ledger=ledger, stage=FACE_MASS_STAGE,
                                  secure=self.secure_noise)

    @staticmethod
    def best_in_own_ranges(names: list[str], noise: dict[str, float], bias: dict[str, float],
                           own_ranges: bool) -> str:
        """The candidate ``best_predicted`` picks; where each column has its own range (one
        column with public bounds, or a box-normalised table: ``own_ranges``, public), a
        clipping candidate only where its predicted error, times ``ONE_COLUMN_MARGIN``, is
        still below the Gaussian mechanism's (else the Gaussian mechanism). There the range
        is the column's own (an age's 0-120, a capped income, a scale), a clip gains at most
        the range over its interval's width, and the bias predictions, lower bounds from noisy
        histograms of the rows' norms, miss a sparse far tail, a one-sided floor and, in a
        table, a rare value in one column, which PLAN's and IOME's clips take for an outlier
        (user trials: ages floored at 18 in (0, 120), IOME predicted 1.25x better than the
        Gaussian mechanism and 7-11x worse; incomes capped at 10^6, cm predicted 2x better and
        7.6x worse; a 3% flag among age, income, a scale and a count, n = 3000, rho = 0.5,
        PLAN predicted 1.2x better, which released the flag 61% low, 10x the Gaussian
        mechanism's l2 error, in every seed). The candidates that clip are ranked among
        themselves as before: a margin on their noise alone let one whose bias was not seen
        overtake one whose bias was. Post-processing."""
        best = best_predicted(names, noise, bias)
        if not own_ranges or best not in CLIPPING or "gaussian" not in names:
            return best
        clip_error = math.hypot(noise[best], bias.get(best, 0.0))
        gaussian = math.hypot(noise["gaussian"], bias.get("gaussian", 0.0))
        return best if ONE_COLUMN_MARGIN * clip_error < gaussian else "gaussian"

    def loses_to_the_face(self, ends: np.ndarray, faces: np.ndarray, n: int, rho_ends: float,
                          rho_faces: float, rho_release: float, clipped: float) -> bool:
        """Whether a candidate that aims to clip ``clipped`` rows (public, ``clip_counts``)
        cannot gain on the Gaussian mechanism because most rows sit on one face (its noisy
        count in ``faces``, ``face_mass`` at noise ``rho_faces``, above n / 2) and either

        - the rows off it (n less that count) are at most ``clipped`` and ``OFF_FACE_SDS``
          sd of that count's noise, and they lie far from it (``far_from_the_face``). The
          candidate's centre and radius then sit on the face, every row off it is clipped
          onto it, and the release with them. A 0/1 flag with 1% ones, n = 5000,
          rho = 0.05, was released as 1e-83 by cm, whose search aims to clip 126 rows, and by
          auto, which chose cm (a user trial); with 3% ones, 26% low. Too few for the tail
          histogram or the radius search to see, those rows are the mean. (Rows off the face
          but near it, small counts in a wide range, cost a clip little: there the rule does
          not apply);
        - or the far end's quarter (its count in ``ends``, ``end_counts`` at noise
          ``rho_ends``) holds rows beyond ``NEAR_ORIGIN_SDS`` of its noise: in one column, an
          interval about the face either clips them, each moved by at least half the width,
          or reaches over three quarters of it, whose noise is the Gaussian mechanism's or
          more (a 3% flag at rho = 0.5: cm at 2.2 times its error).

        Post-processing of the counts."""
        # Oriented to the face most rows sit on: its count, the far face's, the far quarter's
        # and the rows' distance from it (from the upper face they sum to n less the lower's).
        lower = faces[0] >= faces[1]
        face, far_face = (float(faces[0]), float(faces[1])) if lower else (
            float(faces[1]), float(faces[0]))
        far = float(ends[1] if lower else ends[0])
        distance = float(faces[2] if lower else n - faces[2])
        if not face > n / 2.0:
            return False
        sd_faces = gaussian_noise_std(FACE_MASS_SENSITIVITY, rho_faces)
        sd_ends = gaussian_noise_std(ENDS_SENSITIVITY, rho_ends)
        return bool((n - face <= clipped + OFF_FACE_SDS * sd_faces
                     and self.far_from_the_face(distance, far_face, far, sd_ends, sd_faces,
                                                rho_release))
                    or far > NEAR_ORIGIN_SDS * sd_ends)

    @staticmethod
    def far_from_the_face(distance: float, far_face: float, far: float, sd_ends: float,
                          sd_faces: float, rho_release: float) -> bool:
        """Whether the rows' ``distance`` from the face most rows sit on (``face_mass``, in
        widths of the box: clipped onto the face, they move the mean by it over n) credibly
        exceeds the Gaussian mechanism's noise on ``rho_release`` (1 / sqrt(2 rho_release) in
        the same units): by ``FAR_EVIDENCE_SDS`` of the noise of the distance itself, or of an
        estimate that never exceeds it, the distance, the far face's count and the far
        quarter's count times 1 - ``FACES_REACH`` (each row there is at least that far)
        weighted by the inverse of their noise's variance, which sees a rare flag at the far
        face with less noise (``far_face``, ``far``: the noisy counts). The first sees rows
        mid-range (5% of the rows at U(2, 5) in (0, 10): cm clipped them onto the face at 6.4x
        the Gaussian mechanism's error, a review), the second rows at the far end.
        Post-processing of the counts."""
        quarter = (1.0 - FACES_REACH) * far
        hidden = gaussian_noise_std(1.0, rho_release)
        weights = np.array([sd_faces, sd_faces, (1.0 - FACES_REACH) * sd_ends]) ** -2.0
        least = float(weights @ np.array([distance, far_face, quarter]) / weights.sum())
        return bool(distance - hidden > FAR_EVIDENCE_SDS * sd_faces
                    or least - hidden > FAR_EVIDENCE_SDS * float(weights.sum() ** -0.5))

    @staticmethod
    def leaves_plan_out(plan: Mapping[str, float]) -> bool:
        """Whether the choice of the plan ``plan`` (public) leaves PLAN out: where it is made
        for one column with bounds, PLAN's scaling of the one coordinate gains nothing on IOME,
        and its clip of sqrt(n) rows and its rank error over 47,104 buckets (hundreds of rows)
        biased counts (Poisson(1) in (0, 30), n = 20,000, rho = 0.2: PLAN in 34 of 40 releases
        at 6.5x the Gaussian mechanism's error, a user trial; IOME's robust share 0.67x)."""
        return FACES_STAGE in plan and "choice norms" in plan

    def near_origin_share(self, n: int, d: int) -> float | None:
        """The share of rho for ``NEAR_ORIGIN_STAGE``, or None where it is not asked (public:
        n, d, rho, the box).

        Where the choice cannot be placed, PLAN runs, or the Gaussian mechanism where PLAN's
        minimum n is not met: its noise follows the box, and in a loose box it erred by 10^4
        to 10^6 times CM's error, silently (a user trial: N(0, 1), n = 100, d = 1 in +-10^6,
        rho = 0.1: 4.4e4 against 0.085), while in a tight one CM, its radius search starved,
        erred 10 times the Gaussian mechanism's (N(50, 5) in (0, 100): 22 against 2.2). So
        one count tells them apart: the first of ``NEAR_ORIGIN_SHARES`` whose count's noise
        (sd 1 / sqrt(2 share rho)) is at most (1 - ``NEAR_ORIGIN_SHARE``) n /
        ``NEAR_ORIGIN_SDS``,
        where no clipping candidate of ``unresolved_choice`` (PLAN, and IOME where it comes
        first) meets its minimum n on the whole budget and CM meets its own on the rest, with
        public bounds (the private box's own search would leave less than these n buy)."""
        if self.finds_its_box() or self.table_of_own_ranges(n, d):
            return None
        if any(self.runs(name, self.rho, n, d)
               for name in self.unresolved_choice(n, d, sparse=False) if name != "gaussian"):
            return None
        margin = (1.0 - NEAR_ORIGIN_SHARE) * n / NEAR_ORIGIN_SDS
        for share in NEAR_ORIGIN_SHARES:
            if (count_noise_std(1, share * self.rho) <= margin
                    and self.runs("cm", (1.0 - share) * self.rho, n, d)):
                return share
        return None

    def runs(self, name: str, rho: float, n: int, d: int) -> bool:
        """Whether the candidate ``name`` at ``rho`` meets its minimum n in the given box
        (public: n, d, rho, the box; the bounds must be given)."""
        candidate = self.candidate(name, rho)
        return n >= candidate.minimum_rows(n, *self.unit_box(n, d), candidate.budget_plan(n, d))

    def unresolved_choice(self, n: int, d: int, sparse: bool) -> tuple[str, ...]:
        """The candidates, in the order the first runnable one runs, where no choice is made
        (public: n, d, rho, the box, the input's kind): ``UNRESOLVED_CHOICE``, with IOME first
        on dense input where the choice cannot be placed and PLAN would run and spend its
        preprocessing on variances. PLAN's centre then has a quarter of what IOME's has: in
        loose boxes it lost to IOME by up to 10x (n = 500, d = 10, rho = 0.1, 20 releases:
        N(100, 10) in +-10^6 13.3 against 1.35, Zipf variances in a loose box 1.57 against
        0.51, a user trial's case), while in tight boxes with skewed variances or a few
        high-variance coordinates IOME loses 1.3-1.9x (a review; docs/results.md). Only where
        PLAN runs: below its minimum n IOME's would have taken the place of cm or the Gaussian
        mechanism (an MNIST pixel, n = 30, rho = 2: 9x). Where PLAN buys no variances (n =
        569, d = 30, epsilon = 1) it was 10% better than IOME and stays first. On a table of
        columns in their own ranges these run only where ``rows_spread`` finds the rows
        concentrated; else the Gaussian mechanism."""
        if (sparse or self.choice_resolves(n)
                or "variance" not in self.candidate("plan", self.rho).budget_plan(n, d)
                or (not self.finds_its_box() and not self.runs("plan", self.rho, n, d))):
            return UNRESOLVED_CHOICE
        return ("iome", *UNRESOLVED_CHOICE)

    def table_of_own_ranges(self, n: int, d: int) -> bool:
        """Whether the release runs on a table whose columns have public ranges of different
        widths (the box-normalised space, ``box_scale``; public: the bounds given, n, d)."""
        return d > 1 and not self.finds_its_box() and self.box_scale(n, d) is not None

    def spread_share(self, n: int, d: int) -> float | None:
        """The share of rho for ``SPREAD_STAGE`` where the choice is not made on a table of
        columns in their own ranges (public: n, d, rho, the box), or None there too where no
        share resolves it (the Gaussian mechanism then runs), and elsewhere.

        Why: unweighed, IOME and PLAN clipped a survey's 20% flag to about 15% in every
        release (n = 500, rho = 0.1: l2 error in widths 58 and 44 x 10^-3 against the Gaussian
        mechanism's 26; four user trials saw the like), and where the choice is made a clip
        must be predicted ``ONE_COLUMN_MARGIN`` times better to run there. But ranges far
        looser than the rows (N(50, 5) in (0, 10^4) beside three alike) favour IOME 40-fold.
        The first of ``NEAR_ORIGIN_SHARES`` whose count's noise (sd 1 / sqrt(2 share rho))
        is at most (1 - ``SPREAD_CLOSE``) of the floor(n / 2) pairs over ``NEAR_ORIGIN_SDS``
        and whose rest of rho lets a clipping candidate of ``unresolved_choice`` meet its
        minimum n. Asked where the choice is not made (``choice_budget_plan``)."""
        if not self.table_of_own_ranges(n, d):
            return None
        margin = (1.0 - SPREAD_CLOSE) * (n // 2) / NEAR_ORIGIN_SDS
        clipping = [name for name in self.unresolved_choice(n, d, sparse=False)
                    if name != "gaussian"]
        for share in NEAR_ORIGIN_SHARES:
            # Only where a clipping candidate meets its minimum n on the rest: else the count
            # could only choose the Gaussian mechanism (a trial: 10% of rho spent for it).
            if count_noise_std(1, share * self.rho) <= margin and any(
                    self.runs(name, (1.0 - share) * self.rho, n, d) for name in clipping):
                return share
        return None

    def rows_spread(self, engine: Engine, ledger: PrivacyLedger,
                    rng: np.random.Generator) -> bool:
        """Whether the noisy count of random row pairs (a public permutation) within
        1 / ``SPREAD_DIVISOR`` of the narrowest column's width of each other (l2, in the
        engine's box-normalised space) is at most ``SPREAD_CLOSE`` of the pairs: the rows then
        spread over some range, and the Gaussian mechanism runs. One row is in one pair: a
        sensitivity-1 count (``noisy_count``), stage ``SPREAD_STAGE``.

        A column that fills its range (a flag, a scale, ages in (0, 120)) parts most pairs by
        more than that; within 1/8 of the diagonal, half the pairs of a survey with a 20% flag
        beside generous ranges were near, and IOME clipped the flag to 0.03-0.06 (a trial)."""
        reach = float(np.min(engine.hi - engine.lo)) / SPREAD_DIVISOR
        _, squared = pair_distances(engine, rng.permutation(engine.n))
        distances = np.sqrt(squared)
        count = self.charged_count(SPREAD_STAGE,
                                   lambda t: np.array([np.count_nonzero(distances <= v)
                                                       for v in np.atleast_1d(t)]),
                                   reach, ledger, rng)
        return count <= SPREAD_CLOSE * distances.size

    def choice_plan(self, n: int) -> dict[str, float]:
        """The plan where the choice is made (public: n and rho): ``choice_share`` split over
        ``CHOICE_STAGES``, ``tail_share`` to each of ``TAIL_STAGES`` it buys (the centre's
        two where ``reads_centred_tail``), the rest "release"."""
        choice = self.rho * self.choice_share(n)
        tails = {stage: self.rho * self.tail_share(n) for stage in TAIL_STAGES
                 if stage == TAIL_STAGE or self.reads_centred_tail(n)}
        return {**{stage: choice / len(CHOICE_STAGES) for stage in CHOICE_STAGES}, **tails,
                "release": self.rho - choice - sum(tails.values())}

    def choice_resolves(self, n: int) -> bool:
        """Whether the choice's medians can be placed (public: n and rho). Each is an
        exponential mechanism, eps = sqrt(8 rho_stage), over at least m = floor(n / 2) values
        (the pairs) on a ``LOG_RANGE``-nat domain, and puts at most (LOG_RANGE / w)
        exp(-eps m / 4) of its mass on the domain's empty ends, relative to the nat-wide middle
        of the data (PLAN's guard, ``pair_median_resolves``, for one mechanism): we ask
        eps m / 4 >= ln(LOG_RANGE / CHOICE_BETA). Below it (e.g. n = 569 at epsilon = 1) the
        predictions are noise, so nothing is spent on them and ``unresolved_choice`` runs on
        the whole budget: PLAN, which is within a few per cent of IOME where there is no skew
        and better where there is, unless it would spend its preprocessing on variances (then
        IOME), or the Gaussian mechanism where their minimum n is not met."""
        eps = np.sqrt(8.0 * self.rho * CHOICE_SHARE / len(CHOICE_STAGES))
        return bool(eps * (n // 2) / 4.0 >= np.log(LOG_RANGE / CHOICE_BETA))

    def choice_share(self, n: int) -> float:
        """The share of rho the choice spends (public: n and rho): ``CHOICE_SHARE``, or the
        smallest share at which each median's rank error has a standard deviation of at most
        ``CHOICE_RANK_ERROR`` of its m = floor(n / 2) values, if that is less.

        Each median is an exponential mechanism on ranks with sensitivity 1, eps =
        sqrt(8 rho_stage): near the middle its rank error is Laplace with scale 2 / eps, so
        standard deviation 2 sqrt(2) / eps. Asking that to be at most c m (c =
        ``CHOICE_RANK_ERROR``) gives rho_stage >= 1 / (c m)^2, and the share is
        len(CHOICE_STAGES) / ((c m)^2 rho). c = 2% is the precision 3% buys at n = 4000 and
        rho = 1/16 (Gaussian A, d = 16, Appendix G), where the candidates lie within 6% of each
        other and the choice is hardest; at n = 10^4 and rho = 1/8 it costs 0.24% instead of
        3%, and the rest goes to the release. Below that precision the share stays at
        ``CHOICE_SHARE`` (whether the medians resolve at all is ``choice_resolves``)."""
        needed = len(CHOICE_STAGES) / ((CHOICE_RANK_ERROR * (n // 2)) ** 2 * self.rho)
        return min(CHOICE_SHARE, needed)

    def tail_share(self, n: int) -> float:
        """The share of rho the tail histogram spends where the choice is made (public: n and
        rho): ``TAIL_SHARE``, or less where less gives its counts (Gaussian, l2 sensitivity
        sqrt(2), so standard deviation 1 / sqrt(rho_tail)) a standard deviation of at most
        ``TAIL_PRECISION`` sqrt(n): 1 / (TAIL_PRECISION^2 n rho). At MNIST's n = 70,000 and
        rho = 1/2 that is 0.29%; below n rho = 10^4 it is the cap."""
        return min(TAIL_SHARE, 1.0 / (TAIL_PRECISION**2 * n * self.rho))

    def reads_centred_tail(self, n: int) -> bool:
        """Whether the choice buys a centre and the tail histogram about it (``centred_tail``;
        public: n and rho): where n rho is at least 1 / (``TAIL_PRECISION``^2 ``TAIL_SHARE``)
        = 10^4, the tail's share then meeting its precision within its cap. Below it the
        counts' noise (a std of sqrt(n) / 10 rows a shell or more) hides the few hundred rows
        IOME clips, and the centre's noise tilts the sides: at n = 5000, rho = 1/5 it saw
        nothing of a lognormal column's tail, and at n = 3000, rho = 1/20 its 2% of the budget
        bought nothing (scripts/heavy_tails.py)."""
        return bool(TAIL_PRECISION**2 * n * self.rho * TAIL_SHARE >= 1.0)

    def choice_costs_plan_its_scaling(self, n: int, d: int) -> bool:
        """Whether PLAN resolves its coordinate variances on the whole budget but not on what
        the choice would leave it (public: n, d, rho; PLAN's own guard). There the choice's
        ``choice_share`` would turn PLAN into PLAN without scaling and its skew gain into
        nothing the predictions could see (Gaussian C, d = 2048, rho = 1/16, when the share was
        a flat 3%: auto chose IOME at 2.2x PLAN's error over 50 runs), so nothing is spent on
        the choice and ``UNRESOLVED_CHOICE`` runs. On isotropic data PLAN is then within about
        1.1x of IOME (docs/results.md, Appendix G). With the share sized by n and rho no PLAN
        grid setting falls in this band (at that one the share is 0.48% and PLAN keeps its
        scaling)."""
        def scales(rho: float) -> bool:
            return "variance" in self.candidate("plan", rho).budget_plan(n, d)
        # What the choice leaves: its plan's rest, less the column ends' share where a table
        # of own ranges buys them (``choice_budget_plan``).
        rest = self.choice_plan(n)["release"] * (1.0 - (self.column_ends_share(n, d) or 0.0))
        return scales(self.rho) and not scales(rest)

    def stage_events(self, plan: Mapping[str, float], n: int, d: int,
                     sparse: bool = False) -> dict[str, Event] | None:
        """The row norms' medians are Gaussian counts (``private_median_norm``: "choice norms",
        and every choice stage on sparse input), the pair medians exponential mechanisms; the
        stage "release" is a ``ChoiceEvent`` among every candidate's plan for (n, d) (a
        superset of those the public checks leave runnable, which only makes it more
        pessimistic). None if a candidate does not declare its mechanisms."""
        options = []
        names = ([*CANDIDATES] if "choice norms" in plan
                 else [*self.unresolved_choice(n, d, sparse)])
        if NEAR_ORIGIN_STAGE in plan:
            names.append("cm")
        if FACES_STAGE in plan and "gaussian" not in names:
            names.append("gaussian")
        variants = [(name, False) for name in names]
        if CENTRE_STAGE in plan or FACES_STAGE in plan:  # IOME's robust share may run
            variants.append(("iome", True))
        for name, robust in variants:
            candidate = self.candidate(name, plan["release"], robust)
            if candidate.stage_events(candidate.budget_plan(n, d), n, d, sparse) is None:
                return None
            options.append(tuple(candidate.plan_events(n, d, sparse)))
        norms = norm_stages(sparse)
        choice = {stage: gaussian_event(plan[stage], self.secure_noise)
                  if stage in (*norms, *TAIL_STAGES, NEAR_ORIGIN_STAGE, SPREAD_STAGE,
                               COLUMN_ENDS_STAGE,
                               *FACE_STAGES)
                  else exponential_event(plan[stage])
                  for stage in (*CHOICE_STAGES, *TAIL_STAGES, NEAR_ORIGIN_STAGE, SPREAD_STAGE,
                                COLUMN_ENDS_STAGE,
                                *FACE_STAGES)
                  if stage in plan}
        return {**choice, "release": ChoiceEvent(tuple(options))}

    def rows_near_origin(self, engine: Engine, ledger: PrivacyLedger,
                         rng: np.random.Generator) -> bool:
        """Whether the noisy count of rows within ``NEAR_ORIGIN_REACH`` of the Gaussian
        mechanism's predicted l2 error on the rest of the budget (sqrt(d) ||hi - lo|| /
        (n sqrt(2 rho_rest)), in the engine's space, where CM clips) from the origin exceeds
        ``NEAR_ORIGIN_SHARE`` of n: one sensitivity-1 count (``noisy_count``), stage
        ``NEAR_ORIGIN_STAGE`` (``near_origin_share``). Rows that near clipped all the way to
        the origin (CM's target rank at this n rho is low: it clips most rows, a review)
        leave a bias under that error. A first version asked for half the rows within 1/8
        of the width: CM then erred 1.5-12 times the Gaussian mechanism's error on rows a
        few per cent of the width out (N(8, 4) in (0, 100), mixtures half at 0)."""
        reach = NEAR_ORIGIN_REACH * gaussian_error(engine, ledger.planned["release"])
        count = self.charged_count(NEAR_ORIGIN_STAGE, lambda t: engine.norm_counts(IDENTITY, t),
                                   reach, ledger, rng)
        return count > NEAR_ORIGIN_SHARE * engine.n

    def charged_count(self, stage: str, count_le: Callable[[np.ndarray], np.ndarray],
                      reach: float, ledger: PrivacyLedger, rng: np.random.Generator) -> float:
        """One noisy count of the values at most ``reach`` (``count_le``: counts at thresholds;
        sensitivity 1, ``noisy_count``) at the rho the plan gives ``stage``, checked and
        charged to it before it is drawn."""
        rho = ledger.planned[stage]
        check_octave_search(1, rho, 2.0 * reach, self.secure_noise)
        ledger.charge(stage, *search_cost_event(np.zeros(1), rho, self.secure_noise))
        return noisy_count(count_le, reach, rho=rho, rng=rng, secure=self.secure_noise)

    def candidate(self, name: str, rho: float, robust: bool = False) -> MeanEstimator:
        """The estimator ``name`` with budget ``rho`` and this one's common settings (and its
        ``interval_share``, for the candidates that clip); IOME with ``ROBUST_IOME_SHARE``
        where ``robust``."""
        options: dict[str, Any] = {}
        if self.interval_share is not None and name != "gaussian":
            options["interval_share"] = self.interval_share
        if robust and name == "iome":
            options["threshold_share"] = ROBUST_IOME_SHARE
        return CANDIDATES[name](rho, bounds=self.bounds, secure_noise=self.secure_noise,
                                engine=self.engine, **options)

    def predictions(self, engine: Engine, rho_rest: float, ledger: PrivacyLedger,
                    rng: np.random.Generator, one_column: bool = False
                    ) -> tuple[dict[str, float], dict[str, float], bool]:
        """Each candidate's predicted l2 noise and clipping bias (private: the medians and the
        tail histogram; see the class notes). No bias is predicted on baskets (empty).

        The tail histogram (``private_tail``, stage ``TAIL_STAGE``) serves both: a candidate
        aiming to clip k rows (``clip_counts``) is predicted no less noise than at the radius
        the histogram shows more than k rows beyond (``radius_floor``; for IOME and PLAN, whose
        distances are from a centre, that radius less r0), and the bias of the one-sided far
        tail above its radius (``clip_bias``)."""
        n = engine.n
        reach = box_reach(engine.lo, engine.hi)
        # On baskets every choice stage measures r0 (``norm_stages``); their geometric mean is
        # used (post-processing).
        measured = [private_median_norm(engine, reach, rho=ledger.planned[stage], ledger=ledger,
                                        rng=rng, stage=stage, secure=self.secure_noise)
                    for stage in norm_stages(engine.baskets) if stage in ledger.planned]
        r0 = measured[0] if len(measured) == 1 else float(np.exp(np.mean(np.log(measured))))
        if engine.baskets:
            return self.predicted_noise(engine, r0, rho_rest), {}, False
        edges = tail_edges(r0, reach)
        rho_tail = ledger.planned[TAIL_STAGE]
        up, down = private_tail(engine, edges, r0, rho=rho_tail, ledger=ledger, rng=rng,
                                stage=TAIL_STAGE, secure=self.secure_noise)
        pairs = self.pair_medians(engine, ledger, rng,
                                  pair_median_bound(edges, up + down, rho_tail, n))
        centred = (self.centred_tail(engine, pairs[0] / math.sqrt(2.0), ledger, rng)
                   if CENTRE_STAGE in ledger.planned else None)

        def predicted(robust: bool) -> tuple[dict[str, float], dict[str, float]]:
            clips = self.clip_counts(engine, rho_rest, robust)
            floors = {name: max(0.0, radius_floor(edges, up + down, rho_tail, k)
                                - (0.0 if name == "cm" else r0)) for name, k in clips.items()}
            noise = self.predicted_noise(engine, r0, rho_rest, floors, pairs, robust)
            bias = {name: clip_bias(edges, up, down, clips[name], n, rho_tail)
                    for name in noise if name in clips}
            if centred is not None:
                # IOME and PLAN clip about their centre (PLAN in its scaled space: the
                # unscaled distances stand in for them).
                edges_c, up_c, down_c, tilt = centred
                bias.update({name: centred_clip_bias(edges_c, up_c, down_c, clips[name], n,
                                                     ledger.planned[CENTRED_TAIL_STAGE], tilt)
                             for name in ("iome", "plan") if name in bias})
            return noise, {"gaussian": 0.0, **bias}

        noise, bias = predicted(robust=False)
        # IOME predicted best while the rows beyond its radius lean one way: a one-sided tail,
        # whose far part the histogram may not resolve (ages beside incomes in (0, 10^6): it
        # saw a hundredth of the move, and IOME ran at 3-5x the Gaussian mechanism's error).
        # IOME is then a candidate that clips about sqrt(n) rows, not hundreds, and the
        # choice is made again. (Only where IOME would run: on MNIST, whose far rows lean one
        # way too, PLAN runs as before.) For one column with bounds (``one_column``, public)
        # always: its rows' tail is one of two sides, and the hundreds of rows the 1% share
        # clips at small n rho are a sixth of a count's rows, its upper tail with them, which
        # the histogram cannot see (Poisson(2.5) in (0, 20), n = 3000, rho = 0.1: IOME ran in
        # 16 of 40 releases at 7.7x the Gaussian mechanism's error, a user trial; 1.4x with
        # this). Post-processing.
        robust = one_column or (
            centred is not None and best_predicted(noise, noise, bias) == "iome" and (
                leans_one_way(centred[1], centred[2], ledger.planned[CENTRED_TAIL_STAGE],
                              centred[3])))
        if robust:
            noise, bias = predicted(robust=True)
        return noise, bias, robust

    def centred_tail(self, engine: Engine, typical: float, ledger: PrivacyLedger,
                     rng: np.random.Generator
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
        """The tail histogram about a private centre (``CENTRE_STAGE``: the Gaussian mechanism
        on the mean, ``noisy_mean``), in shells from the rows' ``typical`` distance from it up
        (``CENTRED_TAIL_STAGE``): (edges, up, down) as ``private_tail`` gives them, and the
        tilt, or None where the centre's noise, sqrt(d) times its standard deviation s
        (public), exceeds ``CENTRE_NOISE`` times ``typical`` (private: the pairs' median
        distance over sqrt(2)). Both stages are spent either way (their plan is public).

        The tilt: the centre's error along u moves the hyperplane that sides the rows by about
        z s (z at ``TAIL_BETA``), and rows whose projections on u spread as a symmetric bulk's,
        with standard deviation about typical / sqrt(d), change sides by up to sqrt(2 / pi)
        z s sqrt(d) / typical of them: on N(0.5, 1) in d = 8 (n = 2000, rho = 1/2) that tilt
        predicted IOME a bias in 7 releases of 60 and chose CM at 8% more error.
        Post-processing of the released centre and histogram."""
        rho_centre = ledger.planned[CENTRE_STAGE]
        centre = noisy_mean(engine, rho=rho_centre, ledger=ledger, rng=rng, stage=CENTRE_STAGE,
                            secure=self.secure_noise)
        reach = box_reach(engine.lo - centre, engine.hi - centre)
        edges = tail_edges(typical, reach)
        up, down = private_tail(engine, edges, typical, rho=ledger.planned[CENTRED_TAIL_STAGE],
                                ledger=ledger, rng=rng, stage=CENTRED_TAIL_STAGE,
                                centre=centre, secure=self.secure_noise)
        sensitivity = float(np.linalg.norm(engine.hi - engine.lo)) / engine.n
        offset = math.sqrt(engine.d) * gaussian_noise_std(sensitivity, rho_centre)
        if not offset <= CENTRE_NOISE * typical:
            return None
        tilt = math.sqrt(2.0 / math.pi) * float(ndtri(1.0 - TAIL_BETA)) * offset / typical
        return edges, up, down, tilt

    def clip_counts(self, engine: Engine, rho_rest: float,
                    robust: bool = False) -> dict[str, float]:
        """How many rows each candidate that clips aims to clip, on the rest of the budget
        (public: n, d, the box, its plan): n minus cm's and iome's target rank (IOME's
        ``robust`` variant's where asked), PLAN's ``clip_count``."""
        n, d = engine.n, engine.d
        clips = {}
        for name in CLIPPING:
            candidate = self.candidate(name, rho_rest, robust)
            plan = candidate.budget_plan(n, d)
            if isinstance(candidate, PrivateLimitAdaptedNoise):
                clips[name] = candidate.clip_count(n, plan["threshold"])
            else:
                assert isinstance(candidate, ClippedMean)
                clips[name] = n - candidate.target_rank(n, engine.lo, engine.hi, plan)
        return clips

    def pair_medians(self, engine: Engine, ledger: PrivacyLedger, rng: np.random.Generator,
                     l2_bound: float = math.inf) -> tuple[float, float]:
        """The private medians of random row pairs' l2 and l1 distances (stages "choice pair
        l2" and "choice pair l1"), made consistent (``consistent_pair_medians``, with the l2
        median's private upper bound ``l2_bound``)."""
        width = float(np.linalg.norm(engine.hi - engine.lo))
        l1, squared = pair_distances(engine, rng.permutation(engine.n))
        l2_med = _private_median_pair(np.sqrt(squared), width,
                                      rho=ledger.planned["choice pair l2"], ledger=ledger,
                                      rng=rng, stage="choice pair l2")
        l1_med = _private_median_pair(l1, float(np.sum(engine.hi - engine.lo)),
                                      rho=ledger.planned["choice pair l1"], ledger=ledger,
                                      rng=rng, stage="choice pair l1")
        return consistent_pair_medians(l2_med, l1_med, engine.d, l2_bound)

    def predicted_noise(self, engine: Engine, r0: float, rho_rest: float,
                        floors: Mapping[str, float] | None = None,
                        pairs: tuple[float, float] | None = None,
                        robust: bool = False) -> dict[str, float]:
        """Each candidate's predicted l2 noise (private: the median norm ``r0`` and, on dense
        input, the pair medians ``pairs``, ``pair_medians``; see the class notes), at a radius
        no smaller than its ``floors`` entry (cm, iome; PLAN follows iome's). Post-processing:
        it draws nothing."""
        floors = floors or {}
        n, d = engine.n, engine.d
        spread = 1.0 + 3.0 / np.sqrt(d)

        def clipped(radius: float, estimator: MeanEstimator) -> float:
            # Never below the noise at the smallest radius the candidate's search can return:
            # a median that left its data predicted 1e-17 for a release whose noise std was
            # like the others' (``consistent_pair_medians``).
            rho_noise = estimator.budget_plan(n, d)["noise"]
            clip = max(spread * radius, smallest_radius(estimator, engine.lo, engine.hi),
                       floors.get(estimator.method, 0.0))
            return float(np.sqrt(d) * 2.0 * clip / (n * np.sqrt(2.0 * rho_noise)))

        cm = clipped(r0, self.candidate("cm", rho_rest))
        predicted = {"gaussian": gaussian_error(engine, rho_rest),
                     "cm": cm}
        if engine.baskets:
            # PLAN's binary instantiation clips about a centre that is the Gaussian mechanism's
            # mean, whose l2 error e grows with the box, not with the rows (public): far
            # beyond the rows' median norm r0 its radius, and its noise, grow as e / r0.
            # Nearer, its scaling by the item frequencies gains (on the basket files, rho 0.05
            # to 2: 0.89-1.00 times CM's error where e < r0, 1.22 at e = 1.7 r0; on word
            # counts capped at 20 in (0, 20) and (0, 30), 0.74-0.80 at e up to 1.8 r0: a
            # review), credited as ``PLAN_BASKET_GAIN`` up to e = ``PLAN_BASKET_REACH`` r0.
            # Predicted as CM alone (a tie PLAN won), it ran on real-valued sparse rows in a
            # box of +-1000 at 570 times CM's error (a user trial: n = 20,000, d = 2,000,
            # rho = 0.5; e = 408 against r0 = 0.49). Where its plan has no centre stage the
            # centre is the box's point nearest the origin (``public_centre``), which r0 is
            # measured from (e = 0); where it has no variance stage it does not scale, and
            # CM, listed first, wins the tie.
            plan = self.candidate("plan", rho_rest).budget_plan(n, d)
            pooled = sum(plan.get(stage, 0.0) for stage in (*CENTRE_STAGES, *VARIANCE_STAGES))
            off = gaussian_error(engine, pooled) if plans_a_centre(plan) else 0.0
            apart = max(1.0, off / (PLAN_BASKET_REACH * r0)) if r0 > 0.0 else math.inf
            gain = PLAN_BASKET_GAIN if "variance" in plan else 1.0
            return {"gaussian": predicted["gaussian"], "cm": cm, "plan": cm * apart * gain}
        assert pairs is not None  # dense input: measured by ``predictions``
        l2_med, l1_med = pairs
        skew = float(np.sqrt(np.pi / 2.0) * l1_med / (np.sqrt(d) * l2_med))
        iome = self.candidate("iome", rho_rest, robust)
        predicted["iome"] = clipped(l2_med / np.sqrt(2.0), iome)
        plan = self.candidate("plan", rho_rest).budget_plan(n, d)
        # PLAN's noise stage gets its own share of the budget (its preprocessing costs more
        # than IOME's), and it scales only when its budget resolves the variances (a public
        # check: without a "variance" stage it is PLAN without scaling, no skew gain).
        shares = np.sqrt(iome.budget_plan(n, d)["noise"] / plan["noise"])
        gain = min(1.0, skew) if "variance" in plan else 1.0
        predicted["plan"] = predicted["iome"] * shares * gain / PLAN_MARGIN
        return predicted

    def release(
        self, engine: Engine, budget: dict[str, float], ledger: PrivacyLedger,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        n, d = engine.n, engine.d
        rho_rest = budget["release"]
        ends = (self.end_counts(engine, ledger, rng) if FACES_STAGE in budget else None)
        faces = (self.face_mass(engine, ledger, rng) if FACE_MASS_STAGE in budget else None)
        at_faces = (ends is not None
                    and self.rows_at_both_faces(ends, n, ledger.planned[FACES_STAGE]))
        column_ends = (self.column_end_counts(engine, ledger, rng)
                       if COLUMN_ENDS_STAGE in budget else None)
        resolved = "choice norms" in budget  # public (choice_resolves)
        predicted, bias, robust = (self.predictions(engine, rho_rest, ledger, rng,
                                                    one_column=ends is not None)
                                   if resolved else (None, {}, False))
        near_origin = (self.rows_near_origin(engine, ledger, rng)
                       if NEAR_ORIGIN_STAGE in budget else False)
        spread = (self.rows_spread(engine, ledger, rng) if SPREAD_STAGE in budget
                  else self.table_of_own_ranges(n, d) and not resolved)
        names = (predicted if predicted is not None else
                 ("cm",) if near_origin else ("gaussian",) if spread
                 else self.unresolved_choice(n, d, engine.baskets))
        candidates = {name: self.candidate(name, rho_rest, robust) for name in names}
        plans = {name: c.budget_plan(n, d) for name, c in candidates.items()}
        # Public checks: each candidate's minimum n, and PLAN left out (``leaves_plan_out``).
        runnable = [name for name, c in candidates.items()
                    if n >= c.minimum_rows(n, engine.lo, engine.hi, plans[name])
                    and not (name == "plan" and self.leaves_plan_out(budget))]
        left_out: list[str] = []
        ended: list[str] = []
        if ends is not None and faces is not None and any(name in CLIPPING
                                                          for name in runnable):
            # A candidate that cannot gain where most rows sit on a face is left out
            # (post-processing of the face counts and its public clip count).
            clips = self.clip_counts(engine, rho_rest, robust)
            left_out = [name for name in runnable if name in CLIPPING and self.loses_to_the_face(
                ends, faces, n, ledger.planned[FACES_STAGE], ledger.planned[FACE_MASS_STAGE],
                rho_rest, clips[name])]
            runnable = [name for name in runnable if name not in left_out]
        if column_ends is not None and any(name in CLIPPING for name in runnable):
            # A candidate that would clip a column's smaller end (a flag's ones) is left out
            # (post-processing of the column ends' counts and its public clip count).
            clips = self.clip_counts(engine, rho_rest, robust)
            ended = [name for name in runnable if name in CLIPPING and self.clips_a_column_end(
                column_ends, n, ledger.planned[COLUMN_ENDS_STAGE], clips[name])]
            runnable = [name for name in runnable if name not in ended]
        if not runnable or at_faces:
            # Rows at both ends of the box (``faces_share``), or no candidate meets its n.
            name = "gaussian"
            candidates.setdefault(name, self.candidate(name, rho_rest))
            plans.setdefault(name, candidates[name].budget_plan(n, d))
        elif predicted is None:
            name = runnable[0]  # ``unresolved_choice``'s order
        else:
            own_ranges = ends is not None or self.box_scale(n, d) is not None  # public
            name = self.best_in_own_ranges(runnable, predicted, bias, own_ranges)
        chosen = candidates[name]
        inner = PrivacyLedger(rho_rest)
        inner_budget = inner.plan(plans[name])
        sparse = engine.baskets
        declared = self.stage_events(ledger.planned, n, d, sparse)
        ledger.charge("release", rho_rest, None if declared is None else declared["release"])
        mean, diagnostics = chosen.release(engine, inner_budget, inner, rng)
        inner.verify()
        chosen.check_events(inner, n, d, sparse)  # it ran its own declaration ...
        choice = None if declared is None else declared["release"]
        if isinstance(choice, ChoiceEvent) and not any(
                equivalent_events(chosen.plan_events(n, d, sparse), option)
                for option in choice.options):
            # ... and that declaration is one of the choice's options, which an (epsilon,
            # delta) request was calibrated to (a review: nothing checked it).
            raise PrivacyAccountingError(
                f"auto: {name}'s plan is not one of the choice's declared options; the release "
                f"must not leave")
        extra: dict[str, Any] = {"predicted_bias": bias} if bias else {}
        if left_out:
            extra["left_out_at_face"] = ", ".join(left_out)
        if ended:
            extra["left_out_at_column_end"] = ", ".join(ended)
        if robust:
            extra["robust_iome"] = True
        if SPREAD_STAGE in budget:
            extra["rows_spread"] = spread  # its noisy count's answer (post-processing)
        return mean, {**diagnostics, "chosen": name, "predicted_noise": predicted, **extra,
                      "release_ledger": dict(inner.spent)}
