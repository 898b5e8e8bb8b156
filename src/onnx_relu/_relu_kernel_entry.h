/*
 * The kernel as onnx_relu._relu hands it to other native code in the same process: a PyCapsule
 * named "onnx_relu._relu.kernel_entry" (from onnx_relu._relu._kernel_entry()) holding a pointer
 * to a relu_kernel_entry. Its user is the jax FFI handler onnx_relu/_jax_ffi.c, compiled on the
 * user's machine against the installed jaxlib's headers (onnx_relu/_jax_ffi.py); so this header
 * is installed with the package. Calls go to the module's own kernel: its threads and tuning.
 */
#ifndef RELU_KERNEL_ENTRY_H
#define RELU_KERNEL_ENTRY_H

#include <stddef.h>

/* Raised when a member is added or changes; a user checks it before anything else. */
#define RELU_KERNEL_ENTRY_VERSION 1
#define RELU_KERNEL_ENTRY_CAPSULE "onnx_relu._relu.kernel_entry"

typedef struct {
    int version; /* RELU_KERNEL_ENTRY_VERSION */
    /* The kernel's code for a type named as numpy names it ("float32", "bfloat16", "int8"...);
     * -1 for a name Relu does not take. */
    int (*type_code)(const char *name);
    /* Bytes of one element of the type `type` (a code from type_code). */
    size_t (*type_size)(int type);
    /* out[i] = Relu(in[i]) for i in [0, n), strides in bytes, on the module's threads. */
    void (*compute)(int type, const void *in, void *out, ptrdiff_t n, ptrdiff_t in_stride,
                    ptrdiff_t out_stride);
} relu_kernel_entry;

#endif /* RELU_KERNEL_ENTRY_H */
