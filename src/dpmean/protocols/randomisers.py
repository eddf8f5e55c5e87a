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
# 2e-9, is still held to 3e-8 relative in float64, and the answers are as good as exact.
# Conservative: an eps'-DP report with eps' <= eps is eps-DP, so the charge (the granted eps)
# stays valid; analysers debias with the same ``keep_probability``, so they match the draw.
DRAWN_EPSILON_CAP = 20.0


def keep_probability(epsilon: float) -> float:
    """P[a randomised-response bit is sent unchanged] = e^eps / (1 + e^eps), eps capped at
    ``DRAWN_EPSILON_CAP`` (the randomisers draw at no more; their analysers debias with this)."""
    return 1.0 / (1.0 + math.exp(-min(epsilon, DRAWN_EPSILON_CAP)))


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
    """Randomised response's draw without its charge (the randomisers built on it charge)."""
    bits = np.asarray(bits, dtype=bool)
    return bits ^ (rng.random(bits.shape) >= keep_probability(epsilon))


def randomised_response(bits: np.ndarray, budget: RoundBudget, rng: np.random.Generator, *,
                        ledger: Ledger, stage: str) -> np.ndarray:
    """Each boolean sent unchanged with probability e^eps / (1 + e^eps), flipped otherwise,
    eps = ``budget.report_epsilon``.

    Sensitivity: any bit may become any bit. Guarantee: eps-LDP per bit (the probability of
    either output changes by at most a factor e^eps). Row i holds user i's bits for the round,
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
    1 / (1 + e^(eps/2)), eps = ``budget.report_epsilon`` (RAPPOR-style unary encoding, GRS
    KnownVar step 1): shape (n, size).

    Sensitivity: two one-hot vectors differ in two bits. Guarantee: eps-LDP (each differing bit
    is eps/2 randomised response; the others are identically distributed). A user sends
    ``budget.reports`` such encodings in the round (one per coordinate, a call each, each
    stating the round's cost): ``budget.cost`` is charged to ``stage`` before the draw.
    """
    budget.charge(ledger, stage)
    values = np.asarray(values, dtype=np.int64)
    onehot = np.zeros((values.shape[0], size), dtype=bool)
    onehot[np.arange(values.shape[0]), values] = True
    return _flip(onehot, budget.report_epsilon / 2.0, rng)


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


def _polya_draw(shape: tuple[int, ...], n: int, epsilon: float, sensitivity: int,
                rng: np.random.Generator) -> np.ndarray:
    """``polya_noise``'s draw without its charge (``summation_randomiser`` charges first);
    the per-unit epsilon is capped at ``DRAWN_EPSILON_CAP`` (past about 37 the success
    probability rounded to 1 and the noise was always 0; less epsilon is conservative and the
    analyser does not depend on it)."""
    success = -math.expm1(-min(epsilon / sensitivity, DRAWN_EPSILON_CAP))
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
    (eps = ``budget.report_epsilon``), so the protocol is (eps, 2^-sigma)-DP per value; a user's
    ``budget.reports`` values (one per coordinate) compose to ``budget.cost``, charged to
    ``stage`` before anything is drawn. Returns uint64 shares, shape (*values.shape, parts).
    """
    budget.charge(ledger, stage)
    scaled = np.clip(np.asarray(values, dtype=np.float64), 0.0, 1.0) * precision
    low = np.floor(scaled)
    rounded = low.astype(np.int64) + (rng.random(scaled.shape) < scaled - low)
    noisy = rounded + _polya_draw(scaled.shape, n, budget.report_epsilon, precision, rng)
    return additive_shares(noisy, parts, rng)


def ikos_parts(n: int, sigma: float) -> int:
    """Shares per user and value so that IKOS summation over Z_(2^64) is within statistical
    distance 2^-sigma of the ideal sum: max(3, ceil((2 sigma + log2 q) / (log2 n - log2 e) + 1))
    (BBGN20's bound as used in third-party code; recorded, not re-derived here). Needs n >= 4:
    with fewer users the shuffle hides nothing and the bound is void."""
    if n < 4:
        raise InvalidDataError(f"shuffle-model summation needs at least 4 users, got n={n}")
    return max(3, math.ceil((2.0 * sigma + 64.0) / (math.log2(n) - math.log2(math.e)) + 1.0))


def hadamard_response_zcdp(epsilon: float) -> float:
    """The exact zCDP of ``hadamard_response`` (a rigorous upper bound on sup_a D_a / a).

    For v != v' the Hadamard rows agree on exactly half of the indices j, where the outputs are
    identically distributed, and are opposite on the other half, where the bit is randomised
    response between Ber(p) and Ber(1 - p), p = e^eps / (1 + e^eps). So
    D_a = ln(1/2 + 1/2 (p^a (1-p)^(1-a) + (1-p)^a p^(1-a))) / (a - 1), about eps^2 / 4 per a for
    small eps: half the generic eps^2 / 2 of eps-DP. D_a is non-decreasing in a, so on a grid
    a_0 < a_1 < ... the supremum over [a_i, a_(i+1)] is at most D_(a_(i+1)) / a_i; beyond the
    last point D_a <= D_inf = eps.
    """
    if epsilon > 1e250:
        # D_a <= D_inf = eps <= a eps: eps bounds sup D_a / a (conservative), and the grid's
        # a eps below would overflow.
        return float(epsilon)
    alpha = 1.0 + np.logspace(-8, 4, 2000)
    # log(1 + e^eps) = eps + log(1 + e^-eps), mathematically equal (the float may differ in
    # its last bit); the second form past eps = 30 only, so e^eps cannot overflow (past 709).
    # Releases never ask past 30 (``hadamard_epsilon_for_zcdp`` stops at the cap, 20).
    log_p = -np.log1p(np.exp(-epsilon))
    log_q = -(np.log1p(np.exp(epsilon)) if epsilon < 30.0
              else epsilon + np.log1p(np.exp(-epsilon)))
    opposite = np.logaddexp(alpha * log_p + (1 - alpha) * log_q,
                            alpha * log_q + (1 - alpha) * log_p)
    divergence = np.logaddexp(math.log(0.5), math.log(0.5) + opposite) / (alpha - 1.0)
    bound = np.max(divergence[1:] / alpha[:-1])
    return float(max(bound, epsilon / alpha[-1]))


def hadamard_epsilon_for_zcdp(rho: float) -> float:
    """The largest eps whose ``hadamard_response`` is rho-zCDP (``hadamard_response_zcdp``
    inverted by bisection), at most ``DRAWN_EPSILON_CAP``: the response draws at no more."""
    if hadamard_response_zcdp(DRAWN_EPSILON_CAP) <= rho:
        # A huge rho (iome-local at rho = 1e300 searched up to overflow, then bisected on NaN
        # down to eps = 0 and divided by zero). Below the cap the search runs as before.
        return DRAWN_EPSILON_CAP
    low, high = 0.0, max(4.0 * math.sqrt(rho), 1.0)
    while hadamard_response_zcdp(high) <= rho:
        low, high = high, 2.0 * high
    for _ in range(60):
        middle = (low + high) / 2.0
        low, high = (middle, high) if hadamard_response_zcdp(middle) <= rho else (low, middle)
    return low
