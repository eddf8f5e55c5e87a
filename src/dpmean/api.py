"""``dpmean.mean``: one call for every estimator, by ``method=`` name."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import InvalidParameterError
from .estimators import MeanEstimator
from .registry import DEFAULT_METHOD, ESTIMATORS, available_methods
from .result import MeanResult
from .rng import RandomState


def mean(
    x: Any,
    /,
    rho: float | None = None,
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
        data frame, a pyarrow Table (anything ``pyarrow.table`` converts) is read through its
        numeric ``columns``. A path to a ``.npy``, ``.csv`` or ``.parquet`` file is read in
        chunks (``dpmean.engines.open_source``, whose options, such as a CSV's delimiter,
        need it called directly).
    rho : float, optional
        The zCDP budget (> 0). Give either ``rho`` or both ``epsilon`` and ``delta``.
    epsilon, delta : float, optional
        An (epsilon, delta)-DP budget instead (epsilon > 0, 0 < delta < 1). Estimators made only
        of Gaussian stages calibrate it exactly (the analytic Gaussian); the others convert it
        to the largest rho that implies it (Canonne-Kamath-Steinke).
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
        The estimator's own parameters (see its class, e.g. ``ShiftedClippedMean``); unknown
        names are refused.

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
        read, after the budget is charged, and the refusal tells that one row is malformed,
        the one bit the guarantee does not cover (docs/privacy.md): impute before the call
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
    estimator = build_estimator(method, rho, epsilon=epsilon, delta=delta, bounds=bounds,
                                random_state=random_state, **options)
    if isinstance(bounds, Mapping):
        check_bounds_names(bounds, x, columns)
    return estimator.estimate(x, columns)


def check_bounds_names(bounds: Mapping[Any, Any], x: Any,
                       columns: Sequence[str] | str | None = None) -> None:
    """Refuse a bounds mapping that names a column ``x`` does not have, where every column
    used has a range: a typo whose range was dropped silently. From the names alone
    (``tables.table_column_names``). Left to the estimator: input without names (it refuses
    named bounds for it), and a used column without a range (its error names both). A column
    of the table that ``columns`` leaves out may have a range (unused)."""
    from .tables import check_range_names, table_column_names

    available = table_column_names(x)
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


# Options that belong to a file's reader, not to an estimator: what to do instead.
READER_OPTIONS = {
    "n_items": "n_items is the .dat basket reader's option: open the file with "
               "dpmean.engines.open_source(path, n_items=D) (or dpmean.io.load_data(path, "
               "n_items=D)) and pass that in place of the path",
    "key": "key is the .npz reader's option: pass dpmean.io.load_data(path, key=K) in place "
           "of the path",
    **{name: f"{name} is the CSV reader's option: open the file with "
             f"dpmean.engines.open_source(path, {name}=...) and pass that in place of the path"
       for name in ("delimiter", "header", "index_col")},
    "fill": "fill is the CSV and Parquet readers' option: open the file with "
            "dpmean.engines.open_source(path, fill={NAME: VALUE}) and pass that in place of "
            "the path",
}


def _check_options(cls: type[MeanEstimator], options: dict[str, Any]) -> None:
    allowed, required = _keyword_options(cls)
    unknown = sorted(set(options) - allowed)
    if unknown:
        # Options of a file's reader, given to the estimator with the file's path.
        readers = [READER_OPTIONS[name] for name in unknown if name in READER_OPTIONS]
        raise InvalidParameterError(
            f"unknown option(s) {', '.join(unknown)} for method {cls.method!r}; "
            f"it accepts {', '.join(sorted(allowed)) or 'no options'}"
            + "".join(f". {hint}" for hint in readers)
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
