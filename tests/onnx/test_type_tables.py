"""The C side tables of the eight Relu types against the one type table, ``onnx_relu.dtypes``.

The kernel's X-macro (``RELU_FOR_EACH_TYPE`` in src/kernel/relu_kernel.h) lists the types the C
code is built for; the onnxruntime library numbers them as ONNX element types
(``ort_abi_element_type`` in src/ort/ort_abi.h, ``ONNX_ELEMENT_<type>`` in
src/ort/onnx_relu_ort.c). C cannot read the Python table, so these tests read the C sources and
hold every entry to ``onnx_relu.dtypes.RELU_TYPES``, whose element numbers tests/test_dtypes.py
holds to ``onnx.TensorProto``. The Relu version table is held to ``onnx.defs.get_schema`` by
tests/core/test_types.py.
"""

from __future__ import annotations

import re

import onnx

from onnx_relu.dtypes import RELU_TYPE_BY_NAME, RELU_TYPES
from tests.support import REPOSITORY

KERNEL_HEADER = REPOSITORY / "src" / "kernel" / "relu_types.h"
ABI_HEADER = REPOSITORY / "src" / "ort" / "ort_abi.h"
LIBRARY_SOURCE = REPOSITORY / "src" / "ort" / "relu_ort_types.h"


def kernel_types() -> dict[str, int]:
    """Each type of the kernel's X-macro and the width in bits of its integer type."""
    text = KERNEL_HEADER.read_text()
    body = text[text.index("#define RELU_FOR_EACH_TYPE(X)") :]
    body = body[: body.index("\n\n")]
    entries = re.findall(r"X\((\w+), int(\d+)_t, [^)]*\)", body)
    assert len(entries) == body.count("    X(")  # every entry has that form
    return {name: int(bits) for name, bits in entries}


def abi_element_numbers() -> dict[str, int]:
    """The ``ort_abi_element_type`` enumerators, by their TensorProto name."""
    text = ABI_HEADER.read_text()
    body = text[: text.index("} ort_abi_element_type;")]
    body = body[body.rindex("typedef enum {") :]
    return {name: int(number) for name, number in re.findall(r"ORT_ABI_(\w+) = (\d+)", body)}


def library_element_names() -> dict[str, str]:
    """The library's ``ONNX_ELEMENT_<kernel type>`` -> ``ORT_ABI_<TensorProto name>`` map."""
    text = LIBRARY_SOURCE.read_text()
    return dict(re.findall(r"#define ONNX_ELEMENT_(\w+) ORT_ABI_(\w+)", text))


def test_the_kernel_is_built_for_exactly_the_eight_types_at_their_widths():
    assert kernel_types() == {t.name: t.bits for t in RELU_TYPES}


def test_the_abi_element_numbers_are_onnxs_for_exactly_the_eight_types():
    numbers = abi_element_numbers()
    assert numbers.pop("UNDEFINED") == onnx.TensorProto.UNDEFINED == 0
    assert numbers == {onnx.TensorProto.DataType.Name(t.elem_type): t.elem_type for t in RELU_TYPES}
    for name, number in numbers.items():
        assert getattr(onnx.TensorProto, name) == number


def test_the_library_registers_each_kernel_type_under_its_element_number():
    names = library_element_names()
    numbers = abi_element_numbers()
    assert set(names) == set(kernel_types())
    for kernel_name, abi_name in names.items():
        assert numbers[abi_name] == RELU_TYPE_BY_NAME[kernel_name].elem_type, kernel_name
