"""Aggregate an experiment CSV the way its paper does (IOME: 10% trimmed mean; PLAN: mean +- sd
and medians), draw the figure's plot and write a markdown summary."""

from __future__ import annotations

import csv
import io
import math
import re
import textwrap
from collections import defaultdict
from pathlib import Path

import numpy as np

from ..io import write_bytes_atomic
from .spec import AGGREGATIONS, Spec


def trimmed_mean(values: np.ndarray, fraction: float = 0.1) -> float:
    """scipy.stats.trim_mean: drop floor(fraction * k) values from each end, average the rest."""
    values = np.sort(values)
    cut = int(math.floor(fraction * values.shape[0]))
    return float(values[cut:values.shape[0] - cut].mean())


def aggregate(spec: Spec, path: Path) -> dict[tuple[str, str, float], dict[str, float]]:
    """{(panel value, method, x): {centre, sd, median, trials}} from the CSV at ``path``."""
    groups: dict[tuple[str, str, float], list[float]] = defaultdict(list)
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            # A line of the wrong width (torn by an interrupted write, or not ours) is not a
            # result: DictReader gives its missing fields None and its extra ones key None.
            if None in row or None in row.values():
                continue
            try:
                value, x = float(row["value"]), float(row[spec.x])
            except (KeyError, ValueError):
                continue
            panel = row.get(spec.panel, "") if spec.panel else ""
            groups[(panel, row["method"], x)].append(value)
    stats = {}
    for key, values in groups.items():
        v = np.asarray(values)
        failed = int(np.isnan(v).sum())
        v = v[~np.isnan(v)]
        if v.shape[0] == 0:
            stats[key] = {"centre": math.nan, "sd": math.nan, "median": math.nan, "trials": 0,
                          "failed": failed}
            continue
        centre = trimmed_mean(v) if spec.aggregation == "trimmed10" else float(v.mean())
        with np.errstate(invalid="ignore"):  # an infinite line (no admissible noise) has no sd
            sd = float(v.std(ddof=1)) if len(v) > 1 else 0.0
        stats[key] = {"centre": centre, "sd": sd,
                      "median": float(np.median(v)), "trials": len(v),
                      "failed": failed}
    return stats


def plot(spec: Spec, stats: dict, path: Path) -> None:
    """One panel per ``spec.panel`` value, one line per method against ``spec.x``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullLocator

    panels = sorted({k[0] for k in stats}, key=_natural)
    methods = list(dict.fromkeys(k[1] for k in stats))
    fig = Figure(figsize=(4.2 * len(panels), 3.6), dpi=90)
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, panel in zip(axes, panels, strict=True):
        for method in methods:
            xs = sorted(x for p, m, x in stats if p == panel and m == method)
            if not xs:
                continue
            ys = np.array([stats[(panel, method, x)]["centre"] for x in xs])
            style = "--" if method.startswith("non-private") else "-"
            if spec.aggregation == "mean":
                sd = np.array([stats[(panel, method, x)]["sd"] for x in xs])
                ax.errorbar(xs, ys, yerr=sd, fmt=style, marker=".", capsize=2, label=method)
            else:
                ax.plot(xs, ys, style, marker=".", label=method)
        ax.set_xscale("log" if spec.xlog else "linear")
        ax.set_yscale("log" if spec.ylog else "linear")
        if spec.xlog:
            # ticks at the swept values, written plainly (log axes otherwise label minor
            # ticks as 2x10^1, 3x10^1, ... on top of each other)
            swept = sorted({x for p, _, x in stats if p == panel})
            ax.set_xticks(swept, [f"{x:g}" for x in swept], fontsize=7)
            ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel(spec.xlabel or spec.x)
        ax.set_ylabel(spec.y_label)
        if spec.panel:
            ax.set_title(f"{spec.panel} = {panel}", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    # Characters per line at fontsize 8 (about 0.06 inch each): 18 per inch cut the first and
    # last letters of a one-panel figure's longer lines (user trial).
    width = int(16 * 4.2 * len(panels))
    heading = "\n".join(textwrap.wrap(spec.title, width) + textwrap.wrap(spec.note, width))
    fig.suptitle(heading, fontsize=8)
    fig.tight_layout()
    # Drawn in memory, then written atomically: an interruption leaves the old file or none,
    # never half a picture.
    png = io.BytesIO()
    fig.savefig(png, format="png")
    write_bytes_atomic(path, png.getvalue())


def summary(spec: Spec, stats: dict, csv_path: Path, png: Path | None) -> str:
    """Markdown: the claim, how the numbers were aggregated, and the table of results."""
    trials = sorted({s["trials"] + s["failed"] for s in stats.values()})
    lines = [f"# {spec.name}: {spec.title}", "",
             "NON-PRIVATE evaluation: the true means are used only to measure error.", "",
             f"Paper's claim: {spec.claim}", "",
             f"Metric: {spec.y_label}; aggregation: {AGGREGATIONS[spec.aggregation]}; "
             f"trials per point: {', '.join(map(str, trials))}. Data: {csv_path.name}"
             + (f"; plot: {png.name}." if png else "."), ""]
    if spec.note:
        lines += [f"Note: {spec.note}", ""]
    head = ([spec.panel] if spec.panel else []) + ["method", spec.x, "value", "sd", "median",
                                                "failed"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (panel, method, x), s in sorted(stats.items(),
                                        key=lambda kv: (_natural(kv[0][0]), kv[0][1], kv[0][2])):
        cells = ([panel] if spec.panel else []) + [method, f"{x:g}", f"{s['centre']:.4g}",
                                                   f"{s['sd']:.3g}", f"{s['median']:.4g}",
                                                   str(s["failed"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _natural(text: str) -> tuple[tuple[int, float | str], ...]:
    """Sort key reading the numbers inside a label as numbers: "n=201, eps=1" before
    "n=1001, eps=0.2", "0.0625" before "0.125"."""
    parts = re.split(r"(\d+(?:\.\d*)?(?:e[+-]?\d+)?)", text)
    return tuple((0, float(p)) if i % 2 else (1, p) for i, p in enumerate(parts))
