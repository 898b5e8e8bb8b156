/*
 * relu_pool.h - how a large call is cut into parts, and the persistent thread pool that runs
 * them together with the calling thread (kernel-internal, except relu_pool_workers).
 *
 * The pool knows nothing of Relu: a call is a range [0, n) of elements and a function that
 * computes a sub-range. See relu_pool.c for how the threads claim parts, spin and sleep.
 */
#ifndef RELU_POOL_H
#define RELU_POOL_H

#include <stddef.h>

#include "relu_platform.h"

/* Computes elements [begin, end) of the task; the pool calls it once per part (maybe empty). */
typedef void (*relu_range_fn)(const void *task, ptrdiff_t begin, ptrdiff_t end);

/* One call: n elements, cut into `parts` parts. */
typedef struct {
    relu_range_fn run;
    const void *task; /* the caller's; lives until relu_pool_run returns */
    ptrdiff_t n;
    int parts;
    /* The output, so that part boundaries fall on its 64-byte lines when it is contiguous. */
    const char *out;
    ptrdiff_t out_stride, elsize;
} relu_call;

/*
 * How a call of n elements, `bytes` bytes of output, is cut: into *parts parts for *threads
 * threads (the caller included), from the tuning's thread count, parallel threshold and smallest
 * part. One thread and one part for small calls.
 */
RELU_API void relu_split(ptrdiff_t n, ptrdiff_t bytes, int *threads, int *parts);
/* The same for `available` threads instead of the tuning's thread count. */
RELU_API void relu_split_for(ptrdiff_t n, ptrdiff_t bytes, int available, int *threads, int *parts);

/*
 * Runs every part of `call` on up to `threads` threads, the calling thread included, and returns
 * 1 when all are done (their writes visible to the caller). Returns 0 having run nothing when
 * the pool is busy with another caller, or no thread could be started, or the build has no
 * threads: the caller then computes the call itself, so nothing ever waits for the pool.
 */
RELU_API int relu_pool_run(const relu_call *call, int threads);

/*
 * Computes part k (0 <= k < call->parts) of `call` on the calling thread: the same part
 * boundaries as relu_pool_run uses, for a caller that runs the parts on a pool of its own
 * (relu_compute_on, relu_kernel.h).
 */
RELU_API void relu_call_run_part(const relu_call *call, int k);

/* Makes a child process made by fork() forget the parent's pool; 0, or -1 if that failed. */
RELU_API int relu_pool_install_fork_handler(void);

/* Threads the pool has started so far (0 before the first threaded call); informational. */
RELU_API int relu_pool_workers(void);

#endif /* RELU_POOL_H */
