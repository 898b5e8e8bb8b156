"""What a replaced OUT keeps and what a stopped writer leaves (issue 30, items 3 and 4): every
signal whose default action ends the process removes the temporary, a later write of the same
OUT removes temporaries no live process holds, and a replaced OUT keeps its owner, group and
mode (tests that give files to another user run as root, as CI does)."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from onnx_relu import read_tensor, write_tensor
from onnx_relu.files.jobs.zarr_output import atomic_directory
from onnx_relu.io import atomic as _atomic
from onnx_relu.io.atomic import TEMP_SUFFIX, atomic_file
from tests.support.cli import SCRIPT, run_cli

OTHER = (54321, 54322)  # a user and group that exist nowhere: only root can give files to them
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file away")

X = np.arange(-8, 8, dtype=np.float32)


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def temporaries(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.endswith(TEMP_SUFFIX))


def start_apply_from_stdin(folder: Path, out: str = "y.npy", preexec_fn=None):
    """``apply - OUT`` fed half a .npy: it has created its temporary and waits for the rest."""
    data = npy_bytes(np.arange(1 << 20, dtype=np.float32))
    process = subprocess.Popen(
        [SCRIPT, "apply", "-", out],
        cwd=folder,
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=preexec_fn,
    )
    process.stdin.write(data[: len(data) // 2])
    process.stdin.flush()
    deadline = time.monotonic() + 60
    while not temporaries(folder):
        assert time.monotonic() < deadline and process.poll() is None, "no temporary appeared"
        time.sleep(0.01)
    return process, data[len(data) // 2 :]


FATAL_SIGNALS = [
    name
    for name in (
        "SIGHUP", "SIGQUIT", "SIGALRM", "SIGUSR1", "SIGUSR2", "SIGXCPU", "SIGVTALRM",
        "SIGPROF", "SIGIO", "SIGPWR",
    )
    if hasattr(signal, name)
] + ["SIGRTMIN+3"]  # fmt: skip


def signal_number(name: str) -> int:
    if name.startswith("SIGRTMIN+"):
        return signal.SIGRTMIN + int(name.split("+")[1])
    return int(getattr(signal, name))


@pytest.mark.parametrize("name", FATAL_SIGNALS)
def test_every_fatal_signal_removes_the_temporary_and_keeps_the_old_out(tmp_path, name):
    (tmp_path / "y.npy").write_bytes(b"the previous result")
    process, _rest = start_apply_from_stdin(tmp_path)
    process.send_signal(signal_number(name))
    _, stderr = process.communicate(timeout=60)
    stderr = stderr.decode()
    assert process.returncode == 128 + signal_number(name), stderr
    assert f"interrupted by {name}; OUT was not written" in stderr
    assert "Traceback" not in stderr and len(stderr.splitlines()) == 1, stderr
    assert os.listdir(tmp_path) == ["y.npy"]
    assert (tmp_path / "y.npy").read_bytes() == b"the previous result"


def test_a_signal_ignored_at_start_stays_ignored(tmp_path):
    # nohup ignores SIGHUP: the command must not turn it into a stop
    process, rest = start_apply_from_stdin(
        tmp_path, preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN)
    )
    process.send_signal(signal.SIGHUP)
    time.sleep(0.2)
    assert process.poll() is None
    _, stderr = process.communicate(rest, timeout=60)
    assert process.returncode == 0, stderr
    assert read_tensor(tmp_path / "y.npy").size == 1 << 20


def age(path: Path, seconds: float = 60.0) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_later_write_removes_temporaries_no_live_process_holds(tmp_path):
    process, _rest = start_apply_from_stdin(tmp_path)
    process.kill()  # SIGKILL: no cleanup is possible
    process.communicate(timeout=60)
    [left] = temporaries(tmp_path)
    age(tmp_path / left)
    write_tensor(tmp_path / "x.npy", X)
    done = run_cli("apply", tmp_path / "x.npy", tmp_path / "y.npy")
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(tmp_path)) == ["x.npy", "y.npy"]
    # through the library too, and for .pb, legalize's and run's writes (all atomic_file)
    for out in ("y.npy", "z.pb"):
        stray = tmp_path / f".{out}.0123456789ab{TEMP_SUFFIX}"
        stray.write_bytes(b"left by a killed writer")
        age(stray)
        write_tensor(tmp_path / out, X)
        assert not stray.exists()


def test_a_live_writers_temporary_and_other_outs_temporaries_are_left_alone(tmp_path):
    process, rest = start_apply_from_stdin(tmp_path)
    [live] = temporaries(tmp_path)
    age(tmp_path / live)  # old, but its writer holds it
    other = tmp_path / f".other.npy.0123456789ab{TEMP_SUFFIX}"
    other.write_bytes(b"another OUT's")
    age(other)
    fresh = tmp_path / f".y.npy.ba9876543210{TEMP_SUFFIX}"
    fresh.write_bytes(b"just created, not yet locked")
    write_tensor(tmp_path / "y.npy", X)  # a second writer of the same OUT
    assert (tmp_path / live).exists() and other.exists() and fresh.exists()
    _, stderr = process.communicate(rest, timeout=60)
    assert process.returncode == 0, stderr
    assert not (tmp_path / live).exists()


def give_away(path: Path, mode: int = 0o640) -> None:
    os.chown(path, *OTHER)
    os.chmod(path, mode)


def owner_and_mode(path: Path) -> tuple[int, int, int]:
    status = os.stat(path)
    return status.st_uid, status.st_gid, stat.S_IMODE(status.st_mode)


@needs_root
@pytest.mark.parametrize("suffix", [".npy", ".pb"])
def test_apply_keeps_the_replaced_outs_owner_group_and_mode(tmp_path, suffix):
    write_tensor(tmp_path / "x.npy", X)
    out = tmp_path / f"y{suffix}"
    out.write_bytes(b"theirs")
    give_away(out)
    done = run_cli("apply", tmp_path / "x.npy", out)
    assert done.returncode == 0, done.stderr
    assert owner_and_mode(out) == (*OTHER, 0o640)
    assert read_tensor(out).tolist() == np.maximum(X, 0).tolist()


@needs_root
def test_run_and_legalize_keep_the_replaced_outs_owner_group_and_mode(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["X"], ["Y"])],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [16])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [16])],
    )
    model = tmp_path / "m.onnx"
    model.write_bytes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]).SerializeToString()
    )
    write_tensor(tmp_path / "x.npy", X)
    (tmp_path / "o").mkdir()
    out = tmp_path / "o" / "Y.npy"
    out.write_bytes(b"theirs")
    give_away(out, 0o604)
    done = run_cli("run", model, "-i", f"X={tmp_path / 'x.npy'}", "-o", tmp_path / "o")
    assert done.returncode == 0, done.stderr
    assert owner_and_mode(out) == (*OTHER, 0o604)
    legal = tmp_path / "legal.onnx"
    legal.write_bytes(b"theirs")
    give_away(legal, 0o600)
    done = run_cli("legalize", model, legal)
    assert done.returncode == 0, done.stderr
    assert owner_and_mode(legal) == (*OTHER, 0o600)
    onnx.load(str(legal))


@needs_root
def test_a_replaced_zarr_store_keeps_its_owner_group_and_mode_throughout(tmp_path):
    store = tmp_path / "y.zarr"
    store.mkdir()
    (store / "zarr.json").write_text("{}")
    give_away(store, 0o750)
    with atomic_directory(store) as temporary:
        os.mkdir(os.path.join(temporary, "c"))
        Path(temporary, "zarr.json").write_text('{"new": 1}')
        Path(temporary, "c", "0").write_bytes(b"chunk")
    assert owner_and_mode(store) == (*OTHER, 0o750)
    for entry in (store / "zarr.json", store / "c", store / "c" / "0"):
        assert os.stat(entry)[4:6] == OTHER, entry


def test_an_owner_the_process_may_not_set_is_said_in_one_warning(tmp_path, monkeypatch):
    out = tmp_path / "y.bin"
    out.write_bytes(b"old")
    monkeypatch.setattr(_atomic, "_owner", lambda found: OTHER)

    def refuse(*_args):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "fchown", refuse)
    with pytest.warns(RuntimeWarning, match=r"replaced by a file of user \d+ \(owner 54321:54322"):
        with atomic_file(out) as file:
            file.write(b"new")
    assert out.read_bytes() == b"new"


# --- issue 35, item 4: what a user who cannot replace OUT is told ---------------------------------
#
# Run as user ``nobody`` inside this process (``seteuid``, undone after the call): the
# interpreter may live where nobody cannot read it (root's home), so a child process run as
# nobody cannot always start. Each call is made once as root first, so that every module it
# imports is loaded before the user changes.

NOBODY = 65534


@contextlib.contextmanager
def as_nobody() -> Iterator[None]:
    """This process's effective user and group are ``nobody`` inside the block."""
    os.setegid(NOBODY)
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


@pytest.fixture
def shared_folder():
    """A folder under /tmp that user ``nobody`` can reach (pytest's own is root's, mode 700):
    yields a function that makes a subfolder of the given mode and owner."""
    import shutil
    import tempfile

    if os.geteuid() != 0:
        pytest.skip("acting as another user needs root")
    top = Path(tempfile.mkdtemp(prefix="onnx-relu-owners-", dir="/tmp"))
    os.chmod(top, 0o755)

    def make(name: str, mode: int, owner: int = 0) -> Path:
        folder = top / name
        folder.mkdir()
        os.chown(folder, owner, owner)
        os.chmod(folder, mode)
        return folder

    try:
        yield make
    finally:
        shutil.rmtree(top)


def apply_in_process(folder: Path, capfd, *args: str) -> tuple[int, str]:
    """``onnx-relu apply ARGS`` run by :func:`onnx_relu.cli.main` in ``folder``: its status
    and standard error."""
    from onnx_relu.cli import main

    capfd.readouterr()
    previous = os.getcwd()
    os.chdir(folder)
    try:
        status = main(["apply", *args])
    finally:
        os.chdir(previous)
    return status, capfd.readouterr().err


def test_a_user_who_cannot_replace_out_in_a_sticky_folder_is_told_the_truth(shared_folder, capfd):
    """User nobody runs ``apply sticky/x.npy sticky/y.npy``, ``y.npy`` root's (mode 666) in a
    mode-1777 folder: the command refuses before writing, in one line naming OUT and saying it
    is unchanged, and no Python warning text; ``relu_file`` (which does not check first) fails
    at the rename with an error naming OUT, not the removed temporary, and no "was replaced"
    warning. OUT, its owner and the folder are as before."""
    import warnings

    from onnx_relu.files import relu_file

    warm = shared_folder("warm", 0o755)
    write_tensor(warm / "x.npy", X)
    assert apply_in_process(warm, capfd, "x.npy", "y.npy") == (0, "")
    sticky = shared_folder("sticky", 0o1777)
    write_tensor(sticky / "x.npy", X)
    (sticky / "y.npy").write_bytes(b"root's")
    os.chmod(sticky / "y.npy", 0o666)
    os.chmod(sticky / "x.npy", 0o644)
    before = sorted(os.listdir(sticky))
    with as_nobody():
        status, err = apply_in_process(sticky, capfd, "x.npy", "y.npy")
    assert status == 2, err
    assert err.splitlines() == [
        "onnx-relu apply: error: cannot replace OUT 'y.npy': it is user 0's, in the sticky"
        f" folder {str(sticky)!r} (mode 1777), where only the owner of an entry or of the folder"
        " may replace it; OUT left unchanged"
    ], err
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with as_nobody(), pytest.raises(PermissionError) as raised:
            relu_file(sticky / "x.npy", sticky / "y.npy")
    assert caught == []  # no "was replaced" warning
    assert str(raised.value) == (
        f"[Errno 1] cannot be replaced (Operation not permitted: {str(sticky)!r} is a sticky"
        " folder (mode 1777), where only the owner of an entry (here user 0) or of the folder"
        f" may replace it); it is unchanged: {str(sticky / 'y.npy')!r}"
    ), str(raised.value)
    assert (sticky / "y.npy").read_bytes() == b"root's"
    assert os.stat(sticky / "y.npy")[4:6] == (0, 0)
    assert sorted(os.listdir(sticky)) == before  # no temporary left


def test_an_owner_not_kept_is_one_warning_line_from_the_command(shared_folder, capfd):
    """User nobody replaces root's ``y.npy`` in a folder of its own: the file is replaced
    (exit 0) and the owner it could not keep is said in one ``onnx-relu: warning:`` line,
    after the replacement, with none of Python's warning display."""
    import warnings

    warm = shared_folder("warm", 0o755)
    write_tensor(warm / "x.npy", X)
    assert apply_in_process(warm, capfd, "x.npy", "y.npy") == (0, "")
    own = shared_folder("own", 0o755, NOBODY)
    write_tensor(own / "x.npy", X)
    (own / "y.npy").write_bytes(b"root's")
    os.chmod(own / "y.npy", 0o644)
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # (as a fresh process shows it)
        with as_nobody():
            status, err = apply_in_process(own, capfd, "x.npy", "y.npy")
    assert status == 0, err
    assert err.splitlines() == [
        f"onnx-relu: warning: {str(own / 'y.npy')!r} was replaced by a file of user {NOBODY}"
        " (owner 0:0 not kept): only root may give a file to another user"
    ], err
    assert read_tensor(own / "y.npy").tolist() == np.maximum(X, 0).tolist()


def test_a_store_that_cannot_be_replaced_in_a_sticky_folder_is_named_and_kept(shared_folder):
    """The folder writer (a Zarr store, ``atomic_directory``) goes through the same replacement
    as a file: user nobody cannot replace root's store in a sticky folder, and is told so
    naming the store, not a temporary; the store is as it was, no temporary remains, and no
    "was replaced" warning is given."""
    import warnings

    sticky = shared_folder("sticky", 0o1777)
    store = sticky / "y.zarr"
    store.mkdir()
    (store / "zarr.json").write_text('{"old": 1}')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with as_nobody(), pytest.raises(PermissionError) as raised:
            with atomic_directory(store) as temporary:
                Path(temporary, "zarr.json").write_text('{"new": 1}')
    assert caught == []
    assert str(raised.value).endswith(f"; it is unchanged: {str(store)!r}"), str(raised.value)
    assert "is a sticky folder (mode 1777)" in str(raised.value)
    assert sorted(os.listdir(sticky)) == ["y.zarr"]
    assert (store / "zarr.json").read_text() == '{"old": 1}'
