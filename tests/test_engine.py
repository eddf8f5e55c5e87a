"""The in-memory engine answers its three questions exactly as a direct numpy computation."""

import numpy as np
import pytest

from dpmean.engines import InMemoryEngine
from dpmean.engines import memory as memory_module
from dpmean.engines.column_counts import ColumnCounter, LatticeCounter
from dpmean.transforms import Quantizer, RandomRotation, View, clip_rows


@pytest.fixture(params=[1, 7, 64], ids=["d1", "d7", "d64"])
def setting(request):
    d = request.param
    rng = np.random.default_rng(d)
    x = rng.normal(2.0, 3.0, size=(3001, d))
    lo, hi = np.full(d, -4.0), np.full(d, 9.0)
    rotation = RandomRotation.draw(d, rng)
    views = [
        View(),
        View(rotation=rotation),
        View(rotation=rotation, shift=rng.normal(size=rotation.padded_dim)),
        View(shift=rng.normal(size=d), scale=rng.uniform(0.5, 2.0, size=d)),
        View(preclip=5.0, quantizer=Quantizer(0.25), rotation=rotation),
        View(shift=rng.normal(size=d), scale=rng.uniform(0.5, 2.0, size=d),
             linear=rng.normal(size=(d, d)) + 2.0 * np.eye(d)),
    ]
    return x, lo, hi, views, rng


def direct(x, lo, hi, view):
    return view.apply(np.clip(x, lo, hi))


def test_answers_match_direct_computation(setting, monkeypatch):
    x, lo, hi, views, rng = setting
    # Small blocks, so several threads and many blocks take part.
    monkeypatch.setattr(memory_module, "_BLOCK_BYTES", 4096)
    engine = InMemoryEngine(x, lo, hi)
    assert (engine.n, engine.d) == x.shape
    for view in views:
        rows = direct(x, lo, hi, view)
        thresholds = rng.normal(size=rows.shape[1])
        np.testing.assert_array_equal(engine.coordinate_counts(view, thresholds),
                                      np.count_nonzero(rows <= thresholds, axis=0))
        # Many thresholds a column in one pass: an unevenly spaced stretch and repeated edges
        # as the direct comparison counts them; with the values themselves among them (ties,
        # where the view's shift and scale round as the engine's own counts do), as the
        # engine's one pass per column counts them.
        edges = np.sort(np.column_stack([
            rng.normal(size=(rows.shape[1], 6)), np.exp(rng.normal(size=(rows.shape[1], 4))),
            np.zeros((rows.shape[1], 2))]), axis=1)
        np.testing.assert_array_equal(
            engine.coordinate_count_table(view, edges),
            np.count_nonzero(rows[:, :, None] <= edges[None], axis=0))
        edges = np.sort(np.column_stack([edges, rows[rng.integers(0, len(rows), 5)].T]), axis=1)
        np.testing.assert_array_equal(
            engine.coordinate_count_table(view, edges),
            np.column_stack([engine.coordinate_counts(view, edges[:, col])
                             for col in range(edges.shape[1])]))
        norms = np.linalg.norm(rows, axis=1)
        # Radii between norms: a radius equal to a norm would compare rounding, not logic.
        ranked = np.sort(norms)
        between = (ranked[[900, 2700]] + ranked[[901, 2701]]) / 2
        radii = np.array([ranked[0] / 2, *between, ranked[-1] * 2])
        np.testing.assert_array_equal(engine.norm_counts(view, radii),
                                      np.count_nonzero(norms[:, None] <= radii, axis=0))
        np.testing.assert_allclose(engine.sorted_norms(view), ranked, rtol=1e-12)
        for radius in (radii[1], np.inf):
            clipped = clip_rows(rows, radius)
            np.testing.assert_allclose(engine.clipped_sum(view, radius), clipped.sum(axis=0),
                                       rtol=1e-9, atol=1e-8)
            np.testing.assert_allclose(engine.clipped_outer_sum(view, radius),
                                       clipped.T @ clipped, rtol=1e-9, atol=1e-7)
        np.testing.assert_allclose(engine.sorted_columns(view), np.sort(rows, axis=0),
                                   atol=1e-12)
        order = rng.permutation(len(x))
        np.testing.assert_allclose(engine.pair_differences(view, order),
                                   rows[order[0:-1:2]] - rows[order[1::2]], atol=1e-12)


def test_sums_added_a_wave_at_a_time_have_the_bits_of_one_list(monkeypatch):
    # Per-block answers wait in waves of at most _ANSWER_BYTES (here one or two blocks a
    # thread, on two threads): the bits of one wave of every block (what summing the list of
    # every block's answer gave) and the direct sums up to rounding; the same counts. Blocks
    # of one row, as where rows are wider than _BLOCK_BYTES.
    rng = np.random.default_rng(5)
    x = rng.normal(0.0, 1.0, size=(203, 9)) * np.exp(rng.normal(0.0, 4.0, size=(203, 9)))
    lo, hi = np.full(9, -50.0), np.full(9, 60.0)
    monkeypatch.setattr(memory_module, "_BLOCK_BYTES", 8 * 9)
    monkeypatch.setattr(memory_module.parallel, "THREADS", 2)
    view, thresholds = View(), rng.normal(size=9)
    norms = np.sort(InMemoryEngine(x, lo, hi).row_norms(view))
    radii = (norms[50], norms[180], np.inf)
    clamped = np.clip(x, lo, hi)
    one_wave = InMemoryEngine(x, lo, hi).clipped_sums(view, radii)
    for got, radius in zip(one_wave, radii, strict=True):
        np.testing.assert_allclose(got, clip_rows(clamped, radius).sum(axis=0), rtol=1e-12)
    for answer_bytes in (1, 8 * 9 * 3 * 2, 8 * 9 * 5):
        monkeypatch.setattr(memory_module, "_ANSWER_BYTES", answer_bytes)
        engine = InMemoryEngine(x, lo, hi)
        for got, expected in zip(engine.clipped_sums(view, radii), one_wave, strict=True):
            np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(engine.coordinate_counts(view, thresholds),
                                      np.count_nonzero(clamped <= thresholds, axis=0))


def test_one_column_sums_keep_the_bits_of_summing_the_list(monkeypatch):
    # np.sum of a list of one-value block sums adds them pairwise, of wider ones one after
    # another: the waves keep both (a review: adding one-value sums one after another
    # changed the last bits of one-column releases from about 10^6 rows).
    rng = np.random.default_rng(2)
    monkeypatch.setattr(memory_module, "_BLOCK_BYTES", 8)
    monkeypatch.setattr(memory_module.parallel, "THREADS", 2)
    for d in (1, 3):
        monkeypatch.setattr(memory_module, "_BLOCK_BYTES", 8 * d)
        x = rng.standard_cauchy(size=(1001, d)) * 1e3
        for answer_bytes in (8, 64 << 20):
            monkeypatch.setattr(memory_module, "_ANSWER_BYTES", answer_bytes)
            got = InMemoryEngine(x, np.full(d, -1e6), np.full(d, 1e6)).clipped_sum(View(),
                                                                                   np.inf)
            want = np.sum(list(np.clip(x, -1e6, 1e6)), axis=0)
            if d == 1 and answer_bytes == 8:  # collapsed every two blocks: rounding only
                np.testing.assert_allclose(got, want, rtol=1e-9)
            else:
                np.testing.assert_array_equal(got, want)


def test_engine_never_modifies_the_callers_array():
    x = np.random.default_rng(0).normal(size=(100, 3)) * 10
    before = x.copy()
    engine = InMemoryEngine(x, np.full(3, -1.0), np.full(3, 1.0))
    engine.clipped_sum(View(), np.inf)
    np.testing.assert_array_equal(x, before)


def test_uint8_input_is_converted_once():
    x = np.arange(12, dtype=np.uint8).reshape(4, 3) * 20
    engine = InMemoryEngine(x, np.zeros(3), np.full(3, 100.0))
    np.testing.assert_array_equal(engine.clipped_sum(View(), np.inf),
                                  np.clip(x.astype(float), 0, 100).sum(axis=0))


@pytest.mark.parametrize("dtype,lo,hi", [(np.uint8, 0.0, 255.0), (np.uint8, -3.0, 300.0),
                                         (np.uint8, 10.0, 90.0), (np.int8, -128.0, 127.0),
                                         (np.float64, -2.0, 2.0)])
def test_clipped_sum_after_row_norms_equals_a_fresh_one(dtype, lo, hi):
    # The clipped sum reuses the row norms of the same view (kept by row_norms), and the engine
    # skips clamping when the box holds the integer type: both give a fresh engine's answer
    # bit for bit, and the clamp is still applied where the box is narrower than the type.
    rng = np.random.default_rng(2)
    x = rng.normal(0.0, 60.0, size=(5000, 6)).astype(dtype)
    box = (np.full(6, lo), np.full(6, hi))
    view = View(shift=rng.normal(size=6))
    engine = InMemoryEngine(x, *box)
    norms = engine.row_norms(view)
    norms[:] = -1.0  # the caller's copy: the kept norms are the engine's own
    radius = float(np.median(engine.row_norms(view)))
    reused = engine.clipped_sum(view, radius)
    np.testing.assert_array_equal(reused, InMemoryEngine(x, *box).clipped_sum(view, radius))
    rows = np.clip(x.astype(np.float64), lo, hi) - view.shift
    norms = np.linalg.norm(rows, axis=1)
    expected = (np.minimum(1.0, radius / norms)[:, None] * rows).sum(axis=0)
    np.testing.assert_allclose(reused, expected, rtol=1e-12, atol=1e-9)
    # Another view's clipped sum computes its own norms.
    other = View(shift=view.shift + 1.0)
    np.testing.assert_array_equal(engine.clipped_sum(other, radius),
                                  InMemoryEngine(x, *box).clipped_sum(other, radius))


def test_paired_engine_holds_the_pair_differences_of_clamped_rows():
    rng = np.random.default_rng(8)
    x = rng.normal(2.0, 3.0, size=(1001, 5))
    lo, hi = np.full(5, -4.0), np.full(5, 9.0)
    order = rng.permutation(len(x))
    paired = InMemoryEngine(x, lo, hi).paired(order)
    clamped = np.clip(x, lo, hi)
    diffs = clamped[order[0:-1:2]] - clamped[order[1::2]]
    assert (paired.n, paired.d) == (500, 5)
    np.testing.assert_array_equal(paired.lo, lo - hi)
    np.testing.assert_array_equal(paired.hi, hi - lo)
    np.testing.assert_allclose(paired.clipped_outer_sum(View(), np.inf), diffs.T @ diffs,
                               rtol=1e-12)


def test_user_rows_hand_over_every_view_row_in_order(setting):
    x, lo, hi, views, _ = setting
    engine = InMemoryEngine(x, lo, hi)
    for view in views:
        blocks = list(engine.user_rows(view))
        np.testing.assert_allclose(np.concatenate(blocks), direct(x, lo, hi, view), atol=1e-12)


def test_materialised_engine_holds_the_finished_rows_once(setting):
    x, lo, hi, views, _ = setting
    engine = InMemoryEngine(x, lo, hi)
    for view in views:
        rows = engine.materialised(view)
        expected = direct(x, lo, hi, view)
        assert (rows.n, rows.d) == expected.shape
        np.testing.assert_allclose(rows.clipped_sum(View(), np.inf), expected.sum(axis=0),
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(rows.row_norms(View()), np.linalg.norm(expected, axis=1),
                                   rtol=1e-12)


def test_sparse_engine_refuses_to_materialise_dense_rows():
    import scipy.sparse

    from dpmean.engines import SparseEngine
    from dpmean.errors import InvalidParameterError

    engine = SparseEngine(scipy.sparse.random(20, 4, density=0.3, format="csr", random_state=0),
                          np.zeros(4), np.ones(4))
    with pytest.raises(InvalidParameterError, match="densifying"):
        engine.materialised(View())


def test_the_sparse_engine_hands_over_the_dense_engines_rows(monkeypatch):
    # Dense blocks of the finished rows (a secure release's exact sums read them), the values
    # the in-memory engine gives for the same rows, whatever the block size.
    import scipy.sparse

    from dpmean.engines import InMemoryEngine, SparseEngine
    from dpmean.engines import sparse as sparse_module

    x = scipy.sparse.random(200, 6, density=0.3, format="csr", random_state=0)
    lo, hi = np.zeros(6), np.full(6, 0.5)
    view = View(shift=np.full(6, 0.1), scale=np.linspace(1.0, 2.0, 6))
    monkeypatch.setattr(sparse_module, "_BLOCK_BYTES", 8 * 6 * 37)
    blocks = list(SparseEngine(x, lo, hi).user_rows(view))
    assert len(blocks) == 6
    expected = np.concatenate(list(InMemoryEngine(x.toarray(), lo, hi).user_rows(view)))
    np.testing.assert_array_equal(np.concatenate(blocks), expected)


@pytest.mark.parametrize("dtype,d,lo,hi,compact", [
    (np.uint8, 60, 0.0, 255.0, True),       # d_pad 64 = 4^3: factor 1/8
    (np.int16, 10, -3000.0, 3000.0, True),  # d_pad 16
    (np.uint8, 15, 0.0, 3.0, True),         # few lattice points: tables (from the int16 copy)
    (np.int16, 60, -3.0e4, 3.0e4, True),    # sums beyond int16: the float32 copy instead
    (np.int16, 600, -2.0e6, 2.0e6, False),  # 32768 x 1024 > 2^24: float64
    (np.uint8, 30, 0.0, 255.0, False),      # d_pad 32: 1/sqrt(32) is not a power of two
    (np.uint8, 60, 0.5, 255.0, False),      # a fractional bound: clamped values not integers
])
def test_rotated_copy_of_small_integers_is_float32_only_where_exact(dtype, d, lo, hi, compact,
                                                                   monkeypatch):
    # The rotated copy behind the coordinate medians is float32 where that holds every rotated
    # value exactly; the counts equal those of the same values given as float64 (float64
    # copy), for thresholds between values and on them.
    rng = np.random.default_rng(5)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=(2001, d), endpoint=True).astype(dtype)
    box = (np.full(d, lo), np.full(d, hi))
    view = View(rotation=RandomRotation.draw(d, rng))
    given = x.copy()
    # Which copy the compact path made: int16 first, whether every value fit (a review: the
    # cases below did not say which path ran).
    from dpmean.engines import rotation_kernels

    fitted = []
    int16_rotation = rotation_kernels.rotate_into_int16_columns
    monkeypatch.setattr(rotation_kernels, "rotate_into_int16_columns",
                        lambda *a, **k: fitted.append(int16_rotation(*a, **k)) or fitted[-1])
    small, wide = InMemoryEngine(x, *box), InMemoryEngine(x.astype(np.float64), *box)
    rotated = view.apply(np.clip(x.astype(np.float64), lo, hi))
    k = rotated.shape[1]
    for threshold in [*rotated[rng.integers(0, 2001, 8)],
                      *rng.normal(0.0, rotated.std(), size=(8, k))]:
        np.testing.assert_array_equal(small.coordinate_counts(view, threshold),
                                      wide.coordinate_counts(view, threshold))
        np.testing.assert_array_equal(small.coordinate_counts(view, threshold),
                                      (rotated <= threshold).sum(axis=0))
    assert small._counter is not None and wide._counter is not None
    if compact:  # int16 tried; it fits except where the sums pass int16's range
        assert fitted and all(fitted) == (hi != 3.0e4)
    else:
        assert not fitted
    assert isinstance(wide._counter, ColumnCounter)
    assert wide._counter.values.dtype == np.float64
    if isinstance(small._counter, LatticeCounter):  # the values' tables, the copy dropped
        assert compact and lo == 0.0 and hi == 3.0
    else:
        assert small._counter.values.dtype == (np.float32 if compact else np.float64)
        # The compact copy is rotated in the column layout, in float32 (or int16 multiples
        # of the factor, converted): the very values of the float64 rotation (each column's
        # multiset; the counter reorders within columns).
        np.testing.assert_array_equal(np.sort(small._counter.values, axis=1),
                                      np.sort(rotated.T, axis=1))
    # Clamping did not write into the caller's array.
    np.testing.assert_array_equal(x, given)


def test_fixed_malloc_thresholds_are_raised_for_the_engines_blocks(monkeypatch):
    """Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which fixes glibc's
    thresholds: every 1 MiB temporary of a row block was then mmapped and faulted in afresh
    (3-5x slower on a worker). Where the environment fixes them, the engine raises the mmap
    threshold to 8 MiB and the trim threshold to 16 MiB, never lowering a larger setting, and
    leaves an unfixed process to glibc's own adjustment."""
    import ctypes

    from dpmean.engines import memory

    calls: list[tuple[int, int]] = []

    class Mallopt:
        argtypes: list = []
        restype = None

        def __call__(self, parameter: int, value: int) -> int:
            calls.append((parameter, value))
            return 1

    class FakeLibc:
        mallopt = Mallopt()

    monkeypatch.setattr(ctypes, "CDLL", lambda name: FakeLibc())
    for name in memory._FIXED_THRESHOLDS:
        monkeypatch.delenv(name, raising=False)
    memory._raise_fixed_thresholds()
    assert calls == []
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    memory._raise_fixed_thresholds()
    assert calls == [(memory._M_MMAP_THRESHOLD, 8 << 20), (memory._M_TRIM_THRESHOLD, 16 << 20)]
    # A review: glibc reads hex too; -1 turns trimming off; a value beyond a C int was
    # truncated by ctypes (4 GiB became 0) or made every release fail (an OverflowError).
    # Such settings, and one at least as large as ours, are left as they are.
    for mmap, trim, expected in (
            (str(32 << 20), "not a number", []),
            ("0x10000", "-1", [(memory._M_MMAP_THRESHOLD, 8 << 20)]),
            (str(1 << 32), "99999999999999999999999", []),
            ("", "0o200", [(memory._M_MMAP_THRESHOLD, 8 << 20),
                           (memory._M_TRIM_THRESHOLD, 16 << 20)])):
        calls.clear()
        monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", mmap)
        monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", trim)
        memory._raise_fixed_thresholds()
        assert calls == expected, (mmap, trim)
