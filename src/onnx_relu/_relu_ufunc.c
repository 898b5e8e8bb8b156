/*
 * _relu_ufunc.c - the relu ufunc of onnx_relu._relu: the kernel of src/kernel (relu_kernel.h,
 * where the semantics are written) as one ArrayMethod loop per type, no legacy loops, so that
 * it never casts (onnx_relu.relu adds the opset-aware type checks). Nothing here computes.
 */
#include "_relu_module.h"

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
 * table), and ml_dtypes.bfloat16's is found at import (its type number is assigned at run time:
 * the local `bfloat16` of relu_make_ufunc), so the table of loops is filled in at import.
 */
#include "_relu_types.h"

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
             "Loops: " RELU_TYPE_NAMES_TEXT "\n(each C integer type spelling of the four integer\n"
             "types too, e.g. 'q'). An input of any other type\n"
             "is refused under every casting= rule; a loop forced by signature= or dtype=, or an\n"
             "out of another type, is cast by numpy under casting= as for any ufunc.\n"
             "Use onnx_relu.relu() for opset-aware type checks and clear errors.");

PyObject *
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