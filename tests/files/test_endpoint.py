"""Each path classified once (``onnx_relu.io.endpoint.Endpoint``): its kind, label, link and
``stat``, and the rules every command applies to it."""

from __future__ import annotations

import os
import stat

import pytest

from onnx_relu.errors import FileArgumentError, UnsupportedPathError
from onnx_relu.io.endpoint import Endpoint, PathKind


def test_a_link_is_classified_as_its_target_and_described_as_a_link(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    os.symlink(tmp_path / "pipe", tmp_path / "link")
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    link = Endpoint.of(tmp_path / "link", "IN")
    assert (link.kind, link.is_link) == (PathKind.FIFO, True)
    assert stat.S_ISFIFO(link.stat.st_mode)  # the target's stat, not the link's
    assert "a symbolic link to" in link.description and "a FIFO" in link.description
    dangling = Endpoint.of(tmp_path / "dangling", "IN")
    assert (dangling.kind, dangling.is_link, dangling.stat) == (PathKind.DANGLING_LINK, True, None)
    with pytest.raises(FileArgumentError, match="does not exist"):
        dangling.require_readable()


def test_dash_is_standard_input_or_output_only_where_allowed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert Endpoint.of("-", "IN", stdio="input").label == "standard input"
    out = Endpoint.of("-", "OUT", stdio="output")
    assert (out.label, out.is_stdio, out.stat) == ("standard output", True, None)
    assert Endpoint.of("-", "OUT").kind is PathKind.MISSING  # a file named '-'


def test_an_endpoint_is_a_path_and_its_rules_name_its_role(tmp_path):
    model = Endpoint.of(tmp_path / "m.onnx", "MODEL")
    assert os.fspath(model) == str(tmp_path / "m.onnx")
    with pytest.raises(FileArgumentError, match=r"^MODEL '.*m\.onnx' does not exist$"):
        model.require_readable()
    os.mkfifo(tmp_path / "m.onnx")
    with pytest.raises(UnsupportedPathError, match=r"^MODEL '.*' \(a FIFO\) is not a regular file"):
        Endpoint.of(tmp_path / "m.onnx", "MODEL").require_model_file()
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(FileArgumentError, match="exists and is not a folder"):
        Endpoint.of(tmp_path / "file", "-o").require_creatable_folder()
    Endpoint.of(tmp_path / "new" / "deeper", "-o").require_creatable_folder()  # can be created
