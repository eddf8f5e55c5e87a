"""The engine interface: the only way estimators reach data.

Estimators ask a handful of aggregate questions about a View of the clamped data; an engine
answers them in memory, from sparse structure, in chunks or on a cluster.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator

import numpy as np

from ..transforms import View


class Engine(ABC):
    """Aggregate questions about n rows of dimension d, clamped to the public box [lo, hi].

    Every answer is an exact, non-private aggregate: estimators must pass it through a
    mechanism before anything leaves them.
    """

    n: int
    d: int
    lo: np.ndarray
    hi: np.ndarray

    @abstractmethod
    def coordinate_counts(self, view: View, thresholds: np.ndarray) -> np.ndarray:
        """For each coordinate j of the view, the number of rows with v(x)_j <= thresholds[j]."""

    @abstractmethod
    def row_norms(self, view: View) -> np.ndarray:
        """The l2 norms ||v(x_i)|| of all n view rows, in row order: (n,). As sensitive as the
        data; estimators use them only through ``norm_counts`` and ``sorted_norms``."""

    def sorted_norms(self, view: View) -> np.ndarray:
        """The row norms sorted ascending (cached for the last view asked about): every step of a
        radius search, and the exponential-mechanism quantile of the norms, read them."""
        cached = getattr(self, "_sorted_norms_cache", None)
        if cached is None or cached[0] is not view:
            cached = (view, np.sort(self.row_norms(view)))
            self._sorted_norms_cache = cached
        return cached[1]

    def norm_counts(self, view: View, thresholds: np.ndarray) -> np.ndarray:
        """For each threshold t, the number of rows with ||v(x)||_2 <= t."""
        return np.searchsorted(self.sorted_norms(view), thresholds, side="right")

    @abstractmethod
    def clipped_sum(self, view: View, radius: float) -> np.ndarray:
        """sum_i min(1, radius / ||v(x_i)||) v(x_i): the sum of view rows clipped to l2 ``radius``
        (``radius = inf`` gives the plain sum)."""

    @abstractmethod
    def clipped_outer_sum(self, view: View, radius: float) -> np.ndarray:
        """sum_i c_i c_i^T with c_i = v(x_i) clipped to l2 ``radius``: a (k, k) matrix, the
        aggregate behind private covariance estimates."""

    @abstractmethod
    def sorted_columns(self, view: View) -> np.ndarray:
        """Every coordinate of the view over all rows, each column sorted ascending: (n, k).

        For mechanisms that need the order statistics themselves (exponential-mechanism
        quantiles, trimmed means); the result is as sensitive as the data."""

    @abstractmethod
    def pair_differences(self, view: View, order: np.ndarray) -> np.ndarray:
        """v(x_order[2i]) - v(x_order[2i+1]) for i < len(order) // 2: (len(order) // 2, k).

        ``order`` is a permutation (or any index sequence without repeats) drawn by the caller;
        each row takes part in at most one pair, so a changed row changes one difference."""

    def user_rows(self, view: View) -> Iterator[np.ndarray]:
        """The finished view rows v(x_i), in row order, as consecutive blocks of rows.

        Only protocol simulations (dpmean.protocols, the local and shuffle models) may ask this:
        each block goes straight to the users' own randomisers, row i's messages depending only
        on row i and public values, never to an aggregate. Engines that cannot hand rows over
        (this default) raise InvalidParameterError.
        """
        # Imported here, as in ``paired``: keep the interface's imports minimal.
        from ..errors import InvalidParameterError

        raise InvalidParameterError(
            f"{type(self).__name__} cannot hand rows to a local or shuffle protocol simulation; "
            f"pass a dense in-memory array"
        )

    def paired(self, order: np.ndarray) -> Engine:
        """An engine over the len(order) // 2 rows x_order[2i] - x_order[2i+1] (clamped rows).

        Pair differences have mean zero whatever the mean of the data, which second-moment
        estimates of a covariance need (CoinPress MVCRec on data of unknown mean). ``order`` is
        drawn by the caller independently of the data; each row is in at most one pair, so
        replacing one row of this engine replaces at most one row of the paired engine. This
        generic version holds the differences in memory; an engine may answer more cheaply.
        """
        # Imported here: the in-memory engine is a subclass of this module's Engine.
        from .memory import InMemoryEngine

        width = self.hi - self.lo
        return InMemoryEngine(self.pair_differences(View(), order), -width, width)
