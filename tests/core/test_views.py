"""Views numpy cannot merge into one loop call, computed as one kernel call over their rows.

``relu`` hands a view of two or more axes whose rows are contiguous (``x[:, :n]``, ``x[::2]``,
sliced in and sliced out, F order) to the kernel as one call (``onnx_relu._relu._relu_view``), so
that the whole call's size decides threads and streaming stores. Every such path is tested above
its thresholds (forced to 0 and to sizes the calls straddle) at 1, 2 and 3 threads, for every
type, allocating, into ``out=`` (contiguous, sliced, in place) and with overlaps in both
directions (which must come out as Relu of a copy of the input taken before the call).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import onnx_relu
from onnx_relu import relu
from onnx_relu.tuning import kernel_tuned
from tests.support.dtypes import RELU_DTYPES
from tests.support.oracle import as_bits, expected_relu, mismatch_report
from tests.support.values import mixed_values

NEVER = 1 << 62

# (base shape, the view of it): rows of contiguous elements that numpy cannot merge.
LAYOUTS = {
    "columns sliced": ((37, 41), np.s_[:, :40]),
    "every other row": ((38, 40), np.s_[::2]),
    "rows reversed, columns sliced": ((37, 41), np.s_[::-1, 1:]),
    "3-D, middle axis sliced": ((5, 9, 16), np.s_[:, 1:8, :]),
    "3-D, outer axes merge": ((6, 7, 17), np.s_[:, :, :16]),
    "4-D, two outer axes": ((3, 4, 5, 33), np.s_[:, ::2, :, :32]),
    "strided columns (ufunc path)": ((20, 40), np.s_[:, ::2]),
}

# (parallel_threshold, nt_threshold, min_chunk): every call threaded and streaming; thresholds
# the larger views straddle; the defaults' "never" for streaming.
SETTINGS = [(0, 0, 0), (4096, 8192, 64), (0, NEVER, 0)]
THREADS = [1, 2, 3]


def base_of(dtype: np.dtype, shape: tuple[int, ...], seed: int) -> np.ndarray:
    return mixed_values(dtype, int(np.prod(shape)), seed).reshape(shape)


def check(got: np.ndarray, source: np.ndarray, what: str) -> None:
    want = expected_relu(source)
    assert got.dtype == source.dtype, what
    assert got.shape == source.shape, what
    assert np.array_equal(as_bits(got), as_bits(want)), (
        f"{what}: {mismatch_report(source, got, want)}"
    )


@pytest.fixture
def restore_threads():
    before = onnx_relu.get_num_threads()
    yield
    onnx_relu.set_num_threads(before)


@pytest.mark.parametrize("dtype", RELU_DTYPES, ids=str)
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: "-".join(map(str, s)))
@pytest.mark.parametrize("threads", THREADS)
def test_every_view_and_out_matches_the_oracle(dtype, layout, setting, threads, restore_threads):
    shape, index = LAYOUTS[layout]
    parallel, nt, min_chunk = setting
    onnx_relu.set_num_threads(threads)
    with kernel_tuned(parallel_threshold=parallel, nt_threshold=nt, min_chunk=min_chunk):
        for order in ("C", "F"):
            base = np.asarray(base_of(np.dtype(dtype), shape, 27), order=order)
            x = base[index]
            source = x.copy(order="K")
            what = f"{layout} {order} {dtype}"
            check(relu(x), source, what + " allocating")
            out = np.empty_like(x)
            assert relu(x, out=out) is out
            check(out, source, what + " out= contiguous")
            sliced = np.zeros_like(base)
            assert relu(x, out=sliced[index]) is not None
            check(sliced[index], source, what + " sliced out=")
            in_place = base.copy(order="K")
            relu(in_place[index], out=in_place[index])
            check(in_place[index], source, what + " in place")
            assert np.array_equal(as_bits(x), as_bits(source)), what + ": input changed"


OVERLAPS = {
    # 2-D, neither operand contiguous as a whole, so each reaches the rows path's overlap check
    "out one row up, columns shifted": (np.s_[1:, 1:], np.s_[:-1, :-1]),
    "out one row down, columns shifted": (np.s_[:-1, :-1], np.s_[1:, 1:]),
    "out one column left": (np.s_[:, 1:], np.s_[:, :-1]),
    "out one column right": (np.s_[:, :-1], np.s_[:, 1:]),
    "every other row over the rows below": (np.s_[::2, :-1], np.s_[: 20 // 2, 1:]),
}


@pytest.mark.parametrize("dtype", RELU_DTYPES, ids=str)
@pytest.mark.parametrize("overlap", list(OVERLAPS))
@pytest.mark.parametrize("setting", SETTINGS[:2], ids=lambda s: "-".join(map(str, s)))
@pytest.mark.parametrize("threads", [1, 2])
def test_overlapping_views_in_both_directions(dtype, overlap, setting, threads, restore_threads):
    src, dst = OVERLAPS[overlap]
    parallel, nt, min_chunk = setting
    onnx_relu.set_num_threads(threads)
    with kernel_tuned(parallel_threshold=parallel, nt_threshold=nt, min_chunk=min_chunk):
        grid = base_of(np.dtype(dtype), (20, 300), 5)
        source = grid[src].copy()
        relu(grid[src], out=grid[dst])
        check(grid[dst], source, f"{overlap} {dtype}")


def test_the_whole_view_decides_threads():
    """A view of 4 KiB rows, 8 MiB in all, with the parallel threshold at 1 MiB starts the pool:
    its rows alone (what numpy hands the loop one at a time) are under the threshold. The check
    can fail: a contiguous 4 KiB call does not start it."""
    code = textwrap.dedent(
        """
        import numpy as np, onnx_relu
        from onnx_relu.tuning import kernel_tuning, set_kernel_tuning
        onnx_relu.set_num_threads(2)
        set_kernel_tuning(parallel_threshold=1 << 20, min_chunk=4096)
        onnx_relu.relu(np.ones(1024, np.float32))
        before = kernel_tuning()["pool_workers"]
        x = np.ones((2048, 1025), np.float32)[:, :1024]
        onnx_relu.relu(x, out=np.empty_like(x))
        print(before, kernel_tuning()["pool_workers"])
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    before, after = map(int, done.stdout.split())
    if not onnx_relu.tuning.kernel_tuning()["threads_supported"]:
        pytest.skip("this build has no threads")
    assert (before, after > 0) == (0, True), done.stdout


class _Subclass(np.ndarray):
    pass


def test_the_rows_entry_refuses_what_it_cannot_serve():
    """_relu_view returns None, writing nothing, for what the ufunc must do: contiguous arrays,
    1-D ones, other types, byte-swapped ones, subclasses, read-only out, overlaps."""
    from onnx_relu._relu import _relu_view

    grid = np.arange(-50.0, 50.0, dtype=np.float32).reshape(10, 10)
    view = grid[:, :9]
    assert _relu_view(grid, None) is None  # contiguous: one loop call
    assert _relu_view(grid.ravel()[::2], None) is None  # 1-D
    # Views of the same layout (astype would make contiguous copies, refused as such).
    assert _relu_view(np.zeros((10, 10), np.uint8)[:, :9], None) is None
    assert _relu_view(grid.astype(">f4")[:, :9], None) is None
    assert _relu_view(grid.view(_Subclass)[:, :9], None) is None
    read_only = np.empty_like(view)
    read_only.flags.writeable = False
    assert _relu_view(view, read_only) is None
    untouched = grid.copy()
    assert _relu_view(untouched[1:, :9], untouched[:-1, 1:]) is None
    assert np.array_equal(untouched, grid)
    out = np.empty_like(view)
    assert _relu_view(view, out) is out
    assert np.array_equal(out, np.maximum(view, 0))
