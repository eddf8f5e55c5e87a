"""A view of the data: the chain clip -> quantize -> rotate -> shift -> scale applied to every row.

Estimators describe the transformed data they want to ask about as a View; engines apply it (or
an algebraic shortcut of it) while answering aggregate questions. Pure and non-private.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .clip import clip_rows
from .hadamard import RandomRotation
from .quantize import Quantizer


@dataclass(frozen=True, eq=False)
class View:
    """Row map v(x) = scale * (R(q(clip(x))) - shift), each step optional.

    ``clip`` scales rows to l2 norm at most ``preclip``; ``q`` is a Quantizer, ``R`` a
    RandomRotation; ``shift`` and ``scale`` are vectors in the rotated (or original)
    coordinates. Every step after clipping and rounding is affine, so the mean of the view maps
    back to the mean of the clipped, quantized data with ``restore``.
    """

    preclip: float | None = None
    quantizer: Quantizer | None = None
    rotation: RandomRotation | None = None
    shift: np.ndarray | None = None
    scale: np.ndarray | None = None

    def base(self) -> View:
        """The expensive part of the view (clip, quantize, rotate), which engines may cache."""
        return View(preclip=self.preclip, quantizer=self.quantizer, rotation=self.rotation)

    def with_shift(self, shift: np.ndarray | None) -> View:
        return replace(self, shift=None if shift is None else np.asarray(shift, dtype=np.float64))

    def with_scale(self, scale: np.ndarray | None) -> View:
        return replace(self, scale=None if scale is None else np.asarray(scale, dtype=np.float64))

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
        """Shift and scale rows that ``apply_base`` produced."""
        out = based
        if self.shift is not None:
            out = out - self.shift
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
        if self.shift is not None:
            out = out + self.shift
        if self.rotation is not None:
            out = self.rotation.invert(out)
        if self.quantizer is not None:
            out = self.quantizer.dequantize(out)
        return out


IDENTITY = View()
