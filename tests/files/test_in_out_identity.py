"""IN is never changed, removed or replaced, whatever OUT is, and every path is opened as what
it was classified (issue 35, items 1 to 3).

- OUT equal to IN, holding IN or inside IN, reached by the same path, a symbolic link, a hard
  link, a bind mount or ``/proc/self/fd/N``, for files and Zarr stores (arrays and groups):
  refused before anything is written, in one line naming both; every file under the test's
  folder (the sibling arrays of a group included) is byte for byte as before.
- IN and OUT the same pipe, FIFO or terminal through any path (``selfin.npy -> /dev/stdin``,
  ``apply F F``): refused before a byte is read.
- A path swapped between its classification and its opening (a FIFO, a symbolic link,
  another file, nothing): refused in one line, never waited on; for IN, in place, OUT, a
  tensor read and a model.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from onnx_relu import read_tensor, write_tensor
from onnx_relu.errors import FileArgumentError, UnsupportedPathError
from onnx_relu.files import relu_file
from onnx_relu.files.jobs.zarr_dask import relu_zarr
from onnx_relu.io import endpoint as _endpoint
from onnx_relu.io.endpoint import Endpoint
from onnx_relu.io.identity import open_classified, refuse_overlap
from tests.support.cli import SCRIPT, assert_cli_error, folder_state, run_cli
from tests.support.streams import fifo_writer, run_plain

X = np.arange(-6, 6, dtype=np.float32)
#: Over a pipe's 64 KiB buffer: a write into one's own standard input would block.
BIG = np.arange(-(1 << 15), 1 << 15, dtype=np.float32)


def npy_bytes(array: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


@contextlib.contextmanager
def bind_mount(source: Path, target: Path) -> Iterator[None]:
    """``mount --bind source target`` for the block; skips the test where that is not
    possible (not root, no mount namespace rights)."""
    done = subprocess.run(
        ["mount", "--bind", str(source), str(target)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"mount --bind is not possible here: {done.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", str(target)], check=False)


# --- 1: OUT that would change IN, for files -----------------------------------------------------


def test_out_that_is_in_by_any_path_is_refused_and_in_kept(tmp_path):
    """The same path, a symbolic link, a hard link and /proc/self/fd/N: exit 2, one line
    naming both, nothing written; the library's relu_file refuses the same."""
    write_tensor(tmp_path / "x.npy", X)
    os.symlink("x.npy", tmp_path / "link.npy")
    os.link(tmp_path / "x.npy", tmp_path / "hard.npy")
    before = folder_state(tmp_path)
    for out in ("x.npy", "./x.npy", "link.npy", "hard.npy"):
        done = run_cli("apply", "x.npy", out, cwd=tmp_path)
        line = assert_cli_error(done, 2, f"OUT {out!r} is IN 'x.npy' itself (the same regular file")
        assert "writing OUT would replace IN" in line and "--in-place" in line, line
        assert folder_state(tmp_path) == before, out
        with pytest.raises(FileArgumentError, match="dst .* is src .* itself"):
            relu_file(tmp_path / "x.npy", tmp_path / out)
        assert folder_state(tmp_path) == before, out
    fd = os.open(tmp_path / "x.npy", os.O_RDONLY)
    try:
        done = subprocess.run(
            [SCRIPT, "apply", "x.npy", f"/proc/self/fd/{fd}"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            pass_fds=(fd,),
            timeout=60,
        )
    finally:
        os.close(fd)
    assert_cli_error(done, 2, "is IN 'x.npy' itself (the same regular file by another path)")
    assert folder_state(tmp_path) == before


def test_out_through_a_bind_mount_is_in_itself(tmp_path):
    """A folder bind-mounted elsewhere: OUT there is IN by another path (the same device and
    inode), refused; IN kept."""
    (tmp_path / "d").mkdir()
    (tmp_path / "m").mkdir()
    write_tensor(tmp_path / "d" / "x.npy", X)
    before = (tmp_path / "d" / "x.npy").read_bytes()
    with bind_mount(tmp_path / "d", tmp_path / "m"):
        done = run_cli("apply", "d/x.npy", "m/x.npy", cwd=tmp_path)
        assert_cli_error(done, 2, "OUT 'm/x.npy' is IN 'd/x.npy' itself")
        assert os.listdir(tmp_path / "m") == ["x.npy"]
    assert (tmp_path / "d" / "x.npy").read_bytes() == before


def test_different_files_are_still_written(tmp_path):
    """Not every pair is refused: a sibling OUT, an OUT through a link to another folder."""
    write_tensor(tmp_path / "x.npy", X)
    (tmp_path / "other").mkdir()
    os.symlink("other", tmp_path / "to-other")
    for out in ("y.npy", "to-other/y.npy"):
        done = run_cli("apply", "x.npy", out, cwd=tmp_path)
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        assert read_tensor(tmp_path / out).tolist() == np.maximum(X, 0).tolist()


def write_pb_with_external_data(folder: Path, location: str) -> None:
    """``x.pb``: a TensorProto of X whose data lies in the file ``location`` beside it."""
    onnx = pytest.importorskip("onnx")
    from onnx import external_data_helper, numpy_helper

    tensor = numpy_helper.from_array(X, name="x")
    (folder / location).write_bytes(tensor.raw_data)
    external_data_helper.set_external_data(tensor, location)
    tensor.data_location = onnx.TensorProto.EXTERNAL
    tensor.ClearField("raw_data")
    (folder / "x.pb").write_bytes(tensor.SerializeToString())


def test_out_that_is_a_pb_ins_external_data_is_refused(tmp_path):
    """A .pb IN whose data lies in an external file: OUT that file by its name, a symbolic
    link or a hard link is refused in one line naming both, nothing written; the library's
    relu_file the same; another OUT is written from the external data (refused before onnx's
    own refusal of an external file with other hard links, which would hide why)."""
    write_pb_with_external_data(tmp_path, "w.npy")
    os.symlink("w.npy", tmp_path / "link.npy")
    os.link(tmp_path / "w.npy", tmp_path / "hard.npy")
    before = folder_state(tmp_path)
    for out in ("w.npy", "./w.npy", "link.npy", "hard.npy"):
        done = run_cli("apply", "x.pb", out, cwd=tmp_path)
        line = assert_cli_error(done, 2, f"OUT {out!r} is IN's external data '")
        assert "w.npy' itself (the same regular file" in line, line
        assert "writing OUT would replace IN's external data; name another OUT" in line, line
        assert folder_state(tmp_path) == before, out
        with pytest.raises(FileArgumentError, match="dst .* is src's external data .* itself"):
            relu_file(tmp_path / "x.pb", tmp_path / out)
        assert folder_state(tmp_path) == before, out
    os.unlink(tmp_path / "hard.npy")  # onnx reads no external data file with other links
    done = run_cli("apply", "x.pb", "y.npy", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert read_tensor(tmp_path / "y.npy").tolist() == np.maximum(X, 0).tolist()


# --- 1: OUT that would change IN, for Zarr stores -----------------------------------------------


def make_store(folder: Path, marker: str = "zarr.json", chunks: int = 2) -> Path:
    """A Zarr-looking store (its metadata file and chunk files): the refusals come before any
    Zarr code reads it, and every byte of it is checked afterwards."""
    folder.mkdir(parents=True)
    (folder / marker).write_text('{"zarr_format": 3, "node_type": "array"}')
    (folder / "c").mkdir()
    for index in range(chunks):
        (folder / "c" / str(index)).write_bytes(os.urandom(64))
    return folder


@pytest.fixture
def group(tmp_path: Path) -> Path:
    """``g.zarr``: a group holding the input array ``x.zarr`` and a sibling array ``other``."""
    root = tmp_path / "g.zarr"
    root.mkdir()
    (root / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    make_store(root / "x.zarr")
    make_store(root / "other")
    return root


ZARR_CASES = [
    # (OUT, what the line says)
    ("g.zarr", "OUT 'g.zarr' holds IN 'g.zarr/x.zarr'"),
    ("lg.zarr", "OUT 'lg.zarr' holds IN 'g.zarr/x.zarr'"),  # a link to the group
    ("g.zarr/x.zarr", "OUT 'g.zarr/x.zarr' is IN 'g.zarr/x.zarr' itself (the same folder)"),
    ("lx.zarr", "OUT 'lx.zarr' is IN 'g.zarr/x.zarr' itself (the same folder by another path)"),
    ("g.zarr/x.zarr/y.zarr", "OUT 'g.zarr/x.zarr/y.zarr' is inside IN 'g.zarr/x.zarr'"),
    ("lx.zarr/c/y.zarr", "OUT 'lx.zarr/c/y.zarr' is inside IN 'g.zarr/x.zarr'"),
]


@pytest.mark.parametrize(("out", "fragment"), ZARR_CASES, ids=[case[0] for case in ZARR_CASES])
def test_zarr_out_holding_being_or_inside_in_is_refused(tmp_path, group, out, fragment):
    """``apply g.zarr/x.zarr g.zarr --dask`` (the group holding IN), IN itself, a store inside
    IN, each also through a symbolic link: exit 2 before any Dask work, one line naming both;
    IN and the sibling array are byte for byte as before. relu_zarr refuses the same."""
    from onnx_relu.files.jobs.zarr_dask import relu_zarr

    os.symlink("g.zarr", tmp_path / "lg.zarr")
    os.symlink("g.zarr/x.zarr", tmp_path / "lx.zarr")
    before = folder_state(tmp_path)
    done = run_cli("apply", "g.zarr/x.zarr", out, "--dask", cwd=tmp_path)
    line = assert_cli_error(done, 2, fragment)
    assert "IN" in line and "OUT" in line
    assert folder_state(tmp_path) == before
    with pytest.raises(FileArgumentError, match="dst .* src "):
        relu_zarr(tmp_path / "g.zarr" / "x.zarr", tmp_path / out)
    assert folder_state(tmp_path) == before


def test_zarr_group_through_a_bind_mount_is_refused(tmp_path, group):
    """IN read through a bind mount of the group, OUT the group by its own name: the same
    folder by identity, so OUT holds IN."""
    (tmp_path / "m").mkdir()
    before = folder_state(group)
    with bind_mount(group, tmp_path / "m"):
        done = run_cli("apply", "m/x.zarr", "g.zarr", "--dask", cwd=tmp_path)
        assert_cli_error(done, 2, "OUT 'g.zarr' holds IN 'm/x.zarr'")
    assert folder_state(group) == before


# --- 3: IN and OUT the same pipe, FIFO or terminal ------------------------------------------------


@pytest.mark.parametrize("array", [X, BIG], ids=["small", "over-64KiB"])
def test_out_that_is_standard_input_is_refused_before_reading(tmp_path, array):
    """``cat x.npy | apply - selfin.npy`` with ``selfin.npy -> /dev/stdin``: refused at once
    (it used to hang from 64 KiB on, and to lose the result below), nothing read or written."""
    os.symlink("/dev/stdin", tmp_path / "selfin.npy")
    before = folder_state(tmp_path)
    done = run_plain(("apply", "-", "selfin.npy"), stdin=npy_bytes(array), cwd=tmp_path, timeout=60)
    done.assert_one_line_failure(
        2, "OUT 'selfin.npy' is IN (standard input) itself (the same pipe or FIFO"
    )
    assert folder_state(tmp_path) == before


def test_one_fifo_as_in_and_out_is_refused_with_a_live_writer(tmp_path):
    """``apply F F`` with one FIFO F that a writer has open: refused before a byte is read
    (the writer's data stays unread), never waited on."""
    fifo = tmp_path / "F.npy"
    os.mkfifo(fifo)
    with fifo_writer(fifo, npy_bytes(BIG)):
        done = run_plain(("apply", "F.npy", "F.npy"), cwd=tmp_path, timeout=60)
        done.assert_one_line_failure(2, "OUT 'F.npy' is IN 'F.npy' itself (the same pipe or FIFO")
    os.symlink("F.npy", tmp_path / "G.npy")
    done = run_plain(("apply", "G.npy", "F.npy"), cwd=tmp_path, timeout=60)
    done.assert_one_line_failure(2, "OUT 'F.npy' is IN 'G.npy' itself (the same pipe or FIFO")


def test_one_terminal_as_in_and_out_is_refused(tmp_path):
    """Standard input a terminal and OUT that terminal by its path: refused, nothing read."""
    master, slave = os.openpty()
    try:
        done = run_plain(("apply", "-", os.ttyname(slave)), stdin=slave, cwd=tmp_path, timeout=60)
    finally:
        os.close(master)
        os.close(slave)
    done.assert_one_line_failure(2, "is IN (standard input) itself (the same terminal")


def test_refuse_overlap_takes_standard_output_for_dash(tmp_path):
    """``-`` as OUT is standard output's descriptor: a file that is both standard input and
    standard output (``apply - - <>x.npy >&0``) is refused."""
    write_tensor(tmp_path / "x.npy", X)
    before = folder_state(tmp_path)
    fd = os.open(tmp_path / "x.npy", os.O_RDWR)
    try:
        done = run_plain(("apply", "-", "-"), stdin=fd, stdout=fd, cwd=tmp_path)
    finally:
        os.close(fd)
    done.assert_one_line_failure(2, "OUT (standard output) is IN (standard input) itself")
    assert folder_state(tmp_path) == before
    # /dev/null as both is no loop (its reads and writes are unrelated): judged as usual.
    with open(os.devnull, "r+b") as null:
        done = run_plain(("apply", "-", "-"), stdin=null.fileno(), stdout=null.fileno())
    done.assert_one_line_failure(2, "cannot tell the tensor format of standard input: it is empty")


# --- 2: a path swapped between its classification and its opening -------------------------------


def swap_after_classifying(monkeypatch, path: Path, swap: Callable[[Path], None]) -> None:
    """Make the classification of ``path`` (Endpoint.of) run ``swap`` right after it looked."""
    original = _endpoint._classify
    target = os.path.abspath(path)
    pending = [swap]

    def classify(name: str):  # type: ignore[no-untyped-def]
        result = original(name)
        if pending and os.path.abspath(name) == target:
            pending.pop()(path)
        return result

    monkeypatch.setattr(_endpoint, "_classify", classify)


def to_fifo(path: Path) -> None:
    os.unlink(path)
    os.mkfifo(path)


def to_link(path: Path) -> None:
    os.unlink(path)
    os.symlink("decoy.npy", path)


def to_other_file(path: Path) -> None:
    os.replace(path.with_name("decoy.npy"), path)


def removed(path: Path) -> None:
    os.unlink(path)


SWAPS = {
    "fifo": (to_fifo, "now it is a pipe or FIFO"),
    "symlink": (to_link, "now it is a symbolic link, which is not followed"),
    "another-file": (to_other_file, "now it is another regular file"),
    "removed": (removed, "now it is gone"),
}


def within(seconds: float, call: Callable[[], object]) -> BaseException | None:
    """Run ``call`` in a thread; the exception it raised (None: it returned). Fails the test if
    it has not ended within ``seconds`` (it hangs)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the call hangs"
    return outcome[0]


@pytest.mark.parametrize("swap", sorted(SWAPS))
@pytest.mark.parametrize("entry", ["relu_file", "in_place", "read_tensor", "check_model"])
def test_a_path_swapped_after_it_is_classified_is_refused_never_waited_on(
    tmp_path, monkeypatch, swap, entry
):
    """IN (relu_file, in place, read_tensor) or a model (check_model) replaced by a FIFO, a
    symbolic link or another file, or removed, between Endpoint's classification and the open:
    UnsupportedPathError naming the path and both kinds, within seconds; OUT not created and
    the decoy never written."""
    change, fragment = SWAPS[swap]
    if entry == "check_model":
        pytest.importorskip("onnx")
        import onnx

        from onnx_relu.onnx import check_model
        from tests.support.onnx_models import relu_model

        path = tmp_path / "m.onnx"
        onnx.save(relu_model("float32", 14), path)
        (tmp_path / "decoy.npy").write_bytes(path.read_bytes())
        call: Callable[[], object] = lambda: check_model(path)  # noqa: E731
    else:
        path = tmp_path / "x.npy"
        write_tensor(path, X)
        write_tensor(tmp_path / "decoy.npy", -X)
        call = {
            "relu_file": lambda: relu_file(path, tmp_path / "y.npy"),
            "in_place": lambda: relu_file(path, in_place=True),
            "read_tensor": lambda: read_tensor(path),
        }[entry]
    decoy = (tmp_path / "decoy.npy").read_bytes()
    swap_after_classifying(monkeypatch, path, change)
    error = within(20, call)
    assert isinstance(error, UnsupportedPathError), repr(error)
    assert f"{os.fspath(path)!r} changed after it was checked" in str(error), str(error)
    assert fragment in str(error) and "\n" not in str(error), str(error)
    assert not (tmp_path / "y.npy").exists()
    if swap in ("symlink", "fifo", "removed"):
        assert (tmp_path / "decoy.npy").read_bytes() == decoy  # not written through the link


def test_an_out_fifo_swapped_for_a_file_is_refused_not_written(tmp_path, monkeypatch):
    """OUT classified as a FIFO with a reader, then replaced by a regular file: the stream's
    open sees another object and refuses; the file is not written."""
    write_tensor(tmp_path / "x.npy", X)
    out = tmp_path / "y.npy"
    os.mkfifo(out)
    (tmp_path / "decoy.npy").write_bytes(b"decoy")
    reader = os.open(out, os.O_RDONLY | os.O_NONBLOCK)  # a reader, held by the test
    try:
        swap_after_classifying(monkeypatch, out, to_other_file)
        error = within(20, lambda: relu_file(tmp_path / "x.npy", out))
    finally:
        os.close(reader)
    assert isinstance(error, UnsupportedPathError), repr(error)
    assert "changed after it was checked (it was a FIFO, now it is a regular file)" in str(error)
    assert out.read_bytes() == b"decoy"


def test_open_classified_opens_an_unchanged_path_blocking(tmp_path):
    """The ordinary case: an unchanged regular file is opened, blocking, and read whole."""
    write_tensor(tmp_path / "x.npy", X)
    endpoint = Endpoint.of(tmp_path / "x.npy", "IN")
    with open_classified(endpoint) as file:
        assert os.get_blocking(file.fileno())
        assert file.read() == (tmp_path / "x.npy").read_bytes()
    refuse_overlap(endpoint, Endpoint.of(tmp_path / "y.npy", "OUT"))  # no refusal


@pytest.mark.parametrize("swap", ["another-store", "symlink", "removed"])
def test_a_zarr_store_swapped_after_it_is_classified_is_refused_before_the_job(
    tmp_path, monkeypatch, swap
):
    """IN of a Zarr job (read later by zarr, by path, on the workers) replaced by another
    store, a symbolic link to one, or removed after the plan classified it: the job refuses
    before any Dask work; OUT is not created."""
    from onnx_relu.files.plan import plan_apply

    make_store(tmp_path / "x.zarr")
    make_store(tmp_path / "decoy.zarr")

    def change(path: Path) -> None:
        os.rename(path, tmp_path / "old.zarr")
        if swap == "another-store":
            os.rename(tmp_path / "decoy.zarr", path)
        elif swap == "symlink":
            os.symlink("decoy.zarr", path)

    swap_after_classifying(monkeypatch, tmp_path / "x.zarr", change)
    with plan_apply(tmp_path / "x.zarr", tmp_path / "y.zarr", dask=True) as plan:
        error = within(20, plan.run)
    assert isinstance(error, UnsupportedPathError), repr(error)
    expected = {
        "another-store": "now it is another folder",
        "symlink": "now it is a symbolic link",
        "removed": "now it is gone",
    }[swap]
    assert "changed after it was checked (it was a folder, " + expected in str(error), str(error)
    assert not (tmp_path / "y.zarr").exists()


def make_zarr_store(path: Path) -> np.ndarray:
    """A real Zarr array store of 4 chunk files; returns its values."""
    zarr = pytest.importorskip("zarr")
    pytest.importorskip("distributed")
    values = np.arange(-8, 8, dtype=np.float32)
    zarr.create_array(path, shape=values.shape, chunks=(4,), dtype=values.dtype)[...] = values
    return values


@pytest.mark.parametrize("entry", ["fifo", "symlink-in", "symlink-out"])
def test_a_zarr_chunk_that_is_no_regular_file_is_refused_before_the_job(tmp_path, entry):
    """A chunk file of IN replaced by a FIFO (a worker opening it would wait forever), or by a
    symbolic link (to another chunk of IN, or to a chunk of the older OUT it would replace):
    `apply --dask` exits 2 with one line naming the chunk, and relu_zarr raises the same,
    before any Dask work and within a time limit; IN and OUT (created or older) as they were."""
    make_zarr_store(tmp_path / "x.zarr")
    chunk = tmp_path / "x.zarr" / "c" / "1"
    chunk.unlink()
    kind = "pipe or FIFO"
    if entry == "fifo":
        os.mkfifo(chunk)
    else:
        kind = "symbolic link"
        make_zarr_store(tmp_path / "y.zarr")  # an older OUT, to be replaced
        os.symlink("0" if entry == "symlink-in" else "../../y.zarr/c/1", chunk)

    def state() -> dict[str, object]:  # (folder_state would read the FIFO, and wait)
        return {
            str(p): p.read_bytes() if p.is_file() else p.lstat().st_mode
            for p in sorted(tmp_path.rglob("*"))
        }

    before = state()
    out = "y.zarr"
    done = run_cli("apply", "x.zarr", out, "--dask", cwd=tmp_path, timeout=60)
    line = assert_cli_error(done, 2, "IN 'x.zarr' holds '")
    assert f"x.zarr/c/1', a {kind}: only regular files and folders are read" in line, line
    error = within(20, lambda: relu_zarr(tmp_path / "x.zarr", tmp_path / out))
    assert isinstance(error, UnsupportedPathError), repr(error)
    assert f"src {str(tmp_path / 'x.zarr')!r} holds {str(chunk)!r}, a {kind}" in str(error)
    assert state() == before  # IN, and OUT where it existed, as they were


def test_a_zarr_store_of_regular_files_is_still_processed(tmp_path):
    """The check refuses nothing ordinary: a store of folders and chunk files, IN reached
    through a symbolic link to the store itself, is processed."""
    values = make_zarr_store(tmp_path / "x.zarr")
    os.symlink("x.zarr", tmp_path / "lx.zarr")
    done = run_cli("apply", "lx.zarr", "y.zarr", "--dask", cwd=tmp_path, timeout=300)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), done.stderr
    import zarr

    result = zarr.open_array(tmp_path / "y.zarr", mode="r")[...]
    assert result.tolist() == np.maximum(values, 0).tolist()


def test_legalize_never_replaces_its_model(tmp_path):
    """``legalize m.onnx OUT`` with OUT the model by any path (its name, a link): exit 2, one
    line naming both, the model unchanged."""
    pytest.importorskip("onnx")
    import onnx

    from tests.support.onnx_models import relu_model

    onnx.save(relu_model("float32", 14), tmp_path / "m.onnx")
    os.symlink("m.onnx", tmp_path / "link.onnx")
    before = folder_state(tmp_path)
    for out in ("m.onnx", "link.onnx"):
        done = run_cli("legalize", "m.onnx", out, cwd=tmp_path)
        assert_cli_error(done, 2, f"OUT {out!r} is MODEL 'm.onnx' itself (the same regular file")
        assert folder_state(tmp_path) == before


@pytest.mark.parametrize("engine", ["onnx-relu", "onnxruntime"])
def test_run_never_writes_an_output_over_its_input(tmp_path, engine):
    """``run m.onnx -i X=o/Y.npy -o o``, whose output Y would be written over its own input
    (by its name or through a link): exit 2 before the model runs, one line naming both; the
    input unchanged."""
    pytest.importorskip("onnx")
    if engine == "onnxruntime":
        pytest.importorskip("onnxruntime")
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("Relu", ["X"], ["Y"])
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [12])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [12])],
    )
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), tmp_path / "m.onnx"
    )
    (tmp_path / "o").mkdir()
    write_tensor(tmp_path / "o" / "Y.npy", X)
    os.symlink("o/Y.npy", tmp_path / "x.npy")
    before = folder_state(tmp_path)
    for given in ("o/Y.npy", "x.npy"):
        done = run_cli(
            "run", "m.onnx", "--engine", engine, "-i", f"X={given}", "-o", "o", cwd=tmp_path
        )
        assert_cli_error(
            done, 2, f"output file 'o/Y.npy' is input file {given!r} itself (the same regular file"
        )
        assert folder_state(tmp_path) == before
