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

#include <limits.h>
#include <string.h>

#include "relu_kernel.h"
#include "relu_pool.h"
#include "relu_tuning.h"
#include "relu_glibc_compat.h" /* pthread_once at its oldest glibc version (manylinux) */
#include "_relu_kernel_entry.h"

/* ------------------------------------------------------------------------------------------ */
/* Thread count and tuning                                                                     */
/* ------------------------------------------------------------------------------------------ */

#include <pthread.h> /* the module is built for Linux only (docs/platforms.md) */
static pthread_mutex_t relu_tuning_mutex = PTHREAD_MUTEX_INITIALIZER;
static void relu_tuning_lock(void) { pthread_mutex_lock(&relu_tuning_mutex); }
static void relu_tuning_unlock(void) { pthread_mutex_unlock(&relu_tuning_mutex); }

static PyObject *
relu_py_get_num_threads(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    return PyLong_FromLong(relu_get_num_threads());
}

static PyObject *
relu_py_set_num_threads(PyObject *NPY_UNUSED(self), PyObject *arg)
{
    int overflow = 0;
    const long n = PyLong_AsLongAndOverflow(arg, &overflow);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    /* The range is the kernel's: relu_set_num_threads refuses (-1) a count outside it. */
    const int previous =
        overflow || n < INT_MIN || n > INT_MAX ? -1 : relu_set_num_threads((int)n);
    if (previous < 0) {
        PyErr_Format(PyExc_ValueError,
                     "the number of threads must be in 1..%d, got %S;"
                     " 1 runs every call on the calling thread",
                     (int)RELU_MAX_THREADS, arg);
        return NULL;
    }
    return PyLong_FromLong(previous);
}

/* Each size setting's keyword as _set_tuning's docstring lists it. */
#define RELU_SETTING_DOC_NAME(python_name, field) #python_name ", "

/* The index of each size setting among set_kernel_tuning's keywords. */
#define RELU_SETTING_INDEX(python_name, field) RELU_SETTING_##python_name,
enum { RELU_FOR_EACH_SIZE_SETTING(RELU_SETTING_INDEX) RELU_SETTING_COUNT };

static PyObject *
relu_tuning_dict(relu_tuning_report tuning)
{
    /* What the kernel found and reports, then the size settings and their defaults by their
     * Python names (the keys of src/onnx_relu/_spec.py's REPORT, SETTINGS and NAMED_SETTINGS). */
    PyObject *dict = Py_BuildValue(
        "{s:i,s:i,s:O,s:n,s:n,s:i,s:s,s:s,s:s,s:s,s:i}",
        "num_threads", tuning.num_threads,
        "max_threads", (int)RELU_MAX_THREADS,
        "threads_supported", tuning.threads_supported ? Py_True : Py_False,
        "l2_bytes", (Py_ssize_t)tuning.caches.l2_bytes,
        "llc_bytes", (Py_ssize_t)tuning.caches.llc_bytes,
        "llc_shared_cpus", tuning.caches.llc_shared_cpus,
        "cache_source", tuning.caches.source,
        "vendor", relu_vendor_name(tuning.vendor),
        "nt_isa", relu_isa_name(tuning.nt_isa),
        "best_nt_isa", relu_isa_name(tuning.best_nt_isa),
        "pool_workers", relu_pool_workers());
    const Py_ssize_t settings[2 * RELU_SETTING_COUNT] = {
#define RELU_SETTING_VALUE(python_name, field) (Py_ssize_t)tuning.thresholds.field,
#define RELU_SETTING_DEFAULT(python_name, field) (Py_ssize_t)tuning.defaults.field,
        RELU_FOR_EACH_SIZE_SETTING(RELU_SETTING_VALUE)
        RELU_FOR_EACH_SIZE_SETTING(RELU_SETTING_DEFAULT)};
    static const char *const names[2 * RELU_SETTING_COUNT] = {
#define RELU_SETTING_NAME(python_name, field) #python_name,
#define RELU_SETTING_DEFAULT_NAME(python_name, field) "default_" #python_name,
        RELU_FOR_EACH_SIZE_SETTING(RELU_SETTING_NAME)
        RELU_FOR_EACH_SIZE_SETTING(RELU_SETTING_DEFAULT_NAME)};
    for (int i = 0; dict != NULL && i < 2 * RELU_SETTING_COUNT; i++) {
        PyObject *value = PyLong_FromSsize_t(settings[i]);
        if (value == NULL || PyDict_SetItemString(dict, names[i], value) < 0) {
            Py_CLEAR(dict);
        }
        Py_XDECREF(value);
    }
    return dict;
}

static PyObject *
relu_py_tuning(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    return relu_tuning_dict(relu_get_tuning());
}

static PyObject *
relu_py_set_tuning(PyObject *NPY_UNUSED(self), PyObject *args, PyObject *kwargs)
{
#define RELU_SETTING_KEYWORD(python_name, field) #python_name,
#define RELU_SETTING_FORMAT(python_name, field) "n"
#define RELU_SETTING_ADDRESS(python_name, field) &values[RELU_SETTING_##python_name],
    static char *keywords[] = {RELU_FOR_EACH_SIZE_SETTING(RELU_SETTING_KEYWORD) "nt_isa", NULL};
    Py_ssize_t values[RELU_SETTING_COUNT];
    for (int i = 0; i < RELU_SETTING_COUNT; i++) {
        values[i] = -1; /* not given: left as it is */
    }
    const char *isa_name = NULL;
    const char *format = "|$" RELU_FOR_EACH_SIZE_SETTING(RELU_SETTING_FORMAT) "z:_set_tuning";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, format, keywords,
                                     RELU_FOR_EACH_SIZE_SETTING(RELU_SETTING_ADDRESS) &isa_name)) {
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
    /* The settings this call replaces, taken with the change under one lock so that concurrent
     * callers each get back what they replaced (the lock is never held by a thread that waits
     * for the GIL: nothing inside it calls Python). */
    relu_tuning_lock();
    const relu_tuning_report previous = relu_get_tuning();
    /* Negative means "leave as it is"; 0 means every call. */
#define RELU_SETTING_GIVEN(python_name, field) .field = values[RELU_SETTING_##python_name],
    relu_set_thresholds((relu_thresholds){RELU_FOR_EACH_SIZE_SETTING(RELU_SETTING_GIVEN)});
    if (isa >= 0) {
        relu_set_nt_isa((relu_isa)isa); /* checked above */
    }
    relu_tuning_unlock();
    return relu_tuning_dict(previous);
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
/* The types ml_dtypes provides, when ml_dtypes is loaded                                     */
/* ------------------------------------------------------------------------------------------ */

/* Python < 3.13 has no critical sections; the GIL and the flag set before the loop is added
 * (nothing between the test and the set calls Python) keep a second caller out there. */
#ifndef Py_BEGIN_CRITICAL_SECTION
#define Py_BEGIN_CRITICAL_SECTION(op) {
#define Py_END_CRITICAL_SECTION() }
#endif

typedef struct {
    /* 1 once the ufunc of this module has the loop of that type (or is adding it); for the
     * types ml_dtypes provides */
    unsigned char late_loop[RELU_TYPE_COUNT];
} relu_module_state;

/* The loop of `type` for `dtype_obj`, once: 1 if this call added it, 0 if it was there, -1. */
static int
relu_add_late_loop_once(PyObject *module, relu_module_state *state, relu_type type,
                        PyObject *dtype_obj)
{
    int added = 0, failed = 0;
    Py_BEGIN_CRITICAL_SECTION(module);
    if (!state->late_loop[type]) {
        state->late_loop[type] = 1;
        PyObject *ufunc = PyObject_GetAttrString(module, "relu");
        failed = ufunc == NULL || relu_add_late_loop(ufunc, type, dtype_obj) < 0;
        Py_XDECREF(ufunc);
        state->late_loop[type] = !failed;
        added = !failed;
    }
    Py_END_CRITICAL_SECTION();
    return failed ? -1 : added;
}

static PyObject *
relu_py_add_ml_dtypes_loops(PyObject *module, PyObject *dtypes)
{
    relu_module_state *state = (relu_module_state *)PyModule_GetState(module);
    if (state == NULL) {
        return NULL;
    }
    int added = 0;
#define RELU_ADD_LATE_LOOP(name, attribute)                                                     \
    {                                                                                          \
        PyObject *dtype = PyMapping_GetItemString(dtypes, #name);                              \
        const int result = dtype == NULL ? -1                                                  \
                                         : relu_add_late_loop_once(module, state,              \
                                                                   RELU_TYPE_##name, dtype);   \
        Py_XDECREF(dtype);                                                                     \
        if (result < 0) {                                                                      \
            return NULL;                                                                       \
        }                                                                                      \
        added += result;                                                                       \
    }
    RELU_FOR_EACH_ML_DTYPES_TYPE(RELU_ADD_LATE_LOOP)
    return PyLong_FromLong(added);
}

/*
 * The loops of ml_dtypes' types are added when ml_dtypes is loaded: now if it is, else when it is
 * imported, by whomever (onnx_relu.dtypes watches for it): float work never imports ml_dtypes,
 * and the ufunc has those loops whichever of the two is imported first.
 */
static int
relu_watch_for_ml_dtypes(PyObject *module)
{
    PyObject *dtypes = PyImport_ImportModule("onnx_relu.dtypes");
    if (dtypes == NULL) {
        return -1;
    }
    PyObject *add = PyObject_GetAttrString(module, "_add_ml_dtypes_loops");
    PyObject *result =
        add == NULL ? NULL : PyObject_CallMethod(dtypes, "_when_ml_dtypes_loaded", "O", add);
    Py_XDECREF(add);
    Py_DECREF(dtypes);
    if (result == NULL) {
        return -1;
    }
    Py_DECREF(result);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The kernel for other native code (_relu_kernel_entry.h)                                     */
/* ------------------------------------------------------------------------------------------ */

static int
relu_entry_type_code(const char *name)
{
#define RELU_ENTRY_TYPE_CODE(tname, int_t, threshold)                                              \
    if (strcmp(name, #tname) == 0) {                                                               \
        return (int)RELU_TYPE_##tname;                                                             \
    }
    RELU_FOR_EACH_TYPE(RELU_ENTRY_TYPE_CODE)
#undef RELU_ENTRY_TYPE_CODE
    return -1;
}

static size_t
relu_entry_type_size(int type)
{
    return relu_type_size((relu_type)type);
}

static void
relu_entry_compute(int type, const void *in, void *out, ptrdiff_t n, ptrdiff_t in_stride,
                   ptrdiff_t out_stride)
{
    relu_compute((relu_type)type, in, out, n, in_stride, out_stride);
}

static const relu_kernel_entry relu_entry = {
    RELU_KERNEL_ENTRY_VERSION,
    relu_entry_type_code,
    relu_entry_type_size,
    relu_entry_compute,
};

static PyObject *
relu_py_kernel_entry(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    return PyCapsule_New((void *)&relu_entry, RELU_KERNEL_ENTRY_CAPSULE, NULL);
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
     "_set_tuning(*, " RELU_FOR_EACH_SIZE_SETTING(RELU_SETTING_DOC_NAME) "nt_isa) -> the previous\n"
     "_tuning(); sizes in output bytes (0: every call), -1 leaves one unchanged\n"
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
    {"_relu_view", relu_py_relu_view, METH_VARARGS,
     "_relu_view(x, out) -> out or None: relu of a view numpy cannot merge into one loop call,\n"
     "as one kernel call over its rows (out None: a new array); None where the ufunc serves."},
    {"_kernel_entry", relu_py_kernel_entry, METH_NOARGS,
     "_kernel_entry() -> capsule: the kernel for other native code (_relu_kernel_entry.h)."},
    {"_add_ml_dtypes_loops", relu_py_add_ml_dtypes_loops, METH_O,
     "_add_ml_dtypes_loops(dtypes) -> int: adds relu's loop for each type ml_dtypes provides\n"
     "(dtypes: its name -> its dtype), once each; returns how many this call added.\n"
     "onnx_relu.dtypes calls it when ml_dtypes is loaded."},
    {NULL, NULL, 0, NULL},
};

/*
 * What the process needs once, whichever interpreter state imports the module first and however
 * often it is executed (a re-import after `del sys.modules[...]` executes it again): the kernel's
 * tuning from this machine and the fork handlers of the pool and the output cache. Done once with
 * pthread_once, whose return orders every write of the initialisation before every caller's
 * next step; no Python call is made inside it, so it cannot wait for the GIL it might hold.
 */
static int relu_process_init_result = -1;

static void
relu_process_init(void)
{
    relu_process_init_result = relu_kernel_init() == 0 && relu_memory_process_init() == 0 ? 0 : -1;
}

static pthread_once_t relu_process_once = PTHREAD_ONCE_INIT;
#define RELU_PROCESS_ONCE() pthread_once(&relu_process_once, relu_process_init)

static int
relu_module_exec(PyObject *module)
{
    if (_import_array() < 0 || _import_umath() < 0) { /* idempotent: the tables are the same */
        return -1;
    }
    if (RELU_PROCESS_ONCE() != 0 || relu_process_init_result != 0) {
        PyErr_SetString(PyExc_ImportError,
                        "onnx_relu._relu: pthread_atfork or Py_AtExit failed");
        return -1;
    }
    if (relu_memory_init() != 0) {
        return -1;
    }
    PyObject *ufunc = relu_make_ufunc();
    if (ufunc == NULL) {
        return -1;
    }
    const int added = PyModule_AddObjectRef(module, "relu", ufunc);
    Py_DECREF(ufunc);
    if (added < 0 || PyModule_AddIntConstant(module, "MAX_THREADS", RELU_MAX_THREADS) < 0) {
        return -1;
    }
    return relu_watch_for_ml_dtypes(module);
}

static PyModuleDef_Slot relu_slots[] = {
    {Py_mod_exec, (void *)relu_module_exec},
#ifdef Py_mod_multiple_interpreters
    /* NumPy's C API table, the kernel's tuning and the output cache are process-wide. */
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#endif
#ifdef Py_mod_gil
    /* Every piece of shared state is safe without the GIL: the kernel's settings are atomics,
     * the pool hands work over with atomics and its mutex (relu_pool.c), the output cache has
     * its mutex (_relu_blocks.c), and the process-wide set-up runs once (above). */
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL},
};

static struct PyModuleDef relu_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "onnx_relu._relu",
    .m_doc = "Compiled core of onnx-relu: the relu ufunc, its thread pool and tuning.",
    .m_size = sizeof(relu_module_state),
    .m_methods = relu_methods,
    .m_slots = relu_slots,
};

PyMODINIT_FUNC
PyInit__relu(void)
{
    return PyModuleDef_Init(&relu_module);
}
