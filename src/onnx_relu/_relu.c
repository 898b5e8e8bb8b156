/*
 * _relu.c - the compiled core of onnx-relu: the ONNX Relu operator as a NumPy ufunc.
 *
 * Types (exactly the Relu-14 type set, one loop each, no casting):
 *   float16, float32, float64, bfloat16 (ml_dtypes), int8, int16, int32, int64.
 *
 * Semantics, identical for every float type:
 *   y = x      where x > 0 or x is a NaN (NaN bits returned unchanged: sign, payload, signalling bit);
 *   y = +0     for every other input (-0.0, -inf, negative numbers, negative subnormals).
 * Integers: y = x if x > 0 else 0.
 *
 * Every type is computed on its bit pattern read as a signed integer of the same width, so no
 * floating-point instruction runs (no FP exception flag can be raised, a signalling NaN is never
 * quieted) and one compare-and-select serves all eight types:
 *
 *     y = (s > threshold) ? s : 0
 *
 * For an IEEE binary format read as a signed integer, negative values (sign bit set) are the
 * integers below zero, ordered so that -inf is the smallest pattern above every negative finite
 * number and -0.0, and every negative NaN lies above -inf. Hence "s > bits(-inf)" holds exactly
 * for +0, positive numbers, +inf and NaNs of either sign; everything else becomes the pattern 0,
 * which is +0.0. For integers the threshold is 0.
 *
 * The loops are plain C that compilers vectorise. On x86-64 with GCC or Clang each inner loop is
 * compiled three times (baseline SSE2, x86-64-v3 = AVX2, x86-64-v4 = AVX-512) and the best one is
 * picked when the module is loaded (target_clones), so the build never depends on -march=native.
 * SSE2 has no 64-bit signed compare, which is why the int64/float64 loops need the clones.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#define NPY_TARGET_VERSION NPY_2_0_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>
#include <numpy/dtype_api.h>

#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Element helpers                                                                             */
/* ------------------------------------------------------------------------------------------ */

/*
 * Element types that may sit at any address and alias anything: numpy hands the loop unaligned
 * and byte-offset views directly (NPY_METH_SUPPORTS_UNALIGNED), which avoids a buffered copy.
 */
#if defined(__GNUC__) || defined(__clang__)
#define RELU_ELEMENT_ATTRS __attribute__((aligned(1), may_alias))
#define RELU_SUPPORTS_UNALIGNED 1
#else
#define RELU_ELEMENT_ATTRS
#define RELU_SUPPORTS_UNALIGNED 0
#endif

typedef int8_t RELU_ELEMENT_ATTRS relu_i8;
typedef int16_t RELU_ELEMENT_ATTRS relu_i16;
typedef int32_t RELU_ELEMENT_ATTRS relu_i32;
typedef int64_t RELU_ELEMENT_ATTRS relu_i64;

/* Bit pattern of -inf read as a signed integer of the format's width. */
#define RELU_F16_NEG_INF ((int16_t)-1024)                      /* 0xFC00 */
#define RELU_BF16_NEG_INF ((int16_t)-128)                      /* 0xFF80 */
#define RELU_F32_NEG_INF ((int32_t)INT32_C(-8388608))          /* 0xFF800000 */
#define RELU_F64_NEG_INF ((int64_t)INT64_C(-4503599627370496)) /* 0xFFF0000000000000 */

/* Run-time dispatch between ISA levels, where the toolchain and the C library support it. */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define RELU_DISPATCH __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#endif
#endif
#ifndef RELU_DISPATCH
#define RELU_DISPATCH
#endif

/* ------------------------------------------------------------------------------------------ */
/* Inner loops                                                                                 */
/* ------------------------------------------------------------------------------------------ */

/*
 * relu_block_<name>(in, out, n, in_stride, out_stride): n elements, strides in bytes.
 * The contiguous branch and the strided branch have the same body; the contiguous one is
 * written with indices so that the compiler vectorises it (in == out, in place, is allowed:
 * each element is read before it is written and numpy never passes partially overlapping
 * operands to a loop).
 */
#define RELU_DEFINE_BLOCK(name, elem_t, threshold)                                             \
    RELU_DISPATCH static void relu_block_##name(const char *in, char *out, npy_intp n,         \
                                                npy_intp in_stride, npy_intp out_stride)       \
    {                                                                                          \
        if (in_stride == (npy_intp)sizeof(elem_t) && out_stride == (npy_intp)sizeof(elem_t)) { \
            const elem_t *src = (const elem_t *)in;                                            \
            elem_t *dst = (elem_t *)out;                                                       \
            for (npy_intp i = 0; i < n; i++) {                                                 \
                const elem_t v = src[i];                                                       \
                dst[i] = (v > (threshold)) ? v : (elem_t)0;                                    \
            }                                                                                  \
        }                                                                                      \
        else {                                                                                 \
            for (npy_intp i = 0; i < n; i++) {                                                 \
                const elem_t v = *(const elem_t *)(in + i * in_stride);                        \
                *(elem_t *)(out + i * out_stride) = (v > (threshold)) ? v : (elem_t)0;         \
            }                                                                                  \
        }                                                                                      \
    }

RELU_DEFINE_BLOCK(int8, relu_i8, 0)
RELU_DEFINE_BLOCK(int16, relu_i16, 0)
RELU_DEFINE_BLOCK(int32, relu_i32, 0)
RELU_DEFINE_BLOCK(int64, relu_i64, 0)
RELU_DEFINE_BLOCK(float16, relu_i16, RELU_F16_NEG_INF)
RELU_DEFINE_BLOCK(bfloat16, relu_i16, RELU_BF16_NEG_INF)
RELU_DEFINE_BLOCK(float32, relu_i32, RELU_F32_NEG_INF)
RELU_DEFINE_BLOCK(float64, relu_i64, RELU_F64_NEG_INF)

typedef void (*relu_block_fn)(const char *, char *, npy_intp, npy_intp, npy_intp);

/* The ArrayMethod strided loop: one per type, each a thin shim over its block function. */
#define RELU_DEFINE_LOOP(name)                                                                 \
    static int relu_loop_##name(PyArrayMethod_Context *NPY_UNUSED(context),                   \
                                char *const data[], npy_intp const dimensions[],               \
                                npy_intp const strides[], NpyAuxData *NPY_UNUSED(auxdata))     \
    {                                                                                          \
        relu_block_##name(data[0], data[1], dimensions[0], strides[0], strides[1]);            \
        return 0;                                                                              \
    }

RELU_DEFINE_LOOP(int8)
RELU_DEFINE_LOOP(int16)
RELU_DEFINE_LOOP(int32)
RELU_DEFINE_LOOP(int64)
RELU_DEFINE_LOOP(float16)
RELU_DEFINE_LOOP(bfloat16)
RELU_DEFINE_LOOP(float32)
RELU_DEFINE_LOOP(float64)

/* ------------------------------------------------------------------------------------------ */
/* Loop tables                                                                                 */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    const char *name;                  /* ArrayMethod name, shown in numpy's error messages */
    PyArrayMethod_StridedLoop *loop;
} relu_loop_entry;

/* Order matters only for readability; the DType of each entry is filled in at import. */
enum { RELU_BUILTIN_LOOPS = 7 };
static const relu_loop_entry relu_builtin_loops[RELU_BUILTIN_LOOPS] = {
    {"relu_int8", relu_loop_int8},       {"relu_int16", relu_loop_int16},
    {"relu_int32", relu_loop_int32},     {"relu_int64", relu_loop_int64},
    {"relu_float16", relu_loop_float16}, {"relu_float32", relu_loop_float32},
    {"relu_float64", relu_loop_float64},
};
static const relu_loop_entry relu_bfloat16_loop = {"relu_bfloat16", relu_loop_bfloat16};

static int
relu_add_loop(PyObject *ufunc, const relu_loop_entry *entry, PyArray_DTypeMeta *dtype)
{
    PyArray_DTypeMeta *dtypes[2] = {dtype, dtype};
    /* The same loop serves aligned and unaligned data (its element types are aligned(1)). */
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

/* ------------------------------------------------------------------------------------------ */
/* Module definition                                                                           */
/* ------------------------------------------------------------------------------------------ */

PyDoc_STRVAR(relu_ufunc_doc,
             "relu(x, /, out=None) -> y\n\n"
             "ONNX Relu as a ufunc: y = x where x > 0 or x is NaN (bits unchanged), +0 elsewhere.\n"
             "Loops: int8, int16, int32, int64, float16, float32, float64, bfloat16; no casting.\n"
             "Use onnx_relu.relu() for opset-aware type checks and clear errors.");

static struct PyModuleDef relu_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "onnx_relu._relu",
    .m_doc = "Compiled core of onnx-relu: the relu ufunc.",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__relu(void)
{
    PyObject *module = NULL, *ufunc = NULL;
    PyArray_DTypeMeta *bfloat16 = NULL;

    import_array();
    import_umath();

    module = PyModule_Create(&relu_module);
    if (module == NULL) {
        goto fail;
    }
    /* No legacy loops: the ufunc has only the ArrayMethod loops below and so never casts. */
    ufunc = PyUFunc_FromFuncAndData(NULL, NULL, NULL, 0, 1, 1, PyUFunc_None, "relu",
                                    relu_ufunc_doc, 0);
    if (ufunc == NULL) {
        goto fail;
    }
    PyArray_DTypeMeta *builtin[RELU_BUILTIN_LOOPS] = {
        &PyArray_Int8DType, &PyArray_Int16DType, &PyArray_Int32DType, &PyArray_Int64DType,
        &PyArray_HalfDType, &PyArray_FloatDType, &PyArray_DoubleDType,
    };
    for (int i = 0; i < RELU_BUILTIN_LOOPS; i++) {
        if (relu_add_loop(ufunc, &relu_builtin_loops[i], builtin[i]) < 0) {
            goto fail;
        }
    }
    bfloat16 = relu_bfloat16_dtype();
    if (bfloat16 == NULL || relu_add_loop(ufunc, &relu_bfloat16_loop, bfloat16) < 0) {
        goto fail;
    }
    Py_CLEAR(bfloat16);
    if (PyModule_AddObject(module, "relu", ufunc) < 0) {
        goto fail;
    }
    ufunc = NULL; /* reference stolen by the module */
    return module;

fail:
    Py_XDECREF(bfloat16);
    Py_XDECREF(ufunc);
    Py_XDECREF(module);
    return NULL;
}
