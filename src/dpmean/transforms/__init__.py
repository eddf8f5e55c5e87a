"""Pure, non-private maps of the data: clamp, clip, rotate (fast Walsh-Hadamard), quantize."""

from .clip import clamp, clip_rows, clip_weights
from .hadamard import RandomRotation, fwht, next_power_of_two
from .quantize import Quantizer
from .view import IDENTITY, View

__all__ = [
    "IDENTITY",
    "Quantizer",
    "RandomRotation",
    "View",
    "clamp",
    "clip_rows",
    "clip_weights",
    "fwht",
    "next_power_of_two",
]
