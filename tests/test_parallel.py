"""Work shared among cores: every row range covered once, sorted columns equal numpy's sort."""

import threading
import warnings

import numpy as np
import pytest

import dpmean
from dpmean import parallel
from dpmean.errors import InvalidParameterError
from dpmean.parallel import over_row_ranges, sort_columns


@pytest.mark.parametrize("rows,threads", [(0, 2), (1, 4), (5, 2), (7, 3), (100, 8)])
def test_row_ranges_cover_every_row_once_in_order(rows, threads):
    seen = []
    lock = threading.Lock()

    def record(part):
        with lock:
            seen.append((part.start, part.stop))

    over_row_ranges(rows, record, values=1 << 20, threads=threads)
    seen.sort()
    assert seen[0][0] == 0 and seen[-1][1] == rows
    assert all(a[1] == b[0] for a, b in zip(seen, seen[1:], strict=False))  # consecutive
    assert len(seen) == max(1, min(threads, rows))


def test_small_jobs_run_in_one_call():
    seen = []
    over_row_ranges(100, seen.append, values=100 * 50, threads=4)
    assert seen == [slice(0, 100)]


def test_an_error_in_a_thread_is_raised():
    def fail(part):
        if part.start > 0:
            raise InvalidParameterError("boom")

    with pytest.raises(InvalidParameterError, match="boom"):
        over_row_ranges(10, fail, values=1 << 20, threads=2)


def test_jobs_share_one_pool_and_a_nested_job_runs_in_its_thread(monkeypatch):
    # Results in the items' order; the pool's THREADS threads are started once and serve
    # every job after; a job handed out from one of them runs there, in order, instead of
    # waiting on threads that may all be busy waiting (eight nested jobs on two threads).
    monkeypatch.setattr(parallel, "THREADS", 2)
    seen = set()
    for _ in range(5):
        names = parallel.map_on_threads(lambda i: (i, threading.current_thread().name),
                                        range(6))
        assert [i for i, _ in names] == list(range(6))
        seen |= {name for _, name in names}
    assert len(seen) <= 2 and all(name.startswith("dpmean") for name in seen)

    def outer(i):
        inner = parallel.map_on_threads(lambda j: (j, threading.current_thread().name), [0, 1])
        assert {name for _, name in inner} == {threading.current_thread().name}
        return [i * 10 + j for j, _ in inner]

    assert parallel.map_on_threads(outer, range(8)) == [[i * 10, i * 10 + 1] for i in range(8)]


@pytest.mark.parametrize("handling", ["ignore", "raise"])
def test_the_callers_floating_point_error_handling_reaches_the_pool(monkeypatch, handling):
    # numpy's error state is the thread's: the pool's threads warned on an overflow that the
    # caller (a release, which ignores them so that no row's value tells) had silenced.
    monkeypatch.setattr(parallel, "THREADS", 2)
    big = np.full(4, 1e308)

    def overflow(i):
        return float((big * 10.0)[0])

    with np.errstate(all=handling), warnings.catch_warnings():
        warnings.simplefilter("error")
        if handling == "raise":
            with pytest.raises(FloatingPointError):
                parallel.map_on_threads(overflow, range(4))
        else:
            assert parallel.map_on_threads(overflow, range(4)) == [np.inf] * 4


def test_a_forked_child_makes_its_own_pool():
    # The parent's threads do not exist in a forked child: its first job starts new ones
    # (with the parent's pool it would wait forever).
    import multiprocessing

    parallel.map_on_threads(abs, [-1, -2])  # the parent's pool exists
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        assert pool.apply_async(parallel.map_on_threads, (abs, [-1, -2, -3])).get(
            timeout=60) == [1, 2, 3]


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int64, np.float64, np.float32])
def test_sorted_columns_equal_numpy_sort_with_ties(dtype):
    rng = np.random.default_rng(0)
    # Tie-heavy columns (mostly zeros, as MNIST's pixels), one constant column, a C-ordered
    # input whose columns are strided.
    x = np.where(rng.random((8001, 9)) < 0.7, 0, rng.integers(-100, 120, size=(8001, 9)))
    if np.dtype(dtype).kind == "u":
        x = np.abs(x)
    x[:, 4] = 7
    x = x.astype(dtype)
    before = x.copy()
    rows = sort_columns(x)
    assert rows.dtype == x.dtype and rows.flags.c_contiguous and rows.shape == (9, 8001)
    np.testing.assert_array_equal(rows, np.sort(x, axis=0).T)
    np.testing.assert_array_equal(x, before)  # the input is not written


@pytest.mark.parametrize("method", ["plan", "trimmed"])
def test_releases_do_not_depend_on_the_number_of_threads(method, monkeypatch):
    # Threads only share deterministic work (sorts, clamps, pair differences, the sampler's
    # weights, trimmed coordinates); every draw stays on the caller's generator in order.
    rng = np.random.default_rng(2)
    x = np.round(rng.normal(3.0, 2.0, size=(20_000, 8)))  # integer-valued: many ties
    releases = []
    for threads in (1, 3):
        monkeypatch.setattr(parallel, "THREADS", threads)
        releases.append(dpmean.mean(x, rho=1.0, method=method, bounds=(-10, 20),
                                    random_state=5).mean)
    np.testing.assert_array_equal(releases[0], releases[1])


@pytest.mark.parametrize("case", ["normal", "half-normal", "wide", "ties", "signed zeros",
                                  "extremes", "constant", "one row", "strided", "huge bucket"])
def test_float_columns_sort_as_numpy_sorts(case):
    # The compiled radix sort (radix_sort.py) for float64: every scale and skew its buckets
    # meet, the ends of the type, columns of one row and a non-contiguous input; a bucket
    # larger than the insertion sort's limit (all values but one in one bucket).
    rng = np.random.default_rng(3)
    x = {
        "normal": lambda: rng.normal(size=(5000, 33)),
        "half-normal": lambda: np.abs(rng.normal(size=(4001, 17))),
        "wide": lambda: rng.lognormal(0.0, 40.0, size=(3000, 5)) * rng.choice([-1, 1], (3000, 5)),
        "ties": lambda: rng.integers(-3, 4, size=(6000, 7)).astype(float),
        "signed zeros": lambda: np.where(rng.random((500, 4)) < 0.5, 0.0, -0.0),
        "extremes": lambda: rng.choice([np.inf, -np.inf, 1e308, -1e308, 5e-324, -5e-324, 0.0,
                                        1.0], size=(400, 6)),
        "constant": lambda: np.full((300, 3), 2.5),
        "one row": lambda: rng.normal(size=(1, 5)),
        "strided": lambda: rng.normal(size=(2000, 60))[::2, ::3],
        "huge bucket": lambda: np.r_[1.0 + rng.random((3000, 4)) * 1e-12, np.full((1, 4), 1e300)],
    }[case]()
    before = x.copy()
    rows = sort_columns(x)
    assert rows.dtype == np.float64 and rows.flags.c_contiguous and rows.shape == x.T.shape
    np.testing.assert_array_equal(rows, np.sort(x, axis=0).T)  # -0.0 == 0.0
    np.testing.assert_array_equal(x, before)
    # Negative values before positive ones, -0.0 (if any) before +0.0.
    zeros = rows == 0.0
    signs = np.signbit(rows) & zeros
    assert all(not np.any(np.diff(s[z].astype(int)) > 0) for s, z in zip(signs, zeros,
                                                                          strict=True))
