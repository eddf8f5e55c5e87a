"""IOME in the local model (section 5.1, Theorem 5.2) and in the shuffle model (section 5.2,
Lemma 5.4, Theorem 5.6): rotate, private coordinate medians, private clipping threshold, noisy
clipped mean, each step one round of messages from every user."""

from __future__ import annotations

import math
import warnings
from abc import abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from ..accounting import PrivacyLedger, remainder
from ..diagnostics import Diagnostic, Kind
from ..engines import Engine
from ..errors import InvalidParameterError, NoisyReleaseWarning
from ..transforms import RandomRotation, View, clip_rows, next_power_of_two
from ..validation import check_fraction, check_positive, check_steps, user_stacklevel
from .base import (
    COORDINATE_BUDGET,
    RELEASE_NOISE,
    ApproxDPProtocol,
    ProtocolEstimator,
    user_blocks,
)
from .composition import SMALLEST_STEP_DELTA, split_budget
from .randomisers import (
    DRAWN_EPSILON_CAP,
    POLYA_SCALE_LIMIT,
    RoundBudget,
    ikos_parts,
    ikos_sigma,
    local_gaussian,
    polya_noise_fits,
    reports_carry_signal,
    summation_randomiser,
)
from .range_counting import (
    HierarchicalHistogram,
    HistogramMessages,
    heaviest_buckets,
    quantiles_from_fractions,
)
from .rounds import RoundLedger
from .shuffler import shuffle, summation_analyser

# Messages the shuffle simulation holds at once (shares of a chunk of coordinates).
_SHARES_AT_ONCE = 1 << 24
# Users' rotated, clipped values the simulation keeps for the chunks of a group of coordinates
# (every user's rows rotated once a group, not once a chunk: 32 times at n = 20,000, d = 2000).
_VALUES_AT_ONCE = 1 << 25


def _histogram_round(
    engine: Engine, view: View, hh: HierarchicalHistogram, report: Callable,
    budget: RoundBudget, rng: np.random.Generator, shuffled: bool, ledger: PrivacyLedger,
    stage: str,
) -> HistogramMessages:
    """One round of range counting: every user turns its own row into (group, bucket) with
    ``report`` and sends ``hh.randomise``'s message, whose randomiser charges ``stage`` once for
    the round (``RoundLedger``: the blocks are other users); in the shuffle model the analyser
    gets them in random order."""
    round_ledger = RoundLedger(ledger)
    parts = []
    for block in user_blocks(engine, view):
        group, bucket = report(block, rng)
        parts.append(hh.randomise(bucket, group, budget, rng, ledger=round_ledger, stage=stage))
    messages = HistogramMessages.concat(parts)
    return messages.permuted(rng.permutation(engine.n)) if shuffled else messages


# The most counts in the centre round's tree (one bucket a rotated coordinate): its analyser
# holds about four float64 arrays of that many (every level's estimates, the consistent
# leaves, their cumulative sums: 0.52 GiB above the data for 2^24 counts, measured), so 2 GiB
# at this limit: iome-shuffle's default tree (4^6 buckets) for up to 16,384 rotated
# coordinates. At 2^28 it allowed 65,536, whose round peaked at 9.5 GB and failed for memory
# after its users were randomised under a 6.5 GB limit (a trial).
CENTRE_COUNTS = 2**26


def _precision(n: int) -> int:
    """IKOS summation's grid: each value in [0, 1] is rounded to a multiple of 1 / ceil(sqrt n)
    (public: n)."""
    return math.ceil(math.sqrt(n))


def _bucket(values: np.ndarray, low: np.ndarray | float, high: np.ndarray | float, u: int
            ) -> np.ndarray:
    """The bucket in [u] of each value on the uniform grid of [low, high] (clamped)."""
    position = (values - low) / (high - low) * u
    return np.clip(np.floor(position), 0, u - 1).astype(np.int64)


class _IOMEProtocol(ProtocolEstimator):
    """The three rounds both models share; subclasses give each range-counting round's budget
    (``_round_budget``), whether messages are shuffled, the threshold's target quantile
    (``_clipped_rows``) and the mean round (``_noisy_mean``)."""

    shuffled: bool
    # Each column in units of its public range where the ranges' widths differ (as the central
    # estimators): in the data's units a survey's flag, scale and age were released at their
    # ranges' faces beside an income in (0, 10^6) (a user trial, n = 20,000). No parameter
    # is in the data's units; the centre is mapped back, the radii stay in the box-normalised
    # space (``box_scale`` says so).
    box_normalised = True
    declared_diagnostics = {
        "centre": Diagnostic(Kind.VECTOR, "The private centre (data units)."),
        "threshold": Diagnostic(Kind.FLOAT, "The private clipping radius (in the "
                                "box-normalised space where ``box_scale`` is given)."),
        "target_quantile": Diagnostic(Kind.FLOAT, "The quantile the radius aimed at."),
        "rounds": Diagnostic(Kind.INT, "Rounds of the protocol."),
    }
    # Per model: the local protocol gives its weakest round, the centre, more budget and a
    # shallower tree (measured in benchmarks/bench_protocols.py).
    default_centre_share: float
    default_centre_height: int

    def __init__(self, rho: float | None = None, *, centre_share: float | None = None,
                 threshold_share: float = 0.25, branching: int = 4,
                 centre_height: int | None = None, threshold_height: int = 3,
                 norm_span: float = 16.0, beta: float = 0.05, min_quantile: float = 0.5,
                 centre_rule: str = "heaviest", **common: Any) -> None:
        super().__init__(rho, **common)
        if centre_share is None:
            centre_share = self.default_centre_share
        if centre_height is None:
            centre_height = self.default_centre_height
        if centre_rule not in ("heaviest", "median"):
            raise InvalidParameterError(
                f"centre_rule must be 'heaviest' or 'median', got {centre_rule!r}")
        self.centre_rule = centre_rule
        self.centre_share = check_fraction(centre_share, "centre_share")
        self.threshold_share = check_fraction(threshold_share, "threshold_share")
        self.centre_tree = HierarchicalHistogram(
            int(branching), check_steps(centre_height, "centre_height"), "centre_height")
        self.threshold_tree = HierarchicalHistogram(
            int(branching), check_steps(threshold_height, "threshold_height"),
            "threshold_height")
        self.norm_span = check_positive(norm_span, "norm_span")
        self.beta = check_fraction(beta, "beta")
        self.min_quantile = check_fraction(min_quantile, "min_quantile")

    @abstractmethod
    def _stage_budget(self, stage: str, n: int) -> RoundBudget:
        """What each user's report costs in round ``stage`` ("centre" or "threshold") among n
        users: the stage's plan, in the ledger's unit (public)."""

    def _round_budget(self, stage: str, engine: Engine) -> RoundBudget:
        return self._stage_budget(stage, engine.n)

    def _check_centre_tree(self, d: int) -> None:
        """Refuse, from the plan (public: d, the tree), a centre round whose analyser would
        hold more than ``CENTRE_COUNTS`` counts: one tree's buckets for each of the
        rotation's coordinates (a review: such a round failed for memory after
        its users had been randomised)."""
        k = next_power_of_two(d)
        if k * self.centre_tree.buckets > CENTRE_COUNTS:
            raise InvalidParameterError(
                f"{self.method}: the centre round's tree ({self.centre_tree.buckets} buckets) "
                f"for each of {k} rotated coordinates needs more than {CENTRE_COUNTS:,} "
                f"counts (about 2 GiB to analyse); give a smaller centre_height")

    def _check_reports(self, n: int) -> None:
        """Refuse, from the plan alone (public; before any charge), a budget whose range-count
        reports would carry nothing: a report epsilon so small (below about 2e-15) that its
        Hadamard response is drawn with flip probability exactly 1/2 (``reports_carry_signal``;
        a shuffled report's epsilon at epsilon = 1e-100 is 1e-16), whose analyser cannot
        debias. Tiny budgets above that are released, very noisily (rho = 1e-20 gives reports
        at eps = 1.4e-10; the analyser once divided by zero there)."""
        for stage in ("centre", "threshold"):
            epsilon = self._stage_budget(stage, n).hadamard_epsilon
            if not reports_carry_signal(epsilon):
                raise InvalidParameterError(
                    f"{self.method}: the budget is too small: its {stage} round gives each "
                    f"user's report epsilon={epsilon:.3g}, at which Hadamard response flips "
                    f"with probability 1/2 in floating point, so the reports would carry "
                    f"nothing; give a larger budget")

    @abstractmethod
    def _clipped_rows(self, engine: Engine) -> float:
        """How many rows the threshold round aims to leave above the clipping radius."""

    @abstractmethod
    def _noisy_mean(self, engine: Engine, view: View, radius: float, rng: np.random.Generator,
                    ledger: PrivacyLedger) -> tuple[np.ndarray, dict[str, Any]]:
        """Round 3: the mean of the rows of ``view`` clipped to ``radius``, and its
        diagnostics; its randomisers charge stage "noise"."""

    def _split(self, total: float) -> dict[str, float]:
        centre = total * self.centre_share
        threshold = total * (1.0 - self.centre_share) * self.threshold_share
        # The last share takes what is left, so that the three never sum above the total.
        return {"centre": centre, "threshold": threshold,
                "noise": remainder(total, centre, threshold)}

    def _centre(self, engine: Engine, view: View, budget: RoundBudget,
                rng: np.random.Generator, ledger: PrivacyLedger
                ) -> tuple[np.ndarray, np.ndarray]:
        """Round 1: each user reports one uniformly chosen rotated coordinate on its public
        domain (Lemma 3.7); the analyser takes every coordinate's median bucket midpoint.
        Returns (centre, the rotated box centre)."""
        rotation = view.rotation
        assert rotation is not None  # release asks only about rotated views
        k = rotation.padded_dim
        mid, half = (engine.lo + engine.hi) / 2.0, (engine.hi - engine.lo) / 2.0
        rotated_mid = rotation.apply(mid)
        width = min(float(np.abs(half).sum()) / math.sqrt(k), float(np.linalg.norm(half))
                    * math.sqrt(2.0 * math.log(4.0 * k * engine.n / self.beta) / k))
        width = max(width, 1e-12)
        low, high = rotated_mid - width, rotated_mid + width
        u = self.centre_tree.buckets

        def report(block: np.ndarray, rng: np.random.Generator) -> tuple:
            group = rng.integers(0, k, size=block.shape[0])
            value = block[np.arange(block.shape[0]), group]
            return group, _bucket(value, low[group], high[group], u)

        messages = _histogram_round(engine, view, self.centre_tree, report, budget, rng,
                                    self.shuffled, ledger, "centre")
        fractions = self.centre_tree.leaf_fractions(messages, k, budget.hadamard_epsilon)
        if self.centre_rule == "heaviest":
            buckets = heaviest_buckets(fractions, self.centre_tree.branching)
        else:
            buckets = quantiles_from_fractions(fractions, 0.5)
        return low + (buckets + 0.5) * (high - low) / u, rotated_mid

    def _radius(self, engine: Engine, view: View, top: float, clipped_rows: float,
                budget: RoundBudget, rng: np.random.Generator, ledger: PrivacyLedger
                ) -> tuple[float, float]:
        """Round 2: each user reports its shifted norm on a log2 grid over
        [top 2^-norm_span, top]; the analyser takes the quantile that leaves ``clipped_rows``
        rows above it, lowered by the range count's rank error, and at least ``min_quantile``.
        Returns (radius, target quantile)."""
        u = self.threshold_tree.buckets
        floor = math.log2(top) - self.norm_span

        def report(block: np.ndarray, rng: np.random.Generator) -> tuple:
            logs = np.log2(np.maximum(np.linalg.norm(block, axis=1), 2.0**floor))
            return np.zeros(block.shape[0], dtype=np.int64), _bucket(logs, floor,
                                                                   math.log2(top), u)

        messages = _histogram_round(engine, view, self.threshold_tree, report, budget, rng,
                                    self.shuffled, ledger, "threshold")
        fractions = self.threshold_tree.leaf_fractions(messages, 1, budget.hadamard_epsilon)
        error = self.threshold_tree.rank_error(engine.n, budget.hadamard_epsilon, self.beta)
        target = max(1.0 - clipped_rows / engine.n - error, self.min_quantile)
        bucket = quantiles_from_fractions(fractions, target)[0]
        return 2.0 ** (floor + (bucket + 1) * self.norm_span / u), target

    def warn_if_centre_unresolved(self, n: int, d: int) -> None:
        """A ``NoisyReleaseWarning`` where the centre round's public bound on each median's
        rank error (``HierarchicalHistogram.rank_error``, at probability 1 - beta, over the
        about n / d_pad users a rotated coordinate gets) exceeds 1: the noisy fractions do not
        place a median anywhere, the centre is noise and the release's noise follows the
        radius about it. A review: at n = 20,000, d = 256 (78 users a coordinate, bound 2.3)
        iome-shuffle erred 0.39 against central iome's 0.0045, unsaid; measured over
        d = 32-256, the centre held where the bound was 0.82 and failed at 1.64 (in one of
        three releases at 1.03-1.19). Public: n, d, the budget."""
        k = next_power_of_two(d)
        epsilon = self._stage_budget("centre", n).hadamard_epsilon
        bound = self.centre_tree.rank_error(n / k, epsilon, self.beta)
        if bound <= 1.0:
            return
        # Users a coordinate needs for a bound of 1 (it falls as 1 / sqrt(users)), at this
        # round's epsilon (for the shuffle protocol more users also amplify it: fewer).
        needed = k * math.ceil(n / k * bound**2)
        warnings.warn(
            f"{self.method}: its centre round gives each of the {k} rotated coordinates about "
            f"{n / k:.0f} users, too few to place a median (its noisy fractions of those users "
            f"may err by {bound:.2g}, more than the whole): the centre is noise, and the "
            f"release's noise follows the clipping radius about it, which can be many times "
            f"central iome's error. About {needed:,} users at this budget, fewer "
            f"coordinates, or a central method (iome) would do better.",
            NoisyReleaseWarning, stacklevel=user_stacklevel())

    def release(self, engine: Engine, budget: dict[str, float], ledger: PrivacyLedger,
                rng: np.random.Generator) -> tuple[np.ndarray, dict[str, Any]]:
        self.warn_if_centre_unresolved(engine.n, engine.d)
        # Public coins: drawn before any message, independent of the data.
        rotation = RandomRotation.draw(engine.d, rng)
        view = View(rotation=rotation)
        # No charge here: each round's randomisers charge its stage (the plan's amount, their
        # ``RoundBudget``) before their first draw, once per round (``RoundLedger``).
        centre, rotated_mid = self._centre(engine, view, self._round_budget("centre", engine),
                                           rng, ledger)
        shifted = view.with_shift(centre)
        top = float(np.linalg.norm((engine.hi - engine.lo) / 2.0)
                    + np.linalg.norm(rotated_mid - centre))
        radius, target = self._radius(engine, shifted, top, self._clipped_rows(engine),
                                      self._round_budget("threshold", engine), rng, ledger)
        mean, noise = self._noisy_mean(engine, shifted, radius, rng, ledger)
        diagnostics = {"centre": rotation.invert(centre), "threshold": radius,
                       "target_quantile": target, "rounds": 3, **noise}
        return shifted.restore(mean), diagnostics


class LocalIOME(_IOMEProtocol, ProtocolEstimator):
    """IOME in the local model (section 5.1): three rounds, rho-zCDP per user.

    1. Rotation (1/sqrt(d_pad)) H D with public signs. Each user picks one rotated coordinate
       uniformly (public coin) and reports it by hierarchical-histogram range counting
       (``branching`` B, ``centre_height`` levels; Hadamard response at the largest eps that is
       rho_centre-zCDP, ``hadamard_epsilon_for_zcdp``, about sqrt(4 rho): Hadamard response
       leaks half of what a generic eps-LDP report may). The analyser descends the consistent
       tree into the heaviest child (``centre_rule="heaviest"``, our default: at small budgets
       a noisy cumulative count's crossing of 1/2 is often far from the data) or takes the
       median bucket (``"median"``, the paper's choice).
    2. Each user reports its shifted norm, on a log2 grid (``threshold_height`` levels,
       ``norm_span`` octaves below a public norm bound), rho_threshold-zCDP; the
       threshold C is the (n - sqrt(2 d n / rho_noise))-th quantile, lowered by the range
       count's rank error (beta) and never below ``min_quantile`` (our floor: at small budgets
       the rank error exceeds n and the paper's target would be meaningless).
    3. Each user clips its shifted vector to C and adds N(0, (2C)^2 / (2 rho_noise)) (local
       Gaussian, sensitivity 2C); the analyser averages and rotates back.

    Parameters
    ----------
    rho : float, optional
        The budget; ``epsilon``, ``delta``, ``bounds``, ``random_state`` and ``engine`` are
        those of :class:`MeanEstimator` (``secure_noise=True`` is refused: no secure mode).
    centre_share : float, optional
        Round 1's fraction of the budget, in (0, 1) (default 1/2).
    threshold_share : float, default 0.25
        Round 2's fraction of the rest, in (0, 1).
    branching : int, default 4
        B, the branching factor of both range-counting trees.
    centre_height : int, optional
        Levels of round 1's tree, from 1, with branching^height at most 2^20 (default 4).
    threshold_height : int, default 3
        Levels of round 2's tree, from 1, with branching^height at most 2^20.
    norm_span : float, default 16.0
        Octaves of round 2's log2 grid below the public norm bound (positive).
    beta : float, default 0.05
        The failure probability of the rank error and rotation bounds, in (0, 1).
    min_quantile : float, default 0.5
        The lowest quantile the threshold may target, in (0, 1).
    centre_rule : {"heaviest", "median"}, default "heaviest"
        How the analyser reads round 1's tree.
    **common
        The parameters of :class:`MeanEstimator`.

    Raises
    ------
    InvalidParameterError
        An unknown ``centre_rule``, a share, ``beta`` or ``min_quantile`` outside (0, 1), a
        height below 1 or beyond 2^20 buckets (or a centre round beyond ``CENTRE_COUNTS``
        counts), a non-positive ``norm_span``, ``secure_noise=True``, or a common parameter
        :class:`MeanEstimator` refuses.

    Privacy
    -------
    rho-zCDP per user in the local model (notion "local-zCDP"), composed over the rounds:
    "centre", ``centre_share * rho`` (1/2 by default, not the paper's 1/4: one round of range
    counting per coordinate is the weakest step at IOME's local settings, measured in
    benchmarks/bench_protocols.py), Hadamard response at the largest eps that is
    rho_centre-zCDP; "threshold", ``threshold_share`` (1/4) of the rest, the same on the norm
    grid; "noise", the remainder, the local Gaussian with sensitivity 2C.
    ``epsilon``/``delta`` convert to rho as for the central estimators.
    """

    method = "iome-local"
    declared_diagnostics = {
        "user_noise_std": Diagnostic(Kind.FLOAT, "The Gaussian noise's standard deviation on "
                                     "each user's clipped row (in the box-normalised space "
                                     "where ``box_scale`` is given)."),
        **RELEASE_NOISE,
    }
    model = "local"
    notion = "local-zCDP"
    shuffled = False

    default_centre_share = 0.5
    default_centre_height = 4

    def budget_plan(self, n: int, d: int) -> dict[str, float]:
        self._check_reports(n)
        self._check_centre_tree(d)
        return self._split(self.rho)

    def _stage_budget(self, stage: str, n: int) -> RoundBudget:
        return RoundBudget(self._split(self.rho)[stage], "rho")

    def _clipped_rows(self, engine: Engine) -> float:
        return math.sqrt(2.0 * engine.d * engine.n / self._split(self.rho)["noise"])

    def _noisy_mean(self, engine: Engine, view: View, radius: float, rng: np.random.Generator,
                    ledger: PrivacyLedger) -> tuple[np.ndarray, dict[str, Any]]:
        rho = self._split(self.rho)["noise"]
        budget = RoundBudget(rho, "rho")
        round_ledger = RoundLedger(ledger)  # one round, drawn block by block of users
        total = np.zeros(view.output_dim(engine.d))
        for block in user_blocks(engine, view):
            total += local_gaussian(clip_rows(block, radius), 2.0 * radius, budget, rng,
                                    ledger=round_ledger, stage="noise").sum(axis=0)
        user_std = 2.0 * radius / math.sqrt(2.0 * rho)
        # The users' noise is isotropic in the rotated view, so each coordinate of the mean
        # (rotated back) carries user_std / sqrt(n): public radius, budget and n.
        return total / engine.n, {"user_noise_std": user_std,
                                  "noise_std": np.full(engine.d, user_std / math.sqrt(engine.n))}


class ShuffleIOME(_IOMEProtocol, ApproxDPProtocol):
    """IOME in the shuffle model (section 5.2, Theorem 5.6): three rounds, (epsilon, delta)-DP.

    Rounds 1 and 2 are the local protocol's range counts, each user's report eps0-LDP with eps0
    the largest value whose n shuffled reports are (eps_round, delta_round)-DP by
    amplification by shuffling (Feldman-McMillan-Talwar 2021; we use it in place of the
    GGKPV21 protocol of Lemma 5.5, which has no practical implementation). Round 3 is Lemma
    5.4: each user clips its shifted vector to C, applies a second public rotation, clips each
    coordinate to C' = C sqrt(2 ln(2 n d_pad / beta) / d_pad) (Lemma 3.7), and runs BBGN20's
    IKOS summation per coordinate at (eps', delta'), with d_pad-fold advanced composition giving
    the round's budget (``split_budget``). The threshold target leaves K = 4 sqrt(d/d_pad
    ln(2 n d_pad / beta)) / eps' rows above it: the summation's l2 noise in units of C / n.

    Parameters
    ----------
    rho : float, optional
        The budget, as in :class:`LocalIOME` (here converted to epsilon, see Privacy).
    centre_share : float, optional
        Round 1's fraction of the budget, in (0, 1) (default 1/4).
    centre_height : int, optional
        Levels of round 1's tree, from 1, with branching^height at most 2^20 (default 6).
    threshold_share, branching, threshold_height, norm_span, beta, min_quantile, centre_rule
        As in :class:`LocalIOME`.
    **common
        The parameters of :class:`MeanEstimator`.

    Raises
    ------
    InvalidParameterError
        As :class:`LocalIOME`.

    Privacy
    -------
    (epsilon, delta)-DP in the shuffle model (notion "shuffle-approx-DP"): ``epsilon`` (the
    ledger's unit) and ``delta`` split by the same shares as ``iome-local`` ("centre",
    "threshold", "noise"), composed by basic composition over the rounds. Rounds 1 and 2:
    eps0-LDP reports amplified by shuffling to the round's (epsilon, delta); round 3: IKOS
    summation per coordinate at (eps', delta'), d_pad-fold advanced composition. A ``rho``
    instead is converted to the (epsilon, delta) it implies at ``delta`` (default 1e-9).
    """

    method = "iome-shuffle"
    declared_diagnostics = {
        **COORDINATE_BUDGET,
        "coordinate_clip": Diagnostic(Kind.FLOAT, "The bound each rotated coordinate was "
                                      "clipped to (in the box-normalised space where "
                                      "``box_scale`` is given)."),
        "messages_per_user": Diagnostic(Kind.INT, "Messages each user sends."),
        **RELEASE_NOISE,
    }
    model = "shuffle"
    notion = "shuffle-approx-DP"
    shuffled = True

    default_centre_share = 0.25
    default_centre_height = 6

    def budget_plan(self, n: int, d: int) -> dict[str, float]:
        self._check_delta_shares(d)
        self._check_reports(n)
        self._check_centre_tree(d)
        # IKOS summation needs 4 users; asked here (public: n), before the centre and
        # threshold rounds read every row and were charged (a review).
        ikos_parts(n, 1.0)
        self._check_summation(n, d)
        return self._split(self.epsilon)

    def _check_summation(self, n: int, d: int) -> None:
        """Refuse, from the plan alone (public; before any charge), a round 3 whose
        per-coordinate epsilon is so small that its discrete Laplace noise does not fit IKOS's
        64-bit shares (``polya_noise_fits``): numpy refused the draw after rounds 1 and 2 were
        charged."""
        eps, _, k = self._coordinate_split(d)
        precision = _precision(n)
        if not polya_noise_fits(eps, precision):
            raise InvalidParameterError(
                f"{self.method}: the budget is too small: its noise round gives each of the "
                f"{k} rotated coordinate(s) epsilon={eps:.3g}, whose discrete Laplace noise "
                f"(scale {precision} / epsilon) exceeds 2^56 = {POLYA_SCALE_LIMIT:.3g}, beyond "
                f"what the 64-bit sums of the shuffled summation carry reliably; give a larger "
                f"budget")

    def _check_delta_shares(self, d: int) -> None:
        """Refuse, before rounds 1 and 2 are charged, a delta whose smallest share (a round's,
        or round 3's per coordinate) is below ``SMALLEST_STEP_DELTA``: the rounds' splits
        (``split_budget``) refuse it only when they run, after the charges before them."""
        k = next_power_of_two(d)
        fractions = self._split(1.0)
        smallest = min(fractions["centre"], fractions["threshold"],
                       fractions["noise"] / (2.0 * k) if k > 1 else fractions["noise"])
        rounds = self._split(self.delta)
        shares = (rounds["centre"], rounds["threshold"],
                  rounds["noise"] / (2.0 * k) if k > 1 else rounds["noise"])
        if min(shares) < SMALLEST_STEP_DELTA:
            raise InvalidParameterError(
                f"delta={self.delta:.3g} is too small for {self.method} in floating point: "
                f"its smallest share ({smallest:.3g} of it: a round's, or round 3's per "
                f"coordinate over {k}) falls below {SMALLEST_STEP_DELTA:.3g}; use delta >= "
                f"{SMALLEST_STEP_DELTA / smallest:.3g}")

    def _stage_budget(self, stage: str, n: int) -> RoundBudget:
        # The round's central (epsilon, delta); each report is drawn at the local eps0 that n
        # shuffled reports amplify to it (``local_epsilon_for_shuffle``).
        return RoundBudget(self._split(self.epsilon)[stage], "epsilon",
                           delta=self._split(self.delta)[stage], shuffled_among=n)

    def _coordinate_budget(self, engine: Engine) -> tuple[float, float, int]:
        return self._coordinate_split(engine.d)

    def _coordinate_split(self, d: int) -> tuple[float, float, int]:
        """Round 3's (eps', delta') per rotated coordinate and their number k = d_pad."""
        k = next_power_of_two(d)
        eps, delta = split_budget(self._split(self.epsilon)["noise"],
                                  self._split(self.delta)["noise"], k)
        return eps, delta, k

    def _coordinate_clip(self, engine: Engine, k: int) -> float:
        return math.sqrt(2.0 * math.log(2.0 * engine.n * k / self.beta) / k)

    def _clipped_rows(self, engine: Engine) -> float:
        eps, _, k = self._coordinate_budget(engine)
        return 4.0 * math.sqrt(engine.d / k * math.log(2.0 * engine.n * k / self.beta)) / eps

    def _noisy_mean(self, engine: Engine, view: View, radius: float, rng: np.random.Generator,
                    ledger: PrivacyLedger) -> tuple[np.ndarray, dict[str, Any]]:
        eps, delta, k = self._coordinate_budget(engine)
        # One round (each user's k coordinates, composed at the round's delta: (eps, delta)
        # each), drawn in chunks of coordinates and blocks of users; charged once.
        budget = RoundBudget(self._split(self.epsilon)["noise"], "epsilon", reports=k,
                             delta=self._split(self.delta)["noise"])
        round_ledger = RoundLedger(ledger)
        second = RandomRotation.draw(k, rng)  # public coins
        bound = radius * self._coordinate_clip(engine, k)
        precision = _precision(engine.n)
        # Within statistical distance T of an eps-DP sum is (eps, (1 + e^eps) T)-DP (an
        # adversarial review: T = delta made each coordinate (eps, 2.05 delta)-DP here).
        parts = ikos_parts(engine.n, ikos_sigma(eps, delta))
        chunk = max(1, _SHARES_AT_ONCE // (engine.n * parts))
        # Chunks of coordinates a group: each user's values for a group are computed once.
        group = chunk * max(1, _VALUES_AT_ONCE // (engine.n * chunk))
        sums = np.empty(k)
        for first in range(0, k, group):
            columns = slice(first, min(first + group, k))
            # Each user: clip to C, rotate again, clip coordinates to C', map to [0, 1]
            # (deterministic: the same values whichever coordinates a block keeps).
            units = [(np.clip(second.apply(clip_rows(block, radius))[:, columns], -bound,
                              bound) + bound) / (2.0 * bound)
                     for block in user_blocks(engine, view)]
            for start in range(columns.start, columns.stop, chunk):
                coords = slice(start, min(start + chunk, columns.stop))
                kept = slice(coords.start - first, coords.stop - first)
                shares = [summation_randomiser(unit[:, kept], precision, budget, engine.n,
                                               parts, rng, ledger=round_ledger, stage="noise")
                          for unit in units]
                # One shuffler per coordinate: its row holds every share of every user.
                batch = np.concatenate(shares).transpose(1, 0, 2).reshape(
                    coords.stop - start, -1)
                sums[coords] = summation_analyser(shuffle(batch, rng), precision)
        mean = second.invert(2.0 * bound * sums / engine.n - bound)
        # Each rotated coordinate's sum carries discrete Laplace noise, a = e^(-e / precision)
        # (e the drawn epsilon, ``_polya_draw``), variance 2a / (1 - a)^2 in grid units, and
        # the users' randomised rounding, at most n / 4 of them: their bound, so the stated
        # noise is at most this; both rotations back keep it per coordinate. Public: the
        # radius, n, the budget.
        a = math.exp(-min(budget.report_epsilon, DRAWN_EPSILON_CAP) / precision)
        sum_std = (math.sqrt(2.0 * a / (1.0 - a) ** 2 + engine.n / 4.0) / precision
                   if a < 1.0 else math.inf)
        noise_std = np.full(engine.d, 2.0 * bound * sum_std / engine.n)
        return mean, {"coordinate_clip": bound, "coordinate_epsilon": eps,
                      "coordinate_delta": delta, "messages_per_user": k * parts + 2,
                      "noise_std": noise_std}
