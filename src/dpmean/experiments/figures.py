"""The registry of reproducible figures: IOME section 6 (Figs. 1-5, 7-9), PLAN section 7
(Gaussian A-C, binary, baskets), Bun-Steinke section 4 (Figs. 1-4) and our side-by-side runs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import bun_steinke as bs
from .data import (
    Dataset,
    basket_data,
    gaussian,
    index_rows,
    mean_in_ball,
    mnist_digit,
    sigma_kappa,
    skewed_binary,
    zipf_variances,
)
from .spec import Method, Setting, Spec

# --------------------------------------------------------------------------------------------
# IOME section 6: n = 4000, rho = 1/2, R = 50 sqrt(d) (N(mu, I)) or 100 sqrt(d) (Sigma(kappa));
# sigma_min = 0.1 and sigma_max = R / sqrt(d) for every method; 10% trimmed mean of 100 trials.


def _radius(s: Setting) -> float:
    return s["R_per_sqrt_d"] * math.sqrt(s["d"])


def _box(s: Setting, data: Dataset) -> dict[str, Any]:
    # CM's public cube: the prior ball's coordinate range widened by 4 sigma_max (our choice;
    # IOME states only the ball)
    radius = _radius(s)
    half = radius + 4.0 * radius / math.sqrt(s["d"])
    return {"bounds": (-half, half)}


def _iome_gaussian(s: Setting, data: Dataset) -> dict[str, Any]:
    radius = _radius(s)
    return {"mean_radius": radius, "sigma_min": 0.1, "sigma_max": radius / math.sqrt(s["d"])}


def _mvm(t: int) -> Method:
    # CoinPress assumes a known bound Sigma <= sigma^2 I: 1 for N(mu, I), kappa for Sigma(kappa)
    return Method(f"MVMRec t={t}", "coinpress",
                  lambda s, data: {"radius": _radius(s), "t": t,
                                   "sigma": math.sqrt(s.get("kappa", 1.0))})


def _mvc(t_cov: int) -> Method:
    return Method(f"MVCRec-MVMRec t_cov={t_cov}", "coinpress-cov",
                  lambda s, data: {"radius": _radius(s), "t_cov": t_cov, "t": 10,
                                   "sigma_max": _radius(s) / math.sqrt(s["d"])})


NON_PRIVATE = Method("non-private mean", None)
IOME_METHODS = (Method("IOME", "iome-gaussian", _iome_gaussian), Method("CM", "cm", _box),
                *(_mvm(t) for t in (1, 2, 3, 4, 10)), *(_mvc(k) for k in range(1, 6)),
                NON_PRIVATE)
IOME_QUICK_METHODS = (*IOME_METHODS[:3], _mvm(10), _mvc(1), _mvc(5), NON_PRIVATE)


def _identity_data(s: Setting, rng: np.random.Generator) -> Dataset:
    return gaussian(s["n"], mean_in_ball(s["d"], _radius(s), rng), rng)


def _kappa_data(s: Setting, rng: np.random.Generator) -> Dataset:
    mean = mean_in_ball(s["d"], _radius(s), rng) if s.get("shifted") else np.zeros(s["d"])
    return gaussian(s["n"], mean, rng, covariance=sigma_kappa(s["d"], s["kappa"], rng))


def _grid(base: Setting, key: str, values) -> tuple[Setting, ...]:
    return tuple({**base, key: v} for v in values)


def _iome(name: str, title: str, claim: str, x: str, base: Setting, values, quick_values,
          data=_identity_data, metric: str = "l2", **extra: Any) -> Spec:
    return Spec(
        name=name, title=title, claim=claim, x=x, settings=_grid(base, x, values), trials=100,
        metric=metric, aggregation="trimmed10", data=data, methods=IOME_METHODS,
        quick={"settings": _grid({**base, "n": min(base["n"], 2000)}, x, quick_values),
               "methods": IOME_QUICK_METHODS, "trials": 3}, **extra)


IOME_BASE = {"n": 4000, "rho": 0.5, "R_per_sqrt_d": 50}
IOME_SPECS = (
    _iome("iome-fig1", "IOME Fig. 1: l2 error vs d, N(mu, I), n = 4000, rho = 1/2, R = 50 sqrt d",
          "IOME is close to the best-tuned MVMRec (which knows Sigma = I) and far better than "
          "MVCRec-MVMRec; all grow like sqrt(d)", "d", IOME_BASE,
          (8, 16, 32, 64, 128, 256, 512), (16, 64, 256)),
    _iome("iome-fig2", "IOME Fig. 2: l2 error vs rho, N(mu, I), d = 128, n = 4000",
          "IOME tracks MVMRec across rho; CM and MVCRec-MVMRec are worse at small rho", "rho",
          {**IOME_BASE, "d": 128}, (0.01, 0.03, 0.1, 0.3, 1.0), (0.03, 0.3)),
    _iome("iome-fig3", "IOME Fig. 3: l2 error vs R, N(mu, Sigma(10)), d = 128, n = 4000",
          "IOME's error grows only logarithmically in R, like MVMRec's", "R_per_sqrt_d",
          {"n": 4000, "rho": 0.5, "d": 128, "kappa": 10.0, "shifted": True},
          (10, 100, 1000, 10000), (10, 1000), data=_kappa_data,
          xlabel="R / sqrt(d)"),
    _iome("iome-fig4",
          "IOME Fig. 4: l2 error vs kappa, N(0, Sigma(kappa)), d = 128, R = 100 sqrt d",
          "IOME adapts to the unknown covariance; MVMRec needs the bound kappa; MVCRec-MVMRec "
          "pays for the covariance step", "kappa", {"n": 4000, "rho": 0.5, "d": 128,
                                                    "R_per_sqrt_d": 100},
          (1.0, 10.0, 100.0, 1000.0), (1.0, 100.0), data=_kappa_data),
    _iome("iome-fig5", "IOME Fig. 5: Mahalanobis error vs kappa, N(0, Sigma(kappa)), d = 128",
          "in Mahalanobis error MVCRec-MVMRec (which whitens) is competitive only at large "
          "kappa; IOME remains better at rho = 1/2", "kappa",
          {"n": 4000, "rho": 0.5, "d": 128, "R_per_sqrt_d": 100},
          (1.0, 10.0, 100.0, 1000.0), (1.0, 100.0), data=_kappa_data, metric="mahalanobis"),
)

# IOME Figs. 7-8: MNIST digits (d = 784, pixels 0..255) vs rho, R = 50 sqrt(d).
MNIST_METHODS = (
    Method("IOME", "iome", {"bounds": (0.0, 255.0)}),
    Method("CM", "cm", {"bounds": (0.0, 255.0)}),
    *(Method(f"MVMRec t={t}", "coinpress",
             {"radius": 50 * math.sqrt(784), "t": t, "sigma": 50.0, "center": 127.5})
      for t in (2, 10)),
    NON_PRIVATE,
)


def _mnist(s: Setting, rng: np.random.Generator) -> Dataset:
    return mnist_digit(s["digit"])


MNIST_SPEC = Spec(
    name="iome-fig7", title="IOME Figs. 7-8: MNIST digits, l2 error (pixel units) vs rho",
    claim="IOME gives the smallest error on every digit, well below CM and CoinPress, whose "
    "Gaussian assumptions do not hold for images", x="rho",
    settings=tuple({"digit": k, "rho": r} for k in range(10) for r in (0.01, 0.03, 0.1, 0.3, 1)),
    trials=100, metric="l2", aggregation="trimmed10", data=_mnist, methods=MNIST_METHODS,
    panel="digit", note="CoinPress: prior centre 127.5, sigma = 50 (our choice); MVCRec-MVMRec "
    "omitted (about 20 s per release at d = 784)",
    quick={"settings": tuple({"digit": k, "rho": r} for k in (0, 1) for r in (0.03, 0.3))})

# IOME Fig. 9: CM at fixed quantiles vs IOME's optimal radius on the rows {i * 1_d}, n = 500.
QUANTILES = (0.5, 0.75, 0.9, 0.95, 0.99)


def _index(s: Setting, rng: np.random.Generator) -> Dataset:
    return index_rows(s["n"], s["d"])


FIG9_SPEC = Spec(
    name="iome-fig9", title="IOME Fig. 9: clipping radius, rows {i * 1_d}, n = 500, d = 10",
    claim="no fixed quantile is good at every rho: the median is best at small rho and a high "
    "quantile at large rho, while IOME's radius is close to the best of them everywhere",
    x="rho", settings=_grid({"n": 500, "d": 10}, "rho", (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)),
    trials=100, metric="l2", aggregation="trimmed10", data=_index,
    methods=(Method("IOME (optimal radius)", "cm", {"bounds": (0.0, 501.0)}),
             *(Method(f"quantile {q}", "cm-fixed", {"quantile": q, "bounds": (0.0, 501.0)})
               for q in QUANTILES)),
    quick={"settings": _grid({"n": 500, "d": 10}, "rho", (0.03, 1.0))})

# --------------------------------------------------------------------------------------------
# PLAN section 7 (reference notes section 5): mean over 50 runs, +- one sd.

PLAN_GAUSSIAN = (Method("PLAN", "plan", lambda s, data: {"p": 2.0, **_plan_box(s)}),
                 Method("PLAN-noscale", "plan-noscale", lambda s, data: _plan_box(s)),
                 Method("IOME", "iome", lambda s, data: _plan_box(s)), NON_PRIVATE)


def _plan_box(s: Setting) -> dict[str, Any]:
    d, alpha = s["d"], s.get("alpha")
    half = 25 * math.sqrt(d) if alpha is None else 50 * d ** (1 + alpha / 4)
    if alpha is None and d == 16:
        half = 100.0
    return {"bounds": (-half, half)}


def _plan_gaussian(s: Setting, rng: np.random.Generator) -> Dataset:
    alpha = s.get("alpha")
    variances = None if alpha is None else zipf_variances(s["d"], alpha)
    return gaussian(s["n"], np.full(s["d"], s["mean"]), rng, variances=variances)


RHOS = (0.125, 0.25, 0.5, 1.0)
DIMS = (16, 32, 64, 128, 256, 512, 1024, 2048)


def _plan_spec(name: str, title: str, claim: str, x: str, settings, quick_settings,
               data, methods, trials: int = 50, metric: str = "l2", **extra: Any) -> Spec:
    return Spec(name=name, title=title, claim=claim, x=x, settings=tuple(settings),
                trials=trials, metric=metric, aggregation="mean", data=data, methods=methods,
                panel="rho" if x != "rho" else extra.pop("panel", None),
                quick={"settings": tuple(quick_settings)}, **extra)


PLAN_SPECS = (
    _plan_spec("plan-gaussian-a", "PLAN Gaussian A: N(0, I), n = 4000, l2 error vs d",
               "on isotropic data PLAN matches IOME (no skew to exploit)", "d",
               ({"n": 4000, "mean": 0.0, "d": d, "rho": r} for r in RHOS for d in DIMS),
               ({"n": 4000, "mean": 0.0, "d": d, "rho": 0.5} for d in (16, 256)),
               _plan_gaussian, PLAN_GAUSSIAN),
    _plan_spec("plan-gaussian-b", "PLAN Gaussian B: Zipf variances (d/i)^alpha, d = 512, n = 1e4",
               "PLAN's advantage over IOME grows with the skew alpha (several-fold at alpha = 2)",
               "alpha", ({"n": 10000, "mean": 10.0, "d": 512, "alpha": a, "rho": r}
                         for r in (0.0625, *RHOS) for a in (0.0, 0.5, 1.0, 1.5, 2.0)),
               ({"n": 10000, "mean": 10.0, "d": 512, "alpha": a, "rho": 0.5} for a in (0.0, 2.0)),
               _plan_gaussian, PLAN_GAUSSIAN, xlog=False),
    _plan_spec("plan-gaussian-c", "PLAN Gaussian C: Zipf alpha = 2, n = 1e4, l2 error vs d",
               "with strong skew PLAN beats IOME at every d, by a growing factor", "d",
               ({"n": 10000, "mean": 10.0, "d": d, "alpha": 2.0, "rho": r}
                for r in RHOS for d in DIMS),
               ({"n": 10000, "mean": 10.0, "d": d, "alpha": 2.0, "rho": 0.5} for d in (16, 256)),
               _plan_gaussian, PLAN_GAUSSIAN,
               note="error against the true mean (the code's metric, not the text's)"),
)


def _binary(s: Setting, rng: np.random.Generator) -> Dataset:
    return skewed_binary(s["n"], s["d"], s["ratio"], rng)


BINARY_METHODS = (Method("PLAN", "plan", {"p": 1.0, "bounds": (0.0, 1.0)}),
                  Method("PLAN-noscale", "plan-noscale", {"bounds": (0.0, 1.0)}),
                  Method("IOME", "iome", {"bounds": (0.0, 1.0)}), NON_PRIVATE)
BINARY_SPEC = Spec(
    name="plan-binary", title="PLAN Fig. 5a: skewed binary, n = 4096, rho = 1/2, TVD vs d",
    claim="PLAN's TVD is far below IOME's when few items are frequent (ratio 0.25) and the gap "
    "closes as the ratio goes to 1", x="d",
    settings=tuple({"n": 4096, "d": d, "ratio": q, "rho": 0.5}
                   for q in (0.25, 0.5, 1.0) for d in (256, 512, 1024, 2048)),
    trials=50, metric="tvd", aggregation="mean", data=_binary, methods=BINARY_METHODS,
    panel="ratio", quick={"settings": tuple({"n": 4096, "d": 256, "ratio": q, "rho": 0.5}
                                            for q in (0.25, 1.0))})

BASKETS = {"retail": "retail.dat", "kosarak-prefix": "kosarak-first-36682.dat"}


def _basket_spec(key: str) -> Spec:
    def data(s: Setting, rng: np.random.Generator) -> Dataset:
        return basket_data(BASKETS[key], s.get("rows"))

    return Spec(
        name=f"plan-{key}", title=f"PLAN real baskets: {BASKETS[key]}, TVD vs rho",
        claim="on real baskets PLAN's TVD is several times below IOME's (POS, Kosarak)",
        x="rho", settings=tuple({"rho": r} for r in (0.0625, *RHOS)), trials=50,
        metric="tvd", aggregation="mean", data=data,
        methods=(Method("PLAN", "plan", {"p": 1.0, "bounds": (0.0, 1.0)}),
                 Method("PLAN-noscale", "plan-noscale", {"bounds": (0.0, 1.0)}), NON_PRIVATE),
        note=f"bundled {BASKETS[key]} stands in for the paper's "
             f"{'POS' if key == 'retail' else 'full Kosarak'}; IOME needs dense input (omitted)",
        quick={"settings": tuple({"rho": r, "rows": 5000} for r in (0.125, 1.0))})


# --------------------------------------------------------------------------------------------
# Bun-Steinke section 4, through bun_steinke.py's semi-analytic evaluation.

BS_M = {201: (10, 20, 30, 40, 50, 65, 80, 90), 1001: (20, 40, 80, 120, 200, 300, 400, 480),
        5001: (50, 100, 200, 400, 800, 1200, 1600, 2400)}
BS_T = np.geomspace(0.005, 0.9, 24)


def _bs_trial(s: Setting, rng: np.random.Generator) -> list[dict[str, Any]]:
    """One chunk of ``datasets`` simulated datasets: excess variance per (m, noise), t
    optimised over BS_T within the chunk, plus the non-private trimming and global-sensitivity
    lines (Gaussian noise at (b - a)/n under eps^2/2-zCDP: (b - a)^2 / (n eps^2))."""
    n, eps = s["n"], s["epsilon"]
    ms = np.array(s.get("ms", BS_M[n]))
    seed = int(rng.integers(2**31))
    grid = bs.excess_grid(n, ms, BS_T, trials=s["datasets"], trim_trials=s["datasets"],
                          seed=seed)
    rows = []
    for noise in bs.NOISES:
        excess = grid.excess(noise, eps).min(axis=1)
        rows += [{"method": noise, "m": int(m), "value": float(v)}
                 for m, v in zip(ms, excess, strict=True)]
    width = bs.BOUNDS[1] - bs.BOUNDS[0]
    rows += [{"method": "trim non-priv", "m": int(m), "value": float(v)}
             for m, v in zip(ms, grid.trim_part, strict=True)]
    rows += [{"method": "global sens", "m": int(m), "value": width**2 / (n * eps**2)}
             for m in ms]
    return rows


BS_SPEC = Spec(
    name="bs-fig2-4", title="Bun-Steinke Figs. 2-4: excess variance n E[(M - mu)^2] - 1 vs m",
    claim="n = 201, eps = 1: best excess about 0.5-1 ('only a factor of two'); n = 1001: down "
    "to about 0.1; LLN best, Student-t close, ULN poor, global sensitivity orders worse",
    x="m", settings=tuple({"case": f"n={n}, eps={e:g}", "n": n, "epsilon": e, "datasets": 500}
                          for n in (201, 1001, 5001) for e in (1.0, 0.2)),
    trials=20, metric="excess", aggregation="mean", trial=_bs_trial, panel="case",
    extra=("m",), ylabel="excess variance", xlabel="trimming m",
    note="semi-analytic (noise variance in closed form); t optimised per chunk of datasets",
    quick={"settings": tuple({"case": f"n={n}, eps=1", "n": n, "epsilon": 1.0, "datasets": 60,
                              "ms": BS_M[n][::3]} for n in (201, 1001)), "trials": 2})


def _trimmed_variance_trial(s: Setting, rng: np.random.Generator) -> list[dict[str, Any]]:
    """n (trimmed mean - mu)^2 per trimming fraction, for the three unit-variance laws."""
    n = s["n"]
    draws = {"gaussian": rng.standard_normal(n),
             "laplace": rng.laplace(0.0, 1.0 / math.sqrt(2.0), n),
             # 0.9 N(0, 1) + 0.1 N(5, 1), centred: a skewed mixture (our choice of mixture)
             "mixture": np.where(rng.random(n) < 0.1, 5.0, 0.0) + rng.standard_normal(n) - 0.5}
    rows = []
    for law, values in draws.items():
        values = np.sort(values)[:, None]
        for fraction in s["fractions"]:
            tm = bs.trimmed_means(values, int(fraction * n))[0]
            rows.append({"method": law, "fraction": fraction, "value": n * tm**2})
    return rows


BS_FIG1 = Spec(
    name="bs-fig1", title="Bun-Steinke Fig. 1: n Var(trimmed mean) vs trimming fraction",
    claim="trimming costs little for Gaussian data, helps for Laplace, and biases a skewed "
    "mixture (MSE grows with trimming)", x="fraction",
    settings=({"n": 1001, "fractions": (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.45)},),
    trials=20000, metric="mse", aggregation="mean", trial=_trimmed_variance_trial,
    extra=("fraction",), ylabel="n E[(trimmed mean - mu)^2]", xlog=False,
    quick={"trials": 300})

# --------------------------------------------------------------------------------------------
# Our own: PLAN and IOME side by side on each kind of data, at rho = 1/2.


def _ours(s: Setting, rng: np.random.Generator) -> Dataset:
    kind = s["data"]
    if kind == "isotropic":
        return gaussian(4000, np.zeros(s["d"]), rng)
    if kind == "zipf-2":
        return gaussian(10000, np.full(s["d"], 10.0), rng, variances=zipf_variances(s["d"], 2))
    if kind == "kappa-100":
        return gaussian(4000, np.zeros(s["d"]), rng, covariance=sigma_kappa(s["d"], 100, rng))
    if kind == "binary-0.25":
        return skewed_binary(4096, s["d"], 0.25, rng)
    return mnist_digit(int(kind.removeprefix("mnist-")))


def _ours_box(s: Setting, data: Dataset) -> dict[str, Any]:
    if s["data"].startswith("mnist"):
        return {"bounds": (0.0, 255.0)}
    if s["data"].startswith("binary"):
        return {"bounds": (0.0, 1.0)}
    return {"bounds": (-50.0 * s["d"], 50.0 * s["d"])}


OURS_SPEC = Spec(
    name="ours-plan-vs-iome", title="PLAN vs IOME at rho = 1/2 on each kind of data (ours)",
    claim="(no paper claim) which estimator to pick: PLAN on skewed variances, IOME otherwise",
    x="d", settings=tuple({"data": k, "d": d, "rho": 0.5}
                          for k in ("isotropic", "zipf-2", "kappa-100", "binary-0.25")
                          for d in (64, 256)) + ({"data": "mnist-3", "d": 784, "rho": 0.5},),
    trials=20, metric="l2", aggregation="mean", data=_ours, panel="data",
    methods=(Method("PLAN", "plan", lambda s, data: {"p": 2.0, **_ours_box(s, data)}),
             Method("IOME", "iome", _ours_box), NON_PRIVATE),
    quick={"settings": tuple({"data": k, "d": 64, "rho": 0.5}
                             for k in ("isotropic", "zipf-2", "binary-0.25")), "trials": 2})

SPECS: dict[str, Spec] = {spec.name: spec for spec in (
    *IOME_SPECS, MNIST_SPEC, FIG9_SPEC, *PLAN_SPECS, BINARY_SPEC,
    *(_basket_spec(k) for k in BASKETS), BS_FIG1, BS_SPEC, OURS_SPEC)}
