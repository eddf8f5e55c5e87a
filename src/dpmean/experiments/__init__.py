"""Paper reproductions: NON-PRIVATE evaluations of the private estimators (IOME section 6, PLAN
section 7, Bun-Steinke section 4), one declarative spec per figure and one shared runner."""

from .figures import SPECS
from .runner import reproduce, run
from .spec import Method, Spec

__all__ = ["SPECS", "Method", "Spec", "reproduce", "run"]
