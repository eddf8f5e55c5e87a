"""A view of the data: clip -> quantize -> rotate -> shift -> linear -> scale, on every row.

Estimators describe the transformed data they want to ask about as a View; engines apply it (or
an algebraic shortcut of it) while answering aggregate questions. Before any view, an engine
clamps each row to the public box and may rescale each coordinate by a public factor
(``BoxClamp``: the box-normalised space of docs/privacy.md). Pure and non-private.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .clip import clamp, clip_rows
from .hadamard import RandomRotation
from .quantize import Quantizer


def box_scale(lo: np.ndarray, hi: np.ndarray) -> np.ndarray | None:
    """The public factors 1 / (hi_j - lo_j) that give every coordinate of the box [lo, hi] width
    1, or None when there is nothing to even out: every coordinate has the same width already
    (a scalar box, baskets in [0, 1]) or some width is infinite (no box)."""
    width = np.asarray(hi, dtype=np.float64) - np.asarray(lo, dtype=np.float64)
    if width.size == 0 or not np.isfinite(width).all() or (width == width[0]).all():
        return None
    return 1.0 / width


@dataclass(frozen=True, eq=False)
class BoxClamp:
    """x -> clamp(x, lo, hi) * scale: the rows an engine answers about, from the public box
    [lo, hi] and optional public per-coordinate factors ``scale`` (``box_scale``).

    Only a scale, never a shift: a shifted sparse matrix is dense, and the origin (about which
    CM clips) stays where the caller put it. ``out_lo`` and ``out_hi`` are the box of the
    rescaled rows (what the engine reports as its ``lo`` and ``hi``).
    """

    lo: np.ndarray
    hi: np.ndarray
    scale: np.ndarray | None = None

    @classmethod
    def of(cls, lo: np.ndarray, hi: np.ndarray, scale: np.ndarray | None = None) -> BoxClamp:
        return cls(np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64),
                   None if scale is None else np.asarray(scale, dtype=np.float64))

    @property
    def out_lo(self) -> np.ndarray:
        return self.lo if self.scale is None else self.lo * self.scale

    @property
    def out_hi(self) -> np.ndarray:
        return self.hi if self.scale is None else self.hi * self.scale

    def __call__(self, x: np.ndarray, cols: slice = slice(None), *,
                 clamps: bool = True) -> np.ndarray:
        """Rows ``x`` (columns ``cols`` of the box) clamped and rescaled: a float64 copy.
        ``clamps=False``: the caller knows the box holds every value (integers whose type's
        range lies in it), so converting is the clamp; the same values."""
        out = clamp(x, self.lo[cols], self.hi[cols]) if clamps else x.astype(np.float64)
        if self.scale is not None:
            out *= self.scale[cols]
        return out


@dataclass(frozen=True, eq=False)
class View:
    """Row map v(x) = scale * (L (R(q(clip(x))) - shift)), each step optional.

    ``clip`` scales rows to l2 norm at most ``preclip``; ``q`` is a Quantizer, ``R`` a
    RandomRotation; ``shift`` and ``scale`` are vectors in the rotated (or original)
    coordinates; ``L`` (``linear``) is an invertible square matrix, e.g. a whitening map
    (CoinPress). Every step after clipping and rounding is affine, so the mean of the view maps
    back to the mean of the clipped, quantized data with ``restore``.
    """

    preclip: float | None = None
    quantizer: Quantizer | None = None
    rotation: RandomRotation | None = None
    shift: np.ndarray | None = None
    scale: np.ndarray | None = None
    linear: np.ndarray | None = None

    @property
    def is_identity(self) -> bool:
        """Whether the view has no step at all: v(x) = x."""
        return all(step is None for step in (self.preclip, self.quantizer, self.rotation,
                                             self.shift, self.scale, self.linear))

    def base(self) -> View:
        """The expensive part of the view (clip, quantize, rotate), which engines may cache."""
        return View(preclip=self.preclip, quantizer=self.quantizer, rotation=self.rotation)

    # Copies: engines cache answers by the view (row norms, sorted norms), so a caller's later
    # change of its array in place must not reach a view already asked about.
    def with_shift(self, shift: np.ndarray | None) -> View:
        return replace(self, shift=None if shift is None else np.array(shift, dtype=np.float64))

    def with_scale(self, scale: np.ndarray | None) -> View:
        return replace(self, scale=None if scale is None else np.array(scale, dtype=np.float64))

    def with_linear(self, linear: np.ndarray | None) -> View:
        if linear is None:
            return replace(self, linear=None)
        linear = np.asarray(linear, dtype=np.float64)
        if linear.ndim != 2 or linear.shape[0] != linear.shape[1]:
            raise ValueError(f"a view's linear map must be a square matrix, got {linear.shape}")
        return replace(self, linear=linear)

    def output_dim(self, d: int) -> int:
        return self.rotation.padded_dim if self.rotation is not None else d

    def apply_base(self, x: np.ndarray) -> np.ndarray:
        """Clip, quantize and rotate a block of rows."""
        out = np.asarray(x, dtype=np.float64)
        if self.preclip is not None:
            out = clip_rows(out, self.preclip)
        if self.quantizer is not None:
            out = self.quantizer.quantize(out)
        if self.rotation is not None:
            out = self.rotation.apply(out)
        return out

    def finish(self, based: np.ndarray) -> np.ndarray:
        """Shift, map and scale rows that ``apply_base`` produced."""
        out = based
        if self.shift is not None:
            out = out - self.shift
        if self.linear is not None:
            out = out @ self.linear.T
        if self.scale is not None:
            out = out * self.scale
        return out

    def apply(self, x: np.ndarray) -> np.ndarray:
        return self.finish(self.apply_base(x))

    def restore(self, y: np.ndarray) -> np.ndarray:
        """Map a point of the view (e.g. a mean estimate) back to original coordinates."""
        out = np.asarray(y, dtype=np.float64)
        if self.scale is not None:
            out = out / self.scale
        if self.linear is not None:
            # Points are rows: solve L p = y for each (a single point is a 1-D y).
            out = np.linalg.solve(self.linear, out.T).T
        if self.shift is not None:
            out = out + self.shift
        if self.rotation is not None:
            out = self.rotation.invert(out)
        if self.quantizer is not None:
            out = self.quantizer.dequantize(out)
        return out


IDENTITY = View()
