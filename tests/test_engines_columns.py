"""The column questions (order statistics, pair differences) in column blocks: equal to the direct
computation on every engine, memory bounded on the chunked engine, temporary files removed."""

import errno
import os
import tempfile
import tracemalloc

import numpy as np
import pytest

import dpmean
from dpmean.engines import ChunkedEngine, InMemoryEngine, open_source
from dpmean.engines import base as base_module
from dpmean.engines import chunked as chunked_module
from dpmean.errors import InvalidDataError, TemporarySpaceError
from dpmean.transforms import IDENTITY, Quantizer, RandomRotation, View


def _views(rng, d):
    rotation = RandomRotation.draw(d, rng)
    return [
        View(),
        View(shift=rng.normal(size=d), scale=rng.uniform(0.5, 2.0, size=d)),
        View(rotation=rotation, shift=rng.normal(size=rotation.padded_dim)),
        View(preclip=5.0, quantizer=Quantizer(0.25), rotation=rotation),
        View(shift=rng.normal(size=d), linear=rng.normal(size=(d, d)) + 3.0 * np.eye(d)),
    ]


def _joined(blocks, k):
    blocks = list(blocks)
    assert [c.start for c, _ in blocks] == list(range(0, k, 3)), "consecutive slices from 0"
    return np.concatenate([values for _, values in blocks], axis=1)


@pytest.mark.parametrize("engine_kind", ["memory", "chunked"])
def test_column_blocks_equal_direct_computation(engine_kind, monkeypatch):
    # Answers above 4 KiB go to temporary files: the spilled path on the chunked engine.
    monkeypatch.setattr(base_module, "COLUMN_BLOCK_BYTES", 4096)
    rng = np.random.default_rng(3)
    x = rng.normal(1.0, 3.0, size=(701, 7))
    lo, hi = np.full(7, -4.0), np.full(7, 6.0)
    engine = (InMemoryEngine(x, lo, hi) if engine_kind == "memory"
              else ChunkedEngine(x, lo, hi, chunk_rows=50))
    orders = [rng.permutation(701), rng.permutation(701)[:-4]]
    for view in _views(rng, 7):
        rows = view.apply(np.clip(x, lo, hi))
        k = rows.shape[1]
        np.testing.assert_allclose(_joined(engine.column_blocks(view, 3), k), rows,
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(_joined(engine.sorted_column_blocks(view, 3), k),
                                   np.sort(rows, axis=0), rtol=1e-12, atol=1e-12)
        blocks = list(engine.pair_difference_blocks(view, orders, 3))
        for i, order in enumerate(orders):
            pairs = order[: 2 * (len(order) // 2)].reshape(-1, 2)
            got = np.concatenate([diffs[i] for _, diffs in blocks], axis=1)
            np.testing.assert_allclose(got, rows[pairs[:, 0]] - rows[pairs[:, 1]], rtol=1e-12,
                                       atol=1e-12)


@pytest.mark.parametrize("dtype,holds", [(np.uint8, False), (np.uint8, True), (np.int16, False),
                                         (np.float64, False)])
def test_memory_engine_sorts_raw_columns_then_clamps(dtype, holds):
    # The in-memory engine sorts the identity view's columns in the data's own dtype (a radix
    # sort for small integers) and clamps after: clamping is monotone, so the order statistics
    # are those of the clamped data, ties (70 % zeros) and clamped values included. A box that
    # holds the whole type (``holds``) only converts.
    rng = np.random.default_rng(8)
    x = np.where(rng.random((9001, 8)) < 0.7, 0, rng.integers(0, 256, size=(9001, 8)))
    x = x.astype(dtype)
    lo, hi = np.linspace(-1.0, 30.0, 8), np.linspace(150.0, 300.0, 8)
    if holds:
        lo, hi = np.linspace(-1.0, 0.0, 8), np.linspace(255.0, 300.0, 8)
    engine = InMemoryEngine(x, lo, hi)
    blocks = list(engine.sorted_column_blocks(View(), 3))
    got = np.concatenate([values for _, values in blocks], axis=1)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, np.sort(np.clip(x.astype(np.float64), lo, hi), axis=0))
    # Each block is the caller's to overwrite, and writing it leaves the data alone.
    blocks[0][1][:] = -5.0
    np.testing.assert_array_equal(engine.sorted_columns(View()), got)


def _spilling_engine(tmp_path, monkeypatch, x):
    """A chunked engine over ``x`` saved as .npy, whose temporary files go to tmp_path/tmp (and
    are counted)."""
    monkeypatch.setattr(chunked_module, "CHUNK_BYTES", 1 << 16)
    monkeypatch.setattr(base_module, "COLUMN_BLOCK_BYTES", 1 << 18)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    opened = []
    real = tempfile.TemporaryFile
    monkeypatch.setattr(tempfile, "TemporaryFile",
                        lambda *a, **k: opened.append(1) or real(*a, **k))
    np.save(tmp_path / "big.npy", x)
    d = x.shape[1]
    engine = ChunkedEngine(open_source(tmp_path / "big.npy"), np.full(d, -3.0), np.full(d, 3.0))
    return engine, scratch, opened


def test_chunked_column_questions_hold_a_column_block_not_the_data(tmp_path, monkeypatch):
    # 40,000 x 32 float64 = 10 MiB; chunks of 64 KiB, column blocks of 256 KiB (0.8 columns:
    # one column at a time, 0.3 MiB). Sorting every column and pairing rows allocate a chunk,
    # one column block and its sorted or paired copies: about 2 MiB, where the whole
    # answer would take 10 MiB (sorted columns) or 5 MiB (pair differences).
    x = np.random.default_rng(0).normal(size=(40_000, 32))
    engine, _, opened = _spilling_engine(tmp_path, monkeypatch, x)
    width = engine.column_width()
    assert width == 1
    order = np.random.default_rng(1).permutation(40_000)

    def ask() -> np.ndarray:
        for _, values in engine.sorted_column_blocks(View(), width):
            assert values.shape == (40_000, 1)
        for _, (diffs,) in engine.pair_difference_blocks(View(), [order], width):
            assert diffs.shape == (20_000, 1)
        return values  # the last column block

    # Once before counting: the first use of the compiled kernels in a process allocates (and
    # opens a file to check numba's cache) too, so counting it made the outcome depend on
    # whether an earlier test had run them.
    ask()
    opened.clear()
    tracemalloc.start()
    values = ask()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert opened == [1, 1]  # each question spilled its n x k answer to a temporary file
    # tracemalloc counts every thread: a Dask client left by an earlier test in this worker
    # allocated 0.2 MiB meanwhile once (2.2 MiB). 3 MiB still tells a column block from the
    # whole answer (5 or 10 MiB).
    assert peak < 3 * 2**20
    # The last column is the data's, sorted: the file round trip changes nothing.
    np.testing.assert_array_equal(values[:, 0], np.sort(np.clip(x[:, -1], -3.0, 3.0)))


def test_temporary_files_are_removed_on_error(tmp_path, monkeypatch):
    x = np.random.default_rng(0).normal(size=(40_000, 32))
    x[39_000, 5] = np.nan  # in the last chunks: found while the answer is being spilled
    engine, scratch, opened = _spilling_engine(tmp_path, monkeypatch, x)
    with pytest.raises(InvalidDataError, match="NaN"):
        list(engine.sorted_column_blocks(View(), 4))
    assert opened == [1]
    assert list(scratch.iterdir()) == []


def _full_after(monkeypatch, pieces):
    """os.pwrite of the engines that writes ``pieces`` pieces and then finds the disk full."""
    real, calls = os.pwrite, []

    def pwrite(fd, data, offset):
        calls.append(1)
        if len(calls) > pieces:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data, offset)

    monkeypatch.setattr(base_module.os, "pwrite", pwrite)


def test_a_full_temporary_directory_names_it_and_the_room_needed(tmp_path, monkeypatch):
    # A TMPDIR too small for the spilled columns: a DPMeanError saying which directory and
    # how much room (40,000 x 32 x 8 bytes), not the OSError of os.pwrite; no file is left.
    x = np.random.default_rng(0).normal(size=(40_000, 32))
    engine, scratch, _ = _spilling_engine(tmp_path, monkeypatch, x)
    _full_after(monkeypatch, 3)
    with pytest.raises(TemporarySpaceError) as raised:
        list(engine.sorted_column_blocks(View(), 4))
    message = str(raised.value)
    assert f"temporary directory {scratch} ran out of space" in message
    assert "40,000 rows x 32 columns x 8 bytes = 10.2 MB (10,240,000 bytes)" in message
    assert "point TMPDIR at a disk" in message
    assert raised.value.__cause__.errno == errno.ENOSPC
    assert list(scratch.iterdir()) == []
    # The public API: the same error (a DPMeanError) from a release on the chunked engine.
    np.save(tmp_path / "big.npy", x)
    with pytest.raises(dpmean.DPMeanError, match=f"temporary directory {scratch} ran out"):
        dpmean.mean(str(tmp_path / "big.npy"), rho=1.0, bounds=(-3, 3), method="trimmed",
                    engine="chunked", random_state=0)


def test_a_short_write_of_a_spilled_column_is_completed(tmp_path, monkeypatch):
    # A nearly full disk can take part of a write: the rest is written, not left as a hole
    # that reads back as zeros.
    x = np.random.default_rng(0).normal(size=(40_000, 32))
    engine, _, _ = _spilling_engine(tmp_path, monkeypatch, x)
    real = os.pwrite
    monkeypatch.setattr(base_module.os, "pwrite",
                        lambda fd, data, offset: real(fd, data[:max(1, len(data) // 2)], offset))
    got = np.concatenate([v for _, v in engine.sorted_column_blocks(View(), 4)], axis=1)
    np.testing.assert_array_equal(got, np.sort(np.clip(x, -3.0, 3.0), axis=0))


def test_temporary_files_are_removed_after_use(tmp_path, monkeypatch):
    # A consumer that stops early leaves nothing, and a paired engine's file goes with it.
    x = np.random.default_rng(0).normal(size=(40_000, 32))
    engine, scratch, opened = _spilling_engine(tmp_path, monkeypatch, x)
    blocks = engine.sorted_column_blocks(View(), 4)
    next(blocks)
    blocks.close()
    paired = engine.paired(np.random.default_rng(2).permutation(40_000))
    assert isinstance(paired, ChunkedEngine) and (paired.n, paired.d) == (20_000, 32)
    assert paired.clipped_sum(View(), np.inf).shape == (32,)
    del paired
    # One for the sorted columns; the paired engine spilled the data's columns and then wrote
    # its differences to a file of their own.
    assert opened == [1, 1, 1]
    assert list(scratch.iterdir()) == []


def test_chunked_paired_engine_equals_memory(monkeypatch):
    monkeypatch.setattr(base_module, "COLUMN_BLOCK_BYTES", 4096)
    rng = np.random.default_rng(8)
    x = rng.normal(2.0, 3.0, size=(1001, 5))
    lo, hi = np.full(5, -4.0), np.full(5, 9.0)
    order = rng.permutation(1001)
    paired = ChunkedEngine(x, lo, hi, chunk_rows=64).paired(order)
    reference = InMemoryEngine(x, lo, hi).paired(order)
    assert isinstance(paired, ChunkedEngine)
    np.testing.assert_array_equal(paired.lo, reference.lo)
    for radius in (3.0, np.inf):
        np.testing.assert_allclose(paired.clipped_outer_sum(View(), radius),
                                   reference.clipped_outer_sum(View(), radius), rtol=1e-12)


def _old_pair_distances(engine, order):
    """pair_distances as it was (one column block after another, from pair_difference_blocks):
    the reference every engine's answer must equal bit for bit."""
    l1, squared = np.zeros(len(order) // 2), np.zeros(len(order) // 2)
    for _, diffs in engine.pair_difference_blocks(View(), [order], engine.column_width()):
        l1 += np.abs(diffs[0]).sum(axis=1)
        squared += np.einsum("ij,ij->i", diffs[0], diffs[0])
    return l1, squared


@pytest.mark.parametrize("dtype,lo,hi,scaled,order", [
    (np.float64, -4.0, 6.0, False, "C"),    # values outside the box: clamped
    (np.float64, -40.0, 60.0, False, "C"),  # inside the box: the compiled gather, no clamp
    (np.float64, -40.0, 60.0, True, "C"),   # ... of rescaled rows
    (np.float32, -40.0, 60.0, True, "C"),
    (np.int32, -2.0**31, 2.0**31, False, "C"),  # wider integers: the float path
    (np.uint8, 0.0, 255.0, False, "C"),     # the box holds the type: no clamp
    (np.uint8, 3.0, 200.0, False, "C"),     # integral bounds: clamped as integers
    (np.int8, -300.0, 90.0, False, "C"),    # a bound beyond the type's range
    (np.int16, -7.0, 2000.0, False, "C"),
    (np.uint8, 0.5, 200.0, False, "C"),     # a fractional bound: the float path
    (np.uint8, 3.0, 200.0, False, "F"),     # column-major: the compiled gathers read rows
    (np.float64, -40.0, 60.0, False, "F"),  # across it
])
def test_pair_statistics_equal_the_column_block_computation(dtype, lo, hi, scaled, order,
                                                            monkeypatch):
    # Row-gathered pair distances and sorted pair magnitudes (the in-memory engine's own paths,
    # the small-integer one and the compiled gathers included) give the column blocks' answers
    # bit for bit; the chunked engine (the generic paths) too.
    monkeypatch.setattr(base_module, "COLUMN_BLOCK_BYTES", 1 << 15)
    rng = np.random.default_rng(4)
    x = rng.normal(1.0, 3.0, size=(2001, 13))
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        x = np.where(rng.random(x.shape) < 0.6, 0, rng.integers(info.min, info.max, x.shape))
    x = x.astype(dtype, order=order)
    lo, hi = np.full(13, lo), np.full(13, hi)
    scale = 1.0 / (hi - lo) * (1.0 + np.arange(13) / 7.0) if scaled else None
    orders = [rng.permutation(2001), rng.permutation(2001)]
    clamped = np.clip(x.astype(np.float64), lo, hi) * (1.0 if scale is None else scale)
    expected = np.sort(np.abs(np.concatenate(
        [clamped[o[:2000:2]] - clamped[o[1:2000:2]] for o in orders])), axis=0)
    for engine in (InMemoryEngine(x, lo, hi, scale),
                   ChunkedEngine(x, lo, hi, chunk_rows=300, scale=scale)):
        for got, want in zip(engine.pair_distances(orders[0]),
                             _old_pair_distances(engine, orders[0]), strict=True):
            np.testing.assert_array_equal(got, want)
        blocks = list(engine.sorted_pair_magnitude_blocks(orders, 4))
        assert [c.start for c, _ in blocks] == list(range(0, 13, 4))
        got = np.concatenate([values for _, values in blocks], axis=1)
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, expected)
        # PLAN's sequence: the distances of its first pairing, then the sorted magnitudes of
        # those pairs alone (the in-memory engine answers from the magnitudes it kept).
        engine.pair_distances(orders[0])
        got = np.concatenate([v for _, v in engine.sorted_pair_magnitude_blocks(orders[:1], 4)],
                             axis=1)
        np.testing.assert_array_equal(got, np.sort(np.abs(
            clamped[orders[0][:2000:2]] - clamped[orders[0][1:2000:2]]), axis=0))


@pytest.mark.parametrize("dtype,d", [(np.uint8, 784), (np.int16, 9), (np.uint8, 1)])
def test_squared_norms_of_integer_rows_are_those_of_their_float_rows(dtype, d):
    # The fused pass (no block written) sums the very values ``shifted_rows`` writes, in the
    # order ``squared_norms`` sums any block (C or Fortran layout): the same bits; and both
    # are the exact sums of squares up to the rounding of d additions.
    from dpmean.engines.row_kernels import shifted_rows, shifted_squared_norms, squared_norms

    rng = np.random.default_rng(d)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=(301, d), endpoint=True).astype(dtype)
    factor, shift, scale = (rng.uniform(0.5, 2.0, d), rng.normal(0.0, 50.0, d),
                            rng.uniform(0.01, 1.0, d))
    rows = shifted_rows(x, factor, shift, scale)
    fused = shifted_squared_norms(x, factor, shift, scale)
    np.testing.assert_array_equal(fused, squared_norms(rows))
    np.testing.assert_array_equal(fused, squared_norms(np.asfortranarray(rows)))
    exact = np.einsum("ij,ij->i", rows, rows)
    np.testing.assert_allclose(fused, exact, rtol=2 * d * np.finfo(np.float64).eps, atol=0.0)


def test_integers_the_box_holds_are_rescaled_without_a_clamp_and_the_same():
    """uint8 data in per-column boxes of different widths that hold the type (the engine
    rescales each column by 1 / width): its rows are converted and rescaled, not clamped, and
    every answer equals the float path's (clamp, then rescale) bit for bit."""
    rng = np.random.default_rng(7)
    x = np.where(rng.random((1500, 9)) < 0.5, 0, rng.integers(0, 256, (1500, 9))).astype(np.uint8)
    lo, hi = np.zeros(9), np.where(np.arange(9) % 2 == 0, 255.0, 400.0)
    scale = 1.0 / (hi - lo)
    fast, slow = InMemoryEngine(x, lo, hi, scale), InMemoryEngine(x.astype(np.float64), lo, hi,
                                                                   scale)
    slow._box_holds_values = False  # the clamping path, as for data with values outside the box
    assert fast._box_holds_values and not slow._box_holds_values
    rotated = View(rotation=RandomRotation.draw(9, np.random.default_rng(2)),
                   shift=np.linspace(-0.2, 0.4, 16))
    for view in (View(shift=np.full(9, 0.3), scale=np.linspace(0.5, 2.0, 9)), rotated):
        np.testing.assert_array_equal(fast.sorted_norms(view), slow.sorted_norms(view))
        np.testing.assert_array_equal(fast.clipped_sum(view, 0.8), slow.clipped_sum(view, 0.8))
    for (c1, a), (c2, b) in zip(fast.column_blocks(View(), 4), slow.column_blocks(View(), 4),
                                strict=True):
        assert c1 == c2
        np.testing.assert_array_equal(a, b)
    for (c1, a), (c2, b) in zip(fast.sorted_column_blocks(View(), 4),
                                slow.sorted_column_blocks(View(), 4), strict=True):
        assert c1 == c2
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("lo,hi", [(-4.0, 4.0), (np.linspace(-4.0, -3.5, 9), np.full(9, 4.0))])
def test_float_data_inside_the_box_is_read_without_a_clamp_and_the_same(lo, hi):
    """Float data found inside the box (equal sides, or per-column sides) is read in place,
    not clamped: every answer equals the clamping path's bit for bit, and the data is left
    as it was. One value outside turns the check off."""
    rng = np.random.default_rng(9)
    x = np.clip(rng.normal(0.0, 1.2, (3000, 9)), -3.4, 3.9)
    lo, hi = np.broadcast_to(lo, 9).copy(), np.broadcast_to(hi, 9).copy()
    before = x.copy()
    fast, slow = InMemoryEngine(x, lo, hi), InMemoryEngine(x, lo, hi)
    slow._box_holds_values = False
    assert fast._box_holds_values and not slow._box_holds_values
    rotation = RandomRotation.draw(9, np.random.default_rng(1))
    for view in (View(), View(shift=np.full(9, 0.3)), View(rotation=rotation),
                 View(rotation=rotation, shift=np.full(16, 0.2))):
        np.testing.assert_array_equal(fast.sorted_norms(view), slow.sorted_norms(view))
        np.testing.assert_array_equal(fast.clipped_sum(view, 2.5), slow.clipped_sum(view, 2.5))
        thresholds = np.linspace(-1.0, 1.0, view.output_dim(9))
        np.testing.assert_array_equal(fast.coordinate_counts(view, thresholds),
                                      slow.coordinate_counts(view, thresholds))
    orders = [rng.permutation(3000)]
    np.testing.assert_array_equal(fast.pair_distances(orders[0])[1],
                                  slow.pair_distances(orders[0])[1])
    for (c1, a), (c2, b) in zip(fast.sorted_column_blocks(View(), 4),
                                slow.sorted_column_blocks(View(), 4), strict=True):
        assert c1 == c2
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(x, before)
    x[17, 3] = 4.5
    assert not InMemoryEngine(x, lo, hi)._box_holds_values


@pytest.mark.parametrize("dtype,lo,hi", [(np.uint8, 0.0, 255.0), (np.int8, -20.0, 90.0)])
def test_byte_pair_values_read_by_position_equal_the_sorted_blocks(dtype, lo, hi):
    # The in-memory engine answers PLAN's pair values on bytes from each column's histogram
    # (``CountedOrder``): every range of sorted positions, and the tails, equal the sorted
    # blocks' values after the same value-by-value map.
    rng = np.random.default_rng(8)
    info = np.iinfo(dtype)
    x = np.where(rng.random((3001, 11)) < 0.7, 0,
                 rng.integers(info.min, info.max, (3001, 11))).astype(dtype)
    engine = InMemoryEngine(x, np.full(11, lo), np.full(11, hi))
    orders = [rng.permutation(3001), rng.permutation(3001)]
    floor = np.linspace(0.5, 3.0, 11)

    def values_of(diffs):
        return np.log(np.maximum(0.5 * np.square(diffs), floor))

    order = engine.pair_value_order(orders, 1500, 1, values_of, np.log(floor), np.full(11, 9.0))
    assert order is not None and order.shape == (3000, 11)
    expected = np.concatenate([v for _, v in engine.sorted_pair_magnitude_blocks(orders, 11)],
                              axis=1)
    expected = values_of(expected)
    for start, stop, cols in [(0, 3000, slice(0, 11)), (1234, 1240, slice(3, 7)),
                              (2999, 3000, slice(10, 11)), (0, 1, slice(0, 11))]:
        np.testing.assert_array_equal(order.positions(start, stop, cols),
                                      expected[start:stop, cols].T)
    low, high, middle = order.tails(40, 7.0)
    np.testing.assert_array_equal(low, expected[:41])
    np.testing.assert_array_equal(high, expected[-41:])
    np.testing.assert_allclose(middle, expected[40:-40].sum(axis=0) / 7.0, rtol=1e-12)
    # Not bytes, or groups of more than one pair: the engine hands blocks instead.
    assert engine.pair_value_order(orders, 1500, 2, values_of, lo, hi) is None
    wide = InMemoryEngine(x.astype(np.int16), np.full(11, lo), np.full(11, hi))
    assert wide.pair_value_order(orders, 1500, 1, values_of, lo, hi) is None


def test_plan_on_bytes_releases_what_it_releases_on_wider_integers():
    # uint8 pixels take the histogram path, the same values as uint16 take the sorted one:
    # the same release, bit for bit.
    rng = np.random.default_rng(9)
    x = np.where(rng.random((4000, 20)) < 0.6, 0, rng.integers(0, 256, (4000, 20)))
    releases = [dpmean.mean(x.astype(dtype), rho=0.5, method="plan", bounds=(0, 255),
                            random_state=4).mean for dtype in (np.uint8, np.uint16)]
    np.testing.assert_array_equal(releases[0], releases[1])


@pytest.mark.parametrize("lo,hi", [(0.0, 255.0), (3.0, 200.0), (-5.0, 300.0)])
def test_byte_columns_read_by_position_equal_the_sorted_clamped_columns(lo, hi):
    # uint8 data in a box of integers: the in-memory engine answers column questions from
    # each column's histogram of clamped values (values below the box counted at its low end,
    # above at its high end); every range of positions and the tails equal the sorted
    # clamped columns, the middle sum exactly (integers: exact in any order).
    rng = np.random.default_rng(10)
    x = np.where(rng.random((2999, 9)) < 0.6, 0, rng.integers(0, 256, (2999, 9)))
    x = x.astype(np.uint8)
    x[:, 4] = 255  # a constant column
    engine = InMemoryEngine(x, np.full(9, lo), np.full(9, hi))
    order = engine.column_order(IDENTITY, engine.lo, engine.hi)
    assert order is not None and order.shape == (2999, 9)
    expected = np.sort(np.clip(x.astype(np.float64), lo, hi), axis=0)
    for start, stop, cols in [(0, 2999, slice(0, 9)), (1500, 1510, slice(2, 6)),
                              (2998, 2999, slice(8, 9))]:
        np.testing.assert_array_equal(order.positions(start, stop, cols),
                                      expected[start:stop, cols].T)
    low, high, middle = order.tails(100, 1024.0)
    np.testing.assert_array_equal(low, expected[:101])
    np.testing.assert_array_equal(high, expected[-101:])
    np.testing.assert_array_equal(middle, (expected[100:-100] / 1024.0).sum(axis=0))
    # Other types, rescaled boxes and views keep the sorted blocks.
    assert InMemoryEngine(x.astype(np.uint16), np.full(9, lo), np.full(9, hi)).column_order(
        IDENTITY, engine.lo, engine.hi) is None
    assert InMemoryEngine(x, np.full(9, 0.0), np.linspace(255.0, 300.0, 9), 1.0 / np.linspace(
        255.0, 300.0, 9)).column_order(IDENTITY, engine.lo, engine.hi) is None
    assert engine.column_order(View(shift=np.ones(9)), engine.lo, engine.hi) is None


@pytest.mark.parametrize("bounds", [(0, 255), (3, 200)])
@pytest.mark.parametrize("method,options", [
    ("trimmed", {}), ("trimmed", {"truncation": "output"}), ("trimmed", {"noise": "student-t"}),
    ("plan", {"centre": "median"})])
def test_byte_column_questions_release_what_wider_integers_release(bounds, method, options):
    # uint8 takes the histograms (the trimmed mean's tails and middle, PLAN's coordinate
    # medians), uint16 the sorted columns: the same release, bit for bit.
    rng = np.random.default_rng(11)
    x = np.where(rng.random((4000, 20)) < 0.6, 0, rng.integers(0, 256, (4000, 20)))
    releases = [dpmean.mean(x.astype(dtype), rho=0.5, method=method, bounds=bounds,
                            random_state=4, **options).mean for dtype in (np.uint8, np.uint16)]
    np.testing.assert_array_equal(releases[0], releases[1])


def test_clipped_outer_sum_adds_block_by_block_with_the_same_bits():
    # 6000 rows of 400: 19 row blocks of 327. The blocks' 400 x 400 products are added in
    # block order as they come (the bits of summing their list, which held all 19: 24 MB), so
    # at most a product per thread and the running total are held at once.
    rng = np.random.default_rng(12)
    x = rng.normal(0.0, 1.0, size=(6000, 400)) * np.linspace(0.2, 3.0, 400)
    engine = InMemoryEngine(x, np.full(400, -10.0), np.full(400, 10.0))
    view = View(shift=np.full(400, 0.1), scale=np.linspace(0.5, 1.5, 400))
    radius = 15.0
    blocks = engine._row_blocks(400)
    assert len(blocks) == 19

    def product(rows):
        block = view.finish(np.clip(x[rows], -10.0, 10.0))
        block = block * np.minimum(1.0, radius / np.sqrt(np.einsum("ij,ij->i", block, block)))[
            :, None]
        return block.T @ block

    expected = np.sum([product(rows) for rows in blocks], axis=0)
    tracemalloc.start()
    got = engine.clipped_outer_sum(view, radius)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    np.testing.assert_array_equal(got, expected)
    # The total, a product per thread (two here), and a block's temporaries (1 MiB each).
    assert peak < 5 * 400 * 400 * 8 + 6 * 2**20


@pytest.mark.parametrize("method", ["cm", "iome", "plan", "gaussian"])
def test_strided_rows_give_the_contiguous_rows_release(method):
    # Rows read in place (data inside the box) only from C-ordered data: a strided view is
    # copied first, as a clamp did, so its sums run in the same order and the release is the
    # contiguous array's, bit for bit.
    x = np.random.default_rng(13).normal(2.0, 1.5, size=(3000, 40))
    strided = np.repeat(x, 2, axis=1)[:, ::2]
    assert not strided.flags.c_contiguous
    releases = [dpmean.mean(data, rho=1.0, method=method, bounds=(-20, 20), random_state=3).mean
                for data in (x, strided)]
    np.testing.assert_array_equal(releases[0], releases[1])


def test_a_scratch_array_takes_its_disk_space_before_it_is_mapped(monkeypatch):
    # A memory-mapped scratch answer on a full TMPDIR: its sparse file's pages, first touched
    # through the map, killed the process with SIGBUS (a diff review). Its space is now taken
    # with posix_fallocate, whose ENOSPC is a TemporarySpaceError.
    from dpmean.engines import base as engine_base

    if not hasattr(os, "posix_fallocate"):
        pytest.skip("no posix_fallocate on this system")

    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    rows = engine_base.COLUMN_BLOCK_BYTES // 8 + 1
    with pytest.raises(TemporarySpaceError, match="ran out of space"):
        engine_base.scratch_array((rows, 1))
    monkeypatch.undo()
    assert engine_base.scratch_array((rows, 1)).shape == (rows, 1)
