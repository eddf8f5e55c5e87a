"""The engine interface: the only way estimators reach data.

Estimators ask a handful of aggregate questions about a View of the clamped data; an engine
answers them in memory, from sparse structure, in chunks or on a cluster.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

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
    def norm_counts(self, view: View, thresholds: np.ndarray) -> np.ndarray:
        """For each threshold t, the number of rows with ||v(x)||_2 <= t."""

    @abstractmethod
    def clipped_sum(self, view: View, radius: float) -> np.ndarray:
        """sum_i min(1, radius / ||v(x_i)||) v(x_i): the sum of view rows clipped to l2 ``radius``
        (``radius = inf`` gives the plain sum)."""
