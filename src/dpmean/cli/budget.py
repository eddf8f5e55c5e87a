"""``dpmean budget``: plan a release before touching data (``dpmean.accuracy`` and its inverse).

Nothing is read but public values (n, d, the box, the method and its options), so the command
spends no privacy: it says how wide the noise part of a release's per-coordinate interval will
be at a budget, or which budget a target width needs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from typing import Any

from ..registry import ESTIMATORS, PLANNED
from .arguments import (
    UsageError,
    add_bounds_arguments,
    add_level_argument,
    add_option_argument,
    bounds_from,
    bounds_names,
    budget_from,
    check_ranges,
    parse_options,
    printing,
)
from .output import format_level, format_values, json_default

# The widest release planned: scipy's int32 column indices (and the basket reader's --items)
# stop here, so no release of more columns can run.
MAX_D = 2**31 - 1
# Bytes per column the planner holds at its peak: about four float64 vectors of length d
# (measured: 3.2 GB at d = 10^8, for cm and iome alike).
_PLAN_BYTES_PER_COLUMN = 32


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``budget`` command to the parser.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subparsers of the top-level parser.
    """
    p = sub.add_parser(
        "budget",
        help="plan a release: the noise half-width at a budget, or the budget for a width",
        description="A priori accuracy, from public values only (no data is read, no budget "
        "is spent): with --rho (or --epsilon and --delta), the half-width of the noise part "
        "of each coordinate's confidence interval; with --half-width H, the rho that makes it "
        "at most H (and, with --delta, the smallest epsilon a release calibrates to that "
        "rho). The clipping bias of a release is not part of this number: the release's own "
        "interval adds it. Methods: "
        f"{', '.join(PLANNED)}; not auto (the default of dpmean estimate) nor plan, whose "
        "noise depends on private values (auto's choice, PLAN's scales): plan the method the "
        "release will name with --method.",
    )
    p.add_argument("--method", default=None, type=_planned_method, metavar="M",
                   help=f"estimator: {', '.join(PLANNED)} (default: iome; dpmean estimate's "
                   f"default, auto, is not planned: release with --method M for this plan)")
    p.add_argument("--n", type=int, required=True, metavar="N", help="number of rows (public)")
    p.add_argument("--d", type=int, required=True, metavar="D",
                   help="number of columns (public)")
    add_bounds_arguments(p, reads_data=False)
    planned = p.add_argument_group("what to plan (give a budget, or --half-width)")
    planned.add_argument("--rho", type=float, metavar="R", help="zCDP budget rho > 0")
    planned.add_argument("--epsilon", type=float, metavar="E",
                         help="(epsilon, delta)-DP budget epsilon > 0, with --delta")
    planned.add_argument("--delta", type=float, metavar="D",
                         help="delta in (0, 1): with --epsilon, the budget; with --half-width, "
                         "also print the smallest epsilon whose release at this delta is "
                         "granted the rho found")
    planned.add_argument("--half-width", type=float, metavar="H",
                         help="target half-width of each coordinate's noise interval")
    p.add_argument("--clip-radius", type=float, metavar="C",
                   help="plan for a private clipping radius of at most C (the clipped "
                   "methods; in the space the release runs in, the box-normalised one for "
                   "columns of unequal ranges: what 'threshold' reports): the radius follows "
                   "the rows' spread about the centre, so this gives the noise to expect "
                   "where the default, the largest radius the box allows, is a loose bound")
    add_level_argument(p, "each coordinate's interval")
    add_option_argument(p)
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(run=run)


def _planned_method(name: str) -> str:
    """--method: one of ``PLANNED``; another method is refused with why it cannot be planned
    (argparse's choices listed the names only, and auto, the default of dpmean estimate, was
    an "invalid choice" with no reason: a user trial)."""
    if name in PLANNED:
        return name
    if name in ESTIMATORS:
        from ..planning import unplanned

        raise argparse.ArgumentTypeError(unplanned(name))
    raise argparse.ArgumentTypeError(f"invalid choice: {name!r} (choose from "
                                     f"{', '.join(PLANNED)})")


def run(args: argparse.Namespace) -> int:
    """Print the planned half-width, or the budget a target half-width needs.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``budget`` arguments.

    Returns
    -------
    int
        0; bad input raises and becomes one error line.
    """
    import numpy as np  # here, not at start-up: building the parser imports no numpy

    from ..planning import accuracy, rho_for_accuracy, rho_limit

    # A plan of the default method says so: dpmean estimate's default is auto, whose noise is
    # that of the method its private choice runs, so the plan holds for --method iome only.
    defaulted = args.method is None
    if defaulted:
        args.method = "iome"
    bounds = bounds_from(args)
    options = parse_options(args.option)
    if bounds is None and "norm_bound" not in options:
        raise UsageError("budget needs the public box: --bounds LO HI, --bounds-file FILE or "
                         "--range NAME=LO:HI for each column (or, for gaussian, --option "
                         "norm_bound=R)")
    _check_d(args.d)
    if bounds is not None:
        check_ranges(args, bounds, args.d, f"--d is {args.d}")
    shape: dict[str, Any] = {"method": args.method, "n": args.n, "d": args.d,
                             "level": args.level}
    if args.clip_radius is not None:
        shape["clip_radius"] = args.clip_radius
    # The names the ranges were given for (--range, a bounds file's header), in their order:
    # the order of the per-coordinate half-widths.
    names = bounds_names(args)
    if names is not None:
        shape["columns"] = names
    if args.half_width is not None:
        if args.rho is not None or args.epsilon is not None:
            raise UsageError("give either a budget (--rho, or --epsilon and --delta) or "
                             "--half-width, not both")
        rho = rho_for_accuracy(args.method, args.n, args.d, bounds, args.half_width,
                               level=args.level, clip_radius=args.clip_radius, **options)
        plan = {**shape, "half_width": args.half_width, "rho": rho}
        reached = accuracy(args.method, args.n, args.d, bounds, rho, level=args.level,
                           clip_radius=args.clip_radius, **options)
        if getattr(reached, "ndim", 0):
            # Columns of unequal widths: the widest binds; say what the others get.
            plan["half_widths"] = reached
        # What the rho buys, and what set it: the target was printed as the half-width even
        # where the rho was the least the rows allow, 0.22 for targets 0.3, 0.5 and 1e9 alike
        # (a user trial).
        plan["reached_half_width"] = float(np.max(reached))
        plan["rho_set_by"] = rho_limit(args.method, args.n, args.d, bounds, args.half_width,
                                       rho, level=args.level, clip_radius=args.clip_radius,
                                       **options)
        box = _box_half_width(bounds, options)
        if box is not None:
            plan["box_half_width"] = box
        if args.delta is not None:
            epsilon = _epsilon_for(args, bounds, options, rho, args.delta)
            plan.update(delta=args.delta, epsilon=epsilon)
            if epsilon == 0.0:
                plan["epsilon_note"] = "any epsilon > 0 meets the target at this delta"
    else:
        budget: dict[str, float] = _budget(args)
        half_width = accuracy(args.method, args.n, args.d, bounds, level=args.level,
                              clip_radius=args.clip_radius, **budget, **options)
        if "rho" not in budget:
            # The rho an (epsilon, delta) budget grants a release of this shape, as
            # ``accuracy`` converted it (the generic conversion, or the calibration to the
            # plan for (n, d)).
            budget["rho"] = _granted_rho(args, bounds, budget, options)
        plan = {**shape, **budget, "half_width": half_width}
    with printing():
        # An (epsilon, delta) budget was given (its rho is derived), not a rho or a width.
        _print(plan, args.json, args.half_width is None and args.rho is None)
        if defaulted and not args.json:
            print("planned for iome, this command's default; dpmean estimate's default, auto, "
                  "chooses its method privately and may run another: release with --method "
                  "iome for this plan")
    return 0


def _box_half_width(bounds: Any, options: dict[str, Any]) -> float | None:
    """Half the widest range of the public box (a norm bound R's box is (-R, R)); None when
    neither is known."""
    import numpy as np

    if bounds is not None:
        lo, hi = bounds
        return float(np.max(np.asarray(hi, dtype=float) - np.asarray(lo, dtype=float))) / 2.0
    norm_bound = options.get("norm_bound")
    return None if norm_bound is None else float(norm_bound)


def _epsilon_for(args: argparse.Namespace, bounds: Any, options: dict[str, Any], rho: float,
                 delta: float) -> float:
    """The smallest epsilon whose release at ``delta`` is granted at least ``rho``, as a release
    with --epsilon calibrates it (exactly for Gaussian stages, by privacy loss distributions
    for PLAN's plan): a user trial found the generic conversion 7-8% above what a release
    needs, so the planned width was not what that epsilon gave. Bisection on log epsilon
    between a tenth of the generic conversion's epsilon and that epsilon, which always
    grants at least rho; the epsilon returned grants it (the upper end is kept)."""
    from ..accounting import zcdp_to_approx_dp
    from ..bisection import narrowed

    def grants(epsilon: float) -> bool:
        budget = {"epsilon": epsilon, "delta": delta}
        return _granted_rho(args, bounds, budget, options) >= rho

    high = zcdp_to_approx_dp(rho, delta)
    if high == 0.0:
        # rho this small is (0, delta)-DP already: every epsilon > 0 is granted at least it
        # (a review: the search asked for epsilon = 0, which a release refuses).
        return 0.0
    low = high / 10.0
    return low if grants(low) else narrowed(grants, high, low, 1e-9)


def _granted_rho(args: argparse.Namespace, bounds: Any, budget: dict[str, float],
                 options: dict[str, Any]) -> float:
    from ..api import build_estimator

    estimator = build_estimator(args.method, epsilon=budget["epsilon"], delta=budget["delta"],
                                bounds=bounds, **options)
    rho = estimator.granted(args.n, args.d).budget.rho
    assert rho is not None  # every planned method is zCDP
    return float(rho)


def _budget(args: argparse.Namespace) -> dict[str, float]:
    # As estimate reads it (--delta with --rho is refused there too), once there is a budget.
    if args.rho is None and args.epsilon is None:
        raise UsageError("nothing to plan: give --rho R (or --epsilon E and --delta D) for the "
                         "half-width at that budget, or --half-width H for the budget")
    return budget_from(args)


def _check_d(d: int) -> None:
    """Refuse a d whose vectors cannot be built, before building them: numpy's MemoryError
    at best, the kernel killing the process at worst."""
    if d > MAX_D:
        raise UsageError(f"--d {d} is more columns than any release can have (at most "
                         f"2**31 - 1 = {MAX_D}: column indices are 32-bit integers)")
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return  # unknown: numpy's MemoryError, if any, becomes the error line
    need = _PLAN_BYTES_PER_COLUMN * d
    if need > memory:
        raise UsageError(f"--d {d} is too large to plan on this machine: the plan holds "
                         f"vectors of d numbers, about {need / 2**30:.3g} GiB, more than its "
                         f"{memory / 2**30:.3g} GiB of memory")


def _print(plan: dict, as_json: bool, epsilon_budget: bool = False) -> None:
    if as_json:
        json.dump(plan, sys.stdout, indent=2, default=json_default)
        print()
        return
    setting = (f"{plan['method']}, n = {plan['n']}, d = {plan['d']}, each coordinate's "
               f"{format_level(plan['level'])} noise interval")
    if epsilon_budget:
        budget = (f"epsilon = {plan['epsilon']:g}, delta = {plan['delta']:g} (rho = "
                  f"{plan['rho']:.6g})")
    else:
        budget = f"rho = {plan['rho']:.6g}"
        if "epsilon" in plan and plan["epsilon"] == 0.0:
            budget += f" (any epsilon > 0 at delta = {plan['delta']:g})"
        elif "epsilon" in plan:
            # Rounded up: the epsilon is the smallest that meets the width, and one rounded
            # down missed it (a review: 11 of 25 targets).
            budget += (f" (epsilon = {_rounded_up(plan['epsilon'])} at delta = "
                       f"{plan['delta']:g})")
    # Per coordinate (an array) when the box's widths differ: each column's noise is
    # proportional to its width, and a target binds on the widest column. For a target, the
    # half-width the rho found buys, which the target is not where another limit set it.
    half_width = plan.get("reached_half_width", plan["half_width"])
    names = plan.get("columns")
    if getattr(half_width, "ndim", 0):
        print(f"{setting}: half-widths per coordinate {_first(half_width, names)} at {budget}")
    elif "half_widths" in plan:
        print(f"{setting}: half-width at most {half_width:.6g} on every coordinate at "
              f"{budget}; per coordinate {_first(plan['half_widths'], names)}")
    else:
        print(f"{setting}: half-width {half_width:.6g} at {budget}")
    for line in _target_notes(plan):
        print(line)
    if "clip_radius" in plan:
        print(f"the noise of a release whose private clipping radius is {plan['clip_radius']:g} "
              f"(or the largest the box allows, if smaller); a larger radius, more noise")
    elif plan["method"] != "gaussian":
        # ``accuracy``: the noise at the largest radius the search can return, which a
        # release's own radius (about its data) is usually far below.
        print("an upper bound: the noise at the largest clipping radius the method's search can "
              "return; a release's own noise is usually smaller (its diagnostics' noise_std; "
              "--clip-radius plans for the radius you expect)")
    print("public values only: no data was read and no budget was spent; the clipping bias of "
          "a release is not included (its confidence_interval adds it)")


def _target_notes(plan: dict) -> list[str]:
    """For a --half-width target: the lines that say when the rho printed is not the one the
    target needs (the rows' least, or the search's), and when the target is at least the
    box's half-width."""
    if "rho_set_by" not in plan:
        return []
    target, rho, reached = plan["half_width"], plan["rho"], plan["reached_half_width"]
    below = (f"not the rho the target needs: the half-width there, {reached:.6g}, is below "
             f"the target {target:g}")
    notes = {
        "rows": f"rho = {rho:.6g} is the least at which n = {plan['n']} rows are enough for a "
                f"{plan['method']} release in d = {plan['d']} (with less, the release is the "
                f"zero-vector fallback), {below}",
        "search": f"rho = {rho:.6g} is the least rho the search tries, {below}",
    }
    lines = [notes[plan["rho_set_by"]]] if plan["rho_set_by"] in notes else []
    box = plan.get("box_half_width")
    if box is not None and target >= box:
        lines.append(f"the target {target:g} is at least the box's half-width {box:.6g} (half "
                     f"its widest range): an interval that wide is no narrower than the box, "
                     f"which is known without any release")
    return lines


def _rounded_up(value: float, digits: int = 4) -> str:
    """``value`` (positive) to ``digits`` significant digits, rounded up: never below it."""
    text = f"{value:.{digits}g}"
    if float(text) >= value:
        return text
    step = 10.0 ** (math.floor(math.log10(value)) - digits + 1)
    return f"{float(text) + step:.{digits}g}"


def _first(values: Any, names: Sequence[str] | None = None) -> str:
    """The first few of a vector's values, each after its column's name where the ranges were
    given by name (the JSON had the names, the text not: a trial), and how many there are."""
    shown = min(len(values), 8)
    more = f" ... ({len(values)} in all)" if len(values) > shown else ""
    if names is None:
        return format_values(values[:shown]) + more
    return ", ".join(f"{name} {value}" for name, value in zip(
        names[:shown], format_values(values[:shown]).split(", "), strict=True)) + more
