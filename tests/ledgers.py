"""Ledgers for tests: a privacy ledger for tests that call one mechanism directly, outside an
estimator; and the CLI's ledger files (a command run, an estimate charged)."""

import itertools

import numpy as np

from dpmean.accounting import PrivacyLedger
from dpmean.cli import main

# Large enough for any mechanism a test calls (many searches, many simulated releases).
_PLENTY = 1e12


def stage(name: str = "test") -> dict:
    """Keyword arguments ``ledger=``, ``stage=`` for one mechanism call: a fresh ledger with
    one planned stage that any single charge fits."""
    ledger = PrivacyLedger(_PLENTY)
    ledger.plan({name: _PLENTY})
    return {"ledger": ledger, "stage": name}


def data_file(folder):
    """A small data file in [0, 1]^3 (500 rows) in ``folder``, for ``estimate``."""
    path = folder / "x.npy"
    np.save(path, np.random.default_rng(0).uniform(0, 1, size=(500, 3)))
    return path


def run(capsys, *argv):
    """``dpmean ARGV``: (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# Each seeded release its own seed: a ledger refuses a seed one of its releases had.
_SEEDS = itertools.count(1)


def estimate(capsys, data, ledger, *extra):
    """``dpmean estimate`` of ``data`` with cm in [0, 1], seeded (a fresh seed each call),
    charged to ``ledger``."""
    return run(capsys, "estimate", data, "--method", "cm", "--bounds", 0, 1, "--seed",
               next(_SEEDS), "--ledger", ledger, *extra)
