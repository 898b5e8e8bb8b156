"""Arrays of other libraries in :func:`onnx_relu.relu`: each comes back in the caller's own type.

Imported by :mod:`onnx_relu._api` on the first input that is not a numpy array; it imports no
other library: a library's module is looked up in ``sys.modules`` (an object of a type defined
there exists only once the caller imported it), so a numpy user never pays for torch or jax.

The kinds, in the order they are recognised (docs/arrays.md has the table):

- jax tracers (inside ``jax.jit``, ``jax.vmap``, ``jax.grad``): a ``jax.custom_jvp`` function
  around the kernel called through jax's FFI (:mod:`onnx_relu._jax_ffi`), or through
  ``jax.pure_callback`` where the FFI handler cannot be built, whose derivative is 1 where
  ``x > 0`` and 0 elsewhere;
- scipy.sparse matrices and arrays: Relu of the stored values, the structure shared;
- pyarrow arrays, chunked arrays, tables and record batches, and pandas data backed by them:
  the values computed, the validity bitmap (the nulls) shared;
- pandas DataFrames and xarray Datasets: every column or variable judged on its own type;
- arrays offering ``__dlpack__`` or ``__array_namespace__`` (torch, jax, array-api-strict, any
  Array API library) on the CPU: read zero-copy through DLPack (bfloat16, which numpy's DLPack
  lacks, through a view of its bits), computed by the numpy path, and handed back zero-copy
  through the caller's namespace.

Everything else (lists, scalars, objects that handle ufuncs themselves such as dask arrays and
xarray DataArrays) is left to the numpy path.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ._numpy_path import checked_dtype, dispatcher_dtype, relu_into
from ._relu import _empty_like as _cached_empty_like
from ._relu import relu as relu_ufunc
from .dtypes import bfloat16_dtype
from .errors import InvalidOutputError, UnsupportedTypeError
from .versions import LATEST_VERSION, ReluVersion

__all__ = ["relu_foreign"]

#: DLPack device types whose memory the CPU reads: kDLCPU, kDLCUDAHost, kDLROCMHost.
_CPU_DEVICES = frozenset({1, 3, 11})
#: The names of the other DLPack device types, for the refusal.
_DEVICE_NAMES = {
    2: "CUDA",
    4: "OpenCL",
    7: "Vulkan",
    8: "Metal",
    9: "VPI",
    10: "ROCm",
    12: "ExtDev",
    13: "CUDA managed memory",
    14: "oneAPI",
    15: "WebGPU",
    16: "Hexagon",
    17: "MAIA",
}
#: jax's CPU client aliases a numpy array's memory, instead of copying it, from this alignment.
_JAX_ALIGNMENT = 64


def relu_foreign(
    x: object, out: object, where: object, version: ReluVersion, opset: int | None
) -> tuple[Any] | None:
    """Relu of ``x`` in its own type as a 1-tuple, or None to leave ``x`` to the numpy path."""
    cls = type(x)
    module = cls.__module__
    top = module.partition(".")[0]
    if top in ("jax", "jaxlib"):
        if cls is not _jax_array_type and _is_jax_tracer(x):
            return (_relu_jax_traced(x, out, where, version, opset),)
        if out is None and where is True:
            done = _relu_jax_on_cpu(x, version, opset)
            if done is not None:
                return (done,)
    if top == "torch" and out is None and where is True:
        done = _relu_torch_on_cpu(x, version, opset)
        if done is not None:
            return (done,)
    if top == "scipy" and module.startswith("scipy.sparse"):
        return (_relu_sparse(x, out, where, version, opset),)
    if top == "pyarrow":
        return (_relu_arrow_object(x, out, where, version, opset),)
    if top == "pandas":
        return _relu_pandas(x, out, where, version, opset)
    if top == "xarray" and hasattr(x, "data_vars"):
        return _relu_dataset(x, out, where, version, opset)
    if getattr(cls, "__array_ufunc__", None) is not None:
        return None  # dask, xarray's DataArray, numpy subclasses: they dispatch the ufunc
    if hasattr(cls, "__dlpack__") or hasattr(cls, "__array_namespace__"):
        return (_relu_dlpack(x, out, where, version, opset),)
    return None


# ---------------------------------------------------------------------------------------------
# DLPack and the Array API: torch, jax, array-api-strict, ...
# ---------------------------------------------------------------------------------------------


def _refuse_device(x: object) -> None:
    """Raise if ``x`` lives where the CPU cannot read it (naming the device)."""
    device_of = getattr(x, "__dlpack_device__", None)
    if device_of is None:
        return
    try:
        device_type, device_id = device_of()
    except Exception:  # noqa: BLE001 - let from_dlpack give its own error
        return
    if int(device_type) in _CPU_DEVICES:
        return
    device = getattr(x, "device", None)
    where = (
        str(device)
        if device is not None and not callable(device)
        else f"{_DEVICE_NAMES.get(int(device_type), f'DLPack device type {device_type}')}"
        f" device {device_id}"
    )
    raise UnsupportedTypeError(
        f"relu() computes on the CPU only, and this {type(x).__name__} lives on {where};"
        " copy it to the CPU first (e.g. x.cpu(), or jax.device_put(x, jax.devices('cpu')[0]))"
    )


def _is_torch(x: object) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def _is_jax_array(x: object) -> bool:
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(x, jax.Array)


def _numpy_view(x: object, role: str) -> np.ndarray:
    """The memory of the DLPack array ``x`` as a numpy array, without copying.

    bfloat16 has no DLPack type numpy knows: a torch tensor of it is read as int16 bits viewed
    as ``ml_dtypes.bfloat16``; a jax array through its own numpy view (jax's numpy type for it
    is ml_dtypes' already).
    """
    _refuse_device(x)
    if _is_torch(x):
        torch = sys.modules["torch"]
        if x.requires_grad:  # type: ignore[attr-defined]
            raise UnsupportedTypeError(
                f"relu() does not record torch gradients, and {role} requires grad; pass"
                f" {role}.detach() (or use torch.relu inside autograd)"
            )
        if x.dtype == torch.bfloat16:  # type: ignore[attr-defined]
            bits = np.from_dlpack(x.view(torch.int16))  # type: ignore[attr-defined]
            return bits.view(bfloat16_dtype())
    elif _is_jax_array(x):
        return np.asarray(x)  # jax's CPU arrays: a read-only view of their buffer
    try:
        return np.from_dlpack(x)  # type: ignore[arg-type]
    except (BufferError, RuntimeError, TypeError, ValueError) as exc:
        dtype = getattr(x, "dtype", "?")
        raise UnsupportedTypeError(
            f"relu() cannot read this {type(x).__name__} of dtype {dtype} through DLPack"
            f" ({exc}); allowed types: {', '.join(LATEST_VERSION.types)}"
        ) from None


def _namespace(x: object) -> Any:
    """The module that makes arrays of ``x``'s type from DLPack: its Array API namespace, or
    the top-level module of its type if that has ``from_dlpack`` (torch); None if neither."""
    get = getattr(x, "__array_namespace__", None)
    if get is not None:
        return get()
    module = sys.modules.get(type(x).__module__.partition(".")[0])
    return module if module is not None and hasattr(module, "from_dlpack") else None


def _output_for(a: np.ndarray, for_jax: bool) -> np.ndarray:
    """A new array for Relu of ``a`` (the output cache's when it serves): aligned for jax,
    whose CPU client then takes it without a copy."""
    cached = _cached_empty_like(a)
    if cached is not None:
        return cached
    if not for_jax:
        return np.empty_like(a)
    raw = np.empty(a.nbytes + _JAX_ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % _JAX_ALIGNMENT
    return raw[start : start + a.nbytes].view(a.dtype).reshape(a.shape)


def _relu_new(a: np.ndarray, version: ReluVersion, opset: int | None) -> Any:
    """Relu of the numpy array ``a`` (checked against ``version``) in a new array."""
    return relu_into(a, _output_for(a, False), True, version, opset)


def _relu_dlpack(
    x: object, out: object, where: object, version: ReluVersion, opset: int | None
) -> Any:
    a = _numpy_view(x, "x")
    if where is not True and hasattr(type(where), "__dlpack__"):
        where = _numpy_view(where, "where")
    if out is not None:
        target = out[0] if isinstance(out, tuple) and len(out) == 1 else out
        if isinstance(target, np.ndarray):
            return relu_into(a, target, where, version, opset)
        if type(target) is not type(x):
            raise InvalidOutputError(
                f"out must be a {type(x).__name__} like the input (or a numpy.ndarray), got"
                f" {type(target).__name__}"
            )
        if _is_jax_array(target):
            raise InvalidOutputError(
                "out is read-only: jax arrays cannot be written; call relu without out"
            )
        relu_into(a, _numpy_view(target, "out"), where, version, opset)
        return target
    if _is_jax_array(x):
        return _relu_into_jax(a, x, where, version, opset)
    y = _output_for(a, False)
    relu_into(a, y, where, version, opset)
    namespace = _namespace(x)
    if namespace is None:
        return y
    if _is_torch(x) and x.dtype == sys.modules["torch"].bfloat16:  # type: ignore[attr-defined]
        torch = sys.modules["torch"]
        return torch.from_dlpack(y.view(np.int16)).view(torch.bfloat16)
    return namespace.from_dlpack(y)


def _relu_torch_on_cpu(x: Any, version: ReluVersion, opset: int | None) -> Any:
    """Relu of a plain CPU tensor without ``out`` or ``where``, in the fewest steps (None for any
    other: the DLPack path): right after a large call the caches are cold, and torch's
    ``__dlpack_device__`` and ``__dlpack__`` then cost more than its C-level ``numpy()`` and
    ``from_numpy`` (BENCHMARKS.md). The result is made over the new output before Relu is
    written into it (``from_numpy`` shares the memory), while torch's code is nearer in cache.
    """
    torch = sys.modules["torch"]
    if type(x) is not torch.Tensor or x.device.type != "cpu" or x.requires_grad:
        return None
    if x.dtype == torch.bfloat16:
        return None
    try:
        a = x.numpy()
    except (TypeError, RuntimeError):  # a type numpy lacks, a conjugate or negative view
        return None
    y = _output_for(a, False)
    result = torch.from_numpy(y)
    relu_into(a, y, True, version, opset)
    return result


#: jax's concrete array type, once seen: known then without an isinstance check against
#: ``jax.Array`` or ``jax.core.Tracer`` (about 20 us each right after a large call).
_jax_array_type: type | None = None


def _relu_jax_on_cpu(x: Any, version: ReluVersion, opset: int | None) -> Any:
    """Relu of a jax array on jax's CPU device without ``out`` or ``where``, in the fewest steps
    (None for any other: the DLPack path). Right after a large call the caches are cold, and
    every step of jax's then costs tens of microseconds (its ``__dlpack_device__`` 0.08 ms,
    ``device`` 0.02 ms; BENCHMARKS.md): the device is read once, for the check and the result.
    """
    global _jax_array_type
    cls = type(x)
    if cls is not _jax_array_type:
        if not isinstance(x, sys.modules["jax"].Array):
            return None
        if cls.__name__ == "ArrayImpl":  # (jax's concrete arrays: no tracer, no subclass)
            _jax_array_type = cls
    try:
        device = x.device
    except ValueError:  # an array sharded over several devices
        return None
    if device.platform != "cpu":
        return None  # (refused by the DLPack path, naming the device)
    return _relu_into_jax(np.asarray(x), x, True, version, opset, device)


def _relu_into_jax(
    a: np.ndarray,
    like: Any,
    where: object,
    version: ReluVersion,
    opset: int | None,
    device: Any = None,
) -> Any:
    """Relu of ``a`` (the memory of the jax array ``like``) as a jax array like ``like``.

    The jax array is made over the new output before Relu is written into it: made after, it
    took 0.3-0.5 ms at 64 MiB (jax's code then runs from caches that the 64 MiB just flushed),
    against 0.02 ms before (BENCHMARKS.md). jax took the memory without a copy when its buffer
    is the output's; else (a copy, or several shards) the result is made again after.
    ``device``: ``like``'s, where the caller has read it.
    """
    checked_dtype(a.dtype, version, opset)  # (before jax sees the type: our refusal, not jax's)
    y = _output_for(a, True)
    early = _to_jax(y, like, device)
    try:
        aliased = early.unsafe_buffer_pointer() == y.ctypes.data
    except (ValueError, RuntimeError):  # (several shards: no one pointer)
        aliased = False
    relu_into(a, y, where, version, opset)
    return early if aliased else _to_jax(y, like, device)


_jax_first_cpu: Any = None


def _to_jax(y: np.ndarray, like: Any, device: Any = None) -> Any:
    """``y`` as a jax array on the device of ``like`` (``device`` where the caller read it),
    aliasing ``y``'s (aligned) memory.

    ``jax.numpy.from_dlpack`` (about half the time of ``jax.device_put`` on small arrays) for
    the types DLPack carries, onto jax's first CPU device, where DLPack puts a CPU array;
    ``jax.device_put`` (which also takes bfloat16) for the others, and for other devices or
    shardings.
    """
    global _jax_first_cpu
    jax = sys.modules["jax"]
    if y.dtype.kind != "V":  # (ml_dtypes' bfloat16 is kind "V")
        if _jax_first_cpu is None:
            _jax_first_cpu = jax.devices("cpu")[0]
        if device is None:
            try:
                device = like.device
            except ValueError:  # an array sharded over several devices
                device = None
        if device == _jax_first_cpu:
            return _jax_from_dlpack(y, device)
    return jax.device_put(y, like.sharding)


#: jaxlib's DLPack unpacker (None: not looked up yet; False: not there as known).
_jax_unpack: Any = None


def _jax_from_dlpack(y: np.ndarray, device: Any) -> Any:
    """``jax.numpy.from_dlpack(y)`` onto the CPU ``device``, without its detour.

    On the CPU jax first asks the device for a stream, which raises and catches a C++
    exception on every call; right after 64 MiB have gone through the caches that took
    0.25 ms of the 0.4 ms jax spent (BENCHMARKS.md). The unpacker jax then calls,
    ``dlpack_managed_tensor_to_buffer`` of jaxlib 0.10 (extension version 467 and later), is
    called directly; where it is missing or refuses its arguments, the public function. (A
    result that does not share ``y``'s memory is caught by :func:`_relu_into_jax`.)
    """
    global _jax_unpack
    jax = sys.modules["jax"]
    if _jax_unpack is None:
        try:
            lib = importlib.import_module("jax._src.lib")
            _jax_unpack = lib._jax.dlpack_managed_tensor_to_buffer
            if lib.jaxlib_extension_version < 467:
                _jax_unpack = False
        except (ImportError, AttributeError):
            _jax_unpack = False
    if _jax_unpack is not False:
        try:
            return _jax_unpack(y.__dlpack__(), device, None, None, 1)  # 1: kDLCPU
        except TypeError:  # its arguments are no longer these: the public function from now on
            _jax_unpack = False
        except (ValueError, RuntimeError):  # (this buffer: the public function says why)
            pass
    return jax.numpy.from_dlpack(y)


# ---------------------------------------------------------------------------------------------
# jax inside jit, vmap and grad
# ---------------------------------------------------------------------------------------------


def _is_jax_tracer(x: object) -> bool:
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(x, jax.core.Tracer)


#: Relu as a jax function, by whether it calls the FFI handler (True) or a Python callback.
_jax_relu: dict[bool, Callable[[Any], Any]] = {}


def _jax_function(use_ffi: bool | None = None) -> Callable[[Any], Any]:
    """Relu as a jax function: the kernel called through jax's FFI (:mod:`onnx_relu._jax_ffi`,
    where its handler could be built; ``use_ffi`` None) or on the host through
    ``jax.pure_callback``, and ``jax.custom_jvp`` for its derivative: 1 where ``x > 0`` and 0
    elsewhere (at -0.0, +0.0, negative numbers and NaN)."""
    if use_ffi is None:
        from . import _jax_ffi

        use_ffi = _jax_ffi.registered()
    function = _jax_relu.get(use_ffi)
    if function is None:
        function = _jax_relu[use_ffi] = _make_jax_function(use_ffi)
    return function


def _make_jax_function(use_ffi: bool) -> Callable[[Any], Any]:
    jax = sys.modules["jax"]
    jnp = jax.numpy

    def on_host(values: Any) -> np.ndarray:
        # (the type was checked when the function was traced; a large result comes from the
        # output cache, and goes back to it once jax has copied it)
        return np.asarray(_relu_new(np.asarray(values), LATEST_VERSION, None))

    @jax.custom_jvp  # type: ignore[untyped-decorator]  # (jax's decorators are untyped)
    def relu(x: Any) -> Any:
        result = jax.ShapeDtypeStruct(x.shape, x.dtype)
        # An elementwise function: a batch of inputs is one call over the batched array.
        if use_ffi:
            from ._jax_ffi import TARGET

            return jax.ffi.ffi_call(TARGET, result, vmap_method="expand_dims")(x)
        return jax.pure_callback(on_host, result, x, vmap_method="expand_dims")

    @relu.defjvp  # type: ignore[untyped-decorator]
    def _relu_jvp(primals: tuple[Any], tangents: tuple[Any]) -> tuple[Any, Any]:
        (x,), (tangent,) = primals, tangents
        y = relu(x)
        if not jnp.issubdtype(x.dtype, jnp.inexact):
            return y, tangent  # integers: their tangent is float0, symbolic zeros
        return y, jnp.where(x > 0, tangent, jnp.zeros_like(tangent))

    return relu  # type: ignore[no-any-return]


def _relu_jax_traced(
    x: Any, out: object, where: object, version: ReluVersion, opset: int | None
) -> Any:
    if out is not None or where is not True:
        raise InvalidOutputError(
            "relu() takes no out= or where= inside jax transformations (jax arrays are"
            " immutable); call relu(x) and combine the result with jax.numpy.where"
        )
    checked_dtype(np.dtype(x.dtype), version, opset)
    return _jax_function()(x)


# ---------------------------------------------------------------------------------------------
# scipy.sparse
# ---------------------------------------------------------------------------------------------


def _no_out_or_where(kind: str, out: object, where: object) -> None:
    if out is not None or where is not True:
        raise InvalidOutputError(
            f"relu() takes no out= or where= for {kind}; call relu(x), which returns a new one"
        )


def _relu_sparse(
    x: Any, out: object, where: object, version: ReluVersion, opset: int | None
) -> Any:
    """Relu of the stored values: relu(0) = 0, so the implicit zeros stay zeros. Duplicate
    entries are summed first (Relu of a sum is not the sum of Relus)."""
    _no_out_or_where("a scipy.sparse matrix or array", out, where)
    fmt = getattr(x, "format", None)
    if fmt in ("csr", "csc", "bsr", "coo"):
        if not x.has_canonical_format:  # duplicates may be stored: a summed copy
            x = x.copy()
            x.sum_duplicates()
        data = _relu_new(x.data, version, opset)
        if fmt == "coo":
            return type(x)((data, x.coords), shape=x.shape, copy=False)
        return type(x)((data, x.indices, x.indptr), shape=x.shape, copy=False)
    if fmt == "dia" and len(set(x.offsets.tolist())) == len(x.offsets):
        data = _relu_new(x.data, version, opset)
        return type(x)((data, x.offsets), shape=x.shape, copy=False)
    if fmt in ("dia", "lil", "dok"):
        # Python lists and dicts (or repeated diagonals): computed in CSR, given back in the
        # same format; the structure is rebuilt, not shared.
        return _relu_sparse(x.tocsr(), None, True, version, opset).asformat(fmt)
    raise UnsupportedTypeError(
        f"relu() does not know the scipy.sparse format {fmt!r} of a {type(x).__name__}"
    )


# ---------------------------------------------------------------------------------------------
# pyarrow, and pandas data backed by it
# ---------------------------------------------------------------------------------------------


def _arrow_numpy_dtype(arrow_type: Any, what: str, version: ReluVersion, opset: int | None) -> Any:
    """The numpy dtype of the values of an arrow array of ``arrow_type``, checked."""
    pa_types = sys.modules["pyarrow"].types
    if not (pa_types.is_integer(arrow_type) or pa_types.is_floating(arrow_type)):
        raise UnsupportedTypeError(
            f"relu() needs numbers, got {what} of arrow type {arrow_type};"
            f" allowed types: {', '.join(version.types)}"
        )
    return checked_dtype(np.dtype(arrow_type.to_pandas_dtype()), version, opset)


def _relu_arrow_array(arr: Any, version: ReluVersion, opset: int | None) -> Any:
    """Relu of a pyarrow array: its values computed, its validity bitmap shared (the nulls
    stay nulls, the type stays the type: an int32 array with nulls is not made float64)."""
    pa = sys.modules["pyarrow"]
    dtype = _arrow_numpy_dtype(arr.type, f"a pyarrow {type(arr).__name__}", version, opset)
    validity, data = arr.buffers()[:2]
    count, offset = len(arr), arr.offset
    values = np.frombuffer(data, dtype=dtype, count=offset + count) if data else None
    if values is None:
        values = np.zeros(offset + count, dtype)
    if validity is None or arr.null_count == 0:
        result = _relu_new(values[offset:], version, opset)
        return pa.Array.from_buffers(arr.type, count, [None, pa.py_buffer(result)], 0)
    result = np.empty_like(values)  # the bitmap counts from offset: so do the values
    result[:offset] = 0
    relu_into(values[offset:], result[offset:], True, version, opset)
    return pa.Array.from_buffers(
        arr.type, count, [validity, pa.py_buffer(result)], arr.null_count, offset
    )


def _relu_arrow_chunks(chunked: Any, version: ReluVersion, opset: int | None) -> Any:
    pa = sys.modules["pyarrow"]
    _arrow_numpy_dtype(chunked.type, "a pyarrow ChunkedArray", version, opset)
    chunks = [_relu_arrow_array(chunk, version, opset) for chunk in chunked.chunks]
    return pa.chunked_array(chunks, type=chunked.type)


def _relu_arrow_object(
    x: Any, out: object, where: object, version: ReluVersion, opset: int | None
) -> Any:
    pa = sys.modules["pyarrow"]
    _no_out_or_where("pyarrow data (immutable)", out, where)
    if isinstance(x, pa.Array):
        return _relu_arrow_array(x, version, opset)
    if isinstance(x, pa.ChunkedArray):
        return _relu_arrow_chunks(x, version, opset)
    if isinstance(x, (pa.Table, pa.RecordBatch)):
        columns = [
            _per_part(name, "column", _relu_arrow_any, column, version, opset)
            for name, column in zip(x.column_names, x.columns, strict=True)
        ]
        return type(x).from_arrays(columns, schema=x.schema)
    raise UnsupportedTypeError(
        f"relu() needs numbers, got a pyarrow {type(x).__name__};"
        f" allowed: pyarrow arrays, chunked arrays, tables and record batches of"
        f" {', '.join(version.types)}"
    )


def _relu_arrow_any(column: Any, version: ReluVersion, opset: int | None) -> Any:
    pa = sys.modules["pyarrow"]
    if isinstance(column, pa.ChunkedArray):
        return _relu_arrow_chunks(column, version, opset)
    return _relu_arrow_array(column, version, opset)


def _per_part(name: object, part: str, compute: Callable[..., Any], *args: Any) -> Any:
    """``compute(*args)``, its type refusal prefixed with the column or variable it concerns."""
    try:
        return compute(*args)
    except UnsupportedTypeError as exc:
        raise UnsupportedTypeError(f"{part} {name!r}: {exc}") from None


# ---------------------------------------------------------------------------------------------
# pandas and xarray: each column or variable judged on its own type
# ---------------------------------------------------------------------------------------------


def _is_arrow_backed(dtype: object) -> bool:
    return type(dtype).__name__ == "ArrowDtype"


def _relu_pandas_arrow(x: Any, version: ReluVersion, opset: int | None) -> Any:
    """A pandas Series or Index backed by pyarrow: computed in arrow, nulls kept, its own type."""
    pd = sys.modules["pandas"]
    chunked = _relu_arrow_chunks(x.array.__arrow_array__(), version, opset)
    values = pd.arrays.ArrowExtensionArray(chunked)
    if isinstance(x, pd.Index):
        return pd.Index(values, name=x.name, copy=False)
    result = pd.Series(values, index=x.index, name=x.name, copy=False)
    result.attrs = dict(x.attrs)
    return result


def _relu_pandas(
    x: Any, out: object, where: object, version: ReluVersion, opset: int | None
) -> tuple[Any] | None:
    pd = sys.modules["pandas"]
    if isinstance(x, (pd.Series, pd.Index)):
        if not _is_arrow_backed(x.dtype):
            _refuse_missing_into_out(x, out, lambda: int(x.isna().sum()))
            return None  # numpy or nullable (masked numpy) values: the ufunc path keeps the mask
        _no_out_or_where("pandas data backed by pyarrow", out, where)
        return (_relu_pandas_arrow(x, version, opset),)
    if isinstance(x, pd.arrays.ArrowExtensionArray):
        # (not through its ufunc handling, which casts: int32 with nulls gives double)
        _no_out_or_where("pandas data backed by pyarrow", out, where)
        chunked = _relu_arrow_chunks(x.__arrow_array__(), version, opset)
        return (pd.arrays.ArrowExtensionArray(chunked),)
    if not isinstance(x, pd.DataFrame):
        return None
    types = [_column_type(name, dtype, version, opset) for name, dtype in x.dtypes.items()]
    if not all(isinstance(d, np.dtype) for d in x.dtypes):
        _refuse_missing_into_out(x, out, lambda: int(x.isna().to_numpy().sum()))
    if any(_is_arrow_backed(d) for d in types):
        _no_out_or_where("a DataFrame with columns backed by pyarrow", out, where)
        result = x.copy(deep=False)
        for position, column_type in enumerate(types):
            column = x.iloc[:, position]
            if _is_arrow_backed(column_type):
                result.isetitem(position, _relu_pandas_arrow(column, version, opset))
            else:  # numpy or nullable values, checked above: their own ufunc handling
                result.isetitem(position, relu_ufunc(column))
        return (result,)
    if out is None and where is True:
        return (relu_ufunc(x),)
    if len(set(types)) > 1:
        kinds = ", ".join(f"{name} {dtype}" for name, dtype in zip(x.columns, types, strict=True))
        raise InvalidOutputError(
            f"out= and where= need one type for all of a DataFrame's columns, got {kinds};"
            " call relu(x) without them (each column keeps its type)"
        )
    return None  # one type: the checks of out= and where= of an array-like


def _refuse_missing_into_out(x: Any, out: object, count: Callable[[], int]) -> None:
    """Refuse an ``out=`` for nullable pandas data holding missing values (``count()``): no
    numpy array can hold them (without ``out`` the result keeps them)."""
    if out is None or isinstance(x.dtype if hasattr(x, "dtype") else None, np.dtype):
        return
    missing = count()
    if missing:
        raise InvalidOutputError(
            f"out= cannot hold the {missing} missing value(s) of this {type(x).__name__} of"
            " nullable type; call relu(x) without out (the result keeps them missing)"
        )


def _column_type(name: object, dtype: object, version: ReluVersion, opset: int | None) -> Any:
    """The checked type of the column ``name`` of type ``dtype`` (named in a refusal)."""
    if _is_arrow_backed(dtype):
        arrow_type = dtype.pyarrow_dtype  # type: ignore[attr-defined]
        _per_part(name, "column", _arrow_numpy_dtype, arrow_type, "a column", version, opset)
        return dtype
    return _per_part(name, "column", dispatcher_dtype, _Typed(dtype), version, opset)


class _Typed:
    """Something with only a ``dtype``, to check a column's type as an array's."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: object) -> None:
        self.dtype = dtype


def _relu_dataset(
    x: Any, out: object, where: object, version: ReluVersion, opset: int | None
) -> tuple[Any] | None:
    """An xarray Dataset: every data variable judged on its own type (named in a refusal);
    xarray's ufunc handling then computes each, coordinates and attributes kept."""
    for name, variable in x.data_vars.items():
        dtype = variable.dtype
        _per_part(name, "variable", dispatcher_dtype, _Typed(dtype), version, opset)
    _no_out_or_where("an xarray Dataset", out, where)
    return (relu_ufunc(x),)
