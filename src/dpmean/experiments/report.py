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
from typing import TYPE_CHECKING, Any

import numpy as np

from ..io import write_bytes_atomic
from .spec import AGGREGATIONS, Spec

if TYPE_CHECKING:
    from matplotlib.figure import Figure


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


# How far apart the methods' markers sit at one x (dodge), as a fraction of the panel's x
# span: error bars drawn at the same x hid each other (user trial, ours-plan-vs-iome --quick).
DODGE = 0.025


def trials_line(spec: Spec, stats: dict) -> str:
    """The trials each point aggregates, counted in the CSV, next to the full run's count.

    Parameters
    ----------
    spec : Spec
        The experiment drawn (a ``--quick`` one knows the full run's count).
    stats : dict
        :func:`aggregate`'s statistics.

    Returns
    -------
    str
        "trials per point: 20 (full run: 100)", or "trials per point: 100" when they agree.
    """
    # Counted, not taken from the spec: --trials overrides the spec, and a resumed CSV keeps
    # the trials of earlier runs.
    counts = sorted({s["trials"] + s["failed"] for s in stats.values()})
    line = f"trials per point: {', '.join(map(str, counts))}"
    return line if counts == [spec.paper_trials] else f"{line} (full run: {spec.paper_trials})"


def plot(spec: Spec, stats: dict, path: Path) -> None:
    """Draw :func:`figure` into the PNG ``path``, written whole or not at all.

    Parameters
    ----------
    spec : Spec
        The experiment.
    stats : dict
        :func:`aggregate`'s statistics.
    path : Path
        The PNG to write.
    """
    fig = figure(spec, stats)
    # Drawn in memory, then written atomically: an interruption leaves the old file or none,
    # never half a picture.
    png = io.BytesIO()
    fig.savefig(png, format="png")
    write_bytes_atomic(path, png.getvalue())


def figure(spec: Spec, stats: dict) -> Figure:
    """One panel per ``spec.panel`` value, one line per method against ``spec.x``.

    The heading gives the title, the note, the trials per point and the series that could
    not be drawn; one legend below the panels lists the drawn series only.

    Parameters
    ----------
    spec : Spec
        The experiment.
    stats : dict
        :func:`aggregate`'s statistics.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, not yet saved.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullLocator

    _PlainLog = _plain_log()
    panels = sorted({k[0] for k in stats}, key=_natural)
    methods = list(dict.fromkeys(k[1] for k in stats))
    width = 4.2 * len(panels)
    fig = Figure(figsize=(width, 3.6), dpi=90, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    handles: dict[str, Any] = {}
    undrawn: dict[tuple[str, str], list[str]] = defaultdict(list)  # (method, reason): panels
    shown: dict[str, list[str]] = defaultdict(list)  # method: the panels that have its points
    for ax, panel in zip(axes, panels, strict=True):
        swept = sorted({x for p, _, x in stats if p == panel})
        # at most 10% of the span from the first method's markers to the last's, so that
        # a dodged point stays near its x with many methods (bs-fig2-4 has 9)
        step = min(DODGE, 0.1 / max(len(methods) - 1, 1)) * _span(swept, spec.xlog)
        for i, method in enumerate(methods):
            xs = sorted(x for p, m, x in stats if p == panel and m == method)
            if not xs:
                continue
            shown[method].append(panel)
            ys = np.array([stats[(panel, method, x)]["centre"] for x in xs])
            reason = _undrawable(ys, spec.ylog)
            if reason:
                # left out of the plot and the legend, and named in the heading instead
                undrawn[(method, reason)].append(panel)
                continue
            style = "--" if method.startswith("non-private") else "-"
            if spec.aggregation == "mean":
                sd = np.array([stats[(panel, method, x)]["sd"] for x in xs])
                # dodged along x, so that error bars at one x do not cover each other
                at = _shift(np.array(xs), (i - (len(methods) - 1) / 2) * step, spec.xlog)
                line = ax.errorbar(at, ys, yerr=sd, fmt=style, marker=".", capsize=2,
                                   label=method)
            else:
                line = ax.plot(xs, ys, style, marker=".", label=method)[0]
            handles.setdefault(method, line)
        ax.set_xscale("log" if spec.xlog else "linear")
        ax.set_yscale("log" if spec.ylog else "linear")
        if spec.ylog:
            # plain numbers (0.0375, 9), not 3.75x10^-2 and 9x10^0 on a narrow range
            ax.yaxis.set_major_formatter(_PlainLog())
            ax.yaxis.set_minor_formatter(_PlainLog(labelOnlyBase=False))
        if spec.xlog:
            # ticks at the swept values, written plainly (log axes otherwise label minor
            # ticks as 2x10^1, 3x10^1, ... on top of each other)
            ax.set_xticks(swept, [f"{x:g}" for x in swept], fontsize=7)
            ax.xaxis.set_minor_locator(NullLocator())
        if len(swept) == 1 and spec.aggregation == "mean":
            # one x: a window about it, so that the dodge reads as a small offset
            half = _span(swept, spec.xlog) / 2
            ax.set_xlim(_shift(np.array([swept[0]] * 2), np.array([-half, half]), spec.xlog))
        ax.set_xlabel(spec.xlabel or spec.x)
        # A long label (Mahalanobis, plan-table2) outgrew the panel's height into the heading:
        # its formula goes on a line of its own.
        label = spec.y_label
        ax.set_ylabel(label.replace(" |", "\n|", 1) if len(label) > 30 else label)
        if spec.panel:
            ax.set_title(f"{spec.panel} = {panel}", fontsize=9)
        ax.grid(alpha=0.3)
    # Characters per line at fontsize 8 (about 0.06 inch each): 18 per inch cut the first and
    # last letters of a one-panel figure's longer lines (user trial).
    chars = int(16 * width)
    notes = [spec.note, trials_line(spec, stats)]
    if undrawn:
        notes.append("not drawn: " + "; ".join(
            f"{method} ({reason}"
            + ("" if where == shown[method] else f", {spec.panel} = {', '.join(where)}") + ")"
            for (method, reason), where in undrawn.items()))
    heading = [line for text in (spec.title, *notes) for line in textwrap.wrap(text, chars)]
    fig.suptitle("\n".join(heading), fontsize=8)
    # One legend for every panel, below them: inside an axes it covered curves (user trial,
    # iome-fig2: CM and MVMRec t=1).
    longest = max((len(label) for label in handles), default=1)
    columns = max(1, min(len(handles), int(width * 15 / (longest + 5))))
    rows = -(-len(handles) // columns)
    if handles:
        fig.legend(handles.values(), handles.keys(), loc="outside lower center", ncol=columns,
                   fontsize=7, frameon=False)
    # room for the heading's lines and the legend's rows, the panels keeping their height
    fig.set_figheight(3.0 + 0.14 * len(heading) + 0.16 * rows)
    return fig


def _plain_log() -> type:
    """A log-axis tick formatter labelling the ticks matplotlib's would, as plain numbers."""
    from matplotlib.ticker import LogFormatterSciNotation

    class PlainLog(LogFormatterSciNotation):
        def __call__(self, x: float, pos: int | None = None) -> str:
            return f"{x:.3g}" if super().__call__(x, pos) else ""

    return PlainLog


def _span(swept: list[float], log: bool) -> float:
    """The width of the swept x values on the axis (log10 units on a log axis); a single
    value's window: a decade, or the value's size."""
    if len(swept) > 1:
        return float(np.log10(swept[-1] / swept[0])) if log else swept[-1] - swept[0]
    return 1.0 if log else abs(swept[0]) or 1.0


def _shift(xs: np.ndarray, offset: Any, log: bool) -> np.ndarray:
    """``xs`` moved by ``offset`` along the axis: multiplied by 10^offset on a log axis."""
    return xs * 10.0 ** offset if log else xs + offset


def _undrawable(ys: np.ndarray, log: bool) -> str | None:
    """Why a series has no point on the axis (every value missing, or none positive on a log
    axis); None when it has one. Such a series was listed in the legend but not drawn (user
    trial, plan-retail: the non-private mean's error is 0)."""
    if np.isnan(ys).all():
        return "every trial failed"
    finite = ys[np.isfinite(ys)]
    if not finite.size:
        return "no finite value"
    if log and (finite <= 0).all():
        return ("0 at every point" if (finite == 0).all() else "no value above 0") + \
            ": none on a log axis"
    return None


def summary(spec: Spec, stats: dict, csv_path: Path, png: Path | None) -> str:
    """Markdown: the claim, how the numbers were aggregated, and the table of results."""
    lines = [f"# {spec.name}: {spec.title}", "",
             "NON-PRIVATE evaluation: the true means are used only to measure error.", "",
             f"Paper's claim: {spec.claim}", "",
             f"Metric: {spec.y_label}; aggregation: {AGGREGATIONS[spec.aggregation]}; "
             f"{trials_line(spec, stats)}. Data: {csv_path.name}"
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
