"""What a mechanism is, for an (epsilon, delta) accountant: the events ``dpmean.pld`` composes.

A stage of a release is charged to its ledger in zCDP (rho); for an (epsilon, delta) request the
accountant needs to know more: which mechanism spent it. A Gaussian stage has an exact privacy
curve, an exponential mechanism is bounded-range, anything else is only known to be rho-zCDP.
Mechanisms state their event when they charge (``PrivacyLedger.charge(..., event=)``), so an
estimator's declared events can be checked against what actually ran. This module has no heavy
imports: every mechanism loads it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .accounting import _non_negative
from .errors import InvalidParameterError

__all__ = ["ApproxDPEvent", "ChoiceEvent", "Event", "GaussianEvent", "PureDPEvent", "ZCDPEvent",
           "zcdp_cost"]


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise InvalidParameterError(f"count must be a positive integer, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class GaussianEvent:
    """Gaussian stages with total ``rho`` = sum Delta_i^2 / (2 sigma_i^2): exactly
    sqrt(2 rho)-GDP (Dong-Roth-Su 2019, Cor. 3.3). Several of these merge into one, exactly."""

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", _non_negative("rho of a Gaussian event", self.rho))


@dataclass(frozen=True)
class PureDPEvent:
    """``count`` mechanisms, each epsilon-DP (worst case: binary randomized response).

    ``bounded_range=True`` declares each one epsilon-bounded-range, as the exponential mechanism
    is (Durfee-Rogers 2019): its PLD is then the (smaller) bounded-range envelope, and it is
    also (epsilon^2 / 8)-zCDP (Cesar-Rogers 2021); the composition uses whichever accounting
    gives the smaller bound.
    """

    epsilon: float
    count: int = 1
    bounded_range: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "epsilon", _non_negative("epsilon of a pure-DP event", self.epsilon)
        )
        object.__setattr__(self, "count", _count(self.count))
        if not isinstance(self.bounded_range, bool):
            raise InvalidParameterError(
                f"bounded_range must be True or False, got {self.bounded_range!r}"
            )


@dataclass(frozen=True)
class ApproxDPEvent:
    """``count`` black-box mechanisms, each (epsilon, delta)-DP (worst case: the four-outcome
    pair of Kairouz-Oh-Viswanath 2015)."""

    epsilon: float
    delta: float
    count: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "epsilon", _non_negative("epsilon of an approximate-DP event", self.epsilon)
        )
        delta = _non_negative("delta of an approximate-DP event", self.delta)
        if delta >= 1.0:
            raise InvalidParameterError(
                f"delta of an approximate-DP event must be in [0, 1), got {delta:g}"
            )
        object.__setattr__(self, "delta", delta)
        object.__setattr__(self, "count", _count(self.count))


@dataclass(frozen=True)
class ZCDPEvent:
    """A rho-zCDP mechanism that is not Gaussian (no exact PLD): composed apart from the PLD part
    through the CKS conversion, then added by basic composition (see the module docstring)."""

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", _non_negative("rho of a zCDP event", self.rho))


@dataclass(frozen=True)
class ChoiceEvent:
    """A continuation chosen among ``options`` (each a tuple of events) by earlier stages'
    outputs: ``method="auto"`` runs one of its candidates, chosen by its private medians.

    Adaptive composition needs one worst case that holds whichever option runs. Option i has a
    privacy profile delta_i(x) (its PLD's); the pointwise maximum max_i delta_i(x) is the profile
    of the pair whose trade-off function is the convex hull of the options' minimum
    (Dong-Roth-Su 2019, Prop. 2.12), and that pair dominates every option, so the choice is
    accounted as that one pair (``pld``: its PLD by pessimistic connect-the-dots) and composes
    with the stages that chose it (Zhu-Dong-Wang 2022, Thm. 10: adaptive composition of
    dominating pairs). In zCDP it costs the largest option's rho. Note that composing each
    option with the choosing stages and taking the maximum afterwards would *not* be valid."""

    options: tuple[tuple[Event, ...], ...]

    def __post_init__(self) -> None:
        options = tuple(tuple(option) for option in self.options)
        if not options or any(not option for option in options):
            raise InvalidParameterError("a choice needs at least one option, each of at least "
                                        "one event")
        for option in options:
            for event in option:
                if not isinstance(event, _EVENT_TYPES):
                    raise InvalidParameterError(
                        f"a choice's options hold events, not {type(event).__name__}")
        object.__setattr__(self, "options", options)


Event = GaussianEvent | PureDPEvent | ApproxDPEvent | ZCDPEvent | ChoiceEvent
_EVENT_TYPES = (GaussianEvent, PureDPEvent, ApproxDPEvent, ZCDPEvent, ChoiceEvent)


def zcdp_cost(event: Event) -> float | None:
    """The rho-zCDP an event spends, or None when it implies none (approximate DP).

    Gaussian and zCDP events: their rho. Pure DP: epsilon^2 / 8 per bounded-range mechanism
    (Cesar-Rogers 2021), epsilon^2 / 2 per generic one (Bun-Steinke 2016, Prop. 1.4), times the
    count. A choice: its costliest option's total (a continuation chosen adaptively among
    rho_i-zCDP ones is max rho_i-zCDP)."""
    if isinstance(event, ChoiceEvent):
        totals = [[zcdp_cost(e) for e in option] for option in event.options]
        if any(cost is None for costs in totals for cost in costs):
            return None
        return max(math.fsum(costs) for costs in totals)  # type: ignore[arg-type]
    if isinstance(event, GaussianEvent | ZCDPEvent):
        return event.rho
    if isinstance(event, PureDPEvent):
        per = event.epsilon**2 / (8.0 if event.bounded_range else 2.0)
        return event.count * per
    return None


def same_events(a: Event, b: Event) -> bool:
    """Whether two events are the same mechanism at the same cost (up to rounding)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, ChoiceEvent) and isinstance(b, ChoiceEvent):
        return len(a.options) == len(b.options) and all(
            len(x) == len(y) and all(map(same_events, x, y))
            for x, y in zip(a.options, b.options, strict=True))
    if isinstance(a, PureDPEvent) and isinstance(b, PureDPEvent):
        return (a.count == b.count and a.bounded_range == b.bounded_range
                and math.isclose(a.epsilon, b.epsilon, rel_tol=1e-9))
    if isinstance(a, ApproxDPEvent) and isinstance(b, ApproxDPEvent):
        return (a.count == b.count and math.isclose(a.epsilon, b.epsilon, rel_tol=1e-9)
                and math.isclose(a.delta, b.delta, rel_tol=1e-9))
    assert isinstance(a, GaussianEvent | ZCDPEvent) and isinstance(b, GaussianEvent | ZCDPEvent)
    return math.isclose(a.rho, b.rho, rel_tol=1e-9, abs_tol=1e-300)


def equivalent_events(a: list[Event] | tuple[Event, ...],
                      b: list[Event] | tuple[Event, ...]) -> bool:
    """Whether two releases compose alike for an accountant: the same total rho of Gaussian
    stages (their split does not matter: Gaussian composition is Gaussian), of zCDP stages, the
    same pure- and approximate-DP mechanisms with their counts, and choices whose options are
    equivalent in order (up to rounding)."""
    def close(x: float, y: float) -> bool:
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-300)

    def total(events: list[Event] | tuple[Event, ...], kind: type) -> float:
        return math.fsum(e.rho for e in events
                         if isinstance(e, GaussianEvent | ZCDPEvent) and isinstance(e, kind))

    def mechanisms(events: list[Event] | tuple[Event, ...]) -> list[tuple]:
        counts: dict[tuple, int] = {}
        for e in events:
            if isinstance(e, PureDPEvent):
                key: tuple = ("pure", round(e.epsilon, 12), e.bounded_range)
            elif isinstance(e, ApproxDPEvent):
                key = ("approx", round(e.epsilon, 12), round(e.delta, 15))
            else:
                continue
            counts[key] = counts.get(key, 0) + e.count
        return sorted(counts.items())

    choices_a = [e for e in a if isinstance(e, ChoiceEvent)]
    choices_b = [e for e in b if isinstance(e, ChoiceEvent)]
    return (close(total(a, GaussianEvent), total(b, GaussianEvent))
            and close(total(a, ZCDPEvent), total(b, ZCDPEvent))
            and mechanisms(a) == mechanisms(b) and len(choices_a) == len(choices_b)
            and all(len(x.options) == len(y.options)
                    and all(map(equivalent_events, x.options, y.options))
                    for x, y in zip(choices_a, choices_b, strict=True)))


def gaussian_event(rho: float, secure: bool = False) -> Event:
    """The event of Gaussian stages of total ``rho``: exact (``GaussianEvent``) for continuous
    Gaussian noise; the discrete Gaussian of ``secure=True`` is rho-zCDP but its privacy curve
    is not the continuous one's (``ZCDPEvent``)."""
    return ZCDPEvent(rho) if secure else GaussianEvent(rho)


def exponential_event(rho_each: float, count: int = 1) -> PureDPEvent:
    """The event of ``count`` exponential mechanisms of rho_each-zCDP each: each is
    eps-bounded-range with eps = sqrt(8 rho_each) (Durfee-Rogers 2019; Cesar-Rogers 2021)."""
    return PureDPEvent(math.sqrt(8.0 * rho_each), count=count, bounded_range=True)
