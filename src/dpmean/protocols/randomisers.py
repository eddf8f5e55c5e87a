"""Local randomisers of the local and shuffle protocols (IOME section 5): each maps one user's
value (a row of the input arrays) and public parameters to that user's messages.

Vectorised across users: row i of every output depends only on row i of the inputs and on
fresh randomness. Each docstring states the randomiser's local sensitivity (the inputs two users
may hold) and its guarantee for one user (replace-one = any input by any other).

Every randomiser takes the ledger and its stage (keyword-only, as ``gaussian_mechanism``) and a
``RoundBudget``: what its round costs each user, in the ledger's unit. It charges that cost
before drawing anything and draws at the parameters derived from it (as ``gaussian_mechanism``
charges its rho and derives sigma), so what is charged is the round's plan exactly.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ..accounting import approx_dp_to_zcdp
from ..errors import InvalidDataError, InvalidParameterError
from ..mechanisms.gaussian import gaussian_noise
from .composition import local_epsilon_for_shuffle, split_budget
from .rounds import Ledger

_UINT64_MAX = np.iinfo(np.uint64).max


# The largest epsilon a randomiser draws at (randomised response, Hadamard response, unary
# encoding, Polya noise); a report granted more is drawn at this one. Why: past about 37,
# e^eps / (1 + e^eps) rounds to 1.0 and a bit was never flipped (no noise at all: not eps-DP
# for any eps), and a huge budget's epsilon overflowed e^eps. At 20 the flip probability,
# 2e-9, is still drawn to within 6e-8 relative (the uniform's grid is 2^-53; it is rounded up,
# ``flip_probability``), and the answers are as good as exact.
# Conservative: an eps'-DP report with eps' <= eps is eps-DP, so the charge (the granted eps)
# stays valid; analysers debias with the drawn probabilities (``flip_probability``,
# ``response_bias``), capped alike, so they match the draw.
DRAWN_EPSILON_CAP = 20.0


def keep_probability(epsilon: float) -> float:
    """The nominal P[a randomised-response bit is sent unchanged], e^eps / (1 + e^eps), eps
    capped at ``DRAWN_EPSILON_CAP`` (the randomisers draw at no more).

    The draw keeps a bit with probability ``1 - flip_probability(epsilon)``, which is never
    above this (it may be below by at most 2^-50); analysers debias with ``response_bias``, the
    drawn probabilities' exact bias."""
    return 1.0 / (1.0 + math.exp(-min(epsilon, DRAWN_EPSILON_CAP)))


# numpy's ``Generator.random()`` returns k 2^-53 with k uniform on 0 .. 2^53 - 1 (53 random bits
# scaled by 2^-53), so ``U < f`` holds with probability exactly ceil(f 2^53) / 2^53.
_UNIFORM_STEPS = 2**53


def flip_probability(epsilon: float) -> float:
    """The probability with which randomised response at ``epsilon`` flips a bit, exactly as
    drawn (``U < flip_probability``, U uniform on the multiples of 2^-53 in [0, 1)): a multiple
    of 2^-53, at least 1 / (1 + e^eps) and at most 1/2, eps capped at ``DRAWN_EPSILON_CAP``.

    Privacy: with q = this, P[kept] / P[flipped] = (1 - q) / q <= e^eps because q is at least
    1 / (1 + e^eps), and P[flipped] / P[kept] <= 1 because q <= 1/2: eps-LDP exactly, for the
    probabilities the draw realises (not only for the real-number ones). Flipping a bit when
    U >= fl(e^eps / (1 + e^eps)) instead realised a flip probability up to 2^-54 below
    1 / (1 + e^eps) when the float rounded up: a ratio up to 2^-54 e^eps (relative) above
    e^eps, 9.7e-13 at eps = 10.

    Parameters
    ----------
    epsilon : float
        The response's epsilon (non-negative; capped at ``DRAWN_EPSILON_CAP``).

    Returns
    -------
    float
        The flip probability, a multiple of 2^-53 in [1 / (1 + e^eps), 1/2].
    """
    epsilon = min(epsilon, DRAWN_EPSILON_CAP)
    q = 1.0 / (1.0 + math.exp(epsilon))
    # exp errs by at most one ulp and + and / round once each, so q is within 2^-51 (relative)
    # of 1 / (1 + e^eps): at most 4 ulps. Eight steps up make it an upper bound with room to
    # spare (more flipping is the safe side: it only adds noise), and rounding up to the
    # uniform's grid (exact: q 2^53 and the quotient are exact in float64) keeps it one.
    for _ in range(8):
        q = math.nextafter(q, 1.0)
    return min(math.ceil(q * _UNIFORM_STEPS) / _UNIFORM_STEPS, 0.5)


def response_bias(epsilon: float) -> float:
    """P[kept] - P[flipped] of randomised response at ``epsilon`` as drawn: 1 - 2
    ``flip_probability(epsilon)``, exact in float64 (a multiple of 2^-52), about tanh(eps / 2).

    Analysers divide by it to debias (E[+-1 answer] = bias x truth). Computed from the drawn
    probability, not as (e^eps - 1) / (e^eps + 1), whose subtraction cancelled to 0 at tiny
    eps (a division by zero after the charge). It is at most tanh(eps / 2), and below it by at
    most 2^-49 (the flip probability's rounding up). 0 means the bits carry nothing: eps below
    about 2e-15, where the flip probability rounds up to 1/2 on the uniform's grid; the
    protocols refuse such a budget from their plan (``reports_carry_signal``).

    Parameters
    ----------
    epsilon : float
        The response's epsilon (non-negative).

    Returns
    -------
    float
        The bias, in [0, tanh(eps / 2)].
    """
    return 1.0 - 2.0 * flip_probability(epsilon)


def reports_carry_signal(epsilon: float) -> bool:
    """Whether randomised response at ``epsilon`` (public) is drawn with any bias at all.

    Parameters
    ----------
    epsilon : float
        The response's epsilon (non-negative).

    Returns
    -------
    bool
        ``response_bias(epsilon) > 0`` (false below about eps = 2e-15).
    """
    return response_bias(epsilon) > 0.0


@dataclass(frozen=True)
class RoundBudget:
    """What one round of a protocol costs each user, ``cost`` in the ledger's ``unit`` ("rho"
    or "epsilon"), and how the user spends it: ``reports`` answers (one per coordinate, as in
    GRS), split in an epsilon ledger as ``split_budget`` does at the round's ``delta``
    (advanced composition); or, with ``shuffled_among`` = n, one report whose n shuffled
    copies are (cost, delta)-DP (amplification by shuffling).

    The per-report parameters are derived from the cost, never the reverse: the inverses here
    are bisections and root-finds, so a cost recomputed from them can land 1e-8 under the plan,
    and the ledger verifies the charges against the plan.
    """

    cost: float
    unit: str
    reports: int = 1
    delta: float = 0.0
    shuffled_among: int | None = None

    def __post_init__(self) -> None:
        if self.unit not in ("rho", "epsilon"):
            raise InvalidParameterError(f"a round's unit is 'rho' or 'epsilon', got {self.unit!r}")
        if self.unit == "rho" and self.shuffled_among is not None:
            raise InvalidParameterError("a shuffled round is accounted in epsilon")

    @functools.cached_property
    def report_epsilon(self) -> float:
        """Each report's epsilon (the local one in the shuffle model); in a rho ledger, eps-DP
        costs eps^2 / 2 per report, so eps = sqrt(2 rho)."""
        if self.unit == "rho":
            return math.sqrt(2.0 * self.cost / self.reports)
        epsilon, delta = split_budget(self.cost, self.delta, self.reports)
        if self.shuffled_among is None:
            return epsilon
        return local_epsilon_for_shuffle(epsilon, delta, self.shuffled_among)

    @functools.cached_property
    def report_rho(self) -> float:
        """Each report's rho for a Gaussian answer: its share of a rho ledger's cost, or in an
        epsilon ledger the largest rho that is (report epsilon, report delta)-DP."""
        if self.unit == "rho":
            return self.cost / self.reports
        if self.shuffled_among is not None or not self.delta > 0:
            raise InvalidParameterError("a Gaussian report in an epsilon round needs delta > 0")
        return approx_dp_to_zcdp(*split_budget(self.cost, self.delta, self.reports))

    @functools.cached_property
    def hadamard_epsilon(self) -> float:
        """Each Hadamard report's epsilon: in a rho ledger the largest whose Hadamard response
        is its share of the cost (``hadamard_epsilon_for_zcdp``: half the generic eps^2 / 2);
        else ``report_epsilon``."""
        if self.unit == "rho":
            return hadamard_epsilon_for_zcdp(self.cost / self.reports)
        return self.report_epsilon

    def charge(self, ledger: Ledger, stage: str) -> None:
        """Charge the round's cost to ``stage`` (the randomisers call it before drawing)."""
        if self.unit != ledger.unit:
            raise InvalidParameterError(
                f"a round budget in {self.unit} charged to a ledger in {ledger.unit}")
        ledger.charge(stage, self.cost)


def _flip(bits: np.ndarray, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Randomised response's draw without its charge (the randomisers built on it charge): each
    bit flipped when its uniform is below ``flip_probability(epsilon)``, so the realised flip
    probability is that number exactly (never below the claimed 1 / (1 + e^eps))."""
    bits = np.asarray(bits, dtype=bool)
    return bits ^ (rng.random(bits.shape) < flip_probability(epsilon))


def randomised_response(bits: np.ndarray, budget: RoundBudget, rng: np.random.Generator, *,
                        ledger: Ledger, stage: str) -> np.ndarray:
    """Each boolean flipped with probability ``flip_probability(eps)`` (at least 1 / (1 + e^eps),
    at most 1/2), sent unchanged otherwise, eps = ``budget.report_epsilon``.

    Sensitivity: any bit may become any bit. Guarantee: eps-LDP per bit (the probability of
    either output changes by at most a factor e^eps, for the probabilities the draw realises:
    ``flip_probability``). Row i holds user i's bits for the round,
    ``budget.reports`` of them (one per coordinate): ``budget.cost`` is charged to ``stage``
    before the draw.
    """
    bits = np.asarray(bits, dtype=bool)
    if math.prod(bits.shape[1:]) != budget.reports:
        raise InvalidParameterError(
            f"each user sends {math.prod(bits.shape[1:])} bits, its budget is for "
            f"{budget.reports}")
    budget.charge(ledger, stage)
    return _flip(bits, budget.report_epsilon, rng)


def hadamard_response(values: np.ndarray, size: int | np.ndarray, budget: RoundBudget,
                      rng: np.random.Generator, *, ledger: Ledger, stage: str
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Hadamard randomised response over [size] (a power of two, or one per user: a public
    choice such as a tree level), Cormode-Kulkarni-Srivastava.

    Each user draws a uniform index j (independent of its value v) and sends (j, b), with b the
    Hadamard entry H[v, j] = (-1)^popcount(v & j) sent by randomised response at
    eps = ``budget.hadamard_epsilon``. Sensitivity: v may be any element of [size]. Guarantee:
    eps-LDP (j carries no information; b is randomised response, whose probabilities change by
    at most e^eps), ``hadamard_response_zcdp(eps)``-zCDP, amplified when shuffled:
    ``budget.cost``, charged to ``stage`` before the draw. Returns (j, b) with b in {-1, +1}.
    """
    budget.charge(ledger, stage)
    values = np.asarray(values, dtype=np.int64)
    j = np.floor(rng.random(values.shape) * size).astype(np.int64)
    parity = np.bitwise_count(values & j) & 1
    kept = _flip(parity.astype(bool), budget.hadamard_epsilon, rng)
    return j, np.where(kept, -1, 1).astype(np.int8)


def unary_encoding(values: np.ndarray, size: int, budget: RoundBudget,
                   rng: np.random.Generator, *, ledger: Ledger, stage: str) -> np.ndarray:
    """One-hot encode v in [size] and flip every bit independently with probability
    ``flip_probability(eps / 2)`` (about 1 / (1 + e^(eps/2)), never less), eps =
    ``budget.report_epsilon`` (RAPPOR-style unary encoding, GRS KnownVar step 1): shape
    (n, size) for ``values`` of shape (n,); for (n, k), k encodings of each user (one per
    coordinate), shape (k, n, size), drawn coordinate by coordinate: the bits of k calls with
    one column each, in one call (a Python call per coordinate took minutes at d = 10^5).

    Sensitivity: two one-hot vectors differ in two bits. Guarantee: eps-LDP (each differing bit
    is eps/2 randomised response; the others are identically distributed). A user sends
    ``budget.reports`` such encodings in the round (one per coordinate, each call stating the
    round's cost): ``budget.cost`` is charged to ``stage`` before the draw.
    """
    budget.charge(ledger, stage)
    values = np.asarray(values, dtype=np.int64)
    columns = values.reshape(values.shape[0], -1).T  # (k, n)
    onehot = np.zeros((*columns.shape, size), dtype=bool)
    np.put_along_axis(onehot, columns[..., None], True, axis=-1)
    # Uniforms in (k, n, size) order: the stream of k draws of (n, size), one a coordinate.
    flipped = _flip(onehot, budget.report_epsilon / 2.0, rng)
    return flipped[0] if values.ndim == 1 else flipped


def local_gaussian(rows: np.ndarray, sensitivity: float, budget: RoundBudget,
                   rng: np.random.Generator, *, ledger: Ledger, stage: str) -> np.ndarray:
    """Each user's vector plus N(0, sensitivity^2 / (2 rho) I), rho = ``budget.report_rho``.

    Sensitivity: the caller's bound on the l2 distance between any two users' inputs (2C for
    vectors clipped to norm C); with ``budget.reports`` = the row's length, each coordinate is
    one answer and the bound is per coordinate (GRS). Guarantee: rho-zCDP per answer in the
    local model (Definition 2.3): ``budget.cost`` is charged to ``stage`` before the draw.
    """
    if budget.reports not in (1, np.shape(rows)[-1]):
        raise InvalidParameterError(
            f"a Gaussian report is a row or each of its coordinates, not {budget.reports}")
    budget.charge(ledger, stage)
    return gaussian_noise(rows, sensitivity, budget.report_rho, rng)


def polya_noise(shape: tuple[int, ...], n: int, budget: RoundBudget, sensitivity: int,
                rng: np.random.Generator, *, ledger: Ledger, stage: str) -> np.ndarray:
    """Each user's share of discrete Laplace noise: NB(1/n, 1 - a) - NB(1/n, 1 - a), a =
    e^(-eps / sensitivity), eps = ``budget.report_epsilon`` (BBGN20's IKOS protocol).

    NB(r, s) counts failures before r successes of success probability s (numpy's convention).
    Negative binomials of equal s add, so the n users' shares sum to NB(1, 1 - a) - NB(1, 1 - a),
    the difference of two geometrics P(k) = (1 - a) a^k: the discrete Laplace P(z) ~ a^|z|, which
    makes an integer sum of ``sensitivity`` eps-DP (central). The success probability is 1 - a;
    BBGN20's experiment code passes a, which under-noises about a thousandfold.
    No local guarantee: the shares protect the sum only together. The sums a user takes part
    in (``budget.reports``, one per coordinate) compose to ``budget.cost``, charged to
    ``stage`` before the draw.
    """
    budget.charge(ledger, stage)
    return _polya_draw(shape, n, budget.report_epsilon, sensitivity, rng)


# The largest scale sensitivity / eps of the discrete Laplace noise the Polya shares draw. The
# users' gamma mixing draws add up to one exponential of this scale, so with it at most 2^56 a
# share's Poisson rate, and the noise itself, pass 2^62 with probability below e^-64: numpy
# draws them (its Poisson refuses rates near 2^63) and IKOS's sums modulo 2^64 read back as the
# signed noisy sum. Past it numpy raised after the charge (iome-shuffle at epsilon = 1e-18 on
# one coordinate: scale 8e19).
POLYA_SCALE_LIMIT = 2.0**56


def polya_noise_fits(epsilon: float, sensitivity: int) -> bool:
    """Whether discrete Laplace noise for ``sensitivity`` at ``epsilon`` (public) is within
    what ``polya_noise`` draws.

    Parameters
    ----------
    epsilon : float
        The noise's epsilon.
    sensitivity : int
        The integer sum's sensitivity.

    Returns
    -------
    bool
        Whether epsilon > 0 and the scale sensitivity / epsilon is at most
        ``POLYA_SCALE_LIMIT``.
    """
    return epsilon > 0.0 and sensitivity / epsilon <= POLYA_SCALE_LIMIT


def _polya_draw(shape: tuple[int, ...], n: int, epsilon: float, sensitivity: int,
                rng: np.random.Generator) -> np.ndarray:
    """``polya_noise``'s draw without its charge (``summation_randomiser`` charges first);
    the sum's epsilon is capped at ``DRAWN_EPSILON_CAP`` (past about 37 a unit's success
    probability rounded to 1 and the noise was always 0; less epsilon is conservative and the
    analyser does not depend on it; since 2026-11-27 the cap is on the sum's epsilon, not a
    unit's, so that ``ikos_sigma``'s e^epsilon stays finite). A scale beyond
    ``POLYA_SCALE_LIMIT`` is refused (the protocols refuse it from their plan, before the
    charge)."""
    if not polya_noise_fits(epsilon, sensitivity):
        raise InvalidParameterError(
            f"discrete Laplace noise at epsilon={epsilon:.3g} for sensitivity {sensitivity} has "
            f"scale above {POLYA_SCALE_LIMIT:.3g}, beyond what 64-bit shares can carry")
    success = -math.expm1(-min(epsilon, DRAWN_EPSILON_CAP) / sensitivity)
    return (rng.negative_binomial(1.0 / n, success, size=shape)
            - rng.negative_binomial(1.0 / n, success, size=shape))


def additive_shares(values: np.ndarray, parts: int, rng: np.random.Generator) -> np.ndarray:
    """Split integers into ``parts`` shares uniform modulo 2^64 that add up to them: shape
    (*values.shape, parts), uint64 (IKOS split-and-mix). Any parts - 1 shares are uniform and
    independent of the value; only the sum of all n parts shares, after shuffling, is
    revealed (up to statistical distance 2^-sigma for parts from ``ikos_parts``)."""
    values = np.asarray(values).astype(np.uint64)
    shares = rng.integers(0, _UINT64_MAX, size=(*values.shape, parts), dtype=np.uint64,
                          endpoint=True)
    # The last share completes the sum modulo 2^64 (uint64 arithmetic wraps).
    shares[..., -1] = values - shares[..., :-1].sum(axis=-1, dtype=np.uint64)
    return shares


def summation_randomiser(values: np.ndarray, precision: int, budget: RoundBudget, n: int,
                         parts: int, rng: np.random.Generator, *, ledger: Ledger, stage: str
                         ) -> np.ndarray:
    """BBGN20 IKOS randomiser for values in [0, 1]: randomised rounding to {0..precision}, plus
    this user's Polya share of discrete Laplace noise, split into ``parts`` shares mod 2^64.

    Sensitivity: a value in {0..precision} may become any other, so the integer sum changes by
    at most ``precision``. Guarantee (shuffle model): the shuffled shares of all n users reveal
    only the noisy sum (statistical distance 2^-sigma, ``ikos_parts``), which is eps-DP
    (eps = ``budget.report_epsilon``), so the protocol is (eps, (1 + e^eps) 2^-sigma)-DP per
    value (``ikos_sigma`` gives the sigma for a delta); a user's
    ``budget.reports`` values (one per coordinate) compose to ``budget.cost``, charged to
    ``stage`` before anything is drawn. Returns uint64 shares, shape (*values.shape, parts).
    """
    budget.charge(ledger, stage)
    scaled = np.clip(np.asarray(values, dtype=np.float64), 0.0, 1.0) * precision
    low = np.floor(scaled)
    rounded = low.astype(np.int64) + (rng.random(scaled.shape) < scaled - low)
    noisy = rounded + _polya_draw(scaled.shape, n, budget.report_epsilon, precision, rng)
    return additive_shares(noisy, parts, rng)


def ikos_sigma(epsilon: float, delta: float) -> float:
    """The sigma for which IKOS summation of an epsilon-DP noisy sum is (epsilon, delta)-DP:
    a release within statistical distance T of an e-DP one is (e, (1 + e^e) T)-DP (for any
    event S, P[M(D) in S] <= P[M*(D) in S] + T <= e^e (P[M(D') in S] + T) + T), so T =
    2^-sigma = delta / (1 + e^e). The sum is drawn at e = min(epsilon, ``DRAWN_EPSILON_CAP``)
    (``_polya_draw``), e-DP and so epsilon-DP: e^e stays finite at huge budgets."""
    drawn = min(epsilon, DRAWN_EPSILON_CAP)
    return math.log2((1.0 + math.exp(drawn)) / delta)


def ikos_parts(n: int, sigma: float) -> int:
    """Shares per user and value so that IKOS summation over Z_(2^64) is within statistical
    distance 2^-sigma of the ideal sum: max(3, ceil((2 sigma + log2 q) / (log2 n - log2 e) + 1))
    (BBGN20's bound as used in third-party code; recorded, not re-derived here). Needs n >= 4:
    with fewer users the shuffle hides nothing and the bound is void."""
    if n < 4:
        raise InvalidDataError(f"shuffle-model summation needs at least 4 users, got n={n}")
    return max(3, math.ceil((2.0 * sigma + 64.0) / (math.log2(n) - math.log2(math.e)) + 1.0))


# Up to this epsilon, ``hadamard_response_zcdp`` is the closed form 1/2 eps tanh(eps / 2) (the
# supremum of D_a / a is its limit at a -> 1; proof in its docstring, valid up to 3.2122...,
# the root of eps (cosh eps + 3) = 4 sinh eps); above it, the grid bound.
_KL_SUPREMUM_UP_TO = 3.0
# The Renyi orders of the grid bound: 1 + 10^-8 .. 1 + 10^4, consecutive ones 1.4% apart.
_ALPHA = 1.0 + np.logspace(-8, 4, 2000)
_LOG_2 = math.log(2.0)


def _log_sinh(z: np.ndarray) -> np.ndarray:
    """log sinh(z) for z > 0, without overflow (sinh past 710) or cancellation."""
    small = np.minimum(z, 300.0)
    return np.where(z > 300.0, z - _LOG_2 + np.log1p(-np.exp(-2.0 * z)), np.log(np.sinh(small)))


def _hadamard_grid_bound(epsilon: float) -> float:
    """The grid bound on sup_a D_a / a (see ``hadamard_response_zcdp``), used above
    ``_KL_SUPREMUM_UP_TO``."""
    half = 0.5 * epsilon
    # log(1 + s), s = sinh(a eps/2) sinh((a-1) eps/2) / cosh(eps/2), in logs: no overflow at
    # a eps / 2 up to 10^254, and no cancellation at a -> 1 (s ~ (a - 1) is computed as a
    # product, not as a difference of two numbers near 1). cosh(h) = e^h (1 + e^-2h) / 2.
    log_cosh = half - _LOG_2 + math.log1p(math.exp(-2.0 * half))
    log_s = _log_sinh(_ALPHA * half) + _log_sinh((_ALPHA - 1.0) * half) - log_cosh
    divergence = np.logaddexp(0.0, log_s) / (_ALPHA - 1.0)
    # D_a is non-decreasing in a: on [a_i, a_(i+1)], D_a / a <= D_(a_(i+1)) / a_i; beyond the
    # last order, D_a <= D_inf = eps.
    return float(max(np.max(divergence[1:] / _ALPHA[:-1]), epsilon / _ALPHA[-1]))


def hadamard_response_zcdp(epsilon: float) -> float:
    """The zCDP of ``hadamard_response`` at ``epsilon``: exactly sup_a D_a / a up to eps = 3, a
    rigorous upper bound above; never below the true value.

    For v != v' the Hadamard rows agree on exactly half of the indices j, where the outputs are
    identically distributed, and are opposite on the other half, where the bit is randomised
    response between Ber(p) and Ber(1 - p), p = e^eps / (1 + e^eps). So, with h = eps / 2,
    D_a = ln(1/2 + 1/2 (p^a (1-p)^(1-a) + (1-p)^a p^(1-a))) / (a - 1)
        = ln(1 + sinh(a h) sinh((a - 1) h) / cosh(h)) / (a - 1),
    about eps^2 / 4 per a for small eps: half the generic eps^2 / 2 of eps-DP.

    Up to eps = 3 the supremum of D_a / a is its limit at a -> 1, the KL divergence
    1/2 eps tanh(eps / 2). Proof: with t = (a - 1/2) eps, a (a - 1) = (t^2 - h^2) / eps^2 and
    D_a / a <= KL becomes phi(t) = ln((cosh h + cosh t) / (2 cosh h)) <= (t^2 - h^2) tanh(h) /
    (4 h) = psi(t) for t >= h. Both vanish at t = h, and phi' <= psi' there and beyond when
    u(t) = sinh(t) / (t (cosh h + cosh t)) is non-increasing on [h, oo), that is when
    cosh h <= R(t) = (sinh t cosh t - t) / (t cosh t - sinh t) for t >= h. R is increasing (R'
    has the sign of t sinh t cosh t - 2 sinh^2 t + t^2, whose series in t has no negative
    coefficient), so it suffices at t = h: eps (cosh eps + 3) <= 4 sinh eps, true up to
    eps = 3.2122... Past it the supremum is at some a > 1 (13.86 at eps = 20, not 10).

    Above eps = 3, the grid bound: D_a is non-decreasing in a, so on a grid a_0 < a_1 < ... the
    supremum over [a_i, a_(i+1)] is at most D_(a_(i+1)) / a_i; beyond the last point
    D_a <= D_inf = eps. The grid (1 + 10^-8 .. 1 + 10^4, 2000 orders) puts it within about 1%
    above the supremum.

    Both are evaluated without cancellation (the closed form is a product; the grid takes
    logs of a product), to a relative 1e-15 for every eps from 1e-153 up (the former
    evaluation, a difference of logs near a = 1, carried 1e-14 absolute: 1.5e-14 at
    eps = 1e-10, where rho is 2.5e-21). The result is then rounded up by six ulps: tanh errs
    by at most two ulps and the product rounds once, at most five ulps of the result in all
    (the grid bound exceeds the supremum by far more, at least its cells' relative width),
    so it never understates rho (conservative: a larger rho is always a valid zCDP bound, a
    smaller one would under-count). Below eps = 1e-154, eps^2 / 4 underflows and the
    smallest floats above it are returned.

    Parameters
    ----------
    epsilon : float
        The response's epsilon (non-negative).

    Returns
    -------
    float
        rho such that the response is rho-zCDP.
    """
    if epsilon > 1e250:
        # D_a <= D_inf = eps <= a eps: eps bounds sup D_a / a (conservative), and the grid's
        # a eps below would overflow.
        return float(epsilon)
    if not epsilon > 0.0:
        return 0.0  # eps = 0: the response reveals nothing
    if epsilon <= _KL_SUPREMUM_UP_TO:
        rho = 0.5 * epsilon * math.tanh(0.5 * epsilon)
    else:
        rho = _hadamard_grid_bound(epsilon)
    for _ in range(6):
        rho = math.nextafter(rho, math.inf)
    return rho


def hadamard_epsilon_for_zcdp(rho: float) -> float:
    """The largest eps whose ``hadamard_response`` is rho-zCDP (``hadamard_response_zcdp``
    inverted by bisection, to a relative 2^-62), at most ``DRAWN_EPSILON_CAP``: the response
    draws at no more.

    Parameters
    ----------
    rho : float
        The report's zCDP budget (non-negative).

    Returns
    -------
    float
        eps with ``hadamard_response_zcdp(eps) <= rho`` as computed.
    """
    if hadamard_response_zcdp(DRAWN_EPSILON_CAP) <= rho:
        # A huge rho (iome-local at rho = 1e300 searched up to overflow, then bisected on NaN
        # down to eps = 0 and divided by zero). Below the cap the search runs as before.
        return DRAWN_EPSILON_CAP
    if not rho > 0.0:
        return 0.0
    # The answer is about 2 sqrt(rho) (rho ~ eps^2 / 4): a bracket of that scale, so the
    # bisection's resolution is relative (a bracket [0, 1] resolved only 1e-18 absolute, and
    # the answer at rho = 1e-100 is 2e-50).
    low, high = 0.0, 4.0 * math.sqrt(rho)
    while hadamard_response_zcdp(high) <= rho:
        low, high = high, 2.0 * high
    for _ in range(64):
        middle = (low + high) / 2.0
        low, high = (middle, high) if hadamard_response_zcdp(middle) <= rho else (low, middle)
    return low
