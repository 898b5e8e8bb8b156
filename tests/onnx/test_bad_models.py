"""Bad ONNX models and bad model inputs: rows of docs/reliability.md.

Each refusal is checked through the Python API (``check_model``, ``backend.prepare`` /
``run``, ``legalize``) and the commands (``onnx-relu check``, ``run``, ``legalize``, as
subprocesses of the installed program): the exception type or exit status, the words of the
message, and that nothing was lost: the model and input files byte-identical, no output folder
or partial output created, an existing OUT unchanged, the caller's arrays and ModelProto as
they were.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")  # `make test` installs onnx and onnxruntime
from onnx import TensorProto, helper  # noqa: E402

from onnx_relu import backend, check_model, legalize  # noqa: E402
from onnx_relu.errors import (  # noqa: E402
    InputTypeMismatchError,
    InvalidModelError,
    ModelInputError,
    UnsupportedTypeError,
)
from onnx_relu.files import write_tensor  # noqa: E402
from tests.support.cli import assert_cli_error, folder_state, run_cli  # noqa: E402
from tests.support.values import mixed_values  # noqa: E402

PREVIOUS_OUT = b"the previous model, which a refusal must leave alone"


def chain_model(
    elem_type: int = TensorProto.FLOAT,
    opset: int = 14,
    *,
    inputs: int = 1,
    initializers: tuple[TensorProto, ...] = (),
) -> onnx.ModelProto:
    """X (and X2, ...) -> Relu "first" -> Y -> Relu "second" -> Z; outputs Y and Z."""
    names = ["X"] + [f"X{i}" for i in range(2, inputs + 1)]
    nodes = [
        helper.make_node("Relu", ["X"], ["Y"], name="first"),
        helper.make_node("Relu", ["Y"], ["Z"], name="second"),
    ]
    nodes += [
        helper.make_node("Relu", [name], [f"{name}_out"], name=f"relu_{name}") for name in names[1:]
    ]
    graph = helper.make_graph(
        nodes,
        "chain",
        [
            helper.make_tensor_value_info(name, elem_type, ["n"])
            for name in names
            if name not in {t.name for t in initializers}
        ],
        [
            helper.make_tensor_value_info(name, elem_type, ["n"])
            for name in ["Y", "Z"] + [f"{n}_out" for n in names[1:]]
        ],
        initializer=list(initializers),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


GOOD_MODEL = chain_model().SerializeToString()
X = mixed_values(np.dtype(np.float32), 8)
X64 = np.linspace(-2.0, 2.0, 8)  # float64, where the model declares float


@pytest.fixture
def files(tmp_path) -> Path:
    """A folder with a good input file and an existing OUT that refusals must leave alone."""
    write_tensor(tmp_path / "x.npy", X)
    (tmp_path / "out.onnx").write_bytes(PREVIOUS_OUT)
    return tmp_path


def refused_by_every_command(
    folder: Path, model: Path, status: int, fragment: str, check_status: int | None = None
) -> None:
    """check, run and legalize all refuse ``model`` and change nothing in ``folder``."""
    before = folder_state(folder)
    assert_cli_error(run_cli("check", model), check_status or status, fragment)
    assert_cli_error(
        run_cli("run", model, "-i", f"X={folder / 'x.npy'}", "-o", folder / "o"), status, fragment
    )
    assert_cli_error(run_cli("legalize", model, folder / "out.onnx"), status, fragment)
    assert folder_state(folder) == before  # no "o" folder, OUT unchanged, no temporary


def refused_by_every_function(
    source: object,
    error: type[Exception],
    fragment: str,
    functions=(check_model, backend.prepare, legalize),
) -> None:
    for function in functions:
        with pytest.raises(error) as raised:
            function(source)
        assert fragment in str(raised.value), (function.__name__, str(raised.value))


# ---------------------------------------------------------------------------------------------
# Corrupt, truncated and empty .onnx files
# ---------------------------------------------------------------------------------------------

CORRUPT_MODELS = {
    "empty": (b"", "is not an ONNX model: it has no IR version or no graph"),
    "truncated": (GOOD_MODEL[: len(GOOD_MODEL) // 2], "is not a readable ONNX model"),
    "truncated-by-one-byte": (GOOD_MODEL[:-1], "is not a readable ONNX model"),
    "random-bytes": (bytes(range(256))[::-1] * 2, "is not a readable ONNX model"),
    "text": (b"ir_version: 8\ngraph { }\n", "is not a readable ONNX model"),
    "a-tensor-file": (
        TensorProto(data_type=TensorProto.FLOAT, dims=[2], raw_data=bytes(8)).SerializeToString(),
        "is not an ONNX model: it has no IR version or no graph",
    ),
}


@pytest.mark.parametrize(
    ("content", "message"), list(CORRUPT_MODELS.values()), ids=list(CORRUPT_MODELS)
)
def test_corrupt_model_file_is_refused(files, content, message):
    model = files / "m.onnx"
    model.write_bytes(content)
    before = folder_state(files)
    refused_by_every_function(model, InvalidModelError, message)
    refused_by_every_function(content, InvalidModelError, message)  # the same bytes, in memory
    assert issubclass(InvalidModelError, ValueError)
    assert folder_state(files) == before
    refused_by_every_command(files, model, 2, message)


def test_model_with_a_corrupt_initializer_is_refused(files):
    broken = TensorProto(name="X", data_type=TensorProto.FLOAT, dims=[3], raw_data=bytes(8))
    model = files / "m.onnx"
    model.write_bytes(chain_model(initializers=(broken,)).SerializeToString())
    before = folder_state(files)
    refused_by_every_function(
        model, InvalidModelError, "initializer 'X' cannot be decoded", functions=(backend.prepare,)
    )
    done = run_cli("run", model, "-o", files / "o")
    assert_cli_error(done, 2, "initializer 'X' cannot be decoded")
    assert folder_state(files) == before


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("missing.bin", "is not a regular file"),
        ("../outside.bin", "points outside"),
        ("/etc/hostname", "should be a relative path"),
    ],
    ids=["missing", "outside-its-folder", "absolute"],
)
def test_model_whose_external_data_cannot_be_read_is_refused(files, location, message):
    (files / "outside.bin").write_bytes(bytes(8))
    tensor = TensorProto(
        name="X", data_type=TensorProto.FLOAT, dims=[2], data_location=TensorProto.EXTERNAL
    )
    tensor.external_data.add(key="location", value=location)
    (files / "models").mkdir()
    model = files / "models" / "m.onnx"
    model.write_bytes(chain_model(initializers=(tensor,)).SerializeToString())
    before = folder_state(files)
    refused_by_every_function(model, InvalidModelError, "its external tensor data cannot be read")
    refused_by_every_function(model, InvalidModelError, message)
    # Given as bytes, the model has no folder: the location is not resolved against the cwd.
    refused_by_every_function(
        model.read_bytes(),
        InvalidModelError,
        "keeps its data in an external file that was not loaded",
        functions=(backend.prepare,),
    )
    assert folder_state(files) == before
    refused_by_every_command(files, model, 2, "its external tensor data cannot be read")


MALFORMED_EXTERNAL_DATA = {
    "length-not-a-number": ([("location", "w.bin"), ("length", "abc")], "field 'length' is 'abc'"),
    "offset-not-a-number": ([("location", "w.bin"), ("offset", "abc")], "field 'offset' is 'abc'"),
    "negative-offset": ([("location", "w.bin"), ("offset", "-8")], "field 'offset' is '-8'"),
    "nul-in-location": ([("location", "w\0.bin")], "'location' ('w\\x00.bin') holds a NUL"),
    "location-not-utf-8": ([("location", "w\x01\x01.bin")], "'location' is b'w\\xff\\xfe.bin'"),
    "length-short": ([("location", "w.bin"), ("length", "4")], "field 'length' is 4, but its dims"),
    "length-long": ([("location", "w.bin"), ("length", "12")], "field 'length' is 12, but its"),
    "no-length-file-too-long": (
        [("location", "w.bin"), ("offset", "4")],
        "no external_data field 'length', and its file holds 12 bytes after offset 4",
    ),
}


COMMAND_CASES = ("length-not-a-number", "location-not-utf-8", "length-short")


@pytest.mark.parametrize("case", MALFORMED_EXTERNAL_DATA, ids=list(MALFORMED_EXTERNAL_DATA))
def test_model_with_malformed_external_data_fields_is_refused_naming_tensor_and_field(files, case):
    entries, fragment = MALFORMED_EXTERNAL_DATA[case]
    (files / "w.bin").write_bytes(bytes(16))
    tensor = TensorProto(
        name="X", data_type=TensorProto.FLOAT, dims=[2], data_location=TensorProto.EXTERNAL
    )
    for key, value in entries:
        tensor.external_data.add(key=key, value=value)
    data = chain_model(initializers=(tensor,)).SerializeToString()
    data = data.replace(b"w\x01\x01.bin", b"w\xff\xfe.bin")  # protobuf gives it back as bytes
    model = files / "m.onnx"
    model.write_bytes(data)
    before = folder_state(files)
    refused_by_every_function(model, InvalidModelError, "external tensor data cannot be read")
    refused_by_every_function(model, InvalidModelError, "tensor 'X': ")
    refused_by_every_function(model, InvalidModelError, fragment)
    assert folder_state(files) == before
    if case in COMMAND_CASES:  # the commands' one line and exit 2 (each command is a process)
        refused_by_every_command(files, model, 2, fragment)


def test_model_that_shape_inference_rejects_is_judged_with_declared_types(files):
    """onnx's shape inference raises a bare ValueError ("Invalid tensor data type 74.") when
    an If's branches declare an unknown element type; check_model then judges the Relu nodes
    with the declared types instead of failing (found by the model fuzz target)."""

    def branch(elem_type: int) -> onnx.GraphProto:
        return helper.make_graph(
            [helper.make_node("Relu", ["X"], ["t"], name="inner")],
            "b",
            [],
            [helper.make_tensor_value_info("t", elem_type, None)],
        )

    graph = helper.make_graph(
        [
            helper.make_node(
                "If",
                ["c"],
                ["o"],
                name="cond",
                then_branch=branch(74),
                else_branch=branch(TensorProto.FLOAT),
            )
        ],
        "g",
        [
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("X", TensorProto.FLOAT, [2]),
        ],
        [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(ValueError, match="Invalid tensor data type 74"):
        onnx.shape_inference.infer_shapes(model)  # what check_model has to survive
    assert check_model(model) == []  # both inner Relus take X, declared tensor(float)
    path = files / "if.onnx"
    path.write_bytes(model.SerializeToString())
    done = run_cli("check", path)
    assert (done.returncode, done.stdout.strip()) == (0, f"{path}: no findings"), done.stderr


# ---------------------------------------------------------------------------------------------
# A Relu whose type its version forbids
# ---------------------------------------------------------------------------------------------

# (element type, opset, the type's ONNX name): types no Relu allows, and allowed types at an
# opset whose Relu version forbids them.
FORBIDDEN = [
    (TensorProto.UINT8, 14, "tensor(uint8)"),
    (TensorProto.BOOL, 14, "tensor(bool)"),
    (TensorProto.STRING, 14, "tensor(string)"),
    (TensorProto.COMPLEX64, 14, "tensor(complex64)"),
    (TensorProto.FLOAT8E4M3FN, 21, "tensor(float8e4m3fn)"),
    (99, 14, "tensor(<unknown element type 99>)"),
    (TensorProto.INT8, 13, "tensor(int8)"),
    (TensorProto.INT64, 6, "tensor(int64)"),
    (TensorProto.BFLOAT16, 12, "tensor(bfloat16)"),
]


@pytest.mark.parametrize(
    ("elem_type", "opset", "onnx_type"),
    FORBIDDEN,
    ids=[f"{name[7:-1]}-opset{opset}" for _, opset, name in FORBIDDEN],
)
def test_relu_with_a_forbidden_type_is_refused(elem_type, opset, onnx_type):
    model = chain_model(elem_type, opset)
    serialized = model.SerializeToString()
    refusal = f"does not allow {onnx_type}; allowed types: "
    with pytest.raises(UnsupportedTypeError) as raised:
        backend.prepare(model)
    assert f"Relu node 'first' (node #0): input 'X' has type {onnx_type}" in str(raised.value)
    assert refusal in str(raised.value) and "tensor(float)" in str(raised.value)
    findings = check_model(model)  # findings are results, not exceptions: one per node
    assert [(f.node_name, f.kind, f.input_type) for f in findings] == [
        ("first", "type-not-allowed", onnx_type),
        ("second", "type-not-allowed", onnx_type),
    ]
    assert refusal in findings[0].message
    with pytest.raises(InvalidModelError) as raised:
        legalize(model)
    assert "check_model found" in str(raised.value) and refusal in str(raised.value)
    assert model.SerializeToString() == serialized  # the caller's model is untouched


@pytest.mark.parametrize(
    ("elem_type", "opset", "onnx_type"),
    [FORBIDDEN[0], FORBIDDEN[-3]],
    ids=["uint8-opset14", "int8-opset13"],
)
def test_relu_with_a_forbidden_type_is_refused_by_the_commands(files, elem_type, opset, onnx_type):
    model = files / "m.onnx"
    model.write_bytes(chain_model(elem_type, opset).SerializeToString())
    before = folder_state(files)
    done = run_cli("check", model)  # findings: exit 1, one line each on stdout
    assert done.returncode == 1 and "Traceback" not in done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and all(f"does not allow {onnx_type}" in line for line in lines)
    assert "2 finding(s)" in done.stderr
    assert_cli_error(
        run_cli("run", model, "-i", f"X={files / 'x.npy'}", "-o", files / "o"),
        2,
        f"does not allow {onnx_type}",
    )
    assert_cli_error(
        run_cli("legalize", model, files / "out.onnx"), 2, f"does not allow {onnx_type}"
    )
    assert folder_state(files) == before


# ---------------------------------------------------------------------------------------------
# Missing, extra and mistyped model inputs
# ---------------------------------------------------------------------------------------------


def _snapshot(arrays: dict[str, np.ndarray]) -> dict[str, bytes]:
    return {name: (a.dtype.str, a.shape, a.tobytes()) for name, a in arrays.items()}


@pytest.mark.parametrize(
    ("feeds", "message"),
    [
        ({}, "missing input(s) ['X', 'X2']; the model needs ['X', 'X2']"),
        ({"X": X}, "missing input(s) ['X2']"),
        ("list:X", "1 input(s) given but the model has 2: ['X', 'X2']"),
        ("list:", "0 input(s) given but the model has 2"),
    ],
    ids=["none", "one-of-two", "short-list", "empty-list"],
)
def test_missing_model_inputs_are_refused(feeds, message):
    rep = backend.prepare(chain_model(inputs=2))
    arrays = {"X": X.copy()}
    if feeds == "list:X":
        feeds = [arrays["X"]]
    elif feeds == "list:":
        feeds = []
    before = _snapshot(arrays)
    with pytest.raises(ModelInputError) as raised:
        rep.run(feeds)
    assert message in str(raised.value) and isinstance(raised.value, ValueError)
    assert _snapshot(arrays) == before


@pytest.mark.parametrize(
    ("feeds", "message"),
    [
        (
            {"X": X, "X2": X, "Q": X},
            "unknown input name(s) ['Q']; the model's inputs are ['X', 'X2']",
        ),
        ("list:3", "3 input(s) given but the model has 2"),
    ],
    ids=["unknown-name", "long-list"],
)
def test_extra_model_inputs_are_refused(feeds, message):
    rep = backend.prepare(chain_model(inputs=2))
    if feeds == "list:3":
        feeds = [X, X, X]
    before = [
        (a.tobytes(), a.flags.writeable)
        for a in (feeds.values() if isinstance(feeds, dict) else feeds)
    ]
    with pytest.raises(ModelInputError) as raised:
        rep.run(feeds)
    assert message in str(raised.value)
    after = [
        (a.tobytes(), a.flags.writeable)
        for a in (feeds.values() if isinstance(feeds, dict) else feeds)
    ]
    assert after == before


def test_mistyped_model_input_is_refused():
    rep = backend.prepare(chain_model())
    x = X64.copy()
    before = x.tobytes()
    with pytest.raises(InputTypeMismatchError) as raised:
        rep.run({"X": x})
    assert (
        "input 'X' is declared tensor(float) but was fed tensor(double); onnx-relu never"
        " casts" in str(raised.value)
    )
    assert isinstance(raised.value, ModelInputError) and isinstance(raised.value, TypeError)
    assert x.tobytes() == before


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ([], "missing input(s) ['X', 'X2']"),
        (["-i", "X=x.npy"], "missing input(s) ['X2']"),
        (["-i", "X=x.npy", "-i", "X2=x.npy", "-i", "Q=x.npy"], "unknown input name(s) ['Q']"),
        (["-i", "X=x.npy", "-i", "X=x.npy"], "input 'X' is given twice"),
        (["-i", "x.npy"], "-i 'x.npy': write NAME=FILE (the model's inputs are ['X', 'X2'])"),
        (
            ["-i", "X=x64.npy", "-i", "X2=x.npy"],
            "is declared tensor(float) but was fed tensor(double)",
        ),
        (["-i", "X=absent.npy", "-i", "X2=x.npy"], "input file 'absent.npy' does not exist"),
        (["-i", "X=bad.npy", "-i", "X2=x.npy"], "'bad.npy' is truncated"),
    ],
    ids=[
        "none",
        "one-of-two",
        "unknown-name",
        "given-twice",
        "no-name",
        "mistyped",
        "missing-file",
        "truncated-file",
    ],
)
def test_run_command_refuses_missing_extra_and_bad_inputs(files, inputs, message):
    model = files / "m.onnx"
    model.write_bytes(chain_model(inputs=2).SerializeToString())
    write_tensor(files / "x64.npy", X64.copy())
    (files / "bad.npy").write_bytes((files / "x.npy").read_bytes()[:-1])
    before = folder_state(files)
    done = run_cli("run", "m.onnx", *inputs, "-o", "o", cwd=files)
    assert_cli_error(done, 2, message)
    assert done.stdout == ""
    assert folder_state(files) == before  # no "o" folder, inputs byte-identical


# ---------------------------------------------------------------------------------------------
# Output paths of `run` and `legalize` that cannot be written (apply: tests/files/test_bad_files.py)
# ---------------------------------------------------------------------------------------------


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_run_and_legalize_refuse_output_paths_they_cannot_write(files):
    model = files / "m.onnx"
    model.write_bytes(GOOD_MODEL)
    (files / "a-file").write_bytes(b"a regular file, not a folder")
    before = folder_state(files)
    x = f"X={files / 'x.npy'}"
    # legalize OUT: in a missing folder, under a regular file, in a folder even root may not
    # write (procfs)
    assert_cli_error(
        run_cli("legalize", model, files / "missing" / "o.onnx"), 2, "missing' does not exist"
    )
    assert_cli_error(
        run_cli("legalize", model, files / "a-file" / "o.onnx"),
        2,
        "a-file' is a file, not a folder",
    )
    assert_cli_error(
        run_cli("legalize", model, "/proc/self/o.onnx"),
        2,
        "the folder '/proc/self' is not writable",
    )
    # run -o DIR is created when missing, but not under a regular file or in /proc/self
    assert_cli_error(
        run_cli("run", model, "-i", x, "-o", files / "a-file" / "o"),
        2,
        "a-file' is a file, not a folder",
    )
    assert_cli_error(
        run_cli("run", model, "-i", x, "-o", files / "a-file"), 2, "exists and is not a folder"
    )
    assert_cli_error(
        run_cli("run", model, "-i", x, "-o", "/proc/self/o"),
        2,
        "the folder '/proc/self' is not writable",
    )
    assert folder_state(files) == before
    assert not os.path.exists("/proc/self/o.onnx")


def _model_with_a_relu_under_an_evil_owner() -> onnx.ModelProto:
    """A forbidden Relu (int8 at opset 13) in the graph attribute of a node whose operator type
    and attribute name hold a terminal escape and a newline."""
    body = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["b"], name="inner")],
        "body",
        [],
        [helper.make_tensor_value_info("b", TensorProto.INT8, [2])],
    )
    owner = helper.make_node("Evil\x1b[31m\nOp", ["x"], ["y"], name="owner", domain="custom")
    owner.attribute.append(helper.make_attribute("bo\x1bdy\n", body))
    graph = helper.make_graph(
        [owner],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.INT8, [2])],
        [helper.make_tensor_value_info("y", TensorProto.INT8, [2])],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("custom", 1)]
    )


def test_subgraph_owner_names_are_escaped_in_findings(tmp_path):
    # issue 13, item 12: check printed a subgraph owner's op type raw (escapes, newlines).
    model = _model_with_a_relu_under_an_evil_owner()
    (finding,) = check_model(model)
    text = str(finding)
    assert "\x1b" not in text and "\n" not in text
    assert "'Evil\\x1b[31m\\nOp' node 'owner' (node #0).'bo\\x1bdy\\n'" in text
    path = tmp_path / "evil.onnx"
    path.write_bytes(model.SerializeToString())
    done = run_cli("check", path)
    assert done.returncode == 1, done.stderr
    assert "\x1b" not in done.stdout + done.stderr
    finding_lines = [line for line in done.stdout.splitlines() if "Relu node 'inner'" in line]
    assert len(finding_lines) == 1 and "tensor(int8)" in finding_lines[0]
