"""dpmean ledger init/show and estimate --ledger: locked, atomic, verified ledger files."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from ledgers import data_file, estimate, run

from dpmean import ledger_file

SRC = Path(__file__).resolve().parent.parent / "src"


@pytest.fixture
def data(tmp_path):
    return data_file(tmp_path)


def test_init_show_and_charge(capsys, tmp_path, data):
    ledger = tmp_path / "ledger.json"
    code, out, _ = run(capsys, "ledger", "init", ledger, "--rho", 1.0)
    assert code == 0 and "zCDP(rho=1)" in out
    code, out, _ = run(capsys, "ledger", "show", ledger)
    assert code == 0 and "releases: none" in out and "remaining: 1 rho" in out
    code, out, _ = estimate(capsys, data, ledger, "--rho", 0.25)
    assert code == 0 and "charged to ledger" in out and "0.75 remaining" in out
    code, out, _ = estimate(capsys, data, ledger, "--epsilon", 1, "--delta", 1e-6)
    assert code == 0
    session = ledger_file.read(ledger)
    assert [r.status for r in session.ledger] == ["released", "released"]
    assert [r.method for r in session.ledger] == ["cm", "cm"]
    code, out, _ = run(capsys, "ledger", "show", ledger)
    assert code == 0 and "#0" in out and "#1" in out and "released" in out
    assert f"remaining: {session.remaining:.6g} rho" in out


def test_init_epsilon_delta_ledger(capsys, tmp_path, data):
    ledger = tmp_path / "ledger.json"
    assert run(capsys, "ledger", "init", ledger, "--epsilon", 2, "--delta", 1e-6)[0] == 0
    assert estimate(capsys, data, ledger, "--rho", 0.05)[0] == 0
    session = ledger_file.read(ledger)
    assert session.unit == "epsilon" and 0 < session.spent < 2


def test_epsilon_delta_ledger_composes_gaussian_releases_exactly(capsys, tmp_path, data):
    # Three (0.5, 1e-6) cm releases in a (1, 1e-6) ledger: basic composition fits none but
    # the first (its deltas add up), the PLD accountant fits three (about 0.901), not four.
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--epsilon", 1, "--delta", 1e-6)
    for _ in range(3):
        assert estimate(capsys, data, ledger, "--epsilon", 0.5, "--delta", 1e-6)[0] == 0
    before = ledger.read_bytes()
    assert estimate(capsys, data, ledger, "--epsilon", 0.5, "--delta", 1e-6)[0] == 2
    assert ledger.read_bytes() == before
    saved = json.loads(before)["session"]
    assert saved["version"] == 4
    assert [r["events"][0]["kind"] for r in saved["releases"]] == ["gaussian"] * 3
    # Each release is labelled with its input and the time, for an audit (a trial could not
    # tell which release was which).
    assert all(r["label"].startswith(f"{data}, 20") for r in saved["releases"])
    code, out, _ = run(capsys, "ledger", "show", ledger)
    assert code == 0 and out.count("accounted as gaussian(rho=") == 3
    assert out.count(f"      of {data}, 20") == 3
    assert "next release: at most rho = " in out  # an (epsilon, delta) ledger says it
    assert "spent: 0.901" in out
    # The same as JSON, for a script that audits the ledger (a user trial had only the text).
    code, out, _ = run(capsys, "ledger", "show", ledger, "--json")
    shown = json.loads(out)
    session = ledger_file.read(ledger)
    assert code == 0 and shown["budget"] == {"notion": "approx-DP", "epsilon": 1.0,
                                             "delta": 1e-6}
    assert shown["unit"] == "epsilon" and shown["spent"] == session.spent
    assert shown["remaining"] == session.remaining
    assert shown["next_release_max_rho"] == session.largest_rho()
    assert [r["events"] for r in shown["releases"]] == [r["events"] for r in saved["releases"]]
    assert [r["status"] for r in shown["releases"]] == ["released"] * 3


def test_version_1_ledger_files_are_read(capsys, tmp_path, data):
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--epsilon", 2, "--delta", 1e-6)
    assert estimate(capsys, data, ledger, "--rho", 0.05)[0] == 0
    doc = json.loads(ledger.read_text())
    session = doc["session"]
    # As the version-1 code wrote it: no events, the total by CKS conversion.
    from dpmean.accounting import zcdp_to_approx_dp

    del session["releases"][0]["events"], session["releases"][0]["label"]
    del session["releases"][0]["seed"]
    session["version"] = 1
    session["spent"] = zcdp_to_approx_dp(0.05, 1e-6)
    ledger.write_text(json.dumps(_rehash(doc)))
    code, out, _ = run(capsys, "ledger", "show", ledger)
    assert code == 0 and "accounted as zCDP(rho=0.05)" in out
    assert estimate(capsys, data, ledger, "--rho", 0.02)[0] == 0  # rewritten as version 4
    assert json.loads(ledger.read_text())["session"]["version"] == 4


def test_init_refuses_to_overwrite(capsys, tmp_path):
    ledger = tmp_path / "ledger.json"
    ledger.write_text("precious\n")
    code, _, err = run(capsys, "ledger", "init", ledger, "--rho", 1.0)
    assert code == 2 and "already exists" in err
    assert ledger.read_text() == "precious\n"


@pytest.mark.parametrize("argv", [[], ["--epsilon", 1], ["--rho", 1, "--epsilon", 1,
                                                         "--delta", 1e-6], ["--rho", -1]])
def test_init_needs_a_valid_budget(capsys, tmp_path, argv):
    ledger = tmp_path / "ledger.json"
    assert run(capsys, "ledger", "init", ledger, *argv)[0] == 2
    assert not ledger.exists()


def test_overspend_exits_2_and_writes_nothing(capsys, tmp_path, data):
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 0.5)
    assert estimate(capsys, data, ledger, "--rho", 0.4)[0] == 0
    before = ledger.read_bytes()
    output = tmp_path / "out.json"
    code, out, err = estimate(capsys, data, ledger, "--rho", 0.2, "--output", output)
    assert code == 2 and "before any value of the data was read" in err and out == ""
    # Said as every refusal before the charge says it (a user trial: this one did not).
    assert err.rstrip().endswith("(nothing was charged to the ledger)")
    assert ledger.read_bytes() == before
    assert not output.exists()


def test_overspend_is_refused_before_the_data_is_read(capsys, tmp_path, data, monkeypatch):
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 0.1)

    def boom(*args, **kwargs):
        raise AssertionError("the data was read")

    monkeypatch.setattr("dpmean.cli.estimate._open_input", boom)
    code, _, err = estimate(capsys, data, ledger, "--rho", 0.2)
    assert code == 2 and "refused" in err


def test_incompatible_notion_refused(capsys, tmp_path, data):
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 5)
    before = ledger.read_bytes()
    code, _, err = run(capsys, "estimate", data, "--method", "trimmed", "--bounds", 0, 1,
                       "--option", "noise=laplace", "--epsilon", 1, "--delta", 1e-6,
                       "--ledger", ledger)
    assert code == 2 and "zCDP session" in err
    assert ledger.read_bytes() == before


def test_failed_release_stays_charged(capsys, tmp_path):
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 1)
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n" + "0.5,0.5\n" * 400 + "1,oops\n")  # enough rows for the budget
    code, _, _ = run(capsys, "estimate", bad, "--method", "cm", "--bounds", 0, 1, "--rho", 0.3,
                     "--ledger", ledger)
    assert code == 2
    (release,) = ledger_file.read(ledger).ledger
    assert release.status == "failed" and release.spent == pytest.approx(0.3)


def test_missing_input_is_not_charged(capsys, tmp_path):
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 1)
    before = ledger.read_bytes()
    code, _, err = run(capsys, "estimate", tmp_path / "nope.npy", "--method", "cm",
                       "--bounds", 0, 1, "--rho", 0.3, "--ledger", ledger)
    assert code == 2 and "nothing was charged" in err
    assert ledger.read_bytes() == before


def _rehash(doc):
    canonical = json.dumps(doc["session"], sort_keys=True, separators=(",", ":"))
    doc["sha256"] = hashlib.sha256(canonical.encode()).hexdigest()
    return doc


def _corruptions():
    def edit(fn, rehash=True):
        def apply(text):
            doc = json.loads(text)
            fn(doc)
            return json.dumps(_rehash(doc) if rehash else doc)
        return apply

    def set_spent(value):
        return lambda d: d["session"].update(spent=value)

    return {
        "not json": lambda text: text[: len(text) // 2],
        "empty": lambda text: "",
        "not a ledger": lambda text: json.dumps({"hello": 1}),
        "checksum mismatch": edit(lambda d: d["session"]["releases"][0]["budget"].update(
            rho=0.01), rehash=False),
        "unknown version": edit(lambda d: d.update(version=99)),
        "unknown session version": edit(lambda d: d["session"].update(version=99)),
        "negative spent": edit(lambda d: d["session"]["releases"][0].update(spent=-0.1)),
        "total differs from entries": edit(set_spent(0.0)),
        "dropped entry": edit(lambda d: d["session"]["releases"].clear()),
        "negative budget": edit(lambda d: d["session"]["budget"].update(rho=-1)),
        "budget lowered below spend": edit(lambda d: d["session"]["budget"].update(rho=0.1)),
        "unknown notion": edit(lambda d: d["session"]["budget"].update(notion="magic")),
        "wrong schema": edit(lambda d: d["session"].update(releases={"0": 1})),
        "bad index": edit(lambda d: d["session"]["releases"][0].update(index=5)),
        "nan": lambda text: text.replace('"spent": 0.2', '"spent": NaN', 1),
        "extra field": edit(lambda d: d.update(note="hi")),
    }


@pytest.mark.parametrize("name", list(_corruptions()))
def test_corrupt_or_tampered_ledger_is_refused(capsys, tmp_path, data, name):
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 1)
    assert estimate(capsys, data, ledger, "--rho", 0.2)[0] == 0
    ledger.write_text(_corruptions()[name](ledger.read_text()))
    before = ledger.read_bytes()
    output = tmp_path / "out.json"
    code, out, err = estimate(capsys, data, ledger, "--rho", 0.1, "--output", output)
    assert code == 2 and "ledger" in err.lower() and out == ""
    assert ledger.read_bytes() == before and not output.exists()
    code, _, err = run(capsys, "ledger", "show", ledger)
    assert code == 2 and "refused" in err


def test_show_missing_file(capsys, tmp_path):
    code, _, err = run(capsys, "ledger", "show", tmp_path / "none.json")
    assert code == 2 and "no such ledger" in err


def test_two_processes_race_for_the_last_release(capsys, tmp_path, data):
    """Two concurrent estimates on a ledger with room for one: exactly one is charged.

    Each process holds the lock for a second between reading the ledger and writing it (the
    test hook), far longer than the gap between the two starts, so both try to spend while
    the other holds or waits for the lock: without the lock both would read the same empty
    ledger and both would succeed."""
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 0.5)
    env = dict(os.environ, PYTHONPATH=str(SRC), DPMEAN_TEST_LEDGER_PAUSE="1.0")
    argv = ["estimate", str(data), "--method", "cm", "--bounds", "0", "1", "--rho", "0.3",
            "--ledger", str(ledger)]
    # Both processes import dpmean, say they are ready, then wait on a "go" file, so their
    # budget checks start within milliseconds of each other.
    go = tmp_path / "go"
    script = ("import os, sys, time\n"
              "from dpmean.cli import main\n"
              "open(sys.argv[1], 'w').close()\n"
              f"while not os.path.exists({str(go)!r}): time.sleep(0.002)\n"
              "sys.exit(main(sys.argv[2:]))\n")
    ready = [tmp_path / f"ready{i}" for i in range(2)]
    procs = [subprocess.Popen([sys.executable, "-c", script, str(flag), *argv], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for flag in ready]
    deadline = time.monotonic() + 120
    while not all(flag.exists() for flag in ready):
        assert time.monotonic() < deadline, "the processes did not start"
        assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        time.sleep(0.01)
    go.touch()
    results = [p.communicate(timeout=120) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], results
    refused = next(err for p, (_, err) in zip(procs, results, strict=True) if p.returncode)
    assert "over its budget" in refused
    session = ledger_file.read(ledger)
    assert len(session.ledger) == 1 and session.ledger[0].status == "released"
    assert session.spent == pytest.approx(0.3)


def test_the_output_may_not_replace_the_ledgers_lock_file(capsys, tmp_path, data):
    # Replaced while held, the lock would lock nothing (second review of 2026-11-26).
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 1)
    lock = tmp_path / "ledger.json.lock"
    code, out, err = estimate(capsys, data, ledger, "--rho", 0.1, "--output", lock, "--force")
    assert code == 2 and "the --ledger file's lock" in err
    assert ledger_file.read(ledger).ledger == []


# ----------------------------------------- public refusals of CSV and basket input, uncharged


@pytest.mark.parametrize("given, words", [
    (["--range", "age=90:18", "--range", "flag=0:1"], "column 'age' has lo=90, hi=18"),
    (["--bounds", "90", "18"], "every column has lo=90, hi=18"),  # scalar bounds: ea23265
    (["--bounds", "0", "inf"], "must be finite"),
    (["--range", "age=nan:5", "--range", "flag=0:1"], "must be finite"),
])
def test_bad_bounds_for_a_csv_file_cost_nothing(capsys, tmp_path, given, words):
    """A user trial: bounds typed hi:lo for a CSV file were judged by the release, after the
    charge (the file records no n, so nothing public was checked first); 0.1 rho each."""
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 1)
    table = tmp_path / "t.csv"
    table.write_text("age,flag\n" + "".join(f"{20 + i % 50},{i % 2}\n" for i in range(500)))
    code, _, err = run(capsys, "estimate", table, "--rho", 0.1, "--method", "cm",
                       "--ledger", ledger, *given)
    assert code == 2 and words in err and "nothing was charged" in err
    assert ledger_file.read(ledger).ledger == []


def test_the_data_file_is_refused_as_its_own_bounds_file(capsys, tmp_path):
    """A review: --bounds-file INPUT read the data whole before the charge, and its reader's
    refusal (a text cell, its column) answered a question about the rows for free."""
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 1)
    table = tmp_path / "t.csv"
    table.write_text("a,b\n0.5,0.5\n0.25,x\n")
    link = tmp_path / "link.csv"
    link.symlink_to(table)
    for bounds_file in (table, link):
        code, _, err = run(capsys, "estimate", table, "--rho", 0.1, "--method", "cm",
                           "--ledger", ledger, "--bounds-file", bounds_file)
        assert code == 2 and "is INPUT itself" in err and "column" not in err
    assert ledger_file.read(ledger).ledger == []


def test_too_few_baskets_cost_nothing(capsys, tmp_path):
    """A review: a basket file's rows were counted only by the release, after the charge."""
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 1)
    baskets = tmp_path / "b.dat"
    baskets.write_text("0 1\n2\n1 3\n")
    code, _, err = run(capsys, "estimate", baskets, "--rho", 0.01, "--method", "cm",
                       "--items", 4, "--ledger", ledger)
    assert code == 2 and "too few rows" in err and "nothing was charged" in err
    assert ledger_file.read(ledger).ledger == []


def test_the_charge_line_tells_this_release_from_the_ledgers_total(capsys, tmp_path, data):
    """A user trial read "1 rho of zCDP(rho=2) spent" after a release of 0.5 as its cost."""
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 2)
    estimate(capsys, data, ledger, "--rho", 0.5)
    code, out, _ = estimate(capsys, data, ledger, "--rho", 0.5)
    assert code == 0
    assert ("as release #1 (0.5 rho); the ledger: 1 rho of zCDP(rho=2) spent in all, 1 "
            "remaining") in out


@pytest.mark.parametrize("late", ["2.5", "True", "text"])
def test_counting_the_rows_judges_no_cell_before_the_charge(capsys, tmp_path, monkeypatch,
                                                            late):
    """A review: the count read before the charge typed each column by its first block, so a
    later cell of another kind failed it: one person's 2.5 among integers was refused free of
    charge where its neighbour (a 1) was released and charged. Blocks of 4 KiB here (16 MiB
    in use)."""
    from dpmean import tables

    monkeypatch.setattr(tables, "_BLOCK_BYTES", 4096)
    rows = [f"{i % 90},{i % 2}" for i in range(5000)]
    for cell in ("1", late):
        rows[-10] = f"7,{cell}"
        path = tmp_path / f"{cell}.csv"
        path.write_text("a,b\n" + "\n".join(rows) + "\n")
        assert tables.CsvTable(path).count_rows() == 5000
        ledger = tmp_path / f"{cell}.json"
        run(capsys, "ledger", "init", ledger, "--rho", 10)
        code, out, err = run(capsys, "estimate", path, "--rho", 1, "--bounds", 0, 100,
                             "--method", "gaussian", "--ledger", ledger, "--quiet")
        if cell == "text":
            assert code == 2 and "stays charged" in err
        else:
            assert code == 0, err
        assert len(ledger_file.read(ledger).ledger) == 1


def test_a_dask_block_is_counted_without_judging_its_cells(tmp_path):
    """The workers count their blocks (over 1 MiB here, pyarrow's block) as the client does:
    a late 2.5 among integers failed the count, and a valid file was refused."""
    from dpmean.tables import CsvTable

    lines = "".join(f"{i % 90},{i % 2}\n" for i in range(300_000)) + "7,2.5\n"
    path = tmp_path / "late.csv"
    path.write_text("a,b\n" + lines)
    assert CsvTable(path).count_rows(lines.encode()) == 300_001


def test_an_auto_release_shows_its_choice_in_a_line(capsys, tmp_path):
    """A trial: `ledger show` printed every candidate's plan of an (epsilon, delta) auto release
    on one line of 1,500 characters."""
    import numpy as np

    data = tmp_path / "x.npy"
    np.save(data, np.random.default_rng(0).uniform(size=(3000, 3)))
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--epsilon", 3, "--delta", 1e-5)
    code, _, err = run(capsys, "estimate", data, "--epsilon", 1, "--delta", 1e-6, "--bounds",
                       0, 1, "--ledger", ledger, "--quiet")
    assert code == 0, err
    code, out, _ = run(capsys, "ledger", "show", ledger)
    line = next(line for line in out.splitlines() if "#0" in line)
    assert "choice among" in line and len(line) < 500


def test_a_seed_a_ledgers_release_had_is_refused_in_a_later_run(capsys, tmp_path, data):
    # A review: two charged gaussian releases with --seed 7 in boxes (0, 10) and (0, 20) drew
    # the same noise at two scales, and (s2 m1 - s1 m2) / (s2 - s1) gave back the exact mean
    # while the ledger said 1 rho. The ledger keeps each seeded release's seed digest.
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 2)
    release = ["estimate", data, "--method", "gaussian", "--rho", 0.5, "--seed", 7,
               "--ledger", ledger]
    assert run(capsys, *release, "--bounds", 0, 10)[0] == 0
    before = ledger.read_bytes()
    code, _, err = run(capsys, *release, "--bounds", 0, 20)
    assert code == 2 and "draws the noise an earlier release" in err
    assert "nothing was charged" in err and ledger.read_bytes() == before
    assert run(capsys, *release[:-4], "--seed", 8, "--ledger", ledger, "--bounds", 0, 20)[0] == 0
    assert run(capsys, *release[:-4], "--ledger", ledger, "--bounds", 0, 20)[0] == 0  # no seed
    seeds = [r.seed for r in ledger_file.read(ledger).ledger]
    assert seeds[2] is None and len(set(seeds[:2])) == 2 and all(len(s) == 64 for s in seeds[:2])
    # A session read back from the file refuses it too.
    import dpmean

    session = ledger_file.read(ledger)
    with pytest.raises(dpmean.InvalidParameterError, match="draws the noise"):
        session.mean(np.ones((300, 1)), rho=0.1, bounds=(0, 10), method="gaussian",
                     random_state=7)


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_a_charge_keeps_the_ledgers_permissions(capsys, tmp_path, data):
    # A user trial: every update replaced the file by one made under the umask, so a ledger
    # its owner made -rw------- became -rw-r--r-- (its labels name the input and output files).
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 1)
    ledger.chmod(0o600)
    root = os.geteuid() == 0
    if root:  # only root may give the file a group it is not in; its group is kept too
        os.chown(ledger, -1, 65534)
    old = os.umask(0o022)
    try:
        assert estimate(capsys, data, ledger, "--rho", 0.1)[0] == 0
    finally:
        os.umask(old)
    assert ledger.stat().st_mode & 0o777 == 0o600
    assert not root or ledger.stat().st_gid == 65534
    assert ledger_file.read(ledger).ledger[0].status == "released"


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_a_read_only_ledger_is_refused_before_any_charge(capsys, tmp_path, data):
    # A user trial (as root) charged a ledger made read-only (chmod 444): the update replaced
    # the file, which needs only the folder's permission. Refused whoever runs it: root, whom
    # os.access lets write any file, by the mode's write bits.
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 1)
    ledger.chmod(0o444)
    before = ledger.read_bytes()
    code, _, err = estimate(capsys, data, ledger, "--rho", 0.1)
    assert code == 2 and "read-only (-r--r--r--)" in err and "nothing was charged" in err
    assert len(err.strip().splitlines()) == 1
    assert ledger.read_bytes() == before and ledger.stat().st_mode & 0o777 == 0o444
    code, out, _ = run(capsys, "ledger", "show", ledger)  # still readable
    assert code == 0 and "releases: none" in out


def test_a_ledger_the_process_may_not_write_is_refused(capsys, tmp_path, data, monkeypatch):
    # A file with write bits that this process may not write (another user's -rw-r--r--): as
    # os.access says for a user who is not root, whatever user runs the tests.
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 1)
    before = ledger.read_bytes()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: (
        False if mode == os.W_OK and Path(path) == ledger else real_access(path, mode, **kw)))
    code, _, err = estimate(capsys, data, ledger, "--rho", 0.1)
    assert code == 2 and "read-only" in err and "nothing was charged" in err
    assert ledger.read_bytes() == before


_BLOCKED = ("import sys, time, pathlib\n"
            "import dpmean.cli.estimate as command\n"
            "from dpmean.cli import main\n"
            "def blocked(args, engine):\n"
            "    pathlib.Path(sys.argv[1]).touch()  # charged: the release is reserved\n"
            "    time.sleep(120)\n"
            "command._open_input = blocked\n"
            "sys.exit(main(sys.argv[2:]))\n")


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_settle_the_release_as_ctrl_c_does(capsys, tmp_path, data, name):
    """A user trial: SIGINT settled a charged release as "failed" and said so (exit 130);
    SIGTERM and SIGHUP (timeout, systemd, a closed terminal) ended the run with no word and
    left it "reserved". Now they are handled as SIGINT: exit 128 + the signal's number."""
    import signal

    signum = getattr(signal, name)
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 1)
    ready = tmp_path / "ready"
    env = dict(os.environ, PYTHONPATH=str(SRC))
    proc = subprocess.Popen(
        [sys.executable, "-c", _BLOCKED, str(ready), "estimate", str(data), "--method", "cm",
         "--bounds", "0", "1", "--rho", "0.3", "--ledger", str(ledger), "--output",
         str(tmp_path / "out.json")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not ready.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the release did not start"
        time.sleep(0.01)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    assert err.strip() == (f"dpmean: interrupted by {name}; nothing was written (release #0 "
                           f"stays charged to the ledger {ledger}, as failed: the data may have "
                           f"been read, and a failure can depend on it)")
    (release,) = ledger_file.read(ledger).ledger
    assert release.status == "failed" and release.spent == pytest.approx(0.3)
    assert not (tmp_path / "out.json").exists()


def test_show_explains_a_reserved_release(capsys, tmp_path):
    # A run cut off before it settled (a SIGKILL, a crash) leaves "reserved": ledger show
    # listed it with no word on what that means (a user trial).
    from dpmean.budget import Budget

    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 1)
    ledger_file.reserve(ledger, "cm", Budget.zcdp(0.25))
    code, out, _ = run(capsys, "ledger", "show", ledger)
    assert code == 0 and "reserved" in out
    assert "cut off" in out and "stays charged in full" in out


def _type_refusal_files(folder: Path) -> dict[str, Path]:
    """Files whose refusal is told by their type alone (an array's header, a sparse archive)."""
    import scipy.sparse

    files = {name: folder / name for name in ("complex.npy", "timedelta.npy", "datetime.npy",
                                              "ok.npy", "sparse.npz", "complex-sparse.npz",
                                              "text-sparse.npz")}
    np.save(files["complex.npy"], np.ones((500, 2), dtype=complex))
    np.save(files["timedelta.npy"], np.arange(500).astype("timedelta64[s]").reshape(-1, 1))
    np.save(files["datetime.npy"], np.arange(500).astype("datetime64[s]").reshape(-1, 1))
    np.save(files["ok.npy"], np.random.default_rng(0).random((500, 2)))
    baskets = scipy.sparse.random(500, 20, density=0.1, format="csr", random_state=0)
    baskets.data[:] = 1.0
    scipy.sparse.save_npz(files["sparse.npz"], baskets)
    scipy.sparse.save_npz(files["complex-sparse.npz"], baskets.astype(complex))
    # (a sparse archive whose values are text: scipy will not make such a matrix)
    np.savez(files["text-sparse.npz"], format=np.array(b"csr"), shape=np.array(baskets.shape),
             data=np.array(["a"] * baskets.nnz), indices=baskets.indices, indptr=baskets.indptr)
    return files


@pytest.mark.parametrize("name, flags, words", [
    ("complex.npy", (), "complex.npy: data must be real-valued, got complex numbers"),
    ("timedelta.npy", (), "data must be numeric, got timedelta64[s] values"),
    ("datetime.npy", (), "holds non-numeric values (datetime64[s])"),
    ("ok.npy", ("--engine", "sparse"), "engine='sparse' needs scipy.sparse input"),
    ("ok.npy", ("--option", "engine=sparse"), "engine='sparse' needs scipy.sparse input"),
    ("sparse.npz", ("--method", "trimmed"), "sparse.npz: sparse input is not supported"),
    ("sparse.npz", ("--method", "coinpress-cov", "--option", "radius=3"),
     "sparse input is not supported"),
    ("sparse.npz", ("--engine", "memory"), "engine='memory' needs dense input"),
    ("complex-sparse.npz", (), "sparse data must be real numbers, got complex128 values"),
    # (the diff review: charged, a float stand-in taking the place scipy refused)
    ("text-sparse.npz", (), "sparse data holds non-numeric values (text)"),
])
def test_a_refusal_by_the_inputs_type_is_made_before_the_charge(capsys, tmp_path, name,
                                                                 flags, words):
    # A trial: each was refused only after the charge, as "failed" (0.1 rho each), where the
    # help of --ledger says an array's type, the format and the flags cost nothing.
    files = _type_refusal_files(tmp_path)
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 1)
    before = ledger.read_bytes()
    code, _, err = run(capsys, "estimate", files[name], "--rho", 0.1, "--bounds", 0, 1,
                       "--ledger", ledger, *flags)
    assert code == 2 and words in err, err
    assert "nothing was charged" in err and ledger.read_bytes() == before


def test_a_sparse_archive_the_method_takes_is_still_charged_and_released(capsys, tmp_path):
    files = _type_refusal_files(tmp_path)
    ledger = tmp_path / "ledger.json"
    run(capsys, "ledger", "init", ledger, "--rho", 1)
    for flags in ((), ("--engine", "sparse"), ("--method", "trimmed", "--engine", "chunked")):
        code, _, err = run(capsys, "estimate", files["sparse.npz"] if "trimmed" not in flags
                           else files["ok.npy"], "--rho", 0.1, "--bounds", 0, 1, "--seed",
                           len(flags) + 1, "--ledger", ledger, *flags)
        assert code == 0, err
    assert [r.status for r in ledger_file.read(ledger).ledger] == ["released"] * 3


def test_a_directory_given_as_the_ledger_is_said_so(capsys, tmp_path, data):
    # A trial: "[Errno 21] Is a directory: '/abs/path'", raw, from estimate and ledger show.
    folder = tmp_path / "ledgers"
    folder.mkdir()
    for argv in (("ledger", "show", folder),
                 ("estimate", data, "--rho", "0.1", "--bounds", "0", "1", "--ledger", folder)):
        code, out, err = run(capsys, *argv)
        assert code == 2 and "is a directory, not a ledger file" in err and "Errno" not in err


def test_options_asking_the_sparse_engine_column_questions_cost_nothing(capsys, tmp_path):
    # A .dat file's rows are counted after the input's first checks; PLAN's variance="generic"
    # on its sparse rows (pair-difference quantiles the sparse engine refuses) was charged,
    # then refused (a review). Read in dense chunks the same options run, charged.
    cells = np.random.default_rng(3).random((400, 6)) < 0.3
    path = tmp_path / "b.dat"
    path.write_text("\n".join(" ".join(map(str, np.flatnonzero(row))) for row in cells) + "\n")
    ledger = tmp_path / "L.json"
    assert run(capsys, "ledger", "init", ledger, "--rho", "2")[0] == 0
    common = ["estimate", path, "--items", "6", "--rho", "0.5", "--bounds", "0", "1",
              "--method", "plan", "--option", "variance=generic", "--ledger", ledger]
    code, _, err = run(capsys, *common)
    assert code == 2 and "column questions" in err
    assert ledger_file.read(ledger).spent == 0.0
    assert run(capsys, *common, "--engine", "chunked", "--seed", "1")[0] == 0
    assert ledger_file.read(ledger).spent == 0.5
