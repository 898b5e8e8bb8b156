"""relu_file, the library function behind ``onnx-relu apply``: many windows with
an uneven last one, every type and layout, in place, and its argument checks."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest

from onnx_relu import UnsupportedTypeError, read_tensor, write_tensor
from onnx_relu.files import relu_file
from tests.support.dtypes import TYPE_NAMES, relu_type
from tests.support.oracle import expected_relu, same_bits
from tests.support.values import mixed_values


def values(type_name: str) -> np.ndarray:
    return mixed_values(relu_type(type_name).dtype, 1001).reshape(7, 11, 13)


@pytest.mark.parametrize("in_place", [False, True], ids=["to OUT", "in place"])
@pytest.mark.parametrize("type_name", TYPE_NAMES)
def test_many_windows_every_type(tmp_path, type_name, in_place):
    x = values(type_name)
    write_tensor(tmp_path / "x.npy", x)
    chunk_bytes = 96 * x.dtype.itemsize + 3  # 96 elements a window; 1001 leaves 41 at the end
    seen = []
    if in_place:
        relu_file(
            tmp_path / "x.npy",
            in_place=True,
            chunk_bytes=chunk_bytes,
            progress=lambda done, total: seen.append((done, total)),
        )
        result = read_tensor(tmp_path / "x.npy")
    else:
        relu_file(
            tmp_path / "x.npy",
            tmp_path / "y.npy",
            chunk_bytes=chunk_bytes,
            progress=lambda done, total: seen.append((done, total)),
        )
        result = read_tensor(tmp_path / "y.npy")
        assert same_bits(read_tensor(tmp_path / "x.npy"), x)
    assert same_bits(result, expected_relu(x))
    assert len(seen) == 1 + 11 and seen[0] == (0, x.nbytes) and seen[-1] == (x.nbytes, x.nbytes)


@pytest.mark.parametrize(
    "layout",
    ["fortran", "byte-swapped", "fortran byte-swapped", "0-d", "empty"],
)
def test_layouts_are_kept(tmp_path, layout):
    x = values("float32")
    if "fortran" in layout:
        x = np.asfortranarray(x)
    if "byte-swapped" in layout:
        x = x.astype(">f4")
    if layout == "0-d":
        x = x.reshape(-1)[7].reshape(())
    if layout == "empty":
        x = x[:, :0]
    write_tensor(tmp_path / "x.npy", x)
    relu_file(tmp_path / "x.npy", tmp_path / "y.npy", chunk_bytes=100)
    y = read_tensor(tmp_path / "y.npy")
    assert y.dtype == x.dtype and y.flags.f_contiguous == x.flags.f_contiguous
    assert same_bits(y, expected_relu(x).astype(x.dtype))
    header = (tmp_path / "x.npy").read_bytes()[:128]
    assert (tmp_path / "y.npy").read_bytes()[:128] == header  # the header is copied as it was


def test_npy_format_version_2_is_read(tmp_path):
    x = values("int16")
    with open(tmp_path / "x.npy", "wb") as file:
        np.lib.format.write_array(file, x, version=(2, 0))
    assert (tmp_path / "x.npy").read_bytes()[6:8] == b"\x02\x00"
    relu_file(tmp_path / "x.npy", tmp_path / "y.npy", chunk_bytes=64)
    assert same_bits(read_tensor(tmp_path / "y.npy"), expected_relu(x))


def test_refused_type_writes_nothing(tmp_path):
    write_tensor(tmp_path / "x.npy", np.array([-1, 2], dtype=np.int8))
    with pytest.raises(UnsupportedTypeError, match="Relu-6"):
        relu_file(tmp_path / "x.npy", tmp_path / "y.npy", opset=6)
    with pytest.raises(UnsupportedTypeError):
        relu_file(tmp_path / "x.npy", in_place=True, opset=13)
    assert os.listdir(tmp_path) == ["x.npy"]
    assert np.array_equal(read_tensor(tmp_path / "x.npy"), [-1, 2])


def test_argument_checks(tmp_path):
    write_tensor(tmp_path / "x.npy", np.zeros(2))
    write_tensor(tmp_path / "x.pb", np.zeros(2))
    with pytest.raises(ValueError, match="in-place needs a .npy file"):
        relu_file(tmp_path / "x.pb", in_place=True)
    with pytest.raises(ValueError, match="pass no dst"):
        relu_file(tmp_path / "x.npy", tmp_path / "y.npy", in_place=True)
    with pytest.raises(ValueError, match="dst is required"):
        relu_file(tmp_path / "x.npy")
    with pytest.raises(ValueError, match="chunk_bytes"):
        relu_file(tmp_path / "x.npy", tmp_path / "y.npy", chunk_bytes=0)


def test_header_checks_see_truncation_before_writing(tmp_path):
    buffer = io.BytesIO()
    np.save(buffer, np.arange(1000, dtype=np.float64))
    (tmp_path / "x.npy").write_bytes(buffer.getvalue()[:-8])
    from onnx_relu import InvalidTensorFileError

    with pytest.raises(InvalidTensorFileError, match="truncated"):
        relu_file(tmp_path / "x.npy", tmp_path / "y.npy")
    assert os.listdir(tmp_path) == ["x.npy"]


#: Run in a child: ``onnx-relu apply IN OUT`` counting the opens of x.npy (audit hook), the
#: duplications of descriptor 0 (how '-' is opened) and the .npy headers parsed.
COUNT_OPENS_AND_PARSES = """\
import os, sys
opens, dups, parses = [], [], []
def hook(event, args):
    if event == 'open' and isinstance(args[0], str) and args[0].endswith('x.npy'):
        opens.append(args[0])
sys.addaudithook(hook)
real_dup = os.dup
def dup(fd):
    if fd == 0:
        dups.append(fd)
    return real_dup(fd)
os.dup = dup
from onnx_relu.files import npy, plan
real_header = npy.read_npy_header
def counted_header(*args, **kwargs):
    parses.append(1)
    return real_header(*args, **kwargs)
npy.read_npy_header = plan.read_npy_header = counted_header
from onnx_relu.cli import main
status = main(['apply', '-q', sys.argv[1], sys.argv[2]])
print(len(opens), len(dups), len(parses), status, file=sys.stderr)
"""


@pytest.mark.parametrize(
    "in_name,out_name",
    [("x.npy", "y.npy"), ("x.npy", "y.pb"), ("x.npy", "-"), ("-", "y.npy"), ("-", "y.pb")],
)
def test_apply_opens_and_parses_in_once(tmp_path, in_name, out_name):
    """``onnx-relu apply IN OUT`` opens IN once (x.npy by name, or standard input as one
    duplicate of descriptor 0) and parses its header once, whatever OUT's format, '-' included
    on either side."""
    import subprocess
    import sys

    if out_name == "y.pb":
        pytest.importorskip("onnx")
    x = values("float32")
    write_tensor(tmp_path / "x.npy", x)
    with open(tmp_path / "x.npy", "rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-c", COUNT_OPENS_AND_PARSES, in_name, out_name],
            cwd=tmp_path,
            stdin=stdin,
            capture_output=True,
            timeout=120,
        )
    stdio = in_name == "-"
    expected = ["0" if stdio else "1", "1" if stdio else "0", "1", "0"]
    assert done.stderr.decode().split() == expected, done.stderr
    written = done.stdout if out_name == "-" else None
    if written is None:
        assert same_bits(read_tensor(tmp_path / out_name), expected_relu(x))
    else:
        assert same_bits(np.load(io.BytesIO(written)), expected_relu(x))


# Counts, per file name, the calls that look at a path (os.stat, os.lstat, os.access: what
# os.path.exists, isdir, islink and realpath call too) while the command runs.
COUNT_PATH_LOOKS = """\
import collections, os, sys
looks = collections.Counter()
def counted(real):
    def look(path, *args, **kwargs):
        if isinstance(path, (str, os.PathLike)):
            looks[os.path.basename(os.fspath(path))] += 1
        return real(path, *args, **kwargs)
    return look
os.stat, os.lstat, os.access = counted(os.stat), counted(os.lstat), counted(os.access)
from onnx_relu.cli import main
status = main(['apply', '-q', sys.argv[1], sys.argv[2]])
print(status, looks[sys.argv[1]], looks[sys.argv[2]], file=sys.stderr)
"""


@pytest.mark.parametrize("out_exists", [False, True], ids=["new-out", "replaced-out"])
def test_apply_looks_at_each_path_at_most_twice(tmp_path, out_exists):
    """``onnx-relu apply IN OUT`` classifies each path once (:class:`onnx_relu.io.endpoint.
    Endpoint`): IN is looked at twice (its classification and the readable check), OUT twice
    (its classification and the look just before the rename that replaces it)."""
    import subprocess
    import sys

    write_tensor(tmp_path / "x.npy", values("float32"))
    if out_exists:
        write_tensor(tmp_path / "y.npy", values("float32"))
    done = subprocess.run(
        [sys.executable, "-c", COUNT_PATH_LOOKS, "x.npy", "y.npy"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    status, in_looks, out_looks = (int(word) for word in done.stderr.split())
    assert (status, in_looks, out_looks) == (0, 2, 2), done.stderr
    assert same_bits(read_tensor(tmp_path / "y.npy"), expected_relu(values("float32")))


def test_in_place_with_dask_is_refused(tmp_path):
    """The plan words its refusal with its own parameters' names; a caller with other names
    for them (the command line's) words the same error with its own."""
    import pickle

    from onnx_relu.errors import FileArgumentError
    from onnx_relu.files.plan import OptionError, plan_apply

    with pytest.raises(OptionError) as raised:
        with plan_apply(tmp_path / "in.zarr", in_place=True, dask=True):
            pass
    assert isinstance(raised.value, FileArgumentError)
    assert str(raised.value) == "in_place=True works on .npy files, not with dask"
    names = {"dst": "OUT", "in_place": "--in-place", "dask": "--dask"}
    assert raised.value.worded(names) == "--in-place works on .npy files, not with --dask"
    copy = pickle.loads(pickle.dumps(raised.value))
    assert (str(copy), copy.worded(names)) == (str(raised.value), raised.value.worded(names))


def test_an_option_error_keeps_the_paths_as_they_are(tmp_path):
    """Braces in a path are the path's, not places for names."""
    from onnx_relu.files.plan import OptionError, plan_apply

    src = str(tmp_path / "{dask}{0}.npy")
    with pytest.raises(OptionError) as raised:
        with plan_apply(src, tmp_path / "y.zarr", dask=True):
            pass
    assert str(raised.value) == f"with dask, src must be a Zarr store named *.zarr, got {src!r}"
    worded = raised.value.worded({"dst": "OUT", "in_place": "--in-place", "dask": "--dask"})
    assert worded == f"with --dask, src must be a Zarr store named *.zarr, got {src!r}"


def test_the_plan_takes_none_of_the_command_lines_presentation():
    """The command line's labels, ``-`` and early path checks travel on the endpoints it
    passes, and its option names only word the plan's errors: ``plan_apply`` has no
    parameter for any of them."""
    import inspect

    from onnx_relu.files.plan import plan_apply

    parameters = set(inspect.signature(plan_apply).parameters)
    assert not parameters & {"names", "check_paths", "dash_is_stdio"}, parameters


@pytest.mark.parametrize("out_name", ["y.npy", "y.pb"])
def test_out_is_decided_once_by_the_plan_and_carried_out_as_decided(
    tmp_path, monkeypatch, out_name
):
    """OUT's format and how it is written are one value of the plan (a Destination); the job
    and the writers carry it out without judging OUT's kind of path again."""
    from onnx_relu.files.plan import plan_apply
    from onnx_relu.io.endpoint import Destination, Endpoint, Written

    if out_name.endswith(".pb"):
        pytest.importorskip("onnx")
    x = tmp_path / "x.npy"
    write_tensor(x, np.array([-1.0, 2.0], dtype=np.float32))
    judged = []
    original = Endpoint.require_output_kind

    def counted(self, **kwargs):
        judged.append(self.path)
        return original(self, **kwargs)

    monkeypatch.setattr(Endpoint, "require_output_kind", counted)
    with plan_apply(x, tmp_path / out_name) as plan:
        assert isinstance(plan.destination, Destination)
        assert plan.destination.written is Written.ATOMIC_FILE
        assert plan.destination.format == out_name[2:]
        assert plan.job.destination is plan.destination
        plan.run()
    assert judged == [str(tmp_path / out_name)]
    assert read_tensor(tmp_path / out_name).tolist() == [0.0, 2.0]


def test_a_zarr_out_is_decided_once_as_an_atomic_folder_store(tmp_path, monkeypatch):
    """With dask, OUT is decided by the plan as an atomic folder store; the job carries that
    value to the writer, which does not judge the store rule again."""
    from onnx_relu.files.jobs import zarr_output
    from onnx_relu.files.plan import plan_apply
    from onnx_relu.io.endpoint import Destination, Written

    (tmp_path / "x.zarr").mkdir()
    judged = []
    original = zarr_output.store_replacement_refusal

    def counted(path):
        judged.append(os.fspath(path))
        return original(path)

    monkeypatch.setattr(zarr_output, "store_replacement_refusal", counted)
    from onnx_relu.files import plan as plan_module

    monkeypatch.setattr(plan_module, "store_replacement_refusal", counted)
    with plan_apply(tmp_path / "x.zarr", tmp_path / "y.zarr", dask=True) as plan:
        assert isinstance(plan.destination, Destination)
        assert plan.destination.written is Written.ATOMIC_STORE
        assert plan.destination.format == "zarr"
        assert plan.job.destination is plan.destination
        with zarr_output.atomic_directory(plan.destination, sync_tree=None) as temporary:
            os.mkdir(os.path.join(temporary, "inside"))
    assert judged == [str(tmp_path / "y.zarr")]
    assert os.listdir(tmp_path / "y.zarr") == ["inside"]
    with pytest.raises(ValueError, match="not a store"):
        with zarr_output.atomic_directory(
            Destination(plan.source, Written.ATOMIC_FILE), sync_tree=None
        ):
            pass
