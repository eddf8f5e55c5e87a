"""``dpmean demo``: private mean images of the MNIST digits, and their NON-PRIVATE errors.

Three steps, each a function: :func:`compute` (the private releases and, NON-PRIVATE, their
errors), :func:`plot` (the picture) and :func:`write` (the PNG and the JSON report into --out);
:func:`run` checks the inputs, chains them and prints the table.
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
from typing import Any

import numpy as np

from .. import mean
from ..errors import InsufficientDataWarning
from ..io import load_data
from .arguments import NON_PRIVATE_HEADER, UsageError, add_seed_argument, write_file

METHODS = ("iome", "cm", "gaussian")
PNG_NAME = "mnist-private-means.png"
JSON_NAME = "mnist-private-means.json"
DIGITS = tuple(range(10))
# The pixel range: public, it holds for every MNIST image whatever the data.
BOUNDS = (0, 255)


@dataclass(frozen=True)
class DemoResult:
    """The demo's numbers, per method and digit: private releases and NON-PRIVATE errors.

    Attributes
    ----------
    rho : float
        zCDP budget of each release.
    seed : int or None
        The seed of the noise, None for the secure default.
    counts : list of int
        Images per digit (each digit is its own dataset).
    true_means : list of ndarray
        NON-PRIVATE: the exact mean image of each digit, only to measure and show the error.
    private : dict
        Method to the private mean image of each digit.
    spent : dict
        Method to the rho each release spent.
    errors : dict
        Method to the NON-PRIVATE l2 error of each digit's release.
    """

    rho: float
    seed: int | None
    counts: list[int]
    true_means: list[np.ndarray]
    private: dict[str, list[np.ndarray]]
    spent: dict[str, list[float]]
    errors: dict[str, list[float]]


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
        f"{', '.join(METHODS)}, print their l2 errors (a NON-PRIVATE evaluation against the "
        f"true means) and save a picture, {PNG_NAME}, and the table, {JSON_NAME}, in --out.",
    )
    p.add_argument("--out", default="dpmean-demo", metavar="DIR",
                   help="folder for the PNG and the JSON table (default: dpmean-demo)")
    p.add_argument("--rho", type=float, default=0.5, metavar="R",
                   help="zCDP budget of each release (default: 0.5)")
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
    data = _data_file(args.data)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a directory")
    result = compute(load_digits(data), args.rho, args.seed)
    png, report_file = write(out, plot(result), report(result))
    print(table(result))
    print(f"wrote {png} and {report_file}")
    return 0


def _require_matplotlib() -> None:
    # Checked first: a missing matplotlib should stop the demo before thirty releases, not after.
    try:
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.figure  # noqa: F401
    except ImportError:
        raise UsageError('the demo draws its picture with matplotlib: '
                         'pip install "dpmean[plots]"') from None


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
    images = load_data(path, key="images")
    digits = load_data(path, key="digits")
    if images.ndim != 2 or images.shape[1] != 784 or digits.shape != (images.shape[0],):
        raise UsageError(f"{path}: expected 'images' of shape (n, 784) and 'digits' of shape "
                         f"(n,), got {images.shape} and {digits.shape}")
    groups = [images[digits == k] for k in DIGITS]
    if any(len(g) == 0 for g in groups):
        raise UsageError(f"{path}: every digit 0-9 needs at least one image")
    return groups


# ------------------------------------------------------------------------------------ compute


def compute(groups: list[np.ndarray], rho: float, seed: int | None) -> DemoResult:
    """Release each digit's mean image with each method, then measure the errors.

    Parameters
    ----------
    groups : list of ndarray
        Each digit's images, as from :func:`load_digits`.
    rho : float
        zCDP budget of each release (the methods see the same images: 3 x rho in all).
    seed : int or None
        Seeds every release's noise reproducibly; None for the secure default.

    Returns
    -------
    DemoResult
        The releases and, NON-PRIVATE, their l2 errors.

    Raises
    ------
    InsufficientDataWarning
        As an error, when a digit has too few images for the budget.
    """
    private, spent = _release_all(groups, rho, seed)
    # NON-PRIVATE: the true means are computed only to measure the error of the releases.
    true_means = [g.mean(axis=0, dtype=np.float64) for g in groups]
    errors = {m: [float(np.linalg.norm(private[m][k] - true_means[k])) for k in DIGITS]
              for m in METHODS}
    return DemoResult(rho=rho, seed=seed, counts=[len(g) for g in groups],
                      true_means=true_means, private=private, spent=spent, errors=errors)


def _release_all(groups: list[np.ndarray], rho: float, seed: int | None,
                 ) -> tuple[dict[str, list[np.ndarray]], dict[str, list[float]]]:
    from tqdm import tqdm

    runs = list(itertools.product(METHODS, groups))
    seeds = (np.random.SeedSequence(seed).spawn(len(runs)) if seed is not None
             else [None] * len(runs))
    private: dict[str, list[np.ndarray]] = {m: [] for m in METHODS}
    spent: dict[str, list[float]] = {m: [] for m in METHODS}
    # disable=None: a bar on a terminal, nothing in logs and pipes.
    with tqdm(total=len(runs), desc="private releases", unit="release", file=sys.stderr,
              disable=None) as bar, warnings.catch_warnings():
        warnings.simplefilter("error", InsufficientDataWarning)
        for (method, group), state in zip(runs, seeds, strict=True):
            result = mean(group, rho=rho, method=method, bounds=BOUNDS, random_state=state)
            private[method].append(np.asarray(result.mean))
            spent[method].append(result.spent)  # the demo's budgets are zCDP: rho
            bar.update()
    return private, spent


# ------------------------------------------------------------------------------------ plot


def plot(result: DemoResult) -> bytes:
    """Draw the true mean images above each method's private ones.

    Parameters
    ----------
    result : DemoResult
        What :func:`compute` returned.

    Returns
    -------
    bytes
        The picture as PNG.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 5.4), dpi=100)
    FigureCanvasAgg(fig)
    axes = fig.subplots(1 + len(METHODS), len(DIGITS))
    rows = [("true mean\n(non-private)", result.true_means)] + [
        (f"{m}\nrho={result.rho:g}", result.private[m]) for m in METHODS]
    for r, (row_label, imgs) in enumerate(rows):
        for k in DIGITS:
            ax = axes[r, k]
            # Clamping to the public pixel range is post-processing; it does not cost privacy.
            ax.imshow(np.clip(imgs[k], *BOUNDS).reshape(28, 28), cmap="gray", vmin=BOUNDS[0],
                      vmax=BOUNDS[1])
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(str(k))
            if k == 0:
                ax.set_ylabel(row_label, fontsize=9)
    fig.suptitle(f"Private mean images of MNIST digits (rho = {result.rho:g} zCDP per mean "
                 f"image, bounds 0-255); top row: true means, shown for comparison only")
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png")
    return png.getvalue()


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
        The table, without a final newline.
    """
    rule = "=" * 72
    head = f"{'digit':>5}  {'n':>6}  " + "  ".join(f"{m:>10}" for m in METHODS)
    lines = [
        rule,
        NON_PRIVATE_HEADER + ".",
        "The errors below are NOT private; only the mean images are private releases.",
        rule,
        f"l2 error ||private mean - true mean|| in pixel units (0-255), d = 784, "
        f"rho = {result.rho:g} zCDP per release",
        "(each digit is its own dataset; the 3 methods see the same images, 3 x rho in total)",
        "",
        head,
        "-" * len(head),
    ]
    for k, n in zip(DIGITS, result.counts, strict=True):
        lines.append(f"{k:>5}  {n:>6}  " + "  ".join(f"{result.errors[m][k]:>10.1f}"
                                                      for m in METHODS))
    lines.append("-" * len(head))
    lines.append(f"{'mean':>5}  {'':>6}  " + "  ".join(f"{np.mean(result.errors[m]):>10.1f}"
                                                       for m in METHODS))
    return "\n".join(lines)


def report(result: DemoResult) -> dict[str, Any]:
    """The JSON report: settings, rho spent and the NON-PRIVATE errors per digit.

    Parameters
    ----------
    result : DemoResult
        What :func:`compute` returned.

    Returns
    -------
    dict
        JSON-ready; the private images themselves are in the picture, not here.
    """
    return {
        "note": NON_PRIVATE_HEADER + ". Each digit's images are treated as a separate dataset; "
        "the three methods run on the same images, so together they cost 3 x rho.",
        "rho_per_release": result.rho,
        "bounds": list(BOUNDS),
        "seed": result.seed,
        "methods": list(METHODS),
        "rho_spent": {m: result.spent[m] for m in METHODS},
        "digits": [
            {"digit": k, "n": result.counts[k],
             "l2_error": {m: result.errors[m][k] for m in METHODS}}
            for k in DIGITS
        ],
        "mean_l2_error": {m: float(np.mean(result.errors[m])) for m in METHODS},
    }


def write(out: Path, png: bytes, document: dict[str, Any]) -> tuple[Path, Path]:
    """Write the picture and the report into the folder ``out`` (created if needed).

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
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {out}: {exc.strerror or exc}") from None
    write_file(out / PNG_NAME, png)
    write_file(out / JSON_NAME, json.dumps(document, indent=2) + "\n")
    return out / PNG_NAME, out / JSON_NAME
