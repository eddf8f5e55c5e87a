"""The only code that adds noise: the Gaussian mechanism, private quantiles and the
smooth-sensitivity noises."""

from .exponential import exponential_epsilon, exponential_quantile, log_domain_quantile
from .gaussian import gaussian_mechanism, gaussian_noise, gaussian_noise_std
from .matrix import symmetric_gaussian_mechanism
from .quantiles import (
    count_noise_std,
    integer_search_steps,
    private_quantile_integer,
    private_quantile_octaves,
    private_quantile_real,
    rank_error_bound,
    reliable_search_steps,
)
from .smooth_noise import (
    NOISES,
    ArsinhNormal,
    Calibration,
    GaussianNRS,
    GaussianTCDP,
    LaplaceLogNormal,
    LaplaceNRS,
    SmoothNoise,
    StudentT,
    UniformLogNormal,
    smooth_sensitivity_mechanism,
)

__all__ = [
    "NOISES",
    "ArsinhNormal",
    "Calibration",
    "GaussianNRS",
    "GaussianTCDP",
    "LaplaceLogNormal",
    "LaplaceNRS",
    "SmoothNoise",
    "StudentT",
    "UniformLogNormal",
    "count_noise_std",
    "exponential_epsilon",
    "exponential_quantile",
    "log_domain_quantile",
    "gaussian_mechanism",
    "gaussian_noise",
    "gaussian_noise_std",
    "integer_search_steps",
    "private_quantile_integer",
    "private_quantile_octaves",
    "private_quantile_real",
    "rank_error_bound",
    "reliable_search_steps",
    "smooth_sensitivity_mechanism",
    "symmetric_gaussian_mechanism",
]
