"""The type lists of the C sources against the one type table (``onnx_relu.dtypes``).

The kernel lists its eight types once, in the X-macro ``RELU_FOR_EACH_TYPE`` of
src/kernel/relu_types.h; the NumPy module (src/onnx_relu/_relu_ufunc.c) names the NumPy DType
of each with ``RELU_NUMPY_DTYPE_<name>`` (src/onnx_relu/_relu_types.h) and registers one loop per
X-macro entry (a name without a DType does not compile). Both headers are generated from the one
table (tests/test_tables.py). Here both are read from the sources and checked against
:data:`onnx_relu.dtypes.RELU_TYPES`, and the compiled ufunc against the table.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from onnx_relu import relu_ufunc
from onnx_relu.dtypes import RELU_TYPES

SOURCES = Path(__file__).resolve().parents[2] / "src"
#: NumPy's C names of its DType classes (PyArray_<name>DType) -> the dtype.
NUMPY_C_DTYPES = {
    "Int8": np.dtype(np.int8), "Int16": np.dtype(np.int16), "Int32": np.dtype(np.int32),
    "Int64": np.dtype(np.int64), "Half": np.dtype(np.float16), "Float": np.dtype(np.float32),
    "Double": np.dtype(np.float64),
}  # fmt: skip


def kernel_types() -> list[str]:
    header = (SOURCES / "kernel" / "relu_types.h").read_text()
    macro = re.search(r"#define RELU_FOR_EACH_TYPE\(X\)(.*?)\n\n", header, re.DOTALL)
    assert macro is not None, "RELU_FOR_EACH_TYPE not found in relu_types.h"
    return re.findall(r"X\((\w+),", macro.group(1))


def numpy_module_dtypes() -> dict[str, str]:
    source = (SOURCES / "onnx_relu" / "_relu_types.h").read_text()
    return dict(re.findall(r"#define RELU_NUMPY_DTYPE_(\w+) (\S+)", source))


def test_the_kernel_lists_the_types_of_the_table():
    names = kernel_types()
    assert len(names) == len(set(names)) == 8
    assert set(names) == {t.name for t in RELU_TYPES}


def test_the_numpy_module_names_the_dtype_of_each_kernel_type():
    dtypes = numpy_module_dtypes()
    assert set(dtypes) == set(kernel_types())
    for name, spelling in dtypes.items():
        if name == "bfloat16":  # added when ml_dtypes is loaded (its type number is assigned then)
            assert spelling == "NULL"
            continue
        c_name = re.fullmatch(r"\(&PyArray_(\w+)DType\)", spelling)
        assert c_name is not None, (name, spelling)
        assert NUMPY_C_DTYPES[c_name.group(1)] == np.dtype(name), (name, spelling)


def test_the_ufunc_has_a_loop_for_each_type_of_the_table():
    for t in RELU_TYPES:
        x = np.array([-1, 0, 1], dtype=t.dtype)
        y = relu_ufunc(x)
        assert y.dtype == t.dtype and y.tolist() == [0, 0, 1], t.name
