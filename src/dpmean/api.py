"""``dpmean.mean``: one call for every estimator, by ``method=`` name."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import InvalidParameterError
from .estimators import MeanEstimator
from .registry import DEFAULT_METHOD, ESTIMATORS, MEANT, available_methods
from .result import MeanResult
from .rng import RandomState


def mean(
    x: Any,
    /,
    rho: float | None = None,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    method: str = DEFAULT_METHOD,
    bounds: Any = None,
    random_state: RandomState = None,
    columns: Sequence[str] | str | None = None,
    **options: Any,
) -> MeanResult:
    """Release a differentially private mean of the rows of ``x``.

    Parameters
    ----------
    x : array_like, data frame, scipy.sparse matrix, dask array, row source or path
        The data, shape (n, d) (or (n,) for one variable). n and d are public; values outside
        ``bounds`` are clamped to them silently (counting them would leak). A pandas or polars
        data frame, a pyarrow Table (anything ``pyarrow.table`` converts from a frame; a plain
        mapping of columns is refused: its columns declare no types) is read through its
        numeric ``columns``. A path to a ``.npy``, ``.csv``, ``.parquet`` or ``.dat`` file is
        read in chunks (``dpmean.engines.open_source``), with the reader's options given here
        (``fill``, ``delimiter``, ``header``, ``index_col``, ``decimal``, ``n_items``; ``key``
        for an ``.npz`` archive, read whole), as ``dpmean.io.load_data`` takes them.
    rho : float, optional
        The zCDP budget (> 0). Give either ``rho`` or both ``epsilon`` and ``delta``. The
        (epsilon, delta) protocols (``iome-shuffle``, ``grs-knownvar``, ``grs-unkvar``) convert
        a rho to the epsilon it implies at ``delta`` (default 1e-9): their result's budget is
        that (epsilon, delta), not a rho.
    epsilon, delta : float, optional
        An (epsilon, delta)-DP budget instead (epsilon > 0, 0 < delta < 1). These and every
        parameter below are given by name (``dpmean.mean(x, 0.5, (0, 255))`` read the box as
        epsilon: a trial). Estimators made only
        of Gaussian stages calibrate it exactly (the analytic Gaussian); PLAN and ``auto`` by
        privacy loss distributions to their plan for the data's shape (n and d, public); the
        others convert it to the largest rho that implies it (Canonne-Kamath-Steinke).
    method : str, default "auto"
        One of ``available_methods()``: ``"auto"`` (a private choice between plan, iome, cm and
        gaussian: a small share of the budget, at most 4% in most settings (docs/privacy.md
        gives each stage's), buys three private medians and histograms of the rows' far tail
        that predict each one's noise and clipping bias, where n rho is too small for them a
        count of 2-20% that decides between cm and the default, and for one column with bounds
        7-25% more its counts at the range's ends; the rest runs the one predicted best; it
        takes only the options common to all,
        ``engine``, ``secure_noise`` and ``interval_share``), ``"iome"`` (instance-optimal),
        ``"plan"`` (variance-aware), the baselines and the local and shuffle protocols
        (README).
    bounds : (lo, hi) or mapping, optional
        The public a priori box: scalars or length-d arrays, or (data with named columns) a
        mapping of column name to its (lo, hi); a name that is not a column of the data is
        refused (a range for a column ``columns`` leaves out is allowed, and unused). Required
        by most methods unless they may buy a private box; never derived from the data.
    random_state : None, int, numpy.random.SeedSequence or numpy.random.Generator
        None (default) for a real release: noise from the OS-keyed secure generator. An int
        or a SeedSequence only for experiments and tests (the noise becomes reproducible); a
        Generator is drawn from as it is.
    columns : sequence of str or str, optional
        For a data frame, a table or a table file: the columns to use, by name, in this order
        (default every column; each must be numeric or boolean). The result's ``columns`` are
        their names.
    **options
        The estimator's own parameters (see its class, e.g. ``ShiftedClippedMean``), and for
        a path its reader's; unknown names are refused.

    Returns
    -------
    MeanResult
        The private mean, its typed budget, a ledger (stage -> cost) that sums to at most the
        budget, and private diagnostics.

    Raises
    ------
    InvalidParameterError
        Unknown method or option, a budget that is missing, non-positive (or below
        ``accounting.MIN_RHO``) or given twice, bad bounds (a range for a name that is not a
        column).
    InvalidDataError
        Data that is empty, not 1-D/2-D or non-numeric; a column name the table does not
        have, or a chosen column that is not numeric; a NaN. A NaN is found as the rows are
        read, after the budget is charged, and the refusal tells that some row is malformed
        and in which column (its first NaN's), which the guarantee does not cover: one bit
        and at most log2(d + 1) more (docs/privacy.md). Impute before the call
        (``numpy.nan_to_num`` with a public value, or ``fill=`` when reading a file). An
        infinity is not refused: it is clamped to the box like any value beyond it.

    Warns
    -----
    InsufficientDataWarning
        n too small for the budget (a public check): the zero vector is released.

    Privacy
    -------
    The release satisfies the returned ``result.budget`` (``rho``-zCDP, or the notion the
    method states, e.g. shuffle-approx-DP) under replace-one neighbours; docs/privacy.md gives
    each method's stages and their costs.
    """
    reader = reader_options(x, options)
    estimator = build_estimator(method, rho, epsilon=epsilon, delta=delta,
                                bounds=basket_bounds(x, bounds), random_state=random_state,
                                **options)
    if isinstance(bounds, Mapping):
        check_bounds_names(bounds, x, columns, reader)
    return estimator.estimate(*opened_path(x, columns, reader))


def basket_bounds(x: Any, bounds: Any) -> Any:
    """``bounds``, or (0, 1) for a ``.dat`` basket path given none: its rows are 0/1 by the
    format (public), as the command line takes them. Without it a private box took 10% of
    the budget and came out 4 times too wide on the Retail baskets (a review)."""
    if bounds is None and isinstance(x, str | os.PathLike) and Path(x).suffix.lower() == ".dat":
        return (0.0, 1.0)
    return bounds


def check_bounds_names(bounds: Mapping[Any, Any], x: Any,
                       columns: Sequence[str] | str | None = None,
                       reader: Mapping[str, Any] | None = None) -> None:
    """Refuse a bounds mapping that names a column ``x`` does not have, where every column
    used has a range: a typo whose range was dropped silently. From the names alone
    (``tables.table_column_names``). Left to the estimator: input without names (it refuses
    named bounds for it), and a used column without a range (its error names both). A column
    of the table that ``columns`` leaves out may have a range (unused). ``reader``: a path's
    reader options (``reader_options``), which say how a CSV file's header reads."""
    from .tables import check_range_names, table_column_names

    available = table_column_names(x, reader)
    if available is None:
        return
    used = [columns] if isinstance(columns, str | int) else columns
    where = str(x) if isinstance(x, str | os.PathLike) else f"the {type(x).__name__}"
    check_range_names(bounds, available, where, used=used)


def build_estimator(
    method: str,
    rho: float | None = None,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    bounds: Any = None,
    random_state: RandomState = None,
    **options: Any,
) -> MeanEstimator:
    """The estimator ``mean`` would run, built without touching any data: its ``budget`` is the
    typed guarantee the release will have (what a ``Session`` charges before reading data)."""
    cls = _estimator_class(method)
    _check_options(cls, options)
    return cls(rho, epsilon=epsilon, delta=delta, bounds=bounds, random_state=random_state,
               **options)


def _estimator_class(method: Any) -> type[MeanEstimator]:
    cls = ESTIMATORS.get(method) if isinstance(method, str) else None
    if cls is None:
        raise InvalidParameterError(
            f"unknown method {method!r}; choose one of {', '.join(available_methods())}"
        )
    return cls


# The file readers' options (``io.load_data``'s), which ``mean`` passes on with a path.
READER_OPTIONS = ("key", "n_items", "delimiter", "header", "index_col", "decimal", "fill")


def reader_options(x: Any, options: dict[str, Any]) -> dict[str, Any]:
    """The reader's options among ``options`` (``READER_OPTIONS``), taken out of them, when
    ``x`` is a path; else nothing (an estimator then refuses them by name)."""
    # x is looked at only when such an option is given: a Session refuses a release that does
    # not fit before anything of x is touched, its type included.
    if not set(READER_OPTIONS) & set(options) or not isinstance(x, str | os.PathLike):
        return {}
    return {name: options.pop(name) for name in READER_OPTIONS if name in options}


def opened_path(x: Any, columns: Sequence[str] | str | None, reader: Mapping[str, Any]
                ) -> tuple[Any, Sequence[str] | str | None]:
    """``(x, columns)`` as the estimators read them: a path with ``reader`` options opened with
    them and ``columns`` by ``engines.open_source`` (read in chunks; an ``.npz`` archive by
    ``io.load_data``); else as given. Opening reads the file's header or schema and counts its
    rows, judging no value; an option the format does not take is refused first."""
    if not reader:
        return x, columns
    if Path(x).suffix.lower() == ".npz":
        from .io import load_data

        return load_data(x, columns=columns, **reader), None
    from .engines import open_source

    options: dict[str, Any] = dict(reader) if columns is None else {**reader, "columns": columns}
    return open_source(x, **options), None


def _check_options(cls: type[MeanEstimator], options: dict[str, Any]) -> None:
    allowed, required = _keyword_options(cls)
    unknown = sorted(set(options) - allowed)
    if unknown:
        # Options of a file's reader, given with data that is not a path.
        readers = [name for name in unknown if name in READER_OPTIONS]
        meant = [f"{MEANT[name]}= for {name}" for name in unknown if name in MEANT]
        raise InvalidParameterError(
            f"unknown option(s) {', '.join(unknown)} for method {cls.method!r}; "
            f"it accepts {', '.join(sorted(allowed)) or 'no options'}"
            + (f". {', '.join(readers)}: a file reader's option, taken with the file's path "
               f"(dpmean.mean(path, {readers[0]}=...)) or by dpmean.io.load_data"
               if readers else "")
            + (f". Did you mean {'; '.join(meant)}?" if meant else "")
        )
    missing = sorted(required - set(options))
    if missing:
        raise InvalidParameterError(
            f"method {cls.method!r} needs the public option(s) {', '.join(missing)} "
            f"(see {cls.__name__}'s documentation)"
        )


def method_options(method: str) -> frozenset[str]:
    """The options (keyword parameters beyond the budget, bounds and seed) ``method`` accepts.

    Parameters
    ----------
    method : str
        A name ``dpmean.available_methods()`` lists.

    Returns
    -------
    frozenset of str
        The names ``dpmean.mean(..., method=method, **options)`` accepts in ``options``.

    Raises
    ------
    InvalidParameterError
        An unknown method.
    """
    return _keyword_options(_estimator_class(method))[0]


@functools.cache
def _keyword_options(cls: type[MeanEstimator]) -> tuple[frozenset[str], frozenset[str]]:
    # The keyword-only parameters of every constructor in the class's MRO, and those without a
    # default (cached: signatures are slow to read and a class's never change).
    allowed, required = set(), set()
    for klass in cls.__mro__:
        if "__init__" in vars(klass):
            params = inspect.signature(vars(klass)["__init__"]).parameters.values()
            allowed |= {p.name for p in params if p.kind is p.KEYWORD_ONLY}
            required |= {p.name for p in params
                         if p.kind is p.KEYWORD_ONLY and p.default is p.empty}
    common = {"epsilon", "delta", "bounds", "random_state"}
    return frozenset(allowed - common), frozenset(required - common)
