"""Gaboardi-Rogers-Sheffet (AISTATS 2019) locally private 1-D Gaussian means, KnownVar and
UnkVar, applied coordinate-wise with advanced composition: the baselines of IOME section 6.2.

Users are split into disjoint groups by public coins; each user answers one query per
coordinate, so its guarantee is the d-fold composition of one (eps0, delta0)-LDP answer.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.stats import norm

from ..accounting import PrivacyLedger
from ..diagnostics import Diagnostic, Kind
from ..engines import Engine
from ..errors import InvalidParameterError
from ..mechanisms.gaussian import gaussian_noise_std
from ..transforms import IDENTITY
from ..validation import check_fraction, check_positive
from .base import COORDINATE_BUDGET, RELEASE_NOISE, ApproxDPProtocol, user_blocks
from .composition import split_budget
from .randomisers import (
    RoundBudget,
    flip_probability,
    local_gaussian,
    randomised_response,
    reports_carry_signal,
    response_bias,
    unary_encoding,
)
from .rounds import RoundLedger

# The most bins KnownVar's unary encoding may have per coordinate: each user of its first
# group sends a randomised bit per bin (2^16: a box 32,768 sigmas wide, IOME's R = 20 sqrt(d)
# at sigma = 1 needs 1,281 at d = 1024).
MAX_BINS = 1 << 16


def _group_rows(engine: Engine, members: np.ndarray):
    """The rows of the users in ``members`` (a boolean mask over users), block by block."""
    start = 0
    for block in user_blocks(engine, IDENTITY):
        mask = members[start:start + block.shape[0]]
        start += block.shape[0]
        if mask.any():
            yield block[mask]


def _groups(n: int, sizes: list[int], rng: np.random.Generator) -> list[np.ndarray]:
    """Disjoint user groups of the given sizes by a public random assignment (the rows' order
    could depend on the data); what is left over forms a last group."""
    order = rng.permutation(n)
    masks, start = [], 0
    for size in [*sizes, n - sum(sizes)]:
        mask = np.zeros(n, dtype=bool)
        mask[order[start:start + size]] = True
        masks.append(mask)
        start += size
    return masks


class _GRS(ApproxDPProtocol):
    model = "local"
    notion = "local-approx-DP"
    declared_diagnostics = {**COORDINATE_BUDGET, **RELEASE_NOISE}
    # The fraction of a coordinate's eps0 its randomised response draws at: KnownVar's unary
    # encoding flips each bit at eps0 / 2, UnkVar's search answers at eps0.
    response_share: float

    def budget_plan(self, n: int, d: int) -> dict[str, float]:
        # The per-coordinate split, computed here to refuse what it cannot split (a delta so
        # small its shares underflow, an epsilon whose responses would carry nothing) before
        # anything is charged or read.
        self._check_reports(d)
        return {"coordinates": self.epsilon}

    def _check_reports(self, d: int) -> None:
        """Refuse, from the plan alone (public; before any charge), a budget whose randomised
        responses would carry nothing: each coordinate's eps0 so small (below about 2e-15)
        that the response flips with probability exactly 1/2 (``reports_carry_signal``), which
        its analyser cannot debias (epsilon = 1e-100 divided by zero after the charge)."""
        eps0, _ = self._per_coordinate(d)
        if not reports_carry_signal(eps0 * self.response_share):
            raise InvalidParameterError(
                f"{self.method}: the budget is too small: epsilon={self.epsilon:.3g} split over "
                f"{d} coordinate(s) gives each epsilon={eps0:.3g}, at which randomised response "
                f"flips with probability 1/2 in floating point, so the reports would carry "
                f"nothing; give a larger budget")

    def _per_coordinate(self, d: int) -> tuple[float, float]:
        return split_budget(self.epsilon, self.delta, d)

    def _round(self, d: int) -> RoundBudget:
        """Each user's one round: d answers, (eps0, delta0) each by ``split_budget``."""
        return RoundBudget(self.epsilon, "epsilon", reports=d, delta=self.delta)

    def _box(self, engine: Engine) -> tuple[np.ndarray, np.ndarray]:
        return (engine.lo + engine.hi) / 2.0, (engine.hi - engine.lo) / 2.0

    def _gaussian_stage(self, engine: Engine, members: np.ndarray, centre: np.ndarray,
                        half: np.ndarray, rng: np.random.Generator, budget: RoundBudget,
                        ledger: RoundLedger) -> tuple[np.ndarray, np.ndarray]:
        """KnownVar's last stage: each member clamps every coordinate to [centre - half,
        centre + half] and adds Gaussian noise for sensitivity 2 half_j, (eps0, delta0)-DP per
        coordinate (calibrated exactly through zCDP: rho0 = the largest rho that is
        (eps0, delta0)-DP, which is tighter than GRS's 8 D^2 ln(2/delta)/eps^2); the analyser
        averages. Returns the average and its noise's standard deviation per coordinate (the
        release warnings read it: a sigma far above the rows' spread released a column in
        (0, 1) at 0 in a third of the runs, silently; a trial)."""
        total = np.zeros(engine.d)
        for rows in _group_rows(engine, members):
            clamped = np.clip(rows, centre - half, centre + half)
            # Coordinate j has sensitivity 2 half_j: scale to a common sensitivity 1 and back.
            noisy = local_gaussian(clamped / (2.0 * half), 1.0, budget, rng, ledger=ledger,
                                   stage="coordinates")
            total += (noisy * 2.0 * half).sum(0)
        count = max(int(members.sum()), 1)  # the group's size: public (a public split)
        return total / count, 2.0 * half * gaussian_noise_std(1.0, budget.report_rho) / math.sqrt(
            count)


class GRSKnownVar(_GRS):
    """GRS KnownVar (Algorithm 1) per coordinate: data N(mu_j, sigma^2), sigma known.

    Round 1 (group 1): bins of width sigma centred at mid_j + i sigma, ``|i| <= ceil(R_j / sigma)``
    (R_j the box half-width); each member unary-encodes its bin (``unary_encoding``, eps0-LDP);
    the analyser takes the bin with the largest debiased count. Round 2 (the rest): clamp to
    that bin's centre +- D, D = 2 sigma + sigma sqrt(2 ln(8 n / beta)), local Gaussian noise.

    Group 1's size is GRS's 800 ((e^(eps0/2)+1)/(e^(eps0/2)-1))^2 ln(8 L / beta), capped at
    ``first_group_share`` of n (our rule: at IOME's settings the theoretical size exceeds n,
    and the paper does not say what IOME used).

    Parameters
    ----------
    rho : float, optional
        The budget; ``epsilon``, ``delta``, ``bounds``, ``random_state`` and ``engine`` are
        those of :class:`MeanEstimator` (``secure_noise=True`` is refused: no secure mode).
    sigma : float, default 1.0
        The known standard deviation (positive).
    beta : float, default 0.05
        The failure probability of the clamping width, in (0, 1).
    first_group_share : float, default 0.5
        The largest fraction of the users in group 1, in (0, 1).
    **common
        The parameters of :class:`MeanEstimator`.

    Raises
    ------
    InvalidParameterError
        A non-positive ``sigma``, ``beta`` or ``first_group_share`` outside (0, 1),
        ``secure_noise=True``, or a common parameter :class:`MeanEstimator` refuses.

    Privacy
    -------
    (epsilon, delta)-DP per user in the local model (notion "local-approx-DP"): one stage,
    "coordinates", all of ``epsilon`` (the ledger's unit); each coordinate gets (eps0, delta0)
    from ``split_budget`` (advanced composition over d). Each user answers one round: group 1
    a unary encoding (eps0-LDP), the rest the local Gaussian on its clamped value. A ``rho``
    instead is converted to the (epsilon, delta) it implies at ``delta`` (default 1e-9).
    """

    method = "grs-knownvar"
    one_scale = ("sigma", "iome-local or iome-shuffle")
    response_share = 0.5
    declared_diagnostics = {
        "first_group": Diagnostic(Kind.INT, "Users in the coarse-centre group (public)."),
        "coarse_centre": Diagnostic(Kind.VECTOR, "The private coarse centre (data units)."),
    }

    def __init__(self, rho: float | None = None, *, sigma: float = 1.0, beta: float = 0.05,
                 first_group_share: float = 0.5, **common: Any) -> None:
        super().__init__(rho, **common)
        self.sigma = check_positive(sigma, "sigma")
        self.beta = check_fraction(beta, "beta")
        self.first_group_share = check_fraction(first_group_share, "first_group_share")

    def release(self, engine: Engine, budget: dict[str, float], ledger: PrivacyLedger,
                rng: np.random.Generator) -> tuple[np.ndarray, dict[str, Any]]:
        # Every user answers one round (the groups are disjoint), d coordinates composed: its
        # randomiser charges that cost, once for all groups (``RoundLedger``).
        coordinates, per_user = RoundLedger(ledger), self._round(engine.d)
        eps0, delta0 = self._per_coordinate(engine.d)
        mid, half = self._box(engine)
        widest = float(np.max(half)) / self.sigma
        if not widest <= MAX_BINS // 2:
            # Every user of group 1 sends a bit per bin (public: the box and sigma).
            raise InvalidParameterError(
                f"{self.method}: the box reaches {widest:.3g} sigmas from its centre: its unary "
                f"encoding would need {2 * widest + 1:.3g} bins per coordinate (at most "
                f"{MAX_BINS:,}); give a tighter box or a larger sigma")
        reach = np.ceil(half / self.sigma).astype(np.int64)
        bins = int(2 * reach.max() + 1)
        # (e^x + 1) / (e^x - 1) = 1 / tanh(x / 2), x = eps0 / 2: no cancellation at tiny eps0
        # (epsilon = 1e-100 divided by zero) and no overflow at huge ones (e^x past x = 709); a
        # group size, so no privacy question. tanh underflows to 0 only for eps0 < 1e-307.
        slope = math.tanh(eps0 / 4)
        odds = 1.0 / slope if slope > 0.0 else math.inf
        wanted = 800.0 * odds**2 * math.log(8.0 * bins / self.beta)
        first = int(min(wanted, self.first_group_share * engine.n))
        group1, group2 = _groups(engine.n, [first], rng)
        counts = np.zeros((engine.d, bins))
        for rows in _group_rows(engine, group1):
            index = np.clip(np.rint((rows - mid) / self.sigma), -reach, reach).astype(np.int64)
            index += reach.max()
            # Coordinates a block, at most 2^22 bits (and their uniforms) at a time.
            width = max(1, (1 << 22) // (rows.shape[0] * bins))
            for start in range(0, engine.d, width):
                cols = slice(start, start + width)
                counts[cols] += unary_encoding(index[:, cols], bins, per_user, rng,
                                               ledger=coordinates,
                                               stage="coordinates").sum(axis=1)
        # Debiased with the probabilities the draw realises (``flip_probability``), whose bias
        # 1 - 2 flip is exact (``response_bias``; positive: ``budget_plan`` checked it).
        flip = flip_probability(eps0 / 2)
        debiased = (counts - first * flip) / response_bias(eps0 / 2)
        # Bins beyond a coordinate's own reach are outside its box: never chosen.
        offsets = np.arange(bins) - reach.max()
        debiased[np.abs(offsets)[None, :] > reach[:, None]] = -np.inf
        centre = mid + offsets[np.argmax(debiased, axis=1)] * self.sigma
        width = self.sigma * (2.0 + math.sqrt(2.0 * math.log(8.0 * engine.n / self.beta)))
        mean, noise_std = self._gaussian_stage(engine, group2, centre,
                                               np.full(engine.d, width), rng, per_user,
                                               coordinates)
        return mean, {"coordinate_epsilon": eps0, "coordinate_delta": delta0,
                      "first_group": first, "coarse_centre": centre, "noise_std": noise_std}


class GRSUnkVar(_GRS):
    """GRS UnkVar (Algorithm 3) per coordinate: sigma in [sigma_min, sigma_max] unknown.

    Binary searches (BinQuant, Algorithm 2) with a fresh group per step, each member answering
    1[x_j < threshold] by randomised response (eps0) for every coordinate still searching: the
    median on [mid - R, mid + R] (T_mu = ceil(log2(8 R / sigma_min)) steps, lambda = 0.098),
    then the Phi(1) = 0.8413 quantile on [mid - R, mid + R + sigma_max] (T_sigma =
    ceil(log2((8 R + 4 sigma_max) / sigma_min)) steps, lambda = 0.052); the server debiases
    each answer (the third-party code forgets to). sigma_hat = max(t_sigma - t_mu, sigma_min);
    then KnownVar's last stage centred at t_mu with D = sigma_hat (2 + sqrt(2 ln(8 n / beta))).
    The searches share ``search_share`` of the users equally (our rule, as for KnownVar); the
    rest answer the last stage. ``sigma_max`` defaults to the largest box half-width / sqrt(d)
    (IOME: sigma_max = R / sqrt(d)).

    Parameters
    ----------
    rho : float, optional
        The budget; ``epsilon``, ``delta``, ``bounds``, ``random_state`` and ``engine`` are
        those of :class:`MeanEstimator` (``secure_noise=True`` is refused: no secure mode).
    sigma_min : float, default 0.1
        The public lower bound on sigma (positive).
    sigma_max : float, optional
        The public upper bound on sigma (positive; default above).
    beta : float, default 0.05
        The failure probability of the clamping width, in (0, 1).
    search_share : float, default 0.5
        The fraction of the users the binary searches share, in (0, 1).
    **common
        The parameters of :class:`MeanEstimator`.

    Raises
    ------
    InvalidParameterError
        A non-positive ``sigma_min`` or ``sigma_max``, ``beta`` or ``search_share`` outside
        (0, 1), ``secure_noise=True``, or a common parameter :class:`MeanEstimator` refuses.

    Privacy
    -------
    (epsilon, delta)-DP per user in the local model (notion "local-approx-DP"): one stage,
    "coordinates", all of ``epsilon`` (the ledger's unit); each coordinate gets (eps0, delta0)
    from ``split_budget`` (advanced composition over d). Each user answers one round: a search
    step by randomised response (eps0), or the last stage's local Gaussian. A ``rho`` instead
    is converted to the (epsilon, delta) it implies at ``delta`` (default 1e-9).
    """

    method = "grs-unkvar"
    one_scale = ("sigma_min and sigma_max", "iome-local or iome-shuffle")
    response_share = 1.0
    declared_diagnostics = {
        "search_group": Diagnostic(Kind.INT, "Users in each binary-search step's group "
                                   "(public)."),
        "median": Diagnostic(Kind.VECTOR, "The private medians (data units)."),
        "sigma": Diagnostic(Kind.VECTOR, "The private standard deviations (data units)."),
    }

    def __init__(self, rho: float | None = None, *, sigma_min: float = 0.1,
                 sigma_max: float | None = None, beta: float = 0.05, search_share: float = 0.5,
                 **common: Any) -> None:
        super().__init__(rho, **common)
        self.sigma_min = check_positive(sigma_min, "sigma_min")
        self.sigma_max = None if sigma_max is None else check_positive(sigma_max, "sigma_max")
        self.beta = check_fraction(beta, "beta")
        self.search_share = check_fraction(search_share, "search_share")

    def _search(self, engine: Engine, groups: list[np.ndarray], low: np.ndarray,
                high: np.ndarray, q: float, gap: float, eps0: float,
                rng: np.random.Generator, budget: RoundBudget, ledger: RoundLedger
                ) -> np.ndarray:
        """BinQuant for every coordinate at once, one group per step."""
        low, high = low.copy(), high.copy()
        active = np.ones(engine.d, dtype=bool)
        found = (low + high) / 2.0
        # The draw's exact bias (positive: ``budget_plan`` checked it); see ``release``.
        flip, unbias = flip_probability(eps0), 1.0 / response_bias(eps0)
        for members in groups:
            threshold = (low + high) / 2.0
            ones, users = np.zeros(engine.d), 0
            for rows in _group_rows(engine, members):
                ones += randomised_response(rows < threshold, budget, rng, ledger=ledger,
                                            stage="coordinates").sum(axis=0)
                users += rows.shape[0]
            estimate = (ones / max(users, 1) - flip) * unbias
            above, below = estimate > q + gap / 2, estimate < q - gap / 2
            found = np.where(active, threshold, found)
            high = np.where(active & above, threshold, high)
            low = np.where(active & below, threshold, low)
            active &= above | below
        return np.where(active, (low + high) / 2.0, found)

    def release(self, engine: Engine, budget: dict[str, float], ledger: PrivacyLedger,
                rng: np.random.Generator) -> tuple[np.ndarray, dict[str, Any]]:
        # Every user answers one round (a search step or the last stage), d coordinates
        # composed: its randomiser charges that cost, once for all groups (``RoundLedger``).
        coordinates, per_user = RoundLedger(ledger), self._round(engine.d)
        eps0, delta0 = self._per_coordinate(engine.d)
        mid, half = self._box(engine)
        radius = float(half.max())
        sigma_max = self.sigma_max or radius / math.sqrt(engine.d)
        steps_mu = math.ceil(math.log2(8.0 * radius / self.sigma_min))
        steps_sigma = math.ceil(math.log2((8.0 * radius + 4.0 * sigma_max) / self.sigma_min))
        each = int(self.search_share * engine.n) // (steps_mu + steps_sigma)
        groups = _groups(engine.n, [each] * (steps_mu + steps_sigma), rng)
        t_mu = self._search(engine, groups[:steps_mu], mid - half, mid + half, 0.5, 0.098,
                            eps0, rng, per_user, coordinates)
        t_sigma = self._search(engine, groups[steps_mu:-1], mid - half, mid + half + sigma_max,
                               float(norm.cdf(1.0)), 0.052, eps0, rng, per_user, coordinates)
        sigma_hat = np.maximum(t_sigma - t_mu, self.sigma_min)
        width = sigma_hat * (2.0 + math.sqrt(2.0 * math.log(8.0 * engine.n / self.beta)))
        mean, noise_std = self._gaussian_stage(engine, groups[-1], t_mu, width, rng, per_user,
                                               coordinates)
        return mean, {"coordinate_epsilon": eps0, "coordinate_delta": delta0,
                      "search_group": each, "median": t_mu, "sigma": sigma_hat,
                      "noise_std": noise_std}
