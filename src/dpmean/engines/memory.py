"""The in-memory numpy engine: the default way estimators reach a dense array.

Works on row blocks that fit in cache, one thread per core (numpy releases the GIL). Rows are
clamped to the box block by block as they are read, unless one check found them all inside it
(then float64 rows are read in place, as read-only views). A rotated view (IOME, section 3.3) is
rotated once, into a column-major copy that answers the medians' coordinate counts
(``ColumnCounter``); row norms and clipped sums of an orthogonal rotation never touch it, as
||R x - s|| = ||x - R^T s|| and sum_i w_i (R x_i - s) = R (sum_i w_i x_i) - (sum_i w_i) s.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .. import parallel
from ..parallel import over_row_ranges, sort_columns
from ..transforms import BoxClamp, View, clamp, clip_weights
from .base import ColumnOrder, Engine, add_distances, column_slices, pairs_of
from .blas import one_blas_thread

if TYPE_CHECKING:
    from ..transforms.hadamard import RandomRotation
    from .column_counts import ColumnCounter, LatticeCounter

# Rows per block: a block and its temporaries stay in the per-core cache (measured fastest for
# both the transform's small matrix products and the counting loop's comparisons).
_BLOCK_BYTES = 1 << 20
# Bytes of per-block answers (a sum's d-vector a block) waiting to be added, at most about.
_ANSWER_BYTES = 64 << 20
# glibc's malloc serves a request above its mmap threshold (128 KiB in a fresh process) with
# fresh pages from the kernel and hands them back when it is freed, so every 1 MiB temporary of
# a block paid its page faults again: the rotated copy of Gaussian C (10^4 x 2048) took 0.29 s
# to fill in a fresh process against 0.09 s once anything had freed a larger mmapped block,
# which raises the threshold to that block's size (and the trim threshold to twice it). One
# block of this size, allocated and freed before the first engine's work, does that at once
# (under other allocators it is one allocation and one free).
_ALLOCATOR_WARM_BYTES = 8 << 20
_allocator_warm = False
# Settings that fix glibc's thresholds in the environment, which stops their adjustment for the
# process's life: Dask's nanny starts every worker with MALLOC_TRIM_THRESHOLD_=65536, so each
# 1 MiB temporary was mmapped afresh and its pages faulted in every time (a worker's row
# blocks rotated 128 rows at a time: 0.205 s a 64 MiB block, 0.041 s with the thresholds
# below; the engine's own pass over such a block 0.12 -> 0.03 s).
_FIXED_THRESHOLDS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_",
                     "MALLOC_MMAP_MAX_")
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (malloc.h)


def _warm_allocator() -> None:
    """Raise glibc's mmap threshold once per process (``_ALLOCATOR_WARM_BYTES``), also where
    the environment fixed it lower (``_FIXED_THRESHOLDS``)."""
    global _allocator_warm
    if not _allocator_warm:
        _raise_fixed_thresholds()
        np.empty(_ALLOCATOR_WARM_BYTES, dtype=np.uint8)
        _allocator_warm = True


def _raise_fixed_thresholds() -> None:
    """Where the environment fixed glibc's thresholds, the mmap threshold raised to
    ``_ALLOCATOR_WARM_BYTES`` and the trim threshold to twice that (what a freed block of that
    size sets when they adjust), never lowered: the process then keeps at most that much freed
    memory at the top of a heap. A setting this cannot read as glibc does (decimal, hex or
    octal), a negative one (-1 turns trimming off) or one beyond a C int is left as it is;
    nothing happens under another C library or without a fixed setting."""
    fixed = {name: os.environ.get(name) for name in _FIXED_THRESHOLDS}
    if not any(fixed.values()):
        return
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    for name, parameter, ours in (
            ("MALLOC_MMAP_THRESHOLD_", _M_MMAP_THRESHOLD, _ALLOCATOR_WARM_BYTES),
            ("MALLOC_TRIM_THRESHOLD_", _M_TRIM_THRESHOLD, 2 * _ALLOCATOR_WARM_BYTES)):
        text = fixed[name]
        try:
            theirs = int(text.strip(), 0) if text else 0
        except ValueError:
            continue
        if 0 <= theirs < ours:
            mallopt(parameter, ours)


class InMemoryEngine(Engine):
    """Answers aggregate questions with numpy about ``x`` (n, d) clamped to [lo, hi] (and
    rescaled coordinate by coordinate by ``scale``, if given: ``BoxClamp``).

    ``x`` is read, never written, and never copied whole: only a view's rotated copy is kept
    (n x d_pad float64, column-major for the coordinate counts; row-major for the column
    questions, pair differences and linear maps, built only when they are asked).
    """

    def __init__(self, x: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                 scale: np.ndarray | None = None) -> None:
        _warm_allocator()
        self._box = BoxClamp.of(lo, hi, scale)
        self.lo, self.hi = self._box.out_lo, self._box.out_hi
        self.n, self.d = x.shape
        self._x = x
        self._base_key: tuple | None = None
        self._base: np.ndarray | None = None
        self._counter_key: tuple | None = None
        self._counter: ColumnCounter | LatticeCounter | None = None
        self._norms: tuple[View, np.ndarray] | None = None
        self._magnitudes: tuple[list[np.ndarray], np.ndarray] | None = None
        # Integer data whose type's whole range lies in the box (MNIST's uint8 pixels in
        # [0, 255]): clamping changes nothing, so rows are only converted (and rescaled where
        # the engine normalises the box, as PLAN's does). Public: the dtype and the box.
        box_holds_integers = x.dtype.kind in "iub" and bool(
            (self._box.lo <= _type_range(x.dtype)[0]).all()
            and (self._box.hi >= _type_range(x.dtype)[1]).all())
        # Whether clamping to the box changes no value: those integers, or data found inside
        # it by one check here (before any thread reads rows). Only how rows are read depends
        # on it, never a value: a row inside the box is its own clamp.
        self._box_holds_values = box_holds_integers or self._inside_box()

    def _inside_box(self) -> bool:
        """Whether lo <= x <= hi everywhere: a read of the data on the cores, block by block,
        stopped at the first block with a value outside (a clamp costs three such reads each
        time rows are read, and PLAN reads every row five times)."""
        lo, hi = self._box.lo, self._box.hi
        # The box's innermost bounds decide at once for a box of equal sides; otherwise a
        # block they do not clear is compared column by column. Reductions, no n x d masks.
        inner_lo, inner_hi = lo.max(), hi.min()
        if inner_lo == -np.inf and inner_hi == np.inf:
            # No bounds (the Dask engine's persisted base, materialised or paired rows):
            # clamping to +-inf changes no value, so nothing to read (the Dask engine makes a
            # block engine per question, and each would have read its block once more).
            return True
        outside = threading.Event()
        blocks = self._row_blocks(self.d)

        def inside(block: np.ndarray) -> bool:
            least, most = block.min(), block.max()
            if least >= inner_lo and most <= inner_hi:
                return True
            return bool((block.min(axis=0) >= lo).all() and (block.max(axis=0) <= hi).all())

        def check(part: slice) -> None:
            for rows in blocks[part]:
                if outside.is_set() or not inside(self._x[rows]):
                    outside.set()
                    return

        over_row_ranges(len(blocks), check, values=self._x.size)
        return not outside.is_set()

    def _each_block(self, width: int, fn: Callable[[slice], Any]) -> list:
        """fn over row blocks; each thread takes a contiguous run of blocks. Results come back
        in block order, so sums over them are reproducible whatever the threads' timing."""
        runs = self._each_run(width, lambda run: [fn(rows) for rows in run])
        return [result for run in runs for result in run]

    def _each_block_in_order(self, width: int, answer_values: int, fn: Callable[[slice], Any],
                             take: Callable[[Any], None]) -> None:
        """``take(fn(rows))`` for every row block, in block order, the blocks computed on the
        threads a wave at a time: at most about ``_ANSWER_BYTES`` of answers
        (``answer_values`` values each) wait to be taken. ``_each_block`` keeps every block's
        answer: a d-vector a block for a sum, and blocks of one row where rows are wider
        than ``_BLOCK_BYTES`` (d above 131,072 / 2), so a list as large as the data (2000 x
        100,000: 1.6 GB, then 1.6 GB more to stack it for ``np.sum``, 2.1 s of a 2.5 s
        release). ``take`` bounds what it keeps itself."""
        blocks = self._row_blocks(width)
        per_wave = max(parallel.THREADS, _ANSWER_BYTES // (8 * max(answer_values, 1)))
        for first in range(0, len(blocks), per_wave):
            wave = blocks[first:first + per_wave]
            for answer in self._each_run_of(wave, lambda run: [fn(rows) for rows in run]):
                for block in answer:
                    take(block)

    def _each_run(self, width: int, fn: Callable[[list[slice]], Any]) -> list:
        """fn over each thread's contiguous run of row blocks (a list of slices), in row order:
        for answers a thread accumulates over its blocks (one per thread, not one per block)."""
        return self._each_run_of(self._row_blocks(width), fn)

    def _each_run_of(self, blocks: list[slice], fn: Callable[[list[slice]], Any]) -> list:
        """``_each_run`` over the row blocks ``blocks``."""
        threads = min(parallel.THREADS, len(blocks))  # read at call time, as over_row_ranges
        runs = [blocks[len(blocks) * t // threads: len(blocks) * (t + 1) // threads]
                for t in range(threads)]
        # One BLAS thread even when we run one: the blocks' small products (the transform's
        # 16 x 16 stages) gain nothing from BLAS threads, whose start-up and spinning made the
        # transform 20x slower; with our threads they would also fight over the same cores.
        with one_blas_thread():
            return parallel.map_on_threads(fn, runs)

    def _row_blocks(self, width: int) -> list[slice]:
        """The row blocks of rows ``width`` values wide that fit the per-core cache."""
        step = max(1, _BLOCK_BYTES // (8 * max(width, 1)))
        return [slice(i, min(i + step, self.n)) for i in range(0, self.n, step)]

    def _clamped(self, rows: slice | np.ndarray) -> np.ndarray:
        """The rows clamped to the box (and rescaled): a fresh float64 array, or, for C-ordered
        float64 data inside an unscaled box, a read-only view of the data itself (no copy to
        make; other layouts are copied as before, so their sums keep their order too)."""
        if (isinstance(rows, slice) and self._x.dtype == np.float64 and self._box.scale is None
                and self._x.flags.c_contiguous and self._box_holds_values):
            block = self._x[rows]
            block.flags.writeable = False
            return block
        return self._box(self._x[rows], clamps=not self._box_holds_values)

    def _base_reader(
        self, view: View, *, once: bool = False,
    ) -> tuple[int, Callable[[slice | np.ndarray], np.ndarray]]:
        """Width of the view's base (clip, quantize, rotate) and a reader of its rows (a block
        as a slice, or an integer array of row indices). ``once``: the caller reads each row
        once, so an uncached base is computed block by block rather than cached whole."""
        if (view.preclip, view.quantizer, view.rotation) == (None, None, None):
            return self.d, self._clamped
        if once and self._base_key != (view.preclip, view.quantizer, view.rotation):
            return view.output_dim(self.d), lambda rows: view.apply_base(self._clamped(rows))
        base = self.base_rows(view)
        return base.shape[1], lambda rows: base[rows]

    def base_rows(self, view: View) -> np.ndarray:
        """The view's base (clip, quantize, rotate) of every row, (n, output_dim) row-major:
        computed once per base (the last one asked is kept), block by block on the engine's
        threads with BLAS held to one thread."""
        key = (view.preclip, view.quantizer, view.rotation)
        if self._base is None or key != self._base_key:
            self._base = self._magnitudes = None  # let the old copies go first
            base = np.empty((self.n, view.output_dim(self.d)))

            def fill(rows: slice) -> None:
                base[rows] = view.apply_base(self._clamped(rows))

            self._each_block(base.shape[1], fill)
            self._base, self._base_key = base, key
        return self._base

    def coordinate_counts(self, view: View, thresholds: np.ndarray) -> np.ndarray:
        limit = np.asarray(thresholds, dtype=np.float64)
        if view.rotation is not None and view.linear is None:
            return self._column_counter(view).counts(self._base_limit(view, limit))
        width, read, limit = self._compared(view, limit)

        def block_counts(rows: slice) -> np.ndarray:
            # Summing the comparison's bytes row by row vectorises; count_nonzero along axis 0
            # does not, and this is the hot loop of every private median.
            below = (read(rows) <= limit).view(np.uint8)
            return np.add.reduce(below, axis=0, dtype=np.int32)

        counts: list[np.ndarray] = []

        def add(block: np.ndarray) -> None:
            if counts:
                counts[0] += block
            else:
                counts.append(block.astype(np.int64))

        self._each_block_in_order(width, width, block_counts, add)
        return counts[0]

    def coordinate_count_table(self, view: View, edges: np.ndarray) -> np.ndarray:
        # One pass: each row's position among its column's edges (``add_bucket_counts``), the
        # comparisons ``coordinate_counts`` makes, for every column of edges at once.
        from .column_counts import add_bucket_counts

        k, m = np.shape(edges)
        width, read, limits = self._compared(view, np.asarray(edges, dtype=np.float64).T,
                                             once=True)
        edges = limits.T

        def run_counts(run: list[slice]) -> np.ndarray:
            counts = np.zeros((k, m + 1), dtype=np.int64)
            for rows in run:
                add_bucket_counts(read(rows), edges, counts)
            return counts

        counts = np.sum(self._each_run(max(width, k), run_counts), axis=0)
        return np.cumsum(counts, axis=1)[:, :m]

    def _compared(
        self, view: View, limit: np.ndarray, *, once: bool = False,
    ) -> tuple[int, Callable[[slice | np.ndarray], np.ndarray], np.ndarray]:
        """(width, read, limit) for counting v(x) <= ``limit`` (its last axis the view's
        coordinates): a reader of the rows to compare, the view's base (``_base_reader``,
        ``once`` as there), and the thresholds on it; or, where a dense map mixes coordinates
        (no per-coordinate shortcut), the finished rows and ``limit`` itself."""
        width, read = self._base_reader(view, once=once)
        if view.linear is not None:
            return width, lambda rows: view.finish(read(rows)), limit
        return width, read, self._base_limit(view, limit)

    @staticmethod
    def _base_limit(view: View, limit: np.ndarray) -> np.ndarray:
        """Thresholds on the view's base: v_j <= t_j  <=>  based_j <= t_j / scale_j + shift_j,
        for the positive scales views use (no linear map)."""
        if view.scale is not None:
            limit = limit / view.scale
        if view.shift is not None:
            limit = limit + view.shift
        return limit

    def _column_counter(self, view: View) -> ColumnCounter | LatticeCounter:
        """The view's base over all rows, one coordinate per row of a (d_pad, n) array, ready
        for coordinate counts; computed once per base (the last one asked is kept)."""
        key = (view.preclip, view.quantizer, view.rotation)
        if self._counter is None or key != self._counter_key:
            # Imported here: numba's import and first compiled call cost a second, which only
            # rotated views should pay (not `import dpmean`, nor the CLI's start-up).
            from .column_counts import ColumnCounter, write_columns

            # Let the old copies go before the new one is made.
            self._counter = self._magnitudes = None
            k = view.output_dim(self.d)
            dtype = self._rotated_type(view)
            # Exact in float32 (``_rotated_type``): small integers rotated by compiled
            # butterflies straight into the column layout (``rotation_kernels``), no float64
            # copy and no transpose, the same values; their multiples of the rotation's
            # power-of-two factor first as int16 where they fit, whose tables of counts answer
            # every halving at once.
            if dtype == np.float32:
                assert view.rotation is not None  # _rotated_type
                counter = self._rotated_counter(view.rotation, k)
            else:
                values = np.empty((k, self.n), dtype=dtype)
                self._each_block(k, lambda rows: write_columns(
                    view.apply_base(self._clamped(rows)), values, rows.start))
                counter = ColumnCounter(values, threads=parallel.THREADS)
            self._counter, self._counter_key = counter, key
        return self._counter

    def _rotated_counter(self, rotation: RandomRotation,
                         k: int) -> ColumnCounter | LatticeCounter:
        """The counter of the rotated copy of small-integer rows (``_rotated_type`` float32):
        its values are integer multiples of the rotation's power-of-two factor, so tables of
        their counts (``LatticeCounter``) answer every halving at once, built from an int16
        copy of the multiples (half the float32 copy's bytes to write and to read) where they
        fit, else from the float32 copy; the partitioning counter where the tables would
        outgrow the copy. Which way is taken depends on the data, the counts never (speed
        only)."""
        from .column_counts import ColumnCounter, LatticeCounter

        values = np.empty((k, self.n), dtype=np.int16)
        if not self._rotate_small_integers(rotation, values):
            del values  # a value beyond int16: let it go before the float32 copy is made
            values = np.empty((k, self.n), dtype=np.float32)
            self._rotate_small_integers(rotation, values)
        lattice = LatticeCounter.of(values, rotation.scale, threads=parallel.THREADS)
        if lattice is not None:
            return lattice
        if values.dtype == np.int16:  # the partitioning counter compares values
            # One float32 copy, exact: integers below 2^15 times 2^-k.
            values = np.multiply(values, np.float32(rotation.scale), dtype=np.float32)
        return ColumnCounter(values, threads=parallel.THREADS)

    def _rotate_small_integers(self, rotation: RandomRotation, out: np.ndarray) -> bool:
        """The clamped integer rows rotated into ``out`` (d_pad, n) by the compiled butterflies
        (``rotation_kernels``), on the engine's threads: float32 values, or int16 multiples of
        the rotation's factor. False where an int16 value did not fit (``out`` then partly
        written)."""
        from .rotation_kernels import rotate_into_columns, rotate_into_int16_columns

        box = self._integer_box()
        assert box is not None  # _rotated_type found one
        units = out.dtype == np.int16
        # The int16 copy counts the rotation's factor: its rows are multiplied by the signs.
        factors = (rotation.signs[: self.d] * (1.0 if units else rotation.scale)).astype(
            np.float32)
        clamps = not self._box_holds_values

        def rotate(run: list[slice]) -> bool:
            rows = slice(run[0].start, run[-1].stop)
            if units:
                return rotate_into_int16_columns(self._x, *box, factors, out, rows,
                                                 clamps=clamps)
            rotate_into_columns(self._x, *box, factors, out, rows, clamps=clamps)
            return True

        return all(self._each_run(out.shape[0], rotate))

    def _rotated_type(self, view: View) -> type[np.floating]:
        """float32 where it holds the rotated values exactly, else float64. Exact when the
        clamped rows are integers of at most M in size (``_integer_box``) and the rotation's
        factor 1 / sqrt(d_pad) is a power of two (d_pad a power of 4): every rotated value is
        then a multiple of that factor of size at most M sqrt(d_pad), i.e. an integer up to
        M d_pad times it, which float32's 24 bits hold when M d_pad <= 2^24 (MNIST: 255 x
        1024). Comparisons with the float64 thresholds are then those of the float64 copy, at
        half its memory and memory traffic. Public: the dtype, the box and d."""
        rotation, box = view.rotation, self._integer_box()
        if (view.preclip, view.quantizer) != (None, None) or rotation is None or box is None:
            return np.float64
        d_pad = rotation.padded_dim
        largest = max(float(np.abs(bound.astype(np.float64)).max()) for bound in box)
        if rotation.normalized and d_pad.bit_length() % 2 == 1 and largest * d_pad <= 2**24:
            return np.float32
        return np.float64

    def _norms_reader(self, view: View) -> _Rows:
        """The reader for the questions about row norms and clipped sums (``_Rows``): the
        view row of each row read (a block as a slice, or an array of row indices) has squared
        norm ||read(rows)_i||^2 + extra, and
        ``finish(sum_i w_i read_i, sum_i w_i)`` is sum_i w_i v(x_i).

        An orthogonal rotation is undone on the shift instead of applied to every row: with
        u = R^T s, ||R p - s||^2 = ||p - u[:d]||^2 + ||u[d:]||^2 (p zero-padded) and
        sum w (R p - s) = R (sum w (p - u[:d])) + (sum w) (R u[:d] - s), so these questions
        read the unrotated rows, d wide, and never the rotated copy."""
        rotation = view.rotation
        if (rotation is None or not rotation.normalized or view.scale is not None
                or view.linear is not None):
            width, read = self._base_reader(view, once=True)
            if all(step is None for step in (view.preclip, view.quantizer, view.rotation,
                                             view.linear)):
                return _Rows(width, *self._shifted_reader(view), 0.0, _unchanged)

            def finished(rows: slice | np.ndarray) -> np.ndarray:
                return view.finish(read(rows))

            return _Rows(width, finished, _squares_of(finished), 0.0, _unchanged)
        shift = np.zeros(rotation.padded_dim) if view.shift is None else view.shift
        back = rotation.invert_padded(shift)
        inside, outside = back[: self.d], back[self.d:]
        unrotated = View(preclip=view.preclip, quantizer=view.quantizer)
        offset = rotation.apply(inside) - shift

        def unrotated_rows(rows: slice | np.ndarray) -> np.ndarray:
            return _shifted_in_place(View(shift=inside),
                                     unrotated.apply_base(self._clamped(rows)))

        plain = (view.preclip, view.quantizer) == (None, None)
        read, squares = (self._shifted_reader(View(shift=inside)) if plain
                         else (unrotated_rows, _squares_of(unrotated_rows)))
        return _Rows(self.d, read, squares, float(outside @ outside),
                     lambda total, weight: rotation.apply(total) + weight * offset)

    def _shifted_reader(self, view: View) -> tuple[Callable[[slice | np.ndarray], np.ndarray],
                                                   Callable[[slice | np.ndarray], np.ndarray]]:
        """A reader of row blocks clamped to the box, then shifted and scaled as ``view`` says
        (a view without base steps or linear map): ``view.finish(self._clamped(rows))``, the
        same values; and a reader of their squared norms. C-ordered integer rows inside the box
        are converted, rescaled, shifted and scaled in one compiled pass (``row_kernels``),
        their squared norms in another that writes no block (cm's norms about the origin of
        MNIST too, where the conversion alone was the read); other rows are clamped into a
        fresh array (in their own layout, so the sums over them keep their order) and shifted
        and scaled in place."""
        if self._box_holds_values and self._x.dtype.kind in "iu" and self._x.flags.c_contiguous:
            # numba: imported when first needed
            from .row_kernels import shifted_rows, shifted_squared_norms

            ones, zeros = np.ones(self.d), np.zeros(self.d)
            factor = ones if self._box.scale is None else self._box.scale
            shift = zeros if view.shift is None else view.shift
            scale = ones if view.scale is None else view.scale
            return (lambda rows: shifted_rows(self._x[rows], factor, shift, scale),
                    lambda rows, block=None: shifted_squared_norms(self._x[rows], factor,
                                                                   shift, scale))
        # The clamped rows are a fresh array (or a read-only view of the data): shifted and
        # scaled in place (the same values as ``finish``'s copies, one pass fewer each).
        def read(rows: slice | np.ndarray) -> np.ndarray:
            return _shifted_in_place(view, self._clamped(rows))

        return read, _squares_of(read)

    def row_norms(self, view: View) -> np.ndarray:
        reader = self._norms_reader(view)
        norms = np.empty(self.n)

        def fill(rows: slice) -> None:
            norms[rows] = reader.norms(rows)

        self._each_block(reader.width, fill)
        # Kept for the clipped sum about the same view, which every clipped mean asks next:
        # its weights then need no second norms pass over the rows.
        self._norms = (view, norms)
        return norms.copy()

    def clipped_sum(self, view: View, radius: float) -> np.ndarray:
        return self.clipped_sums(view, (radius,))[0]

    def clipped_sums(self, view: View, radii: Sequence[float]) -> list[np.ndarray]:
        known = self._norms[1] if self._norms is not None and self._norms[0] is view else None
        reader = self._norms_reader(view)
        if known is None or len(radii) < 2:
            return self._clipped_sums_in_one_pass(reader, radii, known)
        # With the norms known, the other radii's weights differ from the first's only on the
        # rows beyond the smallest radius (a clipped mean's few clipped rows): their sums are
        # the first's plus those rows' weight differences (the first's bits as alone, the
        # others' equal up to rounding). On MNIST's PLAN view: 0.008 s less than a second
        # product over every block.
        first = self._clipped_sums_in_one_pass(reader, radii[:1], known)[0]
        width, read, finish = reader.width, reader.read, reader.finish
        beyond = np.flatnonzero(known > min(radii))
        inner = clip_weights(known[beyond], radii[0])
        step = self._row_blocks(width)[0].stop
        out = [first]
        for radius in radii[1:]:
            weights = clip_weights(known[beyond], radius) - inner
            moved = np.zeros(width)
            for start in range(0, len(beyond), step):
                moved += weights[start:start + step] @ read(beyond[start:start + step])
            out.append(first + finish(moved, float(weights.sum())))
        return out

    def _clipped_sums_in_one_pass(self, reader: _Rows, radii: Sequence[float],
                                  known: np.ndarray | None) -> list[np.ndarray]:
        # Each block (``reader``: ``_norms_reader``'s) is read once and summed at every radius
        # (per radius the same products and the same order of additions as alone: the same
        # bits).
        # An infinite radius clips nothing (every weight 1, whatever the norm): the plain sum
        # needs no norms.
        unclipped = all(np.isposinf(radius) for radius in radii)

        def block_sums(rows: slice) -> list[tuple[np.ndarray, float]]:
            block = reader.read(rows)
            if unclipped:
                norms = np.zeros(len(block))
            else:
                norms = reader.norms(rows, block) if known is None else known[rows]
            weights = [clip_weights(norms, radius) for radius in radii]
            return [(w @ block, float(w.sum())) for w in weights]

        sums: list[list[np.ndarray]] = [[] for _ in radii]
        weights: list[list[float]] = [[] for _ in radii]
        # Each radius keeps at most this many block sums, then adds them up into one: ``np.sum``
        # over axis 0 adds rows of two or more values one after another, so a prefix added
        # first keeps its bits. Rows of one value it adds pairwise, and those are 8 bytes a
        # block: 8 million blocks (10^12 rows) before the first collapse.
        held = max(2, _ANSWER_BYTES // (8 * reader.width))

        def add(block: list[tuple[np.ndarray, float]]) -> None:
            for r, (total, weight) in enumerate(block):
                sums[r].append(total)
                weights[r].append(weight)
                if len(sums[r]) > held:
                    sums[r] = [np.sum(sums[r], axis=0)]

        self._each_block_in_order(reader.width, len(radii) * reader.width, block_sums, add)
        return [reader.finish(np.sum(total, axis=0), float(np.sum(w)))
                for total, w in zip(sums, weights, strict=True)]

    def stacked_clipped_sums(self, view: View, radii: Sequence[float]) -> np.ndarray:
        """``clipped_sums`` as one (len(radii), k) array (a Dask block's answer)."""
        return np.stack(self.clipped_sums(view, radii))

    def clipped_outer_sum(self, view: View, radius: float) -> np.ndarray:
        width, read = self._base_reader(view, once=True)

        def block_outer(rows: slice) -> np.ndarray:
            block = view.finish(read(rows))
            block = block * clip_weights(np.sqrt(np.einsum("ij,ij->i", block, block)),
                                         radius)[:, None]
            return block.T @ block

        # The blocks' k x k products are added in block order, each one's rows split among the
        # cores (every entry the same additions in the same order: the bits of summing their
        # list), a wave of one block a core at a time: the list of every block's product took
        # 5 GB and a third of CoinPress-cov's time on Gaussian C (157 blocks of 2048 x 2048).
        blocks = self._row_blocks(width)
        threads = min(parallel.THREADS, len(blocks))
        total: np.ndarray | None = None
        with one_blas_thread():
            for first in range(0, len(blocks), threads):
                for product in parallel.map_on_threads(block_outer,
                                                       blocks[first:first + threads]):
                    if total is None:
                        total = product
                    else:
                        _add_on_cores(total, product)
        assert total is not None  # n >= 1: at least one block
        return total

    def column_blocks(self, view: View, width: int) -> Iterator[tuple[slice, np.ndarray]]:
        k = view.output_dim(self.d)
        if view.linear is not None:
            # A dense map mixes coordinates: finish whole rows once, then hand columns out.
            row_width, read = self._base_reader(view)
            finished = np.concatenate(self._each_block(row_width,
                                                       lambda rows: view.finish(read(rows))))
            for cols in column_slices(k, width):
                yield cols, np.array(finished[:, cols])
            return
        for cols in column_slices(k, width):
            # Shift and scale act coordinate by coordinate: finish the base's columns alone.
            values = self._base_columns(view, cols)
            if view.shift is not None:
                values -= view.shift[cols]
            if view.scale is not None:
                values *= view.scale[cols]
            yield cols, values

    def sorted_column_blocks(self, view: View,
                             width: int) -> Iterator[tuple[slice, np.ndarray]]:
        if not view.is_identity:
            yield from super().sorted_column_blocks(view, width)
            return
        for cols in column_slices(self.d, width):
            # Clamping is monotone, so it commutes with sorting: sort the raw columns in their
            # own dtype (a radix sort for 8- and 16-bit integers such as MNIST's pixels, O(n)
            # whatever the ties), then clamp the sorted copy into float64.
            lo, hi, scale = self._box_columns(cols)
            yield cols, _clamped_on_cores(
                sort_columns(self._x[:, cols]), lo[:, None], hi[:, None],
                None if scale is None else scale[:, None], clamps=not self._box_holds_values).T

    def _box_columns(self, cols: slice) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The raw box and the box-normalising scale (None: none) of columns ``cols``."""
        box = self._box
        return box.lo[cols], box.hi[cols], None if box.scale is None else box.scale[cols]

    def _base_columns(self, view: View, cols: slice) -> np.ndarray:
        """Columns ``cols`` of the view's base (clip, quantize, rotate) over all rows: a copy."""
        if (view.preclip, view.quantizer, view.rotation) == (None, None, None):
            return _clamped_on_cores(self._x[:, cols], *self._box_columns(cols),
                                     clamps=not self._box_holds_values)
        return np.array(self.base_rows(view)[:, cols])

    def user_rows(self, view: View) -> Iterator[np.ndarray]:
        width, read = self._base_reader(view, once=True)
        for rows in self._row_blocks(width):
            yield view.finish(read(rows))

    def pair_distances(self, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # The pairs' magnitudes (``_pair_magnitudes``, kept for the sorted magnitudes PLAN asks
        # next about the same pairs), summed column block by column block as every engine does:
        # |a - b| has the l1 norm and the squares of a - b, bit for bit.
        magnitudes = self._pair_magnitudes([order])
        l1, squared = np.zeros(len(magnitudes)), np.zeros(len(magnitudes))
        if magnitudes.dtype.kind == "u":
            # Integers (|a - b| < 2^16, d of them): exact sums in any order, so the float
            # path's bits.
            from .pair_kernels import integer_distances

            over_row_ranges(len(magnitudes), lambda part: integer_distances(
                magnitudes, l1, squared, part.start, part.stop), values=magnitudes.size)
            return l1, squared
        blocks = column_slices(self.d, self.column_width())

        def add(part: slice) -> None:
            for cols in blocks:
                add_distances(magnitudes[part, cols], l1[part], squared[part])

        self._each_pair_block(len(magnitudes), add)
        return l1, squared

    def sorted_pair_magnitude_blocks(
        self, orders: Sequence[np.ndarray], width: int,
    ) -> Iterator[tuple[slice, np.ndarray]]:
        magnitudes = self._pair_magnitudes(orders)
        self._magnitudes = None  # asked once: held here only while the blocks are read
        for cols in column_slices(self.d, width):
            # Small integers are sorted by radix in their own type (O(m) whatever the ties),
            # floats by ``sort_columns``'s compiled sort; only sorted blocks become float64.
            yield cols, sort_columns(magnitudes[:, cols]).astype(np.float64, copy=False).T

    def column_order(self, view: View, lo: np.ndarray, hi: np.ndarray) -> ColumnOrder | None:
        # Bytes in a box of integers, read as they are (MNIST's pixels): each column's 256
        # counts of its clamped values (a value below the box counts as the box's low end,
        # above as its high end), read by position (``CountedOrder``): the order statistics
        # the sorted columns would give, without sorting or converting 55 million values.
        box = self._integer_box()
        if self._x.dtype != np.uint8 or box is None or not view.is_identity:
            return None
        counts = _byte_counts(self._x)
        if not self._box_holds_values:
            low, high = (bound.astype(np.intp) for bound in box)
            for j in np.flatnonzero((low > 0) | (high < 255)).tolist():
                counts[j, low[j]] += counts[j, :low[j]].sum()
                counts[j, high[j]] += counts[j, high[j] + 1:].sum()
                counts[j, :low[j]] = 0
                counts[j, high[j] + 1:] = 0
        from .counted_order import CountedOrder

        return CountedOrder(counts, _byte_values(self.d))

    def pair_value_order(
        self, orders: Sequence[np.ndarray], rows: int, unit: int,
        values_of: Any, lo: np.ndarray, hi: np.ndarray,
    ) -> ColumnOrder | None:
        # Byte magnitudes (uint8 data in a box of integers): each column's histogram, the pair
        # values of the 256 bytes (``values_of`` acts value by value for pairs of one, and
        # |a - b| has the squares of a - b), read by position (``CountedOrder``). The values
        # the sorted blocks would give, so the same draws.
        if unit != 1 or rows != self.n // 2 or self._x.dtype.itemsize != 1 \
                or self._integer_box() is None:
            return None
        from .counted_order import CountedOrder

        magnitudes = self._pair_magnitudes(orders)
        self._magnitudes = None
        return CountedOrder(_byte_counts(magnitudes), values_of(_byte_values(self.d)))

    def _pair_magnitudes(self, orders: Sequence[np.ndarray]) -> np.ndarray:
        """|a - b| of the clamped rows of every pair (a, b) of every order, stacked:
        (sum of n // 2, d), the blocks of pairs shared among the cores. Whole rows are gathered
        by pair (contiguous reads; random row gathers of a column block fetch a cache line for
        a few values), clamped and subtracted in cache: the values of the column blocks'
        differences, as clamping and rescaling act value by value.

        Small integers (MNIST's pixels, ``_integer_box``) stay in the unsigned type of their
        size: |a - b| of the clamped rows is exact there (the difference of two values of a
        type fits the unsigned type as wide), an eighth of float64's memory. The last answer
        is kept, by the orders' identity (as the Dask engine keeps its pair differences)."""
        kept = self._magnitudes
        if kept is not None and len(kept[0]) == len(orders) and all(
                a is b for a, b in zip(kept[0], orders, strict=True)):
            return kept[1]
        self._magnitudes = None
        box = self._integer_box()
        dtype = np.dtype(np.float64 if box is None else f"u{self._x.dtype.itemsize}")
        pairs = [pairs_of(order) for order in orders]
        out = np.empty((sum(len(p) for p in pairs), self.d), dtype=dtype)
        start = 0
        for pair in pairs:
            self._fill_magnitudes(pair, box, out[start:start + len(pair)])
            start += len(pair)
        self._magnitudes = (list(orders), out)
        return out

    def _fill_magnitudes(self, pairs: np.ndarray, box: tuple[np.ndarray, np.ndarray] | None,
                         out: np.ndarray) -> None:
        """|a - b| of the clamped rows of each pair (a, b) of ``pairs`` into ``out``'s rows,
        the pairs shared among the cores: small integers (``box`` their integer box), and
        other rows the box holds, in one compiled pass (``pair_kernels``), rows to clamp by
        blocks of pairs."""
        clamps = not self._box_holds_values
        compiled = np.ascontiguousarray(pairs, dtype=np.intp)
        values = 2 * len(pairs) * self.d
        if box is not None:
            from .pair_kernels import integer_magnitudes

            over_row_ranges(len(pairs), lambda part: integer_magnitudes(
                self._x, *box, clamps, compiled, part.start, part.stop, out), values=values)
            return
        if not clamps and self._x.dtype.kind in "fiu":
            from .pair_kernels import float_magnitudes

            scale = self._box.scale
            over_row_ranges(len(pairs), lambda part: float_magnitudes(
                self._x, np.ones(1) if scale is None else scale, scale is not None, compiled,
                part.start, part.stop, out), values=values)
            return

        def fill(part: slice) -> None:
            diff = self._box(self._x[pairs[part, 0]], clamps=clamps)
            diff -= self._box(self._x[pairs[part, 1]], clamps=clamps)
            np.abs(diff, out=out[part])

        self._each_pair_block(len(pairs), fill)

    def _integer_box(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The box as integers of the data's type when clamping integer data of at most 16
        bits to it gives integers (every bound integral or beyond the type's range, no
        rescaling), else None. Public: a function of the dtype and the box only."""
        dtype, box = self._x.dtype, self._box
        if dtype.kind not in "iu" or dtype.itemsize > 2 or box.scale is not None:
            return None
        least, most = _type_range(dtype)
        with np.errstate(invalid="ignore"):
            exact = (((box.lo <= least) | (box.lo == np.floor(box.lo)))
                     & ((box.hi >= most) | (box.hi == np.floor(box.hi))))
        if not exact.all():
            return None
        return (np.clip(box.lo, least, most).astype(dtype),
                np.clip(box.hi, least, most).astype(dtype))

    def _each_pair_block(self, pairs: int, fn: Callable[[slice], Any]) -> None:
        """fn over consecutive blocks of the ``pairs`` pair indices (two rows read each), the
        blocks shared among the cores."""
        step = max(1, _BLOCK_BYTES // (16 * self.d))
        blocks = [slice(i, min(i + step, pairs)) for i in range(0, pairs, step)]

        def run(part: slice) -> None:
            for block in blocks[part]:
                fn(block)

        over_row_ranges(len(blocks), run, values=2 * pairs * self.d)

    def pair_differences(self, view: View, order: np.ndarray) -> np.ndarray:
        pairs = pairs_of(order)
        _, read = self._base_reader(view)
        # Readers index rows with slices or, as here, integer arrays.
        return view.finish(read(pairs[:, 0])) - view.finish(read(pairs[:, 1]))


def _add_on_cores(total: np.ndarray, other: np.ndarray) -> None:
    """total += other, the rows shared among the cores: each entry one addition, so the same
    bits as one ``+=``."""
    over_row_ranges(len(total), lambda part: np.add(total[part], other[part], out=total[part]),
                    values=other.size)


def _shifted_in_place(view: View, block: np.ndarray) -> np.ndarray:
    """``view.finish(block)`` for a view without a linear map, written into ``block`` where it
    is a fresh array of the engine's (a read-only view of the data gets a new one):
    (block - shift) * scale, the same operations."""
    if not block.flags.writeable:
        if view.shift is None:
            return block if view.scale is None else block * view.scale
        block = block - view.shift  # fresh: scaled in place below
    elif view.shift is not None:
        block -= view.shift
    if view.scale is not None:
        block *= view.scale
    return block


class _Rows(NamedTuple):
    """How the questions about row norms and clipped sums read the rows
    (``InMemoryEngine._norms_reader``): ``read(rows)`` gives the rows to sum (a block as a
    slice, or an array of row indices), ``width`` wide; ``squares(rows, block)`` their squared
    norms, to which ``extra`` is added (``block``, if given, is ``read(rows)``, which a reader
    may sum rather than read again); ``finish(sum_i w_i read_i, sum_i w_i)`` is
    sum_i w_i v(x_i)."""

    width: int
    read: Callable[[slice | np.ndarray], np.ndarray]
    squares: Callable[..., np.ndarray]
    extra: float
    finish: Callable[[np.ndarray, float], np.ndarray]

    def norms(self, rows: slice | np.ndarray, block: np.ndarray | None = None) -> np.ndarray:
        """sqrt(||row||^2 + extra) for each row read (``block``: ``read(rows)``, if at hand):
        the one formula for row norms, so a norm kept from ``row_norms`` is the one
        ``clipped_sum`` would compute, bit for bit."""
        return np.sqrt(self.squares(rows, block) + self.extra)


def _unchanged(total: np.ndarray, _: float) -> np.ndarray:
    """The ``finish`` of rows read as they are: the sum itself."""
    return total


def _squares_of(read: Callable[[slice | np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    """The squared norms of the rows ``read`` gives, read unless given as ``block``: by the
    compiled sum the integer rows' norms take (``row_kernels``), so the same values give the
    same bits on either path."""
    def squares(rows: slice | np.ndarray, block: np.ndarray | None = None) -> np.ndarray:
        from .row_kernels import squared_norms  # numba: imported when first needed

        return squared_norms(read(rows) if block is None else block)

    return squares


def _byte_counts(values: np.ndarray) -> np.ndarray:
    """(k, 256): how many rows of ``values`` (rows x k, uint8) hold each byte in each column,
    the columns shared among the cores. int32 counts where they fit: a thread's histograms
    then stay in its core's cache (MNIST's 35,000 x 784 pair magnitudes: 0.114 -> 0.035 s a
    core against int64)."""
    from .pair_kernels import byte_histograms

    rows, k = values.shape
    counts = np.zeros((k, 256), dtype=np.int32 if rows < 2**31 else np.int64)
    over_row_ranges(k, lambda part: byte_histograms(values, part.start, part.stop,
                                                    counts[part]), values=values.size)
    return counts


def _byte_values(k: int) -> np.ndarray:
    """(256, k): the value of each byte in each of k columns, as float64."""
    return np.repeat(np.arange(256, dtype=np.float64)[:, None], k, axis=1)


def _type_range(dtype: np.dtype) -> tuple[int, int]:
    """The smallest and largest value of an integer (or boolean) type."""
    if dtype.kind == "b":
        return 0, 1
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _clamped_on_cores(values: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                      scale: np.ndarray | None = None, *, clamps: bool = True) -> np.ndarray:
    """``values`` clamped to [lo, hi] and multiplied by ``scale`` (each broadcast to its shape;
    the engine's ``BoxClamp``) as a new float64 array, its row ranges shared among the cores: a
    strided read and a clamp are memory-bound, and two cores read faster than one.
    ``clamps=False``: the box holds every value of the type, so converting is the clamp."""
    out = np.empty(values.shape)
    lo = np.broadcast_to(lo, values.shape)
    hi = np.broadcast_to(hi, values.shape)
    factor = None if scale is None else np.broadcast_to(scale, values.shape)

    def fill(part: slice) -> None:
        if clamps:
            clamp(values[part], lo[part], hi[part], out=out[part])
        else:
            out[part] = values[part]
        if factor is not None:
            out[part] *= factor[part]

    over_row_ranges(len(values), fill, values=out.size)
    return out
