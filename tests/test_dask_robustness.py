"""The Dask engine and ``estimate --scheduler`` against careless files and failing clusters: the
workers' CSV reader refuses what the other engines refuse, in their words (never a cell's
value); a scheduler without workers is refused before the ledger's charge, in bounded time; a
lost scheduler, a scheduler that loses all its workers, or Ctrl-C during a release is one error
line that says the release stays charged."""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import dpmean
from dpmean import ledger_file
from dpmean.cli import main
from dpmean.errors import InvalidDataError
from dpmean.io import open_table

distributed = pytest.importorskip("distributed")

RELEASE = ["--rho", "1", "--method", "cm", "--bounds", "0", "1", "--seed", "1", "--quiet"]
ROWS = "".join(f"0.{i % 9 + 1},0.{i % 7 + 1}\n" for i in range(200))


def run(capture, *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capture.readouterr()
    return code, out, err


def assert_one_line(code: int, out: str, err: str, secrets: tuple[str, ...] = ()) -> str:
    """The line of a failed command: nothing on stdout, one line on stderr, no traceback."""
    assert code != 0 and out == "", (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpmean: "), err
    assert "Traceback" not in err
    for secret in secrets:
        assert secret not in err, err
    return lines[0]


def loop_noise(caplog) -> list[str]:
    """What a client's event loop thread logged (on stderr beside the command's line outside
    pytest, through Python's last-resort handler; pytest's log capture holds it here)."""
    return [record.getMessage() for record in caplog.records
            if record.levelno >= logging.WARNING
            and record.name in ("asyncio", "tornado.application", "distributed.client")]


@pytest.fixture
def ledger(tmp_path) -> Path:
    from dpmean.session import Session

    path = tmp_path / "L.json"
    ledger_file.create(path, Session(rho=10))
    return path


@pytest.fixture
def data(tmp_path) -> Path:
    path = tmp_path / "x.npy"
    np.save(path, np.random.default_rng(5).uniform(size=(2000, 3)))
    return path


# --------------------------------------------------- 1. the workers' CSV reader refuses alike

# (file text, a cell's content that no message may quote)
BAD_CSV = {
    "extra-value": ("a,b\n" + ROWS + "0.5,0.5,31337.25\n" + ROWS, "31337"),
    "missing-value": ("a,b\n" + ROWS + "0.4321\n" + ROWS, "0.4321"),
    "yes-no": ("a,b\n" + "".join(f"{'yes' if i % 2 else 'no'},0.5\n"
                                 for i in range(400)), "yes"),
    "yes-late": ("a,b\n" + ROWS + "YES,0.5\n", "YES"),
    "word-after-true": ("a,b\n" + ROWS + "true,0.5\n" + ROWS + "absent,0.5\n", "absent"),
    "trailing-delimiter": ("a,b\n" + ROWS + "0.5,0.4321,\n", "0.4321"),
    "headerless-extra": (ROWS + "0.5,0.5,31337.25\n", "31337"),
}


@pytest.mark.parametrize("name", list(BAD_CSV))
def test_dask_csv_reader_refuses_what_the_other_engines_refuse(tmp_path, name, dask_client):
    """dask.dataframe (pandas) dropped a line's extra values and read a column of yes/no
    words as text, where the other engines' pyarrow reader refuses both. The workers count the rows
    without judging a value (the count is read before an (epsilon, delta) budget's charge)
    and refuse them as they read them, in the other engines' words."""
    from dpmean.engines.dask import dask_array_from_file

    text, secret = BAD_CSV[name]
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InvalidDataError) as memory:
        open_table(path).table()
    x = dask_array_from_file(str(path))
    assert x.shape == (open_table(path).count_rows(), 2)
    with pytest.raises(InvalidDataError) as on_dask:
        x.compute()
    assert f"{path}: {on_dask.value}" == str(memory.value)
    assert secret not in str(on_dask.value)


@pytest.mark.parametrize("name", ["extra-value", "yes-no"])
def test_every_engine_refuses_the_same_csv_file_in_one_line(tmp_path, capsys, monkeypatch,
                                                            name, dask_client):
    text, secret = BAD_CSV[name]
    monkeypatch.chdir(tmp_path)
    Path("bad.csv").write_text(text)
    with pytest.raises(InvalidDataError) as memory:
        open_table("bad.csv").table()
    for engine in ("memory", "chunked", "dask"):
        with pytest.raises(InvalidDataError) as refused:
            dpmean.mean("bad.csv", rho=1, method="cm", bounds=(0, 1), engine=engine)
        assert str(refused.value) == str(memory.value)
        assert secret not in str(refused.value)
    lines = {engine: assert_one_line(*run(capsys, "estimate", "bad.csv", *RELEASE,
                                          "--engine", engine), secrets=(secret,))
             for engine in ("memory", "chunked")}
    address = dask_client.scheduler.address
    lines["scheduler"] = assert_one_line(*run(capsys, "estimate", "bad.csv", *RELEASE,
                                              "--scheduler", address), secrets=(secret,))
    assert len(set(lines.values())) == 1, lines
    assert lines["memory"].startswith(f"dpmean: error: {memory.value}"), lines


def test_dask_csv_blocks_read_the_rows_the_other_engines_read(tmp_path, monkeypatch):
    """Blocks of a few bytes: each line read once, by the block it starts in, whatever the
    header, blank lines, byte-order mark, line endings or quotes; a bad line in a late block
    is found and told as the other engines tell it."""
    from dpmean.engines import dask as dask_engine

    rows = [f"{i}.5,{i % 7},name{i}" for i in range(12)]
    files = {
        "plain": "a,b,c\n" + "\n".join(rows) + "\n",
        "crlf-bom": "\ufeffa,b,c\r\n" + "\r\n".join(rows) + "\r\n",
        "blank-lines": "\n\na,b,c\n\n" + "\n\n".join(rows),
        "quoted": 'a,"b",c\n' + "\n".join(f'"{r}"'.replace(",", '",', 1) for r in rows) + "\n",
        "headerless": "\n".join(r.rsplit(",", 1)[0] for r in rows) + "\n",
    }
    for name, text in files.items():
        path = tmp_path / f"{name}.csv"
        path.write_bytes(text.encode())
        columns = None if name == "headerless" else ["b", "a"]
        expected = open_table(path, columns=columns).read()
        for block_bytes in (1, 7, 1 << 20):
            monkeypatch.setattr(dask_engine, "_CSV_BLOCK_BYTES", block_bytes)
            got = dask_engine.dask_array_from_file(str(path), columns=columns)
            np.testing.assert_array_equal(got.compute(scheduler="sync"), expected)
    words = tmp_path / "words.csv"  # True/False (as pandas writes a bool column) from row 150
    words.write_text("a,b\n" + "".join(f"{i % 2},0.{i % 7}\n" for i in range(150))
                     + "".join(f"{'True' if i % 3 else 'false'},0.5\n" for i in range(150)))
    expected = np.array([[i % 2, i % 7 / 10] for i in range(150)]
                        + [[float(i % 3 > 0), 0.5] for i in range(150)])
    np.testing.assert_array_equal(open_table(words).read(), expected)
    for block_bytes in (64, 1 << 20):
        monkeypatch.setattr(dask_engine, "_CSV_BLOCK_BYTES", block_bytes)
        got = dask_engine.dask_array_from_file(str(words))
        np.testing.assert_array_equal(got.compute(scheduler="sync"), expected)
    late = tmp_path / "late.csv"
    late.write_text("a,b\n" + ROWS + "0.5,0.5,31337.25\n")
    with pytest.raises(InvalidDataError) as memory:
        open_table(late).table()
    monkeypatch.setattr(dask_engine, "_CSV_BLOCK_BYTES", 64)
    x = dask_engine.dask_array_from_file(str(late))
    assert x.shape == (201, 2) and x.numblocks[0] > 10
    with pytest.raises(InvalidDataError) as on_dask:
        x.compute(scheduler="sync")
    assert f"{late}: {on_dask.value}" == str(memory.value)


# ----------------------------------------------- 2. a scheduler without workers, before charge


def test_a_scheduler_without_workers_is_refused_before_the_charge(capsys, monkeypatch, data,
                                                                   ledger):
    """It took the release's tasks and never ran them: the command waited forever with its
    ledger entry "reserved"."""
    from dpmean.cli import estimate

    monkeypatch.setattr(estimate, "SCHEDULER_WORKERS_TIMEOUT", 0.5)
    with distributed.LocalCluster(n_workers=0, processes=False,
                                  dashboard_address=":0") as cluster:
        done: list[tuple[int, str, str]] = []
        command = threading.Thread(target=lambda: done.append(run(
            capsys, "estimate", data, *RELEASE, "--scheduler", cluster.scheduler_address,
            "--ledger", ledger)), daemon=True)
        command.start()
        command.join(timeout=60)
        assert done, "the command still waits for a worker"
    line = assert_one_line(*done[0])
    assert "has no workers (none joined within 0.5 s)" in line, line
    assert "nothing was charged to the ledger" in line, line
    assert ledger_file.read(ledger).ledger == []


def test_workers_on_another_dpmean_are_refused_before_the_charge(capsys, monkeypatch, data,
                                                                  ledger, dask_client):
    """A worker whose dpmean differs from the command's (another build, or none) computed the
    release with its own code, or failed mid-release with a deserialisation traceback: the
    digests of the package are compared first, and the ledger is not charged."""
    import dpmean

    # The shared cluster's workers are processes of their own: this command is made another
    # build by its version (which the digest covers, beside every module's bytes).
    monkeypatch.setattr(dpmean, "__version__", "0.0.0+another-build")
    line = assert_one_line(*run(capsys, "estimate", data, *RELEASE, "--scheduler",
                                dask_client.scheduler.address, "--ledger", ledger))
    assert "run another dpmean than this command" in line, line
    assert "nothing was charged to the ledger" in line, line
    assert ledger_file.read(ledger).ledger == []
    # The same workers with the same build release.
    monkeypatch.undo()
    assert run(capsys, "estimate", data, *RELEASE, "--scheduler",
               dask_client.scheduler.address, "--ledger", ledger)[0] == 0


def test_workers_that_cannot_say_which_dpmean_they_run_are_refused():
    """A worker without dpmean, with one that has no digest, or one that does not answer."""
    from dpmean.cli import UsageError, estimate
    from dpmean.engines.dask import source_digest

    class Client:
        def __init__(self, answers):
            self.answers = answers

        def run(self, function, on_error):
            assert function is source_digest and on_error == "return"
            return self.answers

    estimate._check_same_dpmean(Client({"tcp://a": source_digest()}), "tcp://s")
    with pytest.raises(UsageError, match=r"workers tcp://a \(ModuleNotFoundError\) of the "
                                         r"scheduler at tcp://s did not say which dpmean"):
        estimate._check_same_dpmean(Client({"tcp://a": ModuleNotFoundError("dpmean"),
                                            "tcp://b": source_digest()}), "tcp://s")


# --------------------------------------------- 3. a lost scheduler, Ctrl-C: one line, charged


def test_a_connection_lost_during_the_release_is_one_line_and_stays_charged(
        capfd, caplog, monkeypatch, data, ledger, dask_client):
    """The client's connection to the scheduler breaks while the release waits for it (as
    when the scheduler is killed): distributed cancels the client's futures
    (FutureCancelledError), which the command printed as a traceback."""
    def lost_mid_release(self, x, columns=None):
        import dask

        # The client the command connected (the current one during the release), cut off as
        # by a network failure or a killed scheduler; the cluster of the other tests runs on.
        client = distributed.get_client()
        threading.Timer(0.3, client.loop.add_callback,
                        [client.scheduler_comm.comm.abort]).start()
        dask.delayed(time.sleep)(2).compute(scheduler=client)

    monkeypatch.setattr("dpmean.estimators.base.MeanEstimator.estimate", lost_mid_release)
    line = assert_one_line(*run(capfd, "estimate", data, *RELEASE, "--scheduler",
                                dask_client.scheduler.address, "--ledger", ledger))
    assert line.startswith("dpmean: error: lost the connection to the Dask scheduler at "
                           f"{dask_client.scheduler.address} during the release"), line
    assert loop_noise(caplog) == []
    assert "release #0 stays charged to the ledger" in line and "as failed" in line, line
    assert [r.status for r in ledger_file.read(ledger).ledger] == ["failed"]
    with warnings.catch_warnings():
        # The aborted connection's socket, reaped here: it warned "unclosed" in a later test.
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


def _lost(kind: str) -> BaseException:
    from distributed.client import FutureCancelledError
    from distributed.comm.core import CommClosedError

    return {
        "closed": CommClosedError("in <TCP (closed) ConnectionPool.gather local=tcp://"
                                  "127.0.0.1:1 remote=tcp://127.0.0.1:2>: Stream is closed"),
        "cancelled": FutureCancelledError("finalize-0", "scheduler-connection-lost",
                                          "Client lost the connection to the scheduler."),
        "reset": ConnectionResetError(104, "Connection reset by peer"),
    }[kind]


@pytest.mark.parametrize("kind", ["closed", "cancelled", "reset"])
def test_a_lost_connection_is_one_line_and_stays_charged(capsys, monkeypatch, data, ledger,
                                                         kind, dask_client):
    def lost(self, x, columns=None):
        raise _lost(kind)

    monkeypatch.setattr("dpmean.estimators.base.MeanEstimator.estimate", lost)
    code, out, err = run(capsys, "estimate", data, *RELEASE, "--scheduler",
                         dask_client.scheduler.address, "--ledger", ledger)
    line = assert_one_line(code, out, err)
    assert code == 2 and line.startswith("dpmean: error: lost the connection to the Dask "
                                         "scheduler at "), line
    assert "release #0 stays charged to the ledger" in line, line
    assert [r.status for r in ledger_file.read(ledger).ledger] == ["failed"]


@pytest.mark.parametrize("error, said", [
    (FileNotFoundError(2, "No such file or directory", "/data/x.npy"),
     "(FileNotFoundError: No such file or directory: /data/x.npy)"),
    (OSError("a worker's message quoting a cell: 31337.25"), "(OSError)"),
])
def test_another_cluster_oserror_is_one_line_and_stays_charged(capsys, monkeypatch, data,
                                                               ledger, error, said,
                                                               dask_client):
    """A worker that cannot open the file (not on a file system it shares) raises there; the
    line gives an OSError's reason and file name, never its free text."""
    def failed(self, x, columns=None):
        raise error

    monkeypatch.setattr("dpmean.estimators.base.MeanEstimator.estimate", failed)
    line = assert_one_line(*run(capsys, "estimate", data, *RELEASE, "--scheduler",
                                dask_client.scheduler.address, "--ledger", ledger),
                           secrets=("31337",))
    assert line.startswith("dpmean: error: the release on the Dask scheduler at "), line
    assert f"failed {said}" in line, line
    assert "release #0 stays charged to the ledger" in line, line


@pytest.mark.parametrize("where", ["raised", "on the cluster"])
def test_ctrl_c_during_a_release_is_one_line_and_stays_charged(capfd, caplog, monkeypatch,
                                                               data, ledger, where,
                                                               dask_client):
    """Ctrl-C while the release waits for the cluster: the client's event loop logged "Task
    exception was never retrieved" with a traceback beside the command's line."""
    def interrupted(self, x, columns=None):
        if where == "raised":
            raise KeyboardInterrupt
        import dask

        # A real SIGINT to the main thread, as Ctrl-C sends: it interrupts distributed's wait
        # there (``_thread.interrupt_main`` waits for the wait to end).
        threading.Timer(0.3, signal.pthread_kill,
                        [threading.main_thread().ident, signal.SIGINT]).start()
        # The client the command connected (the current one during the release), as a
        # release uses it.
        dask.compute(*[dask.delayed(time.sleep)(1 + i / 10) for i in range(4)],
                     scheduler=distributed.get_client())
        # Under load the timer's signal can come after the wait (once in a full run with both
        # cores busy: the release then returned None); it still interrupts the command here.
        time.sleep(30)

    monkeypatch.setattr("dpmean.estimators.base.MeanEstimator.estimate", interrupted)
    code, out, err = run(capfd, "estimate", data, *RELEASE, "--scheduler",
                         dask_client.scheduler.address, "--ledger", ledger)
    time.sleep(0.5)  # anything the client's event loop thread still prints
    err += capfd.readouterr().err
    line = assert_one_line(code, out, err)
    assert loop_noise(caplog) == []
    assert code == 130 and line.startswith("dpmean: interrupted"), line
    assert "release #0 stays charged to the ledger" in line and "as failed" in line, line
    assert [r.status for r in ledger_file.read(ledger).ledger] == ["failed"]


# --------------------------------- 4. all workers lost during a release, the scheduler up

# The scheduler, its workers and the command, each a process of its own, as a user runs them:
# a worker is killed by a signal, and the command's exit and stderr are the user's. The command
# runs ``main`` with SCHEDULER_WORKERS_TIMEOUT set first (argv[1]), to keep the tests short.
SRC = Path(__file__).resolve().parents[1] / "src"
ENV = dict(os.environ, PYTHONPATH=str(SRC))
# The command, with its workers' timeout from the first argument. Its check of the workers'
# dpmean is skipped: the worker is stopped before the command starts (so that the release is
# surely running when it dies), and a stopped worker cannot answer the check either.
COMMAND = ("import sys\n"
           "from dpmean.cli import estimate, main\n"
           "estimate.SCHEDULER_WORKERS_TIMEOUT = float(sys.argv[1])\n"
           "estimate._check_same_dpmean = lambda client, address: None\n"
           "sys.exit(main(sys.argv[2:]))\n")


def _until(condition, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@contextlib.contextmanager
def _processes():
    """Start processes (``start(argv, log)``); every one still running is killed at the end."""
    started: list[subprocess.Popen] = []

    def start(argv: list[str], log: Path) -> subprocess.Popen:
        with open(log, "w") as f:
            process = subprocess.Popen([sys.executable, *argv], env=ENV, stdout=f,
                                       stderr=subprocess.STDOUT)
        started.append(process)
        return process

    try:
        yield start
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
                process.wait()


def _scheduler(start, tmp_path: Path) -> str:
    """A scheduler process on a free port (it ends itself after a minute without work)."""
    info = tmp_path / "scheduler.json"
    start(["-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
           "--no-dashboard", "--idle-timeout", "60s", "--scheduler-file", str(info)],
          tmp_path / "scheduler.log")
    _until(lambda: info.exists() and info.stat().st_size > 0, "the scheduler")
    return json.loads(info.read_text())["address"]


def _worker(start, tmp_path: Path, address: str, name: str) -> subprocess.Popen:
    """A worker process without a nanny (which would restart it when it is killed)."""
    return start(["-m", "distributed.cli.dask_worker", address, "--no-nanny", "--nthreads", "1",
                  "--no-dashboard", "--memory-limit", "0", "--death-timeout", "60s",
                  "--name", name], tmp_path / f"{name}.log")


def _release_on_a_stopped_worker(start, tmp_path: Path, data: Path, ledger: Path,
                                 timeout: float, observer) -> tuple[subprocess.Popen,
                                                                    subprocess.Popen]:
    """The command charged and its tasks given to the only worker, which is stopped (SIGSTOP:
    the scheduler still counts it), so that the release is surely running when the test kills
    the worker. Returns the worker and the command."""
    address = observer.scheduler.address
    worker = _worker(start, tmp_path, address, "first")
    observer.wait_for_workers(1, timeout=60)
    os.kill(worker.pid, signal.SIGSTOP)
    command = subprocess.Popen(
        [sys.executable, "-c", COMMAND, str(timeout), "estimate", str(data), *RELEASE,
         "--scheduler", address, "--ledger", str(ledger)],
        env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _until(lambda: command.poll() is not None or ledger_file.read(ledger).ledger,
               "the charge")
        _until(lambda: command.poll() is not None or observer.run_on_scheduler(
            lambda dask_scheduler: len(dask_scheduler.tasks)), "the release's tasks")
        assert command.poll() is None, command.communicate()
        assert [r.status for r in ledger_file.read(ledger).ledger] == ["reserved"]
    except BaseException:
        command.kill()
        command.wait()
        raise
    return worker, command


def _killed(worker: subprocess.Popen) -> None:
    worker.kill()  # SIGKILL, which a stopped process takes too
    worker.wait()


@contextlib.contextmanager
def _worker_killed_mid_release(tmp_path: Path, data: Path, ledger: Path, timeout: float):
    """A scheduler, the command's release charged on its only worker, and that worker killed:
    yields (start, the scheduler's address, an observing client, the command, when the
    worker died)."""
    with _processes() as start:
        address = _scheduler(start, tmp_path)
        with distributed.Client(address, set_as_default=False, timeout="30s") as observer:
            worker, command = _release_on_a_stopped_worker(start, tmp_path, data, ledger,
                                                           timeout, observer)
            _killed(worker)
            yield start, address, observer, command, time.monotonic()


def _output(command: subprocess.Popen) -> tuple[str, str]:
    """The command's stdout and stderr once it exits (killed after 60 s)."""
    try:
        return command.communicate(timeout=60)
    finally:
        command.kill()


def test_all_workers_lost_during_a_release_is_one_line_and_stays_charged(tmp_path, data,
                                                                         ledger):
    """The only worker dies while the release runs and the scheduler stays up: the scheduler
    keeps the tasks (state "no-worker") and the command waited forever, its ledger entry
    "reserved". It ends, SCHEDULER_WORKERS_TIMEOUT after the last worker left, in one line."""
    with _worker_killed_mid_release(tmp_path, data, ledger, 2) as (_, address, observer,
                                                                     command, killed):
        out, err = _output(command)
        took = time.monotonic() - killed
        # The scheduler forgot the release's tasks when the command's client left.
        _until(lambda: observer.run_on_scheduler(
            lambda dask_scheduler: len(dask_scheduler.tasks)) == 0, "the tasks' end", 10)
    line = assert_one_line(command.returncode, out, err)
    assert command.returncode == 2, (command.returncode, err)
    assert line.startswith(f"dpmean: error: the Dask scheduler at {address} lost all its "
                           f"workers during the release (none for 2 s)"), line
    assert "release #0 stays charged to the ledger" in line and "as failed" in line, line
    assert [r.status for r in ledger_file.read(ledger).ledger] == ["failed"]
    # Not before the timeout; soon after it (a poll a second, and the command's exit).
    assert 2 <= took < 15, took


def test_a_worker_back_within_the_timeout_does_not_end_the_release(tmp_path, data, ledger):
    """The only worker dies and another joins seconds later, within the timeout (20 s here):
    the release runs on it and is released."""
    with _worker_killed_mid_release(tmp_path, data, ledger, 20) as (start, address, observer,
                                                                      command, killed):
        _until(lambda: not observer.nthreads(), "the scheduler to see no worker", 10)
        time.sleep(2)  # the command's polls (one a second) see no worker
        _worker(start, tmp_path, address, "second")
        observer.wait_for_workers(1, timeout=60)
        without = time.monotonic() - killed
        out, err = _output(command)
    assert command.returncode == 0, (command.returncode, err)
    assert out.startswith("dpmean estimate: method cm") and err == "", err
    assert [r.status for r in ledger_file.read(ledger).ledger] == ["released"]
    # Seconds without a worker: enough for the command to see none, well within the timeout.
    assert 2 <= without < 15, without


def test_the_watch_runs_on_a_scheduler_only_and_ends_with_the_release(capsys, monkeypatch,
                                                                       data, dask_client):
    """No thread without --scheduler; with it, none left when the release is made."""
    from dpmean.cli import estimate

    watched = []
    real = estimate._workers_watched

    def spied(client):
        watched.append(client)
        return real(client)

    monkeypatch.setattr(estimate, "_workers_watched", spied)
    assert run(capsys, "estimate", data, *RELEASE)[0] == 0
    assert watched == []
    assert run(capsys, "estimate", data, *RELEASE, "--scheduler",
               dask_client.scheduler.address)[0] == 0
    assert watched
    assert [t for t in threading.enumerate() if t.name == "dpmean-workers-watched"] == []


# ------------------------------------------- block boundaries (review of this change)


def _read_everywhere(path, **options):
    """n and the rows on the memory, chunked and dask engines (Dask's local threads)."""
    from dpmean.engines import open_source
    from dpmean.engines.dask import dask_array_from_file

    memory = open_table(path, **options).read()
    source = open_source(path, **options)
    chunked = np.concatenate(list(source.chunks(7)))
    dask_rows = dask_array_from_file(str(path), **options).compute(scheduler="threads")
    return source.shape[0], memory, chunked, dask_rows


@pytest.mark.parametrize("first", ["5", "50"])
def test_a_quoted_line_break_is_refused_alike_on_every_engine(tmp_path, monkeypatch, first):
    # Blocks of 64 bytes split records at any line break: whether a split fell inside a quoted
    # cell depended on the byte lengths of the rows before it (the neighbour with 50 for 5
    # released another n). A record is a line now: n counts the lines, whatever the cells
    # hold, and every engine refuses the quoted line break in the same words.
    from dpmean.engines import dask as dask_module
    from dpmean.engines import open_source
    from dpmean.engines.dask import dask_array_from_file

    monkeypatch.setattr(dask_module, "_CSV_BLOCK_BYTES", 64)
    rows = [f"{first},a"] + ["1,b"] * 12 + ['3,"see\n7,8"'] + ["1,c"] * 12
    path = tmp_path / "q.csv"
    path.write_text("x,note\n" + "\n".join(rows) + "\n")
    assert open_source(path, columns=["x"]).shape == (27, 1)
    assert dask_array_from_file(str(path), columns=["x"]).shape == (27, 1)
    for engine in ("memory", "chunked", "dask"):
        with pytest.raises(InvalidDataError, match="a quoted cell runs over a line break"):
            dpmean.mean(str(path), columns=["x"], rho=1.0, bounds=(0, 60), method="gaussian",
                        engine=engine, random_state=0)


@pytest.mark.parametrize("text", ["a,b\r1,2\r3,4\r", "a,b\r\n1,2\n3,4\r\n", "1,2\r3,4\r"])
def test_line_ends_are_read_alike_on_every_engine(tmp_path, text):
    # A header ended by a lone CR: the Dask reader looked for the first LF and lost a row,
    # or the whole file.
    path = tmp_path / "cr.csv"
    path.write_bytes(text.encode())
    n, memory, chunked, dask_rows = _read_everywhere(path)
    assert n == 2 == memory.shape[0]
    np.testing.assert_array_equal(chunked, memory)
    np.testing.assert_array_equal(dask_rows, memory)


def test_a_dask_block_of_blank_lines_in_a_file_of_one_column_is_rows(tmp_path, monkeypatch):
    from dpmean.engines import dask as dask_module

    monkeypatch.setattr(dask_module, "_CSV_BLOCK_BYTES", 8)
    path = tmp_path / "one.csv"
    path.write_text("x\n1\n2\n3\n4\n" + "\n" * 8 + "5\n6\n7\n8\n")
    for engine in ("memory", "chunked", "dask"):
        with pytest.raises(InvalidDataError, match="column 1 holds a cell that is not"):
            dpmean.mean(str(path), rho=1.0, method="gaussian", bounds=(0, 10), engine=engine)


def test_a_quoted_line_break_in_a_numeric_column_is_told_alike_on_workers(tmp_path, capsys,
                                                                          monkeypatch,
                                                                          dask_client):
    # A trial: with --scheduler, a quoted cell holding a line break in a column read was
    # refused as "a cell that is not a number" (the workers' refusal read the file again and
    # met the cell first), where the other engines say the record runs over lines. The
    # workers' refusal now scans for it first, as the other readers do.
    monkeypatch.chdir(tmp_path)
    rows = ["0.1,0.2"] * 300 + ['0.3,"0.4\n0.5"'] + ["0.1,0.2"] * 30
    Path("late.csv").write_text("a,b\n" + "\n".join(rows) + "\n")
    lines = {engine: assert_one_line(*run(capsys, "estimate", "late.csv", *RELEASE,
                                          "--engine", engine))
             for engine in ("memory", "chunked")}
    lines["scheduler"] = assert_one_line(*run(capsys, "estimate", "late.csv", *RELEASE,
                                              "--scheduler", dask_client.scheduler.address))
    assert len(set(lines.values())) == 1, lines
    assert "a quoted cell runs over a line break" in lines["memory"]
