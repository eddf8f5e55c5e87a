"""The clip profile (``interval_share``): its budget, its sensitivity, and the staircase bound on
the clipping bias it buys (docs/privacy.md, "A clip profile")."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dpmean
from dpmean.engines import InMemoryEngine
from dpmean.errors import InvalidParameterError
from dpmean.estimators.auto import AUTO_INTERVAL_SHARE
from dpmean.estimators.clipped import (
    FINE_SHELLS,
    INTERVAL_SHARE,
    RESIDUAL_SHARE,
    clip_profile_edges,
)
from dpmean.intervals import ClipBias, error_model
from dpmean.transforms import IDENTITY

N, D = 2000, 8
BOX = (-5.0, 5.0)


def rows(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.5, 1.0, size=(N, D))


@pytest.mark.parametrize("method", ["cm", "cm-fixed", "iome"])
def test_profile_takes_its_share_first_and_the_ledger_adds_up(method):
    plain = dpmean.mean(rows(0), rho=1.0, method=method, bounds=BOX, random_state=0,
                        interval_share=0)
    profiled = dpmean.mean(rows(0), rho=1.0, method=method, bounds=BOX, random_state=0,
                           interval_share=0.05)
    # The interval's share: RESIDUAL_SHARE of it to the clip residual, the rest the profile.
    assert profiled.ledger["clip profile"] == pytest.approx(0.05 * (1 - RESIDUAL_SHARE))
    assert profiled.ledger["clip residual"] == pytest.approx(0.05 * RESIDUAL_SHARE)
    assert profiled.spent == pytest.approx(1.0)
    for stage, amount in plain.ledger.items():  # the rest split as before, on 0.95 of rho
        assert profiled.ledger[stage] == pytest.approx(0.95 * amount, rel=1e-12) or (
            method == "iome" and stage == "threshold")  # iome's share is sized on its own rho
    assert "clip_profile" not in plain.diagnostics and "clip profile" not in plain.ledger
    edges = profiled.diagnostics["clip_profile_edges"]
    assert edges[0] == profiled.diagnostics["threshold"]
    assert profiled.diagnostics["clip_profile"].shape == edges.shape


@pytest.mark.parametrize("method, options", [
    ("cm", {}), ("cm-fixed", {}), ("iome", {}), ("plan", {}),
    ("plan", {"quantile": "binary-search"}), ("plan-noscale", {})])
def test_every_clipping_estimator_buys_the_interval_stages_by_default(method, options):
    result = dpmean.mean(rows(1), rho=1.0, method=method, bounds=BOX, random_state=0,
                         **options)
    assert INTERVAL_SHARE == 0.01
    assert result.ledger["clip profile"] == pytest.approx(INTERVAL_SHARE * (1 - RESIDUAL_SHARE))
    assert result.ledger["clip residual"] == pytest.approx(INTERVAL_SHARE * RESIDUAL_SHARE)
    assert result.spent == pytest.approx(1.0)


def test_coinpress_buys_an_interval_with_a_profile_and_needs_bounds():
    x = rows(4)
    plain = dpmean.mean(x, rho=1.0, method="coinpress", bounds=BOX, radius=5.0, random_state=0,
                        interval_share=0)
    with pytest.warns(dpmean.BoxIntervalWarning, match="interval_share"):
        lo, hi = plain.confidence_interval(0.9)
    assert np.all(hi - lo == BOX[1] - BOX[0])
    # With bounds the default buys a 1% profile (a user trial: the box was the interval).
    default = dpmean.mean(x, rho=1.0, method="coinpress", bounds=BOX, radius=5.0,
                          random_state=0)
    assert default.ledger["clip profile"] == pytest.approx(0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpmean.BoxIntervalWarning)
        lo, hi = default.confidence_interval(0.9)
    assert np.all(hi - lo < 0.2 * (BOX[1] - BOX[0]))
    # Without bounds there is nothing to end the profile's shells: no share, no error.
    assert "clip profile" not in dpmean.mean(x, rho=1.0, method="coinpress", radius=5.0,
                                             random_state=0).ledger
    profiled = dpmean.mean(x, rho=1.0, method="coinpress", bounds=BOX, radius=5.0,
                           random_state=0, interval_share=0.05)
    assert profiled.ledger["clip profile"] == pytest.approx(0.05)
    assert profiled.spent == pytest.approx(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpmean.BoxIntervalWarning)
        lo, hi = profiled.confidence_interval(0.9)
    assert np.all(hi - lo < 0.1 * (BOX[1] - BOX[0]))
    # The noise part: the last step's isotropic noise in data units (sigma = 1 here).
    assert np.allclose(profiled.diagnostics["noise_std"],
                       profiled.diagnostics["step_noise_std"][-1])
    with pytest.raises(InvalidParameterError, match="needs bounds"):
        dpmean.mean(x, rho=1.0, method="coinpress", radius=5.0, interval_share=0.05)


def test_auto_passes_the_share_to_the_candidate_it_runs():
    """auto gives every clipping candidate a 1% profile by default (AUTO_INTERVAL_SHARE),
    which is also their own default (None: the same release); 0 buys none and a wider
    interval."""
    x = rows(5)
    plain = dpmean.mean(x, rho=1.0, method="auto", bounds=BOX, random_state=0,
                        interval_share=0)
    profiled = dpmean.mean(x, rho=1.0, method="auto", bounds=BOX, random_state=0)
    own = dpmean.mean(x, rho=1.0, method="auto", bounds=BOX, random_state=0,
                      interval_share=None)
    np.testing.assert_array_equal(own.mean, profiled.mean)
    assert own.ledger == profiled.ledger
    assert plain.diagnostics["chosen"] == profiled.diagnostics["chosen"] == "iome"
    inner = profiled.diagnostics["release_ledger"]
    assert inner["clip profile"] + inner["clip residual"] == pytest.approx(
        AUTO_INTERVAL_SHARE * profiled.ledger["release"])
    assert "clip profile" not in plain.diagnostics["release_ledger"]
    assert profiled.spent == pytest.approx(1.0)
    width = {}
    for name, result in (("plain", plain), ("profiled", profiled)):
        lo, hi = result.confidence_interval(0.9)
        width[name] = float(np.mean(hi - lo))
    assert width["profiled"] < width["plain"] / 1.5, width


@pytest.mark.parametrize("share", [-0.1, 1.0, float("nan"), "half"])
def test_profile_share_is_validated(share):
    for method in ("iome", "plan", "auto"):
        with pytest.raises(InvalidParameterError, match="interval_share"):
            dpmean.mean(rows(0), rho=1.0, method=method, bounds=BOX, interval_share=share)


def test_edges_are_fine_near_the_radius_then_double_below_the_bound():
    edges = clip_profile_edges(2.0, 20.0, doublings=None)
    assert edges[0] == 2.0 and np.all(np.diff(edges) > 0) and edges[-1] < 20.0
    assert np.allclose(edges[1:FINE_SHELLS + 1] / 2.0 - 1.0, 2.0 ** -np.arange(6, 0, -1))
    assert np.allclose(edges[FINE_SHELLS + 1:], [4.0, 8.0, 16.0])
    # By default none of the doublings: the last shell holds every row above 1.5 C.
    np.testing.assert_array_equal(clip_profile_edges(2.0, 20.0), edges[:FINE_SHELLS + 1])
    np.testing.assert_array_equal(clip_profile_edges(2.0, 20.0, 1), edges[:FINE_SHELLS + 2])
    assert clip_profile_edges(2.0, 3.5, None).tolist() == clip_profile_edges(2.0, 3.5).tolist()
    assert clip_profile_edges(3.0, 3.0).tolist() == [3.0]
    assert clip_profile_edges(0.0, 3.0).tolist() == [0.0]


@pytest.mark.parametrize("method, doublings", [("cm", 0), ("iome", 0), ("plan", 0),
                                               ("cm-fixed", 1)])
def test_each_estimator_releases_the_profile_on_its_edges(method, doublings):
    """The adaptive radii leave few rows beyond 1.5 C and release no shell beyond it; the
    median radius of cm-fixed clips half the rows and keeps the shell at 2 C."""
    result = dpmean.mean(rows(2), rho=1.0, method=method, bounds=BOX, random_state=0)
    radius, edges = result.diagnostics["threshold"], result.diagnostics["clip_profile_edges"]
    bound = result.diagnostics.get("view_norm_bound", result.diagnostics["norm_bound"])
    np.testing.assert_array_equal(edges, clip_profile_edges(radius, bound, doublings))
    assert len(edges) == FINE_SHELLS + 1 + doublings


def exact_shells(x: np.ndarray, radius: float, bound: float) -> np.ndarray:
    """What the profile noises, from the engine (the same call the release makes)."""
    from dpmean.estimators import clipped

    engine = InMemoryEngine(x, np.full(D, BOX[0]), np.full(D, BOX[1]))
    captured = {}

    def capture(value, sensitivity, rho, rng, **options):
        captured["value"], captured["sensitivity"] = np.array(value), sensitivity
        return value

    original = clipped.gaussian_mechanism
    clipped.gaussian_mechanism = capture
    try:
        clipped.clip_profile(engine, IDENTITY, radius, bound, rho=0.1, ledger=None,
                             rng=np.random.default_rng(0))
    finally:
        clipped.gaussian_mechanism = original
    return captured["value"], captured["sensitivity"]


def test_shell_counts_move_by_at_most_their_stated_sensitivity():
    """Replace one row by rows inside the radius, in each shell and at the box's corner: the
    shell counts move by at most sqrt(2) in l2 (one count down, one up), the sensitivity the
    mechanism is given."""
    x = rows(1)
    radius, bound = 3.0, float(np.linalg.norm(np.full(D, 5.0)))
    base, sensitivity = exact_shells(x, radius, bound)
    assert sensitivity == pytest.approx(np.sqrt(2.0))
    assert base.sum() == np.sum(np.linalg.norm(x, axis=1) > radius)
    edges = clip_profile_edges(radius, bound)
    worst = 0.0
    for target in [0.0, *(edges * 1.0001), bound]:
        for source in (0, int(np.argmax(np.linalg.norm(x, axis=1)))):
            y = x.copy()
            y[source] = 0.0
            y[source, 0] = min(target, 5.0)
            if target > 5.0:
                y[source] = np.full(D, 5.0) * target / bound
            moved, _ = exact_shells(y, radius, bound)
            worst = max(worst, float(np.linalg.norm(moved - base)))
    assert worst == pytest.approx(np.sqrt(2.0))  # reached, never exceeded


def test_staircase_bound_by_hand():
    """Rows above 1 at most 10, above 2 at most 4, above 4 none but through the bound 8: with
    M(v) = (v - C) (factor 1, a reach that never binds) the view move is
    (10 (2 - 1) + 4 (8 - 2)) / n."""

    class Steps:
        n, norm_bound, radius = 100, 8.0, 1.0

        def clipped(self, beta):
            return [(2.0, 4.0), (1.0, 10.0)]

    per, l2 = ClipBias(Steps(), reach=np.array([1e9]), factor=np.array([1.0])).bounds(0.05)
    assert per[0] == pytest.approx((10 * 1.0 + 4 * 6.0) / 100)
    assert l2 == pytest.approx(per[0])

    class Increasing(Steps):
        def clipped(self, beta):  # a count above 2 larger than the one above 1 cannot hold
            return [(1.0, 3.0), (2.0, 50.0)]

    per, _ = ClipBias(Increasing(), reach=np.array([1e9]), factor=np.array([1.0])).bounds(0.05)
    assert per[0] == pytest.approx(3.0 * 7.0 / 100)


@pytest.mark.parametrize("method", ["cm", "iome"])
def test_profile_narrows_the_interval(method):
    """The default bound puts every row the search may have clipped at the farthest corner;
    the profile locates them (measured 2x for cm, 6x for iome: docs/results.md). Same data,
    same seeds."""
    widths = {}
    for share in (0.0, 0.05):
        total = 0.0
        for seed in range(5):
            result = dpmean.mean(rows(2), rho=1.0, method=method, bounds=BOX,
                                 random_state=seed, interval_share=share)
            with warnings.catch_warnings():
                warnings.simplefilter("error", dpmean.BoxIntervalWarning)
                lo, hi = result.confidence_interval(0.9)
            total += float(np.mean(hi - lo))
        widths[share] = total
    assert widths[0.05] < widths[0.0] / 1.5, widths


def test_profile_without_its_search_still_bounds():
    """The combined bound keeps the search's rank guarantee and the profile: each half of
    beta; the model exposes both."""
    result = dpmean.mean(rows(3), rho=1.0, method="iome", bounds=BOX, random_state=0,
                         interval_share=0.05)
    clipping = error_model(result).bias.clipping
    steps = clipping.clipped(0.05)
    assert steps == sorted(steps) and len(steps) == len(result.diagnostics["clip_profile"]) + 1
