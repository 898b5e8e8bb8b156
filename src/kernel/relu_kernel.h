/*
 * relu_kernel.h - the ONNX Relu operator as a C kernel that knows nothing of Python or NumPy.
 *
 * Types (exactly the Relu-14 type set, no casting): RELU_FOR_EACH_TYPE of relu_types.h, generated
 * from the one table, src/onnx_relu/_spec.py.
 *
 * Semantics, identical for every float type:
 *   y = x      where x > 0 or x is a NaN (NaN bits returned unchanged: sign, payload, signalling bit);
 *   y = +0     for every other input (-0.0, -inf, negative numbers, negative subnormals).
 * Integers: y = x if x > 0 else 0.
 *
 * Every type is computed on its bit pattern read as a signed integer s of the same width, so no
 * floating-point instruction runs (no FP exception flag can be raised, a signalling NaN is never
 * quieted) and one compare-and-select serves every type:
 *
 *     y = (s > threshold) ? s : 0                                          (RELU_RULE below)
 *
 * For an IEEE binary format read as a signed integer, negative values (sign bit set) are the
 * integers below zero, ordered so that -inf is the smallest pattern above every negative finite
 * number and -0.0, and every negative NaN lies above -inf. Hence "s > bits(-inf)" holds exactly
 * for +0, positive numbers, +inf and NaNs of either sign; everything else becomes the pattern 0,
 * which is +0.0. For integers the threshold is 0.
 *
 * Users: the NumPy ufunc (src/onnx_relu/_relu_ufunc.c) and programs that link the kernel as a
 * static library (an onnxruntime custom-op library). Each copy of the kernel in a process keeps
 * its own tuning and thread pool (every symbol has hidden visibility, see relu_platform.h).
 *
 * How it is fast (memory bound: the work is to move bytes at the machine's limit) is described in
 * relu_kernel.c; the thread pool in relu_pool.h; thresholds, cache sizes and the thread count in
 * relu_tuning.h.
 */
#ifndef RELU_KERNEL_H
#define RELU_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "relu_platform.h"

/* The element rule, the whole of Relu: s is the element's bit pattern read as a signed integer. */
#define RELU_RULE(s, threshold) (((s) > (threshold)) ? (s) : 0)

/* Bit pattern of -inf read as a signed integer of the format's width: the float thresholds. */
#define RELU_F16_NEG_INF ((int16_t)-1024)                      /* 0xFC00 */
#define RELU_BF16_NEG_INF ((int16_t)-128)                      /* 0xFF80 */
#define RELU_F32_NEG_INF ((int32_t)INT32_C(-8388608))          /* 0xFF800000 */
#define RELU_F64_NEG_INF ((int64_t)INT64_C(-4503599627370496)) /* 0xFFF0000000000000 */

/* The types, listed once (RELU_FOR_EACH_TYPE: X(name, signed integer type of the element's
 * width, threshold of RELU_RULE)), generated from the one table (src/onnx_relu/_spec.py). */
#include "relu_types.h"

/* RELU_TYPE_int8, RELU_TYPE_int16, ..., RELU_TYPE_float64, in the order of the list. */
#define RELU_TYPE_ENUMERATOR(name, int_t, threshold) RELU_TYPE_##name,
typedef enum { RELU_FOR_EACH_TYPE(RELU_TYPE_ENUMERATOR) RELU_TYPE_COUNT } relu_type;

/*
 * Whether in and out of relu_compute may sit at any address (GCC and Clang: the kernel reads and
 * writes through aligned(1) element types). Elsewhere they must be aligned to the element size.
 */
#if defined(__GNUC__) || defined(__clang__)
#define RELU_SUPPORTS_UNALIGNED 1
#else
#define RELU_SUPPORTS_UNALIGNED 0
#endif

/*
 * Sets the process-wide tuning from this machine (the best streaming-store ISA, the cache sizes
 * and from them the streaming-store threshold) and makes a forked child forget the parent's
 * thread pool. Call it once before the first relu_compute; a second call detects the same again
 * and resets those two settings (the thread count and the other thresholds are kept). Before it
 * is called every call uses regular stores, which is correct, only slower on large outputs. The
 * thread count starts at 1 either way: relu_set_num_threads (relu_tuning.h) raises it. Returns 0,
 * or -1 if the fork handler could not be installed (then nothing else was changed).
 */
RELU_API int relu_kernel_init(void);

/* Bytes of one element of `type`. */
RELU_API size_t relu_type_size(relu_type type);

/*
 * out[i] = Relu(in[i]) for i in [0, n): n elements of `type`, strides in bytes (negative ones
 * too; a contiguous tensor has both strides equal to relu_type_size(type)).
 *
 * out may be in (in place, same stride) or overlap it in any other way: the result is then that
 * of one forward pass, element 0 first, each element read before it is written, which is what
 * NumPy relies on when it passes overlapping operands without a copy. Large calls are shared with
 * the thread pool and written with streaming stores according to relu_tuning.h; the call returns
 * when every element is written and visible to the calling thread.
 */
RELU_API void relu_compute(relu_type type, const void *in, void *out, ptrdiff_t n,
                           ptrdiff_t in_stride, ptrdiff_t out_stride);

/*
 * The same as relu_compute over rows: out and in hold the same rows of `run` elements each,
 * contiguous within a row (stride relu_type_size(type)); the rows are indexed by `ndim` outer
 * axes of extents shape[0..ndim) (row-major, the last fastest), strides in bytes in_strides and
 * out_strides (any sign). One call for the whole view, so that its size decides the threads and
 * streaming stores (relu_tuning.h) as for a contiguous call of the same bytes, and rows are the
 * units the pool shares out. out must not overlap in other than being it (same address, same
 * strides): the caller copies or runs the rows one by one otherwise. Returns 0, or -1 for ndim
 * outside 0..RELU_ROWS_MAX_NDIM or a negative run (then nothing is written).
 */
#define RELU_ROWS_MAX_NDIM 64
RELU_API int relu_compute_rows(relu_type type, const void *in, void *out, ptrdiff_t run, int ndim,
                               const ptrdiff_t *shape, const ptrdiff_t *in_strides,
                               const ptrdiff_t *out_strides);

/*
 * A thread pool that is not the kernel's own (onnxruntime's intra-op pool, for the custom-op
 * library). parallel_for runs part(call, k) for every k in [0, parts) on its threads and the
 * calling thread, in any order, and returns when all are done and their writes are visible to
 * the caller; it returns 0 if it ran none of them (the kernel then computes the call itself).
 * `threads` is the most threads it may run at once (a call is split for that many).
 */
typedef struct {
    int (*parallel_for)(void *context, void (*part)(void *call, size_t k), void *call, size_t parts);
    void *context;
    int threads;
} relu_runner;

/*
 * relu_compute, with the parts of a large call run by `runner` instead of the kernel's own
 * pool (the same thresholds, part boundaries, store choice and overlap rule).
 */
RELU_API void relu_compute_on(const relu_runner *runner, relu_type type, const void *in, void *out,
                              ptrdiff_t n, ptrdiff_t in_stride, ptrdiff_t out_stride);

/*
 * The benchmark harness's ceiling: copies `bytes` bytes from src to dst with the same loops,
 * parts and threads as relu_compute of int8, only without the compare, with streaming stores
 * (streaming != 0, where the CPU has them) or regular ones, whatever the size. src and dst are
 * disjoint or identical (an in-place ceiling).
 */
RELU_API void relu_copy_ceiling(const void *src, void *dst, size_t bytes, int streaming);

#endif /* RELU_KERNEL_H */
