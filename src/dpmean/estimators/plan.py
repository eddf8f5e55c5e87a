"""PLAN, Private Limit Adapted Noise (Aumuller, Lebeda, Nelson, Pagh): variance-aware clipped
mean for l2, l1 and lp error (Algorithm 1, sec. 7.1), and its no-scaling variant (sec. 6)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..accounting import PrivacyLedger
from ..diagnostics import Diagnostic, Kind
from ..engines import Engine
from ..errors import InvalidParameterError
from ..events import Event, exponential_event, gaussian_event
from ..mechanisms import log_domain_quantile, rank_error_bound
from ..mechanisms.column_quantiles import check_quantile_method, column_quantiles
from ..mechanisms.exponential import log_bucket_count
from ..transforms import IDENTITY, RandomRotation, View
from ..validation import (
    check_count,
    check_flag,
    check_fraction,
    check_number,
    check_positive,
    check_steps,
)
from .base import MeanEstimator
from .clipped import (
    INTERVAL_SHARE,
    PROFILE_DIAGNOSTICS,
    escape_beta,
    noisy_clipped_mean,
    planned_clipped_sums,
    planned_interval_stages,
    private_centre,
    private_radius,
    with_interval_stages,
)
from .iome import (
    THRESHOLD_SHARES,
    _Geometry,
    centre_stages,
    plans_a_centre,
    public_centre,
    rotated_centre,
)
from .variance import (
    bernoulli_floor,
    bernoulli_std,
    known_std,
    pair_median_resolves,
    pair_quantile_resolves,
    pair_std,
    pooled_noisy_mean,
    quantile_width,
)

CENTRES = ("auto", "rotated", "median", "mean")
CENTRE_STAGES = ("centre domain", "centre")
VARIANCE_STAGES = ("variance spread", "variance")


# How far below the top of a variance search its log domain reaches (nats): variances down to
# e^-46 = 1e-20 of the box's (or the private spread's) are told apart.
LOG_RANGE = 46.0
# The quantile of the pair values the variance search targets where the budget places it
# (``variance_level="auto"``): see PrivateLimitAdaptedNoise.variance_quantile.
UPPER_VARIANCE_LEVEL = 0.75
# The share of the variance budget spent on the private spread that tops every variance search.
SPREAD_SHARE = 1.0 / 16.0
VARIANCES = ("auto", "gaussian", "generic", "binary")


class _PlanBase(MeanEstimator):
    """What PLAN and PLAN without scaling share: centre, scale, private clipping threshold on
    the scaled norms, Gaussian noise for sensitivity 2C/n, scale back.

    Budget (rho-zCDP): ``interval_share * rho`` (default ``clipped.INTERVAL_SHARE``, 1 %, with
    either threshold) first for the confidence interval's stages (a clip profile and a clip
    residual; ours, not the paper's), and the split below applies to the rest.
    ``preprocess_share * rho`` for the
    centre (and, in ``plan``, the variances); of the rest, ``threshold_share`` for the clipping
    threshold and the remainder for the noise. The paper's split (sec. 7.2.1) is 1/4, then 1/4
    of the remaining 3/4.

    Centre (``centre``): ``"median"``: coordinate-wise private medians on [lo_j, hi_j], rho/d
    each (the exponential mechanism, or PrivQuant with ``steps`` halvings); ``"mean"``: the
    Gaussian mechanism on the plain mean (sensitivity ||hi - lo|| / n), the choice for binary
    data, where medians are 0 or 1; ``"auto"``: ``"mean"`` for scipy.sparse input (that is the
    basket format; the choice depends on the input's type, never on its values), else
    ``"median"``.

    Threshold: the private (1 - k/n)-quantile of the scaled, shifted row norms, k = sqrt(n) +
    the quantile mechanism's rank error at failure probability b = min(``beta``, 1e-3) (PLAN
    Algorithm 1, line 3, with b for beta: a threshold above every norm is a catastrophe, not a
    mild rank error; ``clip_count``): ``quantile="exponential"`` (default) uses ln(n / b) /
    sqrt(2 rho_threshold), the rank error of an eps-DP exponential mechanism (eps =
    sqrt(8 rho)) whose target gap is no narrower than 1/n of its universe; ``"binary-search"``
    uses Theorem 3.3 of IOME for ``steps`` halvings. When k >= n (a public check) the zero vector
    is released with an InsufficientDataWarning.

    """

    declared_diagnostics = {
        "threshold": Diagnostic(Kind.FLOAT, "The private clipping radius (view units)."),
        "target_quantile": Diagnostic(Kind.FLOAT, "The quantile of the view norms the radius "
                                      "aimed at (public)."),
        "norm_bound": Diagnostic(Kind.FLOAT, "The top of the radius search: the largest view "
                                 "norm a clamped row can have."),
        "noise_std": Diagnostic(Kind.VECTOR, "The Gaussian noise's standard deviation per "
                                "coordinate in the view the rows were clipped in (divide by "
                                "``scale`` for the data's units)."),
        "centre": Diagnostic(Kind.VECTOR, "The private centre (data units)."),
        "view_norm_bound": Diagnostic(Kind.FLOAT, "A bound on every row's norm in the view."),
        "threshold_search": Diagnostic(Kind.TEXT, "How the radius was found: "
                                       "\"binary-search\" or \"exponential\"."),
        "threshold_steps": Diagnostic(Kind.INT, "Noisy counts of a binary radius search."),
        "threshold_right": Diagnostic(Kind.FLOAT, "The top of a binary radius search's last "
                                      "interval (view units)."),
        "threshold_rho": Diagnostic(Kind.FLOAT, "The rho the radius search spent."),
        **PROFILE_DIAGNOSTICS,
    }
    supports_sparse = True
    supports_secure_noise = True

    def __init__(
        self, rho: float | None = None, *, preprocess_share: float = 0.25,
        threshold_share: float | str = "auto", centre: str = "auto",
        quantile: str = "exponential",
        steps: int = 20, beta: float = 0.1, log_range: float | None = LOG_RANGE,
        interval_share: float | None = None, count_share: float | None = None, **common: Any,
    ) -> None:
        super().__init__(rho, **common)
        self.count_share = count_share
        if count_share is not None:
            warnings.warn("count_share= is deprecated: use interval_share= (the clipped count "
                          "is now a clip profile)", DeprecationWarning, stacklevel=2)
            if interval_share is None:
                interval_share = count_share
        self.interval_share = None if interval_share is None else check_fraction(
            interval_share, "interval_share", low_open=False)
        self.log_range = None if log_range is None else check_positive(log_range, "log_range")
        self.preprocess_share = check_fraction(preprocess_share, "preprocess_share")
        self.threshold_share = (threshold_share if threshold_share == "auto" else
                                check_fraction(threshold_share, "threshold_share"))
        if centre not in CENTRES:
            raise InvalidParameterError(f"centre must be one of {', '.join(CENTRES)}, got "
                                        f"{centre!r}")
        self.centre = centre
        self.quantile = check_quantile_method(quantile)
        self.steps = check_steps(steps, "steps")
        self.beta = check_fraction(beta, "beta")

    def floating_point_stages(self, n: int, d: int, sparse: bool = False) -> str | None:
        # The stages the plan runs as exponential mechanisms: the default dense centre is
        # IOME's Gaussian counts (exact), and PLAN's spread stays one with binary search;
        # none of the variances' where the budget cannot resolve them (a review).
        plan = self.budget_plan(n, d)
        stages = [stage for stage in self.exponential_stages(d, sparse) if stage in plan]
        if not stages:
            return None
        named = ", ".join(f'"{stage}"' for stage in stages)
        searched = [stage for stage in stages if stage in ("threshold", "centre", "variance")]
        hint = (f"; quantile='binary-search' searches {', '.join(searched)} by Gaussian counts"
                if self.quantile == "exponential" and searched else "")
        return f"PLAN's exponential-mechanism stages ({named}{hint})"

    def preprocess_stages(self, rho_pre: float, n: int, d: int) -> dict[str, float]:
        """How the preprocessing budget splits into stages."""
        return self.centre_budget(rho_pre, n, d)

    def centre_budget(self, rho: float, n: int, d: int) -> dict[str, float]:
        """The centre's stages: "centre", and "centre domain" when the rotated centre narrows
        its median domains first (public: n, d, the box, rho)."""
        if self.centre not in ("auto", "rotated"):
            return {"centre": rho}
        return centre_stages(_Geometry(None, *self.unit_box(n, d)), n, rho, self.beta, self.steps,
                             always_narrow=True)

    def budget_plan(self, n: int, d: int) -> dict[str, float]:
        def stages(rho: float) -> dict[str, float]:
            pre = self.preprocess_stages(rho * self.preprocess_share, n, d)
            # Without a centre (IOME's medians could not halve twice: ``centre_stages``), its
            # share of the preprocessing goes to the threshold and the noise.
            rest = (rho * (1.0 - self.preprocess_share) if plans_a_centre(pre)
                    else rho - sum(pre.values()))
            share = self.threshold_fraction(n, rest)
            return {**pre, "threshold": rest * share, "noise": rest * (1.0 - share)}

        return with_interval_stages(self.rho, self.profile_share(), stages)

    def profile_share(self) -> float:
        """The share of rho the interval's stages ("clip profile", "clip residual") take
        first: ``interval_share`` as given, by default ``clipped.INTERVAL_SHARE``. The
        exponential-mechanism threshold's rank error has no data-independent bound, and the
        binary search's bound is loose: the 90% interval at n = 2000, d = 8, rho = 1 went from
        218 (exponential) and 271 (binary search) to 60 and 61 times the RMSE with the profile
        and the clip residual (the binary search's default was 0 before 2026-11-26). Public."""
        return INTERVAL_SHARE if self.interval_share is None else self.interval_share

    def threshold_fraction(self, n: int, rho_rest: float) -> float:
        """The threshold's share of the budget ``rho_rest`` left after preprocessing.

        ``threshold_share="auto"`` (default): the smallest of ``THRESHOLD_SHARES`` whose clip
        count (sqrt(n) plus the rank error at ``beta``) is at most 3 sqrt(n), so that at most
        about three times the paper's sqrt(n) rows are clipped, and whose target rank clears
        the rank error over its buckets (``clears_buckets``) if one does; else 1/4 (the
        paper's). The rest goes to the noise, which every coordinate carries. Public: n and
        the budget.
        """
        if self.threshold_share != "auto":
            return float(self.threshold_share)
        # Sized by the typical rank error (at beta), not the escape margin's: the margin's
        # extra ln(beta / 1e-3) / sqrt(2 rho_t) rows would push the share up a notch at small
        # budgets (1/10 -> 1/4 at Gaussian A, rho = 1/16), taking 17% of the noise's budget to
        # clip fewer rows that, on concentrated norms, hardly bias the mean.
        meets = [share for share in THRESHOLD_SHARES
                 if self.clip_count(n, share * rho_rest, self.beta) <= 3.0 * np.sqrt(n)]
        # Of those, the smallest whose target rank clears the rank error over the log
        # buckets (``clears_buckets``): below it the draw may fall anywhere below the rows.
        for share in meets:
            if self.clears_buckets(n, share * rho_rest):
                return share
        return meets[0] if meets else THRESHOLD_SHARES[-1]

    def clip_count(self, n: int, rho_threshold: float, failure: float | None = None,
                   outputs: int | None = None) -> float:
        """k: how many rows the threshold aims to clip (public: n, the budget, beta).

        sqrt(n) plus the threshold's rank error at failure probability ``failure``, by default
        ``escape_beta(beta)``, the exponential mechanism's over ``outputs`` choices (default
        n, Smith's gaps; ``minimum_rows`` counts its buckets):
        the margin below n is what keeps the threshold from landing above every norm, where
        the noise then scales with the box. With the exponential mechanism at beta = 0.1 that
        happened once in 50 releases of PLAN-noscale (PLAN Appendix E A', d = 1024, rho = 1/2:
        threshold 1,068 against norms near 32, error 24 times the usual); the smaller failure
        probability adds ln(beta / 1e-3) / sqrt(2 rho_threshold) rows to k."""
        return float(np.sqrt(n) + self.rank_error(n, rho_threshold, failure, outputs))

    def rank_error(self, n: int, rho_threshold: float, failure: float | None = None,
                   outputs: int | None = None) -> float:
        """The threshold's rank error at failure probability ``failure`` (by default
        ``escape_beta(beta)``): the exponential mechanism's over ``outputs`` choices (default
        n), or the binary search's. Public: n, the budget, beta."""
        beta = escape_beta(self.beta) if failure is None else failure
        if self.quantile == "exponential":
            return float(np.log((n if outputs is None else outputs) / beta)
                         / np.sqrt(2.0 * rho_threshold))
        return float(rank_error_bound(self.steps, rho_threshold, beta))

    def minimum_rows(
        self, n: int, lo: np.ndarray, hi: np.ndarray, budget: dict[str, float]
    ) -> float:
        """More rows than the threshold aims to clip, its rank error bounded over the
        mechanism's outputs: the log-domain quantile chooses among ``log_bucket_count``
        buckets (47,104 at the default ``log_range``), not the n gaps ``clip_count`` counts,
        and where the bound over those reaches n the draw falls anywhere below the rows.
        A user trial: 30 Likert answers, d = 10, mostly 5, in [1, 5] at rho = 2, PLAN's
        threshold came out at 1e-6 to 1e-18 (its error 11.7 against the Gaussian mechanism's
        0.58), and auto, unable to place its choice there, ran it. Public: n, the budget.
        (At least n outputs are counted: the bound over n is what the target aims by.)

        Not the stricter ``clears_buckets``: refusing where the target rank is within that
        bound (a 40-row table at rho = 1 collapsed in 3 of 40 releases) sent ``auto`` to the
        Gaussian mechanism in loose boxes at n = 90-124, d >= 10, rho = 0.1, where PLAN's
        collapses release its centre, harmless there (N(1, 1) in +-10^4: 1.25 -> 4,730; a
        review); the share is chosen to clear it instead (``threshold_fraction``), and where
        none can the threshold cuts fewer buckets (``threshold_buckets``). This minimum still
        counts the default buckets (conservative: where K would place the threshold, PLAN
        still falls back)."""
        return self.clip_count(n, budget["threshold"], outputs=self.threshold_outputs(n)) + 1.0

    def threshold_outputs(self, n: int) -> int:
        """How many outputs the threshold's mechanism chooses among: the log domain's
        ``log_bucket_count`` buckets (at least n), or n (Smith's gaps, the linear domain).
        Public: n, ``log_range``."""
        return n if self.log_range is None else max(n, log_bucket_count(self.log_range))

    def clears_buckets(self, n: int, rho_threshold: float) -> bool:
        """Whether the threshold's target rank n - k clears its rank error at beta over the
        log buckets: every empty bucket below the rows has the target rank's utility, so
        below that the draw may fall anywhere below them (a 40-row clinical table at rho = 1
        released PLAN's centre, once the box's middle, in 3 of 40: a user trial). At beta,
        not at the escape margin's smaller failure probability: the bound counts the rows'
        own buckets at utility 0 alone (their mass is hundreds of times that where the rows
        spread over a nat). Always true for the binary search and the linear domain.
        Public: n, the budget, beta."""
        if self.quantile != "exponential" or self.log_range is None:
            return True
        target = n - self.clip_count(n, rho_threshold)
        return target > self.rank_error(n, rho_threshold, self.beta, self.threshold_outputs(n))

    def threshold_buckets(self, n: int, rho_threshold: float) -> int | None:
        """How many buckets the threshold's log-domain quantile cuts its range into: None (the
        default ``log_bucket_count``, 47,104 over ``log_range``) where the target rank clears
        the rank error over them (``clears_buckets``), else the most whose rank error at beta
        it clears, K = beta exp(sqrt(2 rho_t) (n - k)), at least one a nat; the release is
        then the chosen bucket's geometric middle (``log_domain_quantile(middle=True)``).

        Why: every empty bucket below the rows has the target rank's utility -(n - k), so
        their number sets how often the draw falls below every row, where PLAN releases its
        centre, at small n the box's middle (a 40-row table at rho = 1: 14% of 200 releases,
        errors up to 42% of the box). With K buckets they weigh at most K w times the bucket
        holding the target rank, w = exp(-sqrt(2 rho_t) (n - k)), so the draw falls below
        every row with probability at most K w / (1 + K w): beta / (1 + beta) above the floor
        of one bucket a nat, more at it (a review: N(0.5, 0.1), n = 520, d = 1,
        rho = 0.0034: 0.218, against 0.446 with the default buckets). Over the same range: a
        narrower one cut loose boxes' rows off (N(100, 1) in (0, 10^6)^10, n = 100,
        rho = 0.1: 263 -> 2.2e5). The price is wider buckets: the middle is within
        e^(23 / K) of every norm in its bucket (1.28 at K = 94, the top was 1.63), and where
        the old collapses released an accurate centre the coarser threshold costs (N(0, 1)
        in +-10^4, d = 10, n = 200, rho = 0.02: 0.33 -> 0.58; docs/results.md). Public: n,
        the budget, beta, ``log_range``."""
        if self.quantile != "exponential" or self.log_range is None:
            return None
        if self.clears_buckets(n, rho_threshold):
            return None
        target = n - self.clip_count(n, rho_threshold)
        # exp overflows past 709: such a target clears any count (capped below in any case).
        most = self.beta * np.exp(min(np.sqrt(2.0 * rho_threshold) * target, 700.0))
        return int(min(log_bucket_count(self.log_range),
                       max(np.ceil(self.log_range), np.floor(most))))

    def _centre_kind(self, engine: Engine) -> str:
        return self._centre_kind_for(engine.baskets)

    def _centre_kind_for(self, sparse: bool) -> str:
        if self.centre != "auto":
            return self.centre
        return "mean" if sparse else "rotated"

    def check_sparse_questions(self, n: int, d: int) -> None:
        # A session or a ledger charged these, then the sparse engine refused them (a review).
        asked = self.sparse_column_questions(self.budget_plan(n, d))
        if asked:
            raise self.sparse_engine_refusal(
                f"{' and '.join(asked)} {'ask' if len(asked) > 1 else 'asks'} column questions "
                f"(order statistics; the defaults there, centre='auto': the mean and "
                f"variance='auto': binary, do not, nor medians by Gaussian counts, "
                f"quantile='binary-search')")

    def sparse_column_questions(self, plan: Mapping[str, float]) -> list[str]:
        """The options whose stages in ``plan`` (for rows on the sparse engine) ask column
        questions (public): coordinate medians by the exponential mechanism (by Gaussian
        counts, quantile='binary-search', the engine answers them)."""
        median = (self._centre_kind_for(True) == "median" and self.quantile == "exponential"
                  and "centre" in plan)
        return ["centre='median'"] if median else []

    def exponential_stages(self, d: int, sparse: bool) -> dict[str, int]:
        """Stage -> how many exponential mechanisms it runs (rho split evenly); every other
        stage is Gaussian (counts of a binary search, noisy sums, IOME's centre)."""
        stages = {}
        if self.quantile == "exponential":
            stages["threshold"] = 1
            if self._centre_kind_for(sparse) == "median":
                stages["centre"] = d
        return stages

    def stage_events(self, plan: Mapping[str, float], n: int, d: int,
                     sparse: bool = False) -> dict[str, Event]:
        exponential = self.exponential_stages(d, sparse)
        return {stage: exponential_event(rho / exponential[stage], exponential[stage])
                if stage in exponential else gaussian_event(rho, self.secure_noise)
                for stage, rho in plan.items()}

    def rotated_median_centre(
        self, engine: Engine, budget: dict[str, float], ledger: PrivacyLedger,
        rng: np.random.Generator,
    ) -> np.ndarray:
        """IOME's centre (``rotated_centre``): private medians of the randomly rotated
        coordinates on narrowed domains, rotated back."""
        geometry = _Geometry(None, engine.lo, engine.hi)
        rotation = RandomRotation.draw(geometry.d, rng, normalized=True)
        base = View(rotation=rotation)
        centre, _ = rotated_centre(engine, geometry, base, rotation.apply(geometry.mid), budget,
                                   ledger, rng, steps=self.steps, beta=self.beta,
                                   secure=self.secure_noise)
        return base.with_shift(centre).restore(np.zeros(geometry.d_pad))

    def private_medians(
        self, engine: Engine, rho: float, ledger: PrivacyLedger, rng: np.random.Generator,
    ) -> np.ndarray:
        """Coordinate-wise private medians on the box, ``rho`` in total (stage "centre")."""
        if self.quantile == "binary-search":
            return private_centre(engine, IDENTITY, engine.lo, engine.hi, steps=self.steps,
                                  rho=rho, ledger=ledger, rng=rng, beta=self.beta,
                                  secure=self.secure_noise)
        # Engines whose rows live apart answer by rank where the rows are (None: in blocks).
        columns = (engine.column_order(IDENTITY, engine.lo, engine.hi)
                   or engine.column_blocks(IDENTITY, quantile_width(engine, engine.n)))
        return column_quantiles(columns, engine.d, 0.5, engine.lo, engine.hi,
                                rho_each=rho / engine.d, rng=rng, ledger=ledger, stage="centre",
                                secure=self.secure_noise)

    def centre_and_std(
        self, engine: Engine, budget: dict[str, float], ledger: PrivacyLedger,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """The private centre, and the standard deviations the scaling uses (None: none)."""
        if not plans_a_centre(budget):
            # IOME's medians could not halve twice (``centre_stages``; public: n, d, rho): the
            # box's point nearest the origin (``public_centre``), on sparse input too (there
            # the centre would be a noisy mean, at such a budget off by much of the box per
            # item: n = 400, d = 3000, rho = 0.05, 0.87 of [0, 1]).
            centre = public_centre(engine.lo, engine.hi)
        elif self._centre_kind(engine) == "mean":
            centre = pooled_noisy_mean(engine, budget, CENTRE_STAGES, ledger=ledger, rng=rng,
                                       secure=self.secure_noise)
        elif self._centre_kind(engine) == "rotated":
            centre = self.rotated_median_centre(engine, budget, ledger, rng)
        else:
            centre = self.private_medians(engine, budget["centre"], ledger, rng)
        return np.clip(centre, engine.lo, engine.hi), np.ones(engine.d)

    def scale(self, std: np.ndarray | None) -> np.ndarray | None:
        """Coordinate scale factors (None: no scaling)."""
        return None

    def norm_bound(self, engine: Engine, centre: np.ndarray, std: np.ndarray | None,
                   scale: np.ndarray | None) -> float:
        """Public upper end of the norm universe: the largest norm a clamped row can have after
        the shift and scale (a function of the box and of private values only)."""
        reach = np.maximum(engine.hi - centre, centre - engine.lo)
        return float(np.linalg.norm(reach if scale is None else reach * scale))

    def release(
        self, engine: Engine, budget: dict[str, float], ledger: PrivacyLedger,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        n = engine.n
        centre, std = self.centre_and_std(engine, budget, ledger, rng)
        scale = self.scale(std)
        view: View = IDENTITY.with_shift(centre).with_scale(scale)
        bound = self.norm_bound(engine, centre, std, scale)
        q = 1.0 - self.clip_count(n, budget["threshold"]) / n
        if self.quantile == "exponential":
            buckets = self.threshold_buckets(n, budget["threshold"])
            radius = log_domain_quantile(engine.sorted_norms(view), q, bound, self.log_range,
                                         rho=budget["threshold"], rng=rng, ledger=ledger,
                                         stage="threshold", buckets=buckets,
                                         middle=buckets is not None)
        else:
            radius = private_radius(engine, view, q * n, bound, steps=self.steps,
                                    rho=budget["threshold"], ledger=ledger, rng=rng,
                                    secure=self.secure_noise)
        view_bound = _PlanBase.norm_bound(self, engine, centre, std, scale)
        sums = planned_clipped_sums(engine, view, radius, view_bound, budget,
                                    secure=self.secure_noise)
        noisy, noise_std = noisy_clipped_mean(engine, view, radius, rho=budget["noise"],
                                              ledger=ledger, rng=rng, secure=self.secure_noise,
                                              clipped_sum=sums[0])
        diagnostics: dict[str, Any] = {
                       "threshold": radius, "target_quantile": q, "norm_bound": bound,
                       "noise_std": noise_std, "centre": centre, "view_norm_bound": view_bound,
                       "threshold_search": self.quantile, "threshold_steps": self.steps,
                       "threshold_rho": budget["threshold"]}
        if self.quantile != "exponential":
            diagnostics["threshold_right"] = radius  # the octave search's last interval's top
        if scale is not None:
            diagnostics["std"] = std
            diagnostics["scale"] = scale
        # After the mean's noise: the profile's draws change no release of the mean.
        diagnostics.update(planned_interval_stages(engine, view, radius, view_bound, budget,
                                                ledger=ledger, rng=rng, secure=self.secure_noise,
                                                sums=sums))
        return view.restore(noisy), diagnostics


class PrivateLimitAdaptedNoise(_PlanBase):
    """PLAN: scale coordinate j by sigma_j^(-2/(p+2)) before clipping, so that the noise, added
    isotropically in the scaled space, lands where the data varies (Algorithm 1, sec. 7.1).

    p = 2 (l2 error, default) scales by sigma^(-1/2); p = 1 (l1, the paper's binary setting)
    by sigma^(-2/3); any finite p >= 1 is accepted. With ``regularise`` (the paper, sec. 7.1,
    for both its instantiations) sigma_j + mean(sigma) replaces sigma_j in the scale; the
    reference code drops it for binary data, we follow the paper.

    Standard deviations (``variance``), from ``preprocess_share * (1 - centre_share)`` of rho
    (stage "variance"; the paper gives 1/4 of the preprocessing budget to the centre):

    - ``"gaussian"``: ``pair_std`` with the Wilson-Hilferty correction, groups of
      ``group_size`` (default 1, as the paper) and ``pairings`` random pairings;
    - ``"generic"``: ``pair_std`` without correction (Algorithm 2, any distribution with a
      bounded fourth moment; use group_size >= 4 or so);
    - ``"binary"``: ``binary_std``, Gaussian-mechanism frequencies clamped to
      [d^-0.4, 1 - d^-0.4]; with a "mean" centre the two noisy frequency vectors (centre
      and variance stage) are averaged with weights proportional to their budgets, which is
      as accurate as one release with both budgets (post-processing);
    - ``"auto"``: ``"binary"`` for scipy.sparse input (baskets by its type: the sparse engine
      has no order statistics for the others), else ``"gaussian"``. On real-valued sparse
      data the binary stds bound the true ones from above (Bhatia-Davis, up to their noise)
      rather than estimate them (a user trial: 0.325 for a true 0.0064, twice the dense
      run's error): pass such data dense, or known ``std``.

    ``std=`` (a number or length-d array) gives known standard deviations instead: no variance
    stage, the whole preprocessing share goes to the centre.

    The norm universe of the threshold is [0, R], R = sqrt(2 L ln(1/beta) sum_j sigma_j^2 b_j^2)
    with b the scale (sec. 7.1, "Bounding the clipping universe": the expected squared scaled
    norm times a concentration factor; natural logs, unregularised sigma in the numerator, as
    the reference code), capped by the largest possible norm. The paper's L is ln d; we take
    max(ln d, ln sqrt(n), 1) so that in low dimension the universe still holds the target
    quantile, whose tail mass is about 1/sqrt(n) (a wider universe costs the exponential
    mechanism only logarithmically).

    Where the reference code (PLAN-experiments) is wrong, we do it right: the centre and
    variance stages run on the rows themselves, not on 3 "spread" copies charged rho/3 (a
    sensitivity of 3 costs 9 times under zCDP; ``pairings`` > 1 is charged pairings^2 the same
    way); every quantile uses the replace-one sensitivity 1, not the add/remove max(q, 1 - q);
    the caller's data is never sorted in place.

    Parameters
    ----------
    rho : float, optional
        The zCDP budget; the common parameters (``epsilon``, ``delta``, ``bounds``,
        ``random_state``, ``secure_noise``, ``engine``) are those of :class:`MeanEstimator`.
    p : float, default 2.0
        The lp error to target (>= 1): the scale is sigma_j^(-2/(p+2)).
    variance : {"auto", "gaussian", "generic", "binary"}, default "auto"
        How the standard deviations are estimated (the list above).
    std : float or array_like, optional
        Known standard deviations (a number or length-d array): no variance stage.
    centre_share : float, default 0.25
        The centre's fraction of the preprocessing budget, in (0, 1).
    group_size : int, default 1
        Rows per group in ``pair_std`` (a positive integer).
    pairings : int, default 1
        Random pairings in ``pair_std`` (a positive integer; charged pairings^2).
    regularise : bool, default True
        Use sigma_j + mean(sigma) in the scale (the paper, sec. 7.1).
    spread_share : float, default 1/16
        The fraction of the variance budget spent on the private spread (0 turns it off).
    variance_level : float or "auto", default "auto"
        The quantile of each coordinate's pair values the variance search targets (the paper:
        the median, 0.5). "auto": 0.75 where the budget places it (``pair_quantile_resolves``,
        public), else 0.5. The upper quartile still sees a coordinate that is constant in most
        rows (a pixel that is 0 in 70% of the images has median pair value 0), whose variance
        the median misses and whose rows then dominate the scaled norms.
    preprocess_share : float, default 0.25
        The fraction of rho spent on the centre and the variances, in (0, 1).
    threshold_share : float or "auto", default "auto"
        The threshold's fraction of the rest; "auto" picks it from n and the budget
        (``threshold_fraction``).
    centre : {"auto", "rotated", "median", "mean"}, default "auto"
        How the private centre is found (see Privacy).
    quantile : {"exponential", "binary-search"}, default "exponential"
        The private quantile mechanism of the threshold and the medians.
    steps : int, default 20
        Halvings of the binary searches, from 1 to 60.
    beta : float, default 0.1
        The failure probability of the rank error bounds, in (0, 1).
    log_range : float or None, default 46.0
        The width in nats of the log-domain searches (None: the paper's linear domains).
    interval_share : float or None, default None
        The fraction of rho spent on a clip profile and a clip residual (stages "clip
        profile" and "clip residual", as in :class:`~dpmean.estimators.iome.ClippedMean`), in
        [0, 1): the counts of clipped rows by shell of norm and the clip's measured move,
        which bound the clipping bias in confidence intervals. None: 1%
        (``clipped.INTERVAL_SHARE``); 0 with the exponential-mechanism threshold, whose rank
        error has no data-independent bound, leaves the interval the public box.
    count_share : float or None, default None
        Deprecated spelling of ``interval_share`` (the clipped count it bought is now a clip
        profile).
    **common
        The parameters of :class:`MeanEstimator`.

    Raises
    ------
    InvalidParameterError
        ``p`` below 1, an unknown ``variance``, ``centre`` or ``quantile``, a share or
        ``beta`` outside (0, 1), ``steps`` outside 1 to 60, a ``group_size`` or ``pairings``
        that is not a positive integer, a non-positive ``log_range``, or a common parameter
        :class:`MeanEstimator` refuses.

    Warns
    -----
    InsufficientDataWarning
        When the clip count k >= n (a public check): the zero vector is released.

    Privacy
    -------
    rho-zCDP under replace-one (stages ``budget_plan`` states). Of ``preprocess_share * rho``
    (default 1/4), the centre: "centre" (``centre="median"``: d exponential-mechanism or
    PrivQuant medians, rho/d each, sensitivity-1 utilities; ``"mean"``: the Gaussian mechanism
    on the mean, sensitivity ||hi - lo|| / n; ``"rotated"``/``"auto"`` on dense input: IOME's
    rotated centre, "centre domain" 1/16 of it first, one search of sensitivity-1 counts, then
    d_pad medians of sensitivity-1 counts), and the variances with the rest of it:
    "variance spread" (``spread_share`` of it, one exponential mechanism on the pair values,
    sensitivity 1) and "variance" (its share split evenly over the d coordinates:
    exponential-mechanism medians of the pair values, sensitivity 1, or for binary data
    Gaussian-mechanism frequencies). With known
    ``std``, or when ``pair_median_resolves`` says the budget cannot resolve the variances
    (public: n, d, rho, beta), the centre gets all of the preprocessing budget. Of the
    remaining rho, "threshold" (share t: ``threshold_share`` or "auto") is the private
    quantile of the scaled, shifted norms (sensitivity 1) and "noise" (1 - t) the Gaussian
    mechanism with sensitivity 2C/n in the scaled space. ``interval_share`` of rho (by
    default 1%, taken before the split above) goes
    to "clip profile", the Gaussian mechanism on the counts of rows in shells of the scaled,
    shifted norm beyond the released threshold, l2 sensitivity sqrt(2), and
    ``clipped.RESIDUAL_SHARE`` of it to "clip residual", the Gaussian mechanism on the mean
    move of clipping the scaled, shifted rows at C rather than at E = 1.5 C (at most the norm
    bound), l2 sensitivity 2 (E - C) / n. Without ``bounds``,
    ``BOUNDS_SHARE`` (1/10) of rho first buys a private box. docs/privacy.md, "PLAN's
    preprocessing", gives each stage's argument.

    Notes
    -----
    The shared steps (centre, threshold) are those of PLAN without scaling
    (:class:`PlanNoScale`).
    """

    method = "plan"
    declared_diagnostics = {
        "std": Diagnostic(Kind.VECTOR, "The private per-coordinate standard deviations the "
                          "scaling used (data units)."),
        "scale": Diagnostic(Kind.VECTOR, "The factors b_j coordinate j was multiplied by."),
    }

    def __init__(
        self, rho: float | None = None, *, p: float = 2.0, variance: str = "auto",
        std: Any = None, centre_share: float = 0.25, group_size: int = 1, pairings: int = 1,
        regularise: bool = True, spread_share: float = SPREAD_SHARE,
        variance_level: float | str = "auto", **options: Any,
    ) -> None:
        super().__init__(rho, **options)
        self.variance_level = (variance_level if variance_level == "auto" else
                               check_fraction(variance_level, "variance_level"))
        self.p = check_number(p, "p")
        if self.p < 1:
            raise InvalidParameterError(f"p must be >= 1 (the lp error to target), got {p}")
        if variance not in VARIANCES:
            raise InvalidParameterError(f"variance must be one of {', '.join(VARIANCES)}, got "
                                        f"{variance!r}")
        self.variance = variance
        self.std = std
        self.centre_share = check_fraction(centre_share, "centre_share")
        # sizes, not search steps: no 60 cap (group_size=64 was refused as "from 1 to 60")
        self.group_size = check_count(group_size, "group_size")
        self.pairings = check_count(pairings, "pairings")
        self.regularise = check_flag(regularise, "regularise")
        self.spread_share = 0.0 if not spread_share else check_fraction(spread_share,
                                                                         "spread_share")

    def estimates_variances(self, n: int, d: int, rho_var: float) -> bool:
        """Whether the variance stages run (public: n, d, the budget). Not with known ``std``;
        on the log search (``log_range``), only where ``pair_median_resolves``: below that the
        whole preprocessing share goes to the centre and the scale is uniform, i.e. PLAN
        without scaling, which is what noisy variances would cost more than they gain against."""
        if self.std is not None:
            return False
        if self.log_range is None:
            return True
        return pair_median_resolves(n, d, rho_var * (1.0 - self.spread_share),
                                    log_range=self.log_range, beta=self.beta,
                                    group_size=self.group_size, pairings=self.pairings)

    def variance_quantile(self, n: int, d: int, rho_variance: float) -> float:
        """The quantile of the pair values the variance search targets (public: n, d, the
        variance stage's budget): ``variance_level``, or with "auto" the upper quartile where
        the budget places it as reliably as the guard asks of the median
        (``pair_quantile_resolves``), else the median."""
        if self.variance_level != "auto":
            return float(self.variance_level)
        if self.log_range is not None and pair_quantile_resolves(
                n, d, rho_variance, UPPER_VARIANCE_LEVEL, log_range=self.log_range,
                beta=self.beta, group_size=self.group_size, pairings=self.pairings):
            return UPPER_VARIANCE_LEVEL
        return 0.5

    def preprocess_stages(self, rho_pre: float, n: int, d: int) -> dict[str, float]:
        rho_var = rho_pre * (1.0 - self.centre_share)
        if not self.estimates_variances(n, d, rho_var):
            return self.centre_budget(rho_pre, n, d)
        stages = self.centre_budget(rho_pre * self.centre_share, n, d)
        if self.spread_share:
            stages["variance spread"] = rho_var * self.spread_share
        stages["variance"] = rho_var * (1.0 - self.spread_share)
        return stages

    def minimum_rows(
        self, n: int, lo: np.ndarray, hi: np.ndarray, budget: dict[str, float]
    ) -> float:
        return max(super().minimum_rows(n, lo, hi, budget), 2.0 * self.group_size)

    def _variance_kind(self, engine: Engine) -> str:
        return self._variance_kind_for(engine.baskets)

    def sparse_column_questions(self, plan: Mapping[str, float]) -> list[str]:
        # Every variance but the binary frequencies is a quantile of pair differences.
        kind = self._variance_kind_for(True)
        pairs = kind != "binary" and "variance" in plan
        return [*super().sparse_column_questions(plan),
                *([f"variance={kind!r}"] if pairs else [])]

    def _variance_kind_for(self, sparse: bool) -> str:
        if self.variance != "auto":
            return self.variance
        return "binary" if sparse else "gaussian"

    def exponential_stages(self, d: int, sparse: bool) -> dict[str, int]:
        stages = super().exponential_stages(d, sparse)
        if self.std is None and self._variance_kind_for(sparse) != "binary":
            # The spread is always a log-domain exponential quantile (``pair_spread``); the
            # per-coordinate medians are exponential mechanisms unless searched by counts.
            stages["variance spread"] = 1
            if self.quantile == "exponential":
                stages["variance"] = d
        return stages

    def centre_and_std(
        self, engine: Engine, budget: dict[str, float], ledger: PrivacyLedger,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        if self.std is not None:
            centre, _ = super().centre_and_std(engine, budget, ledger, rng)
            std = known_std(self.std, engine.d)
            # Known deviations are in the data's units; the engine's rows may be rescaled.
            scale = self.box_scale(engine.n, engine.d)
            return centre, std if scale is None else std * scale
        if "variance" not in budget:  # the budget cannot resolve variances: PLAN-noscale
            centre, _ = super().centre_and_std(engine, budget, ledger, rng)
            return centre, None
        kind = self._variance_kind(engine)
        if kind != "binary":
            centre, _ = super().centre_and_std(engine, budget, ledger, rng)
            std = pair_std(engine, rho=budget["variance"], ledger=ledger, rng=rng,
                           q=self.variance_quantile(engine.n, engine.d, budget["variance"]),
                           group_size=self.group_size, pairings=self.pairings,
                           wilson_hilferty=kind == "gaussian", quantile=self.quantile,
                           steps=self.steps, log_range=self.log_range,
                           spread_rho=budget.get("variance spread"), secure=self.secure_noise)
            return centre, std
        # Binary data: every preprocessing stage but a median centre releases the noisy
        # frequencies, averaged with inverse-variance weights (noise variance ~ 1 / rho), as
        # accurate as one release with their sum (post-processing).
        mean_centre = self._centre_kind(engine) == "mean"
        frequencies = pooled_noisy_mean(
            engine, budget, (*(CENTRE_STAGES if mean_centre else ()), *VARIANCE_STAGES),
            ledger=ledger, rng=rng, secure=self.secure_noise)
        if mean_centre:
            centre = np.clip(frequencies, engine.lo, engine.hi)
        else:
            # A median, or IOME's rotated medians on dense rows, as the plan's centre stages
            # were planned (the rotated centre's "centre domain" was planned and never
            # charged, so variance="binary" on dense rows always failed: a review).
            centre, _ = super().centre_and_std(engine, budget, ledger, rng)
        std = bernoulli_std(frequencies, engine.lo, engine.hi, bernoulli_floor(engine.d))
        return centre, std

    def scale(self, std: np.ndarray | None) -> np.ndarray | None:
        if std is None:
            return None
        spread = std + std.mean() if self.regularise else std
        return spread ** (-2.0 / (self.p + 2.0))

    def norm_bound(self, engine: Engine, centre: np.ndarray, std: np.ndarray | None,
                   scale: np.ndarray | None) -> float:
        if scale is None or (self.quantile == "exponential" and self.log_range is not None):
            # The log-domain search pays only ln(top / data) nats of domain for a loose top,
            # while a top below the data is fatal: every norm lies above it, the mechanism
            # draws uniformly over the log domain and the radius lands far below the data.
            # A top from the private deviations (below) is that whenever they are far too small,
            # as the pair-value medians of two-valued columns are (the target quantile falls on
            # an atom and the draw in the empty log gap below it: boolean data gave radius 0
            # and 50x IOME's error). So this search keeps the box's bound.
            return super().norm_bound(engine, centre, std, scale)
        assert std is not None  # scale() is None exactly when std is
        expected = float(np.sum((std * scale) ** 2))
        spread = max(np.log(engine.d), 0.5 * np.log(engine.n), 1.0)
        concentrated = np.sqrt(2.0 * spread * np.log(1.0 / self.beta) * expected)
        return float(min(concentrated, super().norm_bound(engine, centre, std, scale)))


class PlanNoScale(_PlanBase):
    """PLAN without scaling (sec. 6, Theorem 6.1): private centre, then the clipped mean with a
    private threshold on the norms of the shifted rows, sigma = 1 in every coordinate.

    The threshold is searched honestly on [0, the largest norm a clamped row can have around
    the centre]. The reference code's version passes sigma = 0, floors it at 1e-30 and searches
    a universe of width about 1e-14 in a space scaled by 1e15, so every row is clipped to zero
    and its output is the private median; this one clips only about k = sqrt(n) + rank error
    rows, which is what Theorem 6.1 analyses. No rotation is needed (sec. 6), so it runs on
    sparse data too (centre "mean" there).

    Parameters
    ----------
    rho : float, optional
        The zCDP budget; the common parameters are those of :class:`MeanEstimator`.
    preprocess_share, threshold_share, centre, quantile, steps, beta, log_range, interval_share
        As in :class:`PrivateLimitAdaptedNoise` (here the preprocessing budget is the
        centre's alone).
    count_share : float or None, default None
        Deprecated spelling of ``interval_share``.
    **common
        The parameters of :class:`MeanEstimator`.

    Raises
    ------
    InvalidParameterError
        An unknown ``centre`` or ``quantile``, a share or ``beta`` outside (0, 1), ``steps``
        outside 1 to 60, a non-positive ``log_range``, or a common parameter
        :class:`MeanEstimator` refuses.

    Privacy
    -------
    rho-zCDP under replace-one (stages ``budget_plan`` states). ``preprocess_share * rho``
    (default 1/4) goes to the centre, with the stages and mechanisms
    :class:`PrivateLimitAdaptedNoise` states for its centre. Of the remaining rho,
    "threshold" (share t: ``threshold_share`` or "auto") is the private quantile of the
    shifted norms (sensitivity 1) and "noise" (1 - t) the Gaussian mechanism with
    sensitivity 2C/n; "clip profile" and "clip residual" as in
    :class:`PrivateLimitAdaptedNoise`. Without
    ``bounds``, ``BOUNDS_SHARE`` (1/10) of rho first buys a private box.
    """

    method = "plan-noscale"
