"""The exceptions and warnings dpmean raises.

Every error a user can cause is a subclass of DPMeanError, so callers (and the command line) can
catch one type and print one clear line.
"""

import re


class DPMeanError(Exception):
    """Base class of every error dpmean raises on purpose."""


class InvalidDataError(DPMeanError, ValueError):
    """The data cannot be used: NaN or inf, wrong shape, empty, unreadable file, ..."""


class InvalidParameterError(DPMeanError, ValueError):
    """A parameter is out of range or unknown: non-positive budget, lo >= hi, unknown method, ..."""


class BudgetExceededError(DPMeanError):
    """A budget split asks for more privacy than was granted; raised before any data is read."""


class PrivacyAccountingError(DPMeanError, RuntimeError):
    """An estimator's charges disagree with its plan (an unplanned or doubled stage, or a ledger
    that does not add up): a defect in dpmean, caught before the release leaves."""


class TemporarySpaceError(DPMeanError):
    """The temporary directory (``TMPDIR``, ``tempfile.gettempdir()``) ran out of room for a
    file an engine spills its rows to (the chunked and Dask engines' column blocks). The
    message names the directory and the bytes the file needs; the system's ``OSError``
    (``ENOSPC`` or ``EDQUOT``) is its ``__cause__``."""


class InsufficientDataWarning(UserWarning):
    """n is too small for the budget (a public check); the estimator released the zero vector."""


def fallback_parts(message: str) -> tuple[str, str | None]:
    """An ``InsufficientDataWarning``'s message ("<reason>; releasing the zero vector ...
    <advice>", ``MeanEstimator.fallback_message``) split into its reason and its advice, for
    a caller that refuses the release rather than publish the fallback (the command line, a
    ``Session``). The whole message, whitespace collapsed, and None where it has no such
    clause."""
    text = " ".join(message.split())
    found = re.fullmatch(r"(.*?); releasing the zero vector[^.]*\.\s*(.*)", text)
    return (text, None) if found is None else (found.group(1), found.group(2))


class SecureNoiseWarning(UserWarning):
    """``secure_noise=True`` was asked of an estimator with stages that are not Gaussian
    mechanisms (the trimmed mean's smooth-sensitivity noise; PLAN's and auto's exponential
    mechanisms): those are drawn in floating point, as without it. The message names them."""


class BoxIntervalWarning(UserWarning):
    """A confidence interval fell back to the public box: the release has no honest narrower
    interval (a fallback release, or an estimator whose error cannot be bounded from private
    values yet); the message says why."""


class PrivateBoxIntervalWarning(UserWarning):
    """A confidence interval of a release made without ``bounds``: it covers the mean of the
    rows clamped to the private box the release found, not rows beyond it (a heavy tail past
    the box's power of two), whose clamping bias no interval bounds; give ``bounds`` for an
    interval of the rows themselves (within them)."""


class NoisyReleaseWarning(UserWarning):
    """The release says little about the rows: the noise's 95% interval is wider than half the
    public box on most coordinates, a column's private box was lifted far above its own rows
    by wider columns or widened to the narrowest width a box may have, or the clipping radius
    is the smallest its search can reach (the rows clipped onto one point). The message says
    which, and what would help."""


class BoxFaceWarning(UserWarning):
    """The release lies on the public box's faces in nearly all coordinates: the rows lie at or
    beyond those faces (rows outside the box are clamped to it: a box in the wrong units, a
    typo). Post-processing of the release, its noise scale and the box."""
