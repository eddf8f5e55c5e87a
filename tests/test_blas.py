"""engines.blas.one_blas_thread: BLAS at one thread inside, as before outside, also after new
imports (a kept controller must not miss a BLAS loaded later)."""

import sys

from threadpoolctl import threadpool_info

from dpmean.engines.blas import one_blas_thread


def blas_threads():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_limits_every_loaded_blas_and_restores():
    before = blas_threads()
    assert before  # numpy's BLAS at least
    for _ in range(2):  # the second time with the kept controller
        with one_blas_thread():
            assert set(blas_threads()) == {1}
        assert blas_threads() == before


def test_a_blas_loaded_after_the_first_call_is_limited_too(monkeypatch):
    with one_blas_thread():
        pass
    import scipy.linalg  # noqa: F401  (scipy's own BLAS, if it ships one)

    # a new module count makes the controller look again
    monkeypatch.setitem(sys.modules, "dpmean_test_marker", sys)
    with one_blas_thread():
        assert set(blas_threads()) == {1}


def test_overlapping_entries_from_two_threads_restore_the_original():
    # Dask's threaded scheduler enters the limit from several threads at once, and their
    # exits need not nest: the limit must hold until the last exit, which must restore it
    # (each limiter restoring what it found left BLAS at one thread for good).
    before = blas_threads()
    first, second = one_blas_thread(), one_blas_thread()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert set(blas_threads()) == {1}
    second.__exit__(None, None, None)
    assert blas_threads() == before
