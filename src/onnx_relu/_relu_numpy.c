/*
 * _relu_numpy.c - the extension module onnx_relu._relu: the kernel of src/kernel (relu_kernel.h,
 * where the semantics are written) as a NumPy ufunc, and the kernel's tuning as private functions.
 *
 *   relu                  the ufunc: one ArrayMethod loop per type of the kernel, no legacy loops,
 *                         so it never casts (onnx_relu.relu adds the opset-aware type checks)
 *   _get_num_threads, _set_num_threads, _tuning, _set_tuning, MAX_THREADS
 *                         thread count and thresholds (the package's thread control, the tests,
 *                         the benchmark harness)
 *   _copy                 the benchmark harness's copy ceiling
 *
 * Everything here translates between Python objects and the kernel's C API; nothing computes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#define NPY_TARGET_VERSION NPY_2_0_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>
#include <numpy/dtype_api.h>

#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h> /* sysconf */
#endif

#include "_relu_blocks.h"
#include "relu_kernel.h"
#include "relu_pool.h"
#include "relu_tuning.h"

/* The kernel takes numpy's counts and strides as they are. */
_Static_assert(sizeof(npy_intp) == sizeof(ptrdiff_t), "npy_intp and ptrdiff_t differ in size");
_Static_assert(sizeof(Py_ssize_t) == sizeof(ptrdiff_t), "Py_ssize_t and ptrdiff_t differ in size");

/* ------------------------------------------------------------------------------------------ */
/* The ufunc                                                                                   */
/* ------------------------------------------------------------------------------------------ */

/* The ArrayMethod strided loop: one per type, each a thin shim over relu_compute. */
#define RELU_DEFINE_LOOP(name, int_t, threshold)                                               \
    static int relu_loop_##name(PyArrayMethod_Context *NPY_UNUSED(context),                   \
                                char *const data[], npy_intp const dimensions[],               \
                                npy_intp const strides[], NpyAuxData *NPY_UNUSED(auxdata))     \
    {                                                                                          \
        relu_compute(RELU_TYPE_##name, data[0], data[1], dimensions[0], strides[0],            \
                     strides[1]);                                                              \
        return 0;                                                                              \
    }
RELU_FOR_EACH_TYPE(RELU_DEFINE_LOOP)

/*
 * The DType class of each type, by the X-macro's name. numpy's built-in ones are not constant
 * expressions (they come from numpy's API table), and ml_dtypes.bfloat16's is found at import
 * (its type number is assigned at run time: the local `bfloat16` of relu_make_ufunc), so the
 * table of loops is filled in at import.
 */
#define RELU_NUMPY_DTYPE_int8 (&PyArray_Int8DType)
#define RELU_NUMPY_DTYPE_int16 (&PyArray_Int16DType)
#define RELU_NUMPY_DTYPE_int32 (&PyArray_Int32DType)
#define RELU_NUMPY_DTYPE_int64 (&PyArray_Int64DType)
#define RELU_NUMPY_DTYPE_float16 (&PyArray_HalfDType)
#define RELU_NUMPY_DTYPE_bfloat16 bfloat16
#define RELU_NUMPY_DTYPE_float32 (&PyArray_FloatDType)
#define RELU_NUMPY_DTYPE_float64 (&PyArray_DoubleDType)

typedef struct {
    const char *name;                  /* ArrayMethod name, shown in numpy's error messages */
    PyArrayMethod_StridedLoop *loop;
    PyArray_DTypeMeta *dtype;
} relu_loop_entry;

static int
relu_add_loop(PyObject *ufunc, const relu_loop_entry *entry)
{
    PyArray_DTypeMeta *dtypes[2] = {entry->dtype, entry->dtype};
    /* The same loop serves aligned and unaligned data (the kernel takes any address). */
    PyType_Slot slots[] = {
        {NPY_METH_strided_loop, (void *)entry->loop},
#if RELU_SUPPORTS_UNALIGNED
        {NPY_METH_unaligned_strided_loop, (void *)entry->loop},
#endif
        {0, NULL},
    };
    PyArrayMethod_Spec spec = {
        .name = entry->name,
        .nin = 1,
        .nout = 1,
        .casting = NPY_NO_CASTING,
        .flags = NPY_METH_NO_FLOATINGPOINT_ERRORS |
                 (RELU_SUPPORTS_UNALIGNED ? NPY_METH_SUPPORTS_UNALIGNED : 0),
        .dtypes = dtypes,
        .slots = slots,
    };
    return PyUFunc_AddLoopFromSpec(ufunc, &spec);
}

/*
 * NumPy has a DType per C integer type, and on each platform two of them share a width: int64
 * is C long on Linux and macOS, where C long long ('q': np.longlong, array.array('q'),
 * memoryview.cast('q')) is a second int64 DType; on Windows int32 is C long and 'i' (C int) a
 * second int32. Every C integer type gets the loop of its width, so each spelling of an allowed
 * type is computed alike, and the result keeps the input's DType (numpy's own ufuncs do the same;
 * np.dtype('q') == np.int64 is True).
 */
static int
relu_add_c_integer_loops(PyObject *ufunc)
{
    static const struct {
        int typenum;
        const char *name;
    } c_integers[] = {
        {NPY_BYTE, "relu_byte"}, {NPY_SHORT, "relu_short"}, {NPY_INT, "relu_int"},
        {NPY_LONG, "relu_long"}, {NPY_LONGLONG, "relu_longlong"},
    };
    PyArray_DTypeMeta *registered[] = {&PyArray_Int8DType, &PyArray_Int16DType,
                                       &PyArray_Int32DType, &PyArray_Int64DType};
    for (size_t i = 0; i < sizeof c_integers / sizeof c_integers[0]; i++) {
        PyArray_Descr *descr = PyArray_DescrFromType(c_integers[i].typenum);
        if (descr == NULL) {
            return -1;
        }
        PyArray_DTypeMeta *dtype = (PyArray_DTypeMeta *)Py_TYPE(descr);
        const npy_intp size = PyDataType_ELSIZE(descr);
        Py_DECREF(descr); /* the DType class lives as long as numpy */
        int known = 0;
        for (size_t j = 0; j < sizeof registered / sizeof registered[0]; j++) {
            known |= dtype == registered[j];
        }
        if (known) {
            continue;
        }
        relu_loop_entry entry = {c_integers[i].name, NULL, dtype};
        switch (size) {
        case 1: entry.loop = relu_loop_int8; break;
        case 2: entry.loop = relu_loop_int16; break;
        case 4: entry.loop = relu_loop_int32; break;
        case 8: entry.loop = relu_loop_int64; break;
        default: continue; /* no such platform; no Relu type of that width */
        }
        if (relu_add_loop(ufunc, &entry) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The DType class of ml_dtypes.bfloat16, found at import (its type number is assigned at run time). */
static PyArray_DTypeMeta *
relu_bfloat16_dtype(void)
{
    PyObject *ml_dtypes = PyImport_ImportModule("ml_dtypes");
    if (ml_dtypes == NULL) {
        return NULL;
    }
    PyObject *scalar_type = PyObject_GetAttrString(ml_dtypes, "bfloat16");
    Py_DECREF(ml_dtypes);
    if (scalar_type == NULL) {
        return NULL;
    }
    PyArray_Descr *descr = NULL;
    int ok = PyArray_DescrConverter(scalar_type, &descr);
    Py_DECREF(scalar_type);
    if (!ok || descr == NULL) {
        return NULL;
    }
    if (descr->elsize != 2) {
        PyErr_Format(PyExc_ImportError,
                     "ml_dtypes.bfloat16 has itemsize %d, expected 2", (int)descr->elsize);
        Py_DECREF(descr);
        return NULL;
    }
    PyArray_DTypeMeta *dtype = (PyArray_DTypeMeta *)Py_TYPE(descr);
    Py_INCREF(dtype);
    Py_DECREF(descr);
    return dtype;
}

PyDoc_STRVAR(relu_ufunc_doc,
             "relu(x, /, out=None) -> y\n\n"
             "ONNX Relu as a ufunc: y = x where x > 0 or x is NaN (bits unchanged), +0 elsewhere.\n"
             "Loops: int8, int16, int32, int64, float16, float32, float64, bfloat16 (each C integer\n"
             "type spelling of the four integer types too, e.g. 'q'). An input of any other type\n"
             "is refused under every casting= rule; a loop forced by signature= or dtype=, or an\n"
             "out of another type, is cast by numpy under casting= as for any ufunc.\n"
             "Use onnx_relu.relu() for opset-aware type checks and clear errors.");

/* The ufunc with a loop for every type of the kernel; NULL with an exception set on failure. */
static PyObject *
relu_make_ufunc(void)
{
    PyArray_DTypeMeta *bfloat16 = relu_bfloat16_dtype();
    if (bfloat16 == NULL) {
        return NULL;
    }
    /* No legacy loops: the ufunc has only the ArrayMethod loops below and so never casts. */
    PyObject *ufunc = PyUFunc_FromFuncAndData(NULL, NULL, NULL, 0, 1, 1, PyUFunc_None, "relu",
                                              relu_ufunc_doc, 0);
    if (ufunc != NULL) {
#define RELU_LOOP_ENTRY(name, int_t, threshold)                                                \
    {"relu_" #name, relu_loop_##name, RELU_NUMPY_DTYPE_##name},
        const relu_loop_entry loops[RELU_TYPE_COUNT] = {RELU_FOR_EACH_TYPE(RELU_LOOP_ENTRY)};
        for (int i = 0; i < RELU_TYPE_COUNT; i++) {
            if (relu_add_loop(ufunc, &loops[i]) < 0) {
                Py_CLEAR(ufunc);
                break;
            }
        }
        if (ufunc != NULL && relu_add_c_integer_loops(ufunc) < 0) {
            Py_CLEAR(ufunc);
        }
    }
    Py_DECREF(bfloat16);
    return ufunc;
}

/* ------------------------------------------------------------------------------------------ */
/* Thread count and tuning                                                                     */
/* ------------------------------------------------------------------------------------------ */

static PyObject *
relu_py_get_num_threads(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    return PyLong_FromLong(relu_get_num_threads());
}

static PyObject *
relu_py_set_num_threads(PyObject *NPY_UNUSED(self), PyObject *arg)
{
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (n < 1 || n > RELU_MAX_THREADS) {
        PyErr_Format(PyExc_ValueError, "the number of threads must be in 1..%d, got %ld",
                     (int)RELU_MAX_THREADS, n);
        return NULL;
    }
    return PyLong_FromLong(relu_set_num_threads((int)n));
}

static PyObject *
relu_tuning_dict(void)
{
    const relu_tuning_report tuning = relu_get_tuning();
    return Py_BuildValue(
        "{s:i,s:i,s:O,s:n,s:n,s:i,s:s,s:s,s:n,s:n,s:n,s:n,s:n,s:s,s:s,s:i}",
        "num_threads", tuning.num_threads,
        "max_threads", (int)RELU_MAX_THREADS,
        "threads_supported", tuning.threads_supported ? Py_True : Py_False,
        "l2_bytes", (Py_ssize_t)tuning.caches.l2_bytes,
        "llc_bytes", (Py_ssize_t)tuning.caches.llc_bytes,
        "llc_shared_cpus", tuning.caches.llc_shared_cpus,
        "cache_source", tuning.caches.source,
        "vendor", relu_vendor_name(tuning.vendor),
        "parallel_threshold", (Py_ssize_t)tuning.thresholds.parallel_bytes,
        "min_chunk", (Py_ssize_t)tuning.thresholds.min_chunk_bytes,
        "nt_threshold", (Py_ssize_t)tuning.thresholds.nt_bytes,
        "default_nt_threshold", (Py_ssize_t)tuning.default_nt_bytes,
        "spin_ns", (Py_ssize_t)tuning.thresholds.spin_ns,
        "nt_isa", relu_isa_name(tuning.nt_isa),
        "best_nt_isa", relu_isa_name(tuning.best_nt_isa),
        "pool_workers", relu_pool_workers());
}

static PyObject *
relu_py_tuning(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    return relu_tuning_dict();
}

static PyObject *
relu_py_set_tuning(PyObject *NPY_UNUSED(self), PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"parallel_threshold", "nt_threshold", "min_chunk", "nt_isa",
                               "spin_ns", NULL};
    Py_ssize_t parallel = -1, nt = -1, min_chunk = -1, spin = -1;
    const char *isa_name = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$nnnzn:_set_tuning", keywords, &parallel,
                                     &nt, &min_chunk, &isa_name, &spin)) {
        return NULL;
    }
    const relu_isa best = relu_get_tuning().best_nt_isa;
    int isa = -1;
    if (isa_name != NULL) {
        isa = relu_isa_from_name(isa_name);
        if (isa < 0 || isa > (int)best) {
            PyErr_Format(PyExc_ValueError,
                         "nt_isa '%s' is not available here; allowed: 'none' up to '%s'",
                         isa_name, relu_isa_name(best));
            return NULL;
        }
    }
    PyObject *previous = relu_tuning_dict();
    if (previous == NULL) {
        return NULL;
    }
    /* Negative means "leave as it is"; 0 is a valid threshold (always) for the tests. */
    relu_set_thresholds((relu_thresholds){parallel, min_chunk, nt, spin});
    if (isa >= 0) {
        relu_set_nt_isa((relu_isa)isa); /* checked above */
    }
    return previous;
}

/* Cache detection and the streaming-store rule on given inputs (the recorded-tree tests, the
 * scan's report): the kernel's pure functions. */

#if defined(_SC_LEVEL3_CACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
#define RELU_SYSCONF(name) sysconf(name)
#else
#define RELU_SYSCONF(name) 0L
#endif

static PyObject *
relu_py_read_caches(PyObject *NPY_UNUSED(self), PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"sysfs_root", "sysconf_l2", "sysconf_l3", NULL};
    PyObject *root_obj = NULL;
    PyObject *l2_obj = Py_None, *l3_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|$OO:_read_caches", keywords,
                                     PyUnicode_FSConverter, &root_obj, &l2_obj, &l3_obj)) {
        return NULL;
    }
    long l2 = 0, l3 = 0;
    if (l2_obj == Py_None) {
        l2 = RELU_SYSCONF(_SC_LEVEL2_CACHE_SIZE);
    }
    else if ((l2 = PyLong_AsLong(l2_obj)) == -1 && PyErr_Occurred()) {
        Py_DECREF(root_obj);
        return NULL;
    }
    if (l3_obj == Py_None) {
        l3 = RELU_SYSCONF(_SC_LEVEL3_CACHE_SIZE);
    }
    else if ((l3 = PyLong_AsLong(l3_obj)) == -1 && PyErr_Occurred()) {
        Py_DECREF(root_obj);
        return NULL;
    }
    const relu_caches caches = relu_read_caches(PyBytes_AS_STRING(root_obj), l2, l3);
    Py_DECREF(root_obj);
    return Py_BuildValue("{s:n,s:n,s:i,s:s}", "l2_bytes", (Py_ssize_t)caches.l2_bytes,
                         "llc_bytes", (Py_ssize_t)caches.llc_bytes, "llc_shared_cpus",
                         caches.llc_shared_cpus, "cache_source", caches.source);
}

static PyObject *
relu_py_vendor_from_cpuid(PyObject *NPY_UNUSED(self), PyObject *arg)
{
    const char *vendor_id = PyUnicode_AsUTF8(arg);
    if (vendor_id == NULL) {
        return NULL;
    }
    return PyUnicode_FromString(relu_vendor_name(relu_vendor_from_cpuid(vendor_id)));
}

static PyObject *
relu_py_default_nt_threshold(PyObject *NPY_UNUSED(self), PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"vendor", "l2_bytes", "llc_bytes", NULL};
    const char *vendor_name;
    Py_ssize_t l2, llc;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "snn:_default_nt_threshold", keywords,
                                     &vendor_name, &l2, &llc)) {
        return NULL;
    }
    int vendor = -1;
    for (int v = RELU_VENDOR_OTHER; v <= RELU_VENDOR_AMD; v++) {
        if (strcmp(vendor_name, relu_vendor_name((relu_vendor)v)) == 0) {
            vendor = v;
        }
    }
    if (vendor < 0) {
        PyErr_Format(PyExc_ValueError, "unknown vendor '%s'; allowed: 'intel', 'amd', 'other'",
                     vendor_name);
        return NULL;
    }
    const relu_caches caches = {l2, llc, 0, "given"};
    return PyLong_FromSsize_t(relu_default_nt_bytes(&caches, (relu_vendor)vendor));
}

/* ------------------------------------------------------------------------------------------ */
/* The copy ceiling                                                                            */
/* ------------------------------------------------------------------------------------------ */

static PyObject *
relu_py_copy(PyObject *NPY_UNUSED(self), PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"src", "dst", "nontemporal", NULL};
    PyObject *src_obj, *dst_obj;
    int nontemporal = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$p:_copy", keywords, &src_obj, &dst_obj,
                                     &nontemporal)) {
        return NULL;
    }
    Py_buffer src, dst;
    if (PyObject_GetBuffer(src_obj, &src, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (PyObject_GetBuffer(dst_obj, &dst, PyBUF_SIMPLE | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&src);
        return NULL;
    }
    PyObject *result = NULL;
    const char *s = (const char *)src.buf;
    char *d = (char *)dst.buf;
    if (src.len != dst.len) {
        PyErr_Format(PyExc_ValueError, "_copy needs buffers of the same size, got %zd and %zd bytes",
                     src.len, dst.len);
    }
    else if (s != d && s < d + dst.len && d < s + src.len) {
        PyErr_SetString(PyExc_ValueError, "_copy: the buffers overlap (only identical ones may)");
    }
    else {
        Py_BEGIN_ALLOW_THREADS
        relu_copy_ceiling(s, d, (size_t)src.len, nontemporal);
        Py_END_ALLOW_THREADS
        result = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&dst);
    PyBuffer_Release(&src);
    return result;
}

/* ------------------------------------------------------------------------------------------ */
/* The output cache: relu's large outputs through a NumPy memory handler (NEP 49)               */
/* ------------------------------------------------------------------------------------------ */

static void *
relu_handler_malloc(void *NPY_UNUSED(ctx), size_t size)
{
    return relu_blocks_alloc(size, 0);
}

static void *
relu_handler_calloc(void *NPY_UNUSED(ctx), size_t count, size_t item_size)
{
    if (item_size != 0 && count > SIZE_MAX / item_size) {
        return NULL;
    }
    return relu_blocks_alloc(count * item_size, 1);
}

static void *
relu_handler_realloc(void *NPY_UNUSED(ctx), void *data, size_t size)
{
    return relu_blocks_realloc(data, size);
}

static void
relu_handler_free(void *NPY_UNUSED(ctx), void *data, size_t NPY_UNUSED(size))
{
    relu_blocks_free(data); /* the block's header knows its size (resize changes numpy's) */
}

static PyDataMem_Handler relu_mem_handler = {
    "onnx_relu_output_cache",
    1,
    {NULL, relu_handler_malloc, relu_handler_calloc, relu_handler_realloc, relu_handler_free},
};

/* The handler as a capsule (made at import, never freed: arrays keep a reference to it). */
static PyObject *relu_mem_handler_capsule = NULL;

/*
 * _empty_like(x): a new uninitialised array like x (same dtype, shape and memory order, a plain
 * ndarray owning its data) whose memory comes from the output cache; None where relu should let
 * the ufunc allocate as usual: a cache that is off, an input that is not an exact ndarray or not
 * C- or F-contiguous (the ufunc then picks the layout), a 0-d one (relu returns a scalar) or one
 * smaller than the cache's minimum.
 *
 * The handler is current only for this one allocation, then the previous one (a context
 * variable, so per thread and per asyncio task) is put back: no other array is affected.
 */
static PyObject *
relu_py_empty_like(PyObject *NPY_UNUSED(self), PyObject *arg)
{
    if (!PyArray_CheckExact(arg) || !relu_blocks_enabled()) {
        Py_RETURN_NONE;
    }
    PyArrayObject *x = (PyArrayObject *)arg;
    const npy_intp nbytes = PyArray_NBYTES(x);
    if (PyArray_NDIM(x) == 0 || nbytes == 0 || (size_t)nbytes < relu_blocks_min_bytes() ||
        !(PyArray_IS_C_CONTIGUOUS(x) || PyArray_IS_F_CONTIGUOUS(x))) {
        Py_RETURN_NONE;
    }
    PyObject *previous = PyDataMem_SetHandler(relu_mem_handler_capsule);
    if (previous == NULL) {
        return NULL;
    }
    PyArray_Descr *descr = PyArray_DESCR(x);
    Py_INCREF(descr); /* stolen */
    PyObject *result = PyArray_NewLikeArray(x, NPY_KEEPORDER, descr, 0);
    PyObject *ours = PyDataMem_SetHandler(previous);
    Py_DECREF(previous);
    if (ours == NULL) {
        Py_XDECREF(result);
        return NULL;
    }
    Py_DECREF(ours);
    return result;
}

static PyObject *
relu_cache_dict(relu_blocks_stats stats)
{
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n}",
                         "max_bytes", (Py_ssize_t)stats.max_bytes,
                         "min_bytes", (Py_ssize_t)stats.min_bytes,
                         "cached_bytes", (Py_ssize_t)stats.cached_bytes,
                         "cached_blocks", (Py_ssize_t)stats.cached_blocks,
                         "live_blocks", (Py_ssize_t)stats.live_blocks,
                         "live_bytes", (Py_ssize_t)stats.live_bytes,
                         "hits", (Py_ssize_t)stats.hits,
                         "misses", (Py_ssize_t)stats.misses,
                         "failures", (Py_ssize_t)stats.failures);
}

static PyObject *
relu_py_cache_info(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    return relu_cache_dict(relu_blocks_get_stats());
}

static PyObject *
relu_py_set_cache(PyObject *NPY_UNUSED(self), PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"max_bytes", "min_bytes", NULL};
    Py_ssize_t max_bytes = -1, min_bytes = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$nn:_set_cache", keywords, &max_bytes,
                                     &min_bytes)) {
        return NULL;
    }
    return relu_cache_dict(relu_blocks_configure(max_bytes, min_bytes));
}

static PyObject *
relu_py_release_cache(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    size_t released;
    Py_BEGIN_ALLOW_THREADS
    released = relu_blocks_release();
    Py_END_ALLOW_THREADS
    return PyLong_FromSize_t(released);
}

/* At the very end of the interpreter (after every array it frees while finalising): off and
 * empty, so nothing stays mapped by the cache. */
static void
relu_cache_at_exit(void)
{
    relu_blocks_configure(0, -1);
}

/* ------------------------------------------------------------------------------------------ */
/* Module definition                                                                           */
/* ------------------------------------------------------------------------------------------ */

static PyMethodDef relu_methods[] = {
    {"_get_num_threads", relu_py_get_num_threads, METH_NOARGS,
     "_get_num_threads() -> int: the threads a large call may use (onnx_relu.get_num_threads)."},
    {"_set_num_threads", relu_py_set_num_threads, METH_O,
     "_set_num_threads(n) -> previous: set the thread count (onnx_relu.set_num_threads)."},
    {"_tuning", relu_py_tuning, METH_NOARGS,
     "_tuning() -> dict: thread count, thresholds in bytes, cache size, streaming-store ISA."},
    {"_set_tuning", (PyCFunction)(void (*)(void))relu_py_set_tuning, METH_VARARGS | METH_KEYWORDS,
     "_set_tuning(*, parallel_threshold, nt_threshold, min_chunk, nt_isa, spin_ns) -> previous.\n"
     "For tests and benchmarks; thresholds are output sizes in bytes, -1 leaves one unchanged."},
    {"_empty_like", relu_py_empty_like, METH_O,
     "_empty_like(x) -> array or None: relu's output for x from the output cache (see the C)."},
    {"_cache_info", relu_py_cache_info, METH_NOARGS,
     "_cache_info() -> dict: the output cache's cap, minimum size, idle and live blocks, hits."},
    {"_set_cache", (PyCFunction)(void (*)(void))relu_py_set_cache, METH_VARARGS | METH_KEYWORDS,
     "_set_cache(*, max_bytes=-1, min_bytes=-1) -> previous _cache_info(); -1 leaves one as is."},
    {"_release_cache", relu_py_release_cache, METH_NOARGS,
     "_release_cache() -> int: unmaps the cache's idle blocks; returns the bytes released."},
    {"_read_caches", (PyCFunction)(void (*)(void))relu_py_read_caches,
     METH_VARARGS | METH_KEYWORDS,
     "_read_caches(sysfs_root, *, sysconf_l2=None, sysconf_l3=None) -> dict: the caches as the\n"
     "kernel reads them from a sysfs tree (a recorded one in tests), then the sysconf figures\n"
     "(None: this machine's), then defaults. Keys: l2_bytes, llc_bytes, llc_shared_cpus,\n"
     "cache_source."},
    {"_vendor_from_cpuid", relu_py_vendor_from_cpuid, METH_O,
     "_vendor_from_cpuid(vendor_id) -> 'intel', 'amd' or 'other'."},
    {"_default_nt_threshold", (PyCFunction)(void (*)(void))relu_py_default_nt_threshold,
     METH_VARARGS | METH_KEYWORDS,
     "_default_nt_threshold(vendor, l2_bytes, llc_bytes) -> bytes: the kernel's streaming rule."},
    {"_copy", (PyCFunction)(void (*)(void))relu_py_copy, METH_VARARGS | METH_KEYWORDS,
     "_copy(src, dst, *, nontemporal=True): the benchmark harness's copy ceiling.\n"
     "Copies with streaming (or regular) stores on the current threads, split like a relu call;\n"
     "src and dst: contiguous buffers of the same size, disjoint or identical (in place)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef relu_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "onnx_relu._relu",
    .m_doc = "Compiled core of onnx-relu: the relu ufunc, its thread pool and tuning.",
    .m_size = -1,
    .m_methods = relu_methods,
};

PyMODINIT_FUNC
PyInit__relu(void)
{
    PyObject *module = NULL, *ufunc = NULL;

    import_array();
    import_umath();

    if (relu_kernel_init() != 0) {
        PyErr_SetString(PyExc_ImportError, "onnx_relu._relu: pthread_atfork failed");
        return NULL;
    }
    if (relu_blocks_init() != 0) {
        PyErr_SetString(PyExc_ImportError, "onnx_relu._relu: pthread_atfork failed");
        return NULL;
    }
    relu_mem_handler_capsule = PyCapsule_New(&relu_mem_handler, "mem_handler", NULL);
    if (relu_mem_handler_capsule == NULL) {
        return NULL;
    }
    if (Py_AtExit(relu_cache_at_exit) < 0) {
        PyErr_SetString(PyExc_ImportError, "onnx_relu._relu: no room for an exit handler");
        return NULL;
    }
    module = PyModule_Create(&relu_module);
    if (module == NULL) {
        goto fail;
    }
    ufunc = relu_make_ufunc();
    if (ufunc == NULL) {
        goto fail;
    }
    if (PyModule_AddObject(module, "relu", ufunc) < 0) {
        goto fail;
    }
    ufunc = NULL; /* reference stolen by the module */
    if (PyModule_AddIntConstant(module, "MAX_THREADS", RELU_MAX_THREADS) < 0) {
        goto fail;
    }
    return module;

fail:
    Py_XDECREF(ufunc);
    Py_XDECREF(module);
    return NULL;
}
