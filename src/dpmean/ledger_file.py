"""A ``Session`` kept in a JSON file, so separate ``dpmean estimate`` runs share one budget.

The file holds the session (``Session.to_dict``) and a SHA-256 of its canonical JSON::

    {"format": "dpmean-ledger", "version": 1, "session": {...}, "sha256": "..."}

Every update takes an exclusive lock on a sidecar file ``FILE.lock`` (``fcntl.flock``; POSIX
only), re-reads and verifies the file under the lock, and writes the new content to a temporary
file in the same directory (with the old file's permissions, and its owner and group where the
process may give them), fsyncs it and renames it over the old one (``os.replace``), so
readers see the old ledger or the new one, never a partial one. A read-only ledger is refused
before any update (``LedgerFileError``): the rename would replace it all the same. A release is
reserved (charged) in the file before its estimator runs, so two concurrent runs cannot both
spend the last of the budget; its outcome is recorded afterwards in a second locked update.

A ledger has one file, whatever name reaches it. Every operation first resolves the name to
the file's real path (``os.path.realpath``: symbolic links followed, in the file's name and its
directories'), and locks, reads and replaces that file, so a symbolic link to a ledger is the
ledger itself: the link stays a link, its target is updated, and both names share one lock
(``REAL.lock``, beside the real file). A ledger file with more than one hard link is refused
(``LedgerFileError``, before any charge; nothing is written): replacing the file under one
name would leave the other names holding the old content, an independent copy with the whole
budget still to spend. (A copy of the file is such a fork too: keep one ledger file.)

The checksum detects accidental corruption and naive hand edits. It is not a MAC: anyone who can
write the file can recompute it, so it does not protect against a deliberate attacker with write
access (protect the file with file-system permissions).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .budget import Budget
from .errors import InvalidParameterError
from .io import write_text_atomic
from .pld import Event
from .session import Session

FORMAT = "dpmean-ledger"
VERSION = 1
# Test hook: seconds to hold the lock between reading the ledger and writing it, so tests can
# make two processes really contend for it. Never set it in production.
_PAUSE_ENV = "DPMEAN_TEST_LEDGER_PAUSE"


class LedgerFileError(InvalidParameterError):
    """The ledger file is missing, unreadable, corrupt or inconsistent."""


def _canonical(content: Any) -> bytes:
    return json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=False,
                      ensure_ascii=True).encode("ascii")


def dumps(session: Session) -> str:
    """The file's text for ``session``."""
    content = session.to_dict()
    digest = hashlib.sha256(_canonical(content)).hexdigest()
    return json.dumps({"format": FORMAT, "version": VERSION, "session": content,
                       "sha256": digest}, indent=2, allow_nan=False) + "\n"


def loads(text: str, name: str = "ledger") -> Session:
    """The session in a ledger file's text; LedgerFileError on anything but a valid file."""
    def bad(why: str) -> LedgerFileError:
        return LedgerFileError(f"{name}: refused: {why}; the file is corrupt or was edited "
                               f"(dpmean changes nothing in it)")

    try:
        data = json.loads(text, parse_constant=_no_constant)
    except (json.JSONDecodeError, ValueError) as exc:
        raise bad(f"not valid JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise bad(f"not a dpmean ledger (no \"format\": \"{FORMAT}\")")
    if set(data) != {"format", "version", "session", "sha256"}:
        raise bad("expected exactly the fields format, version, session, sha256")
    if data["version"] != VERSION or isinstance(data["version"], bool):
        raise bad(f"unknown ledger version {data['version']!r} (this dpmean reads {VERSION})")
    try:
        canonical = _canonical(data["session"])
    except (TypeError, ValueError) as exc:
        raise bad(f"unreadable session ({exc})") from None
    if hashlib.sha256(canonical).hexdigest() != data["sha256"]:
        raise bad("its SHA-256 checksum does not match its content")
    try:
        return Session.from_dict(data["session"])
    except InvalidParameterError as exc:
        raise bad(str(exc)) from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def _path(path: str | os.PathLike) -> Path:
    """``path`` as a Path; an empty name is refused (``Path("")`` is the working directory,
    whose lock file would be ``..lock``)."""
    if not os.fspath(path):
        raise LedgerFileError("the ledger file name is empty")
    return Path(path)


def _real(path: Path) -> Path:
    """The file ``path`` names, every symbolic link followed (as far as they lead: a name that
    does not exist yet resolves in its directory's real path): what is locked, read and
    replaced, so that every name of one ledger reaches one file and one lock."""
    try:
        return Path(os.path.realpath(path))
    except (OSError, RuntimeError) as exc:  # a symbolic link loop, on some Pythons
        raise LedgerFileError(f"cannot resolve the ledger file name {path}: {exc}") from None


def read(path: str | os.PathLike) -> Session:
    """Load and verify the ledger at ``path`` (without locking: for display, and to refuse a
    missing or corrupt ledger before its lock file is created).

    A symbolic link is followed to its target; a file with more than one hard link is refused
    (``LedgerFileError``), as every update would fork it (see the module docstring)."""
    name = _path(path)
    return _read(name, _real(name))


def _read(name: Path, real: Path) -> Session:
    """``read`` of the file ``real`` (``_real(name)``), errors naming it ``name``."""
    try:
        with open(real, encoding="utf-8") as fh:
            links = os.fstat(fh.fileno()).st_nlink
            text = fh.read()
    except FileNotFoundError:
        where = f" ({name} is a symbolic link to {real}, which does not exist)" if (
            name.is_symlink()) else ""
        raise LedgerFileError(f"{name}: no such ledger file{where} (create one with 'dpmean "
                              f"ledger init')") from None
    except IsADirectoryError:
        raise LedgerFileError(f"{name}: is a directory, not a ledger file (name a file in it, "
                              f"made with 'dpmean ledger init')") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LedgerFileError(f"{name}: cannot read the ledger: {exc}") from None
    if links > 1:
        raise LedgerFileError(
            f"{name}: refused: the ledger file has {links} hard links (names), and an update "
            f"replaces the file under one name only, which would split it into independent "
            f"ledgers, each with the whole budget; keep one name (delete the others, found by "
            f"'find DIR -samefile {name}', or make them symbolic links). dpmean changed nothing "
            f"in it")
    return loads(text, str(name))


def lock_file(path: str | os.PathLike) -> Path:
    """The sidecar lock file of the ledger at ``path``: ``REAL.lock`` beside its real path
    (symbolic links followed), shared by every name of the ledger."""
    return Path(f"{os.fspath(_real(_path(path)))}.lock")


@contextlib.contextmanager
def locked(path: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive lock on the sidecar ``REAL.lock`` of ``path``'s real path (symbolic
    links followed: every name of one ledger shares its lock), blocking until it is free."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        raise LedgerFileError("ledger files need POSIX file locks (fcntl), which this "
                              "platform lacks") from None
    lock_path = lock_file(path)
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise LedgerFileError(f"cannot lock {path}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _refuse_read_only(name: Path, real: Path) -> None:
    """Refuse (``LedgerFileError``) to update a ledger file that is read-only, before anything
    is charged.

    An update replaces the file (``os.replace`` needs only the directory's permission), so a
    ledger its owner made read-only (``chmod 444``) was charged all the same (a user trial).
    Read-only is: the process may not write it (``os.access``), or no one may (no write bit in
    its mode). The mode is asked too because root may write any file: ``os.access`` says yes
    to root whatever the mode, and the trial that found this ran as root."""
    try:
        mode = os.stat(real).st_mode
    except OSError as exc:
        raise LedgerFileError(f"{name}: cannot read the ledger: {exc.strerror or exc}") from None
    if mode & 0o222 and os.access(real, os.W_OK):
        return
    raise LedgerFileError(
        f"{name}: refused: the ledger file is read-only ({stat.filemode(mode)}): dpmean "
        f"charges no ledger it may not write, and changed nothing in it (to spend from it, "
        f"make it writable: chmod u+w {name})")


def _pause() -> None:
    seconds = os.environ.get(_PAUSE_ENV)
    if seconds:
        time.sleep(float(seconds))


def _write(name: Path, real: Path, session: Session) -> None:
    """Replace the file ``real`` (``_real(name)``: never a symbolic link, which ``os.replace``
    would turn into a regular file) with ``session``'s ledger."""
    try:
        write_text_atomic(real, dumps(session))
    except OSError as exc:
        raise LedgerFileError(f"cannot write {name}: {exc.strerror or exc}") from None


def create(path: str | os.PathLike, session: Session) -> None:
    """Write a new ledger for ``session``; refuse if ``path`` exists (a symbolic link too,
    even one to a file that does not exist)."""
    path = _path(path)
    if not path.parent.is_dir():
        raise LedgerFileError(f"cannot create {path}: directory {path.parent} does not exist")
    # Checked before the lock file is made (a refused init leaves nothing behind) and again
    # under the lock (two inits racing).
    _refuse_existing(path)
    real = _real(path)
    with locked(real):
        _refuse_existing(path)
        _write(path, real, session)


def _refuse_existing(path: Path) -> None:
    if path.exists() or path.is_symlink():
        raise LedgerFileError(f"{path} already exists; a ledger is never overwritten "
                              f"(choose another name, or delete it yourself)")


def reserve(path: str | os.PathLike, method: str, budget: Budget,
            events: list[Event] | None = None, label: str | None = None,
            seed: str | None = None) -> tuple[int, Session]:
    """Under the lock: re-read the ledger, check that a ``method`` release granted ``budget``
    and accounted as ``events`` (``Session.reserve``; default: by its notion) fits
    (BudgetExceededError, file untouched, if not) and that no recorded release had its
    ``seed`` (a ``rng.seed_digest``: InvalidParameterError, file untouched), and charge it as
    "reserved", with its ``label`` and ``seed``. Returns its index and the updated session."""
    with _updating(path) as session:
        _pause()
        index = session.reserve(method, budget, events, label, seed)
    return index, session


def settle(path: str | os.PathLike, index: int, status: str,
           spent: float | None = None) -> Session:
    """Under the lock: record the outcome of reserved release ``index``."""
    with _updating(path) as session:
        if not 0 <= index < len(session.ledger):
            raise LedgerFileError(f"{path}: release {index} is no longer in the ledger")
        session.settle(index, status, spent)
    return session


@contextlib.contextmanager
def _updating(path: str | os.PathLike) -> Iterator[Session]:
    """The ledger at ``path``, read under its lock, and written back when the block ends
    (not when it raises: the file is then untouched)."""
    name = _path(path)
    # Resolved once: the file locked, read and replaced is the one checked here, whatever a
    # symbolic link on the way is changed to meanwhile.
    real = _real(name)
    # A missing, corrupt or hard-linked ledger is refused before its lock file is created: a
    # failed run leaves nothing behind (the lock file is never removed: a process waiting on
    # it would then lock a file that no longer exists while a third locks a new one).
    _read(name, real)
    _refuse_read_only(name, real)
    with locked(real):
        session = _read(name, real)  # checked again under the lock
        _refuse_read_only(name, real)
        yield session
        _write(name, real, session)
