"""The ``dpmean`` command line: ``estimate`` (a private mean of a data file) and ``demo`` (MNIST).

Bad input gives one line on stderr, ``dpmean: error: ...``, exit code 2, and no output file.
"""

from __future__ import annotations

import argparse
import contextlib
import io as _stdio
import json
import re
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from . import __version__, available_methods, ledger_file, mean
from .api import build_estimator
from .engines import ENGINES, open_source
from .errors import (
    DPMeanError,
    InsufficientDataWarning,
    InvalidDataError,
    InvalidParameterError,
)
from .io import load_data, write_bytes_atomic, write_text_atomic
from .session import Session, event_to_dict, release_events

EXIT_USAGE = 2
# Files above this size are read by the chunked engine unless --engine says otherwise: the
# in-memory engine would hold the data plus IOME's rotated copy (about 2x the file).
CHUNKED_ABOVE_BYTES = 1 << 30
DEMO_METHODS = ("iome", "cm", "gaussian")
DEMO_PNG = "mnist-private-means.png"
DEMO_JSON = "mnist-private-means.json"
NON_PRIVATE_HEADER = "NON-PRIVATE evaluation: the true means are used only to measure error"

# argparse (before Python 3.13) takes "-1e3" for an option; bounds need such numbers.
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-inf(inity)?$", re.I)


class _UsageError(Exception):
    """A command-line mistake found by argparse or by our own flag checks."""


class _Exit(Exception):
    """argparse finished on purpose (--help, --version)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBER

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(f"{message} (see '{self.prog} --help')")

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        if message:
            sys.stderr.write(message)
        raise _Exit(status)


def main(argv: list[str] | None = None) -> int:
    """Run the ``dpmean`` command; return the exit code (0 success, 2 bad input)."""
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
        return args.run(args)
    except _Exit as done:
        return done.status
    except (_UsageError, DPMeanError) as exc:
        return _fail(str(exc))
    except InsufficientDataWarning as exc:
        return _fail(f"too few rows for this budget; the command line does not publish the "
                     f"zero vector the estimator falls back to, and wrote nothing. {exc}")
    except KeyboardInterrupt:
        print("dpmean: interrupted; nothing was written", file=sys.stderr)
        return 130


def _fail(message: str) -> int:
    one_line = " ".join(message.split())
    print(f"dpmean: error: {one_line}", file=sys.stderr)
    return EXIT_USAGE


def _build_parser() -> _Parser:
    parser = _Parser(
        prog="dpmean",
        description="Differentially private mean estimation. Every number printed by "
        "'estimate' is a private release; 'demo' also prints clearly labelled non-private "
        "errors.",
    )
    parser.add_argument("--version", action="version", version=f"dpmean {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_estimate(sub)
    _add_demo(sub)
    _add_reproduce(sub)
    _add_ledger(sub)
    return parser


# --------------------------------------------------------------------------------------------
# dpmean estimate


def _add_estimate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "estimate",
        help="release a private mean of the rows of a data file",
        description="Release a differentially private mean of the rows of INPUT "
        "(.npy, .npz, .csv with optional header, .parquet, or .dat baskets). Give the budget as "
        "--rho (zCDP) or as --epsilon with --delta, and the public range of the data with "
        "--bounds LO HI (the same for every column) or --bounds-file (one range per column). "
        "The range must be chosen without looking at the data; values outside are clamped.",
    )
    p.add_argument("input", metavar="INPUT", help="the data file (rows are people)")
    _add_budget_arguments(p, "the release's")
    p.add_argument("--method", default="iome", metavar="M",
                   help=f"estimator: {', '.join(available_methods())} (default: iome)")
    bounds = p.add_mutually_exclusive_group()
    bounds.add_argument("--bounds", nargs=2, type=float, metavar=("LO", "HI"),
                        help="public range of every coordinate, e.g. --bounds 0 255")
    bounds.add_argument("--bounds-file", metavar="FILE.npy",
                        help="per-coordinate public ranges: a (2, d) array, row 0 the lower "
                        "bounds, row 1 the upper bounds (any format INPUT may have)")
    p.add_argument("--seed", type=int, metavar="S",
                   help="seed the noise (reproducible; for experiments only: anyone who knows "
                   "the seed can remove the noise). Default: a secure generator keyed from the OS")
    p.add_argument("--key", metavar="K", help="the array to use from an .npz INPUT")
    p.add_argument("--items", type=int, metavar="D",
                   help="for a .dat basket INPUT (required for one): the public number of "
                   "items, the length d of the released mean; item ids must lie in 0..D-1 "
                   "(ids 1..K need D = K + 1). Never read from the data, where one basket "
                   "could change it")
    p.add_argument("--output", metavar="FILE", help="write the result as JSON to FILE")
    p.add_argument("--json", action="store_true",
                   help="print the JSON result on stdout (the summary then goes to stderr)")
    p.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                   help="an estimator parameter, e.g. --option threshold_share=0.3; values "
                   "are read as int, float, true/false/none, else text (repeatable)")
    p.add_argument("--p", type=float, metavar="P",
                   help="the lp error to target, for estimators that take it (plan: 2 for l2, "
                   "the default; 1 for l1, e.g. on baskets)")
    p.add_argument("--engine", choices=ENGINES,
                   help="how the data is read: memory, chunked (bounded row chunks, one pass per "
                   "aggregate; chosen automatically for .npy/.csv/.parquet files above "
                   f"{CHUNKED_ABOVE_BYTES >> 30} GiB), sparse (.dat/.npz sparse input, any "
                   "method that supports it), dask (a dask.distributed cluster, see --scheduler)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="a dask.distributed scheduler, e.g. tcp://host:8786 (implies --engine "
                   "dask; needs pip install \"dpmean[dask]\")")
    p.add_argument("--ledger", metavar="FILE",
                   help="charge this release to a ledger file (see 'dpmean ledger init'): "
                   "refused, before the data is read and with nothing written, if it would "
                   "overspend the ledger's budget")
    p.set_defaults(run=_run_estimate)


def _run_estimate(args: argparse.Namespace) -> int:
    budget = _budget(args)
    options = _parse_options(args.option)
    if args.p is not None:
        if "p" in options:
            raise _UsageError("give p once: --p or --option p=..., not both")
        options["p"] = args.p
    output = Path(args.output) if args.output else None
    if output is not None:
        _check_writable(output)
    engine = _choose_engine(args)
    if engine is not None:
        options["engine"] = engine
    _check_input_flags(args)
    # No bounds is for the methods with other public inputs (coinpress, iome-gaussian); the
    # others refuse it with the library's explanation. A .dat basket file is 0/1 by its format,
    # so its box is (0, 1) without looking at the data.
    bounds = (_load_bounds(args.bounds_file) if args.bounds_file
              else tuple(args.bounds) if args.bounds
              else (0.0, 1.0) if Path(args.input).suffix.lower() == ".dat" else None)
    # Built from public values only: its budget is what a ledger is charged, before any data.
    estimator = build_estimator(args.method, **budget, bounds=bounds,
                                random_state=args.seed, **options)
    index = None
    if args.ledger is not None:
        if not Path(args.input).exists():
            raise _UsageError(f"{args.input}: no such file (nothing was charged to the ledger)")
        index, _ = ledger_file.reserve(args.ledger, estimator.method, estimator.budget,
                                       release_events(estimator))
    try:
        x = _open_input(args, engine)
        with warnings.catch_warnings():
            warnings.simplefilter("error", InsufficientDataWarning)
            try:
                with _dask_client(args.scheduler):
                    result = estimator.estimate(x)
            except InvalidDataError as exc:
                raise InvalidDataError(f"{args.input}: {exc}") from None
    except BaseException:
        if index is not None:
            # The data may have been read: the release stays charged, as failed.
            with contextlib.suppress(DPMeanError):
                ledger_file.settle(args.ledger, index, "failed")
        raise
    session = (ledger_file.settle(args.ledger, index, "released", result.spent)
               if index is not None else None)
    payload = result.to_dict()
    if "epsilon" in budget:
        payload["epsilon"] = budget["epsilon"]
        payload["delta"] = budget["delta"]
    text = json.dumps(payload, indent=2, default=_json_default) + "\n"
    if output is not None:
        _write(output, text)
    summary_to = sys.stderr if args.json else sys.stdout
    if args.json:
        sys.stdout.write(text)
    _print_summary(result, budget, args, output, summary_to)
    if session is not None:
        print(f"charged to ledger {args.ledger} as release #{index}: {session.spent:.6g} "
              f"{session.unit} of {session.budget} spent, {session.remaining:.6g} remaining",
              file=summary_to)
    return 0


def _choose_engine(args: argparse.Namespace) -> str | None:
    """--engine, else dask with --scheduler, else chunked for a big chunkable file."""
    if args.scheduler is not None and args.engine not in (None, "dask"):
        raise _UsageError(f"--scheduler runs on the dask engine, not --engine {args.engine}")
    if args.engine is not None or args.scheduler is not None:
        return args.engine or "dask"
    path = Path(args.input)
    if path.suffix.lower() in (".npy", ".csv", ".parquet") and path.is_file() and (
            path.stat().st_size > CHUNKED_ABOVE_BYTES):
        return "chunked"
    return None


def _check_input_flags(args: argparse.Namespace) -> None:
    if args.items is not None and Path(args.input).suffix.lower() != ".dat":
        raise _UsageError("--items is the number of items of a .dat basket file; INPUT is not "
                          "one")


def _open_input(args: argparse.Namespace, engine: str | None) -> Any:
    """The data as the engine reads it: a row source, a dask array, or loaded in memory."""
    _check_input_flags(args)
    is_dat = Path(args.input).suffix.lower() == ".dat"
    # The readers refuse a .dat file without --items, with the reason.
    items = {"n_items": args.items} if is_dat else {}
    if engine in ("chunked", "dask") and Path(args.input).suffix.lower() != ".npz":
        if engine == "chunked":
            return open_source(args.input, **items)
        try:
            from .engines.dask import dask_array_from_file
        except ImportError:
            raise _UsageError('--engine dask needs dask: pip install "dpmean[dask]"') from None
        return dask_array_from_file(args.input, **items)
    return load_data(args.input, key=args.key, **items)


def _dask_client(address: str | None) -> Any:
    """A dask.distributed client for the run (it becomes Dask's scheduler), or nothing."""
    if address is None:
        return contextlib.nullcontext()
    try:
        from distributed import Client
    except ImportError:
        raise _UsageError('--scheduler needs dask.distributed: pip install "dpmean[dask]"') \
            from None
    try:
        return Client(address, timeout="10s")
    except OSError as exc:
        raise _UsageError(f"cannot reach the Dask scheduler at {address}: {exc}") from None


def _add_budget_arguments(parser: argparse.ArgumentParser, whose: str) -> None:
    """--rho, or --epsilon with --delta: the one way every command takes a budget (read back
    by ``_budget``)."""
    budget = parser.add_argument_group(
        f"privacy budget, {whose} (give --rho, or --epsilon and --delta)")
    budget.add_argument("--rho", type=float, metavar="R", help="zCDP budget rho > 0")
    budget.add_argument("--epsilon", type=float, metavar="E",
                        help="(epsilon, delta)-DP budget epsilon > 0, with --delta")
    budget.add_argument("--delta", type=float, metavar="D", help="delta in (0, 1), with --epsilon")


def _budget(args: argparse.Namespace) -> dict[str, float]:
    if args.rho is not None:
        if args.epsilon is not None or args.delta is not None:
            raise _UsageError("give either --rho or --epsilon with --delta, not both")
        return {"rho": args.rho}
    if args.epsilon is None and args.delta is None:
        raise _UsageError("no privacy budget given: pass --rho R (zCDP), or --epsilon E and "
                          "--delta D")
    if args.epsilon is None or args.delta is None:
        raise _UsageError("--epsilon and --delta go together: give both (or --rho instead)")
    return {"epsilon": args.epsilon, "delta": args.delta}


def _parse_options(items: Sequence[str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name.isidentifier():
            raise _UsageError(f"--option expects NAME=VALUE, got {item!r}")
        if name in options:
            raise _UsageError(f"--option {name} is given twice")
        if name in _OWN_FLAGS:
            raise _UsageError(f"--option {name}=... is not an estimator option; use --"
                              f"{_OWN_FLAGS[name]}")
        options[name] = _parse_value(raw.strip())
    return options


# Parameters of dpmean.mean that have flags of their own.
_OWN_FLAGS = {"rho": "rho", "epsilon": "epsilon", "delta": "delta", "method": "method",
              "bounds": "bounds", "random_state": "seed"}


def _parse_value(raw: str) -> Any:
    for convert in (int, float):
        try:
            return convert(raw)
        except ValueError:
            pass
    lowered = raw.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    return raw


def _load_bounds(path: str) -> tuple[np.ndarray, np.ndarray]:
    arr = load_data(path)
    if not isinstance(arr, np.ndarray) or arr.ndim != 2 or arr.shape[0] != 2:
        shape = getattr(arr, "shape", None)
        raise InvalidParameterError(
            f"{path}: a bounds file holds a (2, d) array (row 0 lower bounds, row 1 upper "
            f"bounds), got shape {shape}"
        )
    return arr[0].astype(np.float64), arr[1].astype(np.float64)


def _print_summary(result: Any, budget: dict[str, float], args: argparse.Namespace,
                   output: Path | None, out: TextIO) -> None:
    lines = [
        f"dpmean estimate: method {result.method}, n = {result.n} rows, d = {result.d} columns",
        _privacy_line(result),
    ]
    if "epsilon" in budget:
        lines.append(f"  requested as (epsilon, delta) = ({budget['epsilon']:g}, "
                     f"{budget['delta']:g})-DP")
    lines.append(f"ledger ({result.unit} per stage):")
    width = max((len(k) for k in result.ledger), default=0)
    lines += [f"  {stage:<{width}}  {rho:.6g}" for stage, rho in result.ledger.items()]
    if result.diagnostics:
        lines.append("private diagnostics:")
        width = max(len(k) for k in result.diagnostics)
        lines += [f"  {name:<{width}}  {_describe(value)}"
                  for name, value in result.diagnostics.items()]
    shown = min(result.d, 8)
    lines.append(f"private mean (first {shown} of {result.d}): "
                 f"{_format_values(result.mean[:shown])}{' ...' if result.d > shown else ''}")
    from .intervals import interval_summary  # noqa: PLC0415 (error bars, issue 19)

    ci = interval_summary(result)
    lines.append(f"{ci['level']:.0%} interval per coordinate ({ci['basis']}): lo "
                 f"{_format_values(ci['lo'][:shown])}; hi {_format_values(ci['hi'][:shown])}")
    lines.append(f"{ci['level']:.0%} l2 radius of the whole vector: {ci['radius']:.6g}")
    if args.seed is not None:
        lines.append("note: --seed makes the noise reproducible; use it for experiments only")
    if output is not None:
        lines.append(f"wrote {output}")
    print("\n".join(lines), file=out)


def _privacy_line(result: Any) -> str:
    # The budget names its own unit: a rho is only ever printed as a rho.
    budget = result.budget
    line = (f"privacy: {budget.unit} = {result.spent:.6g} spent of {budget.total:.6g} "
            f"({budget.notion})")
    if budget.unit == "epsilon" and budget.delta is not None:
        line += f", delta = {budget.delta:g}"
    if budget.omega is not None:
        line += f", omega = {budget.omega:g}"
    return line


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray) and value.ndim > 0:
        shown = min(value.size, 5)
        rest = " ..." if value.size > shown else ""
        return f"array of {value.size}: {_format_values(value.ravel()[:shown])}{rest}"
    if isinstance(value, (bool, np.bool_, str)):
        return str(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return f"{value:.6g}"
    return str(value)


def _format_values(values: np.ndarray) -> str:
    return ", ".join(f"{v:.6g}" for v in np.asarray(values, dtype=np.float64))


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return str(obj)


def _check_writable(path: Path) -> None:
    """Refuse an output path that cannot be written before any work is done."""
    parent = path.parent
    if path.is_dir():
        raise _UsageError(f"cannot write {path}: it is a directory")
    if not parent.is_dir():
        raise _UsageError(f"cannot write {path}: directory {parent} does not exist")


def _write(path: Path, content: str | bytes) -> None:
    try:
        if isinstance(content, bytes):
            write_bytes_atomic(path, content)
        else:
            write_text_atomic(path, content)
    except OSError as exc:
        raise _UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


# --------------------------------------------------------------------------------------------
# dpmean demo


def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="private mean images of the bundled MNIST digits",
        description="For each MNIST digit 0-9, release the private mean image with the methods "
        f"{', '.join(DEMO_METHODS)}, print their l2 errors (a NON-PRIVATE evaluation against the "
        f"true means) and save a picture, {DEMO_PNG}, and the table, {DEMO_JSON}, in --out.",
    )
    p.add_argument("--out", default="dpmean-demo", metavar="DIR",
                   help="folder for the PNG and the JSON table (default: dpmean-demo)")
    p.add_argument("--rho", type=float, default=0.5, metavar="R",
                   help="zCDP budget of each release (default: 0.5)")
    p.add_argument("--seed", type=int, metavar="S",
                   help="seed the noise for a reproducible picture (default: secure, OS-keyed)")
    p.add_argument("--data", metavar="FILE.npz",
                   help="an MNIST .npz with arrays 'images' (n, 784) and 'digits' (n,) "
                   "(default: the bundled data/mnist-70k.npz)")
    p.set_defaults(run=_run_demo)


def bundled_mnist() -> Path:
    """The MNIST file shipped in the repository's data folder (src/dpmean/../../data)."""
    return Path(__file__).resolve().parent.parent.parent / "data" / "mnist-70k.npz"


def _run_demo(args: argparse.Namespace) -> int:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise _UsageError('the demo draws its picture with matplotlib: '
                          'pip install "dpmean[plots]"') from None
    from tqdm import tqdm

    data = Path(args.data) if args.data else bundled_mnist()
    if args.data is None and not data.is_file():
        raise _UsageError(
            f"the bundled MNIST file is missing: looked for {data}. The demo needs a source "
            f"checkout installed with 'pip install -e .', or pass --data FILE.npz"
        )
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise _UsageError(f"--out {out} exists and is not a directory")
    images = load_data(data, key="images")
    digits = load_data(data, key="digits")
    if images.ndim != 2 or images.shape[1] != 784 or digits.shape != (images.shape[0],):
        raise _UsageError(f"{data}: expected 'images' of shape (n, 784) and 'digits' of shape "
                          f"(n,), got {images.shape} and {digits.shape}")

    labels = list(range(10))
    groups = [images[digits == k] for k in labels]
    if any(len(g) == 0 for g in groups):
        raise _UsageError(f"{data}: every digit 0-9 needs at least one image")
    seeds = (np.random.SeedSequence(args.seed).spawn(len(DEMO_METHODS) * len(labels))
             if args.seed is not None else [None] * (len(DEMO_METHODS) * len(labels)))
    private: dict[str, list[np.ndarray]] = {m: [] for m in DEMO_METHODS}
    spent: dict[str, list[float]] = {m: [] for m in DEMO_METHODS}
    # disable=None: a bar on a terminal, nothing in logs and pipes.
    with tqdm(total=len(seeds), desc="private releases", unit="release", file=sys.stderr,
              disable=None) as bar, warnings.catch_warnings():
        warnings.simplefilter("error", InsufficientDataWarning)
        i = 0
        for method in DEMO_METHODS:
            for group in groups:
                result = mean(group, rho=args.rho, method=method, bounds=(0, 255),
                              random_state=seeds[i])
                private[method].append(np.asarray(result.mean))
                spent[method].append(result.rho_spent)
                i += 1
                bar.update()

    # NON-PRIVATE: the true means are computed only to measure the error of the releases.
    true_means = [g.mean(axis=0, dtype=np.float64) for g in groups]
    errors = {m: [float(np.linalg.norm(private[m][k] - true_means[k])) for k in labels]
              for m in DEMO_METHODS}
    table = _demo_table(labels, [len(g) for g in groups], errors, args.rho)

    fig = Figure(figsize=(12, 5.4), dpi=100)
    FigureCanvasAgg(fig)
    axes = fig.subplots(1 + len(DEMO_METHODS), len(labels))
    rows = [("true mean\n(non-private)", true_means)] + [
        (f"{m}\nrho={args.rho:g}", private[m]) for m in DEMO_METHODS]
    for r, (row_label, imgs) in enumerate(rows):
        for k in labels:
            ax = axes[r, k]
            # Clamping to the public pixel range is post-processing; it does not cost privacy.
            ax.imshow(np.clip(imgs[k], 0, 255).reshape(28, 28), cmap="gray", vmin=0, vmax=255)
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(str(k))
            if k == 0:
                ax.set_ylabel(row_label, fontsize=9)
    fig.suptitle(f"Private mean images of MNIST digits (rho = {args.rho:g} zCDP per mean image, "
                 f"bounds 0-255); top row: true means, shown for comparison only")
    fig.tight_layout()
    png = _stdio.BytesIO()
    fig.savefig(png, format="png")

    report = {
        "note": NON_PRIVATE_HEADER + ". Each digit's images are treated as a separate dataset; "
        "the three methods run on the same images, so together they cost 3 x rho.",
        "rho_per_release": args.rho,
        "bounds": [0, 255],
        "seed": args.seed,
        "methods": list(DEMO_METHODS),
        "rho_spent": {m: spent[m] for m in DEMO_METHODS},
        "digits": [
            {"digit": k, "n": len(groups[k]),
             "l2_error": {m: errors[m][k] for m in DEMO_METHODS}}
            for k in labels
        ],
        "mean_l2_error": {m: float(np.mean(errors[m])) for m in DEMO_METHODS},
    }
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _UsageError(f"cannot create {out}: {exc.strerror or exc}") from None
    _write(out / DEMO_PNG, png.getvalue())
    _write(out / DEMO_JSON, json.dumps(report, indent=2) + "\n")
    print(table)
    print(f"wrote {out / DEMO_PNG} and {out / DEMO_JSON}")
    return 0


def _demo_table(labels: list[int], counts: list[int], errors: dict[str, list[float]],
                rho: float) -> str:
    rule = "=" * 72
    head = f"{'digit':>5}  {'n':>6}  " + "  ".join(f"{m:>10}" for m in DEMO_METHODS)
    lines = [
        rule,
        NON_PRIVATE_HEADER + ".",
        "The errors below are NOT private; only the mean images are private releases.",
        rule,
        f"l2 error ||private mean - true mean|| in pixel units (0-255), d = 784, "
        f"rho = {rho:g} zCDP per release",
        "(each digit is its own dataset; the 3 methods see the same images, 3 x rho in total)",
        "",
        head,
        "-" * len(head),
    ]
    for k, n in zip(labels, counts, strict=True):
        lines.append(f"{k:>5}  {n:>6}  " + "  ".join(f"{errors[m][k]:>10.1f}"
                                                      for m in DEMO_METHODS))
    lines.append("-" * len(head))
    lines.append(f"{'mean':>5}  {'':>6}  " + "  ".join(f"{np.mean(errors[m]):>10.1f}"
                                                       for m in DEMO_METHODS))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# dpmean reproduce


def _add_reproduce(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "reproduce",
        help="rerun a paper figure: CSV, PNG and markdown summary (NON-PRIVATE evaluation)",
        description="Run one paper experiment (see --list) with its settings, append each "
        "finished trial to NAME.csv in --out (an interrupted run resumes), then draw NAME.png "
        "and write NAME.md. The errors are NON-PRIVATE: they compare releases to true means.",
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="the experiment to run")
    p.add_argument("--list", action="store_true", help="list the experiments and exit")
    p.add_argument("--trials", type=int, metavar="N",
                   help="trials per setting (default: the paper's count)")
    p.add_argument("--quick", action="store_true",
                   help="a small grid and few trials (minutes, not hours); files NAME-quick.*")
    p.add_argument("--jobs", type=int, default=1, metavar="J",
                   help="worker processes (default: 1)")
    p.add_argument("--out", default="dpmean-results", metavar="DIR",
                   help="folder for the CSV, PNG and summary (default: dpmean-results)")
    p.set_defaults(run=_run_reproduce)


def _run_reproduce(args: argparse.Namespace) -> int:
    from .experiments import SPECS, reproduce

    if args.list:
        width = max(map(len, SPECS))
        for name, spec in SPECS.items():
            print(f"{name:<{width}}  {spec.title}")
        return 0
    if args.name is None:
        raise _UsageError("give an experiment NAME or --list (see 'dpmean reproduce --help')")
    if args.name not in SPECS:
        raise _UsageError(f"unknown experiment {args.name!r}; see 'dpmean reproduce --list'")
    if args.trials is not None and args.trials < 1:
        raise _UsageError(f"--trials must be at least 1, got {args.trials}")
    if args.jobs < 1:
        raise _UsageError(f"--jobs must be at least 1, got {args.jobs}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise _UsageError(f"cannot write to {out}: it is not a directory")
    try:
        paths = reproduce(args.name, out, trials=args.trials, quick=args.quick, jobs=args.jobs)
    except OSError as exc:
        raise _UsageError(f"cannot write to {out}: {exc.strerror or exc}") from None
    print(NON_PRIVATE_HEADER)
    for path in paths:
        print(f"wrote {path}")
    return 0


# --------------------------------------------------------------------------------------------
# dpmean ledger


def _add_ledger(sub: argparse._SubParsersAction) -> None:
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
    _add_budget_arguments(init, "the ledger's total")
    init.set_defaults(run=_run_ledger_init)
    show = actions.add_parser("show", help="print a ledger's budget, releases and what remains",
                              description="Verify FILE and print its budget, each release and "
                              "what remains.")
    show.add_argument("file", metavar="FILE")
    show.set_defaults(run=_run_ledger_show)


def _run_ledger_init(args: argparse.Namespace) -> int:
    session = Session(**_budget(args))
    ledger_file.create(args.file, session)
    print(f"created ledger {args.file}: budget {session.budget}")
    return 0


def _describe_event(event: Any) -> str:
    fields = event_to_dict(event)
    kind = fields.pop("kind")
    return f"{kind}(" + ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                                  for k, v in fields.items()) + ")"


def _run_ledger_show(args: argparse.Namespace) -> int:
    session = ledger_file.read(args.file)
    lines = [f"ledger {args.file}: budget {session.budget}"]
    if session.ledger:
        lines.append("releases:")
        for release in session.ledger:
            accounted = ", ".join(_describe_event(e) for e in release.events)
            lines.append(f"  #{release.index}  {release.method:<12}  {release.budget}  "
                         f"{release.status}  (spent {release.spent:.6g} {release.budget.unit}; "
                         f"accounted as {accounted})")
    else:
        lines.append("releases: none")
    lines.append(f"spent: {session.spent:.6g} {session.unit} (composed)")
    lines.append(f"remaining: {session.remaining:.6g} {session.unit}")
    print("\n".join(lines))
    return 0
