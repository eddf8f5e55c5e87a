"""The value every estimator returns: the private mean, its ledger and private diagnostics."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from .budget import Budget


def _frozen(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        value = value.copy()
        value.setflags(write=False)
    return value


def _jsonable(value: Any) -> Any:
    """``value`` as strict JSON data: arrays and tuples as lists, numpy scalars as Python ones,
    and a non-finite float as None (JSON has no Infinity or NaN; ``json.dumps`` would write
    them as tokens other parsers refuse)."""
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _same(a: Any, b: Any) -> bool:
    """Whether two fields of results hold the same value: arrays by shape and elements,
    mappings key by key, sequences item by item, NaN equal to NaN in the same place (so that a
    result equals its own copy), anything else by ``==``."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.shape != b.shape:
            return False
        floating = a.dtype.kind in "fc" and b.dtype.kind in "fc"  # equal_nan needs numbers
        return bool(np.array_equal(a, b, equal_nan=floating))
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        return (isinstance(a, Mapping) and isinstance(b, Mapping) and a.keys() == b.keys()
                and all(_same(a[key], b[key]) for key in a))
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(_same(x, y) for x, y in zip(a, b, strict=True)))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    equal = a == b
    # An object whose == is elementwise (not an array, so not caught above) is not "the same".
    return bool(equal) if isinstance(equal, (bool, np.bool_)) else False


def _rebuild(cls: type[MeanResult], fields: dict[str, Any]) -> MeanResult:
    """A result from its fields, as pickle and ``copy`` rebuild one (``MeanResult.__reduce__``):
    through ``__init__``, so the ledger and diagnostics are read-only views again and the
    arrays read-only copies."""
    return cls(**fields)


@dataclass(frozen=True, eq=False)
class MeanResult:
    """A differentially private mean and everything about it that may be released.

    Attributes
    ----------
    mean : numpy.ndarray
        The private estimate, shape (d,).
    method : str
        The estimator's ``method=`` name.
    n, d : int
        The public size and dimension of the data.
    budget : Budget
        The guarantee the release was granted, typed by notion: "zCDP" (``rho``; with the
        ``epsilon``, ``delta`` the caller asked for when the budget was given that way),
        "approx-DP" (``epsilon``, ``delta``), "pure-DP", "tCDP" (``rho``, ``omega``), or a
        local or shuffle notion (``diagnostics["model"]`` says which trust model):
        "local-zCDP" (every user's messages are rho-zCDP, IOME Definition 2.3),
        "local-approx-DP" and "shuffle-approx-DP" (the shuffled transcript is
        (epsilon, delta)-DP, Definition 2.4).
    ledger : Mapping[str, float]
        Stage -> amount spent, in ``unit``; sums to ``spent`` <= the budget's total.
    diagnostics : Mapping[str, Any]
        Private by-products only (noisy thresholds, private centres, noise scales, public
        settings); never the true mean or any other exact statistic of the data. Each key has
        the type its estimator declares (``diagnostic_declarations``; the *Diagnostics*
        section of its docstring) in every result: ``noise_std`` a float64 array of shape
        (d,), scalars Python floats and ints; keys that do not apply are absent. Arrays are
        read-only; ``to_dict`` turns them into lists.
    fallback : bool
        True when the zero vector was released instead of an estimate (see
        InsufficientDataWarning): n was too small for the budget (a public check, made without
        touching the data), or, without ``bounds``, no private box was found (the box's noisy
        histograms showed no bin, ``diagnostics["private_bounds"]``).
    columns : tuple of str or None
        The names of the d coordinates, in order, when the data had them (a data frame, an
        Arrow table, a CSV header, a Parquet schema); None otherwise.

    Notes
    -----
    Results compare by value: two are equal when every field is (``mean`` and the arrays of
    ``diagnostics`` element by element, the diagnostics key by key, NaN equal to NaN in the
    same place). A result is a record of a release, immutable once made (read-only arrays and
    views), and one sent to another process (pickle, ``copy.deepcopy``, a
    ``ProcessPoolExecutor`` or joblib worker) comes back as a new object that must still equal
    the original; identity would make every such copy unequal. For the same reason results are
    hashable: the hash is that of the method, shape, fallback flag and ``mean``, which equal
    results share. Two releases of the same data are equal only if their noise was the same
    draw (the same ``random_state``).
    """

    mean: np.ndarray
    method: str
    n: int
    d: int
    budget: Budget
    ledger: Mapping[str, float]
    diagnostics: Mapping[str, Any] = field(default_factory=dict)
    fallback: bool = False
    columns: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.budget, Budget):
            raise TypeError(f"budget must be a Budget, got {type(self.budget).__name__}")
        if self.columns is not None:
            columns = tuple(str(c) for c in self.columns)
            if len(columns) != self.d:
                raise ValueError(f"{len(columns)} column names for d = {self.d} coordinates")
            object.__setattr__(self, "columns", columns)
        object.__setattr__(self, "mean", _frozen(np.asarray(self.mean, dtype=np.float64)))
        object.__setattr__(self, "ledger", MappingProxyType(dict(self.ledger)))
        diagnostics = {k: _frozen(v) for k, v in self.diagnostics.items()}
        object.__setattr__(self, "diagnostics", MappingProxyType(diagnostics))

    def __eq__(self, other: object) -> bool:
        """Equal when every field is (the class docstring's Notes say why by value)."""
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, MeanResult)
        return (self.method == other.method and self.n == other.n and self.d == other.d
                and self.fallback == other.fallback and self.columns == other.columns
                and self.budget == other.budget and _same(self.mean, other.mean)
                and _same(dict(self.ledger), dict(other.ledger))
                and _same(dict(self.diagnostics), dict(other.diagnostics)))

    def __hash__(self) -> int:
        """The hash of the fields equal results certainly share: method, shape, fallback and
        the mean (NaN entries, equal to each other here, hashed alike)."""
        mean = tuple(None if math.isnan(v) else v for v in self.mean.tolist())
        return hash((self.method, self.n, self.d, self.fallback, mean))

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle and copy by the fields, the read-only views as plain dicts (a mappingproxy
        cannot be pickled), rebuilt through ``__init__`` (``_rebuild``)."""
        fields = {"mean": self.mean, "method": self.method, "n": self.n, "d": self.d,
                  "budget": self.budget, "ledger": dict(self.ledger),
                  "diagnostics": dict(self.diagnostics), "fallback": self.fallback,
                  "columns": self.columns}
        return _rebuild, (type(self), fields)

    @property
    def notion(self) -> str:
        """The privacy notion of the release (``budget.notion``)."""
        return self.budget.notion

    @property
    def unit(self) -> str:
        """The unit of the ledger: "rho" or "epsilon"."""
        return self.budget.unit

    @property
    def rho(self) -> float | None:
        """The granted rho (zCDP and tCDP notions only; None where the notion has no rho)."""
        return self.budget.rho

    @property
    def epsilon(self) -> float | None:
        """The granted (or requested and implied) epsilon; None for a plain rho budget."""
        return self.budget.epsilon

    @property
    def delta(self) -> float | None:
        """The delta that goes with ``epsilon``; None where there is none."""
        return self.budget.delta

    @property
    def spent(self) -> float:
        """The ledger's total, in ``unit``."""
        return math.fsum(self.ledger.values())

    @property
    def rho_spent(self) -> float | None:
        """The rho spent (the ledger's total) where the ledger is in rho; None otherwise."""
        return self.spent if self.unit == "rho" else None

    @property
    def epsilon_spent(self) -> float | None:
        """The epsilon spent (the ledger's total) where the ledger is in epsilon; else None."""
        return self.spent if self.unit == "epsilon" else None

    def confidence_interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Per-coordinate (lo, hi), each containing the exact mean of the data clamped to the
        box with probability >= ``level`` over the release's noise (noise and clipping bias;
        no assumption on the data). Without ``bounds`` the box is the private one the release
        found, and rows beyond it are not covered (``confidence_basis`` says so). See
        ``dpmean.intervals.confidence_interval``.

        Warns
        -----
        PrivateBoxIntervalWarning
            The release was made without ``bounds``: the interval is of the rows clamped to
            its private box, not of rows beyond it."""
        from .intervals import confidence_interval

        self._warn_if_private_box()
        return confidence_interval(self, level)

    def confidence_radius(self, level: float = 0.95) -> float:
        """An l2 radius about ``mean`` containing the clamped data's exact mean (the whole
        vector) with probability >= ``level``. See ``dpmean.intervals.confidence_radius``.
        Warns as ``confidence_interval`` does."""
        from .intervals import confidence_radius

        self._warn_if_private_box()
        return confidence_radius(self, level)

    def _warn_if_private_box(self) -> None:
        """A ``PrivateBoxIntervalWarning`` for a release in a private box: without it, 30 of
        30 intervals of a lognormal column missed its mean and nothing but
        ``confidence_basis`` said why (a user trial)."""
        if not self.diagnostics.get("private_bounds") or self.fallback:
            return
        import warnings

        from .errors import PrivateBoxIntervalWarning
        from .validation import user_stacklevel

        warnings.warn(
            f"{self.method}: the release was made without bounds, so its interval is of the "
            f"rows clamped to the private box it found (bounds_lo, bounds_hi in the "
            f"diagnostics), not of rows beyond that box, which move the mean by a bias no "
            f"interval bounds (a heavy tail past it); give bounds=(lo, hi) for an interval of "
            f"the rows within them", PrivateBoxIntervalWarning, stacklevel=user_stacklevel())

    def confidence_basis(self, level: float = 0.95) -> str:
        """What ``confidence_interval(level)`` and ``confidence_radius(level)`` cover, in words:
        the noise and the clipping or trimming bias, or the public box where the bias has no
        bound, and whether the box is a private one found by the release (the rows beyond it
        are then not covered: a user trial read a no-bounds interval as one for the raw
        rows, which it covered in 2-38% of releases on heavy tails)."""
        from .intervals import interval_summary

        basis: str = interval_summary(self, level)["basis"]
        return basis

    def __repr__(self) -> str:
        # Summarised (numpy's ellipsis past a few entries, the diagnostics by name): the
        # dataclass's repr printed every coordinate and diagnostic array, hundreds of lines at
        # d = 1000 (a user trial).
        mean = np.array2string(self.mean, threshold=8, edgeitems=3, precision=6)
        # The names where they are few (a user trial read "columns=3 names"), else how many.
        columns = ("" if self.columns is None else f", columns={list(self.columns)}"
                   if len(self.columns) <= 8 else f", columns={len(self.columns)} names")
        return (f"MeanResult(method={self.method!r}, n={self.n}, d={self.d}, "
                f"budget={self.budget}, mean={mean}, {self.unit}_spent={self.spent:.6g}, "
                f"ledger stages={list(self.ledger)}, diagnostics={sorted(self.diagnostics)}, "
                f"fallback={self.fallback}{columns})")

    def named(self, columns: Sequence[str] | None) -> MeanResult:
        """This result with the coordinates' names (itself when ``columns`` is None)."""
        return self if columns is None else replace(self, columns=tuple(columns))

    def to_dict(self, level: float = 0.95) -> dict[str, Any]:
        """The result as strict JSON data.

        Parameters
        ----------
        level : float, default 0.95
            The coverage of the interval and the radius included, strictly between 0 and 1.

        Returns
        -------
        dict
            The fields (arrays as lists; budget fields named by unit), the spent total, and the
            ``confidence_interval`` (level, lo, hi), ``confidence_radius`` and
            ``confidence_basis``. Every non-finite float is None (JSON null), so that
            ``json.dumps(..., allow_nan=False)`` accepts it: an unbounded interval end (a
            release without a box, such as the fallback of a search for a private box that
            found none, whose interval is the whole real line) or radius is null.
        """
        out: dict[str, Any] = {
            "method": self.method,
            "n": self.n,
            "d": self.d,
            "mean": self.mean.tolist(),
            "columns": None if self.columns is None else list(self.columns),
            **self.budget.to_dict(),
            "unit": self.unit,
            f"{self.unit}_spent": self.spent,
            "ledger": dict(self.ledger),
            "diagnostics": dict(self.diagnostics),
            "fallback": self.fallback,
        }
        from .intervals import interval_summary

        summary = interval_summary(self, level)
        out["confidence_interval"] = {key: summary[key] for key in ("level", "lo", "hi")}
        out["confidence_radius"] = summary["radius"]
        out["confidence_basis"] = summary["basis"]
        strict: dict[str, Any] = _jsonable(out)
        return strict
