/*
 * _relu_module.h - what the units of the extension module onnx_relu._relu share:
 *
 *   _relu_module.c   the module: definition, initialisation, thread count and tuning functions,
 *                    the copy ceiling of `onnx-relu bench`
 *   _relu_ufunc.c    the relu ufunc: one ArrayMethod loop per type of the kernel
 *   _relu_memory.c   the output cache served to NumPy as a memory handler (NEP 49), and its
 *                    Python functions (the cache itself, with no Python, is _relu_blocks.c)
 *
 * NumPy's C API is a table of pointers filled in by the module's initialisation; the other units
 * reach the same table through the unique symbols below.
 */
#ifndef RELU_MODULE_H
#define RELU_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#define NPY_TARGET_VERSION NPY_2_0_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL onnx_relu_ARRAY_API
#define PY_UFUNC_UNIQUE_SYMBOL onnx_relu_UFUNC_API
#ifndef RELU_MODULE_IMPORTS_NUMPY
#define NO_IMPORT_ARRAY
#define NO_IMPORT_UFUNC
#endif
#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>
#include <numpy/dtype_api.h>

#include "relu_kernel.h" /* relu_type */
#include "_relu_types.h" /* each type's DType, RELU_FOR_EACH_ML_DTYPES_TYPE */

/* _relu_ufunc.c: the ufunc with a loop for every type of the kernel; NULL with an exception set
 * on failure. */
PyObject *relu_make_ufunc(void);
/* _relu_ufunc.c: adds the loop of `type`, one of the types ml_dtypes provides
 * (RELU_FOR_EACH_ML_DTYPES_TYPE), to the ufunc for the dtype `dtype_obj` (0, or -1 with an
 * exception set). */
int relu_add_late_loop(PyObject *ufunc, relu_type type, PyObject *dtype_obj);
/* _relu_ufunc.c: onnx_relu._relu._relu_view (see there). */
PyObject *relu_py_relu_view(PyObject *self, PyObject *args);

/* _relu_memory.c: the process-wide set-up of the output cache (fork handlers, the exit handler;
 * no Python objects; 0 or -1), called once; the memory handler's capsule, made by the first
 * execution of the module (0, or -1 with an exception set); the module's functions of the
 * output cache. */
int relu_memory_process_init(void);
int relu_memory_init(void);
PyObject *relu_py_empty_like(PyObject *self, PyObject *arg);
/* A new array laid out like x (NPY_KEEPORDER), from the output cache where it serves x's size;
 * NULL with an exception set on failure. */
PyObject *relu_new_output_like(PyArrayObject *x);
PyObject *relu_py_cache_info(PyObject *self, PyObject *args);
PyObject *relu_py_set_cache(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *relu_py_release_cache(PyObject *self, PyObject *args);

#endif /* RELU_MODULE_H */
