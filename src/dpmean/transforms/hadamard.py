"""Fast Walsh-Hadamard transform and the random rotation (1/sqrt(d)) H D of IOME section 3.3.

Pure, non-private maps. The transform is O(d log d) per row and never builds a d x d matrix.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

# Radix of the transform: H_d is the Kronecker product of small Hadamard blocks, so each stage is a
# batched 16 x 16 matrix product that BLAS runs far faster than 4 butterfly passes in numpy, while
# the cost stays O(d log d) (16 / log2(16) = 4 times the butterfly's flops, a constant).
_RADIX = 16


def next_power_of_two(d: int) -> int:
    """The smallest power of two >= d (d >= 1)."""
    return 1 << max(int(d) - 1, 0).bit_length()


@cache
def hadamard_matrix(size: int, dtype: type[np.floating] = np.float64) -> np.ndarray:
    """The Sylvester Hadamard matrix H_size as ``dtype`` (size a power of two; cached: callers
    must not write to it): H_1 = [1], H_2m = [[H_m, H_m], [H_m, -H_m]], scipy.linalg's
    ``hadamard`` entry for entry without importing scipy.linalg (0.15 s)."""
    _check_length(size)
    matrix = np.ones((1, 1), dtype=dtype)
    while len(matrix) < size:
        matrix = np.block([[matrix, matrix], [matrix, -matrix]])
    return matrix


def _check_length(d: int) -> None:
    if d & (d - 1) or d == 0:
        raise ValueError(f"fwht needs a power-of-two length, got {d}")


def _stages(x: np.ndarray, lead: int, d: int) -> np.ndarray:
    """H_d applied along the last axis of ``x`` viewed as (lead, d) (float64).

    Index j = (high, mid, low); each stage multiplies the ``mid`` digit by a small Hadamard
    block."""
    low = 1
    while low < d:
        size = min(_RADIX, d // low)
        high = d // (low * size)
        block = hadamard_matrix(size)
        if low == 1:  # one large product instead of a batch of matrix-vector ones
            x = x.reshape(lead * high, size) @ block
        else:
            x = np.matmul(block, x.reshape(lead * high, size, low))
        low *= size
    return x.reshape(lead, d)


def fwht(x: np.ndarray) -> np.ndarray:
    """Unnormalised Walsh-Hadamard transform of each row: ``x @ H_d`` in Sylvester order.

    ``x`` has shape (..., d) with d a power of two; returns a new float64 array of the same shape
    (``x`` is never modified). H_d is symmetric and H_d H_d = d I, so ``fwht(fwht(x)) / d == x``.
    """
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    _check_length(d)
    lead = x.shape[:-1]
    rows = int(np.prod(lead, dtype=np.int64))
    out = _stages(np.ascontiguousarray(x), rows, d)
    if d == 1:  # no stage ran: H_1 = [1], but the result must still be a new array
        out = out.copy()
    return out.reshape(*lead, d)


@dataclass(frozen=True, eq=False)
class RandomRotation:
    """The map x -> H D pad(x), scaled by 1/sqrt(d_pad) when ``normalized``.

    ``signs`` is the diagonal of D: public randomness, independent of the data, so it may be
    released and reused. Padding zeros to a power of two (IOME Remark 3.1) changes no distances.
    With ``normalized=False`` integer inputs stay integer (IOME's quantized path).
    """

    dim: int
    signs: np.ndarray
    normalized: bool = True

    @classmethod
    def draw(cls, dim: int, rng: np.random.Generator, *, normalized: bool = True) -> RandomRotation:
        signs = rng.choice(np.array([-1.0, 1.0]), size=next_power_of_two(dim))
        signs.setflags(write=False)
        return cls(dim=int(dim), signs=signs, normalized=normalized)

    @property
    def padded_dim(self) -> int:
        return self.signs.shape[0]

    @property
    def scale(self) -> float:
        """Factor applied after H D: 1/sqrt(d_pad) when normalized (an orthogonal map), else 1."""
        return 1.0 / np.sqrt(self.padded_dim) if self.normalized else 1.0

    def apply(self, x: np.ndarray) -> np.ndarray:
        """Rotate rows of ``x`` (shape (..., dim)) to shape (..., d_pad)."""
        x = np.asarray(x, dtype=np.float64)
        padded = np.zeros((*x.shape[:-1], self.padded_dim))
        # The normalisation folds into the signs: one pass over the rows fewer.
        np.multiply(x, self.signs[: self.dim] * self.scale, out=padded[..., : self.dim])
        return fwht(padded)

    def apply_padded(self, y: np.ndarray) -> np.ndarray:
        """``apply`` of vectors already at the padded width: (..., d_pad) -> (..., d_pad), the
        square map c H D (the twin of ``invert_padded``)."""
        return fwht(np.asarray(y, dtype=np.float64) * (self.signs * self.scale))

    def invert(self, y: np.ndarray) -> np.ndarray:
        """Undo ``apply`` and drop the padding: shape (..., d_pad) -> (..., dim)."""
        return self.invert_padded(y)[..., : self.dim]

    def invert_padded(self, y: np.ndarray) -> np.ndarray:
        """The inverse of the square map H D (scaled), padding kept: (..., d_pad) -> (..., d_pad).
        When ``normalized`` the map is orthogonal and this is its transpose R^T y."""
        y = np.asarray(y, dtype=np.float64)
        # (c H D)^{-1} = D H / (c d_pad) since H H = d_pad I and D D = I.
        out = fwht(y) / (self.scale * self.padded_dim)
        out *= self.signs
        return out
