"""How data is read: engines answer estimators' aggregate questions."""

from .base import Engine
from .memory import InMemoryEngine

__all__ = ["Engine", "InMemoryEngine"]
