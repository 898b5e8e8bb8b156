/*
 * _relu_ufunc.c - the relu ufunc of onnx_relu._relu: the kernel of src/kernel (relu_kernel.h,
 * where the semantics are written) as one ArrayMethod loop per type, no legacy loops, so that
 * it never casts (onnx_relu.relu adds the opset-aware type checks). Nothing here computes.
 */
#include "_relu_module.h"

#include <stdatomic.h>
#include <string.h>

#include "relu_kernel.h"

/* The kernel takes numpy's counts and strides as they are. */
_Static_assert(sizeof(npy_intp) == sizeof(ptrdiff_t), "npy_intp and ptrdiff_t differ in size");
_Static_assert(sizeof(Py_ssize_t) == sizeof(ptrdiff_t), "Py_ssize_t and ptrdiff_t differ in size");

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
 * The DType class of each type, RELU_NUMPY_DTYPE_<name> by the X-macro's name (generated from the
 * one table). numpy's built-in ones are not constant expressions (they come from numpy's API
 * table), so the table of loops is filled in at import; the types ml_dtypes provides (NULL
 * there, RELU_FOR_EACH_ML_DTYPES_TYPE) get theirs when ml_dtypes is loaded: relu_add_late_loop.
 */
typedef struct {
    const char *name;                  /* ArrayMethod name, shown in numpy's error messages */
    PyArrayMethod_StridedLoop *loop;
    PyArray_DTypeMeta *dtype;
} relu_loop_entry;

/* Each type's ArrayMethod name, loop and element size, by relu_type. */
typedef struct {
    const char *name;
    PyArrayMethod_StridedLoop *loop;
    npy_intp itemsize;
} relu_type_loop;
#define RELU_TYPE_LOOP(name, int_t, threshold) {"relu_" #name, relu_loop_##name, sizeof(int_t)},
static const relu_type_loop relu_type_loops[RELU_TYPE_COUNT] = {RELU_FOR_EACH_TYPE(RELU_TYPE_LOOP)};

/* The DType of each type ml_dtypes provides, once its loop is added (process-wide, as numpy's
 * registration; NULL before): for _relu_view. */
static _Atomic(PyArray_DTypeMeta *) relu_late_dtypes[RELU_TYPE_COUNT];

/*
 * Descriptor resolution: the output takes the input's descriptor (in native byte order), as
 * numpy's own unary loops do, so that dtype metadata (h5py's enum types carry it) is kept;
 * numpy's default would give the output a fresh descriptor of the loop's DType without it.
 * An out's descriptor is used as given (numpy casts it to the loop's DType before this).
 */
static PyArray_Descr *
relu_native_descr(PyArray_Descr *descr)
{
    if (PyArray_ISNBO(descr->byteorder)) {
        Py_INCREF(descr);
        return descr;
    }
    return PyArray_DescrNewByteorder(descr, NPY_NATIVE);
}

static NPY_CASTING
relu_resolve_descriptors(struct PyArrayMethodObject_tag *NPY_UNUSED(method),
                         PyArray_DTypeMeta *const *NPY_UNUSED(dtypes),
                         PyArray_Descr *const *given_descrs, PyArray_Descr **loop_descrs,
                         npy_intp *NPY_UNUSED(view_offset))
{
    loop_descrs[0] = relu_native_descr(given_descrs[0]);
    if (loop_descrs[0] == NULL) {
        return (NPY_CASTING)-1;
    }
    if (given_descrs[1] == NULL) {
        Py_INCREF(loop_descrs[0]);
        loop_descrs[1] = loop_descrs[0];
    }
    else {
        loop_descrs[1] = relu_native_descr(given_descrs[1]);
        if (loop_descrs[1] == NULL) {
            Py_CLEAR(loop_descrs[0]);
            return (NPY_CASTING)-1;
        }
    }
    return NPY_NO_CASTING;
}

static int
relu_add_loop(PyObject *ufunc, const relu_loop_entry *entry)
{
    PyArray_DTypeMeta *dtypes[2] = {entry->dtype, entry->dtype};
    /* The same loop serves aligned and unaligned data (the kernel takes any address). */
    PyType_Slot slots[] = {
        {NPY_METH_resolve_descriptors, (void *)relu_resolve_descriptors},
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

/*
 * The loop of `type`, one of the types ml_dtypes provides (RELU_FOR_EACH_ML_DTYPES_TYPE), added to
 * `ufunc` for the DType of `dtype_obj` (that type as a numpy dtype) when ml_dtypes is loaded,
 * which may be before or after this module: importing ml_dtypes costs several times `import
 * numpy`, and only its types need it (onnx_relu.dtypes watches for its import and calls
 * onnx_relu._relu._add_ml_dtypes_loops). Called once per ufunc and type (the module's state says
 * whether it was).
 */
int
relu_add_late_loop(PyObject *ufunc, relu_type type, PyObject *dtype_obj)
{
    const relu_type_loop *loop = &relu_type_loops[type];
    PyArray_Descr *descr = NULL;
    if (!PyArray_DescrConverter(dtype_obj, &descr) || descr == NULL) {
        return -1;
    }
    if (PyDataType_ELSIZE(descr) != loop->itemsize) {
        PyErr_Format(PyExc_TypeError, "%s needs a dtype of itemsize %d, got %d for %R",
                     loop->name, (int)loop->itemsize, (int)PyDataType_ELSIZE(descr), dtype_obj);
        Py_DECREF(descr);
        return -1;
    }
    relu_loop_entry entry = {loop->name, loop->loop, (PyArray_DTypeMeta *)Py_TYPE(descr)};
    const int result = relu_add_loop(ufunc, &entry);
    if (result == 0) {
        atomic_store_explicit(&relu_late_dtypes[type], entry.dtype, memory_order_release);
    }
    Py_DECREF(descr); /* the DType class lives as long as numpy's registration of it */
    return result;
}

PyDoc_STRVAR(relu_ufunc_doc,
             "relu(x, /, out=None) -> y\n\n"
             "ONNX Relu as a ufunc: y = x where x > 0 or x is NaN (bits unchanged), +0 elsewhere.\n"
             "Loops: " RELU_TYPE_NAMES_TEXT "\n(each C integer type spelling of the integer types\n"
             "types too, e.g. 'q'). An input of any other type\n"
             "is refused under every casting= rule; a loop forced by signature= or dtype=, or an\n"
             "out of another type, is cast by numpy under casting= as for any ufunc.\n"
             "Use onnx_relu.relu() for opset-aware type checks and clear errors.");

PyObject *
relu_make_ufunc(void)
{
    /* No legacy loops: the ufunc has only the ArrayMethod loops below and so never casts. */
    PyObject *ufunc = PyUFunc_FromFuncAndData(NULL, NULL, NULL, 0, 1, 1, PyUFunc_None, "relu",
                                              relu_ufunc_doc, 0);
    if (ufunc != NULL) {
#define RELU_NUMPY_DTYPE(name, int_t, threshold) RELU_NUMPY_DTYPE_##name,
        PyArray_DTypeMeta *const dtypes[RELU_TYPE_COUNT] = {RELU_FOR_EACH_TYPE(RELU_NUMPY_DTYPE)};
        for (int i = 0; i < RELU_TYPE_COUNT; i++) {
            const relu_loop_entry entry = {relu_type_loops[i].name, relu_type_loops[i].loop,
                                           dtypes[i]};
            if (entry.dtype != NULL && relu_add_loop(ufunc, &entry) < 0) {
                Py_CLEAR(ufunc);
                break;
            }
        }
        if (ufunc != NULL && relu_add_c_integer_loops(ufunc) < 0) {
            Py_CLEAR(ufunc);
        }
    }
    return ufunc;
}
/* ------------------------------------------------------------------------------------------ */
/* Views numpy cannot merge into one loop call: the whole call at once                        */
/* ------------------------------------------------------------------------------------------ */

/* The kernel's type for an array's dtype (native byte order), -1 for any other. */
static int
relu_kernel_type_of(PyArray_Descr *descr)
{
    if (!PyArray_ISNBO(descr->byteorder)) {
        return -1;
    }
    PyArray_DTypeMeta *const dtype = (PyArray_DTypeMeta *)Py_TYPE(descr);
#define RELU_IF_NUMPY_TYPE(name, int_t, threshold)                                             \
    if (RELU_NUMPY_DTYPE_##name != NULL && dtype == RELU_NUMPY_DTYPE_##name) {                 \
        return RELU_TYPE_##name;                                                               \
    }
    RELU_FOR_EACH_TYPE(RELU_IF_NUMPY_TYPE)
#define RELU_IF_LATE_TYPE(name, attribute)                                                      \
    if (dtype == atomic_load_explicit(&relu_late_dtypes[RELU_TYPE_##name], memory_order_acquire)) { \
        return RELU_TYPE_##name;                                                               \
    }
    RELU_FOR_EACH_ML_DTYPES_TYPE(RELU_IF_LATE_TYPE)
    if (PyTypeNum_ISSIGNED(descr->type_num)) { /* a second DType of a C integer type ('q') */
        switch (PyDataType_ELSIZE(descr)) {
        case 1: return RELU_TYPE_int8;
        case 2: return RELU_TYPE_int16;
        case 4: return RELU_TYPE_int32;
        case 8: return RELU_TYPE_int64;
        default: return -1;
        }
    }
    return -1;
}

/* The bytes [lo, hi) an array's elements span. */
static void
relu_extent(PyArrayObject *a, uintptr_t *lo, uintptr_t *hi)
{
    uintptr_t low = (uintptr_t)PyArray_BYTES(a), high = low;
    for (int axis = 0; axis < PyArray_NDIM(a); axis++) {
        const npy_intp step = (PyArray_DIM(a, axis) - 1) * PyArray_STRIDE(a, axis);
        if (step < 0) {
            low -= (uintptr_t)(-step);
        }
        else {
            high += (uintptr_t)step;
        }
    }
    *lo = low;
    *hi = high + (uintptr_t)PyArray_ITEMSIZE(a);
}

/*
 * The rows of x and out (same shape): in C order, or F order when that is the one in which both
 * are contiguous along the fastest axis; the trailing axes contiguous in both merged into one
 * run, the other axes (merged where they can be) indexing the rows. 0 if the two have no such
 * common layout or are contiguous as a whole (the ufunc's one loop call is as good).
 */
typedef struct {
    ptrdiff_t run;
    int ndim;
    ptrdiff_t shape[RELU_ROWS_MAX_NDIM], in_strides[RELU_ROWS_MAX_NDIM],
        out_strides[RELU_ROWS_MAX_NDIM];
} relu_rows;

static int
relu_rows_of(PyArrayObject *x, PyArrayObject *out, relu_rows *rows)
{
    const int ndim = PyArray_NDIM(x);
    const npy_intp elsize = PyArray_ITEMSIZE(x);
    if (ndim < 2 || ndim > RELU_ROWS_MAX_NDIM || PyArray_NDIM(out) != ndim) {
        return 0;
    }
    for (int order = 0; order < 2; order++) { /* 0: C order, 1: F order (axes reversed) */
        npy_intp shape[NPY_MAXDIMS], xs[NPY_MAXDIMS], os[NPY_MAXDIMS];
        for (int i = 0; i < ndim; i++) {
            const int axis = order == 0 ? i : ndim - 1 - i;
            shape[i] = PyArray_DIM(x, axis);
            xs[i] = PyArray_STRIDE(x, axis);
            os[i] = PyArray_STRIDE(out, axis);
            if (shape[i] != PyArray_DIM(out, axis) || shape[i] == 0) {
                return 0;
            }
        }
        if (xs[ndim - 1] != elsize || os[ndim - 1] != elsize) {
            continue;
        }
        ptrdiff_t run = shape[ndim - 1];
        int k = ndim - 2;
        while (k >= 0 && (shape[k] == 1 || (xs[k] == run * elsize && os[k] == run * elsize))) {
            run *= shape[k];
            k--;
        }
        if (k < 0) {
            return 0; /* contiguous as a whole */
        }
        rows->run = run;
        rows->ndim = 0;
        for (int axis = 0; axis <= k; axis++) {
            if (shape[axis] == 1) {
                continue;
            }
            const int last = rows->ndim - 1;
            if (last >= 0 && rows->in_strides[last] == shape[axis] * xs[axis] &&
                rows->out_strides[last] == shape[axis] * os[axis]) {
                rows->shape[last] *= shape[axis]; /* merged with the axis before */
                rows->in_strides[last] = xs[axis];
                rows->out_strides[last] = os[axis];
                continue;
            }
            rows->shape[rows->ndim] = shape[axis];
            rows->in_strides[rows->ndim] = xs[axis];
            rows->out_strides[rows->ndim] = os[axis];
            rows->ndim++;
        }
        return 1;
    }
    return 0;
}

/*
 * _relu_view(x, out): Relu of x into out (None: a new array laid out like x, from the output
 * cache when it is large) as one call of the kernel over x's rows, so that the whole call's size
 * decides threads and streaming stores; returns out. None, having written nothing, where the
 * ufunc serves as well or this cannot: other than exact ndarrays of one Relu type (native order)
 * and shape, no common row layout (see relu_rows_of), contiguous as a whole, or out overlapping
 * x other than being it (numpy's ufunc then copies what it must). onnx_relu.relu calls it for
 * arrays of two or more axes after its checks (shape, type, writeable out).
 */
PyObject *
relu_py_relu_view(PyObject *NPY_UNUSED(self), PyObject *args)
{
    PyObject *x_obj, *out_obj;
    if (!PyArg_UnpackTuple(args, "_relu_view", 2, 2, &x_obj, &out_obj)) {
        return NULL;
    }
    if (!PyArray_CheckExact(x_obj) || PyArray_NDIM((PyArrayObject *)x_obj) < 2 ||
        PyArray_ISONESEGMENT((PyArrayObject *)x_obj)) {
        Py_RETURN_NONE; /* (one segment: C or F contiguous, the ufunc's one call) */
    }
    PyArrayObject *x = (PyArrayObject *)x_obj;
    const int type = relu_kernel_type_of(PyArray_DESCR(x));
    if (type < 0) {
        Py_RETURN_NONE;
    }
    PyArrayObject *out;
    if (out_obj == Py_None) {
        out = (PyArrayObject *)relu_new_output_like(x);
        if (out == NULL) {
            return NULL;
        }
    }
    else {
        if (!PyArray_CheckExact(out_obj) || !PyArray_ISWRITEABLE((PyArrayObject *)out_obj) ||
            relu_kernel_type_of(PyArray_DESCR((PyArrayObject *)out_obj)) != type) {
            Py_RETURN_NONE;
        }
        out = (PyArrayObject *)Py_NewRef(out_obj);
        uintptr_t x_lo, x_hi, out_lo, out_hi;
        relu_extent(x, &x_lo, &x_hi);
        relu_extent(out, &out_lo, &out_hi);
        const int same = PyArray_BYTES(x) == PyArray_BYTES(out) &&
                         PyArray_NDIM(out) == PyArray_NDIM(x) &&
                         memcmp(PyArray_STRIDES(x), PyArray_STRIDES(out),
                                sizeof(npy_intp) * (size_t)PyArray_NDIM(x)) == 0;
        if (!same && x_lo < out_hi && out_lo < x_hi) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
    }
    relu_rows rows;
    if (!relu_rows_of(x, out, &rows)) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    const void *in_data = PyArray_BYTES(x);
    void *out_data = PyArray_BYTES(out);
    int failed;
    if (PyArray_NBYTES(x) >= 4096) { /* as numpy's ufuncs: no GIL round trip for tiny calls */
        Py_BEGIN_ALLOW_THREADS
        failed = relu_compute_rows((relu_type)type, in_data, out_data, rows.run, rows.ndim,
                                   rows.shape, rows.in_strides, rows.out_strides);
        Py_END_ALLOW_THREADS
    }
    else {
        failed = relu_compute_rows((relu_type)type, in_data, out_data, rows.run, rows.ndim,
                                   rows.shape, rows.in_strides, rows.out_strides);
    }
    if (failed) {
        Py_DECREF(out);
        PyErr_SetString(PyExc_SystemError, "relu_compute_rows refused a layout it was given");
        return NULL;
    }
    return (PyObject *)out;
}
