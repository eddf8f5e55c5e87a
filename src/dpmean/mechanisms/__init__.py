"""The only code that adds noise: the Gaussian mechanism and private quantiles."""

from .gaussian import gaussian_mechanism, gaussian_noise_std
from .quantiles import (
    count_noise_std,
    integer_search_steps,
    private_quantile_integer,
    private_quantile_real,
    rank_error_bound,
)

__all__ = [
    "count_noise_std",
    "gaussian_mechanism",
    "gaussian_noise_std",
    "integer_search_steps",
    "private_quantile_integer",
    "private_quantile_real",
    "rank_error_bound",
]
