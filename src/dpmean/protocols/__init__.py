"""Local and shuffle models (IOME section 5): randomisers, shuffler, analysers, range counting,
multi-message summation, and the protocol estimators (local and shuffle IOME, GRS baselines)."""

from .base import ApproxDPProtocol, ProtocolEstimator
from .grs import GRSKnownVar, GRSUnkVar
from .iome import LocalIOME, ShuffleIOME

__all__ = [
    "ApproxDPProtocol",
    "GRSKnownVar",
    "GRSUnkVar",
    "LocalIOME",
    "ProtocolEstimator",
    "ShuffleIOME",
]
