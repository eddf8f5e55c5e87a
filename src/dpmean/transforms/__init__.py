"""Pure, non-private maps of the data: clamp, clip, rotate (fast Walsh-Hadamard), quantize."""

from .clip import clamp, clip_rows, clip_weights
from .hadamard import RandomRotation, fwht, hadamard_matrix, next_power_of_two
from .quantize import Quantizer
from .view import IDENTITY, BoxClamp, View, box_scale

__all__ = [
    "IDENTITY",
    "BoxClamp",
    "Quantizer",
    "RandomRotation",
    "View",
    "box_scale",
    "clamp",
    "clip_rows",
    "clip_weights",
    "fwht",
    "hadamard_matrix",
    "next_power_of_two",
]
