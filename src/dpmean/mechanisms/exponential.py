"""Private quantiles by the exponential mechanism over the gaps between sorted values.

Smith (2011), in the form of Kaplan, Schnapp and Stemmer (2022); PLAN (Aumuller et al.) sec. 7.1.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidParameterError


def exponential_epsilon(rho: float) -> float:
    """The epsilon of an exponential mechanism that is ``rho``-zCDP: an epsilon-DP exponential
    mechanism is epsilon^2/8-zCDP (accounting.exponential_mechanism_zcdp), so sqrt(8 rho)."""
    if not (np.isfinite(rho) and rho > 0):
        raise InvalidParameterError(f"the exponential mechanism needs rho > 0, got {rho}")
    return float(np.sqrt(8.0 * rho))


def as_columns(sorted_values: np.ndarray, lo, hi) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Values as an (m, k) float array of columns (a 1-D array is one column) and the domain
    bounds broadcast to length k: the shape every column-wise quantile takes."""
    values = np.asarray(sorted_values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    k = values.shape[1]
    lo = np.broadcast_to(np.asarray(lo, dtype=np.float64), (k,))
    hi = np.broadcast_to(np.asarray(hi, dtype=np.float64), (k,))
    return values, lo, hi


def exponential_quantile(
    sorted_values: np.ndarray,
    q: float,
    lo: np.ndarray | float,
    hi: np.ndarray | float,
    *,
    rho: float,
    rng: np.random.Generator,
    sensitivity: float = 1.0,
) -> np.ndarray:
    """A private q-quantile of each column of ``sorted_values`` (shape (n, k), or (n,) for k = 1),
    column j on the public interval [lo_j, hi_j]; returns shape (k,).

    The values are clamped to [lo, hi] and, with lo and hi at the ends, cut the interval into
    n + 1 gaps; gap i (between the i-th and (i+1)-th smallest value) is chosen with probability
    proportional to width_i * exp(eps * u(i) / (2 * sensitivity)), u(i) = -|i - q n|, and the
    output is uniform inside it. That is the exponential mechanism with base measure Lebesgue on
    [lo, hi] and utility u(t) = -|#{x < t} - q n| for every point t.

    Sensitivity under replace-one neighbours: replacing one value changes #{x < t} by at most 1
    for every t, so |rank - q n| changes by at most 1 (``sensitivity=1``, the default). The
    add/remove bound max(q, 1 - q) that the reference code uses belongs to a different neighbour
    relation (n changes there). A caller that feeds each person into s values passes
    ``sensitivity=s``: ranks then move by up to s, and the mechanism stays rho-zCDP only with
    the exponent divided by s, i.e. an s^2 times larger cost at equal noise.

    Privacy: each column's quantile is eps-DP with eps = sqrt(8 rho), hence ``rho``-zCDP; the k
    columns together cost k * rho, which the caller charges.

    Numerics: the choice is a Gumbel-max over log(width_i) + eps u(i) / (2 s), exact in
    distribution and free of overflow; a zero-width gap (tied values) has log width -inf and so
    probability exactly 0, as in the mechanism's definition. O(n) per column once the columns are
    sorted (O(n log n)); the reference code floors widths at 1e-30 instead, which gives such gaps
    positive probability. ``sorted_values`` is read, never written (the reference wrapper
    sorted its input in place, reordering the caller's columns).
    """
    eps = exponential_epsilon(rho)
    if not (np.isfinite(sensitivity) and sensitivity > 0):
        raise InvalidParameterError(f"sensitivity must be finite and > 0, got {sensitivity}")
    if not 0.0 <= q <= 1.0:
        raise InvalidParameterError(f"the quantile q must lie in [0, 1], got {q}")
    values, lo, hi = as_columns(sorted_values, lo, hi)
    n, k = values.shape
    if not (lo < hi).all():
        raise InvalidParameterError("the exponential quantile needs lo < hi on every column")
    rank_gap = np.abs(np.arange(n + 1, dtype=np.float64) - q * n)
    penalty = (eps / (2.0 * sensitivity)) * rank_gap
    out = np.empty(k)
    # Blocks of columns, transposed so each column's gaps are contiguous: temporaries stay
    # about _BLOCK_VALUES doubles whatever n and k.
    step = columns_per_draw(n)
    for start in range(0, k, step):
        cols = slice(start, min(start + step, k))
        out[cols] = _choose(values[:, cols].T, lo[cols], hi[cols], penalty, rng)
    return out


_BLOCK_VALUES = 1 << 21


def columns_per_draw(n: int) -> int:
    """How many columns of n values ``exponential_quantile`` draws for at once. Calling it on
    consecutive column blocks whose widths are multiples of this (the last one excepted) draws
    exactly what one call on all the columns draws, from the same generator."""
    return max(1, _BLOCK_VALUES // (n + 2))


def _choose(
    rows: np.ndarray, lo: np.ndarray, hi: np.ndarray, penalty: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """One draw per row of ``rows`` (b, n), each row sorted: a gap by Gumbel-max over
    log(width) - penalty, then a uniform point inside it."""
    b, n = rows.shape
    edges = np.empty((b, n + 2))
    edges[:, 0], edges[:, -1] = lo, hi
    # Clamping is monotone, so clamped sorted rows stay sorted.
    np.clip(rows, lo[:, None], hi[:, None], out=edges[:, 1:-1])
    widths = np.diff(edges, axis=1)
    with np.errstate(divide="ignore"):
        scores = np.log(widths)
    scores -= penalty
    scores += rng.gumbel(size=scores.shape)
    chosen = np.argmax(scores, axis=1)
    which = np.arange(b)
    return edges[which, chosen] + rng.uniform(size=b) * widths[which, chosen]
