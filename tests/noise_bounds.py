"""Tolerances derived from a release's noise scale: quantiles of the Gaussian noise it reports
(``diagnostics["noise_std"]``) at a stated failure probability, instead of measured constants."""

import numpy as np
from scipy.stats import chi2


def isotropic_std(result) -> float:
    """The one standard deviation of a release whose Gaussian noise is the same on every
    coordinate (checked), as a float."""
    std = result.diagnostics["noise_std"]
    assert np.all(std == std[0]), f"noise is not isotropic: {std}"
    return float(std[0])


def chi_band(d: int, failure: float) -> tuple[float, float]:
    """(lo, hi) with ||N(0, I_d)|| outside [lo, hi] with probability ``failure`` (half on each
    side): a release's noise is neither larger nor smaller than it declares."""
    return float(np.sqrt(chi2.ppf(failure / 2, d))), float(np.sqrt(chi2.isf(failure / 2, d)))


def clipped_mean(x: np.ndarray, centre: np.ndarray, radius: float) -> np.ndarray:
    """The exact mean a clipped-mean release adds its noise to: each row's offset from
    ``centre`` clipped to the l2 ball of ``radius``. IOME's rotation is orthogonal, so it clips
    the same offsets; the rows must lie in the box (no clamping here)."""
    offsets = x - centre
    # einsum and one matrix-vector product: no further n x d temporaries (MNIST-sized checks)
    norms = np.sqrt(np.einsum("ij,ij->i", offsets, offsets))
    shrink = np.minimum(1.0, radius / np.maximum(norms, 1e-300))
    return centre + shrink @ offsets / x.shape[0]


def release_target(x: np.ndarray, result) -> np.ndarray:
    """The exact mean (NON-PRIVATE) a Gaussian release adds its noise to: the rows clipped
    to the private ``threshold`` about the private ``centre`` (0 when absent: CM), in PLAN's
    view (coordinate j multiplied by ``scale_j``, absent: 1), mapped back to the data's units;
    the plain mean for releases that clip nothing (the Gaussian baseline). The rows must lie
    in the box (no clamping here)."""
    diagnostics = result.diagnostics
    if "threshold" not in diagnostics:
        return x.mean(axis=0)
    scale = np.asarray(diagnostics.get("scale", 1.0))
    centre = np.asarray(diagnostics.get("centre", 0.0)) * np.ones(x.shape[1])
    return clipped_mean(x * scale, centre * scale, diagnostics["threshold"]) / scale


def standardised_noise(x: np.ndarray, result) -> float:
    """||(release - target) / sigma||, sigma the declared noise standard deviation of each
    coordinate in the data's units (``noise_std``, divided by PLAN's ``scale``): the norm of a
    standard normal d-vector, so within ``chi_band(d, failure)`` except with probability
    ``failure``. The release must not have been moved by the projection onto the box."""
    diagnostics = result.diagnostics
    sigma = np.asarray(diagnostics["noise_std"]) / np.asarray(diagnostics.get("scale", 1.0))
    return float(np.linalg.norm((result.mean - release_target(x, result)) / sigma))


def exponential_rank_error(values: np.ndarray, q: float, lo: float, hi: float, rho: float,
                           failure: float) -> float:
    """t such that the exponential quantile of ``values`` on [lo, hi] (eps = sqrt(8 rho),
    ``dpmean.mechanisms.exponential``) lands t or more ranks from q n with probability at most
    ``failure``, for these values (NON-PRIVATE: the test knows them).

    Gap i (i values below it) has probability w_i e^{-eps |i - q n| / 2} / Z, and Z is at least
    any one gap's term, so the gaps t or more ranks away weigh together at most
    (hi - lo) e^{-eps t / 2} / max_i (w_i e^{-eps |i - q n| / 2}); t solves that = failure."""
    eps = np.sqrt(8.0 * rho)
    edges = np.concatenate([[lo], np.sort(np.clip(values, lo, hi)), [hi]])
    widths = np.diff(edges)
    ranks = np.arange(widths.size)
    with np.errstate(divide="ignore"):
        log_terms = np.log(widths) - eps * np.abs(ranks - q * values.size) / 2.0
    return float(2.0 / eps * (np.log(hi - lo) - log_terms.max() - np.log(failure)))


def pair_std_band(rho_each: float, m: int, log_range: float, failure: float
                  ) -> tuple[float, float]:
    """(lo, hi) with one coordinate's private sigma / sigma from PLAN's pair variances (one
    pairing, groups of one pair, the exponential median on log pair values over ``log_range``
    nats; Gaussian rows) outside [lo, hi] with probability at most ``failure``.

    The m pair values are v = sigma^2 chi^2_1, independent. With beta = failure / 3 each:
    (1) the gap at rank m / 2 (utility 0) is at least a = beta / (m g) nats wide, g = 0.242 the
    largest density of log chi^2_1 (uniform spacings are Beta(1, m): P(< u) <= m u); (2) then
    the mechanism lands t or more ranks from m / 2 with probability at most
    log_range e^{-eps t / 2} / a (``exponential_rank_error``'s argument), eps = sqrt(8 rho_each):
    t = (2 / eps) ln(log_range m g / beta^2); (3) DKW: every order statistic's chi^2_1 quantile
    is within sqrt(ln(2 / beta) / (2 m)) of its rank / m. So the median lies between the
    chi^2_1 quantiles 1/2 -+ delta, delta = (t + 1) / m + that, and sigma is its square root
    over Wilson-Hilferty's median factor (``wilson_hilferty_factor(1)``)."""
    beta = failure / 3.0
    g = float(chi2.pdf(1.0, 1))  # log chi^2_1 has density f(e^y) e^y, largest at e^y = 1
    t = 2.0 / np.sqrt(8.0 * rho_each) * np.log(log_range * m * g / beta**2)
    delta = (t + 1.0) / m + np.sqrt(np.log(2.0 / beta) / (2.0 * m))
    factor = (1.0 - 2.0 / 9.0) ** 3
    lo = np.sqrt(chi2.ppf(0.5 - delta, 1) / factor) if delta < 0.5 else 0.0
    hi = np.sqrt(chi2.ppf(0.5 + delta, 1) / factor) if delta < 0.5 else np.inf
    return float(lo), float(hi)
