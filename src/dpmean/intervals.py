"""Confidence intervals for a private mean: the noise and the bias of one release (issue 19).

An interval here is a statement about the mechanism's randomness for the data at hand: with
probability at least ``level`` over the noise of the release, it contains the exact mean of the
data after clamping to the public box. It assumes nothing about how the data was drawn (it is
not an interval for a population mean) and it is built from private and public values only: the
released mean, the private radius and centre, the noise scale, a private count where one was
released, and public settings in the diagnostics.

Notation: x a row clamped to the box [lo, hi] (original units); the estimator's view is
u = F (x - c) with F a diagonal of positive factors f_j (possibly after an orthogonal rotation
R: u = R F (x - c)), c a released or public centre; B a bound on every view norm ||u||
(``norm_bound``; PLAN's ``view_norm_bound``); C the private radius; n rows, d coordinates;
``alpha = 1 - level``.

**Noise.** The last stage is the Gaussian mechanism with a released standard deviation
(``diagnostics["noise_std"]``, per coordinate in original units: a box-normalised release maps
it back, PLAN's is divided here by its scale b_j, IOME's rotation is orthogonal and keeps it
isotropic). Per coordinate the half-width is the exact two-sided quantile z(alpha_noise / 2)
std_j; in l2 the chi quantile (isotropic) or Laurent-Massart (2000, Lemma 1) for unequal scales.
With ``secure_noise=True`` the release is gamma (round(v / gamma) + Z), Z the discrete Gaussian
on the integers of variance s^2 (rounded up to a multiple of 2^-30) with gamma s <=
std (1 + GRID_SLACK) and 2 gamma sqrt(k) <= GRID_SLACK Delta for its k coordinates, Delta = std
sqrt(2 rho_noise) <= std sqrt(2 rho) (``mechanisms.gaussian``). Z lies stochastically below
W + 1, W ~ N(0, s^2), up to eps(s) (``DiscretisedNoise``), and v lies within gamma / 8 of the
exact statistic (its sums split on finer grids, ``engines.grid_sums``), so each coordinate errs
by more than 5 gamma / 8 + gamma + sigma' z(alpha_noise / 2 - eps) with probability at most
alpha_noise,
sigma'^2 = (std (1 + GRID_SLACK))^2 + gamma^2 2^-30; the sub-Gaussian bound (Canonne-Kamath-
Steinke 2020, Cor. 9: P(|Z| >= t) <= 2 exp(-t^2 / (2 s^2))) is taken where it is narrower. A
rotated-back coordinate is a unit-norm combination of the k discretised coordinates: the same
bound (module notes of ``DiscretisedNoise``). The l2 radius takes a union bound over the
coordinates.

**Clipping bias: how far a clipped row moves, per coordinate (the proof).** Every estimator of
the clipped family clips u to C, u -> lambda u with lambda = min(1, C / ||u||); it then maps
the (noisy) mean back by the inverse of the view. The view is affine and the clip is a radial
shrink, so in original coordinates the clipped row is c + lambda (x - c): for CM, c = 0 and
F = diag(box_scale); for IOME, u = R F x - centre with R orthogonal and the released centre
c = F^-1 R^T centre (the padding of R F x is zero and R^T maps centre + lambda (u) back to
F c + lambda (F x - F c)); for PLAN, u = b * F (x - c) with b its per-coordinate scale, whose
inverse divides by the same diagonal. Hence coordinate j moves by (1 - lambda) |x_j - c_j|, and

    (1 - lambda) |x_j - c_j| <= (1 - C / v) reach_j,   reach_j = max(|hi_j - c_j|, |c_j - lo_j|)

for a row of view norm v > C (the clamped row lies in the box, whatever c is), while in the
view the row moves by v - C in l2, hence by at most (v - C) / f_j in coordinate j (rotation and
factors: ||u' - u|| >= |f_j (x'_j - x_j)| for an orthogonal R). So a row of view norm at most
v moves coordinate j by at most

    M_j(v) = min((v - C) / f_j, (1 - C / v) reach_j)     (0 when v <= C),

and since v <= B, M_j(B) bounds every clipped row. If, with probability 1 - beta, at most k
rows have view norm above a private r >= C (the rest lie within r), the clipped mean moves
coordinate j by at most

    bias_j = (k / n) M_j(B) + (1 - k / n) M_j(min(r, B)),

and the l2 bias is at most min(sum of the view moves / n / min_j f_j, ||bias||_2), the view's
l2 move being (k / n) (B - C) + (1 - k / n) (min(r, B) - C). B is the distance from the centre
to the box's farthest corner in the view (CM: from the origin; IOME, PLAN: from the released
centre), never the box's diameter.

**Where k and r come from.**

- *The radius search* (``cm``, ``cm-fixed``, ``iome``, ``plan`` and ``plan-noscale`` with
  ``quantile="binary-search"``). PrivQuant's binary search over ``steps`` halvings of [0, top]
  for rank m, each count noised by N(0, s^2), s^2 = steps / (2 rho). With probability at least
  1 - beta no count exceeds its truth by t = s z(beta / steps) (one-sided, union bound over the
  steps; for secure counts the discrete Gaussian's tail, t = 1 + s' z(beta / steps - eps),
  s'^2 = s^2 + 2^-30, or the sub-Gaussian s' sqrt(2 ln(steps / beta)) if smaller). On that
  event, whenever the search moved its right end to a point r, more than m - t rows have view
  norm <= r: k = min(n, floor(n - m + t)). The real search (by octaves,
  ``private_quantile_octaves``) returns C = the middle of its last interval and states that
  interval's top r (``threshold_right``; moved unless r = top); a release without it (a linear
  search's, before the octave search) had the width w = top / 2^steps, so r = C + w / 2
  (moved unless C > top - w); IOME's integer search (quantized path, Algorithm 1 on the squared
  norms, ``integer_search_steps`` counts) ends with left = right = C^2, so r = C (moved unless
  C^2 = top). If the right end never moved, k = 0 when top >= B, and there is no bound when
  top < B (PLAN's concentrated universe): the box is returned.
- *A clip profile* (``cm``, ``cm-fixed``, ``iome``, ``plan`` and ``plan-noscale`` by
  default, ``interval_share`` = 1%: PLAN's exponential-mechanism threshold, whose rank error
  has no data-independent bound, since the profile was built, the others since 2026-11-26;
  any ``interval_share`` > 0). Stage "clip
  profile" releases the row counts of the shells of view norm above C (lower edges e_s from
  ``clipped.clip_profile_edges``), each plus N(0, 1 / rho_profile) (l2 sensitivity sqrt(2): a
  row is in at most one shell). The rows above e_s are the shells from s on; a union bound
  over the S tails (beta / S each, the tail's noise N(0, (S - s) / rho_profile)) gives a
  staircase of (e_s, k_s). For a staircase, since M_j is nondecreasing,
  sum_i M_j(v_i) <= sum_s k_s (M_j(e_s+1) - M_j(e_s)) (e_S = B, the steps' k made
  non-increasing, a first step (C, n)); a single (r, k) gives the formula above. The profile
  is combined with the search's rank guarantee, beta / 2 each.

**A clip residual** (wherever there is a clip profile, except CoinPress). Stage "clip residual"
releases r = (1/n) sum_i (clip_E(u_i) - clip_C(u_i)) + noise for E = min(1.5 C, B) (mapped back
to original units; its noise's std ``clip_residual_std``, l2 sensitivity 2 (E - C) / n). A row's
move splits into clip_E(u) - clip_C(u), measured by r, and u - clip_E(u), a radial shrink from
E: the proof above with C replaced by E bounds it by the same staircase, M'_j(v) = min((v - E)
/ f_j, (1 - E / v) reach_j) (``ClipBias.measured``). So the mean lies within z s' + bias'_j of
m + r, m the release before its projection onto the box, s' = sqrt(s^2 + s_r^2) (two independent
Gaussians; secure: parameters in quadrature, shifts, roundings and slacks added). Where the
projection moved coordinate j to hi_j, m_j >= hi_j: only the lower end is known (alike at
lo_j). In l2,
|truth - projected| <= |truth - m| <= the radius about m + r, plus |r|. Each coordinate takes
the narrower of this bound and the one about the release: both widths are functions of public
values, C and the profile only, independent of the two noises, so given them the choice is
fixed and costs no failure probability. The l2 radius chooses alike, with the residual's
expected noise norm |s_r| standing in for |r| (which carries the residual's noise).

IOME's quantized path rounds each coordinate to the grid ``bucket`` first (in the box-
normalised units where applicable): that moves coordinate j by at most bucket / (2 box_scale_j)
more, and the clamped row's rounding stays within bucket / 2 of the box, which widens reach_j
by as much; its view is u = gain R (x / bucket) - centre, so f_j = gain box_scale_j / bucket.

**Trimmed mean** (``trimmed``, ``truncation="input"``). The release is T + (S / s) Z per
coordinate, T = trim_m of the clamped column, S its t-smooth sensitivity (Prop. 11), Z the
configured noise. S is a maximum over k of e^{-kt} A^(k), and every A^(k) is a difference of two
values of [lo, hi] (the padding included) divided by n - 2m, so S <= (hi - lo) / (n - 2m): the
largest local sensitivity of the trimmed mean. So |release - T| <= (hi - lo) q / ((n - 2m) s)
with probability 1 - alpha, q the exact two-sided alpha-quantile of |Z| (``noise_quantile``).
Trimming: with p = m / n, mean - T = (1 / n) (sum of the m lowest (x_i - T) + sum of the m
highest (x_i - T)); a low x_i is at most T (the kept values' mean is at least x_(m+1) >= x_i)
and at least lo, a high one at least T and at most hi, so mean lies in
[(1 - p) T + p lo, (1 - p) T + p hi]. The interval is that set's image of T's interval:
[(1 - p)(release - h) + p lo, (1 - p)(release + h) + p hi]. No failure probability but the
noise's. ``truncation="output"`` clamps the trimmed mean of the raw data, which can sit a box
width from the clamped data's mean: the box is returned.

**Failure probabilities.** The bias bound gets ``beta = search_share * alpha`` and the noise
``alpha_noise = alpha - beta``; the interval fails only if one of them does (union bound). The
Gaussian mechanism (``gaussian``) and the trimmed mean give all of alpha to the noise. Centres
need none: the bounds hold for any centre.

**Intersected with the box.** The clamped mean lies in the box, so each interval is clipped to
it and the radius capped by the box's farthest point from the release. (A release projected
onto the box is no farther from any point of the box, so the projection keeps coverage.)

Where no honest bound is available (a fallback release, ``iome-gaussian``'s preclip, which
changes the estimand, the trimmed mean with output truncation, CoinPress without a clip
profile, the local and shuffle protocols), the public box is returned with a
``BoxIntervalWarning`` naming why. CoinPress with one (``interval_share``, with ``bounds``)
clips its last step about the previous step's release c in the view (x - c) / sigma: the same
radial shrink, bounded by the profile alone.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
from scipy import special

from .errors import BoxIntervalWarning, InvalidParameterError
from .mechanisms import count_noise_std, gaussian_noise_std, integer_search_steps
from .mechanisms.discrete_gaussian import SIGMA2_BITS
from .mechanisms.gaussian import FINEST_FRACTION, GRID_SLACK, normal_isf
from .validation import check_fraction, user_stacklevel


# The quantiles as scipy.stats computes them (``normal_isf``; t.isf is -stdtrit, chi2.isf is
# chdtri: the same values), from scipy.special: scipy.stats costs 0.6 s of a command's start
# and every release printed with its interval imported it.
def _normal_pdf(y: Any) -> Any:
    """The standard normal density (scipy.stats.norm.pdf)."""
    return np.exp(-0.5 * np.square(y)) / math.sqrt(2.0 * math.pi)

CLIPPED = ("cm", "cm-fixed", "iome", "plan", "plan-noscale")
SUPPORTED = ("gaussian", *CLIPPED, "trimmed", "coinpress")
SEARCH_SHARE = 0.5
# Why the others get the public box (the reason a BoxIntervalWarning gives).
_COINPRESS = ("CoinPress's last step clips rows to a ball about a private centre with no count "
              "or rank guarantee of the rows it clips, so only the box bounds its bias "
              "(coinpress with bounds and interval_share > 0 buys a clip profile)")
_PROTOCOLS = ("the local and shuffle protocols clip to ranges that an earlier round of their "
              "own finds (IOME's range counts, GRS's histograms), whose noisy counts carry no "
              "rank guarantee that the intervals use yet")
NO_INTERVAL = {
    "coinpress": _COINPRESS,
    "coinpress-cov": _COINPRESS,
    "iome-gaussian": "its preclip to the ball of radius R' changes the estimand (rows beyond it "
                     "are not in the clamped data's mean)",
    **dict.fromkeys(("iome-local", "iome-shuffle", "grs-knownvar", "grs-unkvar"), _PROTOCOLS),
}
# The discrete Gaussian's variance is rounded up to a multiple of this (mechanisms).
_VARIANCE_ROUNDING = 2.0**-SIGMA2_BITS


@dataclass(frozen=True)
class DiscretisedNoise:
    """The sum of independent discretised Gaussian noises, each gamma (round(v / gamma) + Z) - v
    with Z ~ N_Z(0, s^2) on the integers, described by public bounds: ``sub`` >= the sum's
    sqrt(sum gamma^2 s^2) (its sub-Gaussian parameter: CKS 2020, Cor. 9), ``grid`` >= sum gamma,
    ``rounding`` >= sum |gamma round(v / gamma) - v| and ``slack`` >= sum eps(s) (below).

    Each Z is stochastically below W + 1, W ~ N(0, s^2), up to eps(s): P(Z >= k) <= P(W >= k -
    1) for integers k >= 1 (the sum over j >= k of exp(-j^2 / 2 s^2) is at most the integral from
    k - 1, and the normaliser is at least sqrt(2 pi) s by Poisson summation), and for k <= 0 by
    symmetry and the matching lower bound, up to eps(s) = sum_{m >= 1} exp(-2 pi^2 s^2 m^2) (the
    normaliser's excess; below 1e-8 for s >= 1). Replacing the terms one at a time, the sum
    exceeds t with probability at most P(N(0, sub^2) > t - rounding - grid) + slack.

    A combination sum_k a_k gamma Z_k with unit-norm a (a coordinate rotated back) is the same:
    Z_k is symmetric, so the signs do not matter; the shifts and roundings add to at most
    gamma sqrt(k), which the mechanism's grid keeps below GRID_SLACK Delta; and the slacks to
    k eps(s) <= eps(s / sqrt(k)), since k q^k / (1 - q^k) <= q / (1 - q) for q in (0, 1) and
    s >= sqrt(k) / (GRID_SLACK sqrt(2 rho)). So ``released`` bounds any such coordinate.
    """

    sub: Any
    grid: Any
    rounding: Any
    slack: Any

    @classmethod
    def released(cls, std: Any, rho: float) -> DiscretisedNoise:
        """The noise of ``gaussian_mechanism(secure=True)`` whose floating-point noise would
        have standard deviation ``std`` at a budget of at most ``rho`` (module notes, "Noise"):
        the grid gamma <= GRID_SLACK std sqrt(2 rho), s >= std / gamma."""
        grid = GRID_SLACK * std * math.sqrt(2.0 * rho)
        sub = np.sqrt((std * (1.0 + GRID_SLACK)) ** 2 + grid**2 * _VARIANCE_ROUNDING)
        # The rounding: half a step to the grid, and the statistic's own split and roundings
        # before it (``engines.grid_sums``: at most FINEST_FRACTION of a step).
        return cls(sub, grid, grid * (0.5 + FINEST_FRACTION),
                   _lattice_slack(1.0 / (GRID_SLACK * math.sqrt(2 * rho))))

    @classmethod
    def count(cls, std: float) -> DiscretisedNoise:
        """The discrete Gaussian of variance ``std``^2 (rounded up by the sampler) added to an
        integer count: grid 1, no rounding."""
        return cls(math.sqrt(std * std + _VARIANCE_ROUNDING), 1.0, 0.0, _lattice_slack(std))

    def __add__(self, other: DiscretisedNoise) -> DiscretisedNoise:
        """Independent noises: sub-Gaussian parameters in quadrature, the rest added."""
        return DiscretisedNoise(np.sqrt(self.sub**2 + other.sub**2), self.grid + other.grid,
                                self.rounding + other.rounding, self.slack + other.slack)

    def times(self, terms: int) -> DiscretisedNoise:
        """The sum of ``terms`` independent copies."""
        return DiscretisedNoise(self.sub * math.sqrt(terms), self.grid * terms,
                                self.rounding * terms, self.slack * terms)

    def excess(self, beta: float) -> Any:
        """A bound the sum exceeds upward with probability at most ``beta``: the least of the
        Gaussian one above, rounding + grid + sub z(beta - slack), and the sub-Gaussian one,
        rounding + sub sqrt(2 ln(1 / beta)), which is 20-40% wider at the failure
        probabilities intervals use. Both are functions of public values only."""
        sub_gaussian = self.rounding + self.sub * math.sqrt(2.0 * math.log(1.0 / beta))
        left = beta - np.asarray(self.slack, dtype=np.float64)
        gaussian = np.where(left > 0, self.rounding + self.grid + self.sub * normal_isf(
            np.maximum(left, np.finfo(float).tiny)), np.inf)
        return np.minimum(sub_gaussian, gaussian)


def _lattice_slack(sigma: Any) -> Any:
    """eps(s) >= sum_{m >= 1} exp(-2 pi^2 s^2 m^2) for every s >= ``sigma`` (a geometric
    series' bound, since m^2 >= m)."""
    q = np.exp(-2.0 * math.pi**2 * np.square(np.asarray(sigma, dtype=np.float64)))
    return q / (1.0 - q)


def _count_excess(std: float, beta: float, secure: bool) -> float:
    """A bound that a search count's noise N(0, std^2) (or the discrete Gaussian of that
    variance, rounded up by the sampler, added to the integer count) exceeds upward with
    probability at most ``beta``."""
    if secure:
        return float(DiscretisedNoise.count(std).excess(beta))
    return std * float(normal_isf(beta))


# A staircase: (r, k) pairs, r ascending, each saying that at most k rows have view norm above r.
Staircase = list[tuple[float, float]]


class Clipping(Protocol):
    """How many rows the clip may have moved, and how far out: a staircase of (r, k), at most
    k rows with view norm above r >= C."""

    @property
    def n(self) -> int: ...

    @property
    def norm_bound(self) -> float: ...

    @property
    def radius(self) -> float: ...

    def clipped(self, beta: float) -> Staircase | None:
        """The staircase, all of it holding with probability >= 1 - ``beta``; None when nothing
        bounds the clipped rows."""


@dataclass(frozen=True)
class SearchClipping:
    """The radius search's rank guarantee (module notes, "The radius search").

    Attributes
    ----------
    n : int
        Rows.
    rank : float
        The rank m the search aimed at.
    steps : int
        Its noisy counts.
    rho : float
        The search's budget (each count has rho / steps).
    top : float
        The top of the searched interval [0, top] (of the squared norms when ``integer``).
    norm_bound : float
        B, a bound on every view norm.
    radius : float
        The private radius C.
    integer : bool
        IOME's integer search on the squared norms (Algorithm 1), else the real search.
    secure : bool
        The counts are discrete Gaussian.
    right : float or None
        The top of the search's last interval where the release states it
        (``threshold_right``: the octave search, whose last interval's width depends on its
        path); None: a linear search's, C + top / 2^(steps + 1).
    """

    n: int
    rank: float
    steps: int
    rho: float
    top: float
    norm_bound: float
    radius: float
    integer: bool = False
    secure: bool = False
    right: float | None = None

    def clipped(self, beta: float) -> Staircase | None:
        radius = self.radius
        if self.integer:
            right = radius
            moved = round(radius * radius) < self.top  # C^2 is an integer (float sqrt)
            top = math.sqrt(self.top)
        elif self.right is not None:
            # The octave search's right end starts at top and only ever moves down.
            right = self.right
            moved = right < self.top
            top = self.top
        else:
            width = self.top / 2.0**self.steps
            right = radius + width / 2.0
            moved = radius <= self.top - width
            top = self.top
        if not moved:
            # every count sent the search right: rows above top are not counted
            return [(right, 0.0)] if top >= self.norm_bound else None
        std = count_noise_std(self.steps, self.rho)
        excess = _count_excess(std, beta / self.steps, self.secure)
        return [(right, min(float(self.n), max(0.0, math.floor(self.n - self.rank + excess))))]


@dataclass(frozen=True)
class ProfileClipping:
    """A released clip profile: noisy counts of the rows in shells of view norm beyond the
    radius (module notes, "A clip profile").

    Attributes
    ----------
    counts : numpy.ndarray
        The noisy count of each shell (Gaussian, l2 sensitivity sqrt(2)).
    edges : numpy.ndarray
        The shells' lower edges, ascending, the first the radius; the last shell is unbounded.
    rho : float
        The profile's budget.
    n, norm_bound, radius, secure
        As in :class:`SearchClipping`.
    """

    n: int
    counts: np.ndarray
    edges: np.ndarray
    rho: float
    norm_bound: float
    radius: float
    secure: bool = False

    def clipped(self, beta: float) -> Staircase | None:
        shells = len(self.edges)
        std = gaussian_noise_std(math.sqrt(2.0), self.rho)
        # Rows above edge s: the sum of the shells from s on, whose noise is the sum of
        # shells - s independent draws; a union bound over the shells' tails.
        tails = np.cumsum(np.asarray(self.counts, dtype=np.float64)[::-1])[::-1]
        terms = shells - np.arange(shells)
        tail_beta = beta / shells
        if self.secure:
            shell = DiscretisedNoise.released(std, self.rho)
            excess = np.array([shell.times(int(m)).excess(tail_beta) for m in terms])
        else:
            excess = std * np.sqrt(terms) * float(normal_isf(tail_beta))
        bounds = np.clip(np.floor(tails + excess), 0.0, float(self.n))
        return [(float(r), float(k)) for r, k in zip(self.edges, bounds, strict=True)]


@dataclass(frozen=True)
class CombinedClipping:
    """Two bounds on the same clip (the radius search's rank guarantee and a clip profile),
    each given half the failure probability; their staircases together."""

    first: Clipping
    second: Clipping

    @property
    def n(self) -> int:
        return self.first.n

    @property
    def norm_bound(self) -> float:
        return self.first.norm_bound

    @property
    def radius(self) -> float:
        return self.first.radius

    def clipped(self, beta: float) -> Staircase | None:
        first, second = self.first.clipped(beta / 2.0), self.second.clipped(beta / 2.0)
        if first is not None and second is not None:
            return sorted(first + second)
        # Only one bounds the clip: it gets all of beta (None when neither does).
        return self.second.clipped(beta) if first is None else self.first.clipped(beta)


@dataclass(frozen=True)
class ClipBias:
    """The clipping bias in original coordinates (module notes, the proof).

    Attributes
    ----------
    clipping : Clipping
        How many rows the clip moved, and how far out they may lie.
    reach : numpy.ndarray
        max over the box of |x_j - c_j| per coordinate (original units).
    factor : numpy.ndarray
        f_j: a view coordinate per original unit of coordinate j.
    rounding : numpy.ndarray or None
        A further per-coordinate bias (IOME's quantization), original units.
    """

    clipping: Clipping
    reach: np.ndarray
    factor: np.ndarray
    rounding: np.ndarray | None = None
    measured: float | None = None

    @property
    def start(self) -> float:
        """The view norm the bound starts at: the radius C, or the clip residual's edge E when
        the moves up to E were measured (module notes, "A clip residual")."""
        radius = self.clipping.radius
        return radius if self.measured is None else max(radius, self.measured)

    def _moves(self, v: float) -> np.ndarray:
        """M_j(v): how far the part beyond ``start`` of a row of view norm at most v moves
        coordinate j."""
        start = self.start
        if v <= start:
            return np.zeros_like(self.reach)
        return np.minimum((v - start) / self.factor, (1.0 - start / v) * self.reach)

    def bounds(self, beta: float) -> tuple[np.ndarray, float] | None:
        """(per-coordinate bias, l2 bias), holding with probability >= 1 - ``beta``; None when
        the number of clipped rows has no bound.

        With at most k_s rows above r_s (the staircase, after (C, n): no more than n rows lie
        beyond C) and M nondecreasing, sum_i M(v_i) = integral over r of #{v_i > r} dM(r) <=
        sum_s k_s (M(r_s+1) - M(r_s)), the last step ending at B; a count above r_s also
        bounds the rows above any larger r, so each k_s is the least of those up to it."""
        found = self.clipping.clipped(beta)
        if found is None:
            return None
        clipping = self.clipping
        bound, radius, n = clipping.norm_bound, self.start, float(clipping.n)
        steps = [(radius, n), *sorted(found)]
        per = np.zeros_like(self.reach, dtype=np.float64)
        view_l2, fewest = 0.0, n
        for s, (r, k) in enumerate(steps):
            fewest = min(fewest, k)
            start = min(max(r, radius), bound)
            stop = min(max(steps[s + 1][0] if s + 1 < len(steps) else bound, radius), bound)
            if stop > start and fewest > 0:
                per += fewest * (self._moves(stop) - self._moves(start))
                view_l2 += fewest * (stop - start)
        per /= n
        l2 = view_l2 / n / float(np.min(self.factor))
        if self.rounding is not None:
            per = per + self.rounding
            l2 += float(np.linalg.norm(self.rounding))
        return per, min(l2, float(np.linalg.norm(per)))


@dataclass(frozen=True)
class GaussianNoise:
    """Independent N(0, std_j^2) noise per coordinate (original units), or with ``secure_rho``
    its discretised twin released on a grid with a budget of at most ``secure_rho``; with
    ``added``, the sum of that noise and the (independent) noise of a clip residual, of
    standard deviations ``added`` and the same kind."""

    std: np.ndarray
    secure_rho: float | None = None
    added: np.ndarray | None = None

    @property
    def total_std(self) -> np.ndarray:
        """Independent Gaussians add their variances."""
        return self.std if self.added is None else np.sqrt(self.std**2 + self.added**2)

    @property
    def isotropic(self) -> bool:
        total = self.total_std
        return bool(np.all(total == total[0]))

    def half_widths(self, alpha: float) -> np.ndarray:
        """Per-coordinate half-widths each exceeded with probability at most ``alpha``."""
        if self.secure_rho is None:
            return float(normal_isf(alpha / 2.0)) * self.total_std
        # Discretised noise is symmetric about the value: alpha / 2 a side.
        noise = DiscretisedNoise.released(self.std, self.secure_rho)
        if self.added is not None:
            noise = noise + DiscretisedNoise.released(self.added, self.secure_rho)
        return np.asarray(noise.excess(alpha / 2.0))

    def radius(self, alpha: float) -> float:
        """An l2 radius the noise vector exceeds with probability at most ``alpha``."""
        if self.secure_rho is not None:  # union bound over the coordinates
            return float(np.linalg.norm(self.half_widths(alpha / self.std.size)))
        return noise_radius(self.total_std, alpha, self.isotropic)


class ErrorModel(Protocol):
    """What a release's interval is made of. ``noise_std`` is the noise's standard deviation
    per coordinate where it is released (None for smooth-sensitivity noise)."""

    @property
    def noise_std(self) -> np.ndarray | None: ...

    def interval(self, mean: np.ndarray, level: float,
                 search_share: float) -> tuple[np.ndarray, np.ndarray] | None:
        """(lo, hi) per coordinate; None when the bias has no bound for this release."""

    def radius(self, mean: np.ndarray, level: float, search_share: float) -> float | None:
        """An l2 radius about ``mean``; None when the bias has no bound."""


@dataclass(frozen=True)
class ClipResidual:
    """A released clip residual (module notes, "A clip residual").

    Attributes
    ----------
    moved : numpy.ndarray
        The noisy mean move of the rows' parts between the radius and ``edge`` (original
        units).
    std : numpy.ndarray
        Its noise's standard deviation per coordinate (original units).
    edge : float
        E, the view norm up to which the moves were measured.
    box : tuple of numpy.ndarray
        The box the release was projected onto.
    """

    moved: np.ndarray
    std: np.ndarray
    edge: float
    box: tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class NoiseAndClipping:
    """Gaussian noise, and (clipped family) the clipping bias; with a clip residual, two
    bounds, the narrower per coordinate (module notes, "A clip residual")."""

    noise: GaussianNoise
    bias: ClipBias | None = None
    residual: ClipResidual | None = None

    @property
    def noise_std(self) -> np.ndarray:
        return self.noise.std

    def _measured(self) -> tuple[GaussianNoise, ClipBias]:
        """The noise and the bias of the bound about release + moved: both noises, the bias
        beyond the residual's edge."""
        assert self.residual is not None and self.bias is not None
        noise = replace(self.noise, added=self.residual.std)
        return noise, replace(self.bias, measured=self.residual.edge)

    def _with_bias(self, level: float, search_share: float, part: int) -> Any:
        """(spread + bias of the bound about the release, spread + bias of the bound about
        release + moved or None), part 0 per coordinate (half-widths), part 1 in l2 (radii);
        None when the bias has no bound."""
        alpha_noise, beta = _split(level, self.bias is not None, search_share)
        spread = (self.noise.half_widths, self.noise.radius)[part]
        if self.bias is None:
            return spread(alpha_noise), None
        bias = self.bias.bounds(beta)
        if bias is None:
            return None
        if self.residual is None:
            return spread(alpha_noise) + bias[part], None
        noise, beyond = self._measured()
        measured = beyond.bounds(beta)
        assert measured is not None  # the same staircase as ``bias``
        return (spread(alpha_noise) + bias[part],
                (noise.half_widths, noise.radius)[part](alpha_noise) + measured[part])

    def interval(self, mean: np.ndarray, level: float,
                 search_share: float) -> tuple[np.ndarray, np.ndarray] | None:
        found = self._with_bias(level, search_share, 0)
        if found is None:
            return None
        half, measured = found
        if measured is None:
            return mean - half, mean + half
        # The bound about the release before its projection onto the box plus the measured
        # move: where the projection moved coordinate j to hi_j, the release was at least hi_j,
        # so the lower end holds and the upper one is the box's (and alike at lo_j).
        assert self.residual is not None
        box_lo, box_hi = self.residual.box
        centre = mean + self.residual.moved
        lo = np.where(mean <= box_lo, -np.inf, centre - measured)
        hi = np.where(mean >= box_hi, np.inf, centre + measured)
        # Each coordinate takes the narrower bound. Both widths are functions of public values
        # and of the released radius and profile only, independent of the release's and the
        # residual's noises, so the choice costs no failure probability.
        use = measured < half
        return np.where(use, lo, mean - half), np.where(use, hi, mean + half)

    def measured_coordinates(self, level: float, search_share: float) -> int:
        """How many coordinates' intervals are about the release plus the clip residual's
        measured move (0 without a residual or a bias bound)."""
        found = self._with_bias(level, search_share, 0)
        if found is None or found[1] is None:
            return 0
        half, measured = found
        return int(np.count_nonzero(measured < half))

    def radius(self, mean: np.ndarray, level: float, search_share: float) -> float | None:
        found = self._with_bias(level, search_share, 1)
        if found is None:
            return None
        radius, measured = found
        if measured is None:
            return float(radius)
        assert self.residual is not None
        # Chosen before |moved| is read (which carries the residual's noise): its expected
        # noise norm stands in for it. |truth - projected| <= |truth - release| (the truth
        # lies in the box) <= the radius about release + moved, plus |moved|.
        if measured + float(np.linalg.norm(self.residual.std)) >= radius:
            return float(radius)
        return float(measured) + float(np.linalg.norm(self.residual.moved))


@functools.lru_cache(maxsize=256)  # repeated releases at public settings ask the same
def noise_quantile(noise: str, alpha: float, *, sigma: float | None = None,
                   dof: float | None = None) -> float:
    """q with P(|Z| > q) = ``alpha`` for a smooth-sensitivity noise Z (``mechanisms.smooth_noise``).

    Laplace log-normal Z = X e^{sigma Y}: P(|Z| > q) = E[exp(-q e^{-sigma Y})] (|X| ~ Exp(1)),
    by quadrature; uniform log-normal Z = U e^{sigma Y}: E[(1 - q e^{-sigma Y})_+] =
    Phi_bar(y0) - q e^{sigma^2 / 2} Phi_bar(y0 + sigma), y0 = ln(q) / sigma; arsinh-normal
    sinh(Y): sinh(z(alpha / 2)); Student's T, Laplace and the Gaussians: their own quantiles.
    """
    if noise in ("gaussian", "gaussian-tcdp"):
        return float(normal_isf(alpha / 2.0))
    if noise == "laplace":
        return math.log(1.0 / alpha)
    if noise == "arsinh":
        return math.sinh(float(normal_isf(alpha / 2.0)))
    if noise == "student-t":
        assert dof is not None
        return float(-special.stdtrit(dof, alpha / 2.0))
    assert sigma is not None
    from scipy import integrate, optimize  # the log-normal noises only (scipy.stats: 0.6 s)

    if noise == "uln":
        def tail(q: float) -> float:
            y0 = math.log(q) / sigma
            return float(special.ndtr(-y0) - q * math.exp(0.5 * sigma**2)
                         * special.ndtr(-(y0 + sigma)))
        upper = math.exp(sigma * float(normal_isf(alpha)))  # P(|U| e^{sY} > upper) <= alpha
    elif noise == "lln":
        def tail(q: float) -> float:
            # |y| > 12 carries Gaussian mass below 1e-32: far under any alpha asked for
            with np.errstate(over="ignore"):
                value, _ = integrate.quad(
                    lambda y: _normal_pdf(y) * np.exp(-q * np.exp(-sigma * y)), -12.0, 12.0,
                    epsabs=1e-13, limit=200)
            return float(value)
        # P(|X| > a) + P(e^{sY} > b) bounds the tail at ab: each gets alpha / 2
        upper = math.log(2.0 / alpha) * math.exp(sigma * float(normal_isf(alpha / 2.0)))
    else:
        raise InvalidParameterError(f"no quantile for the noise {noise!r}")
    lower = 1e-12
    if upper <= lower or tail(lower) <= alpha:
        # A tiny level (alpha near 1, or 1.0 once 1 - level rounds): the quantile lies at or
        # below ``lower`` (the tail decreases) and at or below ``upper`` (a bound on it), so
        # the smaller of the two is at or above it: a narrow interval whose coverage is at
        # least the level (conservative), 0 wide at alpha = 1. The root-finder's bracket had
        # no sign change there (ValueError), and ``upper`` = 0 sent it to log(0).
        return float(min(lower, upper))
    return float(optimize.brentq(lambda q: tail(q) - alpha, lower, upper, xtol=1e-12,
                                 rtol=1e-10))


@dataclass(frozen=True)
class TrimmedNoise:
    """The trimmed mean's interval (module notes, "Trimmed mean")."""

    n: int
    trim: np.ndarray
    scale: np.ndarray  # (hi - lo) / ((n - 2m) s): the noise's largest scale per coordinate
    quantile: Any  # alpha -> per-coordinate q with P(|Z_j| > q_j) = alpha
    lo: np.ndarray
    hi: np.ndarray
    noise_std = None  # the smooth sensitivity is as sensitive as the data: never released

    def _down_up(self, mean: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        half = self.scale * self.quantile(alpha)
        p = self.trim / self.n
        return (1.0 - p) * half + p * (mean - self.lo), (1.0 - p) * half + p * (self.hi - mean)

    def interval(self, mean: np.ndarray, level: float,
                 search_share: float) -> tuple[np.ndarray, np.ndarray] | None:
        down, up = self._down_up(mean, _split(level, False, search_share)[0])
        return mean - down, mean + up

    def radius(self, mean: np.ndarray, level: float, search_share: float) -> float | None:
        alpha = _split(level, False, search_share)[0]
        down, up = self._down_up(mean, alpha / mean.size)  # union bound over coordinates
        return float(np.linalg.norm(np.maximum(down, up)))


def _need(diagnostics: Mapping[str, Any], *keys: str) -> str | None:
    missing = [key for key in keys if diagnostics.get(key) is None]
    return f"its diagnostics lack {', '.join(missing)}" if missing else None


def _vector(value: Any, d: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(value, dtype=np.float64), (d,)).copy()


def error_model(result: Any) -> ErrorModel | str:
    """The error model of ``result`` (a ``MeanResult``), or the reason there is none.

    Parameters
    ----------
    result : MeanResult
        A release.

    Returns
    -------
    ErrorModel or str
        The model, or a sentence saying why the public box is all that can be claimed.
    """
    diagnostics = result.diagnostics
    method = result.method
    if result.fallback:
        if diagnostics.get("private_bounds") and diagnostics.get("bounds_lo") is None:
            return "the release is the zero-vector fallback (no private box was found)"
        return "the release is the zero-vector fallback (n too small for the budget)"
    if method == "auto":
        method = diagnostics.get("chosen")
        if method is None:
            return "the auto release does not name the estimator it chose"
    if method not in SUPPORTED:
        return NO_INTERVAL.get(method, f"method {method!r} has no confidence interval (only "
                                       f"{', '.join(SUPPORTED)} and auto)")
    if method == "trimmed":
        return _trimmed_model(result)
    if method == "coinpress" and diagnostics.get("clip_profile") is None:
        return _COINPRESS
    missing = _need(diagnostics, "noise_std")
    if missing:
        return missing
    d = result.d
    secure_rho = None
    if diagnostics.get("secure_noise"):
        if result.rho is None:
            return "secure noise without a rho budget has no grid bound"
        secure_rho = float(result.rho)
    # Per coordinate, in the data's units: a box-normalised release has mapped its noise_std
    # back already (``estimators.base.restore_diagnostics``); its bias is mapped here.
    sigma = _vector(diagnostics["noise_std"], d)
    box_scale = diagnostics.get("box_scale")
    box_scale = np.ones(d) if box_scale is None else _vector(box_scale, d)
    if method == "gaussian":
        return NoiseAndClipping(GaussianNoise(sigma, secure_rho))
    if method in ("plan", "plan-noscale"):
        return _plan_model(result, sigma, box_scale, secure_rho)
    if method == "coinpress":
        return _coinpress_model(result, sigma, secure_rho)
    return _cm_iome_model(result, method, sigma, box_scale, secure_rho)


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _reach(result: Any, centre: np.ndarray) -> np.ndarray:
    lo, hi = _box(result)
    return np.maximum(np.abs(hi - centre), np.abs(centre - lo))


def _cm_iome_model(result: Any, method: str, sigma: np.ndarray, box_scale: np.ndarray,
                   secure_rho: float | None) -> ErrorModel | str:
    diagnostics = result.diagnostics
    quantized = method == "iome" and bool(diagnostics.get("quantized"))
    missing = _need(diagnostics, "norm_bound", "threshold_rho", "target_rank", "threshold",
                    *(("bucket", "padded_dim") if quantized else ("threshold_steps",)),
                    *(("centre",) if method == "iome" else ()))
    if missing:
        return missing
    bound = float(diagnostics["norm_bound"])
    d = result.d
    centre = _vector(diagnostics["centre"], d) if method == "iome" else np.zeros(d)
    factor, rounding = box_scale, None
    if quantized:
        top = float(math.ceil(bound**2))
        steps = integer_search_steps(np.zeros(1), np.array([top]))
        bucket = float(diagnostics["bucket"]) / box_scale  # the grid in original units
        rounding = bucket / 2.0
        factor = box_scale * math.sqrt(int(diagnostics["padded_dim"])) / float(
            diagnostics["bucket"])
    else:
        top, steps = bound, int(diagnostics["threshold_steps"])
    clipping = SearchClipping(result.n, float(diagnostics["target_rank"]), steps,
                              float(diagnostics["threshold_rho"]), top, bound,
                              float(diagnostics["threshold"]), integer=quantized,
                              secure=secure_rho is not None,
                              right=_optional_float(diagnostics.get("threshold_right")))
    reach = _reach(result, centre) + (0.0 if rounding is None else rounding)
    profile = _profile(result, bound, float(diagnostics["threshold"]), secure_rho is not None)
    both = clipping if profile is None else CombinedClipping(clipping, profile)
    return _with_residual(result, sigma, np.ones(d), secure_rho,
                          ClipBias(both, reach, factor, rounding))


def _profile(result: Any, norm_bound: float, radius: float,
             secure: bool) -> ProfileClipping | None:
    """The release's clip profile beyond ``radius`` (``interval_share`` > 0), or None."""
    diagnostics = result.diagnostics
    if diagnostics.get("clip_profile") is None:
        return None
    return ProfileClipping(result.n, np.asarray(diagnostics["clip_profile"], dtype=np.float64),
                           np.asarray(diagnostics["clip_profile_edges"], dtype=np.float64),
                           float(diagnostics["clip_profile_rho"]), norm_bound, radius, secure)


def _plan_model(result: Any, sigma: np.ndarray, box_scale: np.ndarray,
                secure_rho: float | None) -> ErrorModel | str:
    diagnostics = result.diagnostics
    binary = diagnostics.get("threshold_search") == "binary-search"
    if not binary and diagnostics.get("clip_profile") is None:
        return ("PLAN's exponential-mechanism threshold has no data-independent rank guarantee, "
                "and this release has no clip profile of its clipped rows (interval_share=0)")
    missing = _need(diagnostics, "norm_bound", "view_norm_bound", "threshold", "centre",
                    *(("threshold_steps", "threshold_rho", "target_quantile") if binary
                      else ("clip_profile_edges", "clip_profile_rho")))
    if missing:
        return missing
    n, d = result.n, result.d
    scale = diagnostics.get("scale")
    scale = np.ones(d) if scale is None else _vector(scale, d)
    bound, radius = float(diagnostics["view_norm_bound"]), float(diagnostics["threshold"])
    secure = secure_rho is not None
    clipping: Clipping | None = None
    if binary:
        clipping = SearchClipping(n, float(diagnostics["target_quantile"]) * n,
                                  int(diagnostics["threshold_steps"]),
                                  float(diagnostics["threshold_rho"]),
                                  float(diagnostics["norm_bound"]), bound, radius, secure=secure,
                                  right=_optional_float(diagnostics.get("threshold_right")))
    profile = _profile(result, bound, radius, secure)
    if profile is not None:
        clipping = profile if clipping is None else CombinedClipping(clipping, profile)
    assert clipping is not None  # binary, or checked above to carry a profile
    # The view multiplies coordinate j by scale_j (PLAN) after box_scale_j (normalisation).
    factor = scale * box_scale
    reach = _reach(result, _vector(diagnostics["centre"], d))
    return _with_residual(result, sigma, scale, secure_rho, ClipBias(clipping, reach, factor))


def _with_residual(result: Any, sigma: np.ndarray, scale: np.ndarray, secure_rho: float | None,
                   bias: ClipBias) -> NoiseAndClipping:
    """The model of a clipped release whose noise std per coordinate is ``sigma / scale``
    (PLAN divides its released noise_std by its scale), with its clip residual if it has one
    (its std in noise_std's units, divided alike)."""
    diagnostics = result.diagnostics
    noise = GaussianNoise(sigma / scale, secure_rho)
    if diagnostics.get("clip_residual") is None:
        return NoiseAndClipping(noise, bias)
    d = result.d
    residual = ClipResidual(_vector(diagnostics["clip_residual"], d),
                            _vector(diagnostics["clip_residual_std"], d) / scale,
                            float(diagnostics["clip_residual_edge"]), _box(result))
    return NoiseAndClipping(noise, bias, residual)


def _coinpress_model(result: Any, sigma: np.ndarray,
                     secure_rho: float | None) -> ErrorModel | str:
    """MVMRec's last step clips the clamped rows in the view u = (x - c) / sigma about the
    previous step's release c: a radial shrink about a released centre with f_j = 1 / sigma,
    bounded by its clip profile alone (no rank guarantee)."""
    diagnostics = result.diagnostics
    missing = _need(diagnostics, "clip_centre", "norm_bound", "clip_radii", "sigma",
                    "clip_profile_edges", "clip_profile_rho")
    if missing:
        return missing
    d = result.d
    centre = _vector(diagnostics["clip_centre"], d)
    radius = float(np.asarray(diagnostics["clip_radii"])[-1])
    profile = _profile(result, float(diagnostics["norm_bound"]), radius, secure_rho is not None)
    assert profile is not None  # error_model sends only profiled CoinPress releases here
    factor = np.full(d, 1.0 / float(diagnostics["sigma"]))
    return NoiseAndClipping(GaussianNoise(sigma, secure_rho),
                            ClipBias(profile, _reach(result, centre), factor))


def _trimmed_model(result: Any) -> ErrorModel | str:
    diagnostics = result.diagnostics
    if diagnostics.get("truncation") != "input":
        return ("the trimmed mean with truncation='output' clamps the trimmed mean of the raw "
                "data, which can lie a box width from the clamped data's mean")
    missing = _need(diagnostics, "noise", "trim", "shift")
    if missing:
        return missing
    lo, hi = _box(result)
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        return "the trimmed mean's noise has no bound without a finite box"
    d, n = result.d, result.n
    trim = _vector(diagnostics["trim"], d)
    shift = _vector(diagnostics["shift"], d)
    noise = str(diagnostics["noise"])
    sigma = diagnostics.get("sigma")
    sigmas = [None] * d if sigma is None else [float(s) for s in _vector(sigma, d)]
    dof = diagnostics.get("dof")

    def quantile(alpha: float) -> np.ndarray:
        cache: dict[float | None, float] = {}
        for s in sigmas:
            if s not in cache:
                cache[s] = noise_quantile(noise, alpha, sigma=s, dof=dof)
        return np.array([cache[s] for s in sigmas])

    return TrimmedNoise(n, trim, (hi - lo) / ((n - 2.0 * trim) * shift), quantile, lo, hi)


def _split(level: float, biased: bool, search_share: float) -> tuple[float, float]:
    """(alpha_noise, beta_bias) with alpha_noise + beta_bias = 1 - level."""
    if not 0.0 < level < 1.0:
        raise InvalidParameterError(f"level must lie strictly between 0 and 1, got {level}")
    if not 0.0 < search_share < 1.0:
        raise InvalidParameterError(
            f"search_share must lie strictly between 0 and 1, got {search_share}")
    alpha = 1.0 - level
    if not biased:
        return alpha, 0.0
    return alpha * (1.0 - search_share), alpha * search_share


def _box(result: Any) -> tuple[np.ndarray, np.ndarray]:
    """The box the interval lies in: the bounds given, where the rows were clamped to a
    narrower one of the estimator's own (``declared_lo``: ``iome-gaussian``'s cube, whose move
    of the rows beyond it no interval bounds), else the box the rows were clamped to."""
    diagnostics = result.diagnostics
    lo, hi = diagnostics.get("declared_lo"), diagnostics.get("declared_hi")
    if lo is None or hi is None:
        lo, hi = diagnostics.get("bounds_lo"), diagnostics.get("bounds_hi")
    if lo is None or hi is None:
        inf = np.full(result.d, np.inf)
        return -inf, inf
    return _vector(lo, result.d), _vector(hi, result.d)


def _warn(result: Any, reason: str) -> None:
    warnings.warn(f"{result.method}: confidence interval is the public box: {reason}",
                  BoxIntervalWarning, stacklevel=user_stacklevel())


_NO_BIAS_BOUND = ("the radius search never moved below the top of a universe narrower than "
                  "the data's reach, so the rows above it are not counted")


def check_level(level: Any, name: str = "level") -> float:
    """``level`` as a float, refused unless it is a real number strictly between 0 and 1.

    Checked before anything else, so that every release refuses alike: those whose interval is
    the public box would otherwise never read it. A bool, a string, None or an array (even of
    one element) is not a level, though numpy would convert some of them.

    Parameters
    ----------
    level : Any
        The coverage asked for (or another probability: ``name`` says which).
    name : str
        The argument's name, for the message.

    Returns
    -------
    float
        ``level``.

    Raises
    ------
    InvalidParameterError
        "<name> must be a number strictly between 0 and 1, got <repr>".
    """
    try:
        return check_fraction(level, name)  # the estimators' own check of a number in (0, 1)
    except InvalidParameterError:
        raise InvalidParameterError(
            f"{name} must be a number strictly between 0 and 1, got {level!r}") from None


def noise_radius(noise_std: np.ndarray, alpha: float, isotropic: bool) -> float:
    """A radius the l2 norm of independent N(0, noise_std_j^2) coordinates exceeds with
    probability at most ``alpha``: the chi quantile when all are equal, else Laurent-Massart:
    sum s_j^2 + 2 sqrt(x sum s_j^4) + 2 x max s_j^2, x = ln(1 / alpha)."""
    if isotropic:
        return float(noise_std[0] * np.sqrt(special.chdtri(noise_std.size, alpha)))
    # Computed on noise_std / 2^e, e the largest std's binary exponent, and scaled back: the
    # fourth powers of a loose box's stds (1e98 for bounds of 1e100) overflow, and a power of
    # two scales every rounding alike, so the result is bit for bit the unscaled one wherever
    # that one neither overflowed nor underflowed.
    exponent = int(np.frexp(np.max(noise_std))[1])
    var = np.ldexp(noise_std, -exponent) ** 2
    x = math.log(1.0 / alpha)
    unit = np.sqrt(var.sum() + 2.0 * np.sqrt(x * np.sum(var**2)) + 2.0 * x * var.max())
    return float(np.ldexp(unit, exponent))


def confidence_interval(result: Any, level: float = 0.95, *,
                        search_share: float = SEARCH_SHARE) -> tuple[np.ndarray, np.ndarray]:
    """Per-coordinate intervals, each containing the exact mean of the clamped data with
    probability >= ``level`` over the release's randomness.

    Parameters
    ----------
    result : MeanResult
        A release.
    level : float
        Coverage per coordinate (not simultaneous over coordinates).
    search_share : float
        The share of ``1 - level`` given to the bias bound's failure (clipped family only).

    Returns
    -------
    (lo, hi) : tuple of numpy.ndarray
        Arrays of shape (d,), inside the public box. The box itself (with a
        ``BoxIntervalWarning``) when the release has no honest narrower interval.

    Raises
    ------
    InvalidParameterError
        A ``level`` or ``search_share`` that is not a number strictly between 0 and 1.
    """
    level = check_level(level)
    search_share = check_level(search_share, "search_share")
    box_lo, box_hi = _box(result)
    model = error_model(result)
    found = None if isinstance(model, str) else model.interval(result.mean, level, search_share)
    if found is None:
        _warn(result, model if isinstance(model, str) else _NO_BIAS_BOUND)
        return box_lo.copy(), box_hi.copy()
    lo, hi = found
    pad = _stated_to(result)
    return np.clip(lo - pad, box_lo, box_hi), np.clip(hi + pad, box_lo, box_hi)


def _stated_to(result: Any) -> Any:
    """How far float64 may have moved a release run at a public offset (``box_offset``: a box
    far from the origin) and its interval's ends: the offset added back rounds the release to
    the spacing of floats there, and each end once more. Two spacings a side cover both; 0
    for a release run where it is stated (at 1e15 the spacing is 0.125, more than the noise,
    and the unpadded interval was a point that missed the mean every time)."""
    if result.diagnostics.get("box_offset") is None:
        return 0.0
    return 2.0 * np.spacing(np.abs(np.asarray(result.mean, dtype=np.float64)))


def confidence_radius(result: Any, level: float = 0.95, *,
                      search_share: float = SEARCH_SHARE) -> float:
    """An l2 radius around the release that contains the exact mean of the clamped data (the
    whole vector) with probability >= ``level``.

    Parameters
    ----------
    result : MeanResult
        A release.
    level : float
        Coverage of the whole vector.
    search_share : float
        The share of ``1 - level`` given to the bias bound's failure (clipped family only).

    Returns
    -------
    float
        The radius; at most the distance from the release to the box's farthest point (that
        distance, with a ``BoxIntervalWarning``, when there is no honest smaller one).

    Raises
    ------
    InvalidParameterError
        A ``level`` or ``search_share`` that is not a number strictly between 0 and 1.
    """
    level = check_level(level)
    search_share = check_level(search_share, "search_share")
    box_lo, box_hi = _box(result)
    farthest = float(np.linalg.norm(np.maximum(np.abs(result.mean - box_lo),
                                               np.abs(box_hi - result.mean))))
    model = error_model(result)
    radius = None if isinstance(model, str) else model.radius(result.mean, level, search_share)
    if radius is None:
        _warn(result, model if isinstance(model, str) else _NO_BIAS_BOUND)
        return farthest
    return min(radius + float(np.linalg.norm(_stated_to(result))), farthest)


def interval_summary(result: Any, level: float = 0.95) -> dict[str, Any]:
    """The interval, the radius and what they cover, JSON-ready (no warning: the basis says
    when they are the box)."""
    level = check_level(level)
    model = error_model(result)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BoxIntervalWarning)
        lo, hi = confidence_interval(result, level)
        radius = confidence_radius(result, level)
    if isinstance(model, str):
        basis = f"public box: {model}"
    elif model.interval(result.mean, level, SEARCH_SHARE) is None:
        basis = "public box: the clipping bias has no bound for this release"
    elif isinstance(model, NoiseAndClipping):
        basis = "noise and clipping bias" if model.bias is not None else "noise"
        measured = model.measured_coordinates(level, SEARCH_SHARE)
        if measured:
            basis += (f"; about the release plus the clip's measured move on {measured} of "
                      f"{result.d} coordinates")
    else:
        basis = "noise and trimming bias"
    if result.diagnostics.get("row_norm_bound") is not None:
        # The rows beyond the public bound are scaled to it, as values beyond the box are
        # clamped: the interval is about their mean (a user trial set R too small and read a
        # "noise" interval that missed).
        basis += (f"; of the rows scaled to l2 norm at most "
                  f"{result.diagnostics['row_norm_bound']:g} (norm_bound: rows beyond it are "
                  f"moved to it, and that move is not included)")
    if result.diagnostics.get("private_bounds"):
        # The box is a release of its own: the interval is about the rows clamped to it, and
        # the rows beyond it (a tail past its power of two, a column given a wider one's box
        # or a sign its counts did not see) move that mean by a bias no interval bounds (a
        # user trial: lengths of stay's truth 5.32 outside a Gaussian release's [4.9, 5.1]).
        basis += ("; of the rows clamped to the private box found in this release (not the "
                  "raw rows: its clamping bias is not included; give bounds to bound it)")
    return {"level": level, "lo": lo.tolist(), "hi": hi.tolist(), "radius": radius,
            "basis": basis}


__all__ = ["BoxIntervalWarning", "check_level", "confidence_interval", "confidence_radius",
           "error_model", "interval_summary", "noise_quantile"]
