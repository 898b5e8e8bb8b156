"""THE table of onnx-relu's types and kernel settings, written once; everything else derives it.

Plain data, importing nothing, so that the build's generator (``tools/generate_tables.py``)
reads it without the package. What is derived from it:

- by import, at run time: :mod:`onnx_relu.dtypes` (the record of each type, hence the ``.pb``
  element codes; which types ml_dtypes provides), :mod:`onnx_relu.versions` (which Relu version
  allows which type, and the opsets of each), :mod:`onnx_relu.tuning` (the setting validators,
  the docstrings' lists of keys and keywords);
- by the generator, as files marked "generated" (``make tables`` writes them; the build and
  ``tests/test_tables.py`` fail when one differs from what this table gives, so a hand edit
  of a derived copy is caught): the kernel's type X-macro, element integer X-macro and settings
  X-macro (``src/kernel/relu_types.h``), the NumPy module's DType of each type, the X-macro of
  the types ml_dtypes provides and the docstring's type list (``src/onnx_relu/_relu_types.h``),
  the onnxruntime library's element type of each type
  (``src/ort/relu_ort_types.h``), the stub ``src/onnx_relu/_relu.pyi``, and the tables between
  ``<!-- generated: ... -->`` markers in docs/semantics.md and docs/performance.md.

A new type is one row of :data:`TYPES` and its name in :data:`PYTHON_ORDER` (plus, if
onnxruntime's ABI mirror lacks its element type, one enumerator in ``src/ort/ort_abi.h``, and
for a type whose Relu is not ``RELU_RULE`` over its bits with a threshold, that rule); a new
size setting is one row of :data:`SETTINGS` (plus the kernel's use of it and its default in
``relu_default_thresholds``).
"""

from __future__ import annotations

#: The Relu versions (since-opset) and the attributes each declares.
VERSIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (1, ("consumed_inputs",)),
    (6, ()),
    (13, ()),
    (14, ()),
)

#: The types, in the kernel's order: (name, C integer type of the element's width, RELU_RULE
#: threshold (a macro of relu_kernel.h), ONNX type, TensorProto element type (name, number),
#: NumPy's C DType (None: a type ml_dtypes provides, found when ml_dtypes is loaded), stored
#: mantissa bits (None: an integer type), the Relu version that first allows it, the ml_dtypes
#: attribute holding its scalar type (None: a numpy type)). Everything that counts the types
#: counts this table.
TYPES: tuple[
    tuple[str, str, str, str, str, int, str | None, int | None, int, str | None], ...
] = (
    ("int8", "int8_t", "0", "tensor(int8)", "INT8", 3, "PyArray_Int8DType", None, 14, None),
    ("int16", "int16_t", "0", "tensor(int16)", "INT16", 5, "PyArray_Int16DType", None, 14, None),
    ("int32", "int32_t", "0", "tensor(int32)", "INT32", 6, "PyArray_Int32DType", None, 14, None),
    ("int64", "int64_t", "0", "tensor(int64)", "INT64", 7, "PyArray_Int64DType", None, 14, None),
    ("float16", "int16_t", "RELU_F16_NEG_INF", "tensor(float16)", "FLOAT16", 10,
     "PyArray_HalfDType", 10, 1, None),
    ("bfloat16", "int16_t", "RELU_BF16_NEG_INF", "tensor(bfloat16)", "BFLOAT16", 16, None, 7, 13,
     "bfloat16"),
    ("float32", "int32_t", "RELU_F32_NEG_INF", "tensor(float)", "FLOAT", 1, "PyArray_FloatDType",
     23, 1, None),
    ("float64", "int64_t", "RELU_F64_NEG_INF", "tensor(double)", "DOUBLE", 11,
     "PyArray_DoubleDType", 52, 1, None),
)  # fmt: skip

#: The order of :data:`onnx_relu.dtypes.RELU_TYPES` (floats first).
PYTHON_ORDER: tuple[str, ...] = (
    "float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
)  # fmt: skip

#: The kernel's size and time settings, each set by set_kernel_tuning and reported by
#: kernel_tuning under its Python name, its default for this machine under ``default_`` and that
#: name: (Python name, field of relu_thresholds, what it is, how the default is chosen; the
#: kernel's relu_default_thresholds computes it). Each is an output size in bytes (nanoseconds
#: for spin_ns, a count of pages for nt_streams), 0..PTRDIFF_MAX; -1 leaves it.
SETTINGS: tuple[tuple[str, str, str, str], ...] = (
    ("parallel_threshold", "parallel_bytes",
     "output size in bytes from which a call is shared with the thread pool (0: every call)",
     "fixed, where threads pay (BENCHMARKS.md)"),
    ("min_chunk", "min_part_bytes", "smallest part in bytes a call is cut into for the pool",
     "fixed"),
    ("nt_threshold", "nt_bytes",
     "output size in bytes from which an out-of-place call uses streaming stores (0: every call)",
     "from the caches and the vendor"),
    ("spin_ns", "spin_ns", "nanoseconds the pool's idle threads spin before they sleep",
     "fixed"),
    ("nt_streams", "nt_streams",
     "4 KiB pages the streaming-store loop walks side by side (0 or 1: one sequential stream)",
     "from the vendor (1 on AMD, 4 elsewhere)"),
)  # fmt: skip

#: The settings that are names: (Python name, what it is).
NAMED_SETTINGS: tuple[tuple[str, str], ...] = (
    ("nt_isa", 'streaming-store instruction set: "none" up to best_nt_isa'),
)

#: What kernel_tuning reports besides the settings and their defaults: (key, Python type, what
#: it is).
REPORT: tuple[tuple[str, str, str], ...] = (
    ("num_threads", "int", "threads a large call may use, the caller included (set_num_threads)"),
    ("max_threads", "int", "the largest thread count (256)"),
    ("threads_supported", "bool", "False for a build without the thread pool"),
    ("l2_bytes", "int", "the L2 cache's size"),
    ("llc_bytes", "int", "the last-level cache's size, as one CPU sees it"),
    ("llc_shared_cpus", "int", "CPUs sharing the last-level cache (0: not known)"),
    ("cache_source", "str", 'where the cache sizes came from: "sysfs", "sysconf", "default"'),
    ("vendor", "str", 'the CPU vendor the streaming rule is chosen by: "intel", "amd", "other"'),
    ("best_nt_isa", "str", "the best streaming-store instruction set of this CPU"),
    ("pool_workers", "int", "threads the pool has started"),
)
