"""``dpmean demo``: private mean images of the MNIST digits at two budgets, and their NON-PRIVATE
errors, in one picture (IOME section 6 compares the same methods on MNIST).

Three steps, each a function: :func:`compute` (the private releases, composed per digit in a
:class:`dpmean.Session`, and, NON-PRIVATE, their errors), :func:`figure` (the picture; :func:`plot`
renders it as PNG) and :func:`write` (the PNG and the JSON report into --out); :func:`run`
checks the inputs, chains them and prints the table, which holds the numbers of the picture and
the JSON.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..budget import Budget
from ..errors import InsufficientDataWarning
from .arguments import NON_PRIVATE_HEADER, UsageError, add_seed_argument

# numpy, the readers and the estimators are imported by the functions that use them: building
# the parser (every dpmean command, and --help) must not pay for them.
if TYPE_CHECKING:  # matplotlib is an optional extra, imported when the picture is drawn
    import numpy as np
    from matplotlib.figure import Figure

METHODS = ("iome", "cm", "gaussian")
# rho per release. At 0.5 the ~7,000 images of a digit make privacy almost free and the methods
# differ by less than the eye sees; at 0.02 the noise shows, and so does the difference between
# the methods (iome about 1.4 times less error than cm and gaussian). Both are public choices,
# made without looking at the data.
BUDGETS = (0.5, 0.02)
PNG_NAME = "mnist-private-means.png"
JSON_NAME = "mnist-private-means.json"
DIGITS = tuple(range(10))
# The pixel range: public, it holds for every MNIST image whatever the data.
BOUNDS = (0, 255)
SIDE = 28  # an MNIST image is 28 x 28 pixels


@dataclass(frozen=True)
class DemoResult:
    """The demo's numbers, per budget, method and digit: private releases and NON-PRIVATE errors.

    Attributes
    ----------
    budgets : tuple of float
        The zCDP budget of each release, one block of the picture each.
    seed : int or None
        The seed of the noise, None for the secure default.
    counts : list of int
        Images per digit (each digit is its own dataset; the counts are treated as public).
    true_means : list of ndarray
        NON-PRIVATE: the exact mean image of each digit, only to measure and show the error.
    private : list of dict
        Per budget, method to the private mean image of each digit, projected onto the public
        pixel box (post-processing, free): what the picture shows and the errors measure.
    spent : list of dict
        Per budget, method to the rho each digit's release spent (its own ledger's total).
    errors : list of dict
        Per budget, method to the NON-PRIVATE l2 error of each digit's (projected) release.
    composed : list of float
        Per digit, the rho its session composed over all its releases.
    """

    budgets: tuple[float, ...]
    seed: int | None
    counts: list[int]
    true_means: list[np.ndarray]
    private: list[dict[str, list[np.ndarray]]]
    spent: list[dict[str, list[float]]]
    errors: list[dict[str, list[float]]]
    composed: list[float]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``demo`` command to the ``dpmean`` parser.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subparsers of the top-level parser.
    """
    p = sub.add_parser(
        "demo",
        help="private mean images of the bundled MNIST digits",
        description="For each MNIST digit 0-9, release the private mean image with the methods "
        f"{', '.join(METHODS)} at each budget, print their l2 errors (a NON-PRIVATE evaluation "
        f"against the true means) and save one picture of the true and private means with "
        f"their errors, {PNG_NAME}, and the table, {JSON_NAME}, in --out.",
    )
    p.add_argument("--out", default="dpmean-demo", metavar="DIR",
                   help="folder for the PNG and the JSON table (default: dpmean-demo)")
    p.add_argument("--rho", type=float, nargs="+", default=list(BUDGETS), metavar="R",
                   help="zCDP budget of each release, one or more values; each draws a block of "
                   f"the picture (default: {' '.join(f'{b:g}' for b in BUDGETS)})")
    add_seed_argument(p, "seed the noise for a reproducible picture (default: secure, OS-keyed)")
    p.add_argument("--data", metavar="FILE.npz",
                   help="an MNIST .npz with arrays 'images' (n, 784) and 'digits' (n,) "
                   "(default: the bundled data/mnist-70k.npz)")
    p.set_defaults(run=run)


def bundled_mnist() -> Path:
    """The MNIST file shipped in the repository's data folder.

    Returns
    -------
    Path
        ``data/mnist-70k.npz`` of the source checkout (src/dpmean/cli/../../../data); it exists
        only in a checkout or an editable install.
    """
    return Path(__file__).resolve().parents[3] / "data" / "mnist-70k.npz"


def run(args: argparse.Namespace) -> int:
    """Release, measure, draw and write; then print the table.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``demo`` arguments.

    Returns
    -------
    int
        0; bad inputs raise before any release, and nothing is written unless all succeed.
    """
    _require_matplotlib()
    budgets = _budgets(args.rho)
    data = _data_file(args.data)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a directory")
    result = compute(load_digits(data), budgets, args.seed)
    png, report_file = write(out, plot(result), report(result))
    print(table(result))
    print(f"wrote {png} and {report_file}")
    return 0


def _require_matplotlib() -> None:
    # Checked first: a missing matplotlib should stop the demo before sixty releases, not after.
    try:
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.figure  # noqa: F401
    except ImportError:
        raise UsageError('the demo draws its picture with matplotlib: '
                         'pip install "dpmean[plots]"') from None


def _budgets(given: list[float]) -> tuple[float, ...]:
    # Checked before any release: a bad second value should not cost the first block's releases.
    for rho in given:
        Budget.zcdp(rho)
    if len(set(given)) != len(given):
        raise UsageError(f"--rho values must differ, got {' '.join(f'{r:g}' for r in given)}")
    return tuple(given)


def _data_file(given: str | None) -> Path:
    data = Path(given) if given else bundled_mnist()
    if given is None and not data.is_file():
        raise UsageError(
            f"the bundled MNIST file is missing: looked for {data}. The demo needs a source "
            f"checkout installed with 'pip install -e .', or pass --data FILE.npz"
        )
    return data


def load_digits(path: Path) -> list[np.ndarray]:
    """Read an MNIST .npz and split its images by digit.

    Parameters
    ----------
    path : Path
        A .npz with arrays ``images`` (n, 784) and ``digits`` (n,).

    Returns
    -------
    list of ndarray
        For each digit 0-9, its images as rows.

    Raises
    ------
    UsageError
        When the arrays have other shapes or a digit has no image.
    """
    from ..io import load_data

    if not str(path).lower().endswith(".npz"):
        # load_data's "key ('images') only applies to .npz files" named a key the user never
        # gave (a docs review).
        raise UsageError(f"{path}: --data takes an MNIST .npz archive with arrays 'images' "
                         f"(n, 784) and 'digits' (n,)")
    images = load_data(path, key="images")
    digits = load_data(path, key="digits")
    if images.ndim != 2 or images.shape[1] != SIDE * SIDE or digits.shape != (images.shape[0],):
        raise UsageError(f"{path}: expected 'images' of shape (n, 784) and 'digits' of shape "
                         f"(n,), got {images.shape} and {digits.shape}")
    groups = [images[digits == k] for k in DIGITS]
    if any(len(g) == 0 for g in groups):
        raise UsageError(f"{path}: every digit 0-9 needs at least one image")
    return groups


# ------------------------------------------------------------------------------------ compute


def compute(groups: list[np.ndarray], budgets: tuple[float, ...], seed: int | None,
            ) -> DemoResult:
    """Release each digit's mean image with each method at each budget, then measure the errors.

    Parameters
    ----------
    groups : list of ndarray
        Each digit's images, as from :func:`load_digits`.
    budgets : tuple of float
        zCDP budget of each release. A digit's images are released ``len(METHODS)`` times at
        each budget, so its session composes ``len(METHODS) * sum(budgets)``.
    seed : int or None
        Seeds every release's noise reproducibly; None for the secure default.

    Returns
    -------
    DemoResult
        The releases and, NON-PRIVATE, their l2 errors.

    Raises
    ------
    InsufficientDataWarning
        As an error, when a digit has too few images for a budget.
    """
    import numpy as np

    private, spent, composed = _release_all(groups, budgets, seed)
    # NON-PRIVATE: the true means are computed only to measure the error of the releases.
    true_means = [g.mean(axis=0, dtype=np.float64) for g in groups]
    errors = [{m: [float(np.linalg.norm(block[m][k] - true_means[k])) for k in DIGITS]
               for m in METHODS} for block in private]
    return DemoResult(budgets=budgets, seed=seed, counts=[len(g) for g in groups],
                      true_means=true_means, private=private, spent=spent, errors=errors,
                      composed=composed)


def _release_all(groups: list[np.ndarray], budgets: tuple[float, ...], seed: int | None,
                 ) -> tuple[list[dict[str, list[np.ndarray]]], list[dict[str, list[float]]],
                            list[float]]:
    import numpy as np
    from tqdm import tqdm

    from ..session import Session

    # One session per digit (each digit is its own dataset): it charges every release of that
    # digit's images and refuses, before reading them, one that would exceed the total.
    sessions = [Session(rho=len(METHODS) * sum(budgets)) for _ in DIGITS]
    runs = list(itertools.product(range(len(budgets)), METHODS, DIGITS))
    seeds = (np.random.SeedSequence(seed).spawn(len(runs)) if seed is not None
             else [None] * len(runs))
    private: list[dict[str, list[np.ndarray]]] = [{m: [] for m in METHODS} for _ in budgets]
    spent: list[dict[str, list[float]]] = [{m: [] for m in METHODS} for _ in budgets]
    # disable=None: a bar on a terminal, nothing in logs and pipes.
    with tqdm(total=len(runs), desc="private releases", unit="release", file=sys.stderr,
              disable=None) as bar, warnings.catch_warnings():
        warnings.simplefilter("error", InsufficientDataWarning)
        for (b, method, k), state in zip(runs, seeds, strict=True):
            result = sessions[k].mean(groups[k], rho=budgets[b], method=method, bounds=BOUNDS,
                                      random_state=state)
            # Projecting onto the public pixel box is post-processing: it costs no privacy and
            # never moves a release away from the true mean, which lies in the box.
            private[b][method].append(np.clip(np.asarray(result.mean, dtype=float), *BOUNDS))
            spent[b][method].append(result.spent)  # the demo's budgets are zCDP: rho
            bar.update()
    return private, spent, [s.spent for s in sessions]


# ------------------------------------------------------------------------------------ plot


def plot(result: DemoResult) -> bytes:
    """The picture of :func:`figure` for ``result`` (from :func:`compute`), as PNG bytes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = figure(result)
    FigureCanvasAgg(fig)
    png = io.BytesIO()
    fig.savefig(png, format="png")
    return png.getvalue()


def figure(result: DemoResult) -> Figure:
    """Draw the true mean images above each budget's block of private ones, with their errors.

    Parameters
    ----------
    result : DemoResult
        What :func:`compute` returned.

    Returns
    -------
    matplotlib.figure.Figure
        Every number in it (errors, counts, rho) is the one :func:`table` and :func:`report`
        give, rounded.
    """
    import numpy as np
    from matplotlib.figure import Figure
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    rows = 1 + len(result.budgets) * len(METHODS)
    head, foot, height = 0.95, 0.7, 1.3 * rows + 0.6  # inches: title, footnote, all rows
    total = head + height + foot
    # The rows fill the rectangle between the title and the footnote, which are drawn apart.
    fig = Figure(figsize=(12, total), dpi=100,
                 layout=ConstrainedLayoutEngine(rect=(0, foot / total, 1, height / total)))
    blocks: Any = fig.subfigures(  # an array of subfigures (matplotlib types it loosely)
        1 + len(result.budgets), 1, height_ratios=[1.25] + [len(METHODS)] * len(result.budgets))
    true_row = blocks[0].subplots()
    label = _image_row(true_row, result.true_means, "true mean\n(NON-PRIVATE)",
                       [f"digit {k}\nn = {n:,}" for k, n in zip(DIGITS, result.counts,
                                                               strict=True)], above=True)
    label.set_color("firebrick")  # not a release: marked apart
    for b, rho in enumerate(result.budgets):
        block = blocks[1 + b]
        block.suptitle(f"private means, rho = {rho:g} per release", fontsize=11,
                       fontweight="bold")
        best = np.argmin([result.errors[b][m] for m in METHODS], axis=0)
        for r, (m, ax) in enumerate(zip(METHODS, block.subplots(len(METHODS), 1), strict=True)):
            errors = result.errors[b][m]
            _image_row(ax, result.private[b][m], f"{m}\nmean error\n{np.mean(errors):.0f}",
                       [f"{e:.0f}" for e in errors], bold=best == r)
    fig.text(0.5, 1 - 0.12 / total, "dpmean demo: the mean image of each MNIST digit, "
             "released with differential privacy", ha="center", va="top", fontsize=14)
    fig.text(0.5, 1 - 0.45 / total, "Each private mean is rho-zCDP: no single image moves "
             "it much; smaller rho, a stronger guarantee and more noise.\nThe true means (top, "
             "NON-PRIVATE) are shown only to judge the private ones.", ha="center", va="top",
             fontsize=10)
    fig.text(0.5, 0.1 / total,
             f"Under each image: its l2 error ||private - true|| over the {SIDE * SIDE} "
             f"pixels, each 0-255 (divide by {SIDE} for a typical pixel's error),\na "
             f"NON-PRIVATE evaluation; bold: the smallest for that digit and rho.\n"
             f"Each digit's images are one dataset; its "
             f"{len(METHODS) * len(result.budgets)} releases compose to "
             f"rho = {result.composed[0]:g} (zCDP). "
             f"Seed: {result.seed if result.seed is not None else 'none (secure noise)'}.",
             ha="center", va="bottom", fontsize=9)
    return fig


def _image_row(ax: Any, images: list[np.ndarray], label: str, notes: list[str],
               above: bool = False, bold: Any = None) -> Any:
    """The ten digit images side by side in one axes (one axes per row keeps drawing quick),
    on the pixel scale, with a note under (or ``above``) each, in bold where ``bold`` is set;
    returns the row's label (a matplotlib Text)."""
    import matplotlib
    import numpy as np

    # Tiles separated by NaN columns, drawn in the background colour.
    gap = np.full((SIDE, SIDE // 4), np.nan)
    tiles = [part for image in images for part in (image.reshape(SIDE, SIDE), gap)][:-1]
    cmap = matplotlib.colormaps["gray"].with_extremes(bad="white")
    ax.imshow(np.hstack(tiles), cmap=cmap, vmin=BOUNDS[0], vmax=BOUNDS[1],
              interpolation="nearest")
    ax.set_axis_off()
    text = ax.text(-SIDE // 8, SIDE / 2, label, rotation=90, ha="right", va="center",
                   fontsize=9)
    step = SIDE + gap.shape[1]
    for k, note in enumerate(notes):
        weight = "bold" if bold is not None and bold[k] else "normal"
        ax.text(k * step + (SIDE - 1) / 2, -1.5 if above else SIDE + 0.5, note, ha="center",
                va="bottom" if above else "top", fontsize=9, fontweight=weight)
    return text


# ------------------------------------------------------------------------------------ write


def table(result: DemoResult) -> str:
    """The errors as a text table under a NON-PRIVATE warning, for the terminal.

    Parameters
    ----------
    result : DemoResult
        What :func:`compute` returned.

    Returns
    -------
    str
        The table, without a final newline: the numbers of the picture, to one decimal.
    """
    import numpy as np

    rule = "=" * 72
    columns = [(b, m) for b in range(len(result.budgets)) for m in METHODS]
    head = f"{'digit':>5}  {'n':>6}  " + "  ".join(f"{m:>10}" for _, m in columns)
    over = f"{'':>5}  {'rho':>6}  " + "  ".join(f"{result.budgets[b]:>10g}" for b, _ in columns)
    lines = [
        rule,
        NON_PRIVATE_HEADER + ".",
        "The errors below are NOT private; only the mean images are private releases.",
        rule,
        f"l2 error ||private mean - true mean|| in pixel units (0-255), d = {SIDE * SIDE}, "
        f"at each rho (zCDP per release)",
        f"(each digit is its own dataset; its {len(columns)} releases compose to rho = "
        f"{result.composed[0]:g})",
        "",
        over,
        head,
        "-" * len(head),
    ]
    for k, n in zip(DIGITS, result.counts, strict=True):
        lines.append(f"{k:>5}  {n:>6}  " + "  ".join(f"{result.errors[b][m][k]:>10.1f}"
                                                      for b, m in columns))
    lines.append("-" * len(head))
    lines.append(f"{'mean':>5}  {'':>6}  " + "  ".join(
        f"{np.mean(result.errors[b][m]):>10.1f}" for b, m in columns))
    return "\n".join(lines)


def report(result: DemoResult) -> dict[str, Any]:
    """The JSON report: settings, rho spent and the NON-PRIVATE errors per budget and digit.

    Parameters
    ----------
    result : DemoResult
        What :func:`compute` returned.

    Returns
    -------
    dict
        JSON-ready; the private images themselves are in the picture, not here.
    """
    import numpy as np

    return {
        "note": NON_PRIVATE_HEADER + ". Each digit's images are treated as a separate dataset "
        "(the counts as public); every method runs on the same images at every budget, and a "
        "session per digit composes the releases (rho_per_digit).",
        "bounds": list(BOUNDS),
        "seed": result.seed,
        "methods": list(METHODS),
        "rho_per_digit": result.composed,
        "budgets": [
            {"rho_per_release": rho,
             "rho_spent": result.spent[b],
             "digits": [{"digit": k, "n": result.counts[k],
                         "l2_error": {m: result.errors[b][m][k] for m in METHODS}}
                        for k in DIGITS],
             "mean_l2_error": {m: float(np.mean(result.errors[b][m])) for m in METHODS}}
            for b, rho in enumerate(result.budgets)
        ],
    }


def write(out: Path, png: bytes, document: dict[str, Any]) -> tuple[Path, Path]:
    """Write the picture and the report into the folder ``out`` (created if needed), as a pair.

    Both go to temporary files in ``out`` first and are renamed into place only when both are
    complete, the JSON first: an error or an interruption leaves the previous pair (or none)
    and no temporary file, never a picture without its numbers.

    Parameters
    ----------
    out : Path
        The folder (--out).
    png : bytes
        The picture, from :func:`plot`.
    document : dict
        The report, from :func:`report`.

    Returns
    -------
    tuple of Path
        The PNG's path and the JSON's path.

    Raises
    ------
    UsageError
        When the folder cannot be created or a file cannot be written.
    """
    from ..io import write_files_atomic

    text = json.dumps(document, indent=2) + "\n"  # before any file: it can fail too
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {out}: {exc.strerror or exc}") from None
    try:
        # The JSON renamed first: should the second rename fail, the numbers stand without
        # their picture, never a picture without its numbers.
        write_files_atomic({out / JSON_NAME: text.encode("utf-8"), out / PNG_NAME: png})
    except OSError as exc:
        raise UsageError(f"cannot write {exc.filename or out}: {exc.strerror or exc}") from None
    return out / PNG_NAME, out / JSON_NAME

