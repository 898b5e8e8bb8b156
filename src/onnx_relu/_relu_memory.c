/*
 * _relu_memory.c - relu's large outputs from the output cache (_relu_blocks.c) through a NumPy
 * memory handler (NEP 49), and the module's functions that inspect and change the cache.
 */
#include "_relu_module.h"

#include <stdatomic.h>

#include "_relu_blocks.h"


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

/* The handler as a capsule: made by the first execution of the module, then never freed
 * (arrays keep a reference to it) nor replaced; read without a lock by every allocating call,
 * published with release/acquire so that a reader sees the capsule complete. */
static _Atomic(PyObject *) relu_mem_handler_capsule = NULL;

/* At the very end of the interpreter (after every array it frees while finalising): off and
 * empty, so nothing stays mapped by the cache. */
static void
relu_cache_at_exit(void)
{
    relu_blocks_configure(0, -1);
}

int
relu_memory_process_init(void)
{
    return relu_blocks_init() == 0 && Py_AtExit(relu_cache_at_exit) == 0 ? 0 : -1;
}

int
relu_memory_init(void)
{
    if (atomic_load_explicit(&relu_mem_handler_capsule, memory_order_acquire) != NULL) {
        return 0;
    }
    PyObject *capsule = PyCapsule_New(&relu_mem_handler, "mem_handler", NULL);
    if (capsule == NULL) {
        return -1;
    }
    PyObject *expected = NULL;
    if (!atomic_compare_exchange_strong_explicit(&relu_mem_handler_capsule, &expected, capsule,
                                                 memory_order_acq_rel, memory_order_acquire)) {
        Py_DECREF(capsule); /* another execution made it first */
    }
    return 0;
}

/* x's new output (NPY_KEEPORDER: numpy's ufuncs lay out theirs so) from the output cache. */
static PyObject *
relu_cached_like(PyArrayObject *x)
{
    PyObject *previous = PyDataMem_SetHandler(
        atomic_load_explicit(&relu_mem_handler_capsule, memory_order_acquire));
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

static int
relu_cache_serves(PyArrayObject *x)
{
    const npy_intp nbytes = PyArray_NBYTES(x);
    return relu_blocks_enabled() && PyArray_NDIM(x) > 0 && nbytes > 0 &&
           (size_t)nbytes >= relu_blocks_min_bytes();
}

PyObject *
relu_new_output_like(PyArrayObject *x)
{
    if (relu_cache_serves(x)) {
        return relu_cached_like(x);
    }
    PyArray_Descr *descr = PyArray_DESCR(x);
    Py_INCREF(descr); /* stolen */
    return PyArray_NewLikeArray(x, NPY_KEEPORDER, descr, 0);
}

/*
 * _empty_like(x): a new uninitialised array like x (same dtype and shape, laid out in x's order
 * as numpy's ufuncs lay out their outputs, a plain ndarray owning its data) whose memory comes
 * from the output cache; None where relu should let the ufunc allocate as usual: a cache that
 * is off, an input that is not an exact ndarray, a 0-d one (relu returns a scalar) or one
 * smaller than the cache's minimum.
 *
 * The handler is current only for this one allocation, then the previous one (a context
 * variable, so per thread and per asyncio task) is put back: no other array is affected.
 */
PyObject *
relu_py_empty_like(PyObject *NPY_UNUSED(self), PyObject *arg)
{
    if (!PyArray_CheckExact(arg) || !relu_cache_serves((PyArrayObject *)arg)) {
        Py_RETURN_NONE;
    }
    return relu_cached_like((PyArrayObject *)arg);
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

PyObject *
relu_py_cache_info(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    return relu_cache_dict(relu_blocks_get_stats());
}

PyObject *
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

PyObject *
relu_py_release_cache(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    size_t released;
    Py_BEGIN_ALLOW_THREADS
    released = relu_blocks_release();
    Py_END_ALLOW_THREADS
    return PyLong_FromSize_t(released);
}
