"""A ``Session`` shared by threads: checking a release and charging it is one atomic step, and
what the session reports is one moment of its ledger.

The races are made deterministic, not likely: a hook stops a thread in the middle of the step
that must be atomic until either every other thread has got as far (the race, on a session
without a lock) or another thread is seen blocked on the session's lock (``Contended``). A
timeout is only a safety net for a hang; no assertion depends on time."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from dpmean.budget import Budget
from dpmean.errors import BudgetExceededError
from dpmean.session import Session

# Only for a hang: each wait below ends long before, on an event of the test itself.
_SAFETY_NET = 60.0


class Contended:
    """A re-entrant lock that notes when a thread has to wait for it (``blocked``)."""

    def __init__(self, changed: threading.Condition) -> None:
        self._lock = threading.RLock()
        self._changed = changed
        self.blocked = False

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self._lock.acquire(blocking=False):
            return True
        if not blocking:
            return False
        with self._changed:
            self.blocked = True
            self._changed.notify_all()
        return self._lock.acquire(True, timeout)

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _watch(session: Session, changed: threading.Condition) -> Contended | None:
    """Replace the session's lock, if it has one, by a ``Contended`` one."""
    if not hasattr(session, "_lock"):
        return None  # the code before the fix: nothing to watch, the race runs to its end
    session._lock = Contended(changed)
    return session._lock


def _blocked(lock: Contended | None) -> bool:
    return lock is not None and lock.blocked


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("threads", [2, 6])
def test_concurrent_releases_never_overspend(monkeypatch, threads):
    """The reviewer's case: (0.8, 1e-7) "plan" releases in a (1, 1e-6) session fit one at a
    time. Each thread, once its release passed the budget check in ``reserve``, waits there
    for the others: without a lock all pass the check before any is charged and all release."""
    x = np.random.default_rng(0).normal(size=(2000, 3))
    session = Session(epsilon=1.0, delta=1e-6)
    changed = threading.Condition()
    lock = _watch(session, changed)
    passed = [0]
    in_reserve = threading.local()
    check, reserve = Session.check, Session.reserve

    def reserving(self, *args, **kwargs):
        in_reserve.on = True
        try:
            return reserve(self, *args, **kwargs)
        finally:
            in_reserve.on = False

    def checking(self, *args, **kwargs):
        check(self, *args, **kwargs)
        if getattr(in_reserve, "on", False):  # the check that the charge follows
            with changed:
                passed[0] += 1
                changed.notify_all()
                assert changed.wait_for(lambda: passed[0] == threads or _blocked(lock),
                                        timeout=_SAFETY_NET)

    monkeypatch.setattr(Session, "reserve", reserving)
    monkeypatch.setattr(Session, "check", checking)
    start = threading.Barrier(threads)
    outcomes: list[object] = [None] * threads

    def release(i: int) -> None:
        start.wait()
        try:
            outcomes[i] = session.mean(x, epsilon=0.8, delta=1e-7, method="plan",
                                       bounds=(-5, 5), random_state=i)
        except Exception as exc:  # noqa: BLE001 - recorded, checked below
            outcomes[i] = exc

    workers = [threading.Thread(target=release, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    refused = [o for o in outcomes if isinstance(o, BudgetExceededError)]
    released = [o for o in outcomes if not isinstance(o, Exception)]
    assert len(released) == 1 and len(refused) == threads - 1, outcomes
    assert all("refused before any value of the data was read" in str(e) for e in refused)
    assert [r.status for r in session.ledger] == ["released"]
    assert session.spent <= 1.0
    Session.from_dict(session.to_dict())  # consistent, within its budget


def test_reserve_from_many_threads_charges_what_fits():
    """``reserve`` directly, zCDP: ten threads ask 0.3 each of rho = 1; exactly three fit, with
    distinct indices, and a failed one stays charged."""
    session = Session(rho=1.0)
    changed = threading.Condition()
    lock = _watch(session, changed)
    start = threading.Barrier(10)
    indices: list[int] = []
    refusals: list[BudgetExceededError] = []
    check = session.check
    passed = [0]

    def checking(*args, **kwargs):
        check(*args, **kwargs)
        with changed:
            passed[0] += 1
            changed.notify_all()
            changed.wait_for(lambda: passed[0] >= 10 or _blocked(lock), timeout=_SAFETY_NET)

    session.check = checking  # type: ignore[method-assign]

    def ask() -> None:
        start.wait()
        try:
            indices.append(session.reserve("cm", Budget.zcdp(0.3)))
        except BudgetExceededError as exc:
            refusals.append(exc)

    workers = [threading.Thread(target=ask) for _ in range(10)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert sorted(indices) == [0, 1, 2] and len(refusals) == 7
    session.settle(indices[0], "failed")
    assert session.spent == pytest.approx(0.9)
    assert [r.status for r in session.ledger].count("failed") == 1


def test_to_dict_is_one_moment_of_the_ledger(monkeypatch):
    """``to_dict`` while another thread charges a release: the releases written and their total
    ``spent`` are of the same ledger (``from_dict`` checks that they agree). The hook lets the
    other thread charge between the two, unless it is held off by the session's lock."""
    session = Session(rho=1.0)
    session.reserve("cm", Budget.zcdp(0.1))
    changed = threading.Condition()
    lock = _watch(session, changed)
    spent = Session.spent
    done = threading.Event()
    hooked = threading.local()
    saving = threading.get_ident()

    def charge() -> None:
        session.reserve("cm", Budget.zcdp(0.2))
        with changed:
            done.set()
            changed.notify_all()

    def spent_then(self):
        if threading.get_ident() == saving and not getattr(hooked, "once", False):
            hooked.once = True
            other = threading.Thread(target=charge)
            other.start()
            with changed:
                assert changed.wait_for(lambda: done.is_set() or _blocked(lock),
                                        timeout=_SAFETY_NET)
        return spent.fget(self)

    monkeypatch.setattr(Session, "spent", property(spent_then))
    saved = session.to_dict()
    monkeypatch.setattr(Session, "spent", spent)
    restored = Session.from_dict(saved)  # refused if its spent is not its releases' total
    assert [r.budget.rho for r in restored.ledger] == [0.1]
    assert restored.spent == pytest.approx(0.1)
    # The other thread's release is charged once the lock is free.
    done.wait(_SAFETY_NET)
    assert [r.budget.rho for r in session.ledger] == [0.1, 0.2]
    Session.from_dict(session.to_dict())
