"""Measure `onnx-relu apply` on large .npy files: peak RSS against file size, and throughput
against in-memory relu on the same data in the same run. Also a Dask LocalCluster over a Zarr
store. Writes its scratch files into FOLDER (default: a new temporary folder), removes them.

    .venv/bin/python tools/measure_apply.py [FOLDER] [--sizes-mib 256,1024,4096] [--zarr-mib 1024]

GB/s = 2 x bytes / seconds (read + write), as in the project's field notes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# Peak RSS of the child's own address space (VmHWM): getrusage's ru_maxrss would include the
# peak of this (parent) process, which Linux folds into the child's at exec.
WRAPPER = """\
import sys
from onnx_relu.cli import main
status = main(sys.argv[1:])
with open("/proc/self/status") as status_file:
    line = next(l for l in status_file if l.startswith("VmHWM:"))
print(int(line.split()[1]) * 1024, file=sys.stderr)
sys.exit(status)
"""
BLOCK = np.random.default_rng(0).standard_normal(1 << 20, dtype=np.float32)  # 4 MiB


def write_file(path: Path, mib: int) -> None:
    rows = mib // 4
    with open(path, "wb") as file:
        np.lib.format.write_array_header_1_0(
            file, {"descr": "<f4", "fortran_order": False, "shape": (rows, BLOCK.size)}
        )
        for _ in range(rows):
            file.write(BLOCK.tobytes())


def apply_in_child(*args: str) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", WRAPPER, *args], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(done.stderr)
    return seconds, int(done.stderr.split()[-1])


def in_memory(path: Path) -> tuple[float, float]:
    """Seconds of relu on the loaded array: into a preallocated out, and allocating."""
    from onnx_relu import relu

    x = np.load(path)
    out = np.empty_like(x)
    relu(x, out=out)  # touch the output pages once
    started = time.perf_counter()
    relu(x, out=out)
    preallocated = time.perf_counter() - started
    del out
    started = time.perf_counter()
    y = relu(x)
    allocating = time.perf_counter() - started
    del x, y
    return preallocated, allocating


def write_phase(src: Path, dst: Path) -> tuple[float, float]:
    """relu_file in this process: seconds until the last window was handed to the OS (page
    cache), and seconds in all (that plus fsync and rename)."""
    from onnx_relu.files import relu_file

    marks: list[float] = []
    started = time.perf_counter()
    relu_file(src, dst, progress=lambda done, total: marks.append(time.perf_counter()))
    return marks[-1] - started, time.perf_counter() - started


def measure_files(folder: Path, sizes_mib: list[int]) -> None:
    _, bare = apply_in_child("--version")
    print(f"bare interpreter + onnx_relu.cli: peak RSS {bare / 2**20:.0f} MiB")
    print(
        "file MiB | apply s | apply GB/s | peak RSS MiB | in-place s | in-place peak MiB"
        " | relu_file GB/s until fsync / in all | in-memory relu GB/s (prealloc / allocating)"
    )
    for mib in sizes_mib:
        src, dst = folder / "x.npy", folder / "y.npy"
        write_file(src, mib)
        nbytes = os.path.getsize(src)
        seconds, peak = apply_in_child("apply", str(src), str(dst))
        os.remove(dst)
        until_fsync, in_all = write_phase(src, dst)
        os.remove(dst)
        in_place_s, in_place_peak = apply_in_child("apply", "--in-place", str(src))
        memory = ""
        if mib <= 2048:
            write_file(src, mib)
            pre, alloc = in_memory(src)
            memory = f"{2 * nbytes / pre / 1e9:.1f} / {2 * nbytes / alloc / 1e9:.1f}"
        print(
            f"{mib:8d} | {seconds:7.2f} | {2 * nbytes / seconds / 1e9:10.2f} |"
            f" {peak / 2**20:12.0f} | {in_place_s:10.2f} | {in_place_peak / 2**20:17.0f} |"
            f" {2 * nbytes / until_fsync / 1e9:.2f} / {2 * nbytes / in_all / 1e9:.2f} | {memory}"
        )
        os.remove(src)


def measure_zarr(folder: Path, mib: int) -> None:
    import zarr

    src = folder / "in.zarr"
    rows = mib // 4
    store = zarr.create_array(
        src, shape=(rows, BLOCK.size), chunks=(4, BLOCK.size), dtype=np.float32, compressors=None
    )
    for row in range(0, rows, 16):
        store[row : row + 16] = np.broadcast_to(BLOCK, (min(16, rows - row), BLOCK.size))
    started = time.perf_counter()
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("onnx-relu")),
            "apply",
            str(src),
            str(folder / "out.zarr"),
            "--dask",
        ],
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(done.stderr)
    nbytes = rows * BLOCK.nbytes
    print(
        f"apply --dask on a LocalCluster, {mib} MiB float32 Zarr (16 MiB chunks, no"
        f" compression): {seconds:.2f} s wall including cluster start,"
        f" {2 * nbytes / seconds / 1e9:.2f} GB/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", nargs="?")
    parser.add_argument("--sizes-mib", default="256,1024,4096")
    parser.add_argument("--zarr-mib", type=int, default=1024)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(dir=args.folder))
    try:
        measure_files(folder, [int(s) for s in args.sizes_mib.split(",")])
        if args.zarr_mib:
            measure_zarr(folder, args.zarr_mib)
    finally:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
