/*
 * relu_platform.h - compiler and platform switches shared by the kernel's units (internal: the
 * kernel's callers include relu_kernel.h and relu_tuning.h, never this file).
 *
 * Two build switches exist so that the portable code can be tested on x86-64 Linux too:
 *   -DRELU_DISABLE_THREADS  every call runs on the calling thread (no pool, plain variables);
 *   -DRELU_DISABLE_NT       regular stores only (no streaming-store code is compiled).
 */
#ifndef RELU_PLATFORM_H
#define RELU_PLATFORM_H

/*
 * Every function and variable of the kernel that is not `static` has hidden visibility: the
 * kernel is a static library linked into each program that uses it (the NumPy extension, an
 * onnxruntime custom-op library), and two such copies in one process must neither clash nor
 * bind to each other's tuning or thread pool. A build that wants to export the API from a shared
 * library defines RELU_API itself.
 */
#ifndef RELU_API
#if defined(__GNUC__) || defined(__clang__)
#define RELU_API __attribute__((visibility("hidden")))
#else
#define RELU_API
#endif
#endif

/* The thread pool needs POSIX threads and C11 atomics; without them every call is serial. */
#if (defined(__unix__) || defined(__APPLE__)) && !defined(__STDC_NO_ATOMICS__) &&              \
    !defined(RELU_DISABLE_THREADS)
#define RELU_HAVE_THREADS 1
#include <stdatomic.h>
#define RELU_ATOMIC(type) _Atomic(type)
#define RELU_LOAD(var) atomic_load_explicit(&(var), memory_order_relaxed)
#define RELU_STORE(var, value) atomic_store_explicit(&(var), (value), memory_order_relaxed)
#define RELU_EXCHANGE(var, value) atomic_exchange_explicit(&(var), (value), memory_order_relaxed)
#else
#define RELU_HAVE_THREADS 0
#define RELU_ATOMIC(type) type
#define RELU_LOAD(var) (var)
#define RELU_STORE(var, value) ((var) = (value))
#define RELU_EXCHANGE(var, value) relu_exchange_int(&(var), (value))
static inline int
relu_exchange_int(int *var, int value)
{
    const int previous = *var;
    *var = value;
    return previous;
}
#endif

/* Streaming (non-temporal) stores: x86-64 (movnt*) and aarch64 (stnp) with a compiler that has
 * vector extensions and inline assembly. */
#if (defined(__x86_64__) || defined(__aarch64__)) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(RELU_DISABLE_NT)
#define RELU_HAVE_NT 1
#else
#define RELU_HAVE_NT 0
#endif

#endif /* RELU_PLATFORM_H */
