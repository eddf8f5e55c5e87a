"""How data is read: engines answer estimators' aggregate questions."""

from .base import Engine
from .memory import InMemoryEngine
from .sparse import SparseEngine

__all__ = ["Engine", "InMemoryEngine", "SparseEngine"]
