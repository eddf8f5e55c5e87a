"""Bisection of a monotone yes/no question on a positive scale (a budget, a noise scale)."""

from __future__ import annotations

import math
from collections.abc import Callable


def narrowed(meets: Callable[[float], bool], good: float, bad: float, rtol: float) -> float:
    """The end of [good, bad] (either order, both positive) that ``meets``, after halving the
    interval in log scale until the larger end is within a factor 1 + ``rtol`` of the smaller
    (the calibration of ``pld`` stops there, so its scales are what they were).

    Parameters
    ----------
    meets : callable
        A question monotone on the interval: True at ``good``, False at ``bad``.
    good, bad : float
        Positive ends, ``meets(good)`` True and ``meets(bad)`` False (not asked again).
    rtol : float
        The relative width at which to stop.

    Returns
    -------
    float
        A point where ``meets`` is True, within ``rtol`` of the point where it turns False.
    """
    while max(good, bad) > min(good, bad) * (1.0 + rtol):
        product = good * bad
        # The product's square root where it is a normal number (as ``pld`` always took it),
        # the roots' product where it underflows or overflows (1e-170 x 4e-170: the loop
        # never narrowed, a review).
        mid = (math.sqrt(product) if 0.0 < product < math.inf
               else math.sqrt(good) * math.sqrt(bad))
        if meets(mid):
            good = mid
        else:
            bad = mid
    return good
