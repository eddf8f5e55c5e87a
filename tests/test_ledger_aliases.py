"""A ledger file reached under two names is one ledger: a symbolic link is followed (the target
is updated in place and both names share one lock), a file with several hard links is refused.

Every update replaces the file (``os.replace``), which replaces the name it is given: without
resolving it, a symbolic link became a regular file and a hard link was cut, each name then an
independent ledger with the whole budget."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ledgers import data_file, estimate, run

from dpmean import ledger_file
from dpmean.budget import Budget

pytestmark = pytest.mark.skipif(not hasattr(os, "link") or os.name != "posix",
                                reason="ledger files need POSIX links and locks")


@pytest.fixture
def data(tmp_path):
    return data_file(tmp_path)


def test_a_symbolic_link_is_the_ledger_it_points_to(capsys, tmp_path, data):
    real = tmp_path / "real.json"
    link = tmp_path / "link.json"
    assert run(capsys, "ledger", "init", real, "--rho", 1)[0] == 0
    link.symlink_to("real.json")
    assert estimate(capsys, data, link, "--rho", 0.6)[0] == 0
    # The link is still a link, and its target holds the charge.
    assert link.is_symlink() and os.readlink(link) == "real.json"
    assert len(ledger_file.read(real).ledger) == 1
    # So the other name sees it: 0.6 + 0.6 > 1 is refused, whichever name is charged.
    before = real.read_bytes()
    code, out, err = estimate(capsys, data, real, "--rho", 0.6)
    assert code == 2 and "over its budget" in err and out == ""
    code, _, err = estimate(capsys, data, link, "--rho", 0.6)
    assert code == 2 and "over its budget" in err
    assert real.read_bytes() == before
    assert estimate(capsys, data, real, "--rho", 0.3)[0] == 0
    assert link.is_symlink()
    session = ledger_file.read(link)
    assert [r.budget.rho for r in session.ledger] == [0.6, 0.3]
    assert session.spent == pytest.approx(0.9)
    # One lock, beside the real file; none for the link's name.
    assert (tmp_path / "real.json.lock").exists()
    assert not (tmp_path / "link.json.lock").exists()


def test_a_chain_of_links_across_directories(capsys, tmp_path, data):
    store = tmp_path / "store"
    store.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    real = store / "budget.json"
    assert run(capsys, "ledger", "init", real, "--rho", 1)[0] == 0
    (store / "current.json").symlink_to("budget.json")
    link = work / "ledger.json"
    link.symlink_to(os.path.relpath(store / "current.json", work))
    assert estimate(capsys, data, link, "--rho", 0.7)[0] == 0
    assert link.is_symlink() and (store / "current.json").is_symlink()
    assert estimate(capsys, data, store / "current.json", "--rho", 0.7)[0] == 2
    assert estimate(capsys, data, real, "--rho", 0.7)[0] == 2
    assert len(ledger_file.read(real).ledger) == 1
    assert sorted(p.name for p in work.iterdir()) == ["ledger.json"]


def test_hard_linked_ledger_is_refused_before_any_charge(capsys, tmp_path, data):
    first = tmp_path / "h1.json"
    second = tmp_path / "h2.json"
    assert run(capsys, "ledger", "init", first, "--rho", 1)[0] == 0
    os.link(first, second)
    before = first.read_bytes()
    output = tmp_path / "out.json"
    for name in (first, second, first):
        code, out, err = estimate(capsys, data, name, "--rho", 1, "--output", output)
        assert code == 2 and out == ""
        assert err.startswith(f"dpmean: error: {name}: refused: the ledger file has 2 hard "
                              f"links") and err.count("\n") == 1
        assert "nothing was charged to the ledger" in err
        assert not output.exists()
    # Untouched: the same file under both names, with no release.
    assert first.read_bytes() == before and os.path.samefile(first, second)
    assert os.stat(first).st_nlink == 2
    assert ledger_file.loads(before.decode()).ledger == []
    code, _, err = run(capsys, "ledger", "show", second)
    assert code == 2 and "hard links" in err
    # With one name left, the ledger works again.
    second.unlink()
    assert estimate(capsys, data, first, "--rho", 1)[0] == 0
    assert estimate(capsys, data, first, "--rho", 0.1)[0] == 2


def test_hard_link_made_through_a_symbolic_link_is_refused(capsys, tmp_path, data):
    real = tmp_path / "real.json"
    assert run(capsys, "ledger", "init", real, "--rho", 1)[0] == 0
    os.link(real, tmp_path / "copy.json")
    (tmp_path / "link.json").symlink_to("real.json")
    code, _, err = estimate(capsys, data, tmp_path / "link.json", "--rho", 0.5)
    assert code == 2 and "hard links" in err
    assert ledger_file.loads(real.read_text()).ledger == []
    os.unlink(tmp_path / "copy.json")
    assert estimate(capsys, data, tmp_path / "link.json", "--rho", 0.5)[0] == 0
    assert len(ledger_file.read(real).ledger) == 1


def test_dangling_symbolic_link_is_named(capsys, tmp_path, data):
    link = tmp_path / "link.json"
    link.symlink_to("gone.json")
    code, _, err = estimate(capsys, data, link, "--rho", 0.5)
    assert code == 2 and "is a symbolic link to" in err and "gone.json" in err
    assert "nothing was charged" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "x.npy"]
    # init never writes through a link, even a dangling one.
    code, _, err = run(capsys, "ledger", "init", link, "--rho", 1)
    assert code == 2 and "already exists" in err
    assert not (tmp_path / "gone.json").exists()


def test_python_api_follows_links_and_refuses_hard_links(tmp_path):
    from dpmean.session import Session

    real = tmp_path / "real.json"
    link = tmp_path / "link.json"
    ledger_file.create(real, Session(rho=1.0))
    link.symlink_to(real)
    index, session = ledger_file.reserve(link, "cm", Budget.zcdp(0.6))
    assert index == 0 and link.is_symlink()
    ledger_file.settle(str(link), index, "released", 0.6)
    assert ledger_file.read(real).ledger[0].status == "released"
    with pytest.raises(Exception, match="over its budget"):
        ledger_file.reserve(real, "cm", Budget.zcdp(0.6))
    hard = tmp_path / "hard.json"
    os.link(real, hard)
    before = real.read_bytes()
    for name in (real, link, hard):
        with pytest.raises(ledger_file.LedgerFileError, match="2 hard links"):
            ledger_file.reserve(name, "cm", Budget.zcdp(0.1))
        with pytest.raises(ledger_file.LedgerFileError, match="2 hard links"):
            ledger_file.settle(name, 0, "failed")
        with pytest.raises(ledger_file.LedgerFileError, match="2 hard links"):
            ledger_file.read(name)
    assert real.read_bytes() == before and os.path.samefile(real, hard)


def test_every_name_takes_one_lock(tmp_path):
    """The lock a symbolic link's name takes is its target's: while it is held, the target's
    lock file cannot be locked (flock conflicts between two open files, in one process too)."""
    import fcntl

    from dpmean.session import Session

    real = tmp_path / "real.json"
    ledger_file.create(real, Session(rho=1.0))
    link = tmp_path / "sub" / "link.json"
    link.parent.mkdir()
    link.symlink_to(Path("..") / "real.json")
    with ledger_file.locked(link):
        fd = os.open(f"{real}.lock", os.O_RDWR | os.O_CREAT, 0o666)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    assert not (link.parent / "link.json.lock").exists()
