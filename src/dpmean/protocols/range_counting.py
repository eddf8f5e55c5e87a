"""LDP range counting by hierarchical histograms (Cormode, Kulkarni, Srivastava, VLDB 2019), the
quantile tool of IOME's local and shuffle protocols (section 5, Lemmas 5.1 and 5.5).

A complete B-ary tree over u = B^h buckets; each user samples one level and reports its
ancestor at that level with Hadamard randomised response; the analyser estimates every node,
makes the tree consistent (Hay et al. 2010) and answers any quantile from the leaves.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import isotonic_regression
from scipy.stats import norm

from ..errors import InvalidParameterError
from ..transforms import fwht
from .randomisers import RoundBudget, hadamard_response, response_bias
from .rounds import Ledger


@dataclass(frozen=True)
class HistogramMessages:
    """What one round of range counting sends: per user its group (e.g. the coordinate it
    reports on), the tree level, the Hadamard index and the response bit."""

    group: np.ndarray
    level: np.ndarray
    index: np.ndarray
    bit: np.ndarray

    @staticmethod
    def concat(parts: list[HistogramMessages]) -> HistogramMessages:
        return HistogramMessages(*(np.concatenate([getattr(p, f) for p in parts])
                                   for f in ("group", "level", "index", "bit")))

    def permuted(self, order: np.ndarray) -> HistogramMessages:
        return HistogramMessages(self.group[order], self.level[order], self.index[order],
                                 self.bit[order])


MAX_BUCKETS = 2**20
"""The most buckets a tree may have (B^height): the analyser keeps that many counts for each
group, and a tree's public shape is refused before anything is drawn."""


@dataclass(frozen=True)
class HierarchicalHistogram:
    """The tree: ``branching`` B (a power of two, so every level's size is one) and ``height``
    h; u = B^h buckets. CKS19 find B about 4-5 best; the variance is proportional to
    (B - 1) h^2."""

    branching: int = 4
    height: int = 5
    # The caller's name for the height, for its messages (centre_height, threshold_height).
    height_name: str = field(default="height", compare=False)

    def __post_init__(self) -> None:
        b = self.branching
        if b < 2 or b & (b - 1):
            raise InvalidParameterError(f"branching must be a power of two >= 2, got {b}")
        if self.height < 1:
            raise InvalidParameterError(f"{self.height_name} must be >= 1, got {self.height}")
        if self.branching**self.height > MAX_BUCKETS:
            # The analyser holds B^h counts a group, and B^level wraps int64 from 2^63 (a
            # review: height 16 failed for 32 GiB after users had been randomised, 27 ran on).
            raise InvalidParameterError(
                f"a tree of branching {b} and {self.height_name} {self.height} has "
                f"{b}^{self.height} buckets, more than 2^{MAX_BUCKETS.bit_length() - 1}; give "
                f"a smaller {self.height_name}")

    @property
    def buckets(self) -> int:
        return self.branching**self.height

    def randomise(self, buckets: np.ndarray, group: np.ndarray, budget: RoundBudget,
                  rng: np.random.Generator, *, ledger: Ledger, stage: str
                  ) -> HistogramMessages:
        """Each user's report on its bucket (in [u]): a uniform level l in 1..h (independent of
        the value), its level-l ancestor, sent by Hadamard response over the B^l nodes.

        Sensitivity: the bucket may be any of the u. Guarantee: as ``hadamard_response``'s at
        ``budget`` (the level and the group are public coins of the user, independent of its
        value; the joint Renyi divergence is at most the largest over the levels), which it
        charges to ``stage`` before its noise (after the level, a public coin)."""
        buckets = np.asarray(buckets, dtype=np.int64)
        level = rng.integers(1, self.height + 1, size=buckets.shape)
        node = buckets // self.branching ** (self.height - level)
        size = self.branching**level
        index, bit = hadamard_response(node, size, budget, rng, ledger=ledger, stage=stage)
        return HistogramMessages(np.asarray(group, dtype=np.int64), level, index, bit)

    def leaf_fractions(self, messages: HistogramMessages, groups: int, epsilon: float
                       ) -> np.ndarray:
        """The analyser: per group, the consistent estimate of the fraction of that group's
        users in each of the u buckets, shape (groups, u) (rows sum to 1).

        Raises
        ------
        InvalidParameterError
            ``epsilon`` so small that the responses were drawn without bias (they carry
            nothing); the protocols refuse such a budget from their plan, before any charge.
        """
        unbias = _unbias(epsilon)
        b, h = self.branching, self.height
        estimates, variances = [], []
        for level in range(1, h + 1):
            size = b**level
            at = messages.level == level
            key = messages.group[at] * size + messages.index[at]
            sums = np.bincount(key, weights=messages.bit[at], minlength=groups * size)
            users = np.bincount(messages.group[at], minlength=groups).astype(np.float64)
            # E[b H[v, j]] over the uniform j is 1[v = v_i] times the response's bias (about
            # (e^eps - 1)/(e^eps + 1)): one Hadamard transform of the per-index sums estimates
            # every node's count at once.
            # (In place: at the leaves these are the largest arrays the analyser holds.)
            counts = fwht(sums.reshape(groups, size))
            del sums
            counts *= unbias
            counts /= np.maximum(users, 1.0)[:, None]
            estimates.append(counts)
            # Each node's variance is about unbias^2 / users; the common factor cancels.
            variances.append(1.0 / np.maximum(users, 1.0))
        return _consistent_leaves(estimates, variances, b)

    def rank_error(self, users: float, epsilon: float, beta: float) -> float:
        """A public bound on the error of a prefix fraction, with probability 1 - beta: z_beta
        times the standard deviation without consistency (which only lowers it): a prefix
        sums at most B - 1 nodes per level, each node's estimate has variance at most
        unbias^2 / (users / h) (each user's term b H is bounded by 1)."""
        unbias = _unbias(epsilon)
        std = unbias * self.height * np.sqrt((self.branching - 1) / users)
        return float(norm.isf(beta / 2.0) * std)


def _unbias(epsilon: float) -> float:
    """1 / the Hadamard response's bias at ``epsilon`` as drawn (``response_bias``, exact; about
    1 / tanh(eps / 2)). The bias was computed as 2 e^eps / (1 + e^eps) - 1, which cancelled to 0
    at tiny eps (rho = 1e-20: a ZeroDivisionError after the rounds were charged)."""
    bias = response_bias(epsilon)
    if not bias > 0.0:
        raise InvalidParameterError(
            f"Hadamard responses at epsilon={epsilon:.3g} are drawn without bias (their flip "
            f"probability is 1/2 in floating point): they carry nothing to estimate from")
    return 1.0 / bias


def _consistent_leaves(estimates: list[np.ndarray], variances: list[np.ndarray],
                       branching: int) -> np.ndarray:
    """Constrained inference on a B-ary tree whose root (fraction 1) is known (Hay et al. 2010,
    generalised to levels of unequal variance): bottom up, each node's estimate and its
    children's sum are averaged with inverse-variance weights (with equal variances these are
    Hay's weights (B^l - B^(l-1)) / (B^l - 1)); top down, children are shifted equally so that
    they add up to their parent. Post-processing only; ``variances`` are per group."""
    b = branching
    h = len(estimates)
    groups = estimates[0].shape[0]
    z = list(estimates)  # the deepest level stays as estimated; the loop replaces the others
    var = variances[h - 1]
    for depth in range(h - 2, -1, -1):
        children = z[depth + 1].reshape(groups, -1, b).sum(axis=2)
        own = (1.0 / variances[depth]) / (1.0 / variances[depth] + 1.0 / (b * var))
        z[depth] = own[:, None] * estimates[depth] + (1.0 - own[:, None]) * children
        var = 1.0 / (1.0 / variances[depth] + 1.0 / (b * var))
    parent = np.ones((groups, 1))
    for depth in range(h):
        siblings = z[depth].reshape(groups, -1, b)
        gap = parent - siblings.sum(axis=2)
        parent = (siblings + gap[:, :, None] / b).reshape(groups, -1)
    return parent


def quantiles_from_fractions(fractions: np.ndarray, q: float | np.ndarray) -> np.ndarray:
    """Per group, the smallest bucket whose estimated cumulative fraction reaches ``q``: the
    cumulative sums are first made non-decreasing by isotonic regression (post-processing), so
    one noisy prefix far from the quantile cannot decide it."""
    cdf = np.cumsum(fractions, axis=1)
    q = np.broadcast_to(np.asarray(q, dtype=np.float64), (cdf.shape[0],))
    out = np.empty(cdf.shape[0], dtype=np.int64)
    for g in range(cdf.shape[0]):
        monotone = isotonic_regression(cdf[g]).x
        out[g] = min(int(np.searchsorted(monotone, q[g], side="left")), cdf.shape[1] - 1)
    return out


def heaviest_buckets(fractions: np.ndarray, branching: int) -> np.ndarray:
    """Per group, the leaf reached by descending the (consistent) tree from the root, always into
    the child with the largest estimated fraction: a point inside the data's bulk. Unlike the
    crossing of a noisy cumulative fraction it is decided by a few node estimates near the
    data, so noise spread over many empty buckets cannot move it far (post-processing)."""
    groups, u = fractions.shape
    node = np.zeros(groups, dtype=np.int64)
    size = u
    while size > 1:
        size //= branching
        # The mass of each child of the current node: leaves in blocks of ``size``.
        blocks = fractions.reshape(groups, u // size, size).sum(axis=2)
        children = node[:, None] * branching + np.arange(branching)
        node = children[np.arange(groups), np.argmax(blocks[np.arange(groups)[:, None],
                                                              children], axis=1)]
    return node
