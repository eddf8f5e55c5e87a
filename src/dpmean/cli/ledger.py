"""``dpmean ledger init`` and ``dpmean ledger show``: a budget file several ``estimate`` runs share.

The file format, its locking and its checks live in ``dpmean.ledger_file``; this module only
creates and prints ledgers (``estimate --ledger`` charges them).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .arguments import add_budget_arguments, budget_from, printing
from .output import json_default

# What a "reserved" entry is: a user trial found entries left so (by a SIGTERM, before it was
# handled as Ctrl-C is) that ``ledger show`` listed without a word on what they meant.
RESERVED = ("reserved: charged before its run read the data, and never settled: the run is "
            "still going, or it was cut off (killed, crashed, the machine stopped) before it "
            "recorded its outcome; it stays charged in full")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``ledger`` command and its actions ``init`` and ``show`` to the parser.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subparsers of the top-level parser.
    """
    p = sub.add_parser(
        "ledger",
        help="a privacy budget shared by several 'estimate' runs on the same data",
        description="A ledger file holds a total privacy budget and every release charged to "
        "it ('dpmean estimate ... --ledger FILE'). Releases compose as in dpmean.Session; one "
        "that would overspend is refused before the data is read.",
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    init = actions.add_parser("init", help="create a ledger file with a total budget",
                              description="Create FILE (never overwriting one) with a total "
                              "budget: --rho (a zCDP ledger) or --epsilon with --delta.")
    init.add_argument("file", metavar="FILE")
    add_budget_arguments(init, "the ledger's total")
    init.set_defaults(run=run_init)
    show = actions.add_parser("show", help="print a ledger's budget, releases and what remains",
                              description="Verify FILE and print its budget, each release and "
                              "what remains.")
    show.add_argument("file", metavar="FILE")
    show.add_argument("--json", action="store_true",
                      help="print the ledger as JSON: its budget, each release with its events, "
                      "and what is spent and remains")
    show.set_defaults(run=run_show)


def run_init(args: argparse.Namespace) -> int:
    """Create the ledger file with its total budget (never over an existing file).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``ledger init`` arguments.

    Returns
    -------
    int
        0; failures raise and become one error line.
    """
    from .. import ledger_file
    from ..accounting import check_budget_request
    from ..session import Session

    budget = budget_from(args)
    if budget.get("rho") is not None:
        # No release is granted less than MIN_RHO: a ledger of less could take none (a
        # review: --rho 1e-300 was accepted).
        check_budget_request(budget["rho"], None, None)
    session = Session(budget.get("rho"), epsilon=budget.get("epsilon"),
                      delta=budget.get("delta"))
    ledger_file.create(args.file, session)
    with printing(f"the ledger {args.file} was created"):
        print(f"created ledger {args.file}: budget {session.budget}")
    return 0


def run_show(args: argparse.Namespace) -> int:
    """Verify the ledger file and print its budget, its releases and what remains.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``ledger show`` arguments.

    Returns
    -------
    int
        0; a missing or corrupt file raises and becomes one error line.
    """
    from .. import ledger_file

    session = ledger_file.read(args.file)
    if args.json:
        with printing():
            json.dump(_as_dict(args.file, session), sys.stdout, indent=2, default=json_default)
            print()
        return 0
    lines = [f"ledger {args.file}: budget {session.budget}"]
    if session.ledger:
        lines.append("releases:")
        for release in session.ledger:
            accounted = ", ".join(_describe_event(e) for e in release.events)
            lines.append(f"  #{release.index}  {release.method:<12}  {release.budget}  "
                         f"{release.status}  (spent {release.spent:.6g} {release.budget.unit}; "
                         f"accounted as {accounted})")
            if release.label is not None:
                lines.append(f"      of {release.label}")
            if release.status == "reserved":
                lines.append(f"      {RESERVED}")
    else:
        lines.append("releases: none")
    lines.append(f"spent: {session.spent:.6g} {session.unit} (composed)")
    lines.append(f"remaining: {session.remaining:.6g} {session.unit}")
    if session.unit != "rho":
        # An epsilon left is not what the next release costs: releases compose under the
        # PLD, and a Gaussian one is charged by its rho (a trial misread the line above).
        lines.append(f"next release: at most rho = {session.largest_rho():.4g} if made only "
                     f"of Gaussian stages (cm, iome, gaussian); every release is checked by "
                     f"the composition before its data is read")
    with printing():
        print("\n".join(lines))
    return 0


def _as_dict(path: str, session: Any) -> dict[str, Any]:
    """What ``ledger show`` prints, as JSON values (a user trial: scripts auditing a ledger had
    only the text): the budget, each release with its events as the file keeps them, and the
    composed totals in the ledger's unit."""
    shown: dict[str, Any] = {
        "file": path, "budget": session.budget.to_dict(), "unit": session.unit,
        "releases": [release.to_dict() for release in session.ledger],  # as the file keeps them
        "spent": session.spent, "remaining": session.remaining}
    if session.unit != "rho":
        shown["next_release_max_rho"] = session.largest_rho()
    return shown


def _describe_event(event: Any) -> str:
    from ..session import event_to_dict

    fields = event_to_dict(event)
    kind = fields.pop("kind")
    if kind == "choice":
        # Every candidate's whole plan (auto's release) ran to 1,500 characters on one line
        # (a trial); the ledger file keeps them all. Without bounds auto's choice is among the
        # plans its private box can select, each holding the choice among candidates.
        count = len(fields["options"])
        return (f"choice among {count} plans, selected by the private box"
                if any(e["kind"] == "choice" for option in fields["options"] for e in option)
                else f"choice among {count} candidates' plans")
    return f"{kind}(" + ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                                  for k, v in fields.items()) + ")"
