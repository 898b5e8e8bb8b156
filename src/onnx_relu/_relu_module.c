/*
 * _relu_module.c - the extension module onnx_relu._relu (see _relu_module.h for its units):
 *
 *   relu                  the ufunc (_relu_ufunc.c)
 *   _get_num_threads, _set_num_threads, _tuning, _set_tuning, MAX_THREADS
 *                         thread count, thresholds and what the kernel found about the machine
 *                         (onnx_relu.tuning wraps them)
 *   _empty_like, _cache_info, _set_cache, _release_cache
 *                         the output cache (_relu_memory.c)
 *   _copy                 the copy ceiling `onnx-relu bench` compares relu with
 *
 * Everything here translates between Python objects and the kernel's C API; nothing computes.
 */
#define RELU_MODULE_IMPORTS_NUMPY
#include "_relu_module.h"

#include "relu_kernel.h"
#include "relu_pool.h"
#include "relu_tuning.h"

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
    /* Negative means "leave as it is"; 0 means every call. */
    relu_set_thresholds((relu_thresholds){parallel, min_chunk, nt, spin});
    if (isa >= 0) {
        relu_set_nt_isa((relu_isa)isa); /* checked above */
    }
    return previous;
}

/* ------------------------------------------------------------------------------------------ */
/* The copy ceiling: what `onnx-relu bench` compares relu with                               */
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
     "_set_tuning(*, parallel_threshold, nt_threshold, min_chunk, nt_isa, spin_ns) -> previous\n"
     "_tuning(): thresholds are output sizes in bytes (0: every call), -1 leaves one unchanged\n"
     "(onnx_relu.tuning.set_kernel_tuning)."},
    {"_empty_like", relu_py_empty_like, METH_O,
     "_empty_like(x) -> array or None: relu's output for x from the output cache (see the C)."},
    {"_cache_info", relu_py_cache_info, METH_NOARGS,
     "_cache_info() -> dict: the output cache's cap, minimum size, idle and live blocks, hits."},
    {"_set_cache", (PyCFunction)(void (*)(void))relu_py_set_cache, METH_VARARGS | METH_KEYWORDS,
     "_set_cache(*, max_bytes=-1, min_bytes=-1) -> previous _cache_info(); -1 leaves one as is."},
    {"_release_cache", relu_py_release_cache, METH_NOARGS,
     "_release_cache() -> int: unmaps the cache's idle blocks; returns the bytes released."},
    {"_copy", (PyCFunction)(void (*)(void))relu_py_copy, METH_VARARGS | METH_KEYWORDS,
     "_copy(src, dst, *, nontemporal=True): the copy ceiling of onnx-relu bench.\n"
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
    if (relu_memory_init() != 0) {
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