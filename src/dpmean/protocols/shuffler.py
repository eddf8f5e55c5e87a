"""The trusted shuffler of the shuffle model (IOME Definition 2.4) and the summation analyser of
BBGN20's IKOS protocol (IOME Lemma 5.3).

The shuffler outputs a uniformly random permutation of all messages, so the analyser cannot
tell which user sent which message; analysers only ever see its output.
"""

from __future__ import annotations

import numpy as np


def shuffle(messages: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """All messages in uniformly random order, along the last axis (each row of a 2-D array is
    one shuffler's batch, e.g. the shares of one coordinate)."""
    messages = np.asarray(messages)
    return rng.permuted(messages, axis=-1)


def summation_analyser(shuffled_shares: np.ndarray, precision: int) -> np.ndarray:
    """The noisy sum of the users' values from their shuffled IKOS shares, one row per
    coordinate: the shares add up modulo 2^64 to the integer noisy sum, read as a signed
    number (the true sum is far below 2^63), divided by ``precision``."""
    total = np.asarray(shuffled_shares, dtype=np.uint64).sum(axis=-1, dtype=np.uint64)
    return total.view(np.int64).astype(np.float64) / precision
