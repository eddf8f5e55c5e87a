"""The single source of randomness: how dpmean makes random generators.

Every function that draws takes a ``numpy.random.Generator``; public entry points take a
``random_state`` and turn it into a generator here, so the policy lives in one place.
"""

from __future__ import annotations

import secrets

import numpy as np
from randomgen import AESCounter

from .errors import InvalidParameterError

RandomState = None | int | np.random.SeedSequence | np.random.Generator


def make_rng(random_state: RandomState = None) -> np.random.Generator:
    """Return a generator for ``random_state``.

    - ``None``: a cryptographically secure generator, AES-128 in counter mode (randomgen's
      AESCounter, hardware AES where the CPU has it) keyed with 128 bits from the operating
      system (``secrets``). Its stream cannot be predicted from earlier outputs, as a real
      release needs; numpy's default PCG64 can be. The default for real releases.
    - an ``int`` or ``SeedSequence``: a reproducible PCG64 generator, for experiments and tests
      only (anyone who knows the seed can subtract the noise).
    - a ``Generator``: used as is, so one stream can be threaded through several calls.
    """
    check_random_state(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None:
        return np.random.Generator(AESCounter(key=secrets.randbits(128)))
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.Generator(np.random.PCG64(random_state))
    return np.random.Generator(np.random.PCG64(int(random_state)))


def check_random_state(random_state: RandomState) -> None:
    """Refuse what ``make_rng`` cannot turn into a generator, without building one (estimators
    check their ``random_state`` when constructed and make the generator in ``estimate``).

    Raises
    ------
    InvalidParameterError
        Anything but None, a non-negative integer, a SeedSequence or a Generator.
    """
    if random_state is None or isinstance(random_state, (np.random.Generator,
                                                         np.random.SeedSequence)):
        return
    is_integer = isinstance(random_state, (int, np.integer))
    if isinstance(random_state, (bool, np.bool_)) or not is_integer:
        raise InvalidParameterError(
            f"random_state must be None, a non-negative integer, a numpy SeedSequence or a "
            f"numpy Generator, got {random_state!r}"
        )
    if random_state < 0:
        raise InvalidParameterError(f"random_state must be non-negative, got {random_state}")


def seed_key(random_state: RandomState) -> object:
    """What makes two ``random_state`` values draw the same noise: the state of the generator
    ``make_rng`` would draw from, frozen (hashable), so that an integer, its SeedSequence and
    a fresh Generator seeded alike all give one key (a review: keyed on the argument, seed 5
    and SeedSequence(5) drew the same noise under two keys); None for the secure default
    (None), whose key is fresh for every release. A Generator threaded through several calls
    has moved on, and gives another key each time. A guard against reusing a seed by
    accident, not against a caller who shifts a stream on purpose (one who knows the seed can
    subtract the noise anyway). Refuses what ``check_random_state`` does."""
    if random_state is None:
        check_random_state(random_state)
        return None
    state = dict(make_rng(random_state).bit_generator.state)
    # The buffered half of a 64-bit draw (float32 and integer draws leave one) does not
    # change the normals drawn next (a review: g.random() and g.random(dtype=float32) left
    # one stream under two keys).
    state.pop("has_uint32", None)
    state.pop("uinteger", None)
    return _frozen(state)


def seed_digest(random_state: RandomState) -> str | None:
    """``seed_key`` as a SHA-256 hex digest, which a session's saved ledger keeps with each
    seeded release (``Release.seed``) so that a later run can refuse the same noise; None for
    the secure default."""
    import hashlib

    key = seed_key(random_state)
    return None if key is None else hashlib.sha256(repr(key).encode()).hexdigest()


def _frozen(value: object) -> object:
    """A nested state (dicts, lists, arrays, numbers) as nested tuples: hashable."""
    if isinstance(value, dict):
        return tuple((key, _frozen(item)) for key, item in sorted(value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(item) for item in value)
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tobytes())
    return value
