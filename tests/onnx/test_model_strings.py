"""Strings out of a model or tensor file that are not UTF-8, and very long names (issue 30,
item 1 and the long names).

onnx.proto is proto2: protobuf hands a string field that is not valid UTF-8 back as bytes, and
onnx's checker accepts such a model. The one rule (``_models.load_model``, where every front end
loads its model): a model holding one is refused with an ``InvalidModelError`` naming the field
and showing the bytes; a ``.pb`` tensor's name is kept as its bytes when written back. Then a
seeded fuzz over mutated models, bounded in time, checks that only documented exceptions
escape and that ``check DIR`` reports every model without a traceback.
"""

from __future__ import annotations

import os
import random
import time

import ml_dtypes
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from onnx_relu import backend, check_model, legalize, read_tensor  # noqa: E402
from onnx_relu.errors import InvalidModelError, OnnxReluError  # noqa: E402
from onnx_relu.files.tensors import read_pb_tensor  # noqa: E402
from onnx_relu.onnx.reference import ReluReferenceEvaluator  # noqa: E402
from tests.support.cli import assert_cli_error, folder_state, run_cli  # noqa: E402
from tests.support.optional import requires  # noqa: E402


def relu_model(elem_type=TensorProto.BFLOAT16, opset=14, node="NxME", output="Y", function=False):
    """One Relu (named ``node``) X -> ``output``; in a local function local.F if ``function``."""
    relu = helper.make_node("Relu", ["AxAA" if function else "X"], ["b" if function else output],
                            name=node)  # fmt: skip
    functions = []
    if function:
        functions = [
            helper.make_function("local", "F", ["AxAA"], ["b"], [relu],
                                 opset_imports=[helper.make_opsetid("", opset)])
        ]  # fmt: skip
        relu = helper.make_node("F", ["X"], [output], domain="local", name="call")
    graph = helper.make_graph(
        [relu],
        "g",
        [helper.make_tensor_value_info("X", elem_type, [2])],
        [helper.make_tensor_value_info(output, elem_type, [2])],
    )
    return helper.make_model(
        graph,
        functions=functions,
        opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid("local", 1)],
    )


def not_utf8(model: onnx.ModelProto, placeholder: bytes) -> bytes:
    """``model`` serialized, with ``placeholder`` (4 bytes, x in the middle) made b'?\\xff??'."""
    data = model.SerializeToString()
    assert data.count(placeholder) >= 1
    return data.replace(placeholder, placeholder[:1] + b"\xff" + placeholder[2:])


CASES = {
    "node-name": (relu_model(), b"NxME", "model.graph.node[0].name is b'N\\xffME'"),
    "graph-output": (relu_model(output="QxQQ"), b"QxQQ", "is b'Q\\xffQQ'"),
    "function-input": (relu_model(function=True), b"AxAA", "model.functions[0].input[0]"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_model_string_that_is_not_utf8_is_refused_naming_it_by_every_front_end(tmp_path, case):
    model, placeholder, words = CASES[case]
    data = not_utf8(model, placeholder)
    parsed = onnx.ModelProto()
    parsed.ParseFromString(data)
    onnx.checker.check_model(parsed)  # onnx lets it through
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    for source in (str(path), data, parsed):
        for front_end in (check_model, backend.prepare, legalize, ReluReferenceEvaluator):
            if front_end is ReluReferenceEvaluator and source is not parsed:
                continue  # onnx's evaluator takes a ModelProto or a file name
            with pytest.raises(InvalidModelError, match="holds a string that is not UTF-8") as e:
                front_end(source)
            assert words in str(e.value), (front_end, str(e.value))


@requires("onnxruntime")
@pytest.mark.parametrize("case", ["node-name", "graph-output"])
def test_a_model_string_that_is_not_utf8_is_one_line_from_every_command(tmp_path, case):
    from onnx_relu import ort_session, write_tensor

    model, placeholder, words = CASES[case]
    path = tmp_path / "m.onnx"
    path.write_bytes(not_utf8(model, placeholder))
    write_tensor(tmp_path / "x.npy", np.array([1, -1], ml_dtypes.bfloat16))
    with pytest.raises(InvalidModelError, match="not UTF-8"):
        ort_session(str(path))
    before = folder_state(tmp_path)
    x = f"X={tmp_path / 'x.npy'}"
    for args in (
        ("check", path),
        ("legalize", path, tmp_path / "l.onnx"),
        ("run", path, "-i", x, "-o", tmp_path / "o"),
        ("run", "--engine", "onnxruntime", path, "-i", x, "-o", tmp_path / "o"),
    ):
        assert_cli_error(run_cli(*args), 2, words)
    assert folder_state(tmp_path) == before


def test_check_of_a_folder_checks_every_model_whatever_the_earlier_ones_hold(tmp_path):
    (tmp_path / "a.onnx").write_bytes(not_utf8(relu_model(), b"NxME"))
    (tmp_path / "b.onnx").write_bytes(relu_model(opset=12).SerializeToString())  # a finding
    (tmp_path / "c.onnx").write_bytes(not_utf8(relu_model(function=True), b"AxAA"))
    (tmp_path / "d.onnx").write_bytes(relu_model().SerializeToString())
    done = run_cli("check", "--format", "json", tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    import json

    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [os.path.basename(r["path"]) for r in records] == [
        "a.onnx",
        "b.onnx",
        "c.onnx",
        "d.onnx",
    ]
    assert "error" in records[0] and "error" in records[2]
    assert records[1]["findings"] and records[3]["findings"] == []


def test_a_pb_tensor_name_that_is_not_utf8_is_written_back_as_its_bytes(tmp_path):
    tensor = numpy_helper.from_array(np.array([-1.0, 2.0], np.float32), name="NxNN")
    (tmp_path / "x.pb").write_bytes(tensor.SerializeToString().replace(b"NxNN", b"N\xffNN"))
    assert read_pb_tensor(tmp_path / "x.pb")[1] == b"N\xffNN"
    done = run_cli("apply", tmp_path / "x.pb", tmp_path / "y.pb")
    assert done.returncode == 0, done.stderr
    back = TensorProto()
    back.ParseFromString((tmp_path / "y.pb").read_bytes())
    assert back.name == b"N\xffNN"  # the raw bytes, not a decoded copy
    assert read_tensor(tmp_path / "y.pb").tolist() == [0.0, 2.0]


def test_a_node_name_of_megabytes_is_shortened_in_findings_and_check(tmp_path):
    model = relu_model(opset=12, node="L" * 3_000_000)
    (finding,) = check_model(model)
    assert "... (3000000 characters) (node #0)" in str(finding)
    assert len(str(finding)) < 1000
    path = tmp_path / "long.onnx"
    path.write_bytes(model.SerializeToString())
    done = run_cli("check", path)
    assert done.returncode == 1 and len(done.stdout) < 1000, done.stdout[:300]


# --- the fuzz -------------------------------------------------------------------------------

SEEDS = [relu_model(), relu_model(opset=12), relu_model(function=True), relu_model(opset=13,
         elem_type=TensorProto.INT8)]  # fmt: skip
#: Time the in-process part may take (the command part runs one `check DIR` over the mutants).
FUZZ_SECONDS = 15.0


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One to three of: a bit flip, a cut, a byte overwritten, a non-UTF-8 byte put into a
    name (a letter of one of the model's names replaced by 0xff or 0xc3)."""
    data = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(4)
        if kind == 0 and data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif kind == 1 and data:
            del data[rng.randrange(len(data)) :]
        elif kind == 2 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        else:
            names = [
                i
                for i in range(len(data))
                if data[i : i + 1] in (b"N", b"M", b"E", b"X", b"Y", b"A", b"g")
            ]
            if names:
                data[rng.choice(names)] = rng.choice([0xFF, 0xC3, 0x80])
    return bytes(data)


def _onnxruntime_errors() -> tuple[type[BaseException], ...]:
    """The exception classes of onnxruntime's binding (``Fail``, ``InvalidGraph``, ...), which
    ``ort_session`` lets through, documented, for a model onnxruntime itself cannot load for a
    reason that is not Relu's; () without onnxruntime."""
    try:
        from onnxruntime.capi import onnxruntime_pybind11_state as state
    except ImportError:
        return ()
    return tuple(
        value
        for value in vars(state).values()
        if isinstance(value, type) and issubclass(value, Exception)
    )


#: Mutants each command runs on one at a time (a process each), besides ``check DIR``.
COMMAND_SAMPLE = 6


def test_fuzz_mutated_models_give_only_documented_errors_and_check_reports_every_one(tmp_path):
    rng = random.Random(30)
    deadline = time.monotonic() + FUZZ_SECONDS
    count = 0
    folder = tmp_path / "mutants"
    folder.mkdir()
    onnxruntime_errors = _onnxruntime_errors()
    front_ends = [check_model, backend.prepare, legalize]
    if onnxruntime_errors:
        from onnx_relu import ort_session

        front_ends.append(ort_session)
    refused: dict[str, list[str]] = {"legalize": [], "ort_session": []}
    while time.monotonic() < deadline and count < 2000:
        data = mutate(rng.choice(SEEDS).SerializeToString(), rng)
        name = f"m{count:04d}.onnx"
        (folder / name).write_bytes(data)
        for front_end in front_ends:
            try:
                front_end(data)
            except (OnnxReluError, OSError):
                # documented; anything else fails the test with its traceback
                refused.get(front_end.__name__, []).append(name)
            except onnxruntime_errors:
                assert front_end.__name__ == "ort_session"
                refused["ort_session"].append(name)
        count += 1
    assert count >= 100
    done = run_cli("check", folder, timeout=600)
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode in (0, 1, 2)
    reported = done.stdout + done.stderr
    for name in os.listdir(folder):
        assert name in reported, name  # every model checked: a result or its one line
    # The commands that write: the first mutants each front end refused, one process each.
    commands = [("legalize", name) for name in refused["legalize"][:COMMAND_SAMPLE]]
    if onnxruntime_errors:
        commands += [("run", name) for name in refused["ort_session"][:COMMAND_SAMPLE]]
    assert len(commands) >= 2
    for command, name in commands:
        out = tmp_path / f"{command}-{name}"
        if command == "legalize":
            args = ("legalize", folder / name, out)
        else:
            np.save(tmp_path / "x.npy", np.zeros(2, np.float32))
            args = ("run", "--engine", "onnxruntime", "-i", tmp_path / "x.npy", "-o", out,
                    folder / name)  # fmt: skip
        done = run_cli(*args, timeout=300)
        assert "Traceback" not in done.stderr, (name, done.stderr[-2000:])
        assert done.returncode in (0, 1, 2), (name, done.returncode, done.stderr[-500:])
        if done.returncode:
            assert len(done.stderr.strip().splitlines()) == 1, (name, done.stderr)
