"""Randomness: the secure default, the reproducible seeded mode, validation."""

import numpy as np
import pytest
from randomgen import AESCounter
from scipy import stats

from dpmean.errors import InvalidParameterError
from dpmean.rng import make_rng


def test_default_is_a_fresh_cryptographic_generator():
    first, second = make_rng(None), make_rng(None)
    assert isinstance(first.bit_generator, AESCounter)
    # Fresh 128-bit keys: two default generators never share a stream.
    assert not np.array_equal(first.integers(0, 2**63, size=4), second.integers(0, 2**63, size=4))
    # And it is a sound source of normal noise (KS at the 0.1% level, 20000 draws).
    assert stats.kstest(first.normal(size=20000), "norm").pvalue > 1e-3


def test_seeded_mode_is_reproducible_and_not_the_secure_generator():
    a, b = make_rng(7), make_rng(7)
    assert isinstance(a.bit_generator, np.random.PCG64)
    np.testing.assert_array_equal(a.normal(size=5), b.normal(size=5))
    assert not np.array_equal(make_rng(8).normal(size=5), make_rng(7).normal(size=5))
    np.testing.assert_array_equal(make_rng(np.random.SeedSequence(3)).normal(size=3),
                                  np.random.Generator(np.random.PCG64(3)).normal(size=3))


def test_a_generator_is_threaded_through():
    g = np.random.default_rng(0)
    assert make_rng(g) is g


@pytest.mark.parametrize("bad", [-1, 1.5, "7", True, [1]])
def test_bad_random_state(bad):
    with pytest.raises(InvalidParameterError, match="random_state"):
        make_rng(bad)
