"""Paper reproductions: NON-PRIVATE evaluations of the private estimators on synthetic data."""
