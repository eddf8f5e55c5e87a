"""The exact privacy loss of one estimator run on one neighbouring pair, by replay.

An estimator is an adaptive composition of noise draws: Gaussian (``gaussian_noise``, and
``symmetric_gaussian_mechanism`` for matrices) and exponential-mechanism quantiles
(``exponential_draws``, and ``bucket_draw`` for those in log buckets). Run it on D, recording
every draw's input and output. Run it on the neighbour D' with every draw replaced by the output
recorded on D (and the generator put back where it stood after that draw), so that both runs
see the same released history. Then, draw by
draw, the inputs differ only through the data, and each draw's privacy cost on this pair is
exact:

- a Gaussian draw of noise std sigma on values v and v': ||v - v'||^2 / (2 sigma^2) zCDP
  (Bun-Steinke 2016, Prop. 1.6; equality: the Renyi divergence of two Gaussians);
- an exponential-mechanism quantile of one column claimed eps-DP for rank changes of at most
  ``sensitivity``: if the ranks of D' move by at most u, it is (eps u / sensitivity)-DP, hence
  (eps u / sensitivity)^2 / 8 zCDP (the bucketed one: sensitivity 1, its utility a function of
  counts below public edges, which move by at most the ranks' shift).

Adaptive composition adds them: the pair's realised rho, which must not exceed the budget the
estimator was given, whatever the pair. And with every draw replayed, everything the
estimator returns (the mean and every diagnostic) must be identical on D and D': anything that
differs was computed from the data without passing through a noise draw, a leak.

This catches what sampling audits can only see with millions of runs: a stated sensitivity
that a neighbouring pair exceeds by a little, a stage that reads data twice, a public value
(a domain, a step count) that moves with the data. It cannot see a wrong noise *distribution*
(the mechanism-level sampling audits cover those) and does not cover smooth-sensitivity noise
(the trimmed mean), whose cost is not a function of one pair's draw inputs.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import dpmean
from dpmean.estimators import private_bounds  # noqa: F401 (loaded before any patch: below)
from dpmean.events import gaussian_event
from dpmean.mechanisms import exponential, gaussian, matrix, quantiles
from dpmean.registry import ESTIMATORS

# Every estimator module loaded now: the registry imports them on first use, and a module first
# imported while the draws are patched would bind the patched functions for good (monkeypatch
# restores only the modules it patched), leaking one replay's tape into the next test. (The
# private box's module is imported by a release without bounds only: imported above.)
dict(ESTIMATORS.items())


@dataclass
class _Draw:
    kind: str
    inputs: tuple
    output: Any
    state_after: dict


@dataclass
class Replay:
    """One pair's replay: the realised rho and what differed."""

    rho: float = 0.0
    draws: int = 0
    costs: list[tuple[str, float]] = field(default_factory=list)


def _patch_everywhere(monkeypatch, original, replacement) -> None:
    # Modules import mechanisms by name (``from .gaussian import gaussian_noise``): replace
    # every module-level reference to the function, not only its home module's.
    for name, module in list(sys.modules.items()):
        if not name.startswith("dpmean") or module is None:
            continue
        for attribute, value in list(vars(module).items()):
            if value is original:
                monkeypatch.setattr(module, attribute, replacement)


def _rank_shift(a: np.ndarray, b: np.ndarray) -> float:
    """max over t of |#{a < t} - #{b < t}| and of the <= counts: how far any rank moves."""
    a, b = np.sort(a), np.sort(b)
    points = np.union1d(a, b)
    shift = 0
    for side in ("left", "right"):
        shift = max(shift, int(np.max(np.abs(np.searchsorted(a, points, side=side)
                                              - np.searchsorted(b, points, side=side)))))
    return float(shift)


def realised_rho(monkeypatch, method: str, x: np.ndarray, x_prime: np.ndarray, *, rho: float,
                 seed: int, **options: Any) -> Replay:
    """Run ``method`` on ``x`` then, replaying every draw, on ``x_prime``; return the realised
    rho of the pair (and assert that both runs returned the same release and diagnostics)."""
    originals = {"gaussian": gaussian.gaussian_noise,
                 "matrix": matrix.symmetric_gaussian_mechanism,
                 "exponential": exponential.exponential_draws,
                 "bucket": exponential.bucket_draw,
                 "counts": quantiles._noisy_counts}
    tape: list[_Draw] = []
    replay = Replay()
    phase = {"recording": True, "position": 0}

    def draw(kind, inputs, rng, run, charge=lambda: None):
        if phase["recording"]:
            output = run()
            tape.append(_Draw(kind, inputs, output, rng.bit_generator.state))
            return output
        recorded = tape[phase["position"]]
        phase["position"] += 1
        assert recorded.kind == kind, "the sequence of draws depends on the data"
        cost = _cost(kind, recorded.inputs, inputs)
        replay.rho += cost
        replay.draws += 1
        replay.costs.append((kind, cost))
        charge()  # a draw that charges its own stage still does, replayed
        rng.bit_generator.state = recorded.state_after
        return np.copy(recorded.output)

    def gaussian_noise(value, sensitivity, rho, rng, *, secure=False):
        inputs = (np.array(value, dtype=np.float64), float(sensitivity), float(rho), secure)
        return draw("gaussian", inputs, rng, lambda: originals["gaussian"](
            value, sensitivity, rho, rng, secure=secure))

    def symmetric_gaussian_mechanism(value, sensitivity, rho, rng, *, ledger, stage,
                                     secure=False):
        upper = np.triu(np.asarray(value, dtype=np.float64))
        inputs = (upper, float(sensitivity), float(rho), secure)
        return draw("gaussian", inputs, rng, lambda: originals["matrix"](
            value, sensitivity, rho, rng, ledger=ledger, stage=stage, secure=secure),
            charge=lambda: ledger.charge(stage, rho, gaussian_event(rho, secure)))

    def exponential_draws(values, lo, hi, q, *, rho, rng, sensitivity=1.0, presorted=False):
        # The cost compares ranks, so the columns' order (sorted by the engine or not) is moot.
        columns = np.clip(np.asarray(values, dtype=np.float64), lo, hi)
        inputs = (columns, np.array(lo), np.array(hi), float(q), float(rho), float(sensitivity))
        return draw("exponential", inputs, rng, lambda: originals["exponential"](
            values, lo, hi, q, rho=rho, rng=rng, sensitivity=sensitivity, presorted=presorted))

    def bucket_draw(values, q, edges, *, rho, rng, middle=False):
        # Where in its bucket the draw is released (top or middle) is public post-processing.
        inputs = (np.asarray(values, dtype=np.float64).ravel(), float(q), np.array(edges),
                  float(rho), bool(middle))
        return draw("bucket", inputs, rng, lambda: originals["bucket"](
            values, q, edges, rho=rho, rng=rng, middle=middle))

    def noisy_counts(count_le, thresholds, steps, rho_per_search, rng, secure,
                     sensitivity=1.0):
        # Secure searches add the discrete Gaussian to their counts themselves (not through
        # gaussian_noise): a Gaussian draw of rho_per_search / steps a count, replayed alike.
        if not secure:
            return originals["counts"](count_le, thresholds, steps, rho_per_search, rng,
                                       secure, sensitivity)
        counts = count_le(thresholds)
        inputs = (np.array(counts, dtype=np.float64), float(sensitivity),
                  float(rho_per_search / steps), True)
        return draw("gaussian", inputs, rng, lambda: originals["counts"](
            lambda _: counts, thresholds, steps, rho_per_search, rng, secure, sensitivity))

    for key, replacement in (("gaussian", gaussian_noise),
                             ("matrix", symmetric_gaussian_mechanism),
                             ("exponential", exponential_draws),
                             ("bucket", bucket_draw),
                             ("counts", noisy_counts)):
        _patch_everywhere(monkeypatch, originals[key], replacement)

    # Warnings are outputs too (their text may carry private values): the same on both sides.
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        first = dpmean.mean(x, rho=rho, method=method, random_state=seed, **options)
        first_said = [str(w.message) for w in said]
        said.clear()
        phase["recording"] = False
        second = dpmean.mean(x_prime, rho=rho, method=method, random_state=seed, **options)
    assert first_said == [str(w.message) for w in said], "a warning moved with the data"
    assert phase["position"] == len(tape), "the number of draws depends on the data"
    np.testing.assert_array_equal(first.mean, second.mean,
                                  err_msg="the release moved with the data beyond its draws")
    _assert_same(first.diagnostics, second.diagnostics)
    assert first.ledger == second.ledger
    # The rest of the result is output too (a review found these unchecked).
    assert (first.fallback, first.columns, first.n, first.d) == (
        second.fallback, second.columns, second.n, second.d), "the result's fields moved"
    return replay


def _cost(kind: str, recorded: tuple, now: tuple) -> float:
    if kind == "gaussian":
        value, sensitivity, rho, secure = recorded
        value_now, sensitivity_now, rho_now, secure_now = now
        assert (sensitivity, rho, secure) == (sensitivity_now, rho_now, secure_now), \
            "a Gaussian draw's public parameters moved with the data"
        assert value.shape == value_now.shape, "a Gaussian draw's shape moved with the data"
        moved = float(np.sum((value - value_now) ** 2))
        if sensitivity == 0:
            assert moved == 0.0, "a draw of stated sensitivity 0 moved"
            return 0.0
        return rho * moved / sensitivity**2  # ||v - v'||^2 / (2 sigma^2), sigma^2 = D^2/(2 rho)
    if kind == "bucket":
        # The utility is a function of the counts #{v < t} at the public edges: the most any
        # count moves on this pair bounds how far it moves (the quantile's own sensitivity 1).
        values, q, edges, rho, middle = recorded
        values_now, q_now, edges_now, rho_now, middle_now = now
        assert (q, rho, middle) == (q_now, rho_now, middle_now)
        assert np.array_equal(edges, edges_now), "a bucketed quantile's buckets moved with the data"
        assert values.shape == values_now.shape
        return rho * _rank_shift(values, values_now) ** 2
    columns, lo, hi, q, rho, sensitivity = recorded
    columns_now, lo_now, hi_now, q_now, rho_now, sensitivity_now = now
    assert (q, rho, sensitivity) == (q_now, rho_now, sensitivity_now)
    assert np.array_equal(lo, lo_now) and np.array_equal(hi, hi_now), \
        "an exponential mechanism's domain moved with the data"
    assert columns.shape == columns_now.shape
    shifts = np.array([_rank_shift(columns[:, j], columns_now[:, j])
                       for j in range(columns.shape[1])])
    return float(np.sum(rho * (shifts / sensitivity) ** 2))


def _assert_same(a: Any, b: Any, where: str = "diagnostics") -> None:
    if isinstance(a, Mapping):
        assert isinstance(b, Mapping) and a.keys() == b.keys(), f"{where}: keys differ"
        for key in a:
            _assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: lengths differ"
        for i, (u, v) in enumerate(zip(a, b, strict=True)):
            _assert_same(u, v, f"{where}[{i}]")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=f"{where} moved with the data")
    else:
        assert a == b or (a != a and b != b), f"{where} moved with the data: {a!r} vs {b!r}"
