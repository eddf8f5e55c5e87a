"""IOME's estimators (Huang, Liang, Yi 2021): the clipped mean with a private optimal threshold
(CM, sections 3.1-3.2), the shifted-clipped-mean with random rotation (section 3.3, Remarks 3.1-3.2)
and the statistical Gaussian wrapper (section 3.4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import numpy as np

from ..accounting import PrivacyLedger
from ..diagnostics import NOISE_STD, Diagnostic, Kind
from ..engines import Engine
from ..errors import InvalidParameterError
from ..mechanisms import integer_search_steps, rank_error_bound
from ..transforms import IDENTITY, Quantizer, RandomRotation, View, next_power_of_two
from ..validation import (
    check_flag,
    check_fraction,
    check_positive,
    check_steps,
    intersected_box,
)
from .base import MeanEstimator
from .clipped import (
    INTERVAL_SHARE,
    PROFILE_DIAGNOSTICS,
    box_reach,
    escape_beta,
    escape_rank_error,
    noisy_clipped_mean,
    optimal_clip_rank,
    planned_clipped_sums,
    planned_interval_stages,
    private_centre,
    private_radius,
    private_reach,
    reliable_median_steps,
    with_interval_stages,
)


class ClippedMean(MeanEstimator):
    """CM: clip rows to a privately chosen l2 radius C, average, add Gaussian noise.

    C is a private quantile of the row norms at the bias/variance optimum
    ``n - sqrt(2 d / rho_noise)``, moved down by the quantile search's count noise (IOME 3.1-3.2).
    Rows are clipped around the origin, so the error grows with the distance of the data from
    the origin; ``iome`` removes that.

    Parameters
    ----------
    rho : float, optional
        The zCDP budget; this and the other common parameters (``epsilon``, ``delta``,
        ``bounds``, ``random_state``, ``secure_noise``, ``engine``) are those of
        :class:`MeanEstimator`.
    threshold_share : float, default 0.25
        The fraction of rho the radius search spends (the paper's 1/4), in (0, 1).
    threshold_steps : int, default 20
        Halvings of the radius search (noisy counts), from 1 to 60.
    beta : float, default 0.05
        The probability that the radius search errs by more than its rank error, in (0, 1).
    interval_share : float or None, default 0.01
        The fraction of rho spent on the confidence interval's own releases, in [0, 1) (None:
        the default, as for PLAN and ``auto``): a clip
        profile (stage "clip profile": noisy counts of the rows in shells beyond the radius)
        and, ``clipped.RESIDUAL_SHARE`` of it, a clip residual (stage "clip residual": the
        noisy mean move the clip took from the rows up to 1.5 times the radius). They buy a
        narrower confidence interval (``MeanResult.confidence_interval``): without them the
        interval assumes that every row the radius search may have clipped lies at the box's
        farthest corner. The default, ``clipped.INTERVAL_SHARE`` (PLAN's), narrowed IOME's
        90% interval on MNIST from 18.7 to 6.6 times its error for 0.5% more error; 0 spends
        nothing on them (the paper's algorithm).
    **common
        The parameters of :class:`MeanEstimator`.

    Raises
    ------
    InvalidParameterError
        A share or ``beta`` outside (0, 1) (``interval_share`` outside [0, 1)),
        ``threshold_steps`` outside 1 to 60, or a common parameter :class:`MeanEstimator`
        refuses.

    Warns
    -----
    InsufficientDataWarning
        When n is too small for the budget (the target rank is below 1, a public check): the
        zero vector is released, as in the proof of Theorem 3.4.

    Privacy
    -------
    rho-zCDP (stages ``budget_plan`` states): "threshold", ``threshold_share * rho``, a search
    (by octaves, ``private_quantile_octaves``) of ``threshold_steps`` noisy counts of
    sensitivity 1 (``threshold_share * rho /
    threshold_steps`` each); "noise", ``(1 - threshold_share) * rho``, the Gaussian mechanism on
    the clipped mean, l2 sensitivity 2C/n. With ``interval_share``, "clip profile" takes that
    share of rho first (the split applies to the rest): "clip profile", the Gaussian mechanism
    on the counts of rows in the shells beyond C, l2 sensitivity sqrt(2)
    (``clipped.clip_profile``), and "clip residual" (``clipped.RESIDUAL_SHARE`` of the share),
    the Gaussian mechanism on (1/n) sum_i clip_E(u_i) - clip_C(u_i), E = 1.5 C at most the
    norm bound, l2 sensitivity 2 (E - C) / n (``clipped.clip_residual``). Without
    ``bounds``, ``BOUNDS_SHARE`` (1/10) of rho first buys a private box and the split applies
    to the rest.
    """

    gaussian_stages = True  # every stage a Gaussian mechanism: exact (eps, delta)

    method = "cm"
    norms_about_origin = True
    declared_diagnostics = {
        "threshold": Diagnostic(Kind.FLOAT, "The private clipping radius C (view units)."),
        "target_rank": Diagnostic(Kind.FLOAT, "The rank the radius search aimed at (public)."),
        "noise_std": NOISE_STD,
        "norm_bound": Diagnostic(Kind.FLOAT, "B, a bound on every row's norm in the view the "
                                 "rows were clipped in (the top of the radius search)."),
        "threshold_steps": Diagnostic(Kind.INT, "Noisy counts of the radius search (absent on "
                                      "IOME's quantized path, whose integer search sets them)."),
        "threshold_right": Diagnostic(Kind.FLOAT, "The top of the radius search's last "
                                      "interval, the radius itself (view units): it marks a "
                                      "release of the octave search (confidence intervals); "
                                      "absent on IOME's quantized path."),
        "threshold_rho": Diagnostic(Kind.FLOAT, "The rho the radius search spent."),
        **PROFILE_DIAGNOSTICS,
    }
    supports_secure_noise = True
    # Row norms, clipped sums and (rotated) coordinate counts: the sparse engine answers them
    # all (IOME's quantized path excepted, which it refuses with the fix).
    supports_sparse = True
    # The clip profile's shells beyond 1.5 C (``clipped.clip_profile_edges``): none, since the
    # radius aims at the bias/variance optimum and leaves few rows that far out.
    profile_doublings: int | None = 0

    def __init__(
        self, rho: float | None = None, *, threshold_share: float = 0.25,
        threshold_steps: int = 20, beta: float = 0.05,
        interval_share: float | None = INTERVAL_SHARE,
        **common: Any,
    ) -> None:
        super().__init__(rho, **common)
        self.threshold_share = check_fraction(threshold_share, "threshold_share")
        self.threshold_steps = check_steps(threshold_steps, "threshold_steps")
        self.beta = check_fraction(beta, "beta")
        self.interval_share = check_fraction(
            INTERVAL_SHARE if interval_share is None else interval_share, "interval_share",
            low_open=False)

    def budget_plan(self, n: int, d: int) -> dict[str, float]:
        return with_interval_stages(self.rho, self.interval_share,
                                    lambda rho: self.clipping_stages(rho, n, d))

    def clipping_stages(self, rho: float, n: int, d: int) -> dict[str, float]:
        """The stages of ``rho``, the budget left after the interval's stages (public)."""
        return {"threshold": rho * self.threshold_share,
                "noise": rho * (1.0 - self.threshold_share)}

    def clip_rank(self, n: int, d: int, budget: dict[str, float], rank_error: float) -> float:
        return optimal_clip_rank(n, d, budget["noise"], rank_error)

    def search_steps(self, n: int, lo: np.ndarray, hi: np.ndarray) -> int:
        """Halvings the radius search makes (a public number)."""
        return self.threshold_steps

    def target_rank(self, n: int, lo: np.ndarray, hi: np.ndarray,
                    budget: dict[str, float]) -> float:
        """The rank the private radius aims at: public, from n, d, the box and the budget."""
        tau = escape_rank_error(self.search_steps(n, lo, hi), budget["threshold"], self.beta)
        return self.clip_rank(n, lo.shape[0], budget, tau)

    def minimum_rows(
        self, n: int, lo: np.ndarray, hi: np.ndarray, budget: dict[str, float]
    ) -> float:
        # The target rank is n minus a public offset; n must leave it at 1 or more.
        return n + 1.0 - self.target_rank(n, lo, hi, budget)

    def release(
        self, engine: Engine, budget: dict[str, float], ledger: PrivacyLedger,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        norm_bound = box_reach(engine.lo, engine.hi)
        rank = self.target_rank(engine.n, engine.lo, engine.hi, budget)
        radius = private_radius(engine, IDENTITY, rank, norm_bound, steps=self.threshold_steps,
                                rho=budget["threshold"], ledger=ledger, rng=rng,
                                secure=self.secure_noise)
        sums = planned_clipped_sums(engine, IDENTITY, radius, norm_bound, budget,
                                    secure=self.secure_noise)
        mean, noise_std = noisy_clipped_mean(engine, IDENTITY, radius, rho=budget["noise"],
                                             ledger=ledger, rng=rng, secure=self.secure_noise,
                                             clipped_sum=sums[0])
        return mean, {"threshold": radius, "target_rank": rank, "noise_std": noise_std,
                      "norm_bound": norm_bound, "threshold_steps": self.threshold_steps,
                      "threshold_right": radius, "threshold_rho": budget["threshold"],
                      **planned_interval_stages(engine, IDENTITY, radius, norm_bound, budget,
                                             ledger=ledger, rng=rng, secure=self.secure_noise,
                                             sums=sums, doublings=self.profile_doublings)}


# The radius search's shares that threshold_share="auto" tries, smallest first.
THRESHOLD_SHARES = (0.01, 0.02, 0.05, 0.1, 0.25)

# The share of the centring budget spent on narrowing the median domains: one scalar search,
# so a small share buys it (n / 4 margin), while the d_pad medians lose only this fraction of
# theirs.
DOMAIN_SHARE = 1.0 / 16.0
# When the real-valued path narrows the median domains (``ShiftedClippedMean``'s
# ``narrow_medians``): "always", or "when-short" (only when the budget leaves the medians fewer
# reliable halvings than a full search, the rule before the octave search). A median search
# of 20 halvings over a box 10^8 wide ends 100 wide, whatever the budget: the centre, and the
# radius about it, then followed the box (n = 20000, d = 3, N(0, 1), box +-10^8: error 0.24 at
# rho = 1 and at rho = 100). The reach is found by octaves (``private_reach``), so the narrowed
# domains follow the rows' spread about the nearer of the box's middle and its point nearest
# the origin (``_Geometry.reach_anchors``), not the box.
NARROW_MEDIANS = ("always", "when-short")


def rotated_spread(d_pad: int, n: int, beta: float) -> float:
    """IOME Lemma 3.7 with a union bound: with probability 1 - beta over the random signs, every
    rotated coordinate of each of n vectors v is within ||v|| times this of zero."""
    return float(np.sqrt(2.0 * np.log(4.0 * d_pad * n / beta) / d_pad))


class ShiftedClippedMean(ClippedMean):
    """IOME: rotate, shift to private coordinate medians, clipped mean, rotate back (IOME 3.3).

    Rows are zero-padded to d_pad = 2^ceil(log2 d) and rotated by (1/sqrt(d_pad)) H D, with H the
    Walsh-Hadamard matrix (fast transform, O(d log d) per row) and D public random signs. We apply
    one rotation, as the paper's analysis does (the authors' code chains three; one suffices for
    Lemma 3.7). Each rotated coordinate gets a private median on a public domain, the data is
    shifted to that centre, and CM runs on the shifted rows. Its error is proportional to the
    diameter of the data, not its distance from the origin.

    Parameters
    ----------
    rho : float, optional
        The zCDP budget; the common parameters are those of :class:`MeanEstimator`.
    centre_share : float, default 0.25
        The fraction of rho the private centre spends (the paper's 1/4), in (0, 1).
    threshold_share : float or "auto", default "auto"
        The fraction of the rest the radius search spends; "auto" picks it from public values
        (``threshold_fraction``).
    median_steps : int, default 20
        Halvings of each coordinate median's search (real-valued path), from 1 to 60.
    threshold_steps : int, default 20
        Halvings of the radius search (real-valued path), from 1 to 60.
    quantized : bool, default False
        Take the integer path of Remark 3.2 (see Notes).
    bucket : float, optional
        The rounding grid of the quantized path, in the data's units (default: see Notes).
    beta : float, default 0.05
        The failure probability of the searches' bounds and of the rotation's spread, in (0, 1).
    narrow_medians : {"always", "when-short"}, default "always"
        When the real path narrows the median domains with a private reach (stage "centre
        domain", see Notes): always, or only when the budget leaves the medians fewer reliable
        halvings than a full search (the rule before the octave search; the quantized path
        keeps it either way). "always" makes the centre's resolution follow the rows, not
        the box (N(0, 1), n = 20000, d = 3, box +-10^8: error 0.24 -> 0.0004 at rho = 1);
        in tight boxes it measured within 1% either way (MNIST, PLAN's Gaussian grid).
    **common
        The parameters of :class:`MeanEstimator`.

    Raises
    ------
    InvalidParameterError
        A share or ``beta`` outside (0, 1), steps outside 1 to 60, a non-positive ``bucket``,
        ``narrow_medians`` not one of its values,
        or a common parameter :class:`MeanEstimator` refuses; at estimate time, a quantization
        grid too fine for an exact int64 search.

    Warns
    -----
    InsufficientDataWarning
        When n is too small for the budget (a public check): the zero vector is released.

    Privacy
    -------
    rho-zCDP (stages ``budget_plan`` states): "centre", ``centre_share * rho`` for the d_pad
    coordinate medians (binary searches of sensitivity-1 counts, rho / (4 d_pad) each by
    default); on the real path (by default; with ``narrow_medians="when-short"`` and on the
    quantized path only when the medians' reliable halvings fall short, public: n, d, rho, beta,
    the box) "centre domain" takes ``DOMAIN_SHARE`` (1/16) of that share first, one search of
    sensitivity-1 counts on the norms about the box's middle and, where the box's point nearest
    the origin is another point, one about that point, each half of the stage (by octaves:
    ``private_reach``, at most ``median_steps`` counts, rho / (k steps) each for k such
    searches; where each could make only one reliable halving, the latter's one count is
    asked at half the two points' distance, and the larger count's point kept). Of the
    rest, "threshold" (share t of it: ``threshold_share``, or under "auto" the smallest of 0.01,
    0.02, 0.05, 0.1, 0.25 whose rank error bound is at most n / 4) searches the shifted norms
    with sensitivity-1 counts, and "noise" (1 - t) is the Gaussian mechanism on the clipped
    mean, l2 sensitivity 2C/n. Where the medians could make only one reliable halving
    (``medians_halve_twice``, public: n, d, rho, beta, the steps) there are no centre stages:
    the centre is the box's point nearest the origin (``public_centre``) and "threshold" and
    "noise" share all of rho. Without ``bounds``, ``BOUNDS_SHARE`` (1/10) of rho first buys a
    private box. The rotation's signs are public randomness.

    Notes
    -----
    Narrowed median domains (ours): a median search over a loose box ends as coarse as the box
    is wide divided by 2^steps, and fewer reliable halvings (``reliable_search_steps``: counts
    within n/2 with probability 1 - beta) make it coarser. On the real path by default
    (``narrow_medians="always"``; otherwise, and on the integer path, when the reliable halvings
    are fewer than a full search makes), ``DOMAIN_SHARE`` of the centring budget goes to one
    private distance r from an anchor a that more than half the rows lie within
    (``private_reach``; a is the nearer of the box's middle and its point nearest the origin,
    ``_Geometry.reach_anchors``), and each median domain is intersected with R(a)_j +- r
    ``rotated_spread``: it then still holds the median with probability 1 - beta, and its width
    follows the data instead of the box (r is found by octaves, so its resolution follows the
    rows' distance from a). The decision uses only ``narrow_medians``, n, d, rho, beta, the box
    and ``median_steps``.

    Paths:

    - real-valued (default): medians by binary search over ``median_steps`` halvings of the
      domain of each rotated coordinate; the radius by ``threshold_steps`` noisy counts on
      [0, a public bound on the shifted norms], by octaves (``private_quantile_octaves``).
    - ``quantized=True`` (Remark 3.2): coordinates are rounded to multiples of ``bucket``
      (default: ``alpha / sqrt(d)`` with ``alpha = ||hi - lo|| / 2**16``), rotated without
      normalisation so they stay integers, and both searches are the exact integer
      Algorithm 1 (medians over the integer range of each coordinate, the radius over the
      integer squared norms). Rounding adds at most ``bucket * sqrt(d) / 2`` to the error.

    The median domain of rotated coordinate j is the exact image of the box under the rotation,
    narrowed (real path) to ``R(mid)_j +- ||hi - lo||/2 * sqrt(2 ln(4 d_pad n / beta) / d_pad)``,
    which holds all rotated rows with probability 1 - beta by Lemma 3.7 (IOME); both use public
    values only. The target rank counts d (the dimension of the released mean), not d_pad.
    """

    method = "iome"
    norms_about_origin = False  # about its private centre
    declared_diagnostics = {
        "centre": Diagnostic(Kind.VECTOR, "The private centre the rows were shifted by (data "
                             "units)."),
        "padded_dim": Diagnostic(Kind.INT, "The rotation's dimension: d padded to a power of "
                                 "two (public)."),
        "quantized": Diagnostic(Kind.BOOL, "Whether the quantized (integer) path ran."),
        "centre_reach": Diagnostic(Kind.FLOAT, "The private reach that narrowed the median "
                                   "domains (absent when they were not narrowed)."),
        "bucket": Diagnostic(Kind.FLOAT, "The quantized path's grid spacing in the view "
                             "(public; absent on the real path)."),
    }

    def __init__(
        self, rho: float | None = None, *, centre_share: float = 0.25,
        threshold_share: float | str = "auto", median_steps: int = 20,
        threshold_steps: int = 20,
        quantized: bool = False, bucket: float | None = None, beta: float = 0.05,
        narrow_medians: str = "always", **common: Any,
    ) -> None:
        auto_share = threshold_share == "auto"
        if narrow_medians not in NARROW_MEDIANS:
            raise InvalidParameterError(f"narrow_medians must be one of "
                                        f"{', '.join(map(repr, NARROW_MEDIANS))}, got "
                                        f"{narrow_medians!r}")
        self.narrow_medians = narrow_medians
        super().__init__(rho, threshold_share=0.25 if auto_share else cast(float, threshold_share),
                         threshold_steps=threshold_steps, beta=beta, **common)
        self.auto_threshold_share = auto_share
        self.centre_share = check_fraction(centre_share, "centre_share")
        self.median_steps = check_steps(median_steps, "median_steps")
        self.quantized = check_flag(quantized, "quantized")
        self.bucket = None if bucket is None else check_positive(bucket, "bucket")

    def check_sparse_questions(self, n: int, d: int) -> None:
        super().check_sparse_questions(n, d)
        # The quantized path's view (clipped, quantized rows) was charged, then refused by
        # the sparse engine, on sparse input by default (a review).
        if self.quantized:
            raise self.sparse_engine_refusal(
                "quantized=True asks its rows clipped and quantized (quantized=False runs on "
                "sparse rows)")

    def clipping_stages(self, rho: float, n: int, d: int) -> dict[str, float]:
        geometry = self._geometry(n, *self.unit_box(n, d))
        # Always on the real path by default; the quantized path's medians are exact on its
        # grid (a bucket is the box's width / 2^16), which a narrower domain does not refine.
        always = self.narrow_medians == "always" and geometry.quantizer is None
        centre = centre_stages(geometry, n, rho * self.centre_share, self.beta,
                               self.median_steps, always_narrow=always)
        # No centre stages (the medians could not halve twice): their share goes to the rest.
        rest = rho * (1.0 - self.centre_share) if plans_a_centre(centre) else rho
        share = self.threshold_fraction(n, d, rest)
        return {**centre, "threshold": rest * share, "noise": rest * (1.0 - share)}

    def threshold_fraction(self, n: int, d: int, rho_rest: float) -> float:
        """The share of the clipped mean's budget ``rho_rest`` that the radius search gets.

        ``threshold_share="auto"`` (default): the smallest of ``THRESHOLD_SHARES`` whose search
        keeps its rank error bound (Theorem 3.3, failure probability beta) within n / 4, else
        the paper's 1/4. The radius needs little budget: a search error moves the radius
        among rows whose norms concentrate, while every bit of budget taken from the noise
        stage adds noise to all d coordinates (the PLAN authors' copy of IOME gives the search
        1 %). The n / 4 guard keeps small samples from clipping a large share of their rows.
        Public: n, d, the box, rho, beta and the steps.
        """
        if not self.auto_threshold_share:
            return self.threshold_share
        steps = self.search_steps(n, *self.unit_box(n, d))
        for share in THRESHOLD_SHARES:
            if rank_error_bound(steps, share * rho_rest, self.beta) <= n / 4.0:
                return share
        return THRESHOLD_SHARES[-1]

    def box_scale(self, n: int, d: int) -> np.ndarray | None:
        # A given ``bucket`` is a grid in the data's units: no rescaling under it.
        return None if self.bucket is not None else super().box_scale(n, d)

    def narrows(self, n: int, d: int) -> bool:
        """Whether the release narrows the median domains first (see the class notes): public."""
        return "centre domain" in self.budget_plan(n, d)

    def quantizer(self, n: int, lo: np.ndarray, hi: np.ndarray) -> Quantizer | None:
        """The rounding grid of the quantized path (None on the real-valued path)."""
        if not self.quantized:
            return None
        if self.bucket is not None:
            return Quantizer(self.bucket)
        return Quantizer.for_error(float(np.linalg.norm(hi - lo)) / 2.0**16, lo.shape[0])

    def _geometry(self, n: int, lo: np.ndarray, hi: np.ndarray) -> _Geometry:
        return _Geometry(self.quantizer(n, lo, hi), lo, hi)

    def search_steps(self, n: int, lo: np.ndarray, hi: np.ndarray) -> int:
        geometry = self._geometry(n, lo, hi)
        if geometry.quantizer is None:
            return self.threshold_steps
        # Algorithm 1 over the integer squared norms [0, norm_bound_public^2], in int64.
        if geometry.squared_norm_top >= 2.0**62:
            raise InvalidParameterError(
                f"{self.method}: the quantization grid is too fine for an exact integer search "
                f"(squared norms up to {geometry.squared_norm_top:.3g} exceed int64); use a "
                f"larger bucket (or sigma_min), or the real-valued path"
            )
        return integer_search_steps(np.zeros(1), np.array([geometry.squared_norm_top]))

    def release(
        self, engine: Engine, budget: dict[str, float], ledger: PrivacyLedger,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        n = engine.n
        geometry = self._geometry(n, engine.lo, engine.hi)
        rank = self.target_rank(n, engine.lo, engine.hi, budget)
        quantizer = geometry.quantizer
        rotation = RandomRotation.draw(geometry.d, rng, normalized=quantizer is None)
        base = View(preclip=self.preclip(n, geometry.d), quantizer=quantizer, rotation=rotation)

        mid_rotated = rotation.apply(geometry.mid)
        centre, reach = rotated_centre(engine, geometry, base, mid_rotated, budget, ledger, rng,
                                       steps=self.median_steps, beta=self.beta,
                                       secure=self.secure_noise)

        view = base.with_shift(centre)
        norm_bound = geometry.shifted_norm_bound(centre, rotation)
        radius = private_radius(
            engine, view, rank, norm_bound, steps=None if quantizer else self.threshold_steps,
            rho=budget["threshold"], ledger=ledger, rng=rng, secure=self.secure_noise)
        sums = planned_clipped_sums(engine, view, radius, norm_bound, budget,
                                    secure=self.secure_noise)
        noisy, noise_std = noisy_clipped_mean(engine, view, radius, rho=budget["noise"],
                                              ledger=ledger, rng=rng, secure=self.secure_noise,
                                              clipped_sum=sums[0])
        # restore() is linear on the noise: an isotropic std s becomes s * bucket / gain.
        std_factor = (quantizer.bucket if quantizer else 1.0) / geometry.gain
        noise_std *= std_factor
        return view.restore(noisy), {
            "threshold": radius,
            "target_rank": rank,
            "noise_std": noise_std,
            "centre": view.restore(np.zeros(geometry.d_pad)),
            "padded_dim": geometry.d_pad,
            "quantized": quantizer is not None,
            # public: the rounding grid (confidence intervals bound the rounding with it)
            "bucket": quantizer.bucket if quantizer else None,
            "centre_reach": reach,
            "norm_bound": norm_bound,
            "threshold_steps": None if quantizer else self.threshold_steps,
            "threshold_right": None if quantizer else radius,
            "threshold_rho": budget["threshold"],
            **planned_interval_stages(engine, view, radius, norm_bound, budget, ledger=ledger,
                                   rng=rng, secure=self.secure_noise, sums=sums,
                                   std_factor=std_factor, doublings=self.profile_doublings),
        }

    def preclip(self, n: int, d: int) -> float | None:
        """l2 radius rows are clipped to before anything else (only the Gaussian wrapper)."""
        return None


class _Geometry:
    """Public facts about the box [lo, hi] after quantization and rotation."""

    def __init__(self, quantizer: Quantizer | None, lo: np.ndarray, hi: np.ndarray) -> None:
        self.quantizer = quantizer
        if quantizer is not None:
            lo, hi = quantizer.universe(lo, hi)
        self.lo, self.hi = lo, hi
        self.d = lo.shape[0]
        self.d_pad = next_power_of_two(self.d)
        self.mid = (lo + hi) / 2.0
        # The normalised rotation is orthogonal; the integer one (H D) multiplies norms by
        # sqrt(d_pad) and coordinates by 1.
        self.gain = 1.0 if quantizer is None else float(np.sqrt(self.d_pad))
        scale = self.gain / np.sqrt(self.d_pad)
        # In l2 the box lies within box_radius of its centre; rotated coordinate j ranges over
        # R(mid)_j +- scale * sum(hi - lo) / 2 exactly (sum of |H_jk| (hi_k - lo_k) / 2).
        self.box_radius = self.gain * float(np.linalg.norm(hi - lo)) / 2.0
        self.half_width = scale * float(np.sum(hi - lo)) / 2.0
        # Any centre inside the median domains is within half_width * sqrt(d_pad) of R(mid).
        self.norm_bound_public = self.box_radius + self.half_width * np.sqrt(self.d_pad) + 1.0

    @property
    def squared_norm_top(self) -> float:
        """The top of the integer radius search: the public bound on squared shifted norms."""
        return float(np.ceil(self.norm_bound_public**2))

    def centre_domain(self, mid_rotated: np.ndarray, n: int,
                      beta: float) -> tuple[np.ndarray, np.ndarray]:
        """Public search domains of the coordinate medians (integer on the quantized path)."""
        if self.quantizer is not None:
            return (np.floor(mid_rotated - self.half_width),
                    np.ceil(mid_rotated + self.half_width))
        half_width = min(self.half_width,
                         self.box_radius * rotated_spread(self.d_pad, n, beta))
        return mid_rotated - half_width, mid_rotated + half_width

    def reach_anchors(self, rotation: RandomRotation,
                      mid_rotated: np.ndarray) -> list[tuple[np.ndarray, float]]:
        """The points the private reach is measured from, in the rotated space, each with a
        bound on every row's distance from it: the box's middle (``mid_rotated``, with half
        the box's diagonal) and, where it is another point, ``public_centre``, the box's point
        nearest the origin (with its distance to the farthest corner). Public: the box and the
        rotation.

        The reach's resolution follows the rows' distance from its point, so the median
        domains narrow to the data only about a point near it. Data with a generous upper
        bound lie near the box's lower face (counts, durations, pixels in (0, 10^12)), 5e11
        from the middle of (0, 10^12): about the middle alone the narrowed domains were ~10^12
        wide, 20 halvings left the medians 10^6 apart, and IOME and PLAN erred by thousands on
        data in [0, 100] (2,577 and 2,846 over 20 releases; 0.16 in the box (0, 100): docs/
        results.md, "Boxes loose on one side"). About the origin alone,
        data in the middle of a tight box lost a few halvings (N(50, 5) in (0, 100), d = 64,
        n = 1000, rho = 0.05: IOME 2.41 -> 2.81). So both are measured, and the nearer kept
        (``private_reach``); in a box symmetric about 0 they are one point."""
        points = [(mid_rotated, self.box_radius)]
        nearest = public_centre(self.lo, self.hi)
        if not np.array_equal(nearest, self.mid):
            points.append((rotation.apply(nearest), self.gain * self.farthest_corner(nearest)))
        return points

    def anchors_apart(self) -> float:
        """The distance between ``reach_anchors``' two points in the rotated space (0 where
        they are one). Public: the box."""
        return self.gain * float(np.linalg.norm(self.mid - public_centre(self.lo, self.hi)))

    def farthest_corner(self, point: np.ndarray) -> float:
        """The distance from ``point`` (in the box's own, unrotated units) to the box's farthest
        corner: a bound on every clamped row's distance from it. Public: the box, the point."""
        reach = np.maximum(self.hi - point, point - self.lo)
        return float(np.linalg.norm(np.maximum(reach, 0.0)))

    def full_median_steps(self, n: int, beta: float, real_steps: int) -> int:
        """The halvings a median search makes when nothing cuts it short: ``real_steps`` on the
        real path; Algorithm 1's on the integer domains, taken about a zero centre (the
        rotation is not drawn yet when the budget is planned; the rotated box centre moves a
        domain's rounded ends, not its width by more than one)."""
        if self.quantizer is None:
            return real_steps
        return integer_search_steps(*self.centre_domain(np.zeros(self.d_pad), n, beta))

    def settle_centre(self, centre: np.ndarray, rotation: RandomRotation) -> np.ndarray:
        """Post-processing of the private centre before the data is shifted to it.

        On the real path the centre is projected onto the rotated box (rotated back, clamped
        to [lo, hi], rotated again): every row lies in the box, and projection onto a convex
        set that holds them moves the centre closer to each (non-expansive), so the clipped
        rows and the radius can only shrink; no privacy cost. At small budgets the medians are
        coarse and can put the centre far outside the box (MNIST at rho = 0.005: radius 9,000
        where the box's diameter is 7,140). The integer path keeps its lattice centre."""
        if self.quantizer is not None:
            return centre
        inside = np.clip(rotation.invert(centre), self.lo, self.hi)
        return rotation.apply(inside)

    def shifted_norm_bound(self, centre: np.ndarray, rotation: RandomRotation) -> float:
        """A bound on the shifted row norms. On the real path: the distance from the (settled)
        centre to the farthest corner of the box, which holds every clamped row (the rotation
        is orthogonal, so distances are those of the original space); the integer path searches
        the public worst case so its rank (which depends on the number of steps) is public."""
        if self.quantizer is not None:
            return self.norm_bound_public
        return self.farthest_corner(rotation.invert(centre))


def centre_stages(geometry: _Geometry, n: int, rho: float, beta: float,
                  median_steps: int, always_narrow: bool = False) -> dict[str, float]:
    """How ``rotated_centre`` splits its budget ``rho``: all of it to the medians, or
    ``DOMAIN_SHARE`` first to narrowing their domains, always (``always_narrow``: PLAN, and
    IOME's real path by default) or when the budget leaves the medians fewer reliable
    halvings than a full search makes; or nothing, when the medians could make only one
    reliable halving (the centre is then ``public_centre``: ``medians_halve_twice``). Public:
    n, the box, rho, beta, the steps.

    Reliable here means at failure probability ``escape_beta(beta)``, not beta: on a domain as
    wide as the box, one count off by n/2 at a midpoint outside the data turns that median
    away from every row for good (at beta = 0.05, one of 1,024 rotated medians in one IOME
    release of 50 ended 626 from the data: PLAN Appendix E A', d = 1024, rho = 1/4, an error
    15 times the usual). Narrowed to the data, the same wrong turn moves a median by at most
    the narrowed width, so the halvings themselves stay sized at beta."""
    most = geometry.full_median_steps(n, beta, median_steps)
    reliable = reliable_median_steps(n, geometry.d_pad, rho, escape_beta(beta), most)
    stages = ({"centre domain": rho * DOMAIN_SHARE, "centre": rho * (1.0 - DOMAIN_SHARE)}
              if always_narrow or reliable < most else {"centre": rho})
    if not medians_halve_twice(n, geometry.d_pad, stages["centre"], beta, most):
        return {}
    return stages


def medians_halve_twice(n: int, d_pad: int, rho: float, beta: float, most: int) -> bool:
    """Whether the d_pad rotated medians, sharing ``rho``, make more than one reliable halving
    (``reliable_median_steps``, as ``private_centre`` will), or a search of one halving is all
    there is (``most`` <= 1). Public: n, d_pad, rho, beta, the steps.

    Where only one halving is reliable, each median ends at the middle of the half of its
    domain R(mid)_j +- h it chose, h / 2 from R(mid)_j whatever the data, while under the
    random rotation the rows' coordinates about R(mid) are about ||x - mid|| / sqrt(d_pad)
    and the domain's half-width h is the private reach times sqrt(2 ln(4 d_pad n / beta) /
    d_pad), several times that: where the rows lie near the box's middle most medians lie
    within h / 4 of R(mid)_j, and the search's answer is farther from them than the middle
    (n = 300, d = 64, rho = 0.1, N(0.5, 1) in the box +-10: IOME's centre 45 from the mean, the
    middle 4, error 7.3 -> 1.2). The centre is then ``public_centre`` and the centre's budget
    goes to the radius and the noise (docs/results.md, "Centring at small budgets")."""
    return most <= 1 or reliable_median_steps(n, d_pad, rho, beta, most) > 1


def plans_a_centre(stages: Mapping[str, float]) -> bool:
    """Whether a plan (or a budget) has a centre stage ("centre", which a "centre domain"
    never comes without): none where ``centre_stages`` found the medians unable to halve twice,
    and the centre is ``public_centre``. Public."""
    return "centre" in stages


def public_centre(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The centre IOME's rotated centre falls back to where its medians cannot halve twice:
    the point of the box [lo, hi] nearest the origin, the data's own zero (the box's middle
    when the box is symmetric about 0), as CM clips about the origin. Public: the box.

    Not the box's middle: data with a generous upper bound lie near the box's lower face
    (counts, durations, pixels), where the middle is farther from them than the one-halving
    medians were (Poisson(2) counts in [0, 50]^64, n = 300, rho = 0.1: IOME 12.8 with the
    medians, 19.2 about the middle, 2.8 about the origin)."""
    return np.clip(0.0, lo, hi)


def rotated_centre(
    engine: Engine, geometry: _Geometry, base: View, mid_rotated: np.ndarray,
    budget: dict[str, float], ledger: PrivacyLedger, rng: np.random.Generator, *,
    steps: int, beta: float, secure: bool = False,
) -> tuple[np.ndarray, float | None]:
    """IOME's private centre in the rotated space of ``base`` (section 3.3, with the narrowed
    median domains of ``ShiftedClippedMean``): the stages ``centre_stages`` planned, charged to
    "centre domain" (if planned) and "centre". Returns (centre, private reach or None)."""
    n = engine.n
    quantizer = geometry.quantizer
    assert base.rotation is not None  # IOME's centre is always searched in a rotated space
    if not plans_a_centre(budget):  # the medians could not halve twice: ``public_centre``
        centre = base.rotation.apply(public_centre(geometry.lo, geometry.hi))
        if quantizer is not None:  # Algorithm 1's lattice
            centre = np.round(centre)
        return geometry.settle_centre(centre, base.rotation), None
    centre_lo, centre_hi = geometry.centre_domain(mid_rotated, n, beta)
    reach, toward = None, None
    if "centre domain" in budget:
        anchors = geometry.reach_anchors(base.rotation, mid_rotated)
        nearest, reach = private_reach(
            engine, [(base.with_shift(anchor), top) for anchor, top in anchors], steps=steps,
            rho=budget["centre domain"], ledger=ledger, rng=rng, secure=secure, beta=beta,
            apart=geometry.anchors_apart())
        anchor = anchors[nearest][0]
        half = reach * rotated_spread(geometry.d_pad, n, beta)
        narrow_lo, narrow_hi = anchor - half, anchor + half
        if quantizer is not None:  # Algorithm 1 searches integers: round outward
            narrow_lo, narrow_hi = np.floor(narrow_lo), np.ceil(narrow_hi)
        centre_lo = np.maximum(centre_lo, narrow_lo)
        centre_hi = np.minimum(centre_hi, narrow_hi)
        # Each median nearest the anchor within its last interval (the lattice path keeps
        # Algorithm 1's answer).
        toward = anchor if quantizer is None else None
    centre = private_centre(
        engine, base, centre_lo, centre_hi, steps=None if quantizer else steps,
        rho=budget["centre"], ledger=ledger, rng=rng, secure=secure, beta=beta, toward=toward)
    return geometry.settle_centre(centre, base.rotation), reach


class _BallGeometry(_Geometry):
    """The box geometry for rows first clipped to the l2 ball of radius ``ball`` about the
    origin (the Gaussian wrapper's preclip): after rounding and rotation every row lies within
    ``ball_radius`` of the origin, so the coordinate medians are searched on
    [-ball_radius, ball_radius] and the private centre is projected onto that ball. Projection
    onto a convex set that holds every row moves the centre closer to each of them (pure
    post-processing, no privacy cost), and bounds the shifted norms by 2 ball_radius instead of
    the box corners' about sqrt(d) box_radius: at IOME's settings (R = 50 sqrt(d), d = 512) the
    integer squared norms then fit int64 with room to spare.
    """

    def __init__(self, quantizer: Quantizer | None, lo: np.ndarray, hi: np.ndarray,
                 ball: float) -> None:
        super().__init__(quantizer, lo, hi)
        # Rounding to the grid moves a row by at most sqrt(d) / 2 buckets.
        rounded = ball if quantizer is None else ball / quantizer.bucket + np.sqrt(self.d) / 2.0
        self.ball_radius = self.gain * rounded
        # The settled centre is within ball_radius (+ sqrt(d_pad) / 2 of integer rounding) of
        # the origin, each row within ball_radius.
        self.norm_bound_public = 2.0 * self.ball_radius + np.sqrt(self.d_pad) / 2.0 + 1.0

    def centre_domain(self, mid_rotated: np.ndarray, n: int,
                      beta: float) -> tuple[np.ndarray, np.ndarray]:
        half_width = np.full(self.d_pad, self.ball_radius)
        if self.quantizer is not None:
            return np.floor(-half_width), np.ceil(half_width)
        half_width *= min(1.0, rotated_spread(self.d_pad, n, beta))
        return -half_width, half_width

    def settle_centre(self, centre: np.ndarray, rotation: RandomRotation) -> np.ndarray:
        norm = float(np.linalg.norm(centre))
        if norm > self.ball_radius:
            centre = centre * (self.ball_radius / norm)
        # the integer path shifts integer rows by an integer centre, keeping squared norms integer
        return np.rint(centre) if self.quantizer is not None else centre

    def shifted_norm_bound(self, centre: np.ndarray, rotation: RandomRotation) -> float:
        if self.quantizer is not None:
            return self.norm_bound_public
        return self.ball_radius + float(np.linalg.norm(centre))


class GaussianIOME(ShiftedClippedMean):
    """IOME for i.i.d. Gaussian rows N(mu, Sigma) with crude a priori bounds (IOME section 3.4).

    Public assumptions: ``mean_radius`` R >= ||mu||_2 and sigma_min^2 I <= Sigma <= sigma_max^2 I.
    Rows are clipped to l2 radius R' = R + sigma_max (2 sqrt(d) + sqrt(2 ln(4 n / beta))), which
    no Gaussian row exceeds with probability 1 - beta/4 (Lemma 3.5 and a union bound; the paper
    prints the last term without its sigma_max factor, which its own proof needs), then the
    quantized IOME runs with bucket alpha / sqrt(d), alpha = sigma_min sqrt(d / n). The integer
    searches are bounded by that ball (``_BallGeometry``), not by the corners of the box
    [-R', R']^d, so IOME's experiment settings (d = 512, R = 50 sqrt(d)) fit int64; this changes
    only public search domains and a post-processing of the private centre, not the budget.

    Parameters
    ----------
    rho : float, optional
        The zCDP budget; the common parameters are those of :class:`MeanEstimator`.
    mean_radius : float
        R, a public bound on ||mu||_2 (positive).
    sigma_min, sigma_max : float
        Public bounds on the covariance, sigma_min^2 I <= Sigma <= sigma_max^2 I (positive,
        sigma_min <= sigma_max).
    beta : float, default 0.1
        The failure probability of the clipping radius and the searches, in (0, 1).
    **options
        The parameters of :class:`ShiftedClippedMean` (but ``quantized``, always True here)
        and of :class:`MeanEstimator`. ``bounds``, if given, further restrict the box
        [-R', R']^d.

    Raises
    ------
    InvalidParameterError
        A non-positive ``mean_radius``, ``sigma_min`` or ``sigma_max``, ``sigma_min`` above
        ``sigma_max``, or a parameter :class:`ShiftedClippedMean` refuses.

    Privacy
    -------
    rho-zCDP for any data (only the utility analysis assumes Gaussians), with the stages and
    costs of :class:`ShiftedClippedMean` on its quantized path (integer Algorithm 1 searches
    of sensitivity-1 counts, then the Gaussian mechanism on the clipped mean, sensitivity
    2C/n). It never searches for a private box: its box comes from ``mean_radius`` and
    ``sigma_max``.
    """

    method = "iome-gaussian"
    # With engine="sparse" it was charged, then refused (a review).
    sparse_engine_refuses = "its rows are preclipped to its a-priori ball"
    # sigma_min, sigma_max and the mean radius are in the data's units (and its box is a cube
    # unless bounds narrow it): runs in the data's own units.
    box_normalised = False
    finds_bounds = False  # its box comes from mean_radius and sigma_max
    shifts_far_box = False  # its preclip is a ball about the origin
    supports_sparse = False  # its preclip and integer grid have no sparse form

    declared_diagnostics = {
        "declared_lo": Diagnostic(Kind.VECTOR, "The lower corner of the bounds given, where the "
                                  "cube of the a-priori ball narrows them (public): the box "
                                  "the confidence interval is, since the rows beyond the cube "
                                  "were moved into it."),
        "declared_hi": Diagnostic(Kind.VECTOR, "The bounds' upper corner, likewise."),
    }

    def __init__(
        self, rho: float | None = None, *, mean_radius: float, sigma_min: float,
        sigma_max: float, beta: float = 0.1, interval_share: float = 0.0, **options: Any,
    ) -> None:
        # Its interval is a public box whatever is bought (its preclip changes the estimand:
        # ``intervals.NO_INTERVAL``), so a clip profile would spend budget for nothing (a
        # trial: 1% of every release went to stages no interval read).
        if interval_share != 0:
            raise InvalidParameterError(
                f"interval_share must be 0 for iome-gaussian, got {interval_share!r}: its "
                f"confidence interval is the public box whatever is bought (its preclip to "
                f"the a-priori ball changes the estimand)")
        super().__init__(rho, quantized=True, beta=beta, interval_share=0.0, **options)
        self.mean_radius = check_positive(mean_radius, "mean_radius")
        self.sigma_min = check_positive(sigma_min, "sigma_min")
        self.sigma_max = check_positive(sigma_max, "sigma_max")
        if self.sigma_min > self.sigma_max:
            raise InvalidParameterError(
                f"sigma_min ({sigma_min}) must not exceed sigma_max ({sigma_max})")

    def preclip(self, n: int, d: int) -> float:
        return self.mean_radius + self.sigma_max * (
            2.0 * np.sqrt(d) + np.sqrt(2.0 * np.log(4.0 * n / self.beta)))

    def box(self, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
        radius = self.preclip(n, d)
        lo, hi = np.full(d, -radius), np.full(d, radius)
        if self.bounds is not None:
            # Bounds beside the ball's cube left lo > hi: a release outside the bounds.
            lo, hi = intersected_box(lo, hi, *super().box(n, d), method=self.method,
                                     own="the cube of its a-priori ball")
        return lo, hi

    def public_settings(self, diagnostics: dict[str, Any], lo: np.ndarray,
                        hi: np.ndarray, scale: np.ndarray | None = None) -> dict[str, Any]:
        out = super().public_settings(diagnostics, lo, hi, scale)
        if self.bounds is not None:
            declared_lo, declared_hi = super().box(0, lo.shape[0])
            if np.any(declared_lo < lo) or np.any(declared_hi > hi):
                out["declared_lo"], out["declared_hi"] = declared_lo, declared_hi
        return out

    def quantizer(self, n: int, lo: np.ndarray, hi: np.ndarray) -> Quantizer:
        return Quantizer.for_error(self.sigma_min * np.sqrt(lo.shape[0] / n), lo.shape[0])

    def _geometry(self, n: int, lo: np.ndarray, hi: np.ndarray) -> _Geometry:
        return _BallGeometry(self.quantizer(n, lo, hi), lo, hi, self.preclip(n, lo.shape[0]))


__all__ = ["ClippedMean", "GaussianIOME", "ShiftedClippedMean"]
