"""Quantization of real coordinates to an integer grid (IOME Remark 3.2).

Pure, non-private map: bucket size alpha / sqrt(d) adds at most alpha / 2 to the l2 error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Quantizer:
    """Round each coordinate to the nearest multiple of ``bucket``, in units of ``bucket``."""

    bucket: float

    @classmethod
    def for_error(cls, alpha: float, d: int) -> Quantizer:
        """The paper's choice: bucket alpha / sqrt(d), so rounding moves a row by <= alpha / 2."""
        return cls(bucket=float(alpha) / np.sqrt(d))

    def quantize(self, x: np.ndarray) -> np.ndarray:
        """Integer-valued float64 array round(x / bucket)."""
        return np.rint(np.asarray(x, dtype=np.float64) / self.bucket)

    def dequantize(self, q: np.ndarray) -> np.ndarray:
        return np.asarray(q, dtype=np.float64) * self.bucket

    def universe(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The integer box that quantized data from [lo, hi] lies in."""
        return self.quantize(lo), self.quantize(hi)
