"""The experiments framework: every registered spec runs in a tiny configuration, the runner is
reproducible and resumes, the CLI's reproduce command follows the error conventions."""

from __future__ import annotations

import csv
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from dpmean.cli import main
from dpmean.experiments import SPECS, local
from dpmean.experiments.data import (
    constant_correlation,
    index_rows,
    random_correlations,
    sigma_kappa,
    skewed_binary,
    zipf_variances,
)
from dpmean.experiments.report import trimmed_mean
from dpmean.experiments.runner import reproduce, run


def _tiny(setting: dict) -> dict:
    # small n keeps every estimator's release well under a second; keys the data ignore are
    # harmless (MNIST, baskets and Bun-Steinke have no "n" or keep their own)
    tiny = dict(setting)
    if "n" in tiny and "datasets" not in tiny and "fractions" not in tiny:
        tiny["n"] = min(tiny["n"], 600)
    if "datasets" in tiny:
        tiny["datasets"] = 8
    if "rows" in tiny or "rho" in tiny and "digit" not in tiny and "n" not in tiny:
        tiny["rows"] = 800
    return tiny


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_spec_runs_tiny(name):
    spec = SPECS[name].quick_version()
    setting = _tiny(spec.settings[0])
    rows = replace(spec, settings=(setting,)).run_trial(setting, np.random.default_rng(0))
    labels = {row["method"] for row in rows}
    assert labels >= {m.label for m in spec.methods}
    values = np.array([row["value"] for row in rows])
    assert np.isfinite(values).any()
    if spec.x not in setting:  # the swept value comes from the trial (Bun-Steinke)
        assert all(spec.x in row for row in rows)


def test_full_grids_are_well_formed():
    for spec in SPECS.values():
        assert spec.trials >= 20 and spec.settings
        assert all(spec.x in s for s in spec.settings) or spec.x in spec.extra
        assert spec.panel is None or all(spec.panel in s for s in spec.settings) \
            or spec.panel in spec.extra


def _rows(path):
    with path.open(newline="") as f:
        return sorted(tuple(r.values()) for r in csv.DictReader(f))


def test_runner_is_reproducible_across_jobs_and_resumes(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    serial = run("bs-fig1", one, trials=6, quick=True, progress=False)
    # a first run of 4 trials, resumed to 6 in 2 processes: the same rows, none twice
    run("bs-fig1", two, trials=4, quick=True, jobs=2, progress=False)
    with (two / serial.name).open("a") as f:
        f.write("1001,torn")  # an interrupted write: ignored on resume
    resumed = run("bs-fig1", two, trials=6, quick=True, jobs=2, progress=False)
    assert _rows(resumed) == _rows(serial)


def test_reproduce_writes_csv_png_and_summary(tmp_path):
    csv_path, png, md = reproduce("bs-fig1", tmp_path, trials=30, quick=True, progress=False)
    assert png.stat().st_size > 1000
    text = md.read_text()
    assert "NON-PRIVATE" in text and "| gaussian | 0 |" in text


def test_trimmed_mean_matches_scipy():
    values = np.random.default_rng(3).standard_normal(100)
    assert trimmed_mean(values) == pytest.approx(stats.trim_mean(values, 0.1), rel=1e-12)


def test_generators():
    rng = np.random.default_rng(1)
    cov = sigma_kappa(6, 10.0, rng)
    eig = np.linalg.eigvalsh(cov)
    # eigenvalues are the U[1, kappa] draws, up to rounding
    assert eig.min() >= 1 - 1e-9 and eig.max() <= 10 + 1e-9
    np.testing.assert_allclose(zipf_variances(4, 2.0), [16, 4, 16 / 9, 1])
    data = skewed_binary(50, 8, 0.25, rng)
    np.testing.assert_array_equal(data.truth, [0.5, 0.5] + [0.01] * 6)
    assert set(np.unique(data.x)) <= {0.0, 1.0}
    rows = index_rows(500, 3)
    assert rows.truth == pytest.approx(np.full(3, 250.5))


def test_cli_list_and_errors(capsys, tmp_path):
    assert main(["reproduce", "--list"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in SPECS)
    for argv, message in ((["reproduce", "nope"], "unknown experiment"),
                          (["reproduce"], "give an experiment"),
                          (["reproduce", "bs-fig1", "--trials", "0"], "--trials"),
                          (["reproduce", "bs-fig1", "--jobs", "0"], "--jobs")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("dpmean: error:") and message in err and err.count("\n") == 1
    afile = tmp_path / "file"
    afile.write_text("")
    assert main(["reproduce", "bs-fig1", "--out", str(afile)]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_cli_quick_run(capsys, tmp_path):
    assert main(["reproduce", "bs-fig1", "--quick", "--trials", "5", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("NON-PRIVATE") and "bs-fig1-quick.png" in out
    assert math.isfinite(float(next(csv.DictReader((tmp_path / "bs-fig1-quick.csv").open()))
                               ["value"]))


def test_correlated_generators():
    # PLAN Appendix E. Standard errors for n = 20000: a sample variance of a unit-variance
    # Gaussian has sd sqrt(2/n) = 0.01, a sample correlation about (1 - c^2)/sqrt(n) < 0.007;
    # we allow 5 of them.
    rng = np.random.default_rng(5)
    n = 20_000
    a = random_correlations(n, 6, np.zeros(6), rng)
    np.testing.assert_allclose(a.x.var(axis=0), 1.0, atol=0.05)
    assert np.abs(np.corrcoef(a.x.T)[np.triu_indices(6, 1)]).max() > 0.05  # correlated
    variances = zipf_variances(4, 2.0)
    c = constant_correlation(n, np.full(4, 10.0), variances, 0.5, rng)
    np.testing.assert_allclose(c.x.var(axis=0) / variances, 1.0, atol=0.05)
    np.testing.assert_allclose(np.corrcoef(c.x.T)[np.triu_indices(4, 1)], 0.5, atol=0.035)
    assert c.truth == pytest.approx(np.full(4, 10.0))


def test_local_figures_share_the_benchmark_settings():
    # Figs. 10-12 and benchmarks/bench_protocols.py read the same module
    assert [s["d"] for s in local.settings(10)] == [s["d"] for s in SPECS["iome-fig10"].settings]
    setting = local.settings(12, n=50)[0]
    data = local.data(setting, np.random.default_rng(0))
    assert np.linalg.norm(data.truth) == pytest.approx(0.9 * local.radius(setting))
    assert local.box(setting)[1] == pytest.approx(local.radius(setting) + 10)


def test_bun_steinke_epsilons_share_their_datasets():
    # one chunk serves both epsilons: the same non-private trimming line, and a smaller epsilon
    # never gives a smaller excess (every noise's variance factor grows as epsilon falls)
    spec = SPECS["bs-fig2-4"]
    setting = {"n": 201, "datasets": 40, "ms": (20, 50)}
    rows = spec.run_trial(setting, np.random.default_rng(0))
    line = {(r["case"], r["method"], r["m"]): r["value"] for r in rows}
    assert {r["case"] for r in rows} == {"n=201, eps=1", "n=201, eps=0.2"}
    for m in (20, 50):
        assert line[("n=201, eps=1", "trim non-priv", m)] == \
            line[("n=201, eps=0.2", "trim non-priv", m)]
        for noise in ("lln", "student-t", "global sens"):
            assert line[("n=201, eps=0.2", noise, m)] > line[("n=201, eps=1", noise, m)]


def test_quick_titles_state_the_settings_that_ran():
    # issue 18: iome-fig2 --quick titled its plot "n = 4000" while it ran n = 2000.
    from dpmean.experiments.runner import get_spec

    full, quick = get_spec("iome-fig2"), get_spec("iome-fig2", quick=True)
    assert "n = 4000" in full.title
    assert {s["n"] for s in quick.settings} == {2000}
    assert "n = 4000" not in quick.title.split(" [")[0] and "n = 2000" in quick.title
    # the trials are stated by the plot and summary, counted in the CSV (--trials overrides)
    assert "trials" not in quick.title and quick.paper_trials == 100
    assert "rho = 0.03, 0.3 (full run: 0.01, 0.03, 0.1, 0.3, 1)" in quick.title


@pytest.mark.parametrize("method", ["cm", "cm-fixed", "iome"])
def test_paper_figures_run_the_papers_clipped_means_without_the_interval_share(method):
    """The papers' clipped means spend the whole budget on the mean: a figure's curve is the
    release with interval_share=0, while the library's default buys the interval's stages."""
    from dpmean import mean
    from dpmean.experiments.data import Dataset
    from dpmean.experiments.spec import Method

    x = np.random.default_rng(0).normal(0.5, 1.0, size=(600, 4))
    data = Dataset(x, np.full(4, 0.5))
    curve = Method("curve", method, {"bounds": (-5.0, 5.0)}).run(
        {"rho": 1.0}, data, np.random.default_rng(3))
    paper = mean(x, rho=1.0, method=method, bounds=(-5.0, 5.0), interval_share=0,
                 random_state=np.random.default_rng(3))
    default = mean(x, rho=1.0, method=method, bounds=(-5.0, 5.0),
                   random_state=np.random.default_rng(3))
    np.testing.assert_array_equal(curve, paper.mean)
    assert "clip profile" not in paper.ledger and "clip profile" in default.ledger
    assert not np.array_equal(curve, default.mean)


def test_quick_titles_give_the_full_runs_rows_not_default():
    # user trial: plan-retail --quick said "rows = 5000 (full run: default)"
    from dpmean.experiments.data import BASKET_ROWS, baskets

    for name, rows in (("plan-retail", "88,162"), ("plan-kosarak-prefix", "36,682"),
                       ("ours-baskets", "36,682")):
        assert f"rows = 5000 (full run: all {rows})" in SPECS[name].quick_version().title
    assert not any("default" in spec.quick_version().title for spec in SPECS.values())
    for file, rows in BASKET_ROWS.items():
        assert baskets(file).shape[0] == rows


def _stats(methods, xs, trials=20, panel=""):
    return {(panel, m, x): {"centre": value, "sd": 0.1 * value, "median": value,
                            "trials": trials, "failed": 0}
            for m, value in methods.items() for x in xs}


def test_plot_title_states_the_trials_that_ran():
    # user trial: iome-fig2 --trials 20 gave no sign in the plot that it was not the paper's 100
    from dpmean.experiments.report import figure, summary

    spec = SPECS["iome-fig2"]
    stats = _stats({"IOME": 1.0, "CM": 2.0}, (0.03, 0.3))
    assert "trials per point: 20 (full run: 100)" in figure(spec, stats)._suptitle.get_text()
    assert "trials per point: 20 (full run: 100)" in summary(spec, stats, Path("a.csv"), None)
    full = _stats({"IOME": 1.0}, (0.03,), trials=100)
    assert "trials per point: 100\n" in figure(spec, full)._suptitle.get_text() + "\n"
    quick = SPECS["iome-fig2"].quick_version()
    assert "trials per point: 3 (full run: 100)" in figure(
        quick, _stats({"IOME": 1.0}, (0.03,), trials=3))._suptitle.get_text()


def test_legend_is_outside_the_panels_and_lists_only_drawn_series():
    # user trial: plan-retail's legend named the non-private mean, whose error 0 a log axis
    # cannot show, and iome-fig2's legend covered two curves
    from dpmean.experiments.report import figure

    spec = SPECS["plan-retail"].quick_version()
    fig = figure(spec, _stats({"PLAN": 9.0, "PLAN-noscale": 8.0, "non-private mean": 0.0},
                              (0.125, 1.0), trials=3))
    assert all(ax.get_legend() is None for ax in fig.axes)
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["PLAN", "PLAN-noscale"]
    assert "not drawn: non-private mean (0 at every point" in fig._suptitle.get_text()
    assert all(line.get_label() != "non-private mean" for line in fig.axes[0].get_lines())


def test_error_bars_at_one_x_are_dodged():
    # user trial: ours-plan-vs-iome --quick drew every method's error bar at the same d
    from dpmean.experiments.report import figure

    spec = SPECS["ours-plan-vs-iome"].quick_version()
    fig = figure(spec, _stats({"PLAN": 1.0, "IOME": 1.1, "non-private mean": 0.9}, (64,),
                              panel="isotropic"))
    xs = [line.get_xdata()[0] for line in fig.axes[0].get_lines() if len(line.get_xdata())]
    xs = sorted(set(xs))
    assert len(xs) == 3 and xs[0] < 64 < xs[-1] and xs[-1] / xs[0] < 1.2
